//! Jobs, as Ray's GCS job manager and the Jobs API's job manager see them: the
//! programs jobs run (templates: configured jobs, each job mix's choices, definitions
//! submitted through the Jobs API), job mixes' arrivals, starting a job's driver, a
//! job's log, and a job's end (its actors, tasks and groups go with its driver).
//!
//! Owns: [`JobManager`]: the templates, the mixes, the jobs still expected to start
//! and the count of live jobs. The job records live in the model's job table, which
//! only this manager changes ([`Key`]; besides the model's own transitions). Must
//! never: run a job's program (the driver is a task like any other, `exec.rs`).

use crate::model::*;
use crate::sim::clock::Event;
use crate::sim::core_worker::task_runs::Run;
use crate::sim::flow_recorder::FlowRecorder;
use crate::sim::follow::{Cx, Follow, Follows};
use crate::workload::{JobMix, JobTemplate};
use rustc_hash::FxHashMap;
use smallvec::smallvec;

/// The key to `Model::jobs_mut`: only this file can make one, so the jobs change only
/// here (and through the model's transitions).
pub struct Key(());

const KEY: Key = Key(());

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

impl JobManager {
    /// Start a job from a template with its driver on `head`; returns its id and what
    /// follows (the driver's program runs, or the job fails when the head is dead).
    pub(crate) fn start(
        &mut self,
        cx: &mut Cx,
        flow: &mut FlowRecorder,
        head: NodeIdx,
        template: usize,
        submission_id: Option<String>,
    ) -> (JobId, Follows) {
        let now = cx.now();
        let m = &mut *cx.model;
        let id = JobId(m.next_job);
        m.next_job += 1;
        let t = self.template(template).clone();
        let driver_id = m.alloc_task_id();
        let ret = m.alloc_object_id();
        let spec = &cx.specs[t.driver as usize];
        let mut task =
            Task::new(driver_id, id, spec.name, TaskType::DriverTask, t.driver, head, now).in_state(TaskState::Nil);
        task.node = Some(head).into();
        task.returns = ret;
        task.started_at = Some(now).into();
        cx.runs.insert_task(m, task, Run::default());
        let submission_id =
            submission_id.unwrap_or_else(|| format!("raysubmit_{:016x}", rand::Rng::random::<u64>(cx.rng)));
        let mut job = Job::pending(id, submission_id, driver_id, head, now);
        job.name = t.name.clone();
        job.entrypoint = t.entrypoint.clone();
        job.workload = template;
        m.jobs_mut(&KEY).insert(id, job);
        self.job_started();
        cx.cluster_events().job_started(id);
        job_log(cx.model, id, format!("Job {} started: {}", id.hex(), t.entrypoint), now);
        if !cx.model.nodes()[head.index()].is_alive() {
            // No head node, no GCS: the driver cannot start.
            let follows = self.end(cx, id, JobStatus::Failed, "the head node is dead: the driver cannot start");
            return (id, follows);
        }
        cx.model.set_job_status(id, JobStatus::Running, now, "driver running");
        cx.raylets.lease_granted(head, driver_id, cx.model);
        cx.model.set_task_state(driver_id, TaskState::Running, now);
        flow.job_started(cx.model, cx.runs, id, driver_id, head, now);
        (id, smallvec![Follow::RunProgram(driver_id)])
    }

    /// A job mix's next arrival: a job starts unless the mix is over, full, or the
    /// cluster is at its live-task limit. The next arrival is drawn once the started
    /// driver has run ([`Follow::NextArrival`]), as the RNG's order requires.
    pub(crate) fn arrival(&mut self, cx: &mut Cx, flow: &mut FlowRecorder, head: NodeIdx, m: usize) -> Follows {
        let mix = &self.mixes[m];
        if mix.until.is_some_and(|u| cx.now() > u) {
            self.start_reached();
            return Follows::new();
        }
        if self.live() >= mix.max_concurrent_jobs as usize {
            cx.model.counters.jobs_dropped += 1;
            return smallvec![Follow::NextArrival(m)];
        }
        let picks = self.mix_picks(m);
        let total: f64 = picks.iter().map(|(w, _)| *w).sum();
        let mut x = rand::Rng::random::<f64>(cx.rng) * total;
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
        let live = cx.model.tasks.len() as u64;
        if crate::config::limits::admit(&cx.cfg.cluster.limits, live, self.template(chosen).tasks).is_err() {
            cx.model.counters.jobs_dropped += 1;
            return smallvec![Follow::NextArrival(m)];
        }
        let (_, mut follows) = self.start(cx, flow, head, chosen, None);
        follows.push(Follow::NextArrival(m));
        follows
    }

    /// Schedule a mix's next arrival after an exponential inter-arrival time.
    pub(crate) fn next_arrival(&self, cx: &mut Cx, m: usize) {
        let u: f64 = rand::Rng::random::<f64>(cx.rng);
        let gap = (-(1.0 - u).ln() * self.mixes[m].mean_interarrival_us).max(1.0) as u64;
        cx.clock.schedule_in(gap, Event::MixArrival(m));
    }

    /// A job ends: its actors die (they fate-share with the driver), then
    /// ([`Follow::EndJobTasks`]) what it still runs is cancelled and its groups removed.
    pub(crate) fn end(&mut self, cx: &mut Cx, job: JobId, status: JobStatus, message: &str) -> Follows {
        if cx.model.jobs().get(&job).is_none_or(|j| j.status().is_terminal()) {
            return Follows::new();
        }
        let now = cx.now();
        self.job_ended();
        job_log(cx.model, job, format!("Job {} {}: {}", job.hex(), status.as_str(), message), now);
        cx.model.set_job_status(job, status, now, message);
        cx.cluster_events().job_ended(job);
        let mut actors: Vec<ActorId> = cx
            .model
            .actors()
            .values()
            .filter(|a| a.job == job && a.state() != ActorState::Dead)
            .map(|a| a.id)
            .collect();
        actors.sort();
        let mut follows: Follows =
            actors.into_iter().map(|a| Follow::ActorDied(a, "job finished: the driver exited".into(), false)).collect();
        follows.push(Follow::EndJobTasks(job));
        follows
    }

    /// The ended job's tasks fail (read once its actors are dead), then its groups go
    /// and the driver's references are dropped (a stopped driver may still hold futures).
    pub(crate) fn end_tasks(m: &Model, job: JobId) -> Follows {
        let mut tasks: Vec<TaskId> = m.tasks.values().filter(|t| t.job == job).map(|t| t.id).collect();
        tasks.sort();
        let mut follows: Follows =
            tasks.into_iter().map(|t| Follow::FailTask(t, ErrorType::JobStopped, false)).collect();
        follows.push(Follow::EndJobGroups(job));
        follows
    }

    /// The ended job's placement groups are removed (read once its tasks failed), then
    /// the driver drops its references.
    pub(crate) fn end_groups(m: &Model, job: JobId) -> Follows {
        let mut follows: Follows = m
            .pgs()
            .values()
            .filter(|p| p.job == job && p.state() != PgState::Removed)
            .map(|p| Follow::RemovePlacementGroup(p.id))
            .collect();
        if let Some(d) = m.jobs().get(&job).map(|j| j.driver) {
            follows.push(Follow::ReleaseTaskRefs(d, true));
        }
        follows
    }
}

/// Append a line to a job's log (bounded).
fn job_log(m: &mut Model, job: JobId, line: String, now: u64) {
    if let Some(j) = m.jobs_mut(&KEY).get_mut(&job) {
        if j.log.len() >= 1000 {
            j.log.remove(0);
        }
        j.log.push(format!("[{:.3}s] {line}", now as f64 / 1e6));
        j.log_total += 1;
    }
}
