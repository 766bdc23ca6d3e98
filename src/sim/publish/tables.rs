//! The State API's row tables: tasks, actors, objects, placement groups and the call
//! specs' resource requests.
//!
//! Owns: [`Engine::build_tables`], a whole new [`Tables`] each time (readers hold the
//! old one as long as they like). It walks every live task, actor and object, so the
//! runner calls it only while someone reads the tables, at most once per
//! `tables_every`. Must never: mutate the model; run on every snapshot.

use crate::model::*;
use crate::sim::Engine;
use crate::snapshot::{ActorRow, ObjectRow, PgRow, Tables, TaskRow};

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
            submitted_at_us: VirtualTime(r.submitted_at),
            started_at_us: r.started_at.map(VirtualTime),
            ended_at_us: Some(VirtualTime(r.ended_at)),
            error: r.error,
            arg_bytes: Bytes(r.arg_bytes),
            return_bytes: Bytes(r.return_bytes),
            spec: r.spec,
            placement_group: r.bundle.map(|p| p.0),
            history: r.history,
        }
    }
}

impl Engine {
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
            .actors()
            .values()
            .map(|a| ActorRow {
                id: a.id.0,
                job: a.job.0,
                class: a.class.0,
                state: a.state(),
                node: a.node.or(if a.state() == ActorState::Dead { a.last_node } else { None }).map(|n| n.0),
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
                created_at_us: VirtualTime(a.created_at),
                ended_at_us: a.ended_at.map(VirtualTime),
            })
            .collect();
        actors.sort_by_key(|a| a.id);
        let mut objects: Vec<ObjectRow> = m
            .objects
            .iter()
            .map(|(id, o)| ObjectRow {
                id: id.0,
                job: o.job.0,
                owner_task: o.owner.0,
                size: Bytes(o.size),
                status: o.status,
                inline: o.inline,
                node: o.primary.get().map(|n| n.0),
                spilled: o.spilled,
                copies: o.copies.len() as u32,
                refs: o.refs,
                created_at_us: VirtualTime(o.created_at),
                attempt: o.producer_attempt,
                task_status: match (o.producer.get().and_then(|p| m.tasks.get(&p)), o.status) {
                    (Some(t), _) => t.state(),
                    (None, ObjectStatus::Ready) => TaskState::Finished,
                    (None, ObjectStatus::Failed | ObjectStatus::Lost) => TaskState::Failed,
                    (None, ObjectStatus::Pending) => TaskState::Nil,
                },
                owner_pid: owner_pid(m, o.owner),
                owner_node: m
                    .tasks
                    .get(&o.owner)
                    .and_then(|t| t.node.get().or(Some(t.owner_node)))
                    .unwrap_or(self.node_manager.head())
                    .0,
            })
            .collect();
        objects.sort_by_key(|o| o.id);
        let placement_groups = m
            .pgs()
            .values()
            .map(|p| PgRow {
                id: p.id.0,
                job: p.job.0,
                name: p.name.clone(),
                strategy: p.strategy,
                state: p.state(),
                bundles: p
                    .bundles
                    .iter()
                    .map(|b| {
                        (
                            b.request
                                .0
                                .iter()
                                .map(|(id, q)| (m.resource_names.name(*id).to_string(), q.to_f64()))
                                .collect(),
                            b.node.map(|n| n.0),
                        )
                    })
                    .collect(),
                created_at_us: VirtualTime(p.created_at),
            })
            .collect();
        let spec_requests = self
            .specs
            .iter()
            .map(|c| c.request.0.iter().map(|(id, q)| (m.resource_names.name(*id).to_string(), q.to_f64())).collect())
            .collect();
        Tables { built_at_us: VirtualTime(self.clock.now), tasks, actors, objects, placement_groups, spec_requests }
    }
}

/// The process id of the worker running `task` (Ray's owner `pid` of its objects):
/// an actor's own pid, else the synthetic pid of a driver or task worker (see
/// [`crate::model::worker_pid`]).
fn owner_pid(m: &Model, task: TaskId) -> u32 {
    match m.tasks.get(&task) {
        Some(t) => match (t.kind, t.actor.get().and_then(|a| m.actors().get(&a))) {
            (TaskType::ActorTask | TaskType::ActorCreationTask, Some(a)) => a.pid,
            (TaskType::DriverTask, _) => crate::model::driver_pid(t.job.0),
            _ => crate::model::worker_pid(task.0),
        },
        None => crate::model::worker_pid(task.0),
    }
}
