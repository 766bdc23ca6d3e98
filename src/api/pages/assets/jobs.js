// Jobs: Ray's job table from the State API a page at a time; a job opens to its task
// counts by state (the State API's task summary for that job) and its driver log from
// the Jobs API, polled while the job is still pending or running.
'use strict';
(() => {
  const {el, $, num, int, time, duration, badge, short} = RS;
  const LIVE = new Set(['PENDING', 'RUNNING']);
  let follow = null; // stops the log poll of the open job
  let status = '';

  const started = (j) => num(j.start_time);
  const ended = (j) => num(j.end_time);
  const columns = [
    {title: 'Job', cell: (j) => el('span', {class: 'mono', text: j.job_id})},
    {title: 'Submission', cell: (j) => el('span', {class: 'mono', text: short(j.submission_id)})},
    {title: 'Status', cell: (j) => badge(j.status)},
    {title: 'Entrypoint', cell: (j) => el('code', {text: j.entrypoint || ''})},
    {title: 'Started', cell: (j) => time(started(j))},
    {title: 'Ended', cell: (j) => (ended(j) ? time(ended(j)) : '')},
    {title: 'Duration', cell: (j) => (started(j) ? duration(((ended(j) || Date.now()) - started(j)) / 1000) : ''), num: true},
  ];

  async function open(j) {
    if (follow) follow();
    const box = $('#job-detail');
    box.hidden = false;
    const counts = el('div', {id: 'job-tasks'}, el('p', {class: 'muted', text: 'Loading task counts…'}));
    const log = el('pre', {class: 'log', id: 'job-log', text: ''});
    const live = el('span', {class: 'muted'});
    box.replaceChildren(
      el('div', {class: 'section-head'}, el('h2', {text: `Job ${j.job_id}`}), live),
      el('dl', {class: 'kv'},
        el('dt', {text: 'Status'}), el('dd', null, badge(j.status), j.message ? ` ${j.message}` : ''),
        el('dt', {text: 'Entrypoint'}), el('dd', null, el('code', {text: j.entrypoint || ''})),
        el('dt', {text: 'Submission id'}), el('dd', {class: 'mono', text: j.submission_id || '—'}),
        el('dt', {text: 'Type'}), el('dd', {text: j.type || '—'})),
      el('h2', {text: 'Tasks by state'}), counts,
      el('h2', {text: 'Driver log'}), log);
    box.dataset.jobId = j.job_id;
    const id = encodeURIComponent(j.submission_id || j.job_id);
    let running = LIVE.has(j.status);
    async function refresh() {
      const [sum, logs, now] = await Promise.all([
        RS.summary('tasks', {job_id: j.job_id}),
        RS.json(`/api/jobs/${id}/logs`),
        RS.json(`/api/jobs/${id}`).catch(() => null),
      ]);
      const by = {};
      for (const g of Object.values(sum.summary || {})) {
        for (const [s, n] of Object.entries(g.state_counts || {})) by[s] = (by[s] || 0) + num(n);
      }
      counts.replaceChildren(Object.keys(by).length
        ? el('table', {class: 'grid'}, el('tbody', null, Object.entries(by).map(([s, n]) =>
          el('tr', {'data-state': s, 'data-count': n}, el('td', null, badge(s)), el('td', {class: 'num', text: int(n)})))))
        : el('p', {class: 'muted', text: 'No task of this job is kept.'}));
      const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
      log.textContent = (logs && logs.logs) || '(the driver has logged nothing yet)';
      if (atBottom) log.scrollTop = log.scrollHeight;
      if (now && now.status) running = LIVE.has(now.status);
      live.textContent = running ? 'following the log while the job runs' : '';
      box.dataset.loaded = String(num(Number(box.dataset.loaded)) + 1);
    }
    let stopped = false;
    follow = () => { stopped = true; };
    const tick = async () => {
      try { await refresh(); } catch (e) { RS.fail(e); }
      if (!stopped && running) setTimeout(tick, 2000);
    };
    tick();
  }

  const statusSel = el('select', {'aria-label': 'Status', onchange: () => { status = statusSel.value; p.reload(true); }},
    ['', 'PENDING', 'RUNNING', 'STOPPED', 'SUCCEEDED', 'FAILED'].map((s) => el('option', {value: s, text: s || 'All'})));
  const p = RS.pager($('#jobs'), {
    pageSize: 25,
    columns,
    rowAttrs: (j) => ({'data-id': j.job_id}),
    toolbar: [el('label', null, 'Status', statusSel)],
    empty: 'No job matches.',
    load: (offset, limit) => RS.list('jobs', Object.assign({limit, offset, detail: true}, status ? {status} : {})),
    onRow: (j, tr) => {
      for (const s of tr.parentNode.querySelectorAll('tr.selected')) s.classList.remove('selected');
      tr.classList.add('selected');
      open(j);
    },
  });
  p.reload(true);
  setInterval(() => { if (!document.hidden) p.reload(false); }, 5000);
})();
