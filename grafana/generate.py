#!/usr/bin/env python3
"""Writes grafana/dashboards/*.json, the bundle's dashboards, from the panel lists below.

The JSON files are what Grafana loads (provisioned, or through "Import dashboard") and
what the tests check; this script is their source, the way a monitoring mixin's
jsonnet is. Edit the panels here, run `python3 grafana/generate.py`, commit both.

Conventions every dashboard follows (tests/bundle_structure.rs checks them):
* a `datasource` variable, used by every panel and target as `${datasource}`, so the
  same file works provisioned and imported (raw JSON, no `__inputs`);
* session, node type and node variables over Ray's own labels: nodes are `ip` on the
  reporter's hardware series and `NodeAddress` on raylet series, never `instance`, so
  the dashboards work with or without `honor_labels` and on a real Ray cluster;
* every panel has a unit and a description (what it shows, when to worry);
  rates use `$__rate_interval`;
* unique panel ids and a grid with no overlaps.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# Label filters, by the kind of series they apply to.
SESSION = 'SessionName=~"$SessionName"'
HW = 'SessionName=~"$SessionName",RayNodeType=~"$RayNodeType",ip=~"$node"'  # reporter
RL = 'SessionName=~"$SessionName",NodeAddress=~"$node"'  # raylet / GCS / core worker
# rayscope's own series carry no SessionName; rayscope_session_info joins them to it.
RAYSCOPE_SESSION = 'on (job, instance) group_left () rayscope_session_info{session_name=~"$SessionName"}'
# Alerts without a session (the target-down and Watchdog alerts) are shown too.
ALERT_SESSION = 'SessionName=~"${SessionName}|"'

DS = {"type": "prometheus", "uid": "${datasource}"}


def variables():
    def query(name, label, q, all_value=".+", multi=False):
        return {
            "name": name,
            "label": label,
            "type": "query",
            "datasource": DS,
            "query": q,
            "definition": q,
            "refresh": 2,
            "sort": 1,
            "includeAll": True,
            "allValue": all_value,
            "multi": multi,
            "current": {"selected": True, "text": "All", "value": "$__all"},
            "hide": 0,
        }

    return [
        {
            "name": "datasource",
            "label": "Data source",
            "type": "datasource",
            "query": "prometheus",
            "current": {},
            "hide": 0,
            "refresh": 1,
            "regex": "",
        },
        query("SessionName", "Session", "label_values(ray_node_network_receive_speed, SessionName)"),
        query(
            "RayNodeType",
            "Node type",
            'label_values(ray_node_cpu_count{SessionName=~"$SessionName"}, RayNodeType)',
            multi=True,
        ),
        query(
            "node",
            "Node",
            'label_values(ray_node_cpu_count{SessionName=~"$SessionName",RayNodeType=~"$RayNodeType"}, ip)',
            multi=True,
        ),
        {
            "name": "rayscope",
            "label": "rayscope URL",
            "type": "textbox",
            "query": "http://localhost:8080",
            "current": {"text": "http://localhost:8080", "value": "http://localhost:8080"},
            "description": "Where your browser reaches rayscope, for the links to its State API and landing page.",
            "hide": 0,
        },
    ]


def links():
    def link(title, path, tooltip):
        return {"title": title, "type": "link", "url": "${rayscope}" + path, "tooltip": tooltip, "targetBlank": True, "icon": "external link"}

    return [
        {"title": "Ray dashboards", "type": "dashboards", "tags": ["rayscope"], "asDropdown": True, "includeVars": True, "keepTime": True},
        link("rayscope", "/", "rayscope's landing page: every endpoint"),
        link("Nodes (State API)", "/api/v0/nodes?limit=100", "Ray's State API: ray list nodes"),
        link("Tasks (State API)", "/api/v0/tasks/summarize", "Ray's State API: ray summary tasks"),
        link("Actors (State API)", "/api/v0/actors?limit=100", "Ray's State API: ray list actors"),
        link("Alerts received", "/api/alerts", "Alertmanager notifications rayscope received"),
        link("Flow Insight", "/flow", "rayscope's Flow Insight: call graph, Gantt, flame graph and bottlenecks of a job"),
    ]


class Layout:
    """Places panels left to right, wrapping at Grafana's 24 columns."""

    def __init__(self):
        self.x, self.y, self.row_h, self.next_id = 0, 0, 0, 1

    def place(self, w, h):
        if self.x + w > 24:
            self.x, self.y, self.row_h = 0, self.y + self.row_h, 0
        pos = {"x": self.x, "y": self.y, "w": w, "h": h}
        self.x += w
        self.row_h = max(self.row_h, h)
        return pos

    def row(self, title):
        if self.x:
            self.x, self.y, self.row_h = 0, self.y + self.row_h, 0
        pid = self.next_id
        self.next_id += 1
        panel = {"id": pid, "type": "row", "title": title, "collapsed": False, "gridPos": {"x": 0, "y": self.y, "w": 24, "h": 1}, "panels": []}
        self.y += 1
        return panel


def targets(exprs):
    out = []
    for i, (expr, legend) in enumerate(exprs):
        out.append({"datasource": DS, "expr": expr, "legendFormat": legend, "refId": chr(ord("A") + i), "range": True, "instant": False})
    return out


def timeseries(lay, title, description, unit, exprs, w=12, h=8, stack=False, minimum=None):
    defaults = {"unit": unit, "custom": {"fillOpacity": 15 if stack else 5, "stacking": {"mode": "normal" if stack else "none"}}}
    if minimum is not None:
        defaults["min"] = minimum
    return {
        "type": "timeseries",
        "title": title,
        "description": description,
        "datasource": DS,
        "gridPos": lay.place(w, h),
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": {"legend": {"displayMode": "table", "placement": "right", "calcs": ["lastNotNull", "max"]}, "tooltip": {"mode": "multi", "sort": "desc"}},
        "targets": targets(exprs),
    }


def stat(lay, title, description, unit, expr, w=4, h=4, thresholds=None):
    steps = [{"color": "green", "value": None}] + [{"color": c, "value": v} for v, c in (thresholds or [])]
    return {
        "type": "stat",
        "title": title,
        "description": description,
        "datasource": DS,
        "gridPos": lay.place(w, h),
        "fieldConfig": {"defaults": {"unit": unit, "thresholds": {"mode": "absolute", "steps": steps}}, "overrides": []},
        "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False}, "colorMode": "value", "graphMode": "area"},
        "targets": targets([(expr, "")]),
    }


def table(lay, title, description, unit, expr, w=24, h=8):
    t = targets([(expr, "")])
    t[0].update({"instant": True, "range": False, "format": "table"})
    return {
        "type": "table",
        "title": title,
        "description": description,
        "datasource": DS,
        "gridPos": lay.place(w, h),
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"showHeader": True},
        "transformations": [{"id": "organize", "options": {"excludeByName": {"Time": True, "__name__": True, "Value": True}}}],
        "targets": t,
    }


def dashboard(uid, title, description, build):
    lay = Layout()
    panels = []
    for item in build(lay):
        if item["type"] != "row":
            item["id"] = lay.next_id
            lay.next_id += 1
        panels.append(item)
    return {
        "uid": uid,
        "title": title,
        "description": description,
        "tags": ["rayscope", "ray"],
        "timezone": "browser",
        "editable": True,
        "graphTooltip": 1,
        "schemaVersion": 39,
        "version": 1,
        "refresh": "10s",
        "time": {"from": "now-30m", "to": "now"},
        "links": links(),
        "annotations": {"list": [{"builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"}, "enable": True, "hide": True, "iconColor": "rgba(0, 211, 255, 1)", "name": "Annotations & Alerts", "type": "dashboard"}]},
        "templating": {"list": variables()},
        "panels": panels,
    }


RUNNING = 'State=~"RUNNING|RUNNING_IN_RAY_GET|RUNNING_IN_RAY_WAIT"'


def cluster(lay):
    return [
        lay.row("At a glance"),
        stat(lay, "Alive nodes", "Nodes whose dashboard agent reports hardware readings. A drop you did not plan is a node loss (RayNodeDown).", "none", f"count(ray_node_cpu_count{{{HW}}})"),
        stat(lay, "Logical CPUs in use", "Share of the cluster's logical CPUs reserved by tasks and actors. Near 100% with pending tasks means the cluster is too small or the autoscaler is at its limit.", "percentunit",
             f'sum(ray_resources{{Name="CPU",State="USED",{RL}}}) / sum(ray_resources{{Name="CPU",{RL}}})', thresholds=[(0.9, "orange")]),
        stat(lay, "Running tasks", "Tasks executing now (including those blocked in ray.get / ray.wait), summed over every reporting process.", "none", f"sum(ray_tasks{{{RUNNING},{SESSION}}})"),
        stat(lay, "Alive actors", "Actors the GCS holds as ALIVE.", "none", f'sum(ray_actors{{Source="gcs",State="ALIVE",{SESSION}}})'),
        stat(lay, "Running jobs", "Jobs the GCS counts as running.", "none", f"sum(ray_running_jobs{{{SESSION}}})"),
        stat(lay, "Firing alerts", "Alerts firing now in Prometheus, Watchdog excepted. Details on the Alerts dashboard.", "none",
             f'count(ALERTS{{alertstate="firing",alertname!="Watchdog",{ALERT_SESSION}}}) or vector(0)', thresholds=[(1, "red")]),
        lay.row("Work"),
        timeseries(lay, "Tasks by state", "Every task by state (owner, executor and raylet counts summed, as Ray's own dashboard does). A PENDING_* band that keeps growing means demand outruns the cluster.", "none",
                   [(f"session_state:ray_tasks:sum{{{SESSION}}}", "{{State}}")]),
        timeseries(lay, "Logical CPUs", "Logical CPUs used and available, summed over nodes. Available near zero while tasks wait: scale up.", "none",
                   [(f'sum by (State) (ray_resources{{Name="CPU",{RL}}})', "{{State}}")], stack=True),
        timeseries(lay, "Node CPU utilization by node type", "Average hardware CPU utilization (0-100%) per Ray node type. Compare with logical CPUs: low utilization with every CPU reserved means tasks over-ask num_cpus.", "percent",
                   [(f'session_type:ray_node_cpu_utilization:avg{{{SESSION},RayNodeType=~"$RayNodeType"}}', "{{RayNodeType}}")], minimum=0),
        timeseries(lay, "Object store", "Plasma bytes used and capacity, summed over nodes. Used near capacity means spilling (see Object store and memory).", "bytes",
                   [(f"sum(ray_object_store_used_memory{{{RL}}})", "used"),
                    (f"sum(ray_object_store_used_memory{{{RL}}}) + sum(ray_object_store_available_memory{{{RL}}})", "capacity")]),
        lay.row("rayscope"),
        timeseries(lay, "Simulation lag", "rayscope only: how far virtual time trails the wall clock × speed. Above a second, rates and alert timings stretch; give rayscope a core.", "s",
                   [(f"rayscope_sim_lag_seconds * {RAYSCOPE_SESSION}", "lag")], w=24, h=6),
    ]


def nodes(lay):
    return [
        lay.row("CPU and memory"),
        timeseries(lay, "CPU utilization", "Hardware CPU utilization per node (0-100% of all its cores). Above 80% for a minute raises RayNodeHighCpu.", "percent",
                   [(f"ray_node_cpu_utilization{{{HW}}}", "{{ip}}")], minimum=0),
        timeseries(lay, "CPU cores", "Cores per node, as the node's agent counts them.", "none",
                   [(f"ray_node_cpu_count{{{HW}}}", "{{ip}}")]),
        timeseries(lay, "Memory used", "Share of each node's memory in use. Above 85% for a minute is critical (RayNodeHighMemory); Ray's memory monitor kills workers at 95%.", "percentunit",
                   [(f"session_ip:ray_node_mem:ratio{{{HW}}}", "{{ip}}")], minimum=0),
        timeseries(lay, "Memory used (bytes)", "Bytes of memory in use per node, next to its total.", "bytes",
                   [(f"ray_node_mem_used{{{HW}}}", "{{ip}} used"), (f"ray_node_mem_total{{{HW}}}", "{{ip}} total")]),
        lay.row("GPUs"),
        timeseries(lay, "GPU utilization", "Utilization (0-100%) per GPU. Idle GPUs on a busy cluster point at placement-group or resource requests that do not ask for them.", "percent",
                   [(f"ray_node_gpus_utilization{{{HW}}}", "{{ip}} GPU {{GpuIndex}}")], minimum=0),
        timeseries(lay, "GPU memory used", "Bytes of GPU memory in use per GPU (Ray reports MiB). Above 90% for 5 m raises RayGpuMemoryHigh.", "bytes",
                   [(f"ray_node_gram_used{{{HW}}} * 1024 * 1024", "{{ip}} GPU {{GpuIndex}}")]),
        lay.row("Disk and network"),
        timeseries(lay, "Disk used", "Root filesystem use per node; spilled objects land here.", "percent",
                   [(f"ray_node_disk_utilization_percentage{{{HW}}}", "{{ip}}")], minimum=0),
        timeseries(lay, "Disk throughput", "Bytes read and written per second per node. Spilling and restoring show up here.", "Bps",
                   [(f"ray_node_disk_io_read_speed{{{HW}}}", "{{ip}} read"), (f"ray_node_disk_io_write_speed{{{HW}}}", "{{ip}} write")]),
        timeseries(lay, "Network", "Bytes received and sent per second per node: object transfers between nodes.", "Bps",
                   [(f"ray_node_network_receive_speed{{{HW}}}", "{{ip}} received"), (f"ray_node_network_send_speed{{{HW}}}", "{{ip}} sent")]),
        lay.row("Ray processes"),
        timeseries(lay, "Process CPU by component", "CPU per Ray process kind on each node (100% = one core): raylet, GCS, agents, workers by task name.", "percent",
                   [(f'sum by (ip, Component) (ray_component_cpu_percentage{{{SESSION},ip=~"$node"}})', "{{ip}} {{Component}}")]),
        timeseries(lay, "Process memory by component", "Resident memory per Ray process kind on each node. A worker kind that only grows is a leak the memory monitor will end.", "bytes",
                   [(f'sum by (ip, Component) (ray_component_rss_bytes{{{SESSION},ip=~"$node"}})', "{{ip}} {{Component}}")]),
    ]


def jobs(lay):
    return [
        lay.row("Jobs"),
        timeseries(lay, "Running jobs", "Jobs the GCS counts as running.", "none", [(f"sum(ray_running_jobs{{{SESSION}}})", "running")]),
        timeseries(lay, "Jobs finished per minute", "Jobs that ended (any outcome), per minute.", "none",
                   [(f"sum(rate(ray_finished_jobs_total{{{SESSION}}}[$__rate_interval])) * 60", "finished/min")]),
        timeseries(lay, "Job durations", "How long each finished job ran. A job much longer than its peers waited on resources or retries.", "s",
                   [(f"ray_job_duration_s{{{SESSION}}}", "{{JobId}}")], w=24),
        lay.row("Tasks"),
        timeseries(lay, "Tasks by state", "Every task by state, summed over reporting processes. Growing PENDING_* states mean demand outruns the cluster.", "none",
                   [(f"session_state:ray_tasks:sum{{{SESSION}}}", "{{State}}")]),
        timeseries(lay, "Running tasks by name", "Tasks executing now, per function or actor method.", "none",
                   [(f"sum by (Name) (ray_tasks{{{RUNNING},{SESSION}}})", "{{Name}}")], stack=True),
        timeseries(lay, "Running tasks by node", "Tasks executing on each node (executor side). An idle node beside busy ones points at placement constraints.", "none",
                   [(f'sum by (NodeAddress) (ray_tasks{{Source="executor",{RUNNING},{RL}}})', "{{NodeAddress}}")], stack=True),
        timeseries(lay, "Pending tasks by state", "Tasks not yet running, by why they wait: for arguments, for a node, for object store memory.", "none",
                   [(f'sum by (State) (ray_tasks{{State=~"PENDING_.*",{SESSION}}})', "{{State}}")], stack=True),
        timeseries(lay, "Task retries", "Tasks on a retry attempt (IsRetry=1), per name: after a node loss, an OOM kill or a crash.", "none",
                   [(f'sum by (Name) (ray_tasks{{IsRetry="1",{SESSION}}})', "{{Name}}")]),
        timeseries(lay, "Failed tasks", "Tasks that ended FAILED (retries exhausted or not retriable), per name.", "none",
                   [(f'sum by (Name) (ray_tasks{{State="FAILED",{SESSION}}})', "{{Name}}")]),
        timeseries(lay, "Task failure share (5 m)", "Share of task attempts ending in the last 5 m that failed. Above 10% raises RayTaskFailureRateHigh.", "percentunit",
                   [(f"session:ray_tasks_failed:ratio_delta5m{{{SESSION}}}", "failed share")], minimum=0),
        timeseries(lay, "Tasks finished per second", "Completion throughput (growth of the FINISHED count). A drop to zero with pending work is a stuck cluster (RayTasksPendingTooLong).", "none",
                   [(f'sum(deriv(session_state:ray_tasks:sum{{State="FINISHED",{SESSION}}}[$__rate_interval]))', "finished/s")]),
    ]


def actors(lay):
    return [
        lay.row("Actors"),
        timeseries(lay, "Actors by state", "Actors by lifecycle state, as the GCS holds them. RESTARTING that keeps coming back is a restart loop.", "none",
                   [(f'sum by (State) (ray_actors{{Source="gcs",{SESSION}}})', "{{State}}")]),
        timeseries(lay, "Alive actors by class", "ALIVE actors per class.", "none",
                   [(f'sum by (Name) (ray_actors{{Source="gcs",State="ALIVE",{SESSION}}})', "{{Name}}")], stack=True),
        timeseries(lay, "Busy and idle actors by node", "Actors running a task or idle, per node, from the actors' own workers. Many idle actors hold resources others wait for.", "none",
                   [(f'sum by (NodeAddress, State) (ray_actors{{Source="executor",{RL}}})', "{{NodeAddress}} {{State}}")]),
        timeseries(lay, "Restarting and dead actors by class", "Actors restarting or dead, per class. Dead actors of a class that should live mean max_restarts ran out.", "none",
                   [(f'sum by (Name, State) (ray_actors{{Source="gcs",State=~"RESTARTING|DEAD",{SESSION}}})', "{{Name}} {{State}}")]),
        timeseries(lay, "Actor placement p95", "95th percentile time from an actor's creation request to its resources being reserved (5 m window).", "ms",
                   [(f'session_workload:ray_scheduler_placement_time_ms:p95_rate5m{{WorkloadType="Actor",{SESSION}}}', "p95")]),
        timeseries(lay, "Actor calls by state", "Actor method calls by state: queued behind an actor's concurrency limit, running, finished.", "none",
                   [(f'sum by (State) (ray_tasks{{Name=~".+\\\\..+",{SESSION}}})', "{{State}}")]),
    ]


def objects(lay):
    return [
        lay.row("Object store"),
        timeseries(lay, "Object store fill", "Share of each node's plasma store in use. Ray spills above 80% (RayObjectStoreAlmostFull).", "percentunit",
                   [(f"session_node:ray_object_store:ratio{{{RL}}}", "{{NodeAddress}}")], minimum=0),
        timeseries(lay, "Object store used", "Plasma bytes used per node.", "bytes",
                   [(f"ray_object_store_used_memory{{{RL}}}", "{{NodeAddress}}")]),
        timeseries(lay, "Object memory by location", "Object bytes by where they live: shared memory, disk-backed fallback, spilled, or small objects in worker heaps.", "bytes",
                   [(f"sum by (Location) (ray_object_store_memory{{{RL}}})", "{{Location}}")], stack=True),
        timeseries(lay, "Objects in store", "Objects held in each node's plasma store.", "none",
                   [(f"ray_object_store_num_local_objects{{{RL}}}", "{{NodeAddress}}")]),
        lay.row("Spilling"),
        timeseries(lay, "Spilled and restored bytes", "Bytes by spill state per node. Spilled bytes that keep growing: the store is too small for the working set (RayObjectSpilling).", "bytes",
                   [(f"sum by (State) (ray_spill_manager_objects_bytes{{{RL}}})", "{{State}}")]),
        timeseries(lay, "Spill and restore requests per second", "Spill and restore requests per second (growth of the raylet's running counts).", "reqps",
                   [(f"sum by (Type) (deriv(ray_spill_manager_request_total{{{RL}}}[$__rate_interval]))", "{{Type}}")]),
        timeseries(lay, "Spill throughput", "Spill and restore throughput per node, MB/s, once a node has spilled.", "MBs",
                   [(f"ray_spill_manager_throughput_mb{{{RL}}}", "{{NodeAddress}} {{Type}}")]),
        timeseries(lay, "Object transfers", "Bytes per second pushed to and received from other nodes.", "Bps",
                   [(f"sum by (Type) (deriv(ray_object_manager_bytes{{{RL}}}[$__rate_interval]))", "{{Type}}")]),
        lay.row("Memory"),
        timeseries(lay, "Node memory used", "Share of each node's memory in use (heaps + object store + everything else). Ray's memory monitor kills workers at 95%.", "percentunit",
                   [(f"session_ip:ray_node_mem:ratio{{{HW}}}", "{{ip}}")], minimum=0),
        timeseries(lay, "OOM kills", "Workers Ray's memory monitor killed, per task or actor name, per interval. Any is worth a look (RayWorkersOomKilled).", "none",
                   [(f"sum by (Name) (increase(ray_memory_manager_worker_eviction_total{{{SESSION}}}[$__rate_interval]))", "{{Name}}")]),
    ]


def scheduler(lay):
    return [
        lay.row("Scheduler"),
        timeseries(lay, "Unschedulable leases by reason", "Leases that cannot be placed now, by reason. Infeasible never clears without a new node type (RayTasksInfeasible).", "none",
                   [(f"sum by (Reason) (ray_scheduler_unscheduleable_tasks{{{RL}}})", "{{Reason}}")]),
        timeseries(lay, "Lease queue by state", "The raylets' lease queues by state.", "none",
                   [(f"sum by (State) (ray_scheduler_tasks{{{RL}}})", "{{State}}")]),
        timeseries(lay, "Placement time p95", "95th percentile time to reserve resources, per workload type (5 m window). Above 1 s for 5 m raises RaySchedulingLatencyHigh.", "ms",
                   [(f"session_workload:ray_scheduler_placement_time_ms:p95_rate5m{{{SESSION}}}", "{{WorkloadType}}")]),
        timeseries(lay, "Placement time p50", "Median time to reserve resources, per workload type.", "ms",
                   [(f"histogram_quantile(0.5, sum by (WorkloadType, le) (rate(ray_scheduler_placement_time_ms_bucket{{{RL}}}[$__rate_interval])))", "{{WorkloadType}}")]),
        timeseries(lay, "Spillbacks per second", "Leases each raylet sent on to another node because it had no room (growth of its running count).", "none",
                   [(f"sum by (NodeAddress) (deriv(ray_internal_num_spilled_tasks{{{RL}}}[$__rate_interval]))", "{{NodeAddress}}")]),
        timeseries(lay, "Worker processes started", "Worker processes each raylet has started. Steep growth means workers die and are replaced.", "none",
                   [(f"ray_internal_num_processes_started{{{RL}}}", "{{NodeAddress}}")]),
        lay.row("Autoscaler"),
        timeseries(lay, "Nodes by type", "Active and launching nodes per node type, as the autoscaler sees them.", "none",
                   [(f"sum by (NodeType) (autoscaler_active_nodes{{{SESSION}}})", "{{NodeType}} active"),
                    (f"sum by (NodeType) (autoscaler_pending_nodes{{{SESSION}}})", "{{NodeType}} pending")]),
        timeseries(lay, "Recently failed launches", "Node launches that failed recently, per type (RayAutoscalerLaunchFailing).", "none",
                   [(f"sum by (NodeType) (autoscaler_recently_failed_nodes{{{SESSION}}})", "{{NodeType}}")]),
        timeseries(lay, "Cluster resources", "Logical resources of the nodes the autoscaler counts, and of launches still pending.", "none",
                   [(f'sum by (resource) (autoscaler_cluster_resources{{resource=~"CPU|GPU",{SESSION}}})', "{{resource}}"),
                    (f'sum by (resource) (autoscaler_pending_resources{{resource=~"CPU|GPU",{SESSION}}})', "{{resource}} pending")]),
        timeseries(lay, "Node failures", "Node failures the GCS counted per interval (RayNodeDown).", "none",
                   [(f"sum(increase(ray_node_failure_total{{{SESSION}}}[$__rate_interval]))", "failures")]),
    ]


def alerts(lay):
    return [
        lay.row("Prometheus"),
        stat(lay, "Critical alerts firing", "Critical alerts firing now.", "none",
             f'count(ALERTS{{alertstate="firing",severity="critical",{ALERT_SESSION}}}) or vector(0)', w=6, thresholds=[(1, "red")]),
        stat(lay, "Warnings firing", "Warning alerts firing now.", "none",
             f'count(ALERTS{{alertstate="firing",severity="warning",{ALERT_SESSION}}}) or vector(0)', w=6, thresholds=[(1, "orange")]),
        stat(lay, "Watchdog", "1 while the always-firing Watchdog alert fires: rule evaluation works. 0 or empty: Prometheus evaluates no rules.", "none",
             'count(ALERTS{alertname="Watchdog",alertstate="firing"}) or vector(0)', w=6, thresholds=[]),
        stat(lay, "Notifications received by rayscope", "Alertmanager notifications rayscope's webhook received (firing and resolved). Stays 0 if Alertmanager cannot reach rayscope or the token is wrong.", "none",
             f"sum(rayscope_alert_notifications_received_total * {RAYSCOPE_SESSION}) or vector(0)", w=6),
        table(lay, "Firing alerts", "Every alert firing now, with its labels. Each alert's runbook_url annotation names its section of docs/runbooks.md.", "none",
              f'ALERTS{{alertstate="firing",{ALERT_SESSION}}}'),
        timeseries(lay, "Alerts over time", "Pending and firing alerts by name and state. Pending is the for: wait before firing.", "none",
                   [(f"count by (alertname, alertstate) (ALERTS{{{ALERT_SESSION}}})", "{{alertname}} {{alertstate}}")], w=24),
        lay.row("rayscope's webhook"),
        timeseries(lay, "Notifications received by alert", "Notifications Alertmanager delivered to rayscope's POST /api/alerts, by alert name and status (the list: the rayscope /api/alerts link above).", "none",
                   [(f"sum by (alertname, status) (rayscope_alert_notifications_received_total * {RAYSCOPE_SESSION})", "{{alertname}} {{status}}")], w=24),
    ]


FLOW_CALLS = f"rayscope_flow_calls_total * {RAYSCOPE_SESSION}"
FLOW_CALL_RATE = f"rate(rayscope_flow_calls_total[$__rate_interval]) * {RAYSCOPE_SESSION}"


def flow_rate(series):
    """The rate of a series of the call-duration histogram (`sum`, `count`, `bucket`) in this session."""
    return f"rate(rayscope_flow_call_duration_seconds_{series}[$__rate_interval]) * {RAYSCOPE_SESSION}"


def flow(lay):
    return [
        lay.row("Calls (Flow Insight's call graph, per edge)"),
        stat(lay, "Call rate", "Calls submitted per second, every edge together.", "reqps",
             f"sum({FLOW_CALL_RATE}) or vector(0)", w=6),
        stat(lay, "Edges", "Distinct caller → callee edges seen (class and method level).", "none",
             f"count({FLOW_CALLS}) or vector(0)", w=6),
        stat(lay, "Mean call latency", "Submit to end, every callee together (queueing on a busy actor included).", "s",
             f"sum({flow_rate('sum')}) / sum({flow_rate('count')})", w=6),
        stat(lay, "Callees", "Distinct callees (functions and actor methods).", "none",
             f"count(count by (callee) (rayscope_flow_call_duration_seconds_count * {RAYSCOPE_SESSION})) or vector(0)", w=6),
        timeseries(lay, "Call rate per edge", "Calls per second from each caller to each callee (rayscope_flow_calls_total): the edges of Flow Insight's call graph over time. The Flow Insight link above draws the graph.", "reqps",
                   [(f"sum by (caller, callee) ({FLOW_CALL_RATE})", "{{caller}} → {{callee}}")], w=24),
        table(lay, "Calls per edge", "Calls submitted so far on each edge.", "none",
              f"sum by (caller, callee) ({FLOW_CALLS})"),
        lay.row("Latency per callee (submit to end)"),
        timeseries(lay, "Mean latency by callee", "Mean time from a call's submit to its end, by callee. A callee whose latency grows while its rate stays flat is queueing: look for it in Flow Insight's bottleneck list.", "s",
                   [(f"sum by (callee) ({flow_rate('sum')}) / sum by (callee) ({flow_rate('count')})", "{{callee}}")]),
        timeseries(lay, "p95 latency by callee", "95th percentile of submit-to-end time by callee, from the histogram's buckets.", "s",
                   [(f"histogram_quantile(0.95, sum by (callee, le) ({flow_rate('bucket')}))", "{{callee}}")]),
        timeseries(lay, "Calls completed by callee", "Calls ended per second, by callee.", "reqps",
                   [(f"sum by (callee) ({flow_rate('count')})", "{{callee}}")], w=24),
    ]


DASHBOARDS = [
    ("cluster-overview", "rayscope-cluster", "Ray / Cluster overview", "The cluster at a glance: nodes, work, resources, object store, alerts.", cluster),
    ("nodes", "rayscope-nodes", "Ray / Nodes", "The machine view: hardware per node (CPU, memory, GPUs, disk, network) and Ray's processes on it.", nodes),
    ("jobs-and-tasks", "rayscope-jobs", "Ray / Jobs and tasks", "Jobs, and tasks by state, name and node: throughput, retries and failures.", jobs),
    ("actors", "rayscope-actors", "Ray / Actors", "Actors by state and class, busy and idle, restarts and placement time.", actors),
    ("object-store-and-memory", "rayscope-objects", "Ray / Object store and memory", "Plasma stores, spilling, transfers, node memory and OOM kills.", objects),
    ("scheduler-and-autoscaler", "rayscope-scheduler", "Ray / Scheduler and autoscaler", "Lease queues, placement latency, spillback, worker starts; the autoscaler's nodes, launches and failures.", scheduler),
    ("alerts", "rayscope-alerts", "Ray / Alerts", "Prometheus alerts (ALERTS) and the notifications rayscope received from Alertmanager.", alerts),
    ("flow", "rayscope-flow", "Ray / Flow", "Flow Insight's call graph as metrics: call rates and latencies per caller → callee edge (rayscope_flow_*). The /flow page shows the graph itself.", flow),
]


def main():
    # An output directory may be given (the tests regenerate into a temporary one and
    # compare); by default the files next to this script are rewritten.
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "dashboards")
    os.makedirs(out_dir, exist_ok=True)
    for file, uid, title, description, build in DASHBOARDS:
        with open(os.path.join(out_dir, file + ".json"), "w") as f:
            json.dump(dashboard(uid, title, description, build), f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
