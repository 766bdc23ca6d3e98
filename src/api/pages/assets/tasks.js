// Tasks: the State API's task summary (per function, per state, in Ray's TaskStatus
// names and lifecycle order) and the task list a page at a time, filterable by state.
'use strict';
(() => {
  const {el, $, num, int, badge, short, time} = RS;
  // Ray's TaskStatus values, in lifecycle order.
  const STATES = ['NIL', 'PENDING_ARGS_AVAIL', 'PENDING_NODE_ASSIGNMENT', 'PENDING_OBJ_STORE_MEM_AVAIL', 'PENDING_ARGS_FETCH',
    'SUBMITTED_TO_WORKER', 'PENDING_ACTOR_TASK_ARGS_FETCH', 'PENDING_ACTOR_TASK_ORDERING_OR_CONCURRENCY', 'GETTING_AND_PINNING_ARGS',
    'RUNNING', 'RUNNING_IN_RAY_GET', 'RUNNING_IN_RAY_WAIT', 'FINISHED', 'FAILED'];
  const params = new URLSearchParams(location.search);
  let state = params.get('state') || '';
  // One task asked for by id (Flow Insight links its slow calls here).
  const taskId = params.get('task_id') || '';
  // Duration order of the page shown: null as listed, true longest first.
  let sortDesc = params.get('sort') === 'duration' ? true : null;
  /** A task's start to end (or to now, running) in seconds; null before it starts. */
  function duration(t) {
    if (!num(t.start_time_ms)) return null;
    const end = num(t.end_time_ms) || Date.now();
    return Math.max(0, end - num(t.start_time_ms)) / 1000;
  }

  async function summary() {
    const s = await RS.summary('tasks');
    const groups = Object.values(s.summary || {});
    const seen = new Set(groups.flatMap((g) => Object.keys(g.state_counts || {})));
    // Ray's states that occur, in order, then any this page does not know yet.
    const cols = [...STATES.filter((x) => seen.has(x)), ...[...seen].filter((x) => !STATES.includes(x)).sort()];
    const host = $('#task-summary');
    host.replaceChildren(
      el('div', {class: 'section-head'}, el('h2', {text: 'Summary by function'}),
        el('span', {class: 'muted', text: `${int(s.total_tasks)} tasks, ${int(s.total_actor_tasks)} actor tasks, ${int(s.total_actor_scheduled)} actors scheduled`})),
      RS.table([
        {title: 'Function or class', cell: (g) => g.func_or_class_name},
        {title: 'Type', cell: (g) => el('span', {class: 'muted', text: g.type || ''})},
        ...cols.map((c) => ({title: c, num: true, cell: (g) => {
          const n = num((g.state_counts || {})[c]);
          return n ? el('a', {href: `?state=${c}`, text: int(n), 'data-count': n, onclick: (e) => { e.preventDefault(); pick(c); }}) : '';
        }})),
      ], groups.sort((a, b) => String(a.func_or_class_name).localeCompare(String(b.func_or_class_name))), {empty: 'No task is kept.'}));
    host.dataset.groups = String(groups.length);
  }

  const columns = [
    {title: 'Task', cell: (t) => el('span', {class: 'mono', text: short(t.task_id, 16), title: t.task_id})},
    {title: 'Function', cell: (t) => t.func_or_class_name || t.name},
    {title: 'Type', cell: (t) => el('span', {class: 'muted', text: t.type || ''})},
    {title: 'State', cell: (t) => badge(t.state)},
    {title: 'Attempt', cell: (t) => int(t.attempt_number), num: true},
    {title: 'Job', cell: (t) => el('span', {class: 'mono', text: t.job_id || ''})},
    {title: 'Node', cell: (t) => el('span', {class: 'mono', text: short(t.node_id)})},
    {title: 'Started', cell: (t) => (t.start_time_ms ? time(t.start_time_ms) : '')},
    {title: 'Duration', num: true, sort: () => { sortDesc = !sortDesc; p.reload(false); },
      get sorted() { return sortDesc == null ? null : sortDesc ? 'descending' : 'ascending'; },
      cell: (t) => { const d = duration(t); return d == null ? '' : el('span', {'data-duration': d, text: d < 10 ? `${d.toFixed(3)} s` : `${d.toFixed(1)} s`, title: t.end_time_ms ? 'start to end' : 'running: start to now'}); }},
    {title: 'Error', cell: (t) => t.error_type || ''},
  ];
  const stateSel = el('select', {'aria-label': 'State', onchange: () => { state = stateSel.value; p.reload(true); }},
    ['', ...STATES].map((s) => el('option', {value: s, text: s || 'All', selected: s === state})));
  function pick(s) { state = s; stateSel.value = s; p.reload(true); }
  const p = RS.pager($('#tasks'), {
    pageSize: 50,
    columns,
    rowAttrs: (t) => ({'data-id': `${t.task_id}:${t.attempt_number}`}),
    toolbar: [el('h2', {text: 'Task list'}), el('label', null, 'State', stateSel)],
    empty: 'No task matches.',
    load: async (offset, limit) => {
      const q = new URLSearchParams(Object.assign({limit, offset, detail: true}, state ? {state} : {}));
      if (taskId) { q.append('filter_keys', 'task_id'); q.append('filter_predicates', '='); q.append('filter_values', taskId); }
      const r = await RS.list('tasks', q);
      // The page shown, ordered by duration when asked (a click on the column's header).
      if (sortDesc != null) r.rows.sort((a, b) => (sortDesc ? -1 : 1) * ((duration(a) ?? -1) - (duration(b) ?? -1)));
      return r;
    },
  });
  RS.every(5000, summary);
  p.reload(true);
  setInterval(() => { if (!document.hidden) p.reload(false); }, 5000);
})();
