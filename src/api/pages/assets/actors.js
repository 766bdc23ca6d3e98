// Actors: the State API's actor list a page at a time, filtered on the server by
// state and class (classes come from the actor summary, which is bounded by classes).
'use strict';
(() => {
  const {el, $, num, int, badge, short} = RS;
  const STATES = ['DEPENDENCIES_UNREADY', 'PENDING_CREATION', 'ALIVE', 'RESTARTING', 'DEAD'];
  const params = new URLSearchParams(location.search);
  let state = params.get('state') || '';
  let cls = params.get('class_name') || '';

  function cause(a) {
    const c = a.death_cause;
    if (!c) return '';
    const ctx = c.actor_died_error_context || c.creation_task_failure_context || c;
    return ctx.error_message || ctx.reason || JSON.stringify(c);
  }
  const columns = [
    {title: 'Actor', cell: (a) => el('span', {class: 'mono', text: short(a.actor_id, 24), title: a.actor_id})},
    {title: 'Class', cell: (a) => a.class_name},
    {title: 'Name', cell: (a) => a.name},
    {title: 'State', cell: (a) => badge(a.state)},
    {title: 'Node', cell: (a) => el('span', {class: 'mono', text: short(a.node_id), title: a.node_id || ''})},
    {title: 'PID', cell: (a) => (num(a.pid) ? String(a.pid) : ''), num: true},
    {title: 'Restarts', cell: (a) => int(a.num_restarts), num: true},
    {title: 'Death cause', cell: (a) => cause(a)},
  ];

  const stateSel = el('select', {'aria-label': 'State', onchange: () => { state = stateSel.value; p.reload(true); }},
    ['', ...STATES].map((s) => el('option', {value: s, text: s || 'All', selected: s === state})));
  const classSel = el('select', {'aria-label': 'Class', onchange: () => { cls = classSel.value; p.reload(true); }},
    el('option', {value: '', text: 'All'}));
  const counts = el('span', {class: 'muted'});
  async function classes() {
    const s = await RS.summary('actors');
    const names = Object.keys(s.summary || {}).sort();
    classSel.replaceChildren(el('option', {value: '', text: 'All'}), ...names.map((n) => {
      const by = (s.summary[n] || {}).state_counts || {};
      return el('option', {value: n, text: `${n} (${int(num(by.ALIVE))} alive)`, selected: n === cls});
    }));
    counts.textContent = `${int(s.total_actors)} actors in ${names.length} classes`;
  }

  const p = RS.pager($('#actors'), {
    pageSize: 50,
    columns,
    rowAttrs: (a) => ({'data-id': a.actor_id}),
    toolbar: [el('label', null, 'State', stateSel), el('label', null, 'Class', classSel), counts],
    empty: 'No actor matches.',
    load: (offset, limit) => {
      const q = {limit, offset, detail: true};
      if (state) q.state = state;
      if (cls) q.class_name = cls;
      return RS.list('actors', q);
    },
  });
  classes().catch(RS.fail);
  p.reload(true);
  setInterval(() => { if (!document.hidden) { p.reload(false); classes().catch(RS.fail); } }, 5000);
})();
