//! The route table, the landing page, health checks, and the layers every request
//! passes: the body-size limit, the request log, and `X-Content-Type-Options: nosniff`
//! on every answer (so a browser never reads a JSON or text answer as HTML or script).
//!
//! Read-only endpoints are open (safe to expose); every endpoint that changes state
//! takes an `Authorized` argument (see `auth`). Bodies over
//! [`MAX_BODY_BYTES`] are refused with 413 before any handler
//! runs when the request declares its length, and while reading otherwise.

use super::app::AppState;
use super::error::{json_ok, no_route, too_large};
use super::{alerts, control, exposition, job_logs, jobs, sd, seed, state_api, stream, MAX_BODY_BYTES};
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::json;
use std::time::Instant;

pub(crate) fn build(app: AppState) -> Router {
    Router::new()
        .route("/", get(landing))
        .route("/-/healthy", get(healthy))
        .route("/-/ready", get(ready))
        .route("/metrics", get(exposition::all))
        .route("/metrics/nodes/{ip}", get(exposition::node))
        .route("/sd", get(sd::targets))
        .route("/api/version", get(jobs::version))
        .route("/api/v0/{resource}", get(state_api::list_resource))
        .route("/api/v0/tasks/summarize", get(state_api::summarize_tasks))
        .route("/api/v0/actors/summarize", get(state_api::summarize_actors))
        .route("/api/v0/objects/summarize", get(state_api::summarize_objects))
        .route("/api/cluster", get(seed::cluster))
        .route("/api/nodes", get(seed::nodes))
        .route("/api/tasks", get(seed::tasks))
        .route("/api/actors", get(seed::actors))
        .route("/api/memory", get(seed::memory))
        .route("/api/metrics", get(seed::metrics))
        .route("/api/metrics/history", get(seed::metrics_history))
        .route("/api/events", get(seed::events))
        .route("/api/jobs/", get(jobs::list).post(jobs::submit))
        .route("/api/jobs", get(jobs::list).post(jobs::submit))
        .route("/api/jobs/{id}", get(jobs::get).delete(jobs::delete))
        .route("/api/jobs/{id}/stop", post(jobs::stop))
        .route("/api/jobs/{id}/logs", get(job_logs::logs))
        .route("/api/jobs/{id}/logs/tail", get(job_logs::tail))
        .route("/api/packages/{protocol}/{name}", get(jobs::package_exists).put(jobs::upload_package))
        .route("/api/control/nodes/{ip}/kill", post(control::kill_node))
        .route("/api/control/nodes/{ip}/restore", post(control::restore_node))
        .route("/api/control/actors/{id}/kill", post(control::kill_actor))
        .route("/api/control/speed", post(control::speed))
        .route("/api/alerts", get(alerts::list).post(alerts::receive))
        .route("/ws/realtime", get(stream::upgrade))
        .fallback(no_route)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn(limit_and_log))
        .with_state(app)
}

/// Refuse declared-oversized bodies up front, log every request, mark every answer nosniff.
async fn limit_and_log(req: Request, next: Next) -> Response {
    let mut response = limit_and_log_inner(req, next).await;
    response.headers_mut().insert(header::X_CONTENT_TYPE_OPTIONS, header::HeaderValue::from_static("nosniff"));
    response
}

async fn limit_and_log_inner(req: Request, next: Next) -> Response {
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let declared =
        req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        tracing::info!(%method, %path, status = 413, "request body over the limit");
        return too_large().into_response();
    }
    let started = Instant::now();
    let response = next.run(req).await;
    let status = response.status().as_u16();
    let ms = started.elapsed().as_secs_f64() * 1e3;
    if status >= 500 && status != 503 {
        tracing::warn!(%method, %path, status, ms, "request failed");
    } else if method != Method::GET {
        tracing::info!(%method, %path, status, ms, "request");
    } else {
        tracing::debug!(%method, %path, status, ms, "request");
    }
    response
}

async fn healthy() -> &'static str {
    "OK\n"
}

/// Ready once the engine has published a snapshot (the engine publishes its first
/// before the server starts, so in practice as soon as the port answers).
async fn ready(State(app): State<AppState>) -> Response {
    let s = app.handle.snapshot();
    let body = json!({"ready": true, "snapshot_seq": s.seq, "sim_time_seconds": s.sim_time_us as f64 / 1e6});
    (StatusCode::OK, json_ok(body)).into_response()
}

async fn landing(State(app): State<AppState>) -> Html<String> {
    let s = app.handle.snapshot();
    let control = if app.token.is_some() {
        "enabled (send <code>Authorization: Bearer &lt;token&gt;</code>)"
    } else {
        "disabled: set <code>RAYSCOPE_TOKEN</code> to enable"
    };
    let link = |path: &str, what: &str| format!("<li><a href=\"{path}\"><code>{path}</code></a> {what}</li>\n");
    let post = |path: &str, what: &str| format!("<li><code>POST {path}</code> {what}</li>\n");
    let mut body = String::new();
    body.push_str("<h2>Prometheus</h2><ul>\n");
    body.push_str(&link("/metrics", "every node's and the cluster's metrics"));
    body.push_str(&link(
        "/sd",
        "HTTP service discovery: one target per alive node (<code>/metrics/nodes/&lt;ip&gt;</code>)",
    ));
    body.push_str("</ul><h2>Ray State API</h2><ul>\n");
    for r in ["nodes", "jobs", "actors", "tasks", "objects", "placement_groups"] {
        body.push_str(&link(
            &format!("/api/v0/{r}"),
            "(<code>limit</code>, <code>offset</code>, <code>detail</code>, filters)",
        ));
    }
    body.push_str(&link("/api/v0/tasks/summarize", ""));
    body.push_str(&link("/api/v0/actors/summarize", ""));
    body.push_str("</ul><h2>Ray Jobs API</h2><ul>\n");
    body.push_str(&link("/api/jobs/", "jobs"));
    body.push_str(&link("/api/version", ""));
    body.push_str(&post(
        "/api/jobs/",
        "<code>{\"entrypoint\": \"fan-out --tasks 1000\"}</code> submits a built-in workload",
    ));
    body.push_str(&post("/api/jobs/&lt;id&gt;/stop", ""));
    body.push_str("</ul><h2>Dashboard</h2><ul>\n");
    for (p, w) in [
        ("/api/cluster", "the cluster at a glance"),
        ("/api/nodes", "nodes"),
        ("/api/tasks", "running tasks"),
        ("/api/actors", "actors"),
        ("/api/memory", "memory and object stores"),
        ("/api/metrics", "the latest 5 s aggregate"),
        ("/api/metrics/history", "the last hour of aggregates"),
        ("/api/events", "the GCS event log, newest first"),
        ("/api/alerts", "Alertmanager notifications received"),
    ] {
        body.push_str(&link(p, w));
    }
    body.push_str("<li><code>ws://…/ws/realtime</code> a summary every stream interval</li>\n");
    body.push_str(&format!("</ul><h2>Control ({control})</h2><ul>\n"));
    body.push_str(&post("/api/control/nodes/&lt;ip&gt;/kill", ""));
    body.push_str(&post("/api/control/nodes/&lt;ip&gt;/restore", ""));
    body.push_str(&post("/api/control/actors/&lt;id&gt;/kill", "<code>{\"no_restart\": true}</code>"));
    body.push_str(&post("/api/control/speed", "<code>{\"speed\": 2.0}</code>"));
    body.push_str(&post("/api/alerts", "Alertmanager webhook receiver"));
    body.push_str("</ul><p>Health: <a href=\"/-/healthy\">/-/healthy</a>, <a href=\"/-/ready\">/-/ready</a></p>\n");
    Html(format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>rayscope</title></head><body>\n\
         <h1>rayscope</h1>\n<p>Session <code>{}</code>, Ray {}, seed {}, {} nodes, virtual time {:.0} s at speed {}.</p>\n{body}</body></html>\n",
        html_escape(&s.session_name),
        html_escape(&s.version),
        s.seed,
        s.nodes.len(),
        s.sim_time_us as f64 / 1e6,
        s.speed,
    ))
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
