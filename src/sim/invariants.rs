//! Invariants of the whole model, checked by the tests between events.
//!
//! Owns: [`Engine::check_invariants`]: resources balance on every node and in every
//! bundle, per-state task counts match the task table, object stores add up to the
//! copies they hold, references match their holders, each live task has exactly one
//! run and no run outlives its task, and every live task sits in
//! exactly one place that will move it on (a queue, or an event scheduled for its
//! current attempt). Must never: mutate anything, or run inside the engine loop: it
//! walks every table (O(model size) per call) and exists for tests only.
//!
//! The bookkeeping it proves, per alive node `n` and resource kind `r`:
//!
//! ```text
//! total[r] − available[r] =   Σ request[r] of tasks in leased[n] that hold resources outside a bundle
//!                           − Σ CPU lent back by those of them blocked in ray.get (cpu_released)
//!                           + Σ creation request[r] of alive actors on n holding resources outside a bundle
//!                           + Σ request[r] of bundles placed on n (groups not removed)
//! ```
//! and per placed bundle: `request − available = Σ requests of the tasks and actors holding it`.
//! The scheduler's index holds exactly the alive nodes, each under the key its current
//! availability gives (`Scheduler::check_index`).

use super::engine::Engine;
use crate::model::*;
use rustc_hash::FxHashMap;

/// Violations found so far; the first few are kept in full.
#[derive(Default)]
struct Violations {
    list: Vec<String>,
    more: usize,
}

const SHOWN: usize = 12;

impl Violations {
    fn push(&mut self, msg: String) {
        if self.list.len() < SHOWN {
            self.list.push(msg);
        } else {
            self.more += 1;
        }
    }
}

macro_rules! ensure {
    ($v:expr, $cond:expr, $($arg:tt)*) => {
        if !$cond {
            $v.push(format!($($arg)*));
        }
    };
}

/// Scheduled events per (task, attempt), by kind.
#[derive(Default)]
struct Scheduled {
    dispatch: FxHashMap<(TaskId, u32), u32>,
    args_fetched: FxHashMap<(TaskId, u32), u32>,
    /// `OpDone`, `Resume` and `Raised`: what moves a running task on.
    op_done: FxHashMap<(TaskId, u32), u32>,
    begin: FxHashMap<(TaskId, u32), u32>,
    resubmit: FxHashMap<(TaskId, u32), u32>,
    /// A getter's pull arriving.
    pulled: FxHashMap<(TaskId, u32), u32>,
}

fn count<K: std::hash::Hash + Eq>(m: &FxHashMap<K, u32>, k: &K) -> u32 {
    m.get(k).copied().unwrap_or(0)
}

fn add_req(v: &mut ResVec, req: &ResourceRequest, sign: i64) {
    for &(id, q) in &req.0 {
        let cur = v.get(id);
        v.set(id, FixedPoint(cur.0 + sign * q.0));
    }
}

impl Engine {
    /// Check every invariant of the model; `Err` lists the violations found. A `String`:
    /// a diagnostic for a failing test or property run to print, not an error a caller
    /// handles (a violation is a bug in the engine, never bad input).
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut v = Violations::default();
        let check = Check { e: self };
        check.counters(&mut v);
        check.task_counts(&mut v);
        check.task_runs(&mut v);
        check.resources(&mut v);
        if let Err(e) = self.check_scheduler_index() {
            v.push(e);
        }
        check.objects(&mut v);
        check.task_places(&mut v);
        check.actors(&mut v);
        check.pgs(&mut v);
        check.jobs(&mut v);
        if v.list.is_empty() {
            return Ok(());
        }
        let mut msg = format!("{} invariant violation(s) at t={}us:\n  ", v.list.len() + v.more, self.clock.now);
        msg.push_str(&v.list.join("\n  "));
        if v.more > 0 {
            msg.push_str(&format!("\n  ... and {} more", v.more));
        }
        Err(msg)
    }

    /// Whether the scheduler's index and the nodes agree (O(nodes), cheap enough to run
    /// after every event). Availability changes only through the node runtime, which
    /// updates the index in the same call: a disagreement means a change went around it.
    /// A `String`, as [`Engine::check_invariants`]': a diagnostic, not a handled error.
    pub fn check_scheduler_index(&self) -> Result<(), String> {
        self.sched
            .check_index(self.model.nodes())
            .map_err(|e| format!("scheduler index disagrees with the nodes at t={}us: {e}", self.clock.now))
    }
}

/// One look at the engine: the checks of each table, read-only.
pub(super) struct Check<'a> {
    e: &'a Engine,
}

impl Check<'_> {
    fn counters(&self, v: &mut Violations) {
        let c = &self.e.model.counters;
        ensure!(v, c.illegal_transitions == 0, "{} illegal state transitions", c.illegal_transitions);
        // Every record inserted into the task table (a submission, an actor restart's
        // creation task, a lineage re-execution) leaves it exactly once, as FINISHED or FAILED.
        let live = self.e.model.tasks.len() as u64;
        ensure!(
            v,
            c.tasks_submitted == c.tasks_finished + c.tasks_failed + live,
            "tasks: submitted {} != finished {} + failed {} + in flight {}",
            c.tasks_submitted,
            c.tasks_finished,
            c.tasks_failed,
            live
        );
        if let Err(e) = self.e.queues.check_counts(&self.e.model) {
            v.push(e);
        }
    }

    /// Every live task has its run, and no run outlives its task: ids are unique in
    /// both tables, so equal sizes and every task's id found make the two sets equal.
    fn task_runs(&self, v: &mut Violations) {
        let (tasks, runs) = (&self.e.model.tasks, &self.e.runs);
        for t in tasks.values() {
            ensure!(v, runs.contains(&t.id), "live task {:x} has no run", t.id.0);
        }
        ensure!(v, runs.len() == tasks.len(), "{} runs for {} live tasks", runs.len(), tasks.len());
    }

    fn task_counts(&self, v: &mut Violations) {
        let mut by_key: FxHashMap<TaskCountKey, i64> = FxHashMap::default();
        let mut running: FxHashMap<(NodeIdx, TaskCountKey), i64> = FxHashMap::default();
        for t in self.e.model.tasks.values() {
            let key = TaskCountKey { name: t.name, job: t.job, is_retry: t.is_retry(), state: t.state() };
            *by_key.entry(key).or_insert(0) += 1;
            if let (true, Some(n)) = (t.state().is_running(), t.node.get()) {
                *running.entry((n, key)).or_insert(0) += 1;
            }
        }
        for (k, c) in self.e.model.task_counts.iter() {
            if k.state.is_terminal() {
                ensure!(v, c >= 0, "negative count {c} for {k:?}");
                continue;
            }
            let want = by_key.remove(&k).unwrap_or(0);
            ensure!(v, c == want, "task_counts[{k:?}] = {c} but {want} live tasks have that key");
        }
        for (k, want) in by_key {
            v.push(format!("{want} live tasks with {k:?} are not in task_counts"));
        }
        for (n, k, c) in self.e.model.task_counts.running() {
            let want = running.remove(&(n, k)).unwrap_or(0);
            ensure!(v, c == want, "running count [{n:?}, {k:?}] = {c} but {want} running there");
        }
        for (k, want) in running {
            v.push(format!("{want} running tasks with {k:?} are not in the running counts"));
        }
        // With no job evicted from the table, the terminal counts are the counters.
        let c = &self.e.model.counters;
        if self.e.model.finished_jobs.len() as u64 == c.jobs_finished {
            let sum = |s: TaskState| -> i64 {
                self.e.model.task_counts.iter().filter(|(k, _)| k.state == s).map(|(_, c)| c).sum()
            };
            ensure!(
                v,
                sum(TaskState::Finished) == c.tasks_finished as i64,
                "FINISHED counts {} != counter {}",
                sum(TaskState::Finished),
                c.tasks_finished
            );
            ensure!(
                v,
                sum(TaskState::Failed) == c.tasks_failed as i64,
                "FAILED counts {} != counter {}",
                sum(TaskState::Failed),
                c.tasks_failed
            );
        }
    }

    fn resources(&self, v: &mut Violations) {
        let m = &self.e.model;
        let kinds = m.resource_names.len();
        let mut reserved = vec![ResVec::zeros(kinds); m.nodes().len()];
        let mut in_bundle: FxHashMap<(PgId, u32), ResVec> = FxHashMap::default();
        let mut heap = vec![0u64; m.nodes().len()];
        let mut lease_seen: FxHashMap<TaskId, u32> = FxHashMap::default();
        for (i, list) in self.e.raylets.leases().enumerate() {
            let node = NodeIdx(i as u32);
            ensure!(v, m.nodes()[i].is_alive() || list.is_empty(), "dead node {i} still has {} leases", list.len());
            for tid in list {
                *lease_seen.entry(*tid).or_insert(0) += 1;
                let Some(t) = m.tasks.get(tid) else {
                    v.push(format!("leased[{i}] holds task {:x}, which is not live", tid.0));
                    continue;
                };
                ensure!(
                    v,
                    t.node.get() == Some(node),
                    "task {:x} leased on node {i} but its node is {:?}",
                    tid.0,
                    t.node.get()
                );
                if t.kind == TaskType::DriverTask {
                    ensure!(v, !t.holds_resources, "driver {:x} holds resources", tid.0);
                    continue;
                }
                ensure!(
                    v,
                    t.holds_resources,
                    "task {:x} ({}) is in leased[{i}] without holding resources",
                    tid.0,
                    t.state()
                );
                if !t.holds_resources {
                    continue;
                }
                let req = &self.e.specs[t.spec as usize].request;
                match t.bundle.get() {
                    Some(b) => add_req(in_bundle.entry(b).or_insert_with(|| ResVec::zeros(kinds)), req, 1),
                    None => {
                        add_req(&mut reserved[i], req, 1);
                        if t.cpu_released {
                            let cpu = ResourceRequest::new(vec![(ResourceId::CPU, req.get(ResourceId::CPU))]);
                            add_req(&mut reserved[i], &cpu, -1);
                        }
                    }
                }
            }
        }
        for t in m.tasks.values() {
            if t.holds_resources {
                let seen = count(&lease_seen, &t.id);
                ensure!(v, seen == 1, "task {:x} holds resources but is in leased lists {seen} times", t.id.0);
            }
            if t.cpu_released {
                ensure!(
                    v,
                    t.holds_resources && t.bundle.is_none() && t.state() == TaskState::RunningInRayGet,
                    "task {:x} lent its CPU back but is {} (holds {}, bundle {:?})",
                    t.id.0,
                    t.state(),
                    t.holds_resources,
                    t.bundle
                );
            }
            if let (true, Some(n)) = (t.state().is_running(), t.node.get()) {
                heap[n.index()] += self.e.specs[t.spec as usize].heap;
            }
        }
        for a in m.actors().values().filter(|a| a.holds_resources) {
            ensure!(v, a.state() == ActorState::Alive, "actor {:x} holds resources while {}", a.id.0, a.state());
            let Some(n) = a.node else {
                v.push(format!("actor {:x} holds resources but has no node", a.id.0));
                continue;
            };
            let req = &self.e.specs[a.creation_spec as usize].request;
            match a.bundle {
                Some(b) => add_req(in_bundle.entry(b).or_insert_with(|| ResVec::zeros(kinds)), req, 1),
                None => add_req(&mut reserved[n.index()], req, 1),
            }
        }
        for pg in m.pgs().values().filter(|p| p.state() != PgState::Removed) {
            for (bi, b) in pg.bundles.iter().enumerate() {
                let used = in_bundle.remove(&(pg.id, bi as u32)).unwrap_or_else(|| ResVec::zeros(kinds));
                let Some(n) = b.node else {
                    ensure!(v, used.0.iter().all(|q| q.is_zero()), "unplaced bundle {}/{bi} has holders", pg.id.0);
                    continue;
                };
                ensure!(v, m.nodes()[n.index()].is_alive(), "bundle {}/{bi} placed on dead node {}", pg.id.0, n.0);
                add_req(&mut reserved[n.index()], &b.request, 1);
                for &(id, q) in &b.request.0 {
                    let avail = b.available.get(id);
                    ensure!(v, avail.0 >= 0, "bundle {}/{bi} has negative {}", pg.id.0, m.resource_names.name(id));
                    ensure!(
                        v,
                        q - avail == used.get(id),
                        "bundle {}/{bi} {}: request {q} − available {avail} != held {}",
                        pg.id.0,
                        m.resource_names.name(id),
                        used.get(id)
                    );
                }
            }
        }
        for ((pg, b), used) in in_bundle {
            ensure!(
                v,
                used.0.iter().all(|q| q.is_zero()),
                "resources held in bundle {}/{b} of a removed or unknown group",
                pg.0
            );
        }
        for (i, n) in m.nodes().iter().enumerate() {
            if !n.is_alive() {
                ensure!(v, self.e.actor_manager.on(NodeIdx(i as u32)).is_empty(), "dead node {i} still has actors");
                ensure!(
                    v,
                    self.e.raylets.resuming_on(NodeIdx(i as u32)).is_empty(),
                    "dead node {i} still has tasks resuming"
                );
                continue;
            }
            for (id, name) in m.resource_names.iter() {
                let (total, avail) = (n.total.get(id), n.available.get(id));
                ensure!(v, avail.0 >= 0 && avail <= total, "node {i} {name}: available {avail} outside [0, {total}]");
                ensure!(
                    v,
                    total - avail == reserved[i].get(id),
                    "node {i} {name}: total {total} − available {avail} != reserved {}",
                    reserved[i].get(id)
                );
            }
            ensure!(
                v,
                n.worker_heap_used.0 == heap[i],
                "node {i}: worker heap {} != {} of running tasks",
                n.worker_heap_used.0,
                heap[i]
            );
        }
    }

    fn objects(&self, v: &mut Violations) {
        let m = &self.e.model;
        let nodes = m.nodes().len();
        let (mut used, mut num, mut spilled, mut inline) =
            (vec![0u64; nodes], vec![0u64; nodes], vec![0u64; nodes], vec![0u64; nodes]);
        // The owner's handle lives in its futures; each consumer holds one per argument.
        let mut holders: FxHashMap<ObjectId, u32> = FxHashMap::default();
        for t in m.tasks.values() {
            let futures = self.e.runs.get(&t.id).map(|r| &r.exec.futures[..]).unwrap_or_default();
            for o in t.args.iter().chain(futures) {
                *holders.entry(*o).or_insert(0) += 1;
                ensure!(v, m.objects.contains_key(o), "task {:x} references object {:x}, which is gone", t.id.0, o.0);
            }
        }
        for (oid, o) in m.objects.iter() {
            let id = oid.0;
            ensure!(
                v,
                o.refs == count(&holders, &oid),
                "object {id:x}: refs {} but {} holders",
                o.refs,
                count(&holders, &oid)
            );
            ensure!(
                v,
                o.refs > 0 || o.status == ObjectStatus::Pending,
                "object {id:x} is {:?} with no references but stays in the table",
                o.status
            );
            match o.status {
                ObjectStatus::Ready if o.inline => {
                    ensure!(v, o.copies.is_empty() && !o.spilled, "inline object {id:x} has plasma copies");
                    match o.primary.get() {
                        Some(p) => inline[p.index()] += o.size,
                        None => v.push(format!("ready inline object {id:x} has no location")),
                    }
                }
                ObjectStatus::Ready => {
                    let Some(p) = o.primary.get() else {
                        v.push(format!("ready object {id:x} has no primary copy"));
                        continue;
                    };
                    ensure!(v, m.nodes()[p.index()].is_alive(), "object {id:x} primary on dead node {}", p.0);
                    if o.spilled {
                        spilled[p.index()] += o.size;
                    } else {
                        used[p.index()] += o.size;
                        num[p.index()] += 1;
                    }
                    for (k, c) in o.copies.iter().enumerate() {
                        ensure!(
                            v,
                            *c != p && !o.copies[..k].contains(c),
                            "object {id:x} copy list {:?} repeats a node",
                            o.copies
                        );
                        ensure!(v, m.nodes()[c.index()].is_alive(), "object {id:x} copy on dead node {}", c.0);
                        used[c.index()] += o.size;
                        num[c.index()] += 1;
                    }
                }
                ObjectStatus::Pending => {
                    ensure!(v, o.primary.is_none() && o.copies.is_empty(), "pending object {id:x} has copies");
                    let producing = o.producer.get().and_then(|p| m.tasks.get(&p)).is_some_and(|t| t.returns == oid);
                    ensure!(v, producing, "pending object {id:x} has no live producer");
                    let mut seen = Vec::new();
                    for w in &o.waiters {
                        if m.tasks.get(w).is_some_and(|t| t.state() == TaskState::PendingArgsAvail) {
                            ensure!(v, !seen.contains(w), "object {id:x} lists waiter {:x} twice", w.0);
                            seen.push(*w);
                        }
                    }
                }
                ObjectStatus::Failed => {
                    ensure!(v, o.primary.is_none() && o.copies.is_empty(), "failed object {id:x} has copies");
                }
                ObjectStatus::Lost => v.push(format!("object {id:x} is LOST outside node-loss handling")),
            }
        }
        // Above the spill threshold every primary copy there has been spilled (only
        // secondary copies may keep a store that full).
        let mut spillable = vec![false; nodes];
        for o in m.objects.values() {
            if let (ObjectStatus::Ready, false, false, Some(p)) = (o.status, o.inline, o.spilled, o.primary.get()) {
                spillable[p.index()] = true;
            }
        }
        for (i, n) in m.nodes().iter().enumerate().filter(|(_, n)| n.is_alive()) {
            let s = &n.store;
            let limit = (s.capacity.0 as f64 * self.e.cfg.object_store.spill_threshold) as u64;
            ensure!(
                v,
                s.used.0 < limit || limit == 0 || !spillable[i],
                "node {i}: store at {} of {} with unspilled primaries",
                s.used.0,
                s.capacity.0
            );
            ensure!(v, s.used.0 == used[i], "node {i}: store used {} != {} in memory", s.used.0, used[i]);
            ensure!(v, s.num_objects == num[i], "node {i}: store holds {} objects, counted {}", s.num_objects, num[i]);
            ensure!(
                v,
                s.spilled.0 == spilled[i],
                "node {i}: spilled {} != {} of spilled primaries",
                s.spilled.0,
                spilled[i]
            );
            ensure!(
                v,
                s.worker_heap.0 == inline[i],
                "node {i}: inline heap {} != {} of inline objects",
                s.worker_heap.0,
                inline[i]
            );
        }
    }
}

mod places;
