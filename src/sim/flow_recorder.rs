//! Flow Insight recording: the engine's record of every call, per job.
//!
//! Owns: the per-job records (submit/begin/end/put, call targets with the actor's
//! workload attributes, per-edge aggregates), the cap per job (`sim.flow_calls_per_job`:
//! past it calls count only in the aggregates; 0 turns recording off), the number of
//! jobs kept, and
//! publishing an immutable [`Recorded`] for snapshots (sealed chunks shared; a job
//! that did not change since the last publish is shared whole).
//! Must never: change the model, draw from the RNG or log events (recording must not
//! change the run), or keep anything per call beyond the cap (the map of calls in
//! flight is bounded by the tasks the model itself holds).

use crate::flow::record::{Chunked, EdgeAgg, JobRecord, Rec, Recorded, Target, TargetKind, DRIVER_NAME, DURATION_BUCKETS};
use crate::model::{ActorId, Histogram, JobId, Model, NodeIdx, TaskId, TaskType};
use crate::workload::CallSpec;
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Jobs whose records are kept; past it the oldest ended job is forgotten.
pub const JOBS_KEPT: usize = 16;

/// The frame key of the driver (no call spec name).
const DRIVER_KEY: u32 = u32::MAX;

/// A call between submit and end.
#[derive(Clone, Copy, Debug)]
struct Live {
    job: u32,
    caller_frame: u32,
    callee_frame: u32,
    recorded: bool,
    submit: u64,
    /// Interned name of the callee (`DRIVER_NAME` for the driver), for metrics.
    callee_name: u32,
}

struct JobRec {
    rec: JobRecord,
    /// (spec name, actor) → target index.
    target_index: FxHashMap<(u32, u64), u32>,
    /// Spec name (or [`DRIVER_KEY`]) → frame index.
    frame_index: FxHashMap<u32, u32>,
    /// What the last publish shared, until the next record.
    published: RefCell<Option<Arc<JobRecord>>>,
}

pub(crate) struct FlowRecorder {
    cap: u64,
    jobs: BTreeMap<u32, JobRec>,
    live: FxHashMap<u64, Live>,
    cache: RefCell<Option<Arc<Recorded>>>,
    /// Metrics over every call of every job (bounded by names squared).
    calls: Arc<BTreeMap<(u32, u32), u64>>,
    durations: Arc<BTreeMap<u32, Histogram>>,
}

impl FlowRecorder {
    pub fn new(cap: u64) -> FlowRecorder {
        FlowRecorder {
            cap,
            jobs: BTreeMap::new(),
            live: FxHashMap::default(),
            cache: RefCell::new(None),
            calls: Arc::default(),
            durations: Arc::default(),
        }
    }

    fn touched(&mut self, job: u32) {
        *self.cache.get_mut() = None;
        if let Some(j) = self.jobs.get_mut(&job) {
            *j.published.get_mut() = None;
        }
    }

    /// A job's driver started running on `node`.
    pub fn job_started(&mut self, m: &Model, job: JobId, driver: TaskId, node: NodeIdx, now: u64) {
        if self.cap == 0 {
            return;
        }
        let name = m.jobs.get(&job).map(|j| j.name.clone()).unwrap_or_default();
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
            },
            target_index: FxHashMap::default(),
            frame_index: FxHashMap::default(),
            published: RefCell::new(None),
        };
        let frame = j.frame(DRIVER_KEY, "_main");
        j.rec.targets.push(Target {
            kind: TargetKind::Driver,
            class: "_main".into(),
            method: "_main".into(),
            actor: None,
            level: 0,
            flag: false,
            frame,
        });
        j.rec.records.push(Rec::Submit { span: driver.0, parent: 0, target: 0, t: now, arg_bytes: 0 });
        j.rec.records.push(Rec::Begin { span: driver.0, t: now, node: node.0, pid: crate::model::driver_pid(job.0) });
        self.jobs.insert(job.0, j);
        self.live.insert(
            driver.0,
            Live {
                job: job.0,
                caller_frame: frame,
                callee_frame: frame,
                recorded: true,
                submit: now,
                callee_name: DRIVER_NAME,
            },
        );
        self.touched(job.0);
    }

    /// A call was submitted (the task is in the model, not yet started).
    pub fn submitted(&mut self, m: &Model, specs: &[CallSpec], tid: TaskId, now: u64) {
        if self.cap == 0 {
            return;
        }
        let Some(t) = m.tasks.get(&tid) else { return };
        let Some(parent) = t.parent.and_then(|p| self.live.get(&p.0)).copied() else { return };
        let Some(j) = self.jobs.get_mut(&t.job.0) else { return };
        let arg_bytes: u64 = t.args.iter().filter_map(|a| m.objects.get(a)).map(|o| o.size).sum();
        let spec_name = specs.get(t.spec as usize).map(|s| s.name).unwrap_or(t.name);
        let full = m.names.get(spec_name);
        let frame = j.frame(spec_name.0, full);
        let edge = j.rec.edges.entry((parent.callee_frame, frame)).or_insert_with(EdgeAgg::default);
        edge.calls += 1;
        edge.bytes += arg_bytes;
        j.rec.calls += 1;
        let recorded = parent.recorded && j.rec.recorded_calls < self.cap;
        if recorded {
            j.rec.recorded_calls += 1;
            let actor = match t.kind {
                TaskType::ActorTask | TaskType::ActorCreationTask => t.actor,
                _ => None,
            };
            let target = j.target(m, spec_name.0, full, actor, frame);
            j.rec.records.push(Rec::Submit { span: tid.0, parent: parent_span(t.parent), target, t: now, arg_bytes });
        }
        *Arc::make_mut(&mut self.calls).entry((parent.callee_name, spec_name.0)).or_default() += 1;
        self.live.insert(
            tid.0,
            Live {
                job: t.job.0,
                caller_frame: parent.callee_frame,
                callee_frame: frame,
                recorded,
                submit: now,
                callee_name: spec_name.0,
            },
        );
        self.touched(t.job.0);
    }

    /// An attempt started executing on `node`.
    pub fn started(&mut self, m: &Model, tid: TaskId, node: NodeIdx, now: u64) {
        if self.cap == 0 {
            return;
        }
        let Some(l) = self.live.get(&tid.0).copied() else { return };
        if !l.recorded {
            return;
        }
        let pid = match m.tasks.get(&tid) {
            Some(t) => match (t.kind, t.actor.and_then(|a| m.actors.get(&a))) {
                (TaskType::ActorTask | TaskType::ActorCreationTask, Some(a)) => a.pid,
                _ => crate::model::worker_pid(tid.0),
            },
            None => crate::model::worker_pid(tid.0),
        };
        if let Some(j) = self.jobs.get_mut(&l.job) {
            j.rec.records.push(Rec::Begin { span: tid.0, t: now, node: node.0, pid });
        }
        self.touched(l.job);
    }

    /// A call ended for good: finished (`ok`) or failed past its retries.
    pub fn ended(&mut self, tid: TaskId, now: u64, ok: bool, return_bytes: u64) {
        if self.cap == 0 {
            return;
        }
        let Some(l) = self.live.remove(&tid.0) else { return };
        if l.callee_name != DRIVER_NAME {
            Arc::make_mut(&mut self.durations)
                .entry(l.callee_name)
                .or_insert_with(|| Histogram::new(DURATION_BUCKETS))
                .observe(now.saturating_sub(l.submit) as f64 / 1e6);
            *self.cache.get_mut() = None;
        }
        let Some(j) = self.jobs.get_mut(&l.job) else { return };
        if j.rec.driver != tid.0 {
            let e = j.rec.edges.entry((l.caller_frame, l.callee_frame)).or_insert_with(EdgeAgg::default);
            e.completed += 1;
            e.total_us += now.saturating_sub(l.submit);
            e.bytes += return_bytes;
        }
        if l.recorded {
            j.rec.records.push(Rec::End { span: tid.0, t: now, ok, return_bytes });
        }
        if j.rec.driver == tid.0 {
            j.rec.end_us = Some(now);
        }
        self.touched(l.job);
    }

    /// A running call put `bytes` into the object store.
    pub fn put(&mut self, tid: TaskId, now: u64, bytes: u64) {
        if self.cap == 0 {
            return;
        }
        let Some(l) = self.live.get(&tid.0).copied() else { return };
        if !l.recorded {
            return;
        }
        if let Some(j) = self.jobs.get_mut(&l.job) {
            j.rec.records.push(Rec::Put { span: tid.0, t: now, bytes });
        }
        self.touched(l.job);
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
                    Arc::new(JobRecord {
                        records: j.rec.records.share(),
                        targets: j.rec.targets.share(),
                        job_hex: j.rec.job_hex.clone(),
                        name: j.rec.name.clone(),
                        frames: j.rec.frames.clone(),
                        edges: j.rec.edges.clone(),
                        ..j.rec
                    })
                });
                (k, shared.clone())
            })
            .collect();
        let r = Arc::new(Recorded { jobs, cap: self.cap, calls: self.calls.clone(), durations: self.durations.clone() });
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
        f
    }

    fn target(&mut self, m: &Model, spec_name: u32, full: &str, actor: Option<ActorId>, frame: u32) -> u32 {
        let key = (spec_name, actor.map(|a| a.0).unwrap_or(u64::MAX));
        if let Some(&t) = self.target_index.get(&key) {
            return t;
        }
        let target = match actor.and_then(|a| m.actors.get(&a)) {
            Some(a) => {
                let class = m.names.get(a.class).to_string();
                let method = full.strip_prefix(&format!("{class}.")).unwrap_or(full).to_string();
                Target { kind: TargetKind::Method, class, method, actor: actor.map(|a| a.0), level: a.level, flag: a.flag, frame }
            }
            None => Target {
                kind: TargetKind::Function,
                class: full.to_string(),
                method: full.to_string(),
                actor: None,
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
