// Flow Insight (/flow): the five views of one job, from rayscope's /api/flow/* JSON.
// Owns: the job, level and instant pickers, drawing the call graph and the Gantt as
// inline SVG (the Gantt: an overview of the whole job from /api/flow/gantt, and below
// it the executions of the window picked on it, from the windowed timeline: the
// server's default limit, or the page URL's `limit`, saying so when the answer was
// cut; the window is the URL's `from`/`to`), the bottleneck, physical and stack tables, and the flame graph (the
// server's inferno SVG, shown as an image). Refreshes every 3 s while the view is "now".
// Must never: change state or compute a view itself (the server's JSON is the view).
'use strict';
(() => {
  const {el, svg, $, num, int, fixed} = RS;
  // Actor ids here carry their unique digits last: show those.
  const short = (id, n) => (typeof id === 'string' && id.length > (n || 12) ? '…' + id.slice(-(n || 12)) : id || '—');
  // A State API actor id is 12 bytes of actor then the job's 4: show the actor's part.
  const actor = (id) => (typeof id === 'string' && id.length === 32 ? '…' + id.slice(16, 24) : short(id, 8));
  const params = new URLSearchParams(location.search);
  let job = params.get('job') || '';
  // No level asked: the server picks the one that shows the tree, and says which.
  let level = ['class', 'instance'].includes(params.get('level')) ? params.get('level') : '';
  let at = params.get('at') || '';
  // The timeline's cut (executions); empty: the server's default.
  const limit = params.get('limit') || '';
  const secs = (s) => `${fixed(s, s < 10 ? 3 : 1)} s`;
  // What the times are: the model's virtual clock, or an observed cluster's (set below).
  let clock = 'virtual time';
  RS.json('/api/cluster').then((c) => { if (c.mode === 'observed') { clock = 'cluster time since rayscope began reading'; atInput.setAttribute('aria-label', 'At (seconds since rayscope began reading)'); } }).catch(() => {});
  const q = (extra) => new URLSearchParams(Object.assign({job}, at ? {at} : {}, extra || {}));
  const body = (id) => $(`#${id} .flow-body`);
  const note = (id, text) => { const n = $(`#${id} .flow-note`); if (n) n.textContent = text; };
  const BLOCKS = ['findings', 'impact', 'bottlenecks', 'graph', 'physical', 'gantt', 'flame', 'stack'];
  const done = (id) => {
    const b = $(`#${id}`);
    b.dataset.loaded = String(num(Number(b.dataset.loaded)) + 1);
    // The first render: the first view drawn, then every view drawn once, in ms since
    // the page was asked for.
    if (!document.body.dataset.firstViewMs) document.body.dataset.firstViewMs = String(Math.round(performance.now()));
    if (!document.body.dataset.firstRenderMs && BLOCKS.every((k) => num(Number($(`#${k}`).dataset.loaded)) > 0)) {
      document.body.dataset.firstRenderMs = String(Math.round(performance.now()));
    }
  };

  // ------------------------------------------------------------- toolbar
  // A new job starts with its whole extent in the Gantt.
  const jobSel = el('select', {'aria-label': 'Job', id: 'flow-job', onchange: () => { job = jobSel.value; win = null; go(); }});
  const levelSel = el('select', {'aria-label': 'Level', onchange: () => { level = levelSel.value; go(); }},
    ['class', 'instance'].map((l) => el('option', {value: l, text: l === 'class' ? 'Classes' : 'Instances', selected: l === level})));
  const atInput = el('input', {type: 'search', 'aria-label': 'At (virtual seconds)', placeholder: 'now', value: at, size: 10,
    onchange: () => { at = atInput.value.trim(); go(); }});
  $('#flow-toolbar').replaceChildren(el('label', null, 'Job', jobSel), el('label', null, 'Graph', levelSel),
    el('label', null, 'At (s)', atInput), el('span', {class: 'spacer'}));

  async function jobs() {
    const list = (await RS.json('/api/flow/jobs')).jobs || [];
    if (!job && list.length) {
      // The most telling recent job: the newest running one that made a call, else the
      // newest that made one, else the newest (a job of one call, its driver, shows nothing).
      const busy = list.filter((j) => num(j.calls) > 1);
      const running = busy.filter((j) => j.end_time_s == null);
      const pick = running.length ? running : busy.length ? busy : list;
      job = pick[pick.length - 1].job_id;
    }
    jobSel.replaceChildren(...list.map((j) => el('option', {value: j.job_id, selected: j.job_id === job,
      text: `${j.job_id} ${j.name || ''} · ${j.status} · ${int(j.calls)} calls${j.truncated ? ' (capped)' : ''}`})));
    const sel = list.find((j) => j.job_id === job);
    $('#flow-status').textContent = list.length ? observedNote(sel && sel.observed) : 'No job has made a call yet.';
    return list.length > 0;
  }

  // A call as the server names it: its task id, node, worker and sizes.
  const callText = (c) => c ? `task ${short(c.task_id, 16)} · node ${c.node_id ? short(c.node_id, 8) : (c.node ?? '—')} · worker ${c.worker_pid ?? '—'} · ${secs(num(c.duration_s))} · args ${RS.bytes(c.arg_bytes)} · returns ${RS.bytes(c.return_bytes)}` : '—';
  const callLink = (c) => c ? el('a', {href: `/tasks?task_id=${encodeURIComponent(c.task_id)}`, class: 'mono', text: callText(c), title: c.task_id}) : '—';

  // ------------------------------------------------------------- findings
  /** Ray's documented patterns and anti-patterns the server found in the job. */
  async function findings() {
    const v = await RS.json(`/api/flow/findings?${q()}`);
    const list = v.findings || [];
    body('findings').replaceChildren(list.length
      ? el('ul', {class: 'flow-findings'}, list.map((f) => el('li', {'data-kind': f.kind},
        RS.badge(f.kind.toUpperCase()), ' ', el('strong', {text: f.title}),
        el('div', {class: 'muted', text: `where: ${f.where} · ${f.saves_s == null ? 'saves: computed once the job has ended' : `fixing saves ${secs(num(f.saves_s))}`} (${f.fix})`}),
        el('div', {text: f.evidence.replace(/ Ray's docs: \S+$/, '')}, ' ', el('a', {href: f.doc, text: "Ray's docs ›", rel: 'noopener'})),
        el('div', {class: 'muted'}, 'slowest call: ', callLink((f.calls || [])[0])))))
      : el('p', {class: 'muted', text: v.finished ? "None of Ray's documented anti-patterns shows in this job." : 'None so far; what a fix saves is computed once the job has ended.'}));
    note('findings', `${int(list.length)} found`);
    $('#findings').dataset.kinds = list.map((f) => f.kind).join(' ');
    done('findings');
  }

  // What observing a real job could and could not see (null for the model's jobs).
  function observedNote(o) {
    if (!o) return '';
    const parts = ['Observed on a Ray cluster.'];
    parts.push(o.waits === 'measured' ? "Waits in ray.get/ray.wait/ray.put are Ray's own profile spans."
      : o.waits === 'mixed' ? "Waits are Ray's profile spans where Ray sent them, inferred from task times elsewhere."
      : 'Waits in ray.get are inferred from task times.');
    if (o.profiling_howto) parts.push(`Measured waits for one job: ${o.profiling_howto}.`);
    if (num(o.ended_with_job)) parts.push(`${int(o.ended_with_job)} calls ended with the job, outcome not reported (Ray marked them failed or left them unfinished when it killed the job's workers; their callers went on).`);
    for (const l of o.lost || []) parts.push(`${l.calls == null ? 'Calls' : `${int(l.calls)} calls`}${l.name ? ` of ${l.name}` : ''}${l.caller ? ` made by ${l.caller}` : ''} lost${l.node ? ` on node ${l.node}` : ''}: ${l.evidence}.`);
    if (o.loss_prevention) parts.push(o.loss_prevention + '.');
    return parts.join(' ');
  }

  // ------------------------------------------------------------- bottlenecks
  async function bottlenecks() {
    const b = await RS.json(`/api/flow/bottlenecks?${q()}`);
    const rows = (b.entries || []).slice(0, 10);
    body('bottlenecks').replaceChildren(
      el('p', {class: 'muted', text: `Critical path ${secs(num(b.critical_path_s))} at ${secs(num(b.at_s))} · the driver's own execution ${secs(num(b.driver_self_s))}${b.driver_waits_inferred ? " · the driver's waits in ray.get are inferred from the calls' times, not measured" : ''}${b.truncated ? ' · recorded calls only' : ''}. Ranked by execution on the path; waiting is given to what was waited for. "Saves" is the job re-run with that entry made instant.`}),
      RS.table([
        {title: '#', cell: (e) => int(e.rank), num: true},
        {title: 'Method', cell: (e) => el('strong', {text: e.name})},
        {title: 'Actor', cell: (e) => el('span', {class: 'mono', text: actor(e.actor_id), title: e.actor_id || ''})},
        {title: 'Program', cell: (e) => [e.program_flag ? RS.badge('FLAGGED') : null, e.level != null ? ` level ${e.level}` : ''].filter(Boolean)},
        {title: 'Executing on path', cell: (e) => secs(num(e.self_s)), num: true},
        {title: 'Queued on path', cell: (e) => secs(num(e.queued_on_path_s)), num: true},
        {title: 'Share', cell: (e) => RS.bar(num(e.share), 1, `${fixed(100 * num(e.share))}%`)},
        {title: 'Saves (made instant)', cell: (e) => e.saves_s == null ? '—' : el('span', {text: secs(num(e.saves_s)) + (e.saves_why ? ' ⓘ' : ''), title: e.saves_why || ''}), num: true},
        {title: 'Calls', cell: (e) => [int(e.calls), e.inferred ? ' ' : null, e.inferred ? RS.badge('INFERRED') : null].filter(Boolean), num: true},
        {title: 'Slowest call', cell: (e) => callLink(e.slowest_call)},
        {title: 'Waiting callers', cell: (e) => (e.callers || []).map((c) => `${c.name} ${actor(c.actor_id)} ×${int(c.waiting_calls)}`).join(', ')},
      ], rows, {empty: 'No call on the critical path yet.', rowAttrs: (e) => ({'data-name': e.name, 'data-actor': e.actor_id || ''})}));
    done('bottlenecks');
  }

  // ------------------------------------------------------------- impact
  /** What fixing each candidate saves: the server re-runs the finished job in its model. */
  async function impact() {
    const v = await RS.json(`/api/flow/impact?${q()}`);
    const rows = (v.entries || []).slice(0, 10);
    const fix = (e) => (e.fix || []).map((f) => `${f.name} ${actor(f.actor_id)}${f.program_flag ? ' ⚑' : ''} → ${secs(num(f.stretch_s))} per stretch`).join(' + ');
    body('impact').replaceChildren(
      el('p', {class: 'muted', text: v.finished
        ? `The job re-run in the model with one method's execution as fast as its siblings' (or zero, without siblings): ${secs(num(v.makespan_s))} as recorded.`
        : (v.note || 'The job has not ended.')}),
      RS.table([
        {title: '#', cell: (e) => int(e.rank), num: true},
        {title: 'Fix', cell: (e) => [e.together ? RS.badge('FIX BOTH') : null, ` ${fix(e)}`].filter(Boolean)},
        {title: 'Saves', cell: (e) => secs(num(e.saved_s)), num: true},
        {title: 'Share', cell: (e) => RS.bar(num(e.saved_share), 1, `${fixed(100 * num(e.saved_share))}%`)},
        {title: 'Makespan then', cell: (e) => secs(num(e.makespan_s)), num: true},
      ], rows, {empty: v.finished ? 'No single fix saves 0.1 % or more.' : 'Computed once the job has ended.',
        rowAttrs: (e) => ({'data-saved': num(e.saved_s), 'data-together': String(Boolean(e.together))})}));
    done('impact');
  }

  // ------------------------------------------------------------- call graph
  /** Layered drawing: each node one column right of its first caller. */
  async function graph() {
    const g = await RS.json(`/api/flow/graph?${q(level ? {level} : {})}`);
    if (!level && g.level) { level = g.level; levelSel.value = level; }
    const nodes = g.nodes || [], edges = g.edges || [];
    const groups = new Map((g.groups || []).map((x) => [x.id, x]));
    const depth = new Map([['_main', 0]]);
    for (let pass = 0; pass < nodes.length; pass++) {
      let moved = false;
      for (const e of edges) {
        if (depth.has(e.source) && !depth.has(e.target)) { depth.set(e.target, depth.get(e.source) + 1); moved = true; }
      }
      if (!moved) break;
    }
    const cols = [];
    for (const n of nodes) {
      const d = depth.has(n.id) ? depth.get(n.id) : 0;
      (cols[d] = cols[d] || []).push(n);
    }
    const BW = 170, BH = 40, GX = 70, GY = 14;
    const pos = new Map();
    cols.forEach((col, c) => col.forEach((n, r) => pos.set(n.id, {x: 10 + c * (BW + GX), y: 10 + r * (BH + GY)})));
    const W = 20 + cols.length * (BW + GX), H = 20 + Math.max(1, ...cols.map((c) => c.length)) * (BH + GY);
    const s = svg('svg', {viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: 'flow-graph', role: 'img', 'aria-label': 'Call graph'});
    const maxCalls = Math.max(1, ...edges.map((e) => num(e.calls)));
    for (const e of edges) {
      const a = pos.get(e.source), b = pos.get(e.target);
      if (!a || !b) continue;
      const x1 = a.x + BW, y1 = a.y + BH / 2, x2 = b.x, y2 = b.y + BH / 2;
      // A class calling itself (a worker calling its children) loops on the box's right.
      const d = e.source === e.target
        ? `M${x1},${a.y + 8} C${x1 + GX * 0.7},${a.y - 10} ${x1 + GX * 0.7},${a.y + BH + 10} ${x1},${a.y + BH - 8}`
        : `M${x1},${y1} C${x1 + GX / 2},${y1} ${x2 - GX / 2},${y2} ${x2},${y2}`;
      const path = svg('path', {class: 'flow-edge', d,
        'stroke-width': (1 + 3 * Math.sqrt(num(e.calls) / maxCalls)).toFixed(2), 'data-source': e.source, 'data-target': e.target, 'data-calls': num(e.calls)});
      const t = svg('title');
      t.textContent = `${e.source} → ${e.target}: ${int(e.calls)} calls${num(e.ended_with_job) ? ` (${int(e.ended_with_job)} ended with the job, outcome not reported)` : ''}, mean execution ${e.mean_s == null ? '—' : secs(num(e.mean_s))}, submit to end ${secs(num(e.mean_wall_s))}, ${RS.bytes(e.bytes)}`;
      path.append(t);
      const loop = e.source === e.target;
      const label = svg('text', {class: 'flow-edge-label', x: loop ? x1 + GX * 0.55 : (x1 + x2) / 2, y: loop ? y1 + 3 : (y1 + y2) / 2 - 3, 'text-anchor': loop ? 'start' : 'middle'});
      label.textContent = `×${int(e.calls)}`;
      s.append(path, label);
    }
    for (const n of nodes) {
      const p = pos.get(n.id);
      const grp = n.group != null ? groups.get(n.group) : null;
      const flagged = grp && grp.program_flag;
      const box = svg('g', {class: `flow-node ${n.kind}${flagged ? ' flagged' : ''}`, 'data-id': n.id, transform: `translate(${p.x},${p.y})`});
      box.append(svg('rect', {width: BW, height: BH, rx: 6}));
      const name = svg('text', {x: 8, y: 16});
      name.textContent = n.kind === 'method' && n.group != null ? `${level === 'instance' ? actor(String(n.group)) : n.group}.${n.name}` : n.name;
      const sub = svg('text', {x: 8, y: 32, class: 'sub'});
      sub.textContent = `${int(n.calls)} calls${num(n.ended_with_job) ? ` (${int(n.ended_with_job)} ended with the job, outcome not reported)` : ''} · exec ${secs(num(n.mean_s))} · queued ${secs(num(n.mean_queued_s))}${flagged ? ' · flagged' : ''}`;
      const t = svg('title');
      t.textContent = `${n.id}${grp && grp.level != null ? ` (level ${grp.level})` : ''}: mean execution ${secs(num(n.mean_s))}, queued ${secs(num(n.mean_queued_s))}, blocked in ray.get ${secs(num(n.mean_blocked_s))}, submit to end ${secs(num(n.mean_wall_s))}`;
      box.append(name, sub, t);
      s.append(box);
    }
    body('graph').replaceChildren(el('div', {class: 'flow-scroll'}, s));
    note('graph', num(g.nodes_total) > nodes.length
      ? `showing ${int(nodes.length)} of ${int(g.nodes_total)} nodes (the most called) and ${int(edges.length)} of ${int(g.edges_total)} edges${g.truncated ? ' · recording capped' : ''}`
      : `${int(nodes.length)} nodes, ${int(edges.length)} edges${g.truncated ? ' · recording capped' : ''}`);
    $('#graph').dataset.nodes = String(nodes.length);
    $('#graph').dataset.edges = String(edges.length);
    done('graph');
  }

  // ------------------------------------------------------------- physical
  async function physical() {
    const p = await RS.json(`/api/flow/physical?${q()}`);
    const rows = (p.nodes || []).filter((n) => (n.actors || []).length || (n.workers || []).length);
    const cpu = (n) => (n.resources || []).find((r) => r.name === 'CPU') || {total: 0, available: 0};
    body('physical').replaceChildren(RS.table([
      {title: 'Node', cell: (n) => el('span', {class: 'mono', text: `${n.ip}${n.is_head ? ' (head)' : ''}`, title: n.node_id})},
      {title: 'CPU', cell: (n) => RS.bar(num(cpu(n).total) - num(cpu(n).available), cpu(n).total, `${fixed(num(cpu(n).total) - num(cpu(n).available))} / ${fixed(cpu(n).total)}`)},
      {title: 'Actors', cell: (n) => (n.actors || []).slice(0, 12).map((a) => el('div', {class: 'mono', text:
        `${a.class} ${actor(a.actor_id)}${a.program_flag ? ' ⚑' : ''} · ${int(a.calls)} calls · busy ${fixed(100 * num(a.busy_fraction))}% of its life`}))},
      {title: 'Task workers', cell: (n) => (n.workers || []).slice(0, 6).map((w) => el('div', {class: 'mono', text: `${w.function}${num(w.pid) ? ` pid ${w.pid}` : ''} · ${int(w.calls)} calls`}))},
    ], rows, {empty: 'The job has nothing placed.'}));
    note('physical', num(p.more) > 0
      ? `the ${int(rows.length)} busiest nodes the job used; ${int(p.more)} more of ${int(p.nodes_total)} not shown`
      : `${int(rows.length)} nodes used`);
    done('physical');
  }

  // ------------------------------------------------------------- gantt
  // The overview (/api/flow/gantt: the whole job in time buckets, a lane per function)
  // with the window the detail below shows; drag on it to pick a window, or move it.
  const MAX_ROWS = 40, MAX_BARS = 4000, GW = 1100, GLW = 190, OH = 13;
  // The window in virtual seconds ([from, to]); null: the whole job.
  let win = params.has('from') && params.has('to') ? [Number(params.get('from')), Number(params.get('to'))] : null;
  if (win && !(isFinite(win[0]) && isFinite(win[1]) && win[1] > win[0])) win = null;
  let span = null; // the job's extent as the overview last said: [from_s, to_s]
  const ox = (t) => GLW + ((t - span[0]) / Math.max(1e-9, span[1] - span[0])) * (GW - GLW - 4);
  const ot = (x) => span[0] + ((x - GLW) / (GW - GLW - 4)) * (span[1] - span[0]);
  function setWindow(w) {
    if (w && span) {
      const width = Math.min(w[1] - w[0], span[1] - span[0]);
      let a = Math.max(span[0], Math.min(w[0], span[1] - width));
      w = width >= (span[1] - span[0]) * 0.999 ? null : [a, a + width];
    }
    win = w;
    syncUrl();
    drawWindow();
    detail().catch(RS.fail);
  }
  const winButtons = el('span', {class: 'gantt-controls'},
    el('button', {type: 'button', 'data-move': '-1', title: 'Earlier', text: '◀', onclick: () => step(-1)}),
    el('button', {type: 'button', 'data-move': '1', title: 'Later', text: '▶', onclick: () => step(1)}),
    el('button', {type: 'button', 'data-zoom': '0.5', title: 'Zoom in (half the window)', text: '+', onclick: () => zoom(0.5)}),
    el('button', {type: 'button', 'data-zoom': '2', title: 'Zoom out (twice the window)', text: '−', onclick: () => zoom(2)}),
    el('button', {type: 'button', 'data-whole': '1', title: 'The whole job', text: 'Whole job', onclick: () => setWindow(null)}));
  function current() { return win || span; }
  // Before the overview has answered there is no job extent to move in.
  function step(dir) { if (!span) return; const [a, b] = current(); setWindow([a + dir * (b - a), b + dir * (b - a)]); }
  function zoom(k) { if (!span) return; const [a, b] = current(), c = (a + b) / 2, h = ((b - a) * k) / 2; setWindow([c - h, c + h]); }

  async function overview() {
    const o = await RS.json(`/api/flow/gantt?${q()}`);
    span = [num(o.from_s), Math.max(num(o.to_s), num(o.from_s) + 1e-6)];
    const lanes = o.lanes || [];
    const s = svg('svg', {viewBox: `0 0 ${GW} ${lanes.length * OH + 20}`, class: 'flow-gantt gantt-overview', role: 'img',
      'aria-label': 'The whole job: calls executing per function over time; drag to pick the window below'});
    const cw = (GW - GLW - 4) / Math.max(1, o.buckets);
    lanes.forEach((l, i) => {
      const label = svg('text', {x: 4, y: i * OH + 10, class: 'gantt-label'});
      label.textContent = `${l.name} · ${secs(num(l.executing_s))}`;
      s.append(label);
      // Each lane scaled to its own peak; executing solid, blocked above it, hollow.
      const peak = Math.max(1e-9, ...l.executing.map((v, k) => v + num(l.blocked[k])));
      const area = (vals, base) => {
        let d = `M${GLW} ${i * OH + OH - 1}`;
        vals.forEach((v, k) => {
          const y = i * OH + OH - 1 - ((v + (base ? base[k] : 0)) / peak) * (OH - 2);
          d += `L${(GLW + k * cw).toFixed(1)} ${y.toFixed(1)}L${(GLW + (k + 1) * cw).toFixed(1)} ${y.toFixed(1)}`;
        });
        return d + `L${GW - 4} ${i * OH + OH - 1}Z`;
      };
      s.append(svg('path', {d: area(l.blocked, l.executing), class: 'gantt-lane-blocked'}));
      const p = svg('path', {d: area(l.executing), class: 'gantt-lane'});
      const t = svg('title');
      t.textContent = `${l.name}: ${int(l.calls)} calls, ${secs(num(l.executing_s))} executing, ${secs(num(l.blocked_s))} blocked in ray.get`;
      p.append(t);
      s.append(p);
    });
    const axis = svg('text', {x: GLW, y: lanes.length * OH + 14, class: 'gantt-label'});
    axis.textContent = `${secs(span[0])} … ${secs(span[1])} (${clock}): the whole job`;
    s.append(axis);
    s.append(svg('rect', {class: 'gantt-window', y: 0, height: lanes.length * OH + 2}));
    const brush = svg('rect', {class: 'gantt-brush', y: 0, height: lanes.length * OH + 2, width: 0});
    s.append(brush);
    // Drag to pick a window; a click centres the current window's width there.
    const at = (ev) => {
      const r = s.getBoundingClientRect();
      return Math.max(GLW, Math.min(GW - 4, ((ev.clientX - r.left) / r.width) * GW));
    };
    let down = null;
    s.addEventListener('pointerdown', (ev) => { down = at(ev); s.setPointerCapture(ev.pointerId); });
    s.addEventListener('pointermove', (ev) => {
      if (down == null) return;
      const x = at(ev);
      brush.setAttribute('x', Math.min(down, x).toFixed(1));
      brush.setAttribute('width', Math.abs(x - down).toFixed(1));
    });
    s.addEventListener('pointerup', (ev) => {
      if (down == null) return;
      const x = at(ev), a = Math.min(down, x), b = Math.max(down, x);
      down = null;
      brush.setAttribute('width', 0);
      if (b - a >= 3) setWindow([ot(a), ot(b)]);
      else { const [c0, c1] = current(), h = (c1 - c0) / 2, c = ot(x); setWindow([c - h, c + h]); }
    });
    body('gantt-overview').replaceChildren(s);
    const g = $('#gantt');
    g.dataset.lanes = String(lanes.length);
    g.dataset.jobFrom = String(span[0]);
    g.dataset.jobTo = String(span[1]);
    note('gantt', `${int(o.lanes_total)} functions and methods${num(o.lanes_merged) > 0 ? ` (the ${int(o.lanes_merged)} least busy summed in one lane)` : ''}; each lane scaled to its own peak`);
    drawWindow();
  }
  function drawWindow() {
    const r = $('#gantt .gantt-window');
    if (!r || !span) return;
    const [a, b] = current();
    r.setAttribute('x', ox(a).toFixed(1));
    r.setAttribute('width', Math.max(1, ox(b) - ox(a)).toFixed(1));
    const g = $('#gantt');
    g.dataset.from = win ? String(win[0]) : '';
    g.dataset.to = win ? String(win[1]) : '';
    $('#gantt-window-label').textContent = win ? `Window ${secs(a)} … ${secs(b)}` : 'Window: the whole job';
  }

  async function detail() {
    const extra = Object.assign(limit ? {limit} : {}, win ? {from: win[0].toFixed(6), to: win[1].toFixed(6)} : {});
    const events = await RS.json(`/api/flow/timeline.json?${q(extra)}`);
    const list = Array.isArray(events) ? events : (events.traceEvents || []);
    // The window the server answered (the JSON-object form says how much it left out).
    const cut = Array.isArray(events) ? {} : (events.otherData || {});
    const names = new Map();
    for (const e of list) if (e.ph === 'M' && e.name === 'thread_name') names.set(`${e.pid}/${e.tid}`, e.args && e.args.name);
    const bars = list.filter((e) => e.ph === 'X' && e.cat !== 'blocked');
    // Waits in ray.get, drawn over their calls' bars: the call was not executing then.
    const waits = new Map();
    for (const e of list) if (e.ph === 'X' && e.cat === 'blocked') (waits.get(`${e.pid}/${e.tid}`) || waits.set(`${e.pid}/${e.tid}`, []).get(`${e.pid}/${e.tid}`)).push(e);
    const rows = new Map();
    for (const b of bars) {
      const k = `${b.pid}/${b.tid}`;
      if (!rows.has(k)) rows.set(k, {key: k, busy: 0, bars: []});
      const r = rows.get(k);
      r.busy += num(b.dur);
      r.bars.push(b);
    }
    for (const [k, ws] of waits) if (rows.has(k)) rows.get(k).busy -= ws.reduce((a, w) => a + num(w.dur), 0);
    const shown = [...rows.values()].sort((a, b) => b.busy - a.busy).slice(0, MAX_ROWS);
    // The x axis is the window asked for (the answer's from/to), not the bars' extent.
    // The x axis is the window picked, or the job's extent the overview drew (not the
    // instant "now", which runs on past a finished job and squeezes its bars together).
    const range = win || span;
    const t0 = range ? range[0] * 1e6 : num(cut.from_s) * 1e6 || Math.min(...bars.map((b) => num(b.ts)), Infinity);
    const t1 = range ? range[1] * 1e6 : num(cut.to_s) * 1e6 || Math.max(...bars.map((b) => num(b.ts) + num(b.dur)), 0);
    const width = Math.max(1, t1 - (isFinite(t0) ? t0 : 0));
    const x = (t) => GLW + ((Math.max(t, t0) - t0) / width) * (GW - GLW - 4);
    const w = (b) => Math.max(0.6, x(Math.min(num(b.ts) + num(b.dur), t1)) - x(num(b.ts)));
    const RH = 18;
    const s = svg('svg', {viewBox: `0 0 ${GW} ${shown.length * RH + 24}`, class: 'flow-gantt', role: 'img', 'aria-label': 'Gantt chart'});
    let drawn = 0;
    shown.forEach((r, i) => {
      const label = svg('text', {x: 4, y: i * RH + 13, class: 'gantt-label'});
      label.textContent = names.get(r.key) || r.key;
      s.append(label);
      for (const b of r.bars) {
        if (drawn >= MAX_BARS) break;
        // Ray lost this call's end when its job ended: the bar runs to its caller's end.
        const lost = Boolean(b.args && b.args.end_lost);
        const rect = svg('rect', {class: lost ? 'gantt-bar gantt-end-lost' : 'gantt-bar', x: x(num(b.ts)).toFixed(2), y: i * RH + 3, width: w(b).toFixed(2), height: RH - 6});
        const t = svg('title');
        t.textContent = `${b.name}: ${secs(num(b.dur) / 1e6)} from ${secs(num(b.ts) / 1e6)}${lost ? " (its end was lost when the job ended: drawn to its caller's end, the latest it can have ended)" : ''}`;
        rect.append(t);
        s.append(rect);
        drawn++;
      }
      for (const b of waits.get(r.key) || []) {
        const rect = svg('rect', {class: 'gantt-blocked', x: x(num(b.ts)).toFixed(2), y: i * RH + 3, width: w(b).toFixed(2), height: RH - 6});
        const t = svg('title');
        t.textContent = `blocked in ray.get: ${secs(num(b.dur) / 1e6)} from ${secs(num(b.ts) / 1e6)}`;
        rect.append(t);
        s.append(rect);
      }
    });
    const axis = svg('text', {x: GLW, y: shown.length * RH + 18, class: 'gantt-label'});
    axis.textContent = bars.length ? `${secs(t0 / 1e6)} … ${secs(t1 / 1e6)} (${clock})` : 'No execution in this window.';
    $('#gantt').dataset.axisFrom = String(t0 / 1e6);
    $('#gantt').dataset.axisTo = String(t1 / 1e6);
    s.append(axis);
    body('gantt-detail').replaceChildren(el('div', {class: 'flow-scroll'}, s),
      el('p', {class: 'muted gantt-cut', text: (cut.truncated
        ? `showing ${int(cut.returned)} of ${int(cut.total)} executions in the window (the earliest started; the rest from ${secs(num(cut.next_from_s))}): narrow the window above to see the others. `
        : '') + `${int(bars.length)} executions on ${int(rows.size)} actors and workers; the ${shown.length} busiest shown${drawn < bars.length ? `, first ${int(drawn)} bars drawn` : ''}.`}));
    const g = $('#gantt');
    g.dataset.rows = String(shown.length);
    g.dataset.bars = String(drawn);
    g.dataset.truncated = String(Boolean(cut.truncated));
    g.dataset.total = String(cut.total != null ? cut.total : bars.length);
    g.dataset.detailFrom = String(num(cut.from_s));
    g.dataset.detailTo = String(num(cut.to_s));
    done('gantt');
  }
  async function gantt() {
    const head = $('#gantt .section-head');
    if (head && !head.contains(winButtons)) {
      head.insertBefore(el('span', {id: 'gantt-window-label', class: 'muted'}), head.querySelector('.flow-download'));
      head.insertBefore(winButtons, head.querySelector('.flow-download'));
    }
    await overview();
    await detail();
  }

  // ------------------------------------------------------------- flame graph
  /** The server's SVG in an <iframe>, so that inferno's own script runs in it: click to
   *  zoom, Ctrl-F or "Search" to highlight, a frame's time on hover. */
  let flameMode = params.get('flame') === 'wall' ? 'wall' : 'execution';
  const flameSel = el('select', {'aria-label': 'Flame graph time', onchange: () => { flameMode = flameSel.value; flame().catch(RS.fail); }},
    [['execution', 'Execution'], ['wall', 'Wall time']].map(([v, t]) => el('option', {value: v, text: t, selected: v === flameMode})));
  async function flame() {
    const url = RS.withCluster(`/api/flow/flamegraph.svg?${q({mode: flameMode})}`);
    const frame = el('iframe', {class: 'flow-flame', title: `Flame graph of the job: ${flameMode} time per call path`});
    frame.addEventListener('load', () => done('flame'));
    frame.src = url;
    body('flame').replaceChildren(frame);
    const head = $('#flame .section-head');
    if (head && !head.contains(flameSel)) head.insertBefore(flameSel, head.querySelector('.flow-download'));
  }

  // ------------------------------------------------------------- stack
  async function stack() {
    const st = await RS.json(`/api/flow/stack?${q()}`);
    const stacks = (st.stacks || []).slice(0, 50);
    body('stack').replaceChildren(...stacks.map((s) => el('pre', {class: 'flow-stack', 'data-span': s.span},
      s.frames.map((f, i) => `${'  '.repeat(i)}${f.name}  [${f.state}]${f.actor_id ? ` actor ${actor(f.actor_id)}` : ''}${num(f.pid) ? ` pid ${f.pid}` : ''} node ${short(f.node_id, 8)}${num(f.queued_calls) ? ` · ${int(f.queued_calls)} calls queued` : ''}`).join('\n'))),
    stacks.length ? '' : el('p', {class: 'muted', text: 'No call in flight.'}));
    note('stack', `${int(st.in_flight)} calls in flight at ${secs(num(st.at_s))}${num(st.in_flight) > stacks.length ? `; first ${stacks.length} shown` : ''}`);
    done('stack');
  }

  // ------------------------------------------------------------- refresh
  function links() {
    for (const a of document.querySelectorAll('.flow-download')) {
      a.href = `/api/flow/${a.dataset.view}?${q(a.dataset.view === 'timeline.json' && limit ? {limit} : {})}`;
    }
  }
  async function refresh() {
    if (!job && !(await jobs())) return;
    links();
    await Promise.all([findings(), impact(), bottlenecks(), graph(), physical(), gantt(), stack()].map((p) => p.catch(RS.fail)));
  }
  function syncUrl() {
    const w = win ? {from: win[0].toFixed(6), to: win[1].toFixed(6)} : {};
    const u = new URLSearchParams(Object.assign({job}, level ? {level} : {}, at ? {at} : {}, limit ? {limit} : {}, w));
    history.replaceState(null, '', `/flow?${u}`);
  }
  function go() {
    syncUrl();
    refresh();
    flame().catch(RS.fail);
  }
  jobs().then(() => { go(); }).catch(RS.fail);
  // Live: refresh "now" views; an instant in the past does not change.
  setInterval(() => {
    if (document.hidden || at) return;
    jobs().then(refresh).catch(RS.fail);
  }, 3000);
  setInterval(() => { if (!document.hidden && !at) flame().catch(RS.fail); }, 15000);
})();
