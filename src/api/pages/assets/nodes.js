// The machine view: nodes a page at a time from /api/nodes, each with resource bars;
// a node opens to the workers on it (running tasks and alive actors from the State
// API, and /api/v0/workers where the server has it) and links to its own metrics.
'use strict';
(() => {
  const {el, $, num, int, fixed, bytes, bar, badge, table, short} = RS;
  let state = '';
  let open = null; // node_id whose workers are shown

  const res = (n, name) => {
    const r = (Array.isArray(n.resources) ? n.resources : []).find((x) => Array.isArray(x) && x[0] === name);
    return r ? {total: num(r[1]), used: num(r[1]) - num(r[2])} : null;
  };
  function resBar(n, name, f) {
    const r = res(n, name);
    return r && r.total > 0 ? bar(r.used, r.total, `${f(r.used)} / ${f(r.total)}`) : el('span', {class: 'muted', text: '—'});
  }
  const cpuFmt = (v) => fixed(v, 2);

  async function workers(n) {
    const host = el('div', {class: 'workers', 'data-node-id': n.node_id}, el('p', {class: 'muted', text: 'Loading workers…'}));
    const params = {node_id: n.node_id, limit: 50, detail: true};
    const [tasks, actors, ws] = await Promise.all([
      RS.list('tasks', Object.assign({state: 'RUNNING'}, params)).catch(() => null),
      RS.list('actors', Object.assign({state: 'ALIVE'}, params)).catch(() => null),
      // Newer servers list workers; older ones answer 404, and the tasks say enough.
      RS.list('workers', {node_id: n.node_id, limit: 50}).catch(() => null),
    ]);
    const gpus = (r) => num((r.required_resources || {}).GPU);
    // One row per worker process: an actor's worker also shows the call it is running.
    const byPid = new Map();
    const rows = [];
    for (const a of (actors && actors.rows) || []) {
      const w = {pid: a.pid, what: a.class_name, kind: 'actor', id: a.actor_id, gpu: gpus(a), state: a.state, running: []};
      rows.push(w);
      if (num(a.pid)) byPid.set(a.pid, w);
    }
    for (const t of (tasks && tasks.rows) || []) {
      const name = t.func_or_class_name || t.name;
      const w = num(t.worker_pid) ? byPid.get(t.worker_pid) : null;
      if (w) { w.running.push(name); continue; }
      const row = {pid: t.worker_pid, what: name, kind: 'task', id: t.task_id, gpu: gpus(t), state: t.state, running: []};
      rows.push(row);
      if (num(t.worker_pid)) byPid.set(t.worker_pid, row);
    }
    const parts = [
      el('h2', {text: `Workers on ${n.node_ip || n.ip}`}),
      el('p', {class: 'muted'}, `${int(tasks ? tasks.filtered : 0)} running tasks, ${int(actors ? actors.filtered : 0)} alive actors`,
        ws ? `, ${int(ws.filtered)} workers` : '', ' · ',
        el('a', {href: `/metrics/nodes/${encodeURIComponent(n.node_ip || n.ip)}`, text: 'this node\'s metrics'})),
      table([
        {title: 'Worker pid', cell: (w) => (w.pid ? String(w.pid) : '—'), num: true},
        {title: 'Runs', cell: (w) => el('span', null, w.what, w.running.length ? el('span', {class: 'muted', text: ` · running ${w.running.join(', ')}`}) : '')},
        {title: 'Kind', cell: (w) => w.kind},
        {title: 'State', cell: (w) => badge(w.state)},
        {title: 'GPUs', cell: (w) => (w.gpu ? fixed(w.gpu, 2) : ''), num: true},
        {title: 'Id', cell: (w) => el('span', {class: 'mono', text: short(w.id, 24), title: w.id})},
      ], rows, {empty: 'No worker is running anything on this node.', rowAttrs: (w) => ({'data-pid': w.pid || ''})}),
    ];
    if (((tasks && tasks.filtered) || 0) + ((actors && actors.filtered) || 0) > rows.length) {
      parts.push(el('p', {class: 'muted', text: 'Showing the first 50 of each; the Tasks and Actors views page through the rest.'}));
    }
    host.replaceChildren(...parts);
    host.dataset.loaded = '1';
    return host;
  }

  const columns = [
    {title: 'Node', cell: (n) => el('div', null, el('a', {href: `/metrics/nodes/${encodeURIComponent(n.node_ip || n.ip)}`, class: 'mono', text: n.node_ip || n.ip, title: 'Prometheus metrics of this node', onclick: (e) => e.stopPropagation()}),
      n.is_head ? ' ' : '', n.is_head ? el('span', {class: 'badge info', text: 'head'}) : '',
      el('div', {class: 'muted mono', text: short(n.node_id)}))},
    {title: 'Type', cell: (n) => n.node_type},
    {title: 'State', cell: (n) => badge(n.state)},
    {title: 'CPU', cell: (n) => (n.alive === false ? el('span', {class: 'muted', text: n.death_reason || 'dead'}) : resBar(n, 'CPU', cpuFmt))},
    {title: 'Memory', cell: (n) => (n.alive !== false && num(n.memory_total) ? bar(n.memory_used, n.memory_total, `${bytes(n.memory_used)} / ${bytes(n.memory_total)}`) : '—')},
    {title: 'GPU', cell: (n) => (n.alive !== false && res(n, 'GPU') ? el('div', null, resBar(n, 'GPU', cpuFmt), el('div', {class: 'muted', text: n.gpu_model ? `${n.gpu_model}${num(n.gpu_memory) ? `, ${bytes(n.gpu_memory)}` : ''}` : ''})) : el('span', {class: 'muted', text: 'none'}))},
    {title: 'Object store', cell: (n) => (n.alive !== false && num(n.store_capacity) ? bar(n.store_used, n.store_capacity, `${bytes(n.store_used)} / ${bytes(n.store_capacity)}`) : '—')},
    {title: 'Running', cell: (n) => int(n.running_tasks), num: true},
    {title: 'Actors', cell: (n) => int(n.actors), num: true},
  ];

  const stateSel = el('select', {'aria-label': 'State', onchange: () => { state = stateSel.value; p.reload(true); }},
    el('option', {value: '', text: 'All'}), el('option', {value: 'ALIVE', text: 'Alive'}), el('option', {value: 'DEAD', text: 'Dead'}));

  const p = RS.pager($('#nodes'), {
    pageSize: 50,
    columns,
    rowAttrs: (n) => ({'data-id': n.node_id}),
    toolbar: [el('label', null, 'State', stateSel)],
    empty: 'No node matches.',
    load: async (offset, limit) => {
      const q = new URLSearchParams({limit, offset});
      if (state) q.set('state', state);
      const r = await RS.json(`/api/nodes?${q}`);
      const rows = (r && r.nodes) || [];
      const total = r && typeof r.total === 'number' ? r.total : rows.length;
      return {rows, filtered: total, next: offset + rows.length < total ? offset + rows.length : null};
    },
    onRow: async (n, tr) => {
      const next = tr.nextElementSibling;
      if (next && next.classList.contains('detail')) { next.remove(); tr.classList.remove('selected'); open = null; return; }
      tr.classList.add('selected');
      open = n.node_id;
      const cell = el('td', {colspan: columns.length}, el('p', {class: 'muted', text: 'Loading workers…'}));
      tr.after(el('tr', {class: 'detail'}, cell));
      cell.replaceChildren(await workers(n));
    },
  });
  p.reload(true);
  // Refresh the page of nodes unless a node is open (its detail would be lost).
  setInterval(() => { if (!open && !document.hidden) p.reload(false); }, 5000);
})();
