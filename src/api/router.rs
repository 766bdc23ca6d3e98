//! The route table (the built-in pages' routes come from `pages`), health checks, and
//! the layers every request passes: the body-size limit, the request log, and
//! `X-Content-Type-Options: nosniff` on every answer (so a browser never reads a JSON
//! or text answer as HTML or script).
//!
//! Read-only endpoints are open (safe to expose); every endpoint that changes state
//! takes an `Authorized` argument (see `auth`). Bodies over
//! [`MAX_BODY_BYTES`] are refused with 413 before any handler
//! runs when the request declares its length, and while reading otherwise.

use super::app::AppState;
use super::error::{json_ok, no_route, too_large};
use super::{
    alerts, ant, cluster_events, control, exposition, flow, job_logs, jobs, observe, pages, runbooks, sd,
    seed_dashboard, state_api, stream, MAX_BODY_BYTES,
};
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::json;
use std::time::Instant;

pub(crate) fn build(app: AppState) -> Router {
    Router::new()
        .route("/-/healthy", get(healthy))
        .route("/-/ready", get(ready))
        .route("/metrics", get(exposition::all))
        .route("/metrics/nodes/{ip}", get(exposition::node))
        .route("/sd", get(sd::targets))
        .route("/runbooks", get(runbooks::page))
        .route("/api/version", get(jobs::version))
        .route("/api/v0/{resource}", get(state_api::list_resource))
        .route("/api/v0/tasks/summarize", get(state_api::summarize_tasks))
        .route("/api/v0/actors/summarize", get(state_api::summarize_actors))
        .route("/api/v0/objects/summarize", get(state_api::summarize_objects))
        .route("/api/cluster", get(seed_dashboard::cluster))
        .route("/api/nodes", get(seed_dashboard::nodes))
        .route("/api/tasks", get(seed_dashboard::tasks))
        .route("/api/actors", get(seed_dashboard::actors))
        .route("/api/memory", get(seed_dashboard::memory))
        .route("/api/metrics", get(seed_dashboard::metrics))
        .route("/api/metrics/history", get(seed_dashboard::metrics_history))
        .route("/api/events", get(seed_dashboard::events))
        .route("/api/cluster_events", get(cluster_events::list))
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
        .route("/api/observe", get(observe::status))
        .route("/api/observe/events", post(observe::receive).layer(DefaultBodyLimit::max(observe::PUSH_MAX_BODY_BYTES)))
        .route(
            "/api/observe/events/{cluster}",
            post(observe::receive_for).layer(DefaultBodyLimit::max(observe::PUSH_MAX_BODY_BYTES)),
        )
        .route("/api/flow/jobs", get(flow::jobs))
        .route("/api/flow/{view}", get(flow::view))
        .route("/get_call_graph_data", get(ant::call_graph))
        .route("/get_flame_graph_data", get(ant::flame_graph))
        .route("/get_physical_view_data", get(ant::physical))
        .route("/get_context", get(ant::context))
        .route("/get_resource_usage", get(ant::resource_usage))
        .route("/get_flow_creation_time", get(ant::creation_time))
        .route("/list_snapshots", get(ant::snapshots))
        .merge(pages::routes())
        .fallback(no_route)
        .layer(middleware::from_fn_with_state(app.clone(), pick_cluster))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn(limit_and_log))
        .with_state(app)
}

/// The header that says which observed cluster answered.
pub(crate) const CLUSTER_HEADER: &str = "x-rayscope-cluster";

/// Observe mode: the cluster a request reads, `?cluster=NAME` (else the first
/// observed); a bad or unknown name is a 400 or 404 naming the clusters there are. A
/// push names the cluster it is for (it may start one), so its routes read the
/// parameter themselves. Running the model, the parameter means nothing.
async fn pick_cluster(State(app): State<AppState>, mut req: Request, next: Next) -> Response {
    let Some(clusters) = app.clusters.clone() else { return next.run(req).await };
    if req.uri().path().starts_with("/api/observe/events") {
        return next.run(req).await;
    }
    let wanted = req.uri().query().and_then(|q| url_param(q, "cluster")).filter(|c| !c.is_empty());
    if wanted.is_some() {
        // The handlers check their parameters strictly and know nothing of clusters.
        strip_param(&mut req, "cluster");
        req.extensions_mut().insert(super::app::NamedCluster);
    }
    let picked = match wanted {
        None => clusters.first(),
        Some(name) => {
            if let Err(why) = crate::observe::clusters::check_name(&name) {
                return super::error::ApiError::new(StatusCode::BAD_REQUEST, why.to_string())
                    .with("parameter", "cluster")
                    .into_response();
            }
            match clusters.get(&name) {
                Some(c) => c,
                None => {
                    return super::error::ApiError::not_found(format!(
                        "no observed cluster is named {name:?}; the clusters are: {}",
                        clusters.names().join(", ")
                    ))
                    .with("clusters", clusters.names())
                    .into_response()
                }
            }
        }
    };
    let name = header::HeaderValue::from_str(&picked.name).ok();
    let mut response = super::app::with_cluster(super::app::Picked::from(&*picked), next.run(req)).await;
    if let Some(v) = name {
        response.headers_mut().insert(CLUSTER_HEADER, v);
    }
    response
}

/// The request without `key` in its query (the other parameters as sent).
fn strip_param(req: &mut Request, key: &str) {
    let uri = req.uri();
    let Some(query) = uri.query() else { return };
    let kept: Vec<&str> = query
        .split('&')
        .filter(|part| form_urlencoded::parse(part.as_bytes()).next().is_none_or(|(k, _)| k != key))
        .collect();
    let path = uri.path();
    let rebuilt = if kept.is_empty() { path.to_string() } else { format!("{path}?{}", kept.join("&")) };
    let mut parts = uri.clone().into_parts();
    if let Ok(pq) = rebuilt.parse() {
        parts.path_and_query = Some(pq);
        if let Ok(new) = axum::http::Uri::from_parts(parts) {
            *req.uri_mut() = new;
        }
    }
}

/// A query parameter's value, percent-decoded.
fn url_param(query: &str, key: &str) -> Option<String> {
    form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == key).map(|(_, v)| v.into_owned())
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
    // Ray's pushed event batches may be larger than any other body: their handler
    // applies (and counts) its own limit before reading.
    if path != "/api/observe/events" && declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
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
/// An observer whose `--record` trace cannot be written is not ready (503, with why):
/// it would take events and keep no history of them.
async fn ready(State(app): State<AppState>) -> Response {
    let s = app.handle().snapshot();
    // Every observed cluster records: one that cannot makes the whole not ready.
    let all: Vec<_> = match &app.clusters {
        Some(c) => c.all().iter().map(|c| c.handle.snapshot()).collect(),
        None => vec![s.clone()],
    };
    for snap in &all {
        if let Some(o) = snap.observed.as_ref() {
            if let Some(e) = &o.record_error {
                let reason = if all.len() > 1 {
                    format!("recording cluster {} fails: {e}", o.cluster)
                } else {
                    format!("recording fails: {e}")
                };
                let body = json!({"ready": false, "reason": reason, "snapshot_seq": s.seq});
                return (StatusCode::SERVICE_UNAVAILABLE, json_ok(body)).into_response();
            }
        }
    }
    let body = json!({"ready": true, "snapshot_seq": s.seq, "sim_time_seconds": s.sim_time_us.as_secs_f64()});
    (StatusCode::OK, json_ok(body)).into_response()
}
