//! `/endpoints`: the index of every HTTP endpoint rayscope serves, with the session
//! it is serving and whether control is enabled. It was the landing page before the
//! overview took `/`.
//!
//! Must never: link anywhere but this server.

use super::super::app::App;
use super::escape;
use std::fmt::Write;

/// The index as a page fragment.
pub(super) fn render(app: &App) -> String {
    let s = app.handle().snapshot();
    let control = if app.token.is_some() {
        "enabled (send <code>Authorization: Bearer &lt;token&gt;</code>)"
    } else {
        "disabled: set <code>RAYSCOPE_TOKEN</code> to enable"
    };
    let mut body = String::new();
    let link = |body: &mut String, path: &str, what: &str| {
        let _ = writeln!(body, "<li><a href=\"{path}\"><code>{path}</code></a> {what}</li>");
    };
    let post = |body: &mut String, path: &str, what: &str| {
        let _ = writeln!(body, "<li><code>POST {path}</code> {what}</li>");
    };
    // A real cluster read by `rayscope observe` has no seed, speed or virtual clock.
    let clock = match s.observed {
        Some(_) => format!("an observed cluster, read for {:.0} s", s.sim_time_us.as_secs_f64()),
        None => format!("seed {}, virtual time {:.0} s at speed {}", s.seed, s.sim_time_us.as_secs_f64(), s.speed),
    };
    let _ = write!(
        body,
        "<h1>Endpoints</h1>\n<p class=\"lead\">Session <code>{}</code>, Ray {}, {} nodes, {clock}.</p>\n",
        escape(&s.session_name),
        escape(&s.version),
        s.nodes.len(),
    );
    body.push_str("<div class=\"cols\"><section class=\"card\"><h2>Prometheus</h2><ul class=\"links\">\n");
    link(&mut body, "/metrics", "every node's and the cluster's metrics");
    link(
        &mut body,
        "/sd",
        "HTTP service discovery: one target per alive node (<code>/metrics/nodes/&lt;ip&gt;</code>)",
    );
    body.push_str("</ul><h2>Ray State API</h2><ul class=\"links\">\n");
    for r in ["nodes", "jobs", "actors", "tasks", "objects", "placement_groups"] {
        link(
            &mut body,
            &format!("/api/v0/{r}"),
            "(<code>limit</code>, <code>offset</code>, <code>detail</code>, filters)",
        );
    }
    link(&mut body, "/api/v0/tasks/summarize", "");
    link(&mut body, "/api/v0/actors/summarize", "");
    body.push_str("</ul><h2>Ray Jobs API</h2><ul class=\"links\">\n");
    link(&mut body, "/api/jobs/", "jobs");
    link(&mut body, "/api/version", "");
    post(
        &mut body,
        "/api/jobs/",
        "<code>{\"entrypoint\": \"fan-out --tasks 1000\"}</code> submits a built-in workload",
    );
    post(&mut body, "/api/jobs/&lt;id&gt;/stop", "");
    body.push_str("</ul></section><section class=\"card\"><h2>Dashboard data</h2><ul class=\"links\">\n");
    for (p, w) in [
        ("/api/cluster", "the cluster at a glance"),
        ("/api/nodes", "nodes (<code>limit</code>, <code>offset</code>, <code>state</code>)"),
        ("/api/tasks", "running tasks"),
        ("/api/actors", "actors"),
        ("/api/memory", "memory and object stores"),
        ("/api/metrics", "the latest 5 s aggregate"),
        ("/api/metrics/history", "the last hour of aggregates"),
        ("/api/events", "the GCS event log, newest first (<code>source</code>, <code>search</code>)"),
        (
            "/api/cluster_events",
            "Ray's cluster events, newest first (<code>severity</code>, <code>source_type</code>, <code>search</code>)",
        ),
        ("/api/alerts", "Alertmanager notifications received"),
    ] {
        link(&mut body, p, w);
    }
    body.push_str("<li><code>ws://…/ws/realtime</code> a summary every stream interval</li>\n");
    body.push_str("</ul><h2>Flow Insight</h2><ul class=\"links\">\n");
    link(
        &mut body,
        "/flow",
        "the page: findings (Ray's patterns and anti-patterns), what fixing saves, bottlenecks, call graph, physical view, Gantt, flame graph, stack",
    );
    link(&mut body, "/api/flow/jobs", "jobs with recorded calls");
    for view in [
        "graph",
        "physical",
        "stack",
        "flamegraph.folded",
        "flamegraph.svg",
        "timeline.json",
        "bottlenecks",
        "impact",
        "findings",
    ] {
        let _ = writeln!(
            body,
            "<li><code>/api/flow/{view}?job=ID</code> (<code>at</code>{})</li>",
            match view {
                "graph" => ", <code>level</code>",
                "timeline.json" => ", <code>from</code>, <code>to</code>, <code>limit</code>",
                _ => "",
            }
        );
    }
    body.push_str("<li><code>/get_call_graph_data</code>, <code>/get_flame_graph_data</code>, <code>/get_physical_view_data</code>, <code>/get_context</code>, <code>/get_resource_usage</code>, <code>/get_flow_creation_time</code>, <code>/list_snapshots</code> (<code>?flow_id=ID</code>): Ant's <code>flow-insight</code> shapes</li>\n");
    let _ = writeln!(body, "</ul><h2>Control ({control})</h2><ul class=\"links\">");
    post(&mut body, "/api/control/nodes/&lt;ip&gt;/kill", "");
    post(&mut body, "/api/control/nodes/&lt;ip&gt;/restore", "");
    post(&mut body, "/api/control/actors/&lt;id&gt;/kill", "<code>{\"no_restart\": true}</code>");
    post(&mut body, "/api/control/speed", "<code>{\"speed\": 2.0}</code>");
    post(&mut body, "/api/alerts", "Alertmanager webhook receiver");
    body.push_str(
        "</ul><h2>Health</h2><ul class=\"links\"><li><a href=\"/-/healthy\"><code>/-/healthy</code></a></li>\
         <li><a href=\"/-/ready\"><code>/-/ready</code></a></li></ul></section></div>\n",
    );
    body
}
