//! Flow Insight recording: the engine's record of every call, per job.
//!
//! Owns: the per-job records (submit/begin/end/put, the waits: arguments, `ray.get`,
//! retries; call targets with the actor's
//! workload attributes, per-edge aggregates), the cap per job (`sim.flow_calls_per_job`:
//! past it calls count only in the aggregates; 0 turns recording off), the number of
//! jobs kept, and
//! publishing an immutable [`Recorded`] for snapshots (sealed chunks shared; a job
//! that did not change since the last publish is shared whole).
//! A call's job-local edge (caller frame → callee frame) and whether it is recorded
//! travel with the task's run (`Run::flow`, `task_runs.rs`), so recording keeps no map
//! of calls in flight: the hooks find them beside the model, which the engine just
//! touched. Must never: change the model or any run beyond `Run::flow`, draw from the
//! RNG or log events
//! (recording must not change the run), or keep anything per call beyond the cap.

use super::core_worker::task_runs::{Run, TaskRuns};
use crate::model::{ActorId, Histogram, JobId, Model, NodeIdx, ObjectStatus, TaskId, TaskType};
use crate::snapshot::flow::{
    Chunked, EdgeAgg, JobRecord, Rec, Recorded, Target, TargetKind, DRIVER_NAME, DURATION_BUCKETS,
};
use crate::workload::CallSpec;
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Jobs whose records are kept; past it the oldest ended job is forgotten.
pub const JOBS_KEPT: usize = 16;

/// The frame key of the driver (no call spec name).
const DRIVER_KEY: u32 = DRIVER_NAME;

/// `Task::flow`: the call's edge index in its job, and this bit when it is recorded.
const RECORDED: u32 = 1 << 31;
/// `Task::flow`: set while a recorded call is blocked in `ray.get`.
const BLOCKED: u32 = 1 << 30;
/// `Task::flow` of a call nobody records.
const UNTRACKED: u32 = u32::MAX;

/// The job-local edge index in a tracked call's `Task::flow`.
fn edge_of(flow: u32) -> u32 {
    flow & !(RECORDED | BLOCKED)
}

/// Whether a call's records are kept.
fn is_recorded(flow: u32) -> bool {
    flow != UNTRACKED && flow & RECORDED != 0
}

struct JobRec {
    rec: JobRecord,
    /// (spec name, actor) → target index.
    target_index: FxHashMap<(u32, u64), u32>,
    /// Spec name (or [`DRIVER_KEY`]) → frame index, and back (frame → name key).
    frame_index: FxHashMap<u32, u32>,
    frame_names: Vec<u32>,
    /// Edge index → (caller frame, callee frame) and its aggregate; edge 0 is the
    /// driver's own (never published).
    edge_keys: Vec<(u32, u32)>,
    edge_index: FxHashMap<(u32, u32), u32>,
    edge_aggs: Vec<EdgeAgg>,
    /// Edge index → its rows in [`Totals`]: (caller name, callee name) and callee name.
    edge_totals: Vec<(u32, u32)>,
    /// What the last publish shared, until the next record.
    published: RefCell<Option<Arc<JobRecord>>>,
}

pub(crate) struct FlowRecorder {
    cap: u64,
    jobs: BTreeMap<u32, JobRec>,
    cache: RefCell<Option<Arc<Recorded>>>,
    /// Metrics over every call of every job (bounded by names squared).
    totals: Totals,
}

/// Calls by (caller name, callee name) and ended calls' durations by callee name, over
/// every job, forgotten ones too. Rows are found once per edge (each edge keeps its
/// two), so a call costs two array updates, not two ordered-map lookups; the maps
/// readers see are built when published.
#[derive(Default)]
struct Totals {
    call_row: FxHashMap<(u32, u32), u32>,
    calls: Vec<((u32, u32), u64)>,
    duration_row: FxHashMap<u32, u32>,
    durations: Vec<(u32, Histogram)>,
}

impl Totals {
    /// The rows of an edge from `caller` to `callee` (frame name keys).
    fn rows(&mut self, caller: u32, callee: u32) -> (u32, u32) {
        let calls = &mut self.calls;
        let c = *self.call_row.entry((caller, callee)).or_insert_with(|| {
            calls.push(((caller, callee), 0));
            (calls.len() - 1) as u32
        });
        let durations = &mut self.durations;
        let d = *self.duration_row.entry(callee).or_insert_with(|| {
            durations.push((callee, Histogram::new(DURATION_BUCKETS)));
            (durations.len() - 1) as u32
        });
        (c, d)
    }

    fn calls_map(&self) -> Arc<BTreeMap<(u32, u32), u64>> {
        Arc::new(self.calls.iter().filter(|(_, n)| *n > 0).copied().collect())
    }

    fn durations_map(&self) -> Arc<BTreeMap<u32, Histogram>> {
        Arc::new(self.durations.iter().filter(|(_, h)| h.count > 0).cloned().collect())
    }
}

impl FlowRecorder {
    pub fn new(cap: u64) -> FlowRecorder {
        FlowRecorder { cap, jobs: BTreeMap::new(), cache: RefCell::new(None), totals: Totals::default() }
    }

    fn touched(&mut self, job: u32) {
        *self.cache.get_mut() = None;
        if let Some(j) = self.jobs.get_mut(&job) {
            *j.published.get_mut() = None;
        }
    }

    /// A job's driver started running on `node`.
    pub(crate) fn job_started(
        &mut self,
        m: &Model,
        runs: &mut TaskRuns,
        job: JobId,
        driver: TaskId,
        node: NodeIdx,
        now: u64,
    ) {
        if self.cap == 0 {
            return;
        }
        let name = m.jobs().get(&job).map(|j| j.name.clone()).unwrap_or_default();
        if self.jobs.len() >= JOBS_KEPT {
            let oldest = self.jobs.iter().find(|(_, j)| j.rec.end_us.is_some()).or_else(|| self.jobs.iter().next());
            if let Some((&k, _)) = oldest {
                self.jobs.remove(&k);
            }
        }
        let mut j = JobRec {
            rec: JobRecord {
                job: job.0,
                job_hex: job.hex(),
                name,
                start_us: now,
                end_us: None,
                driver: driver.0,
                calls: 1,
                recorded_calls: 1,
                records: Chunked::default(),
                targets: Chunked::default(),
                frames: Arc::new(Vec::new()),
                edges: BTreeMap::new(),
                task_ids: Arc::default(),
                inferred: Arc::default(),
                observed: None,
            },
            target_index: FxHashMap::default(),
            frame_index: FxHashMap::default(),
            frame_names: Vec::new(),
            edge_keys: Vec::new(),
            edge_index: FxHashMap::default(),
            edge_aggs: Vec::new(),
            edge_totals: Vec::new(),
            published: RefCell::new(None),
        };
        let frame = j.frame(DRIVER_KEY, "_main");
        j.edge(frame, frame, &mut self.totals);
        j.rec.targets.push(Target {
            kind: TargetKind::Driver,
            class: "_main".into(),
            method: "_main".into(),
            actor: None,
            job: job.0,
            level: 0,
            flag: false,
            frame,
        });
        j.rec.records.push(Rec::Submit { span: driver.0, parent: 0, target: 0, t: now, arg_bytes: 0 });
        j.rec.records.push(Rec::Begin { span: driver.0, t: now, node: node.0, pid: crate::model::driver_pid(job.0) });
        self.jobs.insert(job.0, j);
        if let Some(r) = runs.get_mut(&driver) {
            r.flow = RECORDED;
        }
        self.touched(job.0);
    }

    /// A call was submitted (the task is in the model, not yet started): tag it.
    pub(crate) fn submitted(&mut self, m: &Model, runs: &mut TaskRuns, specs: &[CallSpec], tid: TaskId, now: u64) {
        if self.cap == 0 {
            return;
        }
        let Some(t) = m.tasks.get(&tid) else { return };
        let Some(parent) = t.parent.get().and_then(|p| runs.get(&p)).map(|p| p.flow).filter(|f| *f != UNTRACKED) else {
            return;
        };
        let Some(j) = self.jobs.get_mut(&t.job.0) else { return };
        let arg_bytes: u64 = t.args.iter().filter_map(|a| m.objects.get(a)).map(|o| o.size).sum();
        let spec_name = specs.get(t.spec as usize).map(|s| s.name).unwrap_or(t.name);
        let Some(&(_, caller)) = j.edge_keys.get(edge_of(parent) as usize) else { return };
        let frame = j.frame(spec_name.0, m.names.get(spec_name));
        let edge = j.edge(caller, frame, &mut self.totals);
        let agg = &mut j.edge_aggs[edge as usize];
        agg.calls += 1;
        agg.bytes += arg_bytes;
        j.rec.calls += 1;
        let recorded = parent & RECORDED != 0 && j.rec.recorded_calls < self.cap;
        if recorded {
            j.rec.recorded_calls += 1;
            let actor = match t.kind {
                TaskType::ActorTask | TaskType::ActorCreationTask => t.actor.get(),
                _ => None,
            };
            let target = j.target(m, spec_name.0, actor, frame);
            j.rec.records.push(Rec::Submit {
                span: tid.0,
                parent: parent_span(t.parent.get()),
                target,
                t: now,
                arg_bytes,
            });
            // What it must wait for before it can run: returns of calls not ended yet.
            for o in t.args.iter().filter_map(|a| m.objects.get(a)) {
                if let (ObjectStatus::Pending, Some(on)) = (o.status, o.producer.get()) {
                    j.rec.records.push(Rec::Dep { span: tid.0, on: on.0, t: now });
                }
            }
        }
        self.totals.calls[j.edge_totals[edge as usize].0 as usize].1 += 1;
        let job = t.job.0;
        if let Some(r) = runs.get_mut(&tid) {
            r.flow = edge | if recorded { RECORDED } else { 0 };
        }
        self.touched(job);
    }

    /// An attempt started executing on `node`.
    pub(crate) fn started(&mut self, m: &Model, runs: &TaskRuns, tid: TaskId, node: NodeIdx, now: u64) {
        // The tag first: most calls are not recorded, and need no look at the task.
        if !runs.get(&tid).is_some_and(|r| is_recorded(r.flow)) {
            return;
        }
        let Some(t) = m.tasks.get(&tid) else { return };
        let pid = match (t.kind, t.actor.get().and_then(|a| m.actors().get(&a))) {
            (TaskType::ActorTask | TaskType::ActorCreationTask, Some(a)) => a.pid,
            _ => crate::model::worker_pid(tid.0),
        };
        let job = t.job.0;
        if let Some(j) = self.jobs.get_mut(&job) {
            j.rec.records.push(Rec::Begin { span: tid.0, t: now, node: node.0, pid });
        }
        self.touched(job);
    }

    /// A call ends for good: finished (`ok`) or failed past its retries. Called while
    /// the task is still in the model (just before it retires).
    pub(crate) fn ended(&mut self, m: &Model, runs: &TaskRuns, tid: TaskId, now: u64, ok: bool, return_bytes: u64) {
        let Some(r) = runs.get(&tid).filter(|r| r.flow != UNTRACKED) else { return };
        let Some(t) = m.tasks.get(&tid) else { return };
        let (edge, recorded, job) = (edge_of(r.flow), r.flow & RECORDED != 0, t.job.0);
        let took = now.saturating_sub(t.submitted_at);
        *self.cache.get_mut() = None;
        let Some(j) = self.jobs.get_mut(&job) else { return };
        if edge != 0 {
            self.totals.durations[j.edge_totals[edge as usize].1 as usize].1.observe(took as f64 / 1e6);
            let e = &mut j.edge_aggs[edge as usize];
            e.completed += 1;
            e.total_us += took;
            e.bytes += return_bytes;
        }
        if recorded {
            j.rec.records.push(Rec::End { span: tid.0, t: now, ok, return_bytes });
        }
        if j.rec.driver == tid.0 {
            j.rec.end_us = Some(now);
        }
        self.touched(job);
    }

    /// A running call blocked in `ray.get`: its program goes on later
    /// ([`FlowRecorder::resumed`]).
    pub(crate) fn blocked(&mut self, m: &Model, runs: &mut TaskRuns, tid: TaskId, now: u64) {
        let Some(r) = runs.get_mut(&tid).filter(|r| is_recorded(r.flow)) else { return };
        r.flow |= BLOCKED;
        self.record(m, tid, Rec::Block { span: tid.0, t: now });
    }

    /// A call's program goes on (its run, just looked up): if it was blocked in
    /// `ray.get`, the wait is over. Every way out of `ray.get` continues the program at
    /// once, so this is the one place that sees them all.
    #[inline]
    pub(crate) fn resumed(&mut self, m: &Model, run: &mut Run, tid: TaskId, now: u64) {
        if run.flow != UNTRACKED && run.flow & BLOCKED != 0 {
            run.flow &= !BLOCKED;
            self.record(m, tid, Rec::Unblock { span: tid.0, t: now });
        }
    }

    /// A call's attempt failed and it will run again (no longer blocked, if it was).
    pub(crate) fn requeued(&mut self, m: &Model, runs: &mut TaskRuns, tid: TaskId, now: u64) {
        let Some(r) = runs.get_mut(&tid).filter(|r| is_recorded(r.flow)) else { return };
        r.flow &= !BLOCKED;
        self.record(m, tid, Rec::Requeue { span: tid.0, t: now });
    }

    /// Keep `rec` in its call's job (the caller checked that the call is recorded).
    fn record(&mut self, m: &Model, tid: TaskId, rec: Rec) {
        let Some(t) = m.tasks.get(&tid) else { return };
        let job = t.job.0;
        if let Some(j) = self.jobs.get_mut(&job) {
            j.rec.records.push(rec);
        }
        self.touched(job);
    }

    /// A running call put `bytes` into the object store.
    pub(crate) fn put(&mut self, m: &Model, runs: &TaskRuns, tid: TaskId, now: u64, bytes: u64) {
        if runs.get(&tid).is_some_and(|r| is_recorded(r.flow)) {
            self.record(m, tid, Rec::Put { span: tid.0, t: now, bytes });
        }
    }

    /// The records as readers see them; shared until the next record.
    pub fn publish(&self) -> Arc<Recorded> {
        if let Some(r) = self.cache.borrow().as_ref() {
            return r.clone();
        }
        let jobs = self
            .jobs
            .iter()
            .map(|(&k, j)| {
                let mut published = j.published.borrow_mut();
                let shared = published.get_or_insert_with(|| {
                    let edges = j.edge_keys.iter().zip(&j.edge_aggs).skip(1).map(|(k, a)| (*k, *a)).collect();
                    Arc::new(JobRecord {
                        records: j.rec.records.share(),
                        targets: j.rec.targets.share(),
                        job_hex: j.rec.job_hex.clone(),
                        name: j.rec.name.clone(),
                        frames: j.rec.frames.clone(),
                        edges,
                        task_ids: j.rec.task_ids.clone(),
                        inferred: j.rec.inferred.clone(),
                        observed: None,
                        ..j.rec
                    })
                });
                (k, shared.clone())
            })
            .collect();
        let (calls, durations) = (self.totals.calls_map(), self.totals.durations_map());
        let r = Arc::new(Recorded { jobs, cap: self.cap, calls, durations });
        *self.cache.borrow_mut() = Some(r.clone());
        r
    }
}

fn parent_span(p: Option<TaskId>) -> u64 {
    p.map(|p| p.0).unwrap_or(0)
}

impl JobRec {
    fn frame(&mut self, key: u32, name: &str) -> u32 {
        if let Some(&f) = self.frame_index.get(&key) {
            return f;
        }
        let frames = Arc::make_mut(&mut self.rec.frames);
        frames.push(name.to_string());
        let f = (frames.len() - 1) as u32;
        self.frame_index.insert(key, f);
        self.frame_names.push(key);
        f
    }

    fn edge(&mut self, caller: u32, callee: u32, totals: &mut Totals) -> u32 {
        if let Some(&e) = self.edge_index.get(&(caller, callee)) {
            return e;
        }
        self.edge_keys.push((caller, callee));
        self.edge_aggs.push(EdgeAgg::default());
        self.edge_totals.push(totals.rows(self.frame_names[caller as usize], self.frame_names[callee as usize]));
        let e = (self.edge_keys.len() - 1) as u32;
        self.edge_index.insert((caller, callee), e);
        e
    }

    fn target(&mut self, m: &Model, spec_name: u32, actor: Option<ActorId>, frame: u32) -> u32 {
        let key = (spec_name, actor.map(|a| a.0).unwrap_or(u64::MAX));
        if let Some(&t) = self.target_index.get(&key) {
            return t;
        }
        let full = m.names.get(crate::model::NameId(spec_name));
        let target = match actor.and_then(|a| m.actors().get(&a)) {
            Some(a) => {
                let class = m.names.get(a.class).to_string();
                let method = full.strip_prefix(&format!("{class}.")).unwrap_or(full).to_string();
                Target {
                    kind: TargetKind::Method,
                    class,
                    method,
                    actor: actor.map(|a| a.0),
                    job: self.rec.job,
                    level: a.level,
                    flag: a.flag,
                    frame,
                }
            }
            None => Target {
                kind: TargetKind::Function,
                class: full.to_string(),
                method: full.to_string(),
                actor: None,
                job: self.rec.job,
                level: 0,
                flag: false,
                frame,
            },
        };
        self.rec.targets.push(target);
        let t = (self.rec.targets.len() - 1) as u32;
        self.target_index.insert(key, t);
        t
    }
}
