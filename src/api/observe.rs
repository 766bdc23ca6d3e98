//! Observe mode's own endpoints: where Ray's Event Export posts (`POST
//! /api/observe/events`), and what the observer says of its work (`GET /api/observe`).
//!
//! Owns: answering a pushed batch (200 with what was taken, 400 naming what is wrong
//! with it, 413 past [`PUSH_MAX_BODY_BYTES`], 503 with `Retry-After` while the observer
//! is behind, which Ray's agent retries), and 404 for both when rayscope runs the model.
//! Must never: parse a batch on an async worker (it goes to `spawn_blocking`), or
//! change anything but the observer's store (through its bounded queue).

use super::app::AppState;
use super::error::{internal, json_ok, ApiError, Body};
use crate::observe::push::Refused;
use axum::extract::State;
use axum::http::StatusCode;
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

/// `POST /api/observe/events`: one batch of Ray's exported events (a JSON array).
pub(crate) async fn receive(State(app): State<AppState>, Body(body): Body) -> Result<Response, ApiError> {
    let Some(inbox) = app.observe_inbox.clone() else {
        if app.observing {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "rayscope is showing a recorded trace (rayscope observe --trace): it takes no events",
            ));
        }
        return Err(not_observing());
    };
    let taken = tokio::task::spawn_blocking(move || inbox.accept(&body)).await.map_err(internal)?;
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
