//! `/api/control/...`: kill and restore nodes, kill actors, change the simulation speed.
//!
//! Each handler checks the token, parses and validates its input in full, then sends
//! one [`Control`] request and answers with the engine's reply. The engine validates
//! again and refuses without changing anything; the kind of its [`ControlError`]
//! becomes the HTTP status (404 for an unknown node or actor, 409 for one already dead
//! or alive, ...; see `error.rs`), with the message as a JSON body.
//!
//! [`ControlError`]: crate::sim::control::ControlError

use super::app::AppState;
use super::auth::Authorized;
use super::error::{json_ok, parse_json, ApiError, Body};
use super::rows::parse_actor_id;
use crate::sim::control::Control;
use axum::extract::{ConnectInfo, Path, State};
use axum::response::Response;
use serde::Deserialize;
use serde_json::Value;
use std::net::SocketAddr;

async fn send(app: &AppState, peer: SocketAddr, what: String, c: Control) -> Result<Value, ApiError> {
    match app.control(c).await {
        Ok(reply) => {
            tracing::info!(%peer, action = %what, "control request applied");
            Ok(reply)
        }
        Err(e) => {
            let e = ApiError::from(e);
            tracing::info!(%peer, action = %what, status = e.status.as_u16(), error = %e.message, "control request refused");
            Err(e)
        }
    }
}

/// `POST /api/control/nodes/{ip}/kill`
pub(crate) async fn kill_node(
    _: Authorized,
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(ip): Path<String>,
) -> Result<Response, ApiError> {
    send(&app, peer, format!("kill node {ip}"), Control::KillNode { ip }).await.map(json_ok)
}

/// `POST /api/control/nodes/{ip}/restore`
pub(crate) async fn restore_node(
    _: Authorized,
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(ip): Path<String>,
) -> Result<Response, ApiError> {
    send(&app, peer, format!("restore node {ip}"), Control::RestoreNode { ip }).await.map(json_ok)
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
    let mut reply =
        send(&app, peer, format!("kill actor {id}"), Control::KillActor { actor_id, no_restart: req.no_restart })
            .await?;
    // The engine names the actor by its short id; answer with the id the client used.
    reply["actor_id"] = Value::String(id);
    Ok(json_ok(reply))
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
    send(&app, peer, format!("set speed {}", req.speed), Control::SetSpeed(req.speed)).await.map(json_ok)
}
