//! Jobs, as Ray's GCS job manager and the Jobs API's job manager see them: the
//! programs jobs run (templates: configured jobs, each job mix's choices, definitions
//! submitted through the Jobs API), job mixes' arrivals, starting a job's driver, a
//! job's log, and a job's end (its actors, tasks and groups go with its driver).
//!
//! Owns: [`JobManager`]: the templates, the mixes, the jobs still expected to start
//! and the count of live jobs. The job records live in the model's job table. Must
//! never: run a job's program (the driver is a task like any other, `exec.rs`).

use super::clock::Event;
use super::engine::Engine;
use super::follow::Follow;
use crate::model::*;
use crate::workload::{JobMix, JobTemplate};
use rustc_hash::FxHashMap;

/// Invariant (checked by `check_invariants`): `live` is the number of jobs in the
/// model's table that are not terminal; each mix's choices name templates that exist.
#[derive(Default)]
pub(crate) struct JobManager {
    templates: Vec<JobTemplate>,
    mixes: Vec<JobMix>,
    /// Per mix: (weight, index into `templates`).
    mix_templates: Vec<Vec<(f64, usize)>>,
    /// Workload definitions submitted through the Jobs API, by their YAML, to reuse specs.
    submitted: FxHashMap<String, usize>,
    /// Jobs still expected to start (one-off starts not yet reached, live mixes).
    pending_starts: usize,
    live: usize,
}

impl JobManager {
    /// Add a template; returns its index.
    pub(crate) fn add_template(&mut self, t: JobTemplate) -> usize {
        self.templates.push(t);
        self.templates.len() - 1
    }

    pub(crate) fn template(&self, i: usize) -> &JobTemplate {
        &self.templates[i]
    }

    /// Add a job mix with its templates; returns its index.
    pub(crate) fn add_mix(&mut self, mix: JobMix) -> usize {
        let picks = mix.templates.iter().map(|(w, t)| (*w, self.add_template(t.clone()))).collect();
        self.mix_templates.push(picks);
        self.mixes.push(mix);
        self.mixes.len() - 1
    }

    pub(crate) fn mix(&self, m: usize) -> &JobMix {
        &self.mixes[m]
    }

    /// A mix's choices: (weight, template).
    pub(crate) fn mix_picks(&self, m: usize) -> &[(f64, usize)] {
        &self.mix_templates[m]
    }

    /// The template made earlier for a definition submitted through the Jobs API.
    pub(crate) fn submitted(&self, key: &str) -> Option<usize> {
        self.submitted.get(key).copied()
    }

    pub(crate) fn submitted_count(&self) -> usize {
        self.submitted.len()
    }

    /// Keep a template made for a definition submitted through the Jobs API.
    pub(crate) fn add_submitted(&mut self, key: String, t: JobTemplate) -> usize {
        let idx = self.add_template(t);
        self.submitted.insert(key, idx);
        idx
    }

    /// A job (or a mix) will start later.
    pub(crate) fn expect_start(&mut self) {
        self.pending_starts += 1;
    }

    /// A job (or a mix) expected to start no longer is (it started, or the mix ended).
    pub(crate) fn start_reached(&mut self) {
        self.pending_starts -= 1;
    }

    pub(crate) fn job_started(&mut self) {
        self.live += 1;
    }

    pub(crate) fn job_ended(&mut self) {
        self.live = self.live.saturating_sub(1);
    }

    /// Jobs not ended yet.
    pub(crate) fn live(&self) -> usize {
        self.live
    }

    /// True when every job has ended and none will start.
    pub(crate) fn done(&self) -> bool {
        self.pending_starts == 0 && self.live == 0
    }
}

impl Engine {
    /// Start a job from a template; returns its id.
    pub(crate) fn start_job(&mut self, template: usize, submission_id: Option<String>) -> JobId {
        let id = JobId(self.model.next_job);
        self.model.next_job += 1;
        let t = self.jobs.template(template).clone();
        let driver_id = self.model.alloc_task_id();
        let ret = self.model.alloc_object_id();
        let head = self.node_manager.head();
        let spec = &self.specs[t.driver as usize];
        let mut task = Task::new(driver_id, id, spec.name, TaskType::DriverTask, t.driver, head, self.clock.now)
            .in_state(TaskState::Nil);
        task.node = Some(head);
        task.returns = ret;
        task.started_at = Some(self.clock.now);
        self.model.insert_task(task);
        let submission_id =
            submission_id.unwrap_or_else(|| format!("raysubmit_{:016x}", rand::Rng::random::<u64>(&mut self.rng)));
        let mut job = Job::pending(id, submission_id, driver_id, head, self.clock.now);
        job.name = t.name.clone();
        job.entrypoint = t.entrypoint.clone();
        job.workload = template;
        self.model.jobs.insert(id, job);
        self.jobs.job_started();
        self.cluster_events().job_started(id);
        job_log(&mut self.model, id, format!("Job {} started: {}", id.hex(), t.entrypoint), self.clock.now);
        if !self.model.nodes[head.index()].is_alive() {
            // No head node, no GCS: the driver cannot start.
            self.end_job(id, JobStatus::Failed, "the head node is dead: the driver cannot start");
            return id;
        }
        self.model.set_job_status(id, JobStatus::Running, self.clock.now, "driver running");
        self.raylets.lease_granted(head, driver_id);
        self.model.set_task_state(driver_id, TaskState::Running, self.clock.now);
        self.flow.job_started(&mut self.model, id, driver_id, head, self.clock.now);
        self.follow(Follow::RunProgram(driver_id));
        id
    }

    pub(crate) fn mix_arrival(&mut self, m: usize) {
        let mix = self.jobs.mix(m).clone();
        if mix.until.is_some_and(|u| self.clock.now > u) {
            self.jobs.start_reached();
            return;
        }
        if self.jobs.live() < mix.max_concurrent_jobs as usize {
            let picks = self.jobs.mix_picks(m);
            let total: f64 = picks.iter().map(|(w, _)| *w).sum();
            let mut x = rand::Rng::random::<f64>(&mut self.rng) * total;
            let mut chosen = picks[picks.len() - 1].1;
            for (w, t) in picks {
                if x < *w {
                    chosen = *t;
                    break;
                }
                x -= *w;
            }
            // Beyond cluster.limits.max_live_tasks an arrival is dropped like one over
            // max_concurrent_jobs: the mix goes on, memory stays bounded.
            let live = self.model.tasks.len() as u64;
            if crate::config::limits::admit(&self.cfg.cluster.limits, live, self.jobs.template(chosen).tasks).is_ok() {
                self.start_job(chosen, None);
            } else {
                self.model.counters.jobs_dropped += 1;
            }
        } else {
            self.model.counters.jobs_dropped += 1;
        }
        // Exponential inter-arrival time.
        let u: f64 = rand::Rng::random::<f64>(&mut self.rng);
        let gap = (-(1.0 - u).ln() * mix.mean_interarrival_us).max(1.0) as u64;
        self.clock.schedule_in(gap, Event::MixArrival(m));
    }

    /// A job ends: its actors die (they fate-share with the driver), its groups are removed
    /// and anything still running is cancelled.
    pub(crate) fn end_job(&mut self, job: JobId, status: JobStatus, message: &str) {
        if self.model.jobs.get(&job).is_none_or(|j| j.status().is_terminal()) {
            return;
        }
        self.jobs.job_ended();
        job_log(&mut self.model, job, format!("Job {} {}: {}", job.hex(), status.as_str(), message), self.clock.now);
        self.model.set_job_status(job, status, self.clock.now, message);
        self.cluster_events().job_ended(job);
        let mut actors: Vec<ActorId> = self
            .model
            .actors
            .values()
            .filter(|a| a.job == job && a.state() != ActorState::Dead)
            .map(|a| a.id)
            .collect();
        actors.sort();
        for a in actors {
            self.follow(Follow::ActorDied(a, "job finished: the driver exited".into(), false));
        }
        let mut tasks: Vec<TaskId> = self.model.tasks.values().filter(|t| t.job == job).map(|t| t.id).collect();
        tasks.sort();
        for t in tasks {
            self.follow(Follow::FailTask(t, ErrorType::JobStopped, false));
        }
        let pgs: Vec<PgId> =
            self.model.pgs.values().filter(|p| p.job == job && p.state() != PgState::Removed).map(|p| p.id).collect();
        for pg in pgs {
            self.follow(Follow::RemovePlacementGroup(pg));
        }
        if let Some(d) = self.model.jobs.get(&job).map(|j| j.driver) {
            // The driver of a stopped job may still hold futures.
            self.follow(Follow::ReleaseTaskRefs(d, true));
        }
    }
}

/// Append a line to a job's log (bounded).
fn job_log(m: &mut Model, job: JobId, line: String, now: u64) {
    if let Some(j) = m.jobs.get_mut(&job) {
        if j.log.len() >= 1000 {
            j.log.remove(0);
        }
        j.log.push(format!("[{:.3}s] {line}", now as f64 / 1e6));
        j.log_total += 1;
    }
}
