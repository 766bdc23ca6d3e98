//! Observe mode's own endpoints: where Ray's Event Export posts (`POST
//! /api/observe/events`), and what the observer says of its work (`GET /api/observe`).
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
use axum::extract::State;
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

/// `POST /api/observe/events`: one batch of Ray's exported events (a JSON array).
pub(crate) async fn receive(State(app): State<AppState>, headers: HeaderMap, body: Body) -> Result<Response, ApiError> {
    let Some(inbox) = app.observe_inbox.clone() else {
        if app.observing {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "rayscope is showing a recorded trace (rayscope observe --trace): it takes no events",
            ));
        }
        return Err(not_observing());
    };
    let (body, held) = read_body(&inbox, &headers, body).await?;
    let taken = tokio::task::spawn_blocking(move || {
        let taken = inbox.accept(&body);
        drop((body, held));
        taken
    })
    .await
    .map_err(internal)?;
    match taken {
        Ok(a) => Ok(json_ok(json!({
            "events": a.events, "records": a.records, "ignored": a.ignored, "refused": a.refused, "errors": a.errors,
        }))),
        Err(Refused::Malformed(why)) => Err(ApiError::new(StatusCode::BAD_REQUEST, why)),
        Err(Refused::Busy) => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the observer is behind on earlier batches; send this one again",
        )
        .retry_after(1)),
    }
}

/// `GET /api/observe`: the observer's counters (where it reads, polls, events, trace).
pub(crate) async fn status(State(app): State<AppState>) -> Result<Response, ApiError> {
    let snap = app.handle.snapshot();
    let Some(view) = snap.observed.as_ref() else { return Err(not_observing()) };
    let body = serde_json::to_value(&**view).map_err(internal)?;
    Ok((StatusCode::OK, json_ok(body)).into_response())
}
