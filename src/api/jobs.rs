//! Ray's Jobs REST API: submit, list, get, stop, logs, and `/api/version`, which Ray's
//! `JobSubmissionClient` (and so `ray job submit --address http://...`) checks first.
//!
//! A submission names a built-in workload in `entrypoint` (see `entrypoint`) or carries
//! workload YAML in `workload`; either is parsed and validated in full before the
//! engine is asked, so a refused submission changes nothing. Ray's own fields
//! (`metadata`, `runtime_env`, `entrypoint_*`) are kept by the API and shown back in
//! `JobDetails`; the engine has no use for them.

use super::app::{AppState, SubmissionMeta, YAML_PARSES};
use super::auth::Authorized;
use super::entrypoint::{parse_entrypoint, parse_workload_yaml, WorkloadError};
use super::error::{json_ok, parse_json, ApiError, Body};
use super::rows::{Ctx, Resource};
use super::state_api::job_extra;
use crate::sim::control::{Control, ControlOutcome};
use crate::snapshot::{JobView, Snapshot, Tables};
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// Ray's `JobSubmitRequest`, plus `workload` (YAML) for custom workloads.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SubmitRequest {
    #[serde(default)]
    entrypoint: Option<String>,
    #[serde(default)]
    submission_id: Option<String>,
    /// Deprecated in Ray in favour of `submission_id`; accepted the same way.
    #[serde(default)]
    job_id: Option<String>,
    #[serde(default)]
    runtime_env: Option<Map<String, Value>>,
    #[serde(default)]
    metadata: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default)]
    entrypoint_num_cpus: Option<f64>,
    #[serde(default)]
    entrypoint_num_gpus: Option<f64>,
    #[serde(default)]
    entrypoint_memory: Option<u64>,
    #[serde(default)]
    entrypoint_resources: Option<std::collections::BTreeMap<String, f64>>,
    #[serde(default)]
    workload: Option<String>,
}

fn workload_error(e: WorkloadError) -> ApiError {
    let mut err = ApiError::field(e.field, e.to_string());
    if let Some(at) = e.at {
        err = err.with("at", at);
    }
    if let Some((l, c)) = e.position {
        err = err.with("line", l).with("column", c);
    }
    if !e.valid.is_empty() {
        err = err.with("valid", e.valid);
    }
    err
}

/// `POST /api/jobs/`
pub(crate) async fn submit(_: Authorized, State(app): State<AppState>, Body(body): Body) -> Result<Response, ApiError> {
    // An observed cluster runs Ray's jobs, not ours: say so before reading the request.
    app.refuse_if_observing()?;
    let req: SubmitRequest = parse_json(&body, None)?;
    let submission_id = req.submission_id.or(req.job_id);
    if let Some(sid) = &submission_id {
        if sid.is_empty() || sid.len() > 256 || sid.chars().any(char::is_control) {
            return Err(ApiError::field("submission_id", "submission_id must be 1 to 256 printable characters"));
        }
    }
    let limits = &app.config.server.limits;
    if let Some(ep) = &req.entrypoint {
        if ep.len() as u64 > limits.job_string_bytes.0 {
            return Err(ApiError::too_large("entrypoint", ep.len(), limits.job_string_bytes.0, "job_string_bytes"));
        }
    }
    let json_len = |v: Option<String>| v.map_or(0, |s| s.len());
    let metadata_len = json_len(req.metadata.as_ref().and_then(|m| serde_json::to_string(m).ok()))
        + json_len(req.runtime_env.as_ref().and_then(|m| serde_json::to_string(m).ok()))
        + json_len(req.entrypoint_resources.as_ref().and_then(|m| serde_json::to_string(m).ok()));
    if metadata_len as u64 > limits.job_metadata_bytes.0 {
        return Err(ApiError::too_large("metadata", metadata_len, limits.job_metadata_bytes.0, "job_metadata_bytes"));
    }
    let cluster = &app.config.cluster;
    let (workload, entrypoint) = match (&req.workload, &req.entrypoint) {
        (Some(yaml), ep) => {
            // Parsing untrusted YAML is CPU work: off the async workers, a few at a time.
            let Ok(_slot) = app.yaml_parses.try_acquire() else {
                return Err(ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("{YAML_PARSES} workloads are being parsed already; retry shortly"),
                )
                .retry_after(1));
            };
            let (yaml, for_cluster) = (yaml.clone(), cluster.clone());
            let w = tokio::task::spawn_blocking(move || parse_workload_yaml(&yaml, &for_cluster))
                .await
                .map_err(super::error::internal)?
                .map_err(workload_error)?;
            let ep = ep.clone().filter(|e| !e.trim().is_empty()).unwrap_or_else(|| format!("workload: {}", w.name()));
            (w, ep)
        }
        (None, Some(ep)) => (parse_entrypoint(ep, cluster).map_err(workload_error)?, ep.trim().to_string()),
        (None, None) => {
            return Err(ApiError::field(
                "entrypoint",
                format!(
                    "missing field `entrypoint`: name a built-in workload ({}) or send workload YAML in `workload`",
                    super::entrypoint::builtin_names().join(", ")
                ),
            ))
        }
    };
    // The job's name becomes a label value on `/metrics`.
    if workload.name().len() as u64 > limits.job_string_bytes.0 {
        let field = if req.workload.is_some() { "workload.name" } else { "entrypoint" };
        return Err(ApiError::too_large(field, workload.name().len(), limits.job_string_bytes.0, "job_string_bytes"));
    }
    let outcome = app
        .control(Control::SubmitJob { workload: Box::new(workload), entrypoint: entrypoint.clone(), submission_id })
        .await?;
    let ControlOutcome::JobSubmitted { job_id, submission_id } = outcome else {
        return Err(super::control::unexpected(outcome));
    };
    let job_id = job_id.hex();
    app.remember_submission(SubmissionMeta {
        submission_id: submission_id.clone(),
        metadata: json!(req.metadata.unwrap_or_default()),
        runtime_env: Value::Object(req.runtime_env.unwrap_or_default()),
        entrypoint_num_cpus: json!(req.entrypoint_num_cpus),
        entrypoint_num_gpus: json!(req.entrypoint_num_gpus),
        entrypoint_memory: json!(req.entrypoint_memory),
        entrypoint_resources: json!(req.entrypoint_resources),
    });
    tracing::info!(submission_id = %submission_id, job_id = %job_id, %entrypoint, "job submitted");
    Ok(json_ok(json!({"submission_id": submission_id, "job_id": job_id})))
}

/// Ray's `JobDetails` for one job.
fn details(app: &AppState, snap: &Snapshot, index: usize) -> Value {
    let empty = Tables::default();
    let extra = |j: &JobView| job_extra(app, j);
    let ctx = Ctx { snap, tables: &empty, epoch_ms_at_zero: app.epoch_zero(), job_extra: &extra };
    let mut v = ctx.row(Resource::Jobs, index, true);
    let meta = app.submission(&snap.jobs[index].submission_id).unwrap_or_default();
    if let Value::Object(m) = &mut v {
        m.insert("entrypoint_num_cpus".into(), meta.entrypoint_num_cpus);
        m.insert("entrypoint_num_gpus".into(), meta.entrypoint_num_gpus);
        m.insert("entrypoint_memory".into(), meta.entrypoint_memory);
        m.insert("entrypoint_resources".into(), meta.entrypoint_resources);
    }
    v
}

fn find(snap: &Snapshot, id: &str) -> Result<usize, ApiError> {
    snap.jobs
        .iter()
        .position(|j| j.submission_id == id || j.id == id)
        .ok_or_else(|| ApiError::not_found(format!("no job with submission_id or job_id {id:?}")))
}

/// `GET /api/jobs/`: the jobs of earlier sessions (with `--state-dir`), then every job
/// the engine keeps, oldest first. Ray's list takes no parameters, so any parameter is a
/// 400 naming it rather than silently ignored.
pub(crate) async fn list(State(app): State<AppState>, RawQuery(raw): RawQuery) -> Result<Response, ApiError> {
    if let Some((name, _)) = form_urlencoded::parse(raw.as_deref().unwrap_or("").as_bytes()).next() {
        return Err(ApiError::parameter(
            &name,
            format!("unknown parameter {name:?}: GET /api/jobs/ takes no parameters"),
        ));
    }
    let snap = app.handle().snapshot();
    let previous = app.state_dir.iter().flat_map(|s| s.jobs.iter().cloned());
    let jobs: Vec<Value> = previous.chain((0..snap.jobs.len()).map(|i| details(&app, &snap, i))).collect();
    Ok(json_ok(Value::Array(jobs)))
}

/// The jobs submitted through this API, for the state directory: those of earlier
/// sessions, then this session's, each with its `session_name`, at most
/// `state_dir::MAX_JOBS` (the newest).
pub(crate) fn all_submitted(app: &AppState) -> Vec<Value> {
    let snap = app.handle().snapshot();
    let current = (0..snap.jobs.len()).filter(|&i| app.submission(&snap.jobs[i].submission_id).is_some()).map(|i| {
        let mut v = details(app, &snap, i);
        v["session_name"] = snap.session_name.clone().into();
        v
    });
    let mut all: Vec<Value> = app.state_dir.iter().flat_map(|s| s.jobs.iter().cloned()).chain(current).collect();
    let excess = all.len().saturating_sub(super::state_dir::MAX_JOBS);
    all.drain(..excess);
    all
}

/// `GET /api/jobs/{id}` (a submission id or a job id; this session's jobs first, then
/// earlier sessions' by submission id).
pub(crate) async fn get(State(app): State<AppState>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let snap = app.handle().snapshot();
    match find(&snap, &id) {
        Ok(i) => Ok(json_ok(details(&app, &snap, i))),
        Err(e) => app
            .state_dir
            .iter()
            .flat_map(|s| s.jobs.iter().rev())
            .find(|j| j["submission_id"] == id.as_str())
            .map(|j| json_ok(j.clone()))
            .ok_or(e),
    }
}

/// `POST /api/jobs/{id}/stop`: `{"stopped": false}` when the job had already ended.
pub(crate) async fn stop(
    _: Authorized,
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    match app.control(Control::StopJob { id: id.clone() }).await? {
        ControlOutcome::JobStopped { stopped } => {
            tracing::info!(job = %id, stopped = %stopped, "job stop requested");
            Ok(json_ok(json!({"stopped": stopped})))
        }
        other => Err(super::control::unexpected(other)),
    }
}

/// `DELETE /api/jobs/{id}`: forget an ended job (Ray refuses a live one).
pub(crate) async fn delete(
    _: Authorized,
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    match app.control(Control::DeleteJob { id: id.clone() }).await? {
        ControlOutcome::JobDeleted => {
            tracing::info!(job = %id, "job deleted");
            Ok(json_ok(json!({"deleted": true})))
        }
        other => Err(super::control::unexpected(other)),
    }
}

/// `GET /api/packages/{protocol}/{name}`: rayscope runs no user code, so it keeps no
/// packages, and Ray's client, told a package is missing, uploads it and goes on.
pub(crate) async fn package_exists(Path((protocol, name)): Path<(String, String)>) -> ApiError {
    ApiError::not_found(format!("Package {protocol}://{name} does not exist"))
}

/// `PUT /api/packages/{protocol}/{name}`: a `--working-dir` or `py_modules` upload.
/// Accepted (within the body limit) and dropped: the simulated job never reads it.
pub(crate) async fn upload_package(
    _: Authorized,
    Path((protocol, name)): Path<(String, String)>,
    Body(body): Body,
) -> Response {
    tracing::info!(package = %format!("{protocol}://{name}"), bytes = body.len(), "package upload accepted and dropped");
    axum::http::StatusCode::OK.into_response()
}

/// `GET /api/version`, as Ray's dashboard answers it (Jobs API version 4).
pub(crate) async fn version(State(app): State<AppState>) -> Response {
    let snap = app.handle().snapshot();
    json_ok(json!({
        "version": "4",
        "ray_version": snap.version,
        "ray_commit": format!("rayscope-{}", env!("CARGO_PKG_VERSION")),
        "session_name": snap.session_name,
    }))
}
