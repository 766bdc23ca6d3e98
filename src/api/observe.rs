//! Observe mode's own endpoints: where Ray's Event Export posts (`POST
//! /api/observe/events`, or `/api/observe/events/NAME` for cluster NAME), and what the
//! observer says of its work and its clusters (`GET /api/observe`).
//!
//! Owns: reading a pushed body under the bounds that hold before it is read (the bytes
//! being read across connections, `push::IN_FLIGHT_BYTES`, and the body deadline) and
//! answering it: 200 with what was taken, 400 naming what is wrong with it, 408 past
//! the deadline, 413 past [`PUSH_MAX_BODY_BYTES`] (declared or chunked), 503 with
//! `Retry-After` while the observer is behind or the bytes in flight are at their cap
//! (Ray's agent retries both), and 404 for both endpoints when rayscope runs the model.
//! Must never: read a body before its bytes are counted, parse a batch on an async
//! worker (it goes to `spawn_blocking`), or change anything but the observer's store
//! (through its bounded queue).

use super::app::AppState;
use super::error::{internal, json_ok, ApiError};
use crate::observe::push::{Inbox, Refused, Reservation};
use axum::body::{Body, HttpBody};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// The largest batch taken: Ray's agent sends at most 1,000 events a batch
/// (`RAY_DASHBOARD_AGGREGATOR_AGENT_MAX_EVENT_SEND_BATCH_SIZE`), a few MB.
pub const PUSH_MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

fn not_observing() -> ApiError {
    ApiError::not_found(
        "rayscope is running its model, not observing a Ray cluster: start `rayscope observe --ray http://HEAD:8265` to receive Ray's events",
    )
}

fn too_large(inbox: &Inbox) -> ApiError {
    inbox.counters.too_large.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("an event batch is at most {PUSH_MAX_BODY_BYTES} bytes; send fewer events a batch"),
    )
    .with("limit_bytes", PUSH_MAX_BODY_BYTES)
}

fn in_flight_full() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "{} bytes of pushed bodies are being read already (the cap across connections); send this one again",
            crate::observe::push::IN_FLIGHT_BYTES
        ),
    )
    .retry_after(1)
}

/// Read a pushed body whole, its bytes counted before they are read, within the
/// inbox's body deadline.
async fn read_body(inbox: &Inbox, headers: &HeaderMap, mut body: Body) -> Result<(Vec<u8>, Reservation), ApiError> {
    let declared =
        headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > PUSH_MAX_BODY_BYTES as u64) {
        return Err(too_large(inbox));
    }
    let mut held = inbox.reserve(declared.unwrap_or(0)).ok_or_else(in_flight_full)?;
    let mut out = Vec::with_capacity(declared.unwrap_or(0) as usize);
    let read = async {
        while let Some(frame) = std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await {
            let frame = frame
                .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, format!("cannot read the request body: {e}")))?;
            let Ok(chunk) = frame.into_data() else { continue };
            if out.len() + chunk.len() > PUSH_MAX_BODY_BYTES {
                return Err(too_large(inbox));
            }
            let need = (out.len() + chunk.len()) as u64;
            if need > held.bytes() && !held.grow(need - held.bytes()) {
                return Err(in_flight_full());
            }
            out.extend_from_slice(&chunk);
        }
        Ok(())
    };
    match tokio::time::timeout(inbox.body_deadline, read).await {
        Ok(Ok(())) => Ok((out, held)),
        Ok(Err(e)) => Err(e),
        Err(_) => {
            inbox.counters.body_timeouts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Err(ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                format!("the body did not arrive whole within {} s", inbox.body_deadline.as_secs_f64()),
            ))
        }
    }
}

/// The cluster a push names: `/api/observe/events/NAME` or `?cluster=NAME`.
#[derive(serde::Deserialize)]
pub(crate) struct PushQuery {
    cluster: Option<String>,
}

/// `POST /api/observe/events/{cluster}`: a batch of the cluster named in the path.
pub(crate) async fn receive_for(
    State(app): State<AppState>,
    Path(cluster): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    take(app, Some(cluster), headers, body).await
}

/// `POST /api/observe/events`: one batch of Ray's exported events (a JSON array); its
/// cluster is `?cluster=NAME`'s, or its events' session's (`clusters.rs`).
pub(crate) async fn receive(
    State(app): State<AppState>,
    Query(q): Query<PushQuery>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    take(app, q.cluster, headers, body).await
}

async fn take(app: AppState, cluster: Option<String>, headers: HeaderMap, body: Body) -> Result<Response, ApiError> {
    let Some(inbox) = app.observe_inbox.clone() else {
        if app.observing {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "rayscope is showing a recorded trace (rayscope observe --trace): it takes no events",
            ));
        }
        return Err(not_observing());
    };
    if let Some(name) = &cluster {
        // A bad name is refused before the body is read.
        crate::observe::clusters::check_name(name)
            .map_err(|why| ApiError::new(StatusCode::BAD_REQUEST, why.to_string()).with("parameter", "cluster"))?;
    }
    let (body, held) = read_body(&inbox, &headers, body).await?;
    let taken = tokio::task::spawn_blocking(move || {
        let taken = inbox.accept(&body, cluster.as_deref());
        drop((body, held));
        taken
    })
    .await
    .map_err(internal)?;
    match taken {
        Ok(a) => Ok(json_ok(json!({
            "events": a.events, "records": a.records, "ignored": a.ignored, "refused": a.refused, "errors": a.errors,
        }))),
        Err(Refused::Malformed(why)) => Err(ApiError::new(StatusCode::BAD_REQUEST, why.to_string())),
        Err(Refused::Busy) => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the observer is behind on earlier batches; send this one again",
        )
        .retry_after(1)),
        Err(Refused::Cluster { status, why }) => {
            Err(ApiError::new(StatusCode::from_u16(status).unwrap_or(StatusCode::CONFLICT), why))
        }
    }
}

/// `GET /api/observe`: the observer's counters (where it reads, polls, events, trace)
/// for the cluster asked (`?cluster=NAME`, else the first), and the list of clusters.
pub(crate) async fn status(State(app): State<AppState>) -> Result<Response, ApiError> {
    let snap = app.handle().snapshot();
    let Some(view) = snap.observed.as_ref() else { return Err(not_observing()) };
    let mut body = serde_json::to_value(&**view).map_err(internal)?;
    let one = |name: &str, s: &crate::snapshot::Snapshot| {
        let v = s.observed.as_deref();
        json!({
            "name": name,
            "mode": v.map_or("", |v| v.mode),
            "source": v.map_or("", |v| v.source.as_str()),
            "session_name": s.session_name,
            "jobs_held": v.map_or(0, |v| v.jobs_held),
            "tasks_held": v.map_or(0, |v| v.tasks_held),
            "events_received": v.map_or(0, |v| v.events_received),
        })
    };
    let (list, max, refused) = match &app.clusters {
        Some(c) => (c.all().iter().map(|c| one(&c.name, &c.handle.snapshot())).collect(), c.max(), c.refused()),
        None => (vec![one(&view.cluster, &snap)], 1, 0),
    };
    body["clusters"] = json!(list);
    body["max_clusters"] = json!(max);
    body["clusters_refused"] = json!(refused);
    Ok((StatusCode::OK, json_ok(body)).into_response())
}
