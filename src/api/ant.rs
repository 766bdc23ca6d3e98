//! Ant `flow-insight`'s query endpoints, as its frontend (`frontend/src/services/api.ts`)
//! calls them: `/get_call_graph_data`, `/get_flame_graph_data`, `/get_physical_view_data`,
//! `/get_context`, `/get_resource_usage`, `/get_flow_creation_time` and
//! `/list_snapshots`, in its `{result, msg, data}` envelope. `flow_id` is the job id.
//!
//! Owns: their query parameters (unknown ones are a 400 naming them; `end_time` is
//! integer ms of virtual time), answering a flow it has no records of as Ant's server
//! does (200, `result: true`, empty data: a frontend pointed at the wrong flow shows an
//! empty graph, not an error), and the answers that rayscope has nothing to put in:
//! contexts and per-method resource usage are what a program posts to Ant itself
//! (none here), and every instant is a snapshot here, so none is listed.
//! Must never: compute a view on an async worker or the engine thread, or copy the
//! records (views read the snapshot's `Arc`s in place).

use super::app::AppState;
use super::error::{internal, ApiError};
use super::flow::{estimate, instant};
use crate::flow;
use axum::extract::{RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// One of Ant's query endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AntView {
    CallGraph,
    FlameGraph,
    Physical,
    Context,
    ResourceUsage,
    CreationTime,
    Snapshots,
}

impl AntView {
    fn done(self) -> &'static str {
        match self {
            AntView::CallGraph => "Call graph data retrieved successfully.",
            AntView::FlameGraph => "Flame graph data retrieved successfully.",
            AntView::Physical => "Physical view data retrieved successfully.",
            AntView::Context => "Context retrieved successfully.",
            AntView::ResourceUsage => "Resource usage retrieved successfully.",
            AntView::CreationTime => "Flow creation time retrieved successfully.",
            AntView::Snapshots => "Snapshots retrieved successfully.",
        }
    }

    /// Whether it takes `end_time` (the views as of an instant).
    fn timed(self) -> bool {
        !matches!(self, AntView::CreationTime | AntView::Snapshots)
    }
}

pub(crate) async fn call_graph(state: State<AppState>, RawQuery(raw): RawQuery) -> Response {
    answer(state, AntView::CallGraph, raw).await
}
pub(crate) async fn flame_graph(state: State<AppState>, RawQuery(raw): RawQuery) -> Response {
    answer(state, AntView::FlameGraph, raw).await
}
pub(crate) async fn physical(state: State<AppState>, RawQuery(raw): RawQuery) -> Response {
    answer(state, AntView::Physical, raw).await
}
pub(crate) async fn context(state: State<AppState>, RawQuery(raw): RawQuery) -> Response {
    answer(state, AntView::Context, raw).await
}
pub(crate) async fn resource_usage(state: State<AppState>, RawQuery(raw): RawQuery) -> Response {
    answer(state, AntView::ResourceUsage, raw).await
}
pub(crate) async fn creation_time(state: State<AppState>, RawQuery(raw): RawQuery) -> Response {
    answer(state, AntView::CreationTime, raw).await
}
pub(crate) async fn snapshots(state: State<AppState>, RawQuery(raw): RawQuery) -> Response {
    answer(state, AntView::Snapshots, raw).await
}

/// The envelope around the view's JSON text, written as it is.
async fn answer(State(app): State<AppState>, which: AntView, raw: Option<String>) -> Response {
    match data(app, which, raw).await {
        Ok(data) => {
            let msg = serde_json::to_string(which.done()).unwrap_or_default();
            let mut body = Vec::with_capacity(data.len() + msg.len() + 40);
            body.extend_from_slice(b"{\"result\":true,\"msg\":");
            body.extend_from_slice(msg.as_bytes());
            body.extend_from_slice(b",\"data\":");
            body.extend_from_slice(&data);
            body.push(b'}');
            ([(header::CONTENT_TYPE, "application/json")], body).into_response()
        }
        Err(e) => {
            let body = json!({"result": false, "msg": e.message, "data": null});
            (e.status, axum::Json(body)).into_response()
        }
    }
}

struct Query {
    flow_id: Option<String>,
    stack_mode: bool,
    end_ms: Option<u64>,
}

fn query(which: AntView, raw: Option<&str>) -> Result<Query, ApiError> {
    let mut q = Query { flow_id: None, stack_mode: false, end_ms: None };
    for (k, v) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
        match k.as_ref() {
            "flow_id" => q.flow_id = Some(v.to_string()),
            "stack_mode" if which == AntView::CallGraph => {
                q.stack_mode = match v.as_ref() {
                    "true" => true,
                    "false" => false,
                    _ => {
                        return Err(ApiError::parameter(
                            "stack_mode",
                            format!("stack_mode must be true or false, got {v:?}"),
                        ))
                    }
                }
            }
            "end_time" if which.timed() => {
                if !v.is_empty() {
                    q.end_ms = Some(v.parse::<u64>().map_err(|_| {
                        ApiError::parameter("end_time", format!("end_time must be integer milliseconds, got {v:?}"))
                    })?)
                }
            }
            other => return Err(ApiError::parameter(other, format!("unknown parameter {other:?}"))),
        }
    }
    Ok(q)
}

async fn data(app: AppState, which: AntView, raw: Option<String>) -> Result<Vec<u8>, ApiError> {
    let q = query(which, raw.as_deref())?;
    let snap = app.handle().snapshot();
    // Ant lists snapshots of every flow when none is named; here there are none to list.
    if which == AntView::Snapshots {
        return Ok(b"[]".to_vec());
    }
    let flow_id = q.flow_id.ok_or_else(|| ApiError::parameter("flow_id", "flow_id is required (a job id)"))?;
    let record = snap.flow.job(&flow_id).cloned();
    let Some(record) = record else {
        // Ant answers a flow it does not know with empty data, and its creation time "now".
        return Ok(match which {
            AntView::CallGraph => flow::ant::call_graph_unknown(),
            AntView::FlameGraph => flow::ant::flame_unknown(),
            AntView::Physical => flow::ant::physical_unknown(&snap.nodes),
            AntView::CreationTime => snap.sim_time_us.as_millis().to_string().into_bytes(),
            AntView::Context | AntView::ResourceUsage | AntView::Snapshots => b"[]".to_vec(),
        });
    };
    match which {
        AntView::Context | AntView::ResourceUsage | AntView::Snapshots => return Ok(b"[]".to_vec()),
        // In ms of virtual time, the unit of `end_time`.
        AntView::CreationTime => return Ok((record.start_us / 1000).to_string().into_bytes()),
        _ => {}
    }
    let (at, _) = instant(&snap, q.end_ms.map(|m| m.saturating_mul(1000)));
    let reserved = app.budget.reserve(estimate(record.recorded_calls), "this Flow Insight view")?;
    let cache = app.clone();
    tokio::task::spawn_blocking(move || {
        let _reserved = reserved;
        let (spans, _) = cache.flow_cache.get(&record, at);
        match which {
            AntView::CallGraph => flow::ant::call_graph(&record, &spans, q.stack_mode),
            AntView::FlameGraph => flow::ant::flame_tree(&record, &spans),
            _ => flow::ant::physical(&record, &spans, &snap.nodes),
        }
    })
    .await
    .map_err(internal)
}
