// Metrics: links into the Grafana dashboards the bundle provisions (by uid, at the
// configured Grafana address) and to rayscope's own Prometheus endpoints.
'use strict';
(() => {
  const {el, $} = RS;
  const DASHBOARDS = [
    ['rayscope-cluster', 'Cluster overview', 'Nodes, resources, tasks, actors and jobs at a glance.'],
    ['rayscope-nodes', 'Nodes', 'Per-node CPU, memory, disk, network and GPUs.'],
    ['rayscope-jobs', 'Jobs', 'Jobs by status and their tasks.'],
    ['rayscope-actors', 'Actors', 'Actors by state and class.'],
    ['rayscope-objects', 'Object store', 'Plasma memory, spilling and objects.'],
    ['rayscope-scheduler', 'Scheduler', 'Pending, infeasible and spilled-back work.'],
    ['rayscope-alerts', 'Alerts', 'The alerting rules and what fires.'],
    ['rayscope-flow', 'Flow', 'Call rates and latencies per caller → callee edge (Flow Insight).'],
  ];
  const base = (document.body.dataset.grafanaUrl || '').replace(/\/+$/, '');
  $('#grafana-url').textContent = base || '(not set)';
  $('#dashboards').replaceChildren(...DASHBOARDS.map(([uid, title, what]) =>
    el('a', {class: 'tile', href: `${base}/d/${uid}`, 'data-uid': uid, rel: 'noreferrer'}, el('strong', {text: title}), what,
      el('div', {class: 'muted mono', text: `/d/${uid}`}))));
})();
