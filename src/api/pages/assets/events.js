// Events: the GCS event log from /api/events, newest first, a page at a time,
// filtered on the server by source and by text.
'use strict';
(() => {
  const {el, $, fixed, time} = RS;
  const SOURCES = ['', 'node', 'task', 'actor', 'job', 'object', 'object_store', 'placement_group', 'scheduler', 'autoscaler', 'memory_monitor', 'fault'];
  let source = '', search = '';
  const columns = [
    {title: '#', cell: (e) => String(e.seq), num: true},
    {title: 'Virtual time', cell: (e) => `${fixed(e.sim_time_seconds, 3)} s`, num: true},
    {title: 'Time', cell: (e) => time(e.timestamp_ms)},
    {title: 'Source', cell: (e) => el('span', {class: 'badge info', text: e.source})},
    {title: 'Message', cell: (e) => e.message},
  ];
  const sourceSel = el('select', {'aria-label': 'Source', onchange: () => { source = sourceSel.value; p.reload(true); }},
    SOURCES.map((s) => el('option', {value: s, text: s || 'All'})));
  let typing = null;
  const box = el('input', {type: 'search', placeholder: 'Search messages', 'aria-label': 'Search', oninput: () => {
    clearTimeout(typing);
    typing = setTimeout(() => { search = box.value.trim(); p.reload(true); }, 250);
  }});
  const p = RS.pager($('#events'), {
    pageSize: 50,
    columns,
    rowAttrs: (e) => ({'data-id': e.seq, 'data-source': e.source}),
    toolbar: [el('label', null, 'Source', sourceSel), box],
    empty: 'No event matches.',
    load: async (offset, limit) => {
      const q = new URLSearchParams({limit, offset});
      if (source) q.set('source', source);
      if (search) q.set('search', search);
      const r = await RS.json(`/api/events?${q}`);
      const rows = (r && r.events) || [];
      const total = r && typeof r.total === 'number' ? r.total : rows.length;
      return {rows, filtered: total, next: offset + rows.length < total ? offset + rows.length : null};
    },
  });
  p.reload(true);
  setInterval(() => { if (!document.hidden && p.offset() === 0) p.reload(false); }, 3000);
})();
