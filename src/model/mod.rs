//! The model: Ray's GCS tables (nodes, jobs, tasks, actors, objects, placement groups)
//! and the bounded event log.
//!
//! Owns: every table and the aggregate counters derived from them.
//! Must never: know about HTTP or Prometheus, or be written by anyone but the
//! simulation thread (readers get snapshots). Memory stays bounded: finished tasks,
//! dead actors, finished jobs, removed placement groups, events and cluster events are
//! kept in rings.

pub mod actor;
pub(crate) mod cache_hint;
pub mod cluster_events;
pub mod compact_option;
pub mod event_log;
pub mod few;
pub mod ids;
pub mod job;
pub mod limits;
mod log_record;
mod log_text;
pub mod node;
pub mod object;
pub mod object_list;
mod prefault;
pub mod resources;
pub mod states;
pub mod table;
pub mod task;
pub mod task_counts;
pub mod time;
pub mod utc;

pub use actor::Actor;
pub use cluster_events::{ClusterEvent, ClusterEvents, ClusterEventsView};
pub use compact_option::CompactOption;
pub use event_log::{EventLog, LoggedEvent};
pub use few::Few;
pub use ids::*;
pub use job::{Bundle, Job, PlacementGroup};
pub use limits::Limits;
pub use node::{Available, Node, NodeStats, ObjectStore};
pub use object::{Object, ObjectStatus};
pub use object_list::ObjectList;
pub use resources::*;
pub use states::*;
pub use table::IdTable;
pub use task::{Task, TaskHistory, TaskRecord};
pub use task_counts::{Row, TaskCounts};
pub use time::VirtualTime;

use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, VecDeque};

/// Interned names (functions, `Class.method`, actor classes).
#[derive(Default, Clone, Debug)]
pub struct Names {
    names: Vec<String>,
    index: FxHashMap<String, NameId>,
}

impl Names {
    pub fn intern(&mut self, s: &str) -> NameId {
        if let Some(id) = self.index.get(s) {
            return *id;
        }
        let id = NameId(self.names.len() as u32);
        self.names.push(s.to_string());
        self.index.insert(s.to_string(), id);
        id
    }
    pub fn get(&self, id: NameId) -> &str {
        &self.names[id.index()]
    }
    pub fn all(&self) -> &[String] {
        &self.names
    }
}

/// Key of the per-state task counts behind `ray_tasks`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct TaskCountKey {
    pub name: NameId,
    pub job: JobId,
    pub is_retry: bool,
    pub state: TaskState,
}

/// A histogram with fixed upper bounds (Prometheus style, cumulative on export).
#[derive(Clone, Debug)]
pub struct Histogram {
    pub bounds: &'static [f64],
    /// Non-cumulative counts per bucket; the last is +Inf.
    pub counts: Vec<u64>,
    pub sum: f64,
    pub count: u64,
}

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Histogram {
        Histogram { bounds, counts: vec![0; bounds.len() + 1], sum: 0.0, count: 0 }
    }
    pub fn observe(&mut self, v: f64) {
        let i = self.bounds.iter().position(|b| v <= *b).unwrap_or(self.bounds.len());
        self.counts[i] += 1;
        self.sum += v;
        self.count += 1;
    }
}

/// Ray's `ray_scheduler_placement_time_ms` buckets.
pub const PLACEMENT_MS_BUCKETS: &[f64] = &[1.0, 10.0, 100.0, 1000.0, 10000.0];

/// Cumulative counters: aggregates survive the eviction of the records they came from.
#[derive(Clone, Debug, Default)]
pub struct Counters {
    pub tasks_submitted: u64,
    pub tasks_finished: u64,
    pub tasks_failed: u64,
    pub tasks_retried: u64,
    pub actors_created: u64,
    pub actors_restarted: u64,
    pub actors_died: u64,
    pub spillbacks: u64,
    pub spilled_bytes: u64,
    pub spilled_objects: u64,
    pub restored_bytes: u64,
    pub restored_objects: u64,
    pub transferred_bytes: u64,
    pub objects_created: u64,
    pub objects_freed: u64,
    pub objects_reconstructed: u64,
    pub node_failures: u64,
    pub jobs_finished: u64,
    pub jobs_dropped: u64,
    pub pgs_created: u64,
    pub pgs_removed: u64,
    pub workers_started: u64,
    /// OOM kills by (Ray eviction type, task or actor name).
    pub oom_kills: BTreeMap<(&'static str, String), u64>,
    /// Unexpected worker failures by (type, name).
    pub worker_failures: BTreeMap<(&'static str, String), u64>,
    /// The same kills and failures by the alive node (slot) whose raylet counted them,
    /// then (type, name): what each raylet exports. A node's entries leave when it dies,
    /// as its raylet's series do, so this holds alive nodes only.
    pub oom_kills_by_node: BTreeMap<(u32, &'static str, String), u64>,
    pub worker_failures_by_node: BTreeMap<(u32, &'static str, String), u64>,
    pub illegal_transitions: u64,
    /// Tasks waiting for a node, now and at their peak.
    pub backlog: Backlog,
    /// Nodes forgotten past the dead-node cache, by node type: what utilization needs.
    pub forgotten_nodes: BTreeMap<String, ForgottenNodes>,
}

impl Counters {
    /// An OOM kill by the memory monitor of node `node` (slot index).
    pub fn count_oom_kill(&mut self, node: u32, kind: &'static str, name: String) {
        *self.oom_kills_by_node.entry((node, kind, name.clone())).or_insert(0) += 1;
        *self.oom_kills.entry((kind, name)).or_insert(0) += 1;
    }

    /// A worker that exited unexpectedly on node `node` (slot index), if it had one.
    pub fn count_worker_failure(&mut self, node: Option<u32>, kind: &'static str, name: String) {
        if let Some(n) = node {
            *self.worker_failures_by_node.entry((n, kind, name.clone())).or_insert(0) += 1;
        }
        *self.worker_failures.entry((kind, name)).or_insert(0) += 1;
    }

    /// A node died: its raylet's counts go with it.
    pub fn forget_node_counts(&mut self, node: u32) {
        self.oom_kills_by_node.retain(|k, _| k.0 != node);
        self.worker_failures_by_node.retain(|k, _| k.0 != node);
    }
}

/// The CPU time of nodes no longer in the table, by node type.
#[derive(Clone, Debug, Default)]
pub struct ForgottenNodes {
    pub nodes: u64,
    pub cpu_busy_us: f64,
    /// CPUs × lifetime, µs.
    pub cpu_available_us: f64,
}

/// Tasks in `PENDING_NODE_ASSIGNMENT`: the work the cluster has no room for yet. The
/// peak is what a capacity planner compares between configurations.
#[derive(Clone, Copy, Debug, Default)]
pub struct Backlog {
    pub now: u64,
    pub peak: u64,
}

impl Backlog {
    fn add(&mut self, delta: i64) {
        self.now = self.now.saturating_add_signed(delta);
        self.peak = self.peak.max(self.now);
    }
}

/// The GCS tables.
pub struct Model {
    pub session_name: String,
    pub version: String,
    pub resource_names: ResourceNames,
    pub names: Names,
    /// Nodes by index: private, written only by their owners (see [`Model::nodes`]).
    nodes: Vec<Node>,
    pub tasks: IdTable<TaskId, Task>,
    pub finished_tasks: VecDeque<TaskRecord>,
    pub finished_task_capacity: usize,
    /// Actors by id: private, so that the GCS actor manager is their only writer (with
    /// the model's own transitions); see [`Model::actors`].
    actors: FxHashMap<ActorId, Actor>,
    /// Dead actors in order of death; the oldest are evicted past the capacity.
    pub dead_actors: VecDeque<ActorId>,
    pub dead_actor_capacity: usize,
    pub objects: IdTable<ObjectId, Object>,
    /// Jobs by id: private, so that the GCS job manager is their only writer (with the
    /// model's own transitions); see [`Model::jobs`].
    jobs: BTreeMap<JobId, Job>,
    pub finished_jobs: VecDeque<JobId>,
    pub finished_job_capacity: usize,
    /// Placement groups by id: private, so that the GCS placement group manager is
    /// their only writer (with the model's own transitions); see [`Model::pgs`].
    pgs: BTreeMap<PgId, PlacementGroup>,
    pub removed_pgs: VecDeque<PgId>,
    /// Tasks per (name, job, retry, state), and running tasks per executing node for the
    /// executor series.
    pub task_counts: TaskCounts,
    /// Placement time histograms: Task, Actor, PlacementGroup.
    pub placement_ms: [Histogram; 3],
    pub counters: Counters,
    pub log: EventLog,
    /// Ray's cluster events (nodes, jobs, the autoscaler, OOM kills, actor deaths), kept
    /// apart from the log's task transitions; never part of the log or its digest.
    pub cluster_events: ClusterEvents,
    pub next_task: u64,
    pub next_actor: u64,
    pub next_object: u64,
    pub next_job: u32,
    pub next_pg: u32,
    pub next_pid: u32,
}

/// Count `t`, as it is now, `delta` times in `row`: per state, per running node, and
/// in the backlog.
fn bump(counts: &mut TaskCounts, backlog: &mut Backlog, row: Row, t: &Task, delta: i64) {
    if t.state == TaskState::PendingNodeAssignment {
        backlog.add(delta);
    }
    counts.add(row, t.state, t.node.get(), delta);
}

/// The count row of a task's (name, job, retry).
fn row_of(counts: &mut TaskCounts, t: &Task) -> Row {
    counts.row(t.name, t.job, t.is_retry())
}

/// Bound on removed placement groups kept in the table.
const REMOVED_PG_CAPACITY: usize = 1_000;

impl Model {
    pub fn new(session_name: String, version: String, resource_names: ResourceNames, limits: Limits) -> Model {
        Model {
            session_name,
            version,
            resource_names,
            names: Names::default(),
            nodes: Vec::new(),
            tasks: IdTable::new(),
            // Sized once (address space only until used): growing it by doubling copied
            // and faulted in twice its final size, 3% of a scale.yaml run.
            finished_tasks: VecDeque::with_capacity(limits.finished_task_capacity.min(1 << 20)),
            finished_task_capacity: limits.finished_task_capacity,
            actors: FxHashMap::default(),
            dead_actors: VecDeque::new(),
            dead_actor_capacity: limits.dead_actor_capacity,
            objects: IdTable::new(),
            jobs: BTreeMap::new(),
            finished_jobs: VecDeque::new(),
            finished_job_capacity: limits.finished_job_capacity,
            pgs: BTreeMap::new(),
            removed_pgs: VecDeque::new(),
            task_counts: TaskCounts::default(),
            placement_ms: [
                Histogram::new(PLACEMENT_MS_BUCKETS),
                Histogram::new(PLACEMENT_MS_BUCKETS),
                Histogram::new(PLACEMENT_MS_BUCKETS),
            ],
            counters: Counters::default(),
            log: EventLog::new(limits.event_log_capacity),
            cluster_events: ClusterEvents::new(limits.cluster_event_capacity),
            next_task: 1,
            next_actor: 1,
            next_object: 1,
            next_job: 1,
            next_pg: 1,
            next_pid: 1000,
        }
    }

    pub fn node(&self, idx: NodeIdx) -> &Node {
        &self.nodes[idx.index()]
    }

    /// `count` worker processes started on `node`'s pool (Ray's
    /// `ray_internal_num_processes_started`), on the node and in the cluster's total.
    pub fn worker_processes_started(&mut self, node: NodeIdx, count: u64) {
        self.nodes[node.index()].stats.workers_started += count;
        self.counters.workers_started += count;
    }

    pub fn alloc_task_id(&mut self) -> TaskId {
        let id = TaskId(self.next_task);
        self.next_task += 1;
        id
    }
    pub fn alloc_object_id(&mut self) -> ObjectId {
        let id = ObjectId(self.next_object);
        self.next_object += 1;
        id
    }
    pub fn alloc_actor_id(&mut self) -> ActorId {
        let id = ActorId(self.next_actor);
        self.next_actor += 1;
        id
    }
    pub fn alloc_pid(&mut self) -> u32 {
        self.next_pid += 1;
        self.next_pid
    }

    /// Add a new task to the table, counted in its initial state.
    pub fn insert_task(&mut self, mut task: Task) {
        task.history.record(task.state, task.submitted_at);
        task.counts_row = row_of(&mut self.task_counts, &task);
        bump(&mut self.task_counts, &mut self.counters.backlog, task.counts_row, &task, 1);
        self.counters.tasks_submitted += 1;
        self.tasks.insert(task.id, task);
    }

    /// Move a live task to `next`, keeping per-state counts exact. Illegal moves are
    /// counted (and caught by the property tests) rather than panicking.
    pub fn set_task_state(&mut self, id: TaskId, next: TaskState, now: u64) {
        let Some(t) = self.tasks.get_mut(&id) else { return };
        if t.state == next {
            return;
        }
        if !t.state.can_move_to(next) {
            self.counters.illegal_transitions += 1;
        }
        let row = t.counts_row;
        bump(&mut self.task_counts, &mut self.counters.backlog, row, t, -1);
        t.state = next;
        t.history.record(next, now);
        bump(&mut self.task_counts, &mut self.counters.backlog, row, t, 1);
        self.log
            .line(now, "task")
            .hex(id.0)
            .text(" ")
            .text(next.as_str())
            .text(" attempt=")
            .dec(t.attempt.into())
            .end();
    }

    /// Start a new attempt: the old attempt is counted as it ends and kept as a FAILED
    /// record with `error` (Ray lists every attempt); the new one starts pending. (The
    /// engine restarts its run beside it: `sim::core_worker::task_runs`.)
    pub fn begin_retry(&mut self, id: TaskId, next: TaskState, now: u64, error: ErrorType) {
        let Some(t) = self.tasks.get_mut(&id) else { return };
        bump(&mut self.task_counts, &mut self.counters.backlog, t.counts_row, t, -1);
        let mut failed = t.record(now, 0);
        failed.state = TaskState::Failed;
        failed.error = Some(error);
        failed.history.record(TaskState::Failed, now);
        t.attempt += 1;
        t.state = next;
        t.node = CompactOption::NONE;
        t.started_at = CompactOption::NONE;
        t.history = TaskHistory::submitted(now);
        t.history.record(next, now);
        // A retry counts in its own row (`is_retry`).
        t.counts_row = row_of(&mut self.task_counts, t);
        bump(&mut self.task_counts, &mut self.counters.backlog, t.counts_row, t, 1);
        self.counters.tasks_retried += 1;
        crate::log_event!(self.log, now, "task", "{:x} RETRY {} attempt={}", id.0, next.as_str(), t.attempt);
        self.keep_record(failed);
    }

    /// Keep an ended attempt's span in the bounded ring.
    fn keep_record(&mut self, record: TaskRecord) {
        if self.finished_tasks.len() >= self.finished_task_capacity {
            self.finished_tasks.pop_front();
        }
        if self.finished_task_capacity > 0 {
            self.finished_tasks.push_back(record);
        }
    }

    /// Remove a task that reached FINISHED or FAILED and keep its span in the bounded ring.
    pub fn retire_task(&mut self, id: TaskId, terminal: TaskState, now: u64, return_bytes: u64) {
        let Some(mut t) = self.tasks.remove(&id) else { return };
        if !t.state.can_move_to(terminal) {
            self.counters.illegal_transitions += 1;
        }
        let row = t.counts_row;
        bump(&mut self.task_counts, &mut self.counters.backlog, row, &t, -1);
        t.state = terminal;
        t.history.record(terminal, now);
        bump(&mut self.task_counts, &mut self.counters.backlog, row, &t, 1);
        match terminal {
            TaskState::Finished => self.counters.tasks_finished += 1,
            _ => self.counters.tasks_failed += 1,
        }
        let line = self
            .log
            .line(now, "task")
            .hex(id.0)
            .text(" ")
            .text(terminal.as_str())
            .text(" attempt=")
            .dec(t.attempt.into());
        match t.error {
            Some(e) => line.text(" error=").text(e.as_str()).end(),
            None => line.end(),
        }
        self.keep_record(t.record(now, return_bytes));
    }

    pub fn set_actor_state(&mut self, id: ActorId, next: ActorState, now: u64) {
        let Some(a) = self.actors.get_mut(&id) else { return };
        if a.state == next {
            return;
        }
        if !a.state.can_move_to(next) {
            self.counters.illegal_transitions += 1;
        }
        a.state = next;
        crate::log_event!(self.log, now, "actor", "{:x} {} restarts={}", id.0, next.as_str(), a.num_restarts);
        if next == ActorState::Dead {
            a.ended_at = Some(now);
            self.counters.actors_died += 1;
            self.dead_actors.push_back(id);
            while self.dead_actors.len() > self.dead_actor_capacity {
                if let Some(old) = self.dead_actors.pop_front() {
                    self.actors.remove(&old);
                }
            }
        }
    }

    pub fn set_job_status(&mut self, id: JobId, next: JobStatus, now: u64, message: &str) {
        let Some(j) = self.jobs.get_mut(&id) else { return };
        if j.status == next || j.status.is_terminal() {
            return;
        }
        j.status = next;
        j.message = message.to_string();
        crate::log_event!(self.log, now, "job", "{} {} {}", id.hex(), next.as_str(), message);
        if next.is_terminal() {
            j.end_time = Some(now);
            self.counters.jobs_finished += 1;
            self.finished_jobs.push_back(id);
            while self.finished_jobs.len() > self.finished_job_capacity {
                if let Some(old) = self.finished_jobs.pop_front() {
                    self.jobs.remove(&old);
                    // Counts of an evicted job's tasks go with it, so `ray_tasks` stays bounded.
                    self.task_counts.forget_job(old);
                }
            }
        }
    }

    /// Drop an ended job's record now rather than when the ring evicts it.
    pub fn forget_job(&mut self, id: JobId) {
        if self.jobs.get(&id).is_some_and(|j| j.status.is_terminal()) {
            self.jobs.remove(&id);
            self.finished_jobs.retain(|j| *j != id);
            self.task_counts.forget_job(id);
        }
    }

    pub fn set_pg_state(&mut self, id: PgId, next: PgState, now: u64) {
        let Some(pg) = self.pgs.get_mut(&id) else { return };
        if pg.state == next {
            return;
        }
        pg.state = next;
        crate::log_event!(self.log, now, "placement_group", "{} {}", id.0, next.as_str());
        if next == PgState::Removed {
            self.counters.pgs_removed += 1;
            self.removed_pgs.push_back(id);
            while self.removed_pgs.len() > REMOVED_PG_CAPACITY {
                if let Some(old) = self.removed_pgs.pop_front() {
                    self.pgs.remove(&old);
                }
            }
        }
    }
}
