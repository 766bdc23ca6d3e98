//! Control requests: what the API may ask of the engine. Each is validated in full
//! before anything changes, so a rejected request leaves the model untouched.
//! Answers are typed both ways: what an applied request did ([`ControlOutcome`]) and
//! why one was refused ([`ControlError`], by kind). What either looks like over HTTP
//! (status, JSON body) is the API's business, not the engine's.
//!
//! A speed change is not here: the pace belongs to the serve runner
//! (`runner.rs`, `EngineHandle::set_speed`), which never asks the engine.

use super::engine::Engine;
use super::follow::{cx, Follow};
use super::gcs::node_manager::GcsNodeManager;
use crate::config::WorkloadConfig;
use crate::model::*;
use std::sync::Arc;

/// A request to change the simulation.
#[derive(Debug)]
pub enum Control {
    KillNode {
        ip: String,
    },
    RestoreNode {
        ip: String,
    },
    KillActor {
        actor_id: u64,
        no_restart: bool,
    },
    SubmitJob {
        workload: Box<WorkloadConfig>,
        entrypoint: String,
        submission_id: Option<String>,
    },
    StopJob {
        id: String,
    },
    /// Forget a job that has ended (Ray's `DELETE /api/jobs/<id>`).
    DeleteJob {
        id: String,
    },
}

/// What an applied control request did, one variant per request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlOutcome {
    /// The node at `ip` is dead now.
    /// `dead_at_us`: when the GCS marks it dead (virtual time; now for the head).
    NodeKilled { ip: String, node_id: Arc<str>, dead_at_us: u64 },
    /// A new raylet (a new node id) joined at `ip`.
    NodeRestored { ip: String, node_id: Arc<str> },
    /// The actor was killed; `state` is where that left it (`Restarting` when it may
    /// restart, else `Dead`).
    ActorKilled { actor_id: ActorId, state: ActorState },
    /// The job started; `submission_id` is the one asked for or the one given.
    JobSubmitted { job_id: JobId, submission_id: String },
    /// `stopped` is false when the job had already ended (nothing changed).
    JobStopped { stopped: bool },
    /// The ended job's record is gone.
    JobDeleted,
}

/// Why a control request was refused, by kind; the API decides what each kind means
/// on the wire (HTTP status and JSON body). Every message names what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControlError {
    /// What the request names does not exist (a node, actor or job, an IP no node
    /// type's range holds).
    #[error("{message}")]
    NotFound { message: String },
    /// The request cannot be carried out as asked, whatever the state (a speed that is
    /// not positive, a job_mix as one job, deleting a job that has not ended).
    #[error("{message}")]
    Invalid { message: String },
    /// The request contradicts the current state (a node already dead or alive, an
    /// actor already dead, a submission id already taken).
    #[error("{message}")]
    Conflict { message: String },
    /// Carrying it out would pass a configured bound (`cluster.limits`, the number of
    /// distinct submitted workloads).
    #[error("{message}")]
    LimitExceeded { message: String },
    /// The engine thread has stopped; nothing can be applied any more.
    #[error("the simulation engine has stopped")]
    EngineStopped,
}

impl ControlError {
    pub fn not_found(message: impl Into<String>) -> ControlError {
        ControlError::NotFound { message: message.into() }
    }
    pub fn invalid(message: impl Into<String>) -> ControlError {
        ControlError::Invalid { message: message.into() }
    }
    pub fn conflict(message: impl Into<String>) -> ControlError {
        ControlError::Conflict { message: message.into() }
    }
    pub fn limit_exceeded(message: impl Into<String>) -> ControlError {
        ControlError::LimitExceeded { message: message.into() }
    }
}

/// Distinct submitted workload definitions kept (each adds call specs to the registry).
const MAX_SUBMITTED_TEMPLATES: usize = 1_000;

impl Engine {
    /// Apply a control request, or refuse it and change nothing.
    pub fn apply(&mut self, c: Control) -> Result<ControlOutcome, ControlError> {
        match c {
            Control::KillNode { ip } => {
                let n = alive_node_at(&self.node_manager, &self.model, &ip)?;
                if let Some(at) = self.model.node(n).crashed_at {
                    return Err(ControlError::conflict(format!(
                        "node {ip} already crashed (at {:.3} s); the GCS marks it dead once its health checks fail",
                        at as f64 / 1e6
                    )));
                }
                self.follow(Follow::CrashNode(n, "killed through the control API"));
                // The head dies at once; any other node when its crash is noticed.
                let node = self.model.node(n);
                let crashed = node.crashed_at.unwrap_or(self.clock.now);
                let dead_at =
                    node.died_at.unwrap_or_else(|| self.cfg.cluster.health_check.dead_at(node.started_at, crashed));
                Ok(ControlOutcome::NodeKilled { node_id: node.node_id.clone(), ip, dead_at_us: dead_at })
            }
            Control::RestoreNode { ip } => {
                if let Ok(n) = alive_node_at(&self.node_manager, &self.model, &ip) {
                    if self.model.node(n).crashed_at.is_some() {
                        return Err(ControlError::conflict(format!(
                            "node {ip} crashed and the GCS has not marked it dead yet: restore it after that"
                        )));
                    }
                    return Err(ControlError::conflict(format!("node {ip} is already alive")));
                }
                match self.node_manager.returning_type(&self.model, &self.cfg.cluster, &ip) {
                    Some(node_type) => {
                        let n = self.add_node(node_type, ip.clone());
                        Ok(ControlOutcome::NodeRestored { node_id: self.model.node(n).node_id.clone(), ip })
                    }
                    None => {
                        Err(ControlError::not_found(format!("no node type's ip_range (nor the head) contains {ip}")))
                    }
                }
            }
            Control::KillActor { actor_id, no_restart } => {
                let a = ActorId(actor_id);
                match self.model.actors().get(&a) {
                    None => Err(ControlError::not_found(format!("no actor with id {actor_id:x}"))),
                    Some(x) if x.state() == ActorState::Dead => {
                        Err(ControlError::conflict(format!("actor {actor_id:x} is already dead")))
                    }
                    Some(_) => {
                        self.follow(Follow::ActorDied(
                            a,
                            "killed by ray.kill through the control API".into(),
                            !no_restart,
                        ));
                        let state = self.model.actors().get(&a).map_or(ActorState::Dead, |x| x.state());
                        Ok(ControlOutcome::ActorKilled { actor_id: a, state })
                    }
                }
            }
            Control::SubmitJob { workload, entrypoint, submission_id } => {
                if let Some(sid) = &submission_id {
                    if self.model.jobs().values().any(|j| &j.submission_id == sid) {
                        return Err(ControlError::conflict(format!("a job with submission_id {sid:?} already exists")));
                    }
                }
                if matches!(*workload, WorkloadConfig::JobMix(_)) {
                    return Err(ControlError::invalid("a job_mix cannot be submitted as one job"));
                }
                let key = serde_yaml::to_string(&workload).unwrap_or_default();
                let template = match self.jobs.submitted(&key) {
                    Some(t) => t,
                    None => {
                        if self.jobs.submitted_count() >= MAX_SUBMITTED_TEMPLATES {
                            return Err(ControlError::limit_exceeded(
                                "too many distinct workload definitions submitted; reuse an earlier one",
                            ));
                        }
                        let mut t = crate::workload::template_for(
                            &workload,
                            &mut self.specs,
                            &mut self.model.names,
                            &mut self.model.resource_names,
                        );
                        t.entrypoint = entrypoint;
                        self.jobs.add_submitted(key, t)
                    }
                };
                // The sum of live work must fit, not just this job (cluster.limits).
                let live = self.model.tasks.len() as u64;
                crate::config::limits::admit(&self.cfg.cluster.limits, live, self.jobs.template(template).tasks)
                    .map_err(|e| ControlError::limit_exceeded(e.to_string()))?;
                let (job, follows) =
                    self.jobs.start(cx!(self), &mut self.flow, self.node_manager.head(), template, submission_id);
                self.follow_all(follows);
                let submission_id = self.model.jobs()[&job].submission_id.clone();
                Ok(ControlOutcome::JobSubmitted { job_id: job, submission_id })
            }
            Control::StopJob { id } => {
                let job = find_job(&self.model, &id)
                    .ok_or_else(|| ControlError::not_found(format!("no job with id or submission_id {id:?}")))?;
                if self.model.jobs()[&job].status().is_terminal() {
                    return Ok(ControlOutcome::JobStopped { stopped: false });
                }
                self.follow(Follow::EndJob(job, JobStatus::Stopped, "stopped through the Jobs API".into()));
                Ok(ControlOutcome::JobStopped { stopped: true })
            }
            Control::DeleteJob { id } => {
                let job = find_job(&self.model, &id)
                    .ok_or_else(|| ControlError::not_found(format!("no job with id or submission_id {id:?}")))?;
                let status = self.model.jobs()[&job].status();
                if !status.is_terminal() {
                    // Ray's words: only an ended job's record may go.
                    return Err(ControlError::invalid(format!(
                        "Attempted to delete job '{id}', but it is in a non-terminal state {}.",
                        status.as_str()
                    )));
                }
                self.model.forget_job(job);
                Ok(ControlOutcome::JobDeleted)
            }
        }
    }
}

fn alive_node_at(nodes: &GcsNodeManager, m: &Model, ip: &str) -> Result<NodeIdx, ControlError> {
    match nodes.at(ip) {
        Some(n) if m.node(n).is_alive() => Ok(n),
        Some(_) => Err(ControlError::conflict(format!("node {ip} is already dead"))),
        None => Err(ControlError::not_found(format!("no node with IP {ip}"))),
    }
}

/// A job by hex id (`01000000`) or submission id.
fn find_job(m: &Model, id: &str) -> Option<JobId> {
    m.jobs().values().find(|j| j.id.hex() == id || j.submission_id == id).map(|j| j.id)
}
