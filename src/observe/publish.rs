//! The snapshot of an observed cluster: the contract the model's engine publishes,
//! made from what Ray said, so every page and API reads a live cluster as it reads
//! the model.
//!
//! Owns: turning the [`Store`] into a [`Snapshot`]: node views, jobs, counts, the
//! State API's row tables, Flow Insight's records (rebuilt per job only when that job
//! changed: [`FlowCache`]). What Ray does not say is left at its empty value, never
//! made up: an observed node's memory and object-store use are 0 (Ray's own metrics
//! carry them), an actor has no program depth or flag, a task no argument bytes.
//! Must never: change the store, or read the wall clock for anything but the
//! snapshot's own instant.

use super::flow::{job_record, Totals};
use super::store::{is_terminal_job, job_number, Store};
use crate::model::{
    ActorState, Bytes, Counters, ErrorType, Histogram, JobStatus, Names, NodeState, NodeStats, ObjectStatus, PgState,
    PgStrategy, TaskHistory, TaskState, TaskType, PLACEMENT_MS_BUCKETS,
};
use crate::snapshot::flow::{JobRecord, Recorded, DRIVER_NAME};
use crate::snapshot::{
    ActorCount, ActorExecutorCount, ActorRow, AutoscalerView, JobView, NodeView, ObjectRow, PgRow, RunningCount,
    SchedulerView, Snapshot, Tables, TaskCount, TaskRow, VirtualTime,
};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::sync::Arc;

/// What the cluster said of itself (`/api/version`), for the snapshot's header.
#[derive(Clone, Debug, Default)]
pub struct ClusterInfo {
    pub session_name: String,
    pub ray_version: String,
}

/// Jobs' Flow Insight records and their share of the totals, kept between snapshots:
/// a job is rebuilt only when something of it changed.
#[derive(Default)]
pub struct FlowCache {
    /// Per job: the generation it was built at, its records and totals, and when and
    /// how long its build took.
    jobs: BTreeMap<u32, (u64, Arc<JobRecord>, Arc<Totals>, Built)>,
    /// The last build kept a changed job's older records (`REBUILD_AFTER_COSTS`).
    stale: bool,
    /// The last snapshot and the store's generation it was made at: while nothing
    /// changes, the next is the same one at a later instant (the row tables of 100,000
    /// tasks are not rebuilt every poll).
    last: Option<(u64, Snapshot)>,
}

impl FlowCache {
    /// Whether the last snapshot kept a changed job's older records: another is due
    /// even if nothing more arrives.
    pub fn is_stale(&self) -> bool {
        self.stale
    }
}

/// When a job's records were built and how long that took.
#[derive(Clone, Copy)]
struct Built {
    at: std::time::Instant,
    took: std::time::Duration,
}

/// A job that changed is rebuilt once its last build is this many times its cost old:
/// while a big job streams in, the observer spends at most about a fifth of its time
/// rebuilding it (a job of 1M calls takes seconds) and the rest taking records.
const REBUILD_AFTER_COSTS: u32 = 4;

fn task_type(s: &str) -> TaskType {
    TaskType::parse(s).unwrap_or(TaskType::NormalTask)
}

fn task_state(s: &str) -> TaskState {
    TaskState::parse(s).unwrap_or(TaskState::Nil)
}

fn actor_state(s: &str) -> ActorState {
    ActorState::parse(s).unwrap_or(ActorState::PendingCreation)
}

fn job_status(s: &str) -> JobStatus {
    JobStatus::parse(s).unwrap_or(JobStatus::Running)
}

/// Build a snapshot of the store as of `now_ms` (Unix ms).
pub fn snapshot(store: &Store, info: &ClusterInfo, cache: &mut FlowCache, seq: u64, now_ms: u64) -> Snapshot {
    let now = store.time(now_ms);
    if let Some((generation, last)) = &cache.last {
        if *generation == store.generation && last.session_name == info.session_name {
            return Snapshot { seq, sim_time_us: now, published_at: Some(std::time::Instant::now()), ..last.clone() };
        }
    }
    cache.stale = false;
    let snap = build(store, info, cache, seq, now);
    // A snapshot holding a job's older records is not the store's as of this generation.
    cache.last = (!cache.stale).then(|| (store.generation, snap.clone()));
    snap
}

fn build(store: &Store, info: &ClusterInfo, cache: &mut FlowCache, seq: u64, now: VirtualTime) -> Snapshot {
    let mut names = Names::default();
    // Per node: resources in use by running tasks and alive actors, running tasks, actors.
    let mut used: Vec<FxHashMap<&str, f64>> = vec![FxHashMap::default(); store.nodes.len()];
    let mut running_on = vec![0u64; store.nodes.len()];
    let mut actors_on = vec![0u64; store.nodes.len()];
    let mut task_counts: BTreeMap<(String, String, bool, TaskState), i64> = BTreeMap::new();
    let mut running_counts: BTreeMap<(u32, String, String, bool, TaskState), i64> = BTreeMap::new();
    let mut counters = Counters::default();
    let mut waiting = 0u64;
    for e in store.tasks.values() {
        let t = e.last();
        if t.is_driver() {
            continue;
        }
        let state = task_state(&t.state);
        let name = if t.name.is_empty() { t.func_or_class_name.clone() } else { t.name.clone() };
        counters.tasks_submitted += 1;
        counters.tasks_retried += e.attempts.len() as u64 - 1;
        match state {
            TaskState::Finished => counters.tasks_finished += 1,
            TaskState::Failed => counters.tasks_failed += 1,
            TaskState::PendingNodeAssignment => waiting += 1,
            _ => {}
        }
        *task_counts.entry((name.clone(), t.job_id.clone(), t.attempt_number > 0, state)).or_insert(0) += 1;
        if state.is_running() {
            if let Some(slot) = t.node_id.as_deref().and_then(|n| store.node_slot(n)) {
                running_on[slot as usize] += 1;
                for (r, v) in &t.required_resources {
                    *used[slot as usize].entry(r.as_str()).or_insert(0.0) += v;
                }
                *running_counts.entry((slot, name, t.job_id.clone(), t.attempt_number > 0, state)).or_insert(0) += 1;
            }
        }
    }
    let mut actor_counts: BTreeMap<(String, String, ActorState), i64> = BTreeMap::new();
    let mut executors: BTreeMap<(u32, String, String, bool), i64> = BTreeMap::new();
    let busy: FxHashMap<u64, bool> = store
        .tasks
        .values()
        .filter(|e| task_state(&e.last().state).is_running())
        .filter_map(|e| e.last().actor_id.as_deref().and_then(|a| store.actor_number(a)))
        .map(|a| (a, true))
        .collect();
    for (&id, a) in &store.actors {
        let state = actor_state(&a.state);
        *actor_counts.entry((a.class_name.clone(), a.job_id.clone(), state)).or_insert(0) += 1;
        counters.actors_created += 1;
        counters.actors_restarted += u64::from(a.num_restarts);
        if state == ActorState::Dead {
            counters.actors_died += 1;
        }
        if state == ActorState::Alive {
            if let Some(slot) = a.node_id.as_deref().and_then(|n| store.node_slot(n)) {
                actors_on[slot as usize] += 1;
                for (r, v) in &a.required_resources {
                    *used[slot as usize].entry(r.as_str()).or_insert(0.0) += v;
                }
                let key = (slot, a.class_name.clone(), a.job_id.clone(), busy.contains_key(&id));
                *executors.entry(key).or_insert(0) += 1;
            }
        }
    }
    let head = store.nodes.iter().position(|n| n.is_head_node && n.state == "ALIVE").unwrap_or(0) as u32;
    let nodes: Vec<Arc<NodeView>> = store
        .nodes
        .iter()
        .enumerate()
        .map(|(slot, n)| {
            let resources: Vec<(Arc<str>, f64, f64)> = n
                .resources_total
                .iter()
                .filter(|(r, _)| !r.starts_with("node:"))
                .map(|(r, total)| {
                    let in_use = used[slot].get(r.as_str()).copied().unwrap_or(0.0);
                    (Arc::from(r.as_str()), *total, (total - in_use).max(0.0))
                })
                .collect();
            let total_of = |r: &str| n.resources_total.iter().find(|x| x.0 == r).map_or(0, |x| x.1.max(0.0) as u64);
            let alive = n.state == "ALIVE";
            if !alive {
                counters.node_failures += 1;
            }
            Arc::new(NodeView {
                idx: slot as u32,
                node_id: Arc::from(n.node_id.as_str()),
                ip: Arc::from(n.node_ip.as_str()),
                node_type: Arc::from(if n.is_head_node { "head" } else { "worker" }),
                is_head: n.is_head_node,
                state: if alive { NodeState::Alive } else { NodeState::Dead },
                resources: resources.into(),
                memory_total: Bytes(total_of("memory")),
                memory_used: Bytes(0),
                store_capacity: Bytes(total_of("object_store_memory")),
                store_used: Bytes(0),
                store_spilled: Bytes(0),
                store_fallback: Bytes(0),
                store_num_objects: 0,
                worker_heap_objects: 0,
                gpu_model: None,
                gpu_memory: Bytes(0),
                running_tasks: running_on[slot],
                leased_tasks: running_on[slot],
                actors: actors_on[slot],
                started_at_us: n.start_time_ms.map_or(VirtualTime::ZERO, |ms| store.time(ms)),
                died_at_us: (!alive).then(|| n.end_time_ms.map_or(now, |ms| store.time(ms))),
                crashed_at_us: None,
                death_reason: (!alive).then(|| death_reason(n.state_message.as_deref())),
                stats: NodeStats::default(),
            })
        })
        .collect();
    let jobs: Vec<JobView> = store
        .jobs
        .values()
        .map(|j| {
            counters.jobs_finished += u64::from(is_terminal_job(&j.status));
            JobView {
                id: j.job_id.clone(),
                submission_id: j.submission_id.clone().unwrap_or_default(),
                name: j.entrypoint.clone(),
                entrypoint: j.entrypoint.clone(),
                status: job_status(&j.status),
                message: j.message.clone(),
                start_time_us: j.start_time.map_or(VirtualTime::ZERO, |ms| store.time(ms)),
                end_time_us: j.end_time.map(|ms| store.time(ms)),
                driver_node: store.driver_slot(j).unwrap_or(head),
                log: Vec::new(),
                log_total: 0,
            }
        })
        .collect();
    let running_jobs = jobs.iter().filter(|j| !j.status.is_terminal()).count() as u64;
    let mut pg_counts: BTreeMap<String, i64> = BTreeMap::new();
    for p in store.placement_groups.values() {
        *pg_counts.entry(p.state.clone()).or_insert(0) += 1;
    }
    let flow = recorded(store, cache, &mut names);
    let tables = tables(store, &mut names, now);
    let mut cluster_resources: BTreeMap<String, f64> = BTreeMap::new();
    for n in store.nodes.iter().filter(|n| n.state == "ALIVE") {
        for (r, v) in n.resources_total.iter().filter(|(r, _)| !r.starts_with("node:")) {
            *cluster_resources.entry(r.clone()).or_insert(0.0) += v;
        }
    }
    let task_counts = task_counts
        .into_iter()
        .map(|((name, job, is_retry, state), count)| TaskCount { name, job, is_retry, state, count })
        .collect();
    let running_counts = running_counts
        .into_iter()
        .map(|((node, name, job, is_retry, state), count)| RunningCount { node, name, job, is_retry, state, count })
        .collect();
    let actor_counts =
        actor_counts.into_iter().map(|((class, job, state), count)| ActorCount { class, job, state, count }).collect();
    let actor_executor_counts = executors
        .into_iter()
        .map(|((node, class, job, running), count)| ActorExecutorCount { node, class, job, running, count })
        .collect();
    Snapshot {
        seq,
        sim_time_us: now,
        session_name: info.session_name.clone(),
        version: info.ray_version.clone(),
        seed: 0,
        speed: 1.0,
        lag_seconds: 0.0,
        events_processed: store.generation,
        event_log_lines: 0,
        head,
        nodes,
        names: Arc::new(names.all().to_vec()),
        task_counts,
        running_counts,
        actor_counts,
        actor_executor_counts,
        pg_counts,
        jobs,
        running_jobs,
        counters,
        objects_live: store.objects.len() as u64,
        placement_ms: std::array::from_fn(|_| Histogram::new(PLACEMENT_MS_BUCKETS)),
        scheduler: SchedulerView {
            waiting_for_resources: waiting,
            infeasible: 0,
            waiting_for_bundle: 0,
            pending_placement_groups: store.placement_groups.values().filter(|p| p.state == "PENDING").count() as u64,
            dispatched_by_node: Vec::new(),
            executing_by_node: (0..store.nodes.len() as u32).map(|n| (n, running_on[n as usize])).collect(),
        },
        autoscaler: AutoscalerView {
            types: Vec::new(),
            cluster_resources: cluster_resources.into_iter().collect(),
            pending_resources: Vec::new(),
            updates: 0,
        },
        recent_events: Arc::new(Vec::new()),
        cluster_events: Default::default(),
        tables: Some(Arc::new(tables)),
        flow: Arc::new(flow),
        published_at: Some(std::time::Instant::now()),
        observed: None,
    }
}

/// Ray's node death messages, as the fixed reasons a node view carries.
fn death_reason(message: Option<&str>) -> &'static str {
    match message.unwrap_or("") {
        m if m.contains("health check") || m.contains("heartbeat") => "health check failed",
        m if m.contains("Expected termination") || m.contains("expected") => "expected termination",
        _ => "unexpected termination",
    }
}

fn recorded(store: &Store, cache: &mut FlowCache, names: &mut Names) -> Recorded {
    let mut calls: BTreeMap<(u32, u32), u64> = BTreeMap::new();
    let mut durations: BTreeMap<u32, Histogram> = BTreeMap::new();
    let mut jobs = BTreeMap::new();
    // Every job held has a record or tasks (a task-less, record-less one has neither).
    let nums: Vec<u32> = store.held_jobs().collect();
    for job in nums {
        let mark = store.job_generation.get(&job).copied().unwrap_or(0);
        let (rec, totals, m, built) = match cache.jobs.get(&job) {
            Some((m, r, t, b)) if *m == mark => (r.clone(), t.clone(), *m, *b),
            Some((m, r, t, b)) if b.at.elapsed() < b.took * REBUILD_AFTER_COSTS => {
                // Changed, but rebuilt too recently for its cost: the next snapshot
                // must not take this one as up to date.
                cache.stale = true;
                (r.clone(), t.clone(), *m, *b)
            }
            _ => {
                let at = std::time::Instant::now();
                let mut totals = Totals::default();
                let Some(rec) = job_record(store, job, &mut totals) else { continue };
                (Arc::new(rec), Arc::new(totals), mark, Built { at, took: at.elapsed() })
            }
        };
        for ((caller, callee), n) in &totals.calls {
            let caller = caller.as_deref().map_or(DRIVER_NAME, |c| names.intern(c).0);
            *calls.entry((caller, names.intern(callee).0)).or_insert(0) += n;
        }
        for (callee, h) in &totals.durations {
            let into = durations.entry(names.intern(callee).0).or_insert_with(|| Histogram::new(h.bounds));
            for (a, b) in into.counts.iter_mut().zip(&h.counts) {
                *a += b;
            }
            into.sum += h.sum;
            into.count += h.count;
        }
        cache.jobs.insert(job, (m, rec.clone(), totals, built));
        jobs.insert(job, rec);
    }
    cache.jobs.retain(|k, _| jobs.contains_key(k));
    Recorded { jobs, cap: store.limits.max_tasks as u64, calls: Arc::new(calls), durations: Arc::new(durations) }
}

fn tables(store: &Store, names: &mut Names, now: VirtualTime) -> Tables {
    let mut spec_requests: Vec<Vec<(String, f64)>> = Vec::new();
    let mut spec_index: BTreeMap<String, u32> = BTreeMap::new();
    let mut spec = |req: &[(String, f64)]| -> u32 {
        let key = format!("{req:?}");
        *spec_index.entry(key).or_insert_with(|| {
            spec_requests.push(req.to_vec());
            (spec_requests.len() - 1) as u32
        })
    };
    let mut live = Vec::new();
    let mut done = Vec::new();
    for e in store.tasks.values() {
        for a in &e.attempts {
            let state = task_state(&a.state);
            let mut history = TaskHistory::submitted(a.submitted_ms().map_or(0, |ms| store.time(ms).as_micros()));
            for (s, ms) in &a.events {
                history.record(task_state(s), store.time(*ms).as_micros());
            }
            let row = TaskRow {
                id: e.id,
                job: e.job,
                name: names.intern(if a.name.is_empty() { &a.func_or_class_name } else { &a.name }).0,
                kind: task_type(&a.kind),
                state,
                attempt: a.attempt_number,
                parent: a.parent_task_id.as_deref().and_then(|p| store.task_number(p)),
                actor: a.actor_id.as_deref().and_then(|x| store.actor_number(x)),
                node: a.node_id.as_deref().and_then(|n| store.node_slot(n)),
                submitted_at_us: a.submitted_ms().map_or(VirtualTime::ZERO, |ms| store.time(ms)),
                started_at_us: a.started_ms().map(|ms| store.time(ms)),
                ended_at_us: a.ended_ms().map(|ms| store.time(ms)),
                error: a.error_type.as_deref().and_then(ErrorType::parse),
                arg_bytes: Bytes(0),
                return_bytes: Bytes(0),
                spec: spec(&a.required_resources),
                placement_group: a.placement_group_id.as_deref().and_then(|p| store.pg_number(p)),
                history,
            };
            if state.is_terminal() {
                done.push(row);
            } else {
                live.push(row);
            }
        }
    }
    done.sort_by_key(|r| (r.ended_at_us.unwrap_or(now), r.id));
    let mut tasks = live;
    tasks.append(&mut done);
    let mut children: FxHashMap<u64, Vec<u64>> = FxHashMap::default();
    let mut owner: FxHashMap<u64, u64> = FxHashMap::default();
    let mut queued: FxHashMap<u64, (u32, u32)> = FxHashMap::default();
    for e in store.tasks.values() {
        let t = e.last();
        let Some(actor) = t.actor_id.as_deref().and_then(|a| store.actor_number(a)) else { continue };
        if t.kind == "ACTOR_CREATION_TASK" {
            let parent = t.parent_task_id.as_deref().and_then(|p| store.task_number(p));
            if let Some(p) = parent {
                owner.insert(actor, p);
                let creator = store
                    .tasks
                    .get(&p)
                    .and_then(|pt| pt.last().actor_id.as_deref())
                    .and_then(|a| store.actor_number(a));
                if let Some(c) = creator.filter(|c| *c != actor) {
                    children.entry(c).or_default().push(actor);
                }
            }
        } else if t.kind == "ACTOR_TASK" {
            let state = task_state(&t.state);
            let q = queued.entry(actor).or_default();
            if state.is_running() {
                q.1 += 1;
            } else if !state.is_terminal() {
                q.0 += 1;
            }
        }
    }
    let actors = store
        .actors
        .iter()
        .map(|(&id, a)| {
            let (queued, running) = queued.get(&id).copied().unwrap_or_default();
            ActorRow {
                id,
                job: job_number(&a.job_id).unwrap_or(0),
                class: names.intern(&a.class_name).0,
                state: actor_state(&a.state),
                node: a.node_id.as_deref().and_then(|n| store.node_slot(n)),
                pid: a.pid.unwrap_or(0),
                creation_spec: spec(&a.required_resources),
                placement_group: a.placement_group_id.as_deref().and_then(|p| store.pg_number(p)),
                num_restarts: a.num_restarts,
                max_restarts: 0,
                death_cause: a.death_cause.clone(),
                level: 0,
                flag: false,
                children: children.remove(&id).unwrap_or_default(),
                owner_task: owner.get(&id).copied().unwrap_or(0),
                queued,
                running,
                created_at_us: a.start_time_ms.map_or(VirtualTime::ZERO, |ms| store.time(ms)),
                ended_at_us: a.end_time_ms.map(|ms| store.time(ms)),
            }
        })
        .collect();
    let by_ip: FxHashMap<&str, u32> =
        store.nodes.iter().enumerate().map(|(i, n)| (n.node_ip.as_str(), i as u32)).collect();
    let objects = store
        .objects
        .iter()
        .enumerate()
        .map(|(i, o)| ObjectRow {
            id: i as u64,
            job: o.object_id.get(48..56).and_then(job_number).unwrap_or(0),
            owner_task: 0,
            size: Bytes(o.object_size.unwrap_or(0)),
            status: if o.task_status == "FAILED" { ObjectStatus::Failed } else { ObjectStatus::Ready },
            inline: false,
            node: by_ip.get(o.ip.as_str()).copied(),
            spilled: false,
            copies: 1,
            refs: 1,
            created_at_us: VirtualTime::ZERO,
            attempt: 0,
            task_status: task_state(&o.task_status),
            owner_pid: o.pid.unwrap_or(0),
            owner_node: by_ip.get(o.ip.as_str()).copied().unwrap_or(0),
        })
        .collect();
    let placement_groups = store
        .placement_groups
        .iter()
        .map(|(&id, p)| PgRow {
            id,
            job: job_number(&p.creator_job_id).unwrap_or(0),
            name: p.name.clone(),
            strategy: PgStrategy::parse(&p.strategy).unwrap_or(PgStrategy::Pack),
            state: PgState::parse(&p.state).unwrap_or(PgState::Pending),
            bundles: p
                .bundles
                .iter()
                .map(|(r, n)| (r.clone(), n.as_deref().and_then(|n| store.node_slot(n))))
                .collect(),
            created_at_us: VirtualTime::ZERO,
        })
        .collect();
    Tables { built_at_us: now, tasks, actors, objects, placement_groups, spec_requests }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::rows::{ObservedJob, ObservedTask};
    use crate::observe::store::{Change, StoreLimits};

    fn call(id: &str, t: u64) -> Change {
        Change::Task(ObservedTask {
            task_id: id.into(),
            job_id: "01000000".into(),
            name: "f".into(),
            kind: "NORMAL_TASK".into(),
            state: "FINISHED".into(),
            events: vec![("PENDING_ARGS_AVAIL".into(), t), ("RUNNING".into(), t + 1), ("FINISHED".into(), t + 2)],
            ..Default::default()
        })
    }

    #[test]
    fn a_changed_job_is_rebuilt_only_once_its_last_build_is_old_for_its_cost() {
        let mut store = Store::new(StoreLimits::default());
        let job = ObservedJob { job_id: "01000000".into(), status: "RUNNING".into(), ..Default::default() };
        store.apply(&Change::Job(job));
        store.apply(&call("a1", 1_000));
        let info = ClusterInfo::default();
        let mut cache = FlowCache::default();
        let calls = |s: &Snapshot| s.flow.jobs[&1].calls;
        assert_eq!(calls(&snapshot(&store, &info, &mut cache, 1, 2_000)), 2);
        // As if the build had taken an hour: a change now keeps the older records...
        cache.jobs.get_mut(&1).unwrap().3.took = std::time::Duration::from_secs(3_600);
        store.apply(&call("a2", 1_100));
        let snap = snapshot(&store, &info, &mut cache, 2, 2_000);
        assert_eq!(calls(&snap), 2, "not rebuilt so soon after a costly build");
        assert!(cache.last.is_none(), "and the snapshot is not taken as up to date");
        // ...until the last build is old enough for its cost.
        cache.jobs.get_mut(&1).unwrap().3.took = std::time::Duration::ZERO;
        assert_eq!(calls(&snapshot(&store, &info, &mut cache, 3, 2_000)), 3);
    }
}
