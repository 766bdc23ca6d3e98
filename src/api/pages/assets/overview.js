// The overview: cluster status from /api/cluster, four live charts seeded from
// /api/metrics/history then fed by /ws/realtime, the alerts Alertmanager delivered,
// and the first rows of the running tasks and alive actors.
'use strict';
(() => {
  const {el, $, num, int, fixed, bytes, pct, duration, badge, bar, table, short} = RS;
  const PENDING = /^PENDING_|^SUBMITTED_TO_WORKER$|^NIL$/;
  const RUNNING = /^RUNNING/;
  const done = {status: false, charts: false, tasks: false, actors: false};
  function mark(part) {
    done[part] = true;
    // The cluster is on screen once its status and charts are; the tables come from
    // the engine's row tables, which it may first have to rebuild.
    if (done.status && done.charts && !document.body.dataset.alive) {
      document.body.dataset.alive = String(Math.round(performance.now()));
    }
    if (Object.values(done).every(Boolean) && !document.body.dataset.rendered) {
      document.body.dataset.rendered = String(Math.round(performance.now()));
    }
  }

  const charts = {
    cpu: new RS.Chart($('#chart-cpu'), {title: 'CPU usage', fmt: (v) => `${v.toFixed(1)} %`, max: 100}),
    memory: new RS.Chart($('#chart-memory'), {title: 'Memory usage', fmt: (v) => `${v.toFixed(1)} %`, max: 100}),
    throughput: new RS.Chart($('#chart-throughput'), {title: 'Task throughput', fmt: (v) => `${fixed(v)} /s`}),
    actors: new RS.Chart($('#chart-actors'), {title: 'Live actors', fmt: (v) => int(v)}),
  };

  // ---------------------------------------------------------------- status
  function setStat(name, value) {
    const e = document.querySelector(`[data-stat="${name}"]`);
    if (e) { e.textContent = int(value); e.dataset.value = String(num(value)); }
  }
  function sumWhere(map, re) {
    return Object.entries(map || {}).filter(([k]) => re.test(k)).reduce((a, [, v]) => a + num(v), 0);
  }
  function resource(c, name) {
    const r = (c.resources || {})[name] || {};
    const total = num(r.total), used = total - num(r.available);
    const isBytes = name !== 'CPU' && name !== 'GPU';
    tile(name, used, total, isBytes ? bytes : (v) => fixed(v, 2));
  }
  function tile(name, used, total, f) {
    const big = document.querySelector(`[data-stat-pct="${name}"]`);
    big.textContent = total > 0 ? `${pct(used, total).toFixed(1)} %` : '—';
    big.dataset.used = String(used);
    big.dataset.total = String(total);
    document.querySelector(`[data-bar="${name}"]`).replaceChildren(bar(used, total, total > 0 ? `${f(used)} of ${f(total)}` : 'none in this cluster'));
  }
  async function status() {
    const c = await RS.json('/api/cluster');
    // A real cluster read by `rayscope observe` has no seed, speed or virtual clock.
    const observed = c.mode === 'observed';
    document.body.dataset.mode = observed ? 'observed' : 'simulated';
    $('#session').textContent = observed
      ? `${c.session_name || ''} · Ray ${c.ray_version || '?'} · observed cluster`
      : `${c.session_name || ''} · Ray ${c.ray_version || '?'} · seed ${c.seed ?? '?'}`;
    $('#clock').textContent = observed
      ? `Observed for ${duration(c.sim_time_seconds)} (${fixed(c.sim_time_seconds)} s) · last read ${RS.time(c.timestamp_ms)}`
      : `Virtual time ${duration(c.sim_time_seconds)} (${fixed(c.sim_time_seconds)} s) at ${fixed(c.speed, 2)}× speed` +
        (num(c.lag_seconds) > 1 ? ` · the engine is ${fixed(c.lag_seconds)} s behind` : '') +
        ` · ${int(c.events_processed)} events`;
    $('#clock').dataset.simTime = String(num(c.sim_time_seconds));
    const nodes = c.nodes || {};
    setStat('nodes.alive', nodes.alive);
    setStat('nodes.dead', nodes.dead);
    $('#node-types').replaceChildren(...Object.entries(nodes.by_type || {}).map(([t, n]) =>
      el('tr', {'data-node-type': t, 'data-alive': num(n.alive), 'data-dead': num(n.dead)},
        el('td', {text: t}), el('td', {class: 'num', text: `${int(n.alive)} alive · ${int(n.dead)} dead`}))));
    for (const r of ['CPU', 'GPU', 'memory']) resource(c, r);
    // The bytes the plasma stores hold, as the raylets report them: the logical
    // object_store_memory resource is only what tasks asked for, usually nothing.
    const store = c.object_store || {};
    tile('object_store', num(store.used_bytes), num(store.capacity_bytes), bytes);
    $('#store-detail').textContent = `${int(store.num_objects)} objects · ${bytes(num(store.spilled_bytes))} spilled`;
    const tasks = c.tasks || {};
    setStat('tasks.running', sumWhere(tasks, RUNNING));
    setStat('tasks.pending', sumWhere(tasks, PENDING));
    const actors = c.actors || {};
    setStat('actors.alive', num(actors.ALIVE));
    setStat('actors.other', sumWhere(actors, /./) - num(actors.ALIVE) - num(actors.DEAD));
    const jobs = c.jobs || {};
    setStat('jobs.running', jobs.running);
    $('#job-status').replaceChildren(...Object.entries(jobs.by_status || {}).map(([s, n]) =>
      el('tr', {'data-job-status': s, 'data-count': num(n)}, el('td', null, badge(s)), el('td', {class: 'num', text: int(n)}))));
    $('#status').dataset.seq = String(num(c.events_processed));
    mark('status');
  }

  // ---------------------------------------------------------------- charts
  let lastFinished = null;
  async function seedCharts() {
    const h = await RS.json(`/api/metrics/history?start=${Date.now() / 1000 - 600}`);
    for (const p of ((h && h.points) || []).slice(-50)) {
      const n = p.node_metrics || {}, m = p.memory_metrics || {}, t = p.task_metrics || {}, a = p.actor_metrics || {};
      charts.cpu.push(100 * num(n.cpu_utilization));
      charts.memory.push(num(m.memory_percent));
      charts.throughput.push(num(t.throughput));
      charts.actors.push(num((a.by_state || {}).ALIVE));
    }
    mark('charts');
  }
  function onSummary(m) {
    if (!m || m.type !== 'summary') return;
    const now = performance.now();
    charts.cpu.push(pct(m.cpu && m.cpu.used, m.cpu && m.cpu.total));
    if (m.memory) charts.memory.push(pct(m.memory.used, m.memory.total));
    if (typeof m.tasks_finished_total === 'number') {
      if (lastFinished && now > lastFinished.at) {
        charts.throughput.push(Math.max(0, m.tasks_finished_total - lastFinished.n) / ((now - lastFinished.at) / 1000));
      }
      lastFinished = {n: m.tasks_finished_total, at: now};
    }
    charts.actors.push(num((m.actors || {}).ALIVE));
  }

  // ---------------------------------------------------------------- tables and alerts
  async function tasks() {
    const r = await RS.json('/api/tasks?limit=8');
    $('#tasks').replaceChildren(table([
      {title: 'Function', cell: (t) => t.func_or_class_name || t.name},
      {title: 'State', cell: (t) => badge(t.state)},
      {title: 'Node', cell: (t) => el('span', {class: 'mono', text: short(t.node_id)})},
      {title: 'Task', cell: (t) => el('span', {class: 'mono', text: short(t.task_id, 16), title: t.task_id})},
    ], (r && r.tasks) || [], {empty: 'No task is running.'}));
    $('#tasks').dataset.total = String(num(r && r.total_running));
    mark('tasks');
  }
  async function actors() {
    const r = await RS.list('actors', {limit: 8, state: 'ALIVE'});
    $('#actors').replaceChildren(table([
      {title: 'Class', cell: (a) => a.class_name},
      {title: 'State', cell: (a) => badge(a.state)},
      {title: 'Node', cell: (a) => el('span', {class: 'mono', text: short(a.node_id)})},
      {title: 'Actor', cell: (a) => el('span', {class: 'mono', text: short(a.actor_id, 24), title: a.actor_id})},
    ], r.rows, {empty: 'No actor is alive.'}), r.warnings.length ? el('p', {class: 'muted', text: r.warnings.join('; ')}) : '');
    $('#actors').dataset.total = String(r.filtered);
    mark('actors');
  }
  async function alerts() {
    const r = await RS.json('/api/alerts?limit=50');
    // The latest notification per alert decides whether it is still firing.
    const latest = new Map();
    for (const a of (r && r.alerts) || []) {
      const key = (a.fingerprint || '') + JSON.stringify(a.labels || {});
      if (!latest.has(key)) latest.set(key, a);
    }
    const firing = [...latest.values()].filter((a) => a.status === 'firing');
    const box = $('#alerts');
    box.hidden = firing.length === 0;
    box.dataset.firing = String(firing.length);
    box.className = firing.some((a) => (a.labels || {}).severity === 'critical') ? 'banner critical' : 'banner';
    box.replaceChildren(el('strong', {text: `${firing.length} alert${firing.length === 1 ? '' : 's'} firing`}),
      el('ul', null, firing.slice(0, 5).map((a) => {
        const l = a.labels || {}, ann = a.annotations || {};
        return el('li', null, el('strong', {text: l.alertname || 'alert'}), l.severity ? ` (${l.severity})` : '',
          ann.summary ? ` — ${ann.summary}` : ann.description ? ` — ${ann.description}` : '');
      })));
  }

  // Observe mode's own trouble, said where the cluster is: a job cap full of running
  // jobs (new jobs refused), a recording that cannot be written, refused times.
  async function observer() {
    let o;
    try { o = await RS.json('/api/observe'); } catch (e) { if (e.status === 404) return; throw e; }
    const lines = [];
    if (o.jobs_full_of_running) {
      lines.push(`${RS.int(o.jobs_held)} jobs, all still running, fill the cap of ${RS.int(o.max_jobs)}: `
        + `records of new jobs are refused (${RS.int(o.jobs_refused)} so far).`);
    }
    if (o.record_error) {
      lines.push(`Recording fails: ${o.record_error} (${RS.int(o.unrecorded_records)} records not recorded; `
        + 'it resumes when the write succeeds).');
    }
    if (o.implausible_times) {
      lines.push(`${RS.int(o.implausible_times)} records refused for a time outside the plausible window.`);
    }
    const box = $('#observer');
    box.hidden = lines.length === 0;
    box.dataset.lines = String(lines.length);
    box.replaceChildren(el('ul', null, lines.map((t) => el('li', {text: t}))));
  }

  seedCharts().catch(RS.fail).finally(() => RS.stream('/ws/realtime', onSummary));
  RS.every(2000, status);
  RS.every(3000, tasks);
  RS.every(3000, actors);
  RS.every(5000, alerts);
  RS.every(5000, observer);
})();
