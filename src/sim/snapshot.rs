//! Immutable snapshots of the model, published for readers (metrics, API, flow).
//!
//! Built on the engine thread from aggregates the model keeps incrementally, so the
//! cost is proportional to nodes, names and jobs, not to tasks. The row tables behind
//! the State API (tasks, actors, objects) are the exception: they are rebuilt only
//! while someone reads them, at most once per `tables_every`.

use super::engine::Engine;
use crate::model::*;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One node as readers see it.
#[derive(Clone, Debug, Serialize)]
pub struct NodeView {
    pub idx: u32,
    pub node_id: String,
    pub ip: String,
    pub node_type: String,
    pub is_head: bool,
    pub state: NodeState,
    /// (resource name, total, available), in resource-id order, only kinds the node has.
    pub resources: Vec<(String, f64, f64)>,
    pub memory_total: u64,
    /// Heap of running workers + object store + memory pressure.
    pub memory_used: u64,
    pub store_capacity: u64,
    pub store_used: u64,
    pub store_spilled: u64,
    pub store_fallback: u64,
    pub store_num_objects: u64,
    pub worker_heap_objects: u64,
    pub gpu_model: Option<String>,
    pub gpu_memory: u64,
    pub running_tasks: u64,
    pub leased_tasks: u64,
    pub actors: u64,
    pub started_at_us: u64,
    pub died_at_us: Option<u64>,
    pub death_reason: Option<String>,
    pub stats: NodeStats,
}

/// Tasks per (name, job, retry, state) — the owner's view summed over the cluster.
#[derive(Clone, Debug, Serialize)]
pub struct TaskCount {
    pub name: String,
    pub job: String,
    pub is_retry: bool,
    pub state: TaskState,
    pub count: i64,
}

/// Running tasks per executing node.
#[derive(Clone, Debug, Serialize)]
pub struct RunningCount {
    pub node: u32,
    pub name: String,
    pub job: String,
    pub is_retry: bool,
    pub state: TaskState,
    pub count: i64,
}

#[derive(Clone, Debug, Serialize)]
pub struct ActorCount {
    pub class: String,
    pub job: String,
    pub state: ActorState,
    pub count: i64,
}

/// Alive actors per node, busy (running calls) or idle.
#[derive(Clone, Debug, Serialize)]
pub struct ActorExecutorCount {
    pub node: u32,
    pub class: String,
    pub job: String,
    pub running: bool,
    pub count: i64,
}

#[derive(Clone, Debug, Serialize)]
pub struct JobView {
    pub id: String,
    pub submission_id: String,
    pub name: String,
    pub entrypoint: String,
    pub status: JobStatus,
    pub message: String,
    pub start_time_us: u64,
    pub end_time_us: Option<u64>,
    pub driver_node: u32,
    /// The job's driver log (bounded by the engine), for the Jobs API's `/logs`.
    pub log: Vec<String>,
    /// Lines ever written to the log; `log` holds the last `log.len()` of them.
    pub log_total: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct AutoscalerTypeView {
    pub name: String,
    pub autoscaled: bool,
    pub min_workers: u32,
    pub max_workers: u32,
    pub active: u32,
    pub pending: u32,
    pub recently_failed: u32,
    pub idle: u32,
    pub started_total: u64,
    pub stopped_total: u64,
    pub failed_create_total: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct AutoscalerView {
    pub types: Vec<AutoscalerTypeView>,
    /// Total logical resources of alive nodes, by name.
    pub cluster_resources: Vec<(String, f64)>,
    pub pending_resources: Vec<(String, f64)>,
    pub updates: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct SchedulerView {
    pub waiting_for_resources: u64,
    pub infeasible: u64,
    pub waiting_for_bundle: u64,
    pub pending_placement_groups: u64,
    /// Per node: leases granted but not yet running (Dispatched) and running (Executing).
    pub dispatched_by_node: Vec<(u32, u64)>,
    pub executing_by_node: Vec<(u32, u64)>,
}

/// A compact row of the task table (State API).
#[derive(Clone, Debug, Serialize)]
pub struct TaskRow {
    pub id: u64,
    pub job: u32,
    pub name: u32,
    pub kind: TaskType,
    pub state: TaskState,
    pub attempt: u32,
    pub parent: Option<u64>,
    pub actor: Option<u64>,
    pub node: Option<u32>,
    pub submitted_at_us: u64,
    pub started_at_us: Option<u64>,
    pub ended_at_us: Option<u64>,
    pub error: Option<ErrorType>,
    pub arg_bytes: u64,
    pub return_bytes: u64,
    /// Call-spec index: `Tables::spec_requests[spec]` is its resource request.
    pub spec: u32,
    pub placement_group: Option<u32>,
    pub history: TaskHistory,
}

impl From<&TaskRecord> for TaskRow {
    fn from(r: &TaskRecord) -> TaskRow {
        TaskRow {
            id: r.id.0,
            job: r.job.0,
            name: r.name.0,
            kind: r.kind,
            state: r.state,
            attempt: r.attempt,
            parent: r.parent.map(|p| p.0),
            actor: r.actor.map(|a| a.0),
            node: r.node.map(|n| n.0),
            submitted_at_us: r.submitted_at,
            started_at_us: r.started_at,
            ended_at_us: Some(r.ended_at),
            error: r.error,
            arg_bytes: r.arg_bytes,
            return_bytes: r.return_bytes,
            spec: r.spec,
            placement_group: r.bundle.map(|p| p.0),
            history: r.history,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct ActorRow {
    pub id: u64,
    pub job: u32,
    pub class: u32,
    pub state: ActorState,
    /// Where it runs, or for a dead actor where it last ran.
    pub node: Option<u32>,
    pub pid: u32,
    /// Call-spec index of its constructor (`Tables::spec_requests`).
    pub creation_spec: u32,
    pub placement_group: Option<u32>,
    pub num_restarts: u32,
    pub max_restarts: i32,
    pub death_cause: Option<String>,
    pub level: u32,
    pub flag: bool,
    pub children: Vec<u64>,
    pub owner_task: u64,
    pub queued: u32,
    pub running: u32,
    pub created_at_us: u64,
    pub ended_at_us: Option<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ObjectRow {
    pub id: u64,
    pub job: u32,
    pub owner_task: u64,
    pub size: u64,
    pub status: ObjectStatus,
    pub inline: bool,
    pub node: Option<u32>,
    pub spilled: bool,
    pub copies: u32,
    pub refs: u32,
    pub created_at_us: u64,
    /// The producing task's attempt, and its state (FINISHED once sealed; `NIL` for
    /// `ray.put` objects still being written).
    pub attempt: u32,
    pub task_status: TaskState,
    /// The owner's worker process and the node it runs on (Ray's `pid` and `ip`).
    pub owner_pid: u32,
    pub owner_node: u32,
}

/// A bundle: its resources as (name, amount), and the node it is placed on.
pub type BundleRow = (Vec<(String, f64)>, Option<u32>);

#[derive(Clone, Debug, Serialize)]
pub struct PgRow {
    pub id: u32,
    pub job: u32,
    pub name: String,
    pub strategy: PgStrategy,
    pub state: PgState,
    pub bundles: Vec<BundleRow>,
    pub created_at_us: u64,
}

/// Row tables for the State API (rebuilt on demand).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Tables {
    pub built_at_us: u64,
    /// Live tasks first (by id), then finished ones (oldest first).
    pub tasks: Vec<TaskRow>,
    pub actors: Vec<ActorRow>,
    pub objects: Vec<ObjectRow>,
    pub placement_groups: Vec<PgRow>,
    /// Each call spec's resource request as (name, amount), by spec index.
    pub spec_requests: Vec<Vec<(String, f64)>>,
}

/// Everything a reader may look at, as of one instant of virtual time.
#[derive(Clone, Debug, Serialize)]
pub struct Snapshot {
    pub seq: u64,
    pub sim_time_us: u64,
    pub session_name: String,
    pub version: String,
    pub seed: u64,
    pub speed: f64,
    /// How far virtual time trails where the wall clock says it should be, in seconds.
    pub lag_seconds: f64,
    pub events_processed: u64,
    pub event_log_lines: u64,
    pub head: u32,
    /// Every node in the table; a dead node's view is built once and shared by every
    /// later snapshot (it no longer changes), so a cache of dead nodes costs one view each.
    pub nodes: Vec<Arc<NodeView>>,
    #[serde(skip)]
    pub names: Arc<Vec<String>>,
    pub task_counts: Vec<TaskCount>,
    pub running_counts: Vec<RunningCount>,
    pub actor_counts: Vec<ActorCount>,
    pub actor_executor_counts: Vec<ActorExecutorCount>,
    pub pg_counts: BTreeMap<String, i64>,
    pub jobs: Vec<JobView>,
    pub running_jobs: u64,
    pub counters: CountersView,
    /// Placement time histograms (ms): Task, Actor, PlacementGroup.
    #[serde(skip)]
    pub placement_ms: [Histogram; 3],
    pub scheduler: SchedulerView,
    pub autoscaler: AutoscalerView,
    #[serde(skip)]
    pub recent_events: Arc<Vec<LoggedEvent>>,
    #[serde(skip)]
    pub tables: Option<Arc<Tables>>,
    /// Wall-clock instant the runner published it (serve mode), for its age.
    #[serde(skip)]
    pub published_at: Option<std::time::Instant>,
}

#[derive(Clone, Debug, Serialize)]
pub struct CountersView {
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
    pub objects_live: u64,
    pub objects_reconstructed: u64,
    pub node_failures: u64,
    pub jobs_finished: u64,
    pub jobs_dropped: u64,
    pub pgs_created: u64,
    pub pgs_removed: u64,
    pub workers_started: u64,
    /// (eviction type, name, count)
    pub oom_kills: Vec<(String, String, u64)>,
    /// (failure type, name, count)
    pub worker_failures: Vec<(String, String, u64)>,
}

impl Snapshot {
    pub fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map(|s| s.as_str()).unwrap_or("")
    }
    pub fn node(&self, idx: u32) -> Option<&NodeView> {
        self.nodes.get(idx as usize).map(|v| &**v)
    }
    pub fn head_node(&self) -> Option<&NodeView> {
        self.node(self.head)
    }
}

impl Engine {
    /// Build a snapshot. `tables`: also rebuild the State API row tables.
    pub fn snapshot(&self, seq: u64, speed: f64, lag_seconds: f64, tables: Option<Arc<Tables>>, recent: Arc<Vec<LoggedEvent>>) -> Snapshot {
        let m = &self.model;
        let names = Arc::new(m.names.all().to_vec());
        let mut dead_views = self.dead_node_views.borrow_mut();
        let nodes = m
            .nodes
            .iter()
            .map(|n| {
                let idx = n.idx.index();
                if let Some(Some(v)) = dead_views.get(idx) {
                    if !n.is_alive() && v.node_id == n.node_id {
                        return v.clone();
                    }
                }
                let running = self.leased[idx]
                    .iter()
                    .filter(|t| m.tasks.get(t).is_some_and(|t| t.state.is_running()))
                    .count() as u64
                    + self.actors_on[idx].iter().filter_map(|a| m.actors.get(a)).map(|a| a.running.len() as u64).sum::<u64>();
                let view = NodeView {
                    idx: n.idx.0,
                    node_id: n.node_id.clone(),
                    ip: n.ip.clone(),
                    node_type: n.type_name.clone(),
                    is_head: n.is_head,
                    state: n.state,
                    resources: m
                        .resource_names
                        .iter()
                        .filter(|(id, _)| n.total.get(*id).0 > 0)
                        .map(|(id, name)| (name.to_string(), n.total.get(id).to_f64(), n.available.get(id).to_f64()))
                        .collect(),
                    memory_total: n.memory_bytes.0,
                    memory_used: n.memory_used().0,
                    store_capacity: n.store.capacity.0,
                    store_used: n.store.used.0,
                    store_spilled: n.store.spilled.0,
                    store_fallback: n.store.fallback.0,
                    store_num_objects: n.store.num_objects,
                    worker_heap_objects: n.store.worker_heap.0,
                    gpu_model: n.gpu_model.clone(),
                    gpu_memory: n.gpu_memory.0,
                    running_tasks: running,
                    leased_tasks: self.leased[idx].len() as u64,
                    actors: self.actors_on[idx].len() as u64,
                    started_at_us: n.started_at,
                    died_at_us: n.died_at,
                    death_reason: n.death_reason.clone(),
                    stats: n.stats.clone(),
                };
                let view = Arc::new(view);
                if !n.is_alive() {
                    if dead_views.len() <= idx {
                        dead_views.resize(idx + 1, None);
                    }
                    dead_views[idx] = Some(view.clone());
                }
                view
            })
            .collect();
        drop(dead_views);
        let job_hex = |j: JobId| j.hex();
        let mut task_counts: Vec<TaskCount> = m
            .task_counts
            .iter()
            .map(|(k, v)| TaskCount {
                name: m.names.get(k.name).to_string(),
                job: job_hex(k.job),
                is_retry: k.is_retry,
                state: k.state,
                count: *v,
            })
            .collect();
        task_counts.sort_by(|a, b| (&a.name, &a.job, a.is_retry, a.state).cmp(&(&b.name, &b.job, b.is_retry, b.state)));
        let mut running_counts: Vec<RunningCount> = m
            .running_by_node
            .iter()
            .map(|((n, k), v)| RunningCount {
                node: n.0,
                name: m.names.get(k.name).to_string(),
                job: job_hex(k.job),
                is_retry: k.is_retry,
                state: k.state,
                count: *v,
            })
            .collect();
        running_counts.sort_by(|a, b| (a.node, &a.name, &a.job, a.state).cmp(&(b.node, &b.name, &b.job, b.state)));
        let mut actor_counts: BTreeMap<(NameId, JobId, ActorState), i64> = BTreeMap::new();
        let mut actor_exec: BTreeMap<(u32, NameId, JobId, bool), i64> = BTreeMap::new();
        for a in m.actors.values() {
            *actor_counts.entry((a.class, a.job, a.state)).or_insert(0) += 1;
            if a.state == ActorState::Alive {
                if let Some(n) = a.node {
                    *actor_exec.entry((n.0, a.class, a.job, !a.running.is_empty())).or_insert(0) += 1;
                }
            }
        }
        let mut pg_counts = BTreeMap::new();
        for pg in m.pgs.values() {
            *pg_counts.entry(pg.state.as_str().to_string()).or_insert(0) += 1;
        }
        let jobs: Vec<JobView> = m
            .jobs
            .values()
            .map(|j| JobView {
                id: j.id.hex(),
                submission_id: j.submission_id.clone(),
                name: j.name.clone(),
                entrypoint: j.entrypoint.clone(),
                status: j.status,
                message: j.message.clone(),
                start_time_us: j.start_time,
                end_time_us: j.end_time,
                driver_node: j.driver_node.0,
                log: j.log.clone(),
                log_total: j.log_total,
            })
            .collect();
        let c = &m.counters;
        let mut dispatched = Vec::new();
        let mut executing = Vec::new();
        for (i, leased) in self.leased.iter().enumerate() {
            if !m.nodes[i].is_alive() {
                continue;
            }
            let mut d = 0;
            let mut e = 0;
            for t in leased.iter().filter_map(|t| m.tasks.get(t)) {
                if t.state.is_running() {
                    e += 1;
                } else {
                    d += 1;
                }
            }
            dispatched.push((i as u32, d));
            executing.push((i as u32, e));
        }
        Snapshot {
            seq,
            sim_time_us: self.clock.now,
            session_name: m.session_name.clone(),
            version: m.version.clone(),
            seed: self.cfg.sim.seed,
            speed,
            lag_seconds,
            events_processed: self.events_processed(),
            event_log_lines: m.log.total(),
            head: self.head.0,
            nodes,
            names,
            task_counts,
            running_counts,
            actor_counts: actor_counts
                .into_iter()
                .map(|((class, job, state), count)| ActorCount { class: m.names.get(class).to_string(), job: job.hex(), state, count })
                .collect(),
            actor_executor_counts: actor_exec
                .into_iter()
                .map(|((node, class, job, running), count)| ActorExecutorCount {
                    node,
                    class: m.names.get(class).to_string(),
                    job: job.hex(),
                    running,
                    count,
                })
                .collect(),
            pg_counts,
            running_jobs: m.jobs.values().filter(|j| j.status == JobStatus::Running).count() as u64,
            jobs,
            counters: CountersView {
                tasks_submitted: c.tasks_submitted,
                tasks_finished: c.tasks_finished,
                tasks_failed: c.tasks_failed,
                tasks_retried: c.tasks_retried,
                actors_created: c.actors_created,
                actors_restarted: c.actors_restarted,
                actors_died: c.actors_died,
                spillbacks: c.spillbacks,
                spilled_bytes: c.spilled_bytes,
                spilled_objects: c.spilled_objects,
                restored_bytes: c.restored_bytes,
                restored_objects: c.restored_objects,
                transferred_bytes: c.transferred_bytes,
                objects_created: c.objects_created,
                objects_freed: c.objects_freed,
                objects_live: m.objects.len() as u64,
                objects_reconstructed: c.objects_reconstructed,
                node_failures: c.node_failures,
                jobs_finished: c.jobs_finished,
                jobs_dropped: c.jobs_dropped,
                pgs_created: c.pgs_created,
                pgs_removed: c.pgs_removed,
                workers_started: c.workers_started,
                oom_kills: c.oom_kills.iter().map(|((t, n), v)| (t.to_string(), n.clone(), *v)).collect(),
                worker_failures: c.worker_failures.iter().map(|((t, n), v)| (t.to_string(), n.clone(), *v)).collect(),
            },
            placement_ms: m.placement_ms.clone(),
            scheduler: SchedulerView {
                waiting_for_resources: self.queues.waiting_count() as u64,
                infeasible: self.queues.infeasible_count() as u64,
                waiting_for_bundle: self.queues.bundle_waiters().map(|(_, q)| q.len() as u64).sum(),
                pending_placement_groups: self.queues.pending_pgs().count() as u64,
                dispatched_by_node: dispatched,
                executing_by_node: executing,
            },
            autoscaler: self.autoscaler_view(),
            recent_events: recent,
            tables,
            published_at: None,
        }
    }

    fn autoscaler_view(&self) -> AutoscalerView {
        let m = &self.model;
        let mut types: Vec<AutoscalerTypeView> = Vec::new();
        let head = m.node(self.head);
        types.push(AutoscalerTypeView {
            name: head.type_name.clone(),
            autoscaled: false,
            min_workers: 1,
            max_workers: 1,
            active: m.nodes.iter().filter(|n| n.is_alive() && n.is_head).count() as u32,
            pending: 0,
            recently_failed: 0,
            idle: 0,
            started_total: 0,
            stopped_total: 0,
            failed_create_total: 0,
        });
        for (i, t) in self.autoscaler.types.iter().enumerate() {
            let alive: Vec<&Node> = m.nodes.iter().filter(|n| n.is_alive() && n.node_type == Some(i as u16)).collect();
            let idle = alive.iter().filter(|n| n.available == n.total && self.leased[n.idx.index()].is_empty()).count() as u32;
            types.push(AutoscalerTypeView {
                name: t.name.clone(),
                autoscaled: t.enabled,
                min_workers: t.min,
                max_workers: t.max,
                active: alive.len() as u32,
                pending: t.pending,
                recently_failed: t.recently_failed,
                idle,
                started_total: t.started_total,
                stopped_total: t.stopped_total,
                failed_create_total: t.failed_create_total,
            });
        }
        let mut cluster: Vec<(String, f64)> = m.resource_names.iter().map(|(_, n)| (n.to_string(), 0.0)).collect();
        for n in m.nodes.iter().filter(|n| n.is_alive()) {
            for (id, _) in m.resource_names.iter() {
                cluster[id.index()].1 += n.total.get(id).to_f64();
            }
        }
        AutoscalerView {
            types,
            cluster_resources: cluster,
            pending_resources: self.autoscaler.pending_resources.clone(),
            updates: self.autoscaler.updates,
        }
    }

    /// Rebuild the State API row tables (tasks, actors, objects, placement groups).
    pub fn build_tables(&self) -> Tables {
        let m = &self.model;
        let mut live: Vec<&Task> = m.tasks.values().collect();
        live.sort_by_key(|t| t.id);
        let mut tasks: Vec<TaskRow> = Vec::with_capacity(live.len() + m.finished_tasks.len());
        // Live tasks have not ended: their rows carry no end time.
        tasks.extend(live.into_iter().map(|t| TaskRow { ended_at_us: None, ..TaskRow::from(&t.record(0, 0)) }));
        tasks.extend(m.finished_tasks.iter().map(TaskRow::from));
        let mut actors: Vec<ActorRow> = m
            .actors
            .values()
            .map(|a| ActorRow {
                id: a.id.0,
                job: a.job.0,
                class: a.class.0,
                state: a.state,
                node: a.node.or(if a.state == ActorState::Dead { a.last_node } else { None }).map(|n| n.0),
                pid: a.pid,
                creation_spec: a.creation_spec,
                placement_group: a.bundle.map(|(p, _)| p.0),
                num_restarts: a.num_restarts,
                max_restarts: a.max_restarts,
                death_cause: a.death_cause.clone(),
                level: a.level,
                flag: a.flag,
                children: a.children.iter().map(|c| c.0).collect(),
                owner_task: a.owner.0,
                queued: a.queue.len() as u32,
                running: a.running.len() as u32,
                created_at_us: a.created_at,
                ended_at_us: a.ended_at,
            })
            .collect();
        actors.sort_by_key(|a| a.id);
        let mut objects: Vec<ObjectRow> = m
            .objects
            .values()
            .map(|o| ObjectRow {
                id: o.id.0,
                job: o.job.0,
                owner_task: o.owner.0,
                size: o.size,
                status: o.status,
                inline: o.inline,
                node: o.primary.map(|n| n.0),
                spilled: o.spilled,
                copies: o.copies.len() as u32,
                refs: o.refs,
                created_at_us: o.created_at,
                attempt: o.producer_attempt,
                task_status: match (o.producer.and_then(|p| m.tasks.get(&p)), o.status) {
                    (Some(t), _) => t.state,
                    (None, ObjectStatus::Ready) => TaskState::Finished,
                    (None, ObjectStatus::Failed | ObjectStatus::Lost) => TaskState::Failed,
                    (None, ObjectStatus::Pending) => TaskState::Nil,
                },
                owner_pid: owner_pid(m, o.owner),
                owner_node: m.tasks.get(&o.owner).and_then(|t| t.node.or(Some(t.owner_node))).unwrap_or(self.head).0,
            })
            .collect();
        objects.sort_by_key(|o| o.id);
        let placement_groups = m
            .pgs
            .values()
            .map(|p| PgRow {
                id: p.id.0,
                job: p.job.0,
                name: p.name.clone(),
                strategy: p.strategy,
                state: p.state,
                bundles: p
                    .bundles
                    .iter()
                    .map(|b| {
                        (
                            b.request.0.iter().map(|(id, q)| (m.resource_names.name(*id).to_string(), q.to_f64())).collect(),
                            b.node.map(|n| n.0),
                        )
                    })
                    .collect(),
                created_at_us: p.created_at,
            })
            .collect();
        let spec_requests = self
            .specs
            .iter()
            .map(|c| c.request.0.iter().map(|(id, q)| (m.resource_names.name(*id).to_string(), q.to_f64())).collect())
            .collect();
        Tables { built_at_us: self.clock.now, tasks, actors, objects, placement_groups, spec_requests }
    }

    /// The newest `limit` events, newest first.
    pub fn recent_events(&self, limit: usize) -> Vec<LoggedEvent> {
        self.model.log.recent().take(limit).cloned().collect()
    }
}

/// The process id of the worker running `task` (Ray's owner `pid` of its objects):
/// an actor's own pid, else the synthetic pid of a driver or task worker (see
/// [`crate::model::worker_pid`]).
fn owner_pid(m: &Model, task: TaskId) -> u32 {
    match m.tasks.get(&task) {
        Some(t) => match (t.kind, t.actor.and_then(|a| m.actors.get(&a))) {
            (TaskType::ActorTask | TaskType::ActorCreationTask, Some(a)) => a.pid,
            (TaskType::DriverTask, _) => crate::model::driver_pid(t.job.0),
            _ => crate::model::worker_pid(task.0),
        },
        None => crate::model::worker_pid(task.0),
    }
}
