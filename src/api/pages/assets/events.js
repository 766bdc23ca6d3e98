// Events: Ray's cluster events from /api/cluster_events, newest first, a page at a
// time, filtered on the server by severity, source and a search over message, source,
// severity and label (so a search never fetches the whole ring).
'use strict';
(() => {
  const {el, $, int, time} = RS;
  const SEVERITIES = ['', 'ERROR', 'WARNING', 'INFO'];
  const SOURCES = ['', 'GCS', 'RAYLET', 'AUTOSCALER', 'JOBS'];
  const SEVERITY_CLASS = {ERROR: 'bad', WARNING: 'warn', INFO: 'info'};
  let severity = '', source = '', search = '';
  const fields = (e) => {
    const f = Object.entries(e.custom_fields || {});
    return f.length ? el('div', {class: 'event-fields mono'}, f.map(([k, v]) => el('div', null, el('span', {class: 'muted', text: `${k}: `}), String(v)))) : '';
  };
  const columns = [
    {title: 'Time', cell: (e) => el('span', {title: `virtual time ${e.sim_time_seconds} s`, text: time(e.timestamp_ms)})},
    {title: 'Severity', cell: (e) => el('span', {class: `badge ${SEVERITY_CLASS[e.severity] || 'info'}`, text: e.severity})},
    {title: 'Source', cell: (e) => e.source_type},
    {title: 'Message', cell: (e) => el('div', {class: 'event-msg'}, e.label ? el('strong', {text: `${e.label}: `}) : '', e.message)},
    {title: 'Details', cell: fields},
  ];
  const select = (label, values, set) => {
    const s = el('select', {'aria-label': label, onchange: () => { set(s.value); p.reload(true); }},
      values.map((v) => el('option', {value: v, text: v || 'All'})));
    return el('label', null, label, s);
  };
  let typing = null;
  const box = el('input', {type: 'search', placeholder: 'Search message, source, severity', 'aria-label': 'Search', oninput: () => {
    clearTimeout(typing);
    typing = setTimeout(() => { search = box.value.trim(); p.reload(true); }, 250);
  }});
  const kept = el('span', {class: 'muted', id: 'events-kept'});
  const host = $('#events');
  const p = RS.pager(host, {
    pageSize: 50,
    columns,
    rowAttrs: (e) => ({'data-id': e.event_id, 'data-seq': e.seq, 'data-severity': e.severity, 'data-source': e.source_type}),
    toolbar: [select('Severity', SEVERITIES, (v) => { severity = v; }), select('Source', SOURCES, (v) => { source = v; }), box, kept],
    empty: 'No event matches.',
    load: async (offset, limit) => {
      const q = new URLSearchParams({limit, offset});
      if (severity) q.set('severity', severity);
      if (source) q.set('source_type', source);
      if (search) q.set('search', search);
      const r = (await RS.json(`/api/cluster_events?${q}`)) || {};
      const rows = r.events || [];
      const filtered = typeof r.num_filtered === 'number' ? r.num_filtered : rows.length;
      kept.textContent = `${int(r.total)} kept of ${int(r.recorded)} recorded (the last ${int(r.capacity)} stay)`;
      host.dataset.search = search;
      return {rows, filtered, next: offset + rows.length < filtered ? offset + rows.length : null};
    },
  });
  p.reload(true);
  setInterval(() => { if (!document.hidden && p.offset() === 0) p.reload(false); }, 3000);
})();
