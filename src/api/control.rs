//! `/api/control/...`: kill and restore nodes, kill actors, change the simulation speed.
//!
//! Each handler checks the token, parses and validates its input in full, then sends
//! one [`Control`] request (or, for the speed, asks the runner) and turns the typed
//! answer into JSON here: the engine's [`ControlOutcome`] into the body, and the kind
//! of its [`ControlError`] into the HTTP status (404 for an unknown node or actor, 409
//! for one already dead or alive, ...; see `error.rs`), with the message as a JSON
//! body. The engine validates again and refuses without changing anything.
//!
//! [`ControlError`]: crate::sim::control::ControlError

use super::app::AppState;
use super::auth::Authorized;
use super::error::{internal, json_ok, parse_json, ApiError, Body};
use super::rows::parse_actor_id;
use crate::sim::control::{Control, ControlError, ControlOutcome};
use axum::extract::{ConnectInfo, Path, State};
use axum::response::Response;
use serde::Deserialize;
use serde_json::json;
use std::future::Future;
use std::net::SocketAddr;

/// Wait for `request`'s answer and log it, applied or refused, with who asked.
async fn send<T>(
    peer: SocketAddr,
    what: String,
    request: impl Future<Output = Result<T, ControlError>>,
) -> Result<T, ApiError> {
    match request.await {
        Ok(outcome) => {
            tracing::info!(%peer, action = %what, "control request applied");
            Ok(outcome)
        }
        Err(e) => {
            let e = ApiError::from(e);
            tracing::info!(%peer, action = %what, status = e.status.as_u16(), error = %e.message, "control request refused");
            Err(e)
        }
    }
}

/// An outcome that answers another request than the one sent: the engine's bug, a 500.
pub(crate) fn unexpected(outcome: ControlOutcome) -> ApiError {
    internal(format!("the engine answered with {outcome:?}, which does not answer the request sent"))
}

/// `POST /api/control/nodes/{ip}/kill`
pub(crate) async fn kill_node(
    _: Authorized,
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(ip): Path<String>,
) -> Result<Response, ApiError> {
    match send(peer, format!("kill node {ip}"), app.control(Control::KillNode { ip })).await? {
        ControlOutcome::NodeKilled { ip, node_id, dead_at_us } => {
            Ok(json_ok(json!({"killed": ip, "node_id": &*node_id, "dead_at_s": dead_at_us as f64 / 1e6})))
        }
        other => Err(unexpected(other)),
    }
}

/// `POST /api/control/nodes/{ip}/restore`
pub(crate) async fn restore_node(
    _: Authorized,
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(ip): Path<String>,
) -> Result<Response, ApiError> {
    match send(peer, format!("restore node {ip}"), app.control(Control::RestoreNode { ip })).await? {
        ControlOutcome::NodeRestored { ip, node_id } => Ok(json_ok(json!({"restored": ip, "node_id": &*node_id}))),
        other => Err(unexpected(other)),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KillActor {
    /// As `ray.kill(actor, no_restart=True)`, the default.
    #[serde(default = "yes")]
    no_restart: bool,
}

fn yes() -> bool {
    true
}

/// `POST /api/control/actors/{id}/kill` with an optional `{"no_restart": bool}`.
pub(crate) async fn kill_actor(
    _: Authorized,
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    Body(body): Body,
) -> Result<Response, ApiError> {
    let req: KillActor = parse_json(&body, Some("{}"))?;
    let actor_id = parse_actor_id(&id).ok_or_else(|| {
        ApiError::parameter(
            "actor_id",
            format!("{id:?} is not an actor id: expected Ray's 32-hex form (as the State API lists it)"),
        )
    })?;
    let request = app.control(Control::KillActor { actor_id, no_restart: req.no_restart });
    match send(peer, format!("kill actor {id}"), request).await? {
        // Answer with the id the client used (the 32-hex form or the short one).
        ControlOutcome::ActorKilled { state, .. } => Ok(json_ok(json!({"actor_id": id, "state": state.as_str()}))),
        other => Err(unexpected(other)),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Speed {
    speed: f64,
}

/// `POST /api/control/speed` with `{"speed": 2.0}`: virtual seconds per wall second.
pub(crate) async fn speed(
    _: Authorized,
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Body(body): Body,
) -> Result<Response, ApiError> {
    let req: Speed = parse_json(&body, None)?;
    if !(req.speed.is_finite() && req.speed > 0.0 && req.speed <= 1e9) {
        return Err(ApiError::field(
            "speed",
            format!("speed must be a number above 0 and at most 1e9, got {}", req.speed),
        ));
    }
    send(peer, format!("set speed {}", req.speed), app.set_speed(req.speed)).await?;
    Ok(json_ok(json!({"speed": req.speed})))
}
