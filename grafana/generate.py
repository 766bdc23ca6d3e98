#!/usr/bin/env python3
"""Writes grafana/dashboards/*.json, the bundle's dashboards, from the panel lists below.

The JSON files are what Grafana loads (provisioned, or through "Import dashboard") and
what the tests check; this script is their source, the way a monitoring mixin's
jsonnet is. Edit the panels here, run `python3 grafana/generate.py`, commit both.

Conventions every dashboard follows (tests/bundle_structure.rs checks them):
* a `datasource` variable, used by every panel and target as `${datasource}`, so the
  same file works provisioned and imported (raw JSON, no `__inputs`);
* a `Cluster` variable on `ray_io_cluster`, as Ray's own dashboards have; its "All" is
  `.*`, which also matches series without the label (a plain Ray cluster has none; a
  KubeRay PodMonitor adds it);
* every query variable of a dashboard is honoured by every expression of every panel on
  it, or the dashboard does not have that variable: Cluster and Session everywhere, node
  type and node only where every panel can filter on them;
* nodes are `ip` on the reporter's hardware series and `NodeAddress` on raylet series,
  never `instance`, so the dashboards work with or without `honor_labels` and on Ray;
* a graph draws at most 50 series at any cluster size: per-node graphs show the top 10
  nodes over the time range (`topk` at `@ end()`, so the set is fixed) or sum by node
  type, and the per-node detail is a table;
* a threshold line wherever an alert has a threshold, at the alert's value;
* every panel has a unit and a description (what it shows, when to worry); rates use
  `$__rate_interval`, top-k windows `$__range`;
* panels only rayscope can fill (its own rayscope_* series, Flow) end their title with
  " (rayscope only)" and start their description with "rayscope only:";
* unique panel ids and a grid with no overlaps.
"""

import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# Label filters, by the kind of series they apply to. Every series carries the cluster
# filter; absent ray_io_cluster matches the "All" value `.*`.
CLUSTER = 'ray_io_cluster=~"$Cluster"'
SESSION = f'SessionName=~"$SessionName",{CLUSTER}'
HW = f'{SESSION},RayNodeType=~"$RayNodeType",ip=~"$node"'  # reporter, on the Nodes dashboard
HW_NODE = f'{SESSION},ip=~"$node"'  # reporter, where only the node variable exists
RL = f'{SESSION},NodeAddress=~"$node"'  # raylet / GCS / core worker, node variable
# rayscope's own series carry no SessionName; rayscope_session_info joins them to it.
RAYSCOPE_SESSION = (
    'on (job, instance) group_left () '
    f'rayscope_session_info{{session_name=~"$SessionName",{CLUSTER}}}'
)
# Alerts without a session or cluster (the target-down and Watchdog alerts, and rules
# that aggregate the cluster label away) are shown too.
ALERT_SESSION = 'SessionName=~"${SessionName}|",ray_io_cluster=~"${Cluster}|"'
ONLY = " (rayscope only)"

DS = {"type": "prometheus", "uid": "${datasource}"}
# The provisioned Prometheus by name: the alert list panel reads its rules API and takes
# a data source name, not a variable.
PROMETHEUS_NAME = "Prometheus"
TOP = 10


def top(expr, by, k=TOP, over="avg_over_time"):
    """The k series of a selector with the highest value over the whole time range, drawn
    over it. Evaluated `@ end()`, the set is the same at every step, so the graph has k
    series however many nodes report (a plain topk picks anew at each step)."""
    return f"{expr} and on ({by}) topk({k}, {over}({expr}[$__range] @ end()))"


def variables(names):
    def query(name, label, q, description, all_value=".+", multi=False):
        return {
            "name": name,
            "label": label,
            "description": description,
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

    node_filter = f'SessionName=~"$SessionName",{CLUSTER}' + (',RayNodeType=~"$RayNodeType"' if "RayNodeType" in names else "")
    every = {
        "Cluster": query("Cluster", "Cluster", "label_values(ray_node_network_receive_speed, ray_io_cluster)",
                         "The Ray cluster, by the ray_io_cluster label a KubeRay PodMonitor adds (as on Ray's own dashboards). "
                         "A plain Ray cluster has no such label: All (.*) matches it.", all_value=".*"),
        "SessionName": query("SessionName", "Session", f"label_values(ray_node_network_receive_speed{{{CLUSTER}}}, SessionName)",
                             "The Ray session (one per `ray start` of the head)."),
        "RayNodeType": query("RayNodeType", "Node type", f"label_values(ray_node_cpu_count{{SessionName=~\"$SessionName\",{CLUSTER}}}, RayNodeType)",
                             "Ray node types (head, and the worker types of the cluster config).", multi=True),
        "node": query("node", "Node", f"label_values(ray_node_cpu_count{{{node_filter}}}, ip)",
                      "Nodes by IP (ip on hardware series, NodeAddress on raylet series).", multi=True),
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
        *([{
            "name": "alertmanager",
            "label": "Alertmanager API",
            "description": "An Infinity data source on Alertmanager (the bundle provisions one), for the alerts' summaries and runbooks.",
            "type": "datasource",
            "query": "yesoreyeram-infinity-datasource",
            "current": {},
            "hide": 0,
            "refresh": 1,
            "regex": "",
        }] if "alertmanager" in names else []),
        *[every[n] for n in names if n != "alertmanager"],
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


def thresholds_of(pairs):
    return {"mode": "absolute", "steps": [{"color": "green", "value": None}] + [{"color": c, "value": v} for v, c in pairs]}


def timeseries(lay, title, description, unit, exprs, w=12, h=8, stack=False, minimum=None, threshold=None):
    """A graph. `threshold`: the value at which an alert fires, drawn as a dashed red line."""
    custom = {"fillOpacity": 15 if stack else 5, "stacking": {"mode": "normal" if stack else "none"}}
    defaults = {"unit": unit, "custom": custom}
    if minimum is not None:
        defaults["min"] = minimum
    if threshold is not None:
        defaults["thresholds"] = thresholds_of([(threshold, "red")])
        custom["thresholdsStyle"] = {"mode": "dashed"}
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
    return {
        "type": "stat",
        "title": title,
        "description": description,
        "datasource": DS,
        "gridPos": lay.place(w, h),
        "fieldConfig": {"defaults": {"unit": unit, "thresholds": thresholds_of(thresholds or [])}, "overrides": []},
        "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False}, "colorMode": "value", "graphMode": "area"},
        "targets": targets([(expr, "")]),
    }


def table(lay, title, description, unit, columns, w=24, h=8):
    """A table of instant values. `columns`: (expr, column title, unit) triples, merged on
    their shared labels (one row per node, say) when there are several."""
    t = targets([(expr, "") for expr, _, _ in columns])
    for target in t:
        target.update({"instant": True, "range": False, "format": "table"})
    several = len(columns) > 1
    names = {(f"Value #{tg['refId']}" if several else "Value"): name for tg, (_, name, _) in zip(t, columns)}
    overrides = [
        {"matcher": {"id": "byName", "options": (f"Value #{tg['refId']}" if several else "Value")}, "properties": [{"id": "unit", "value": u}]}
        for tg, (_, _, u) in zip(t, columns)
    ]
    transformations = ([{"id": "merge", "options": {}}] if several else []) + [
        {"id": "organize", "options": {"excludeByName": {"Time": True, "__name__": True}, "renameByName": names}}
    ]
    return {
        "type": "table",
        "title": title,
        "description": description,
        "datasource": DS,
        "gridPos": lay.place(w, h),
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": overrides},
        "options": {"showHeader": True, "sortBy": [{"displayName": columns[0][1], "desc": True}]},
        "transformations": transformations,
        "targets": t,
    }


def alert_list(lay, title, description, w=24, h=10):
    """Grafana's alert list over Prometheus' own rules (data-source managed): firing and
    pending alerts with their instances; each links to the rule's page in Grafana, which
    shows the summary and the runbook_url as a link."""
    return {
        "type": "alertlist",
        "title": title,
        "description": description,
        "gridPos": lay.place(w, h),
        "fieldConfig": {"defaults": {"unit": "none"}, "overrides": []},
        "options": {
            "viewMode": "list",
            "groupMode": "default",
            "groupBy": [],
            "maxItems": 50,
            "sortOrder": 3,
            "dashboardAlerts": False,
            "alertName": "",
            # The dashboard's variables, as Alertmanager-style matchers on the instances.
            "alertInstanceLabelFilter": '{SessionName=~"${SessionName}|", ray_io_cluster=~"${Cluster}|"}',
            "datasource": PROMETHEUS_NAME,
            "folder": None,
            "showInstances": True,
            "stateFilter": {"firing": True, "pending": True, "noData": False, "normal": False, "error": True},
        },
    }


# Alertmanager's HTTP API through the Infinity data source (a JSON-over-HTTP plugin; the
# bundle's Grafana installs it and provisions it on Alertmanager): Prometheus' own data
# source gives the ALERTS series, which carry no annotations, so the summary and the
# runbook link come from Alertmanager's /api/v2/alerts. A variable, like `datasource`.
AM_DS = {"type": "yesoreyeram-infinity-datasource", "uid": "${alertmanager}"}


def alertmanager_table(lay, title, description, w=24, h=10):
    """Alertmanager's active alerts, one row each: name, severity, where, summary, runbook
    (a link), since when. Filtered on the dashboard's Cluster and Session variables by
    Alertmanager's own matchers; an alert without those labels (Watchdog, target down)
    matches the empty alternative."""
    columns = [
        ("labels.alertname", "Alert", "string"),
        ("labels.severity", "Severity", "string"),
        ("labels.ip", "Node", "string"),
        ("annotations.summary", "Summary", "string"),
        ("annotations.runbook_url", "Runbook", "string"),
        ("startsAt", "Since", "timestamp"),
    ]
    params = [
        {"key": "active", "value": "true"},
        {"key": "silenced", "value": "false"},
        {"key": "inhibited", "value": "false"},
        {"key": "filter", "value": 'SessionName=~"${SessionName}|"'},
        {"key": "filter", "value": 'ray_io_cluster=~"${Cluster}|"'},
    ]
    runbook_link = {"title": "Open the runbook", "url": "${__value.raw}", "targetBlank": True}
    return {
        "type": "table",
        "title": title,
        "description": description,
        "datasource": AM_DS,
        "gridPos": lay.place(w, h),
        "fieldConfig": {
            "defaults": {"unit": "none"},
            "overrides": [{"matcher": {"id": "byName", "options": "Runbook"}, "properties": [{"id": "links", "value": [runbook_link]}]}],
        },
        "options": {"showHeader": True, "cellHeight": "sm", "sortBy": [{"displayName": "Severity", "desc": False}]},
        "targets": [
            {
                "datasource": AM_DS,
                "refId": "A",
                "type": "json",
                "source": "url",
                "parser": "backend",
                "format": "table",
                "url": "/api/v2/alerts",
                "url_options": {"method": "GET", "data": "", "params": params},
                "root_selector": "",
                "columns": [{"selector": sel, "text": text, "type": kind} for sel, text, kind in columns],
                "filters": [],
            }
        ],
    }


def dashboard(uid, title, description, names, build):
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
        "templating": {"list": variables(names)},
        "panels": panels,
    }


RUNNING = 'State=~"RUNNING|RUNNING_IN_RAY_GET|RUNNING_IN_RAY_WAIT"'


def alert_threshold(name):
    """The value above which alert `name` of prometheus/rules/*.yml fires: the number of
    the first `> number` of its expression (a minimum volume joined after it, `>= 20`,
    is not the threshold). Read from the rules each run, so a changed rule moves
    its threshold lines; a rule that no longer compares with `> number` is an error here
    rather than a line drawn at a stale value. (A line scan, not a YAML parser: the script
    needs nothing beyond Python's standard library.)"""
    rules_dir = os.path.join(HERE, "..", "prometheus", "rules")
    for file in sorted(os.listdir(rules_dir)):
        if not file.endswith((".yml", ".yaml")):
            continue
        lines = open(os.path.join(rules_dir, file)).read().splitlines()
        for i, line in enumerate(lines):
            if re.fullmatch(rf"\s*- alert:\s*{name}\s*", line):
                indent = len(line) - len(line.lstrip())
                block = []
                for nxt in lines[i + 1:]:
                    if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= indent:
                        break
                    block.append(nxt)
                expr = "\n".join(block).split("expr:", 1)[1].split("for:", 1)[0].split("labels:", 1)[0]
                found = re.findall(r">(?!=)\s*([0-9.]+)", expr)
                if not found:
                    sys.exit(f"generate.py: alert {name} ({file}) compares with no `> number`: {expr.strip()}")
                value = float(found[0])
                return int(value) if value.is_integer() else value
    sys.exit(f"generate.py: no alert {name} in prometheus/rules/*.yml")


# Alert thresholds, from prometheus/rules/*.yml, drawn on the panels of their series.
CPU_ALERT = alert_threshold("RayNodeHighCpu")
MEM_ALERT = alert_threshold("RayNodeHighMemory")
STORE_ALERT = alert_threshold("RayObjectStoreAlmostFull")
FAILED_ALERT = alert_threshold("RayTaskFailureRateHigh")
GRAM_ALERT = alert_threshold("RayGpuMemoryHigh")
PLACEMENT_ALERT = alert_threshold("RaySchedulingLatencyHigh")


def pct(ratio):
    """A 0-1 threshold as a percentage for a description: 0.85 → "85%"."""
    return f"{round(ratio * 100, 1):g}%"


def cluster(lay):
    return [
        lay.row("At a glance"),
        stat(lay, "Alive nodes", "Nodes whose dashboard agent reports hardware readings. A drop you did not plan is a node loss (RayNodeDown).", "none", f"count(ray_node_cpu_count{{{SESSION}}})"),
        stat(lay, "Logical CPUs in use", "Share of the cluster's logical CPUs reserved by tasks and actors. Near 100% with pending tasks means the cluster is too small or the autoscaler is at its limit.", "percentunit",
             f'sum(ray_resources{{Name="CPU",State="USED",{SESSION}}}) / sum(ray_resources{{Name="CPU",{SESSION}}})', thresholds=[(0.9, "orange")]),
        stat(lay, "Running tasks", "Tasks executing now (including those blocked in ray.get / ray.wait), summed over every reporting process.", "none", f"sum(ray_tasks{{{RUNNING},{SESSION}}})"),
        stat(lay, "Alive actors", "Actors the GCS holds as ALIVE.", "none", f'sum(ray_actors{{Source="gcs",State="ALIVE",{SESSION}}})'),
        stat(lay, "Running jobs", "Jobs the GCS counts as running.", "none", f"sum(ray_running_jobs{{{SESSION}}})"),
        stat(lay, "Firing alerts", "Alerts firing now in Prometheus, Watchdog excepted. Details on the Alerts dashboard.", "none",
             f'count(ALERTS{{alertstate="firing",alertname!="Watchdog",{ALERT_SESSION}}}) or vector(0)', thresholds=[(1, "red")]),
        lay.row("Work"),
        timeseries(lay, "Tasks by state", "Every task by state (owner, executor and raylet counts summed, as Ray's own dashboard does). A PENDING_* band that keeps growing means demand outruns the cluster.", "none",
                   [(f"sum by (State) (ray_tasks{{{SESSION}}})", "{{State}}")]),
        timeseries(lay, "Logical CPUs", "Logical CPUs used and available, summed over nodes. Available near zero while tasks wait: scale up.", "none",
                   [(f'sum by (State) (ray_resources{{Name="CPU",{SESSION}}})', "{{State}}")], stack=True),
        timeseries(lay, "Logical resources in use", "Share of each logical resource (CPU, GPU, memory, object store memory) that tasks, actors and placement groups reserve, over the whole cluster.", "percentunit",
                   [(f'sum by (Name) (ray_resources{{Name=~"CPU|GPU|memory|object_store_memory",State="USED",{SESSION}}}) / sum by (Name) (ray_resources{{Name=~"CPU|GPU|memory|object_store_memory",{SESSION}}})', "{{Name}}")], minimum=0),
        timeseries(lay, "Cluster utilization", "Physical use over the whole cluster (0-100%): mean CPU, GPUs, host memory. Compare with logical use: reserved but idle means tasks over-ask.", "percent",
                   [(f"avg(ray_node_cpu_utilization{{{SESSION}}})", "CPU"),
                    (f"sum(ray_node_gpus_utilization{{{SESSION}}}) / sum(ray_node_gpus_available{{{SESSION}}})", "GPU"),
                    # Ray 2.49 has no *_host series: its ray_node_mem_* are the host's.
                    (f"100 * sum(ray_node_mem_used_host{{{SESSION}}}) / sum(ray_node_mem_total_host{{{SESSION}}})"
                     f" or 100 * sum(ray_node_mem_used{{{SESSION}}}) / sum(ray_node_mem_total{{{SESSION}}})", "host memory")], minimum=0),
        timeseries(lay, "Node CPU utilization by node type", f"Mean hardware CPU utilization (0-100%) per Ray node type; the busiest nodes are on the Nodes dashboard. The line: RayNodeHighCpu's {CPU_ALERT}% (per node, for 1 m).", "percent",
                   [(f"avg by (RayNodeType) (ray_node_cpu_utilization{{{SESSION}}})", "{{RayNodeType}}")], minimum=0, threshold=CPU_ALERT),
        timeseries(lay, "Object store", "Plasma bytes used and capacity, summed over nodes. Used near capacity means spilling (see Object store and memory).", "bytes",
                   [(f"sum(ray_object_store_used_memory{{{SESSION}}})", "used"),
                    (f"sum(ray_object_store_used_memory{{{SESSION}}}) + sum(ray_object_store_available_memory{{{SESSION}}})", "capacity")]),
        lay.row("rayscope"),
        timeseries(lay, "Simulation lag" + ONLY, "rayscope only: how far virtual time trails the wall clock × speed. Above a second, rates and alert timings stretch; give rayscope a core.", "s",
                   [(f"rayscope_sim_lag_seconds * {RAYSCOPE_SESSION}", "lag")], w=24, h=6),
    ]


def nodes(lay):
    def by_type(metric, legend, scale="", before_2_60=None):
        """Per node type; `before_2_60`: the metric Ray 2.49 has instead (read where
        the first has no series)."""
        expr = f"sum by (RayNodeType) (ray_{metric}{{{HW}}}){scale}"
        if before_2_60:
            expr += f" or sum by (RayNodeType) (ray_{before_2_60}{{{HW}}}){scale}"
        return (expr, "{{RayNodeType}} " + legend)

    def components(metric, scale=""):
        return f"sum by (Component) (ray_component_{metric}{{{SESSION},ip=~\"$node\"}} and on (ip) ray_node_cpu_count{{{HW}}}){scale}"

    return [
        lay.row("CPU and memory"),
        timeseries(lay, "CPU utilization, 10 busiest nodes", f"Hardware CPU utilization (0-100% of all cores) of the 10 nodes busiest on average over the time range; every node is in the table below. The line: RayNodeHighCpu fires above {CPU_ALERT}% for 1 m.", "percent",
                   [(top(f"ray_node_cpu_utilization{{{HW}}}", "ip"), "{{ip}}")], minimum=0, threshold=CPU_ALERT),
        timeseries(lay, "CPU utilization by node type", "Mean and busiest node's CPU utilization per node type. A max far above the mean: work lands unevenly.", "percent",
                   [(f"avg by (RayNodeType) (ray_node_cpu_utilization{{{HW}}})", "{{RayNodeType}} mean"),
                    (f"max by (RayNodeType) (ray_node_cpu_utilization{{{HW}}})", "{{RayNodeType}} max")], minimum=0, threshold=CPU_ALERT),
        timeseries(lay, "Memory used, 10 fullest nodes", f"Share of memory in use on the 10 fullest nodes over the time range. The line: RayNodeHighMemory above {pct(MEM_ALERT)} for 1 m; Ray's memory monitor kills workers at 95%.", "percentunit",
                   [(top(f"session_ip:ray_node_mem:ratio{{{HW}}}", "ip"), "{{ip}}")], minimum=0, threshold=MEM_ALERT),
        timeseries(lay, "CPU cores by node type", "Cores per node type, as the nodes' agents count them.", "none", [by_type("node_cpu_count", "cores")], stack=True),
        timeseries(lay, "Host memory by node type", "Bytes of host memory in use (heaps + object store + everything else), next to the hosts' total, per node type.", "bytes",
                   [by_type("node_mem_used_host", "used", before_2_60="node_mem_used"),
                    by_type("node_mem_total_host", "total", before_2_60="node_mem_total")]),
        timeseries(lay, "Container (cgroup) memory by node type", "Memory the nodes' containers (cgroups) use, next to their limits, per node type: what Kubernetes' OOM killer judges.", "bytes",
                   [by_type("node_cgroup_mem_used", "used"), by_type("node_cgroup_mem_total", "limit")]),
        lay.row("GPUs"),
        timeseries(lay, "GPU utilization, 10 busiest GPUs", "Utilization (0-100%) of the 10 busiest GPUs over the time range. Idle GPUs on a busy cluster point at requests that do not ask for them.", "percent",
                   [(top(f"ray_node_gpus_utilization{{{HW}}}", "ip, GpuIndex"), "{{ip}} GPU {{GpuIndex}}")], minimum=0),
        timeseries(lay, "GPU memory used, 10 fullest GPUs", f"Share of GPU memory in use on the 10 fullest GPUs over the time range. The line: RayGpuMemoryHigh above {pct(GRAM_ALERT)} for 5 m.", "percentunit",
                   [(top(f"session_gpu:ray_node_gram:ratio{{{HW}}}", "ip, GpuIndex"), "{{ip}} GPU {{GpuIndex}}")], minimum=0, threshold=GRAM_ALERT),
        timeseries(lay, "GPU memory by node type", "Bytes of GPU memory in use and in total per node type (Ray reports MiB).", "bytes",
                   [by_type("node_gram_used", "used", " * 1024 * 1024"),
                    (f"(sum by (RayNodeType) (ray_node_gram_used{{{HW}}}) + sum by (RayNodeType) (ray_node_gram_available{{{HW}}})) * 1024 * 1024", "{{RayNodeType}} total")]),
        timeseries(lay, "GPU power by node type", "Power the GPUs draw, per node type.", "mwatt", [by_type("node_gpu_power_milliwatts", "power")]),
        timeseries(lay, "GPU temperature, 10 hottest GPUs", "Temperature of the 10 GPUs hottest over the time range. Sustained heat throttles clocks.", "celsius",
                   [(top(f"ray_node_gpu_temperature_celsius{{{HW}}}", "ip, GpuIndex", over="max_over_time"), "{{ip}} GPU {{GpuIndex}}")]),
        lay.row("Disk and network"),
        timeseries(lay, "Disk used, 10 fullest nodes", "Root filesystem use of the 10 fullest nodes; spilled objects and logs land here.", "percent",
                   [(top(f"ray_node_disk_utilization_percentage{{{HW}}}", "ip"), "{{ip}}")], minimum=0),
        timeseries(lay, "Disk space by node type", "Bytes used and in total on the nodes' root filesystems, per node type.", "bytes",
                   [by_type("node_disk_usage", "used"),
                    (f"sum by (RayNodeType) (ray_node_disk_usage{{{HW}}}) + sum by (RayNodeType) (ray_node_disk_free{{{HW}}})", "{{RayNodeType}} total")]),
        timeseries(lay, "Disk throughput by node type", "Bytes read and written per second per node type. Spilling and restoring show up here.", "Bps",
                   [by_type("node_disk_io_read_speed", "read"), by_type("node_disk_io_write_speed", "write")]),
        timeseries(lay, "Network by node type", "Bytes received and sent per second per node type: object transfers between nodes.", "Bps",
                   [by_type("node_network_receive_speed", "received"), by_type("node_network_send_speed", "sent")]),
        lay.row("Ray processes"),
        timeseries(lay, "Process CPU by component", "CPU of each Ray process kind on the chosen nodes (100% = one core): raylet, GCS, agents, workers by task name.", "percent",
                   [(components("cpu_percentage"), "{{Component}}")]),
        timeseries(lay, "Process memory by component", "Resident memory of each Ray process kind on the chosen nodes. A worker kind that only grows is a leak the memory monitor will end.", "bytes",
                   # Ray 2.49 has only ray_component_rss_mb (bytes / 1e6).
                   [(f'{components("rss_bytes")} or {components("rss_mb", " * 1e6")}', "{{Component}}")]),
        timeseries(lay, "GPU use by component", "GPU utilization of each Ray process kind on the chosen nodes (100% = one GPU).", "percent",
                   [(components("gpu_percentage"), "{{Component}}")]),
        timeseries(lay, "GPU memory by component", "GPU memory each Ray process kind holds on the chosen nodes (Ray reports MiB).", "bytes",
                   [(components("gpu_memory_mb", " * 1024 * 1024"), "{{Component}}")]),
        lay.row("Every node"),
        table(lay, "Nodes", "One row per node: CPU, memory and disk use now, and its cores. Sort by a column to find the outliers the graphs above leave out.", "percent",
              [(f"max by (ip, RayNodeType) (ray_node_cpu_utilization{{{HW}}})", "CPU", "percent"),
               (f"max by (ip, RayNodeType) (session_ip:ray_node_mem:ratio{{{HW}}})", "memory", "percentunit"),
               (f"max by (ip, RayNodeType) (ray_node_disk_utilization_percentage{{{HW}}})", "disk", "percent"),
               (f"max by (ip, RayNodeType) (ray_node_cpu_count{{{HW}}})", "cores", "none")], h=10),
    ]


def failure_share():
    """Share of task attempts ending in the last 5 m that failed, as the recorded
    session:ray_tasks_failed:ratio_delta5m computes it, from raw series so the
    dashboard's filters apply (the recorded series keeps only SessionName)."""
    grew = lambda state: f'clamp_min(delta(sum(ray_tasks{{State="{state}",{SESSION}}})[5m:]), 0)'
    return f"{grew('FAILED')} / ({grew('FAILED')} + {grew('FINISHED')})"


def placement_quantile(q, extra=""):
    """In ms: Ray 2.49's histogram is ray_scheduler_placement_time_s, in seconds."""
    of = lambda unit: f"histogram_quantile({q}, sum by (WorkloadType, le) (rate(ray_scheduler_placement_time_{unit}_bucket{{{extra}{SESSION}}}[$__rate_interval])))"
    return f"{of('ms')} or 1000 * {of('s')}"


def placement_p95(extra=""):
    return placement_quantile(0.95, extra)


def jobs(lay):
    running_by_node = f'sum by (NodeAddress) (ray_tasks{{Source="executor",{RUNNING},{SESSION}}})'
    return [
        lay.row("Jobs"),
        timeseries(lay, "Running jobs", "Jobs the GCS counts as running.", "none", [(f"sum(ray_running_jobs{{{SESSION}}})", "running")]),
        timeseries(lay, "Jobs finished per minute", "Jobs that ended (any outcome), per minute.", "none",
                   [(f"sum(rate(ray_finished_jobs_total{{{SESSION}}}[$__rate_interval])) * 60", "finished/min")]),
        timeseries(lay, "Job durations, 10 longest jobs", "How long the 10 longest-running jobs of the time range ran. A job much longer than its peers waited on resources or retries.", "s",
                   [(top(f"ray_job_duration_s{{{SESSION}}}", "JobId", over="max_over_time"), "{{JobId}}")], w=24),
        lay.row("Tasks"),
        timeseries(lay, "Tasks by state", "Every task by state, summed over reporting processes. Growing PENDING_* states mean demand outruns the cluster.", "none",
                   [(f"sum by (State) (ray_tasks{{{SESSION}}})", "{{State}}")]),
        timeseries(lay, "Active tasks by name", "Tasks not yet finished or failed (waiting, scheduled or running), per function or actor method.", "none",
                   [(f'sum by (Name) (ray_tasks{{State!~"FINISHED|FAILED",{SESSION}}})', "{{Name}}")], stack=True),
        timeseries(lay, "Running tasks by name", "Tasks executing now, per function or actor method.", "none",
                   [(f"sum by (Name) (ray_tasks{{{RUNNING},{SESSION}}})", "{{Name}}")], stack=True),
        timeseries(lay, "Running tasks, 10 busiest nodes", "Tasks executing on the 10 nodes that ran the most over the time range (executor side); every node is in the table below. An idle node beside busy ones points at placement constraints.", "none",
                   [(f"{running_by_node} and on (NodeAddress) topk({TOP}, avg_over_time(({running_by_node})[$__range:] @ end()))", "{{NodeAddress}}")]),
        timeseries(lay, "Pending tasks by state", "Tasks not yet running, by why they wait: for arguments, for a node, for object store memory.", "none",
                   [(f'sum by (State) (ray_tasks{{State=~"PENDING_.*",{SESSION}}})', "{{State}}")], stack=True),
        timeseries(lay, "Task retries", "Tasks on a retry attempt (IsRetry=1), per name: after a node loss, an OOM kill or a crash.", "none",
                   [(f'sum by (Name) (ray_tasks{{IsRetry="1",{SESSION}}})', "{{Name}}")]),
        timeseries(lay, "Failed tasks", "Tasks that ended FAILED (retries exhausted or not retriable), per name.", "none",
                   [(f'sum by (Name) (ray_tasks{{State="FAILED",{SESSION}}})', "{{Name}}")]),
        timeseries(lay, "Task failure share (5 m)", f"Share of task attempts ending in the last 5 m that failed. The line: RayTaskFailureRateHigh above {pct(FAILED_ALERT)}.", "percentunit",
                   [(failure_share(), "failed share")], minimum=0, threshold=FAILED_ALERT),
        timeseries(lay, "Tasks finished per second", "Completion throughput (growth of the FINISHED count). A drop to zero with pending work is a stuck cluster (RayTasksPendingTooLong).", "none",
                   [(f'sum(deriv(ray_tasks{{State="FINISHED",{SESSION}}}[$__rate_interval]))', "finished/s")]),
        timeseries(lay, "Unexpected worker failures", "Worker processes that died without Ray asking them to (crash, signal, lost node), per interval, by task or actor name. Ray creates the counter at the first failure: empty means none.", "none",
                   # Ray 2.49's raylets have no such counter: its GCS's total, unnamed, instead.
                   [(f"sum by (Type, Name) (increase(ray_node_manager_unexpected_worker_failure_total{{{SESSION}}}[$__rate_interval]))"
                     f' or label_replace(sum(increase(ray_unintentional_worker_failures_total{{{SESSION}}}[$__rate_interval])), "Type", "all (Ray 2.49)", "", "")', "{{Type}} {{Name}}")]),
        table(lay, "Running tasks per node", "Tasks executing on every node now (executor side).", "none",
              [(running_by_node, "running", "none")]),
    ]


def actors(lay):
    return [
        lay.row("Actors"),
        timeseries(lay, "Actors by state", "Actors by lifecycle state, as the GCS holds them. RESTARTING that keeps coming back is a restart loop.", "none",
                   [(f'sum by (State) (ray_actors{{Source="gcs",{SESSION}}})', "{{State}}")]),
        timeseries(lay, "Alive actors by class", "ALIVE actors per class.", "none",
                   [(f'sum by (Name) (ray_actors{{Source="gcs",State="ALIVE",{SESSION}}})', "{{Name}}")], stack=True),
        timeseries(lay, "Busy and idle actors", "Alive actors running a task or idle, from the actors' own workers. Many idle actors hold resources others wait for.", "none",
                   [(f'sum by (State) (ray_actors{{Source="executor",{SESSION}}})', "{{State}}")], stack=True),
        timeseries(lay, "Restarting and dead actors by class", "Actors restarting or dead, per class. Dead actors of a class that should live mean max_restarts ran out.", "none",
                   [(f'sum by (Name, State) (ray_actors{{Source="gcs",State=~"RESTARTING|DEAD",{SESSION}}})', "{{Name}} {{State}}")]),
        timeseries(lay, "Actor placement p95", f"95th percentile time from an actor's creation request to its resources being reserved. The line: RaySchedulingLatencyHigh above {PLACEMENT_ALERT} ms for 5 m.", "ms",
                   [(placement_p95('WorkloadType="Actor",'), "p95")], threshold=PLACEMENT_ALERT),
        timeseries(lay, "Actor calls by state", "Actor method calls by state: queued behind an actor's concurrency limit, running, finished.", "none",
                   [(f'sum by (State) (ray_tasks{{Name=~".+\\\\..+",{SESSION}}})', "{{State}}")]),
        lay.row("Placement groups"),
        timeseries(lay, "Placement groups by state", "Placement groups by state, as the GCS holds them. PENDING that does not clear: no node (or set of nodes) has the bundles' resources.", "none",
                   [(f"sum by (State) (ray_placement_groups{{{SESSION}}})", "{{State}}")], w=24),
    ]


def objects(lay):
    fill = f"session_node:ray_object_store:ratio{{{RL}}}"
    return [
        lay.row("Object store"),
        timeseries(lay, "Object store fill, 10 fullest nodes", f"Share of the plasma store in use on the 10 fullest nodes over the time range; every node is in the table below. The line: RayObjectStoreAlmostFull above {pct(STORE_ALERT)}; Ray spills from 80% by default.", "percentunit",
                   [(top(fill, "NodeAddress"), "{{NodeAddress}}")], minimum=0, threshold=STORE_ALERT),
        timeseries(lay, "Object store used", "Plasma bytes used and capacity, summed over the chosen nodes.", "bytes",
                   [(f"sum(ray_object_store_used_memory{{{RL}}})", "used"),
                    (f"sum(ray_object_store_used_memory{{{RL}}}) + sum(ray_object_store_available_memory{{{RL}}})", "capacity")]),
        timeseries(lay, "Object memory by location", "Object bytes by where they live: shared memory, disk-backed fallback, spilled, or small objects in worker heaps.", "bytes",
                   [(f"sum by (Location) (ray_object_store_memory{{{RL}}})", "{{Location}}")], stack=True),
        timeseries(lay, "Objects in store", "Objects held in the chosen nodes' plasma stores.", "none",
                   [(f"sum(ray_object_store_num_local_objects{{{RL}}})", "objects")]),
        lay.row("Spilling"),
        timeseries(lay, "Spilled and restored bytes", "Bytes by spill state. Spilled bytes that keep growing: the store is too small for the working set (RayObjectSpilling).", "bytes",
                   [(f"sum by (State) (ray_spill_manager_objects_bytes{{{RL}}})", "{{State}}")]),
        timeseries(lay, "Spill and restore requests per second", "Spill and restore requests per second (growth of the raylets' running counts).", "reqps",
                   [(f"sum by (Type) (deriv(ray_spill_manager_request_total{{{RL}}}[$__rate_interval]))", "{{Type}}")]),
        timeseries(lay, "Spill throughput", "Spill and restore throughput, MB/s, summed over the nodes that have spilled.", "MBs",
                   [(f"sum by (Type) (ray_spill_manager_throughput_mb{{{RL}}})", "{{Type}}")]),
        timeseries(lay, "Object transfers", "Bytes per second pushed to and received from other nodes.", "Bps",
                   [(f"sum by (Type) (deriv(ray_object_manager_bytes{{{RL}}}[$__rate_interval]))", "{{Type}}")]),
        lay.row("Memory"),
        timeseries(lay, "Node memory used, 10 fullest nodes", f"Share of memory in use (heaps + object store + everything else) on the 10 fullest nodes. The line: RayNodeHighMemory above {pct(MEM_ALERT)}; Ray's memory monitor kills workers at 95%.", "percentunit",
                   [(top(f"session_ip:ray_node_mem:ratio{{{HW_NODE}}}", "ip"), "{{ip}}")], minimum=0, threshold=MEM_ALERT),
        timeseries(lay, "OOM kills", "Workers Ray's memory monitor killed, per task or actor name, per interval. Any is worth a look (RayWorkersOomKilled).", "none",
                   [(f"sum by (Name) (increase(ray_memory_manager_worker_eviction_total{{{RL}}}[$__rate_interval]))", "{{Name}}")]),
        timeseries(lay, "Logical memory", "The `memory` resource tasks and actors reserve (their memory= requests), and the total the nodes offer.", "bytes",
                   [(f'sum(ray_resources{{Name="memory",State="USED",{RL}}})', "reserved"), (f'sum(ray_resources{{Name="memory",{RL}}})', "total")], w=24),
        lay.row("Every node"),
        table(lay, "Object store per node", "Every node's plasma store now: fill, bytes used, objects held.", "percentunit",
              [(f"max by (NodeAddress) ({fill})", "fill", "percentunit"),
               (f"max by (NodeAddress) (ray_object_store_used_memory{{{RL}}})", "used", "bytes"),
               (f"max by (NodeAddress) (ray_object_store_num_local_objects{{{RL}}})", "objects", "none")], h=10),
    ]


def scheduler(lay):
    return [
        lay.row("Scheduler"),
        timeseries(lay, "Unschedulable leases by reason", "Leases that cannot be placed now, by reason. Infeasible never clears without a new node type (RayTasksInfeasible).", "none",
                   [(f"sum by (Reason) (ray_scheduler_unscheduleable_tasks{{{SESSION}}})", "{{Reason}}")]),
        timeseries(lay, "Lease queue by state", "The raylets' lease queues by state.", "none",
                   [(f"sum by (State) (ray_scheduler_tasks{{{SESSION}}})", "{{State}}")]),
        timeseries(lay, "Placement time p95", f"95th percentile time to reserve resources, per workload type. The line: RaySchedulingLatencyHigh above {PLACEMENT_ALERT} ms for 5 m.", "ms",
                   [(placement_p95(), "{{WorkloadType}}")], threshold=PLACEMENT_ALERT),
        timeseries(lay, "Placement time p50", "Median time to reserve resources, per workload type.", "ms",
                   [(placement_quantile(0.5), "{{WorkloadType}}")]),
        timeseries(lay, "Spillbacks per second", "Leases the raylets sent on to another node because theirs had no room (growth of their running counts), summed over nodes.", "none",
                   [(f"sum(deriv(ray_internal_num_spilled_tasks{{{SESSION}}}[$__rate_interval]))", "spillbacks/s")]),
        timeseries(lay, "Worker processes started", "Worker processes the raylets have started, summed over nodes. Steep growth means workers die and are replaced.", "none",
                   [(f"sum(ray_internal_num_processes_started{{{SESSION}}})", "started")]),
        lay.row("Autoscaler"),
        timeseries(lay, "Nodes by type", "Active and launching nodes per node type, as the autoscaler sees them.", "none",
                   [(f"sum by (NodeType) (autoscaler_active_nodes{{{SESSION}}})", "{{NodeType}} active"),
                    (f"sum by (NodeType) (autoscaler_pending_nodes{{{SESSION}}})", "{{NodeType}} pending")]),
        timeseries(lay, "Recently failed launches", "Node launches that failed recently, per type (RayAutoscalerLaunchFailing).", "none",
                   [(f"sum by (NodeType) (autoscaler_recently_failed_nodes{{{SESSION}}})", "{{NodeType}}")]),
        timeseries(lay, "Cluster resources", "Logical resources of the nodes the autoscaler counts, and of launches still pending.", "none",
                   [(f'sum by (resource) (autoscaler_cluster_resources{{resource=~"CPU|GPU",{SESSION}}})', "{{resource}}"),
                    (f'sum by (resource) (autoscaler_pending_resources{{resource=~"CPU|GPU",{SESSION}}})', "{{resource}} pending")]),
        timeseries(lay, "Node failures", "Node failures the GCS counted per interval (RayNodeDown). Ray creates the counter at the first failure: empty means none.", "none",
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
             f'count(ALERTS{{alertname="Watchdog",alertstate="firing",{ALERT_SESSION}}}) or vector(0)', w=6, thresholds=[]),
        stat(lay, "Notifications received" + ONLY, "rayscope only: Alertmanager notifications rayscope's webhook received (firing and resolved). Stays 0 if Alertmanager cannot reach rayscope or the token is wrong.", "none",
             f"sum(rayscope_alert_notifications_received_total * {RAYSCOPE_SESSION}) or vector(0)", w=6),
        alertmanager_table(lay, "Active alerts: summary and runbook", "Alertmanager's active alerts (not silenced, not inhibited), one row each, with the summary and a link to the runbook "
                           "(runbook_url). Read from Alertmanager's /api/v2/alerts through the alertmanager data source; empty while none is active."),
        alert_list(lay, "Firing and pending rules", "Prometheus' firing and pending alerts, read from its rules API (data source " + PROMETHEUS_NAME + "), with their labels. "
                   "Open an alert for its summary, description and runbook link (runbook_url). Alertmanager's view of the same alerts, with silences "
                   "and inhibitions, is under Alerting → Alert groups (the provisioned Alertmanager data source)."),
        table(lay, "Firing alerts by label", "Every alert firing now, with all its labels (from the ALERTS series, which carries no annotations: the list above has them).", "none",
              [(f'ALERTS{{alertstate="firing",{ALERT_SESSION}}}', "firing", "none")]),
        timeseries(lay, "Alerts over time", "Pending and firing alerts by name and state. Pending is the for: wait before firing.", "none",
                   [(f"count by (alertname, alertstate) (ALERTS{{{ALERT_SESSION}}})", "{{alertname}} {{alertstate}}")], w=24),
        lay.row("rayscope's webhook"),
        timeseries(lay, "Notifications received by alert" + ONLY, "rayscope only: notifications Alertmanager delivered to rayscope's POST /api/alerts, by alert name and status (the list: the rayscope /api/alerts link above).", "none",
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
        stat(lay, "Call rate" + ONLY, "rayscope only: calls submitted per second, every edge together.", "reqps",
             f"sum({FLOW_CALL_RATE}) or vector(0)", w=6),
        stat(lay, "Edges" + ONLY, "rayscope only: distinct caller → callee edges seen (class and method level).", "none",
             f"count({FLOW_CALLS}) or vector(0)", w=6),
        stat(lay, "Mean call latency" + ONLY, "rayscope only: submit to end, every callee together (queueing on a busy actor included).", "s",
             f"sum({flow_rate('sum')}) / sum({flow_rate('count')})", w=6),
        stat(lay, "Callees" + ONLY, "rayscope only: distinct callees (functions and actor methods).", "none",
             f"count(count by (callee) (rayscope_flow_call_duration_seconds_count * {RAYSCOPE_SESSION})) or vector(0)", w=6),
        timeseries(lay, "Call rate per edge" + ONLY, "rayscope only: calls per second from each caller to each callee (rayscope_flow_calls_total): the edges of Flow Insight's call graph over time. The Flow Insight link above draws the graph.", "reqps",
                   [(f"sum by (caller, callee) ({FLOW_CALL_RATE})", "{{caller}} → {{callee}}")], w=24),
        table(lay, "Calls per edge" + ONLY, "rayscope only: calls submitted so far on each edge.", "none",
              [(f"sum by (caller, callee) ({FLOW_CALLS})", "calls", "none")]),
        lay.row("Latency per callee (submit to end)"),
        timeseries(lay, "Mean latency by callee" + ONLY, "rayscope only: mean time from a call's submit to its end, by callee. A callee whose latency grows while its rate stays flat is queueing: look for it in Flow Insight's bottleneck list.", "s",
                   [(f"sum by (callee) ({flow_rate('sum')}) / sum by (callee) ({flow_rate('count')})", "{{callee}}")]),
        timeseries(lay, "p95 latency by callee" + ONLY, "rayscope only: 95th percentile of submit-to-end time by callee, from the histogram's buckets.", "s",
                   [(f"histogram_quantile(0.95, sum by (callee, le) ({flow_rate('bucket')}))", "{{callee}}")]),
        timeseries(lay, "Calls completed by callee" + ONLY, "rayscope only: calls ended per second, by callee.", "reqps",
                   [(f"sum by (callee) ({flow_rate('count')})", "{{callee}}")], w=24),
    ]


# (file, uid, title, description, query variables, panels)
BASE = ["Cluster", "SessionName"]
DASHBOARDS = [
    ("cluster-overview", "rayscope-cluster", "Ray / Cluster overview", "The cluster at a glance: nodes, work, resources, object store, alerts.", BASE, cluster),
    ("nodes", "rayscope-nodes", "Ray / Nodes", "The machine view: hardware per node type, the busiest nodes, every node in a table, and Ray's processes.", BASE + ["RayNodeType", "node"], nodes),
    ("jobs-and-tasks", "rayscope-jobs", "Ray / Jobs and tasks", "Jobs, and tasks by state, name and node: throughput, retries and failures.", BASE, jobs),
    ("actors", "rayscope-actors", "Ray / Actors", "Actors by state and class, busy and idle, restarts and placement time; placement groups.", BASE, actors),
    ("object-store-and-memory", "rayscope-objects", "Ray / Object store and memory", "Plasma stores, spilling, transfers, node memory, logical memory and OOM kills.", BASE + ["node"], objects),
    ("scheduler-and-autoscaler", "rayscope-scheduler", "Ray / Scheduler and autoscaler", "Lease queues, placement latency, spillback, worker starts; the autoscaler's nodes, launches and failures.", BASE, scheduler),
    ("alerts", "rayscope-alerts", "Ray / Alerts", "Active alerts with their summaries and runbooks (from Alertmanager), Prometheus' rules, and the notifications rayscope received from Alertmanager.", ["alertmanager"] + BASE, alerts),
    ("flow", "rayscope-flow", "Ray / Flow", "rayscope only: Flow Insight's call graph as metrics: call rates and latencies per caller → callee edge (rayscope_flow_*). The /flow page shows the graph itself.", BASE, flow),
]


def main():
    # An output directory may be given (the tests regenerate into a temporary one and
    # compare); by default the files next to this script are rewritten.
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "dashboards")
    os.makedirs(out_dir, exist_ok=True)
    for file, uid, title, description, names, build in DASHBOARDS:
        with open(os.path.join(out_dir, file + ".json"), "w") as f:
            json.dump(dashboard(uid, title, description, names, build), f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
