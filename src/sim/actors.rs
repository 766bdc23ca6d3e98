//! Actors, as Ray's GCS actor manager keeps them: creation, placement on a node,
//! per-actor call queues, death and restart within `max_restarts`.
//!
//! Owns: [`ActorManager`], which actors are placed on each node. The actor records
//! themselves live in the model's actor table (what the snapshot reads). Must never:
//! place an actor's creation task (it is scheduled like any task, `tasks.rs`) or
//! change a node's resources except through the node runtime.

use super::engine::Engine;
use super::follow::{cx, Follow};
use crate::log_event;
use crate::model::*;
use crate::workload::ActorOptions;

/// The actors placed on each node slot. Invariant (checked by `check_invariants`): an
/// actor is listed exactly on the node it is ALIVE on, and nowhere while it is not
/// alive; a dead node lists none.
#[derive(Default)]
pub(crate) struct ActorManager {
    on_node: Vec<Vec<ActorId>>,
}

/// What the creating code says of a new actor, beside its constructor's options.
pub(crate) struct NewActor {
    pub(crate) spec_id: u32,
    pub(crate) creator: TaskId,
    /// The workload's tree depth and bottleneck flag for it.
    pub(crate) level: u32,
    pub(crate) flag: bool,
    pub(crate) bundle: Option<(PgId, u32)>,
}

impl ActorManager {
    /// A node joined (or came back in a reused slot) with no actors.
    pub(crate) fn joined(&mut self, n: NodeIdx) {
        let i = n.index();
        if i >= self.on_node.len() {
            self.on_node.resize_with(i + 1, Vec::new);
        }
        self.on_node[i] = Vec::new();
    }

    /// `aid` is alive on `n` now.
    pub(crate) fn placed(&mut self, n: NodeIdx, aid: ActorId) {
        self.on_node[n.index()].push(aid);
    }

    /// `aid` left `n` (it died, or is restarting elsewhere).
    pub(crate) fn left(&mut self, n: NodeIdx, aid: ActorId) {
        let list = &mut self.on_node[n.index()];
        if let Some(pos) = list.iter().position(|x| *x == aid) {
            list.swap_remove(pos);
        }
    }

    /// The actors on `n`, in no particular order.
    #[inline]
    pub(crate) fn on(&self, n: NodeIdx) -> &[ActorId] {
        &self.on_node[n.index()]
    }

    /// Take every actor on `n` (the node died: they die with it).
    pub(crate) fn take_on(&mut self, n: NodeIdx) -> Vec<ActorId> {
        std::mem::take(&mut self.on_node[n.index()])
    }

    /// What `n`'s list holds room for.
    #[cfg(test)]
    pub(crate) fn capacity_on(&self, n: NodeIdx) -> usize {
        self.on_node[n.index()].capacity()
    }

    /// Register a new actor (DEPENDENCIES_UNREADY, then PENDING_CREATION) with its
    /// constructor's options; its creation task is the caller's to submit.
    pub(crate) fn register(m: &mut Model, opts: &ActorOptions, new: NewActor, now: u64) -> ActorId {
        let aid = m.alloc_actor_id();
        let job = m.tasks[&new.creator].job;
        let mut actor = Actor::registered(aid, job, opts.class, new.spec_id, new.creator, now);
        actor.max_restarts = opts.max_restarts;
        actor.max_task_retries = opts.max_task_retries;
        actor.max_concurrency = opts.max_concurrency;
        actor.level = new.level;
        actor.flag = new.flag;
        actor.bundle = new.bundle;
        m.actors.insert(aid, actor);
        m.counters.actors_created += 1;
        log_event!(
            m.log,
            now,
            "actor",
            "{:x} DEPENDENCIES_UNREADY class={} job={} level={} flag={}",
            aid.0,
            m.names.get(opts.class),
            job.hex(),
            new.level,
            new.flag
        );
        m.set_actor_state(aid, ActorState::PendingCreation, now);
        aid
    }

    /// `aid`'s constructor finished on `node`: it is ALIVE and listed there. Returns
    /// the calls queued meanwhile, in order (`None`: it died first).
    pub(crate) fn created(
        &mut self,
        m: &mut Model,
        aid: ActorId,
        node: NodeIdx,
        holds: bool,
        now: u64,
    ) -> Option<Vec<TaskId>> {
        let a = m.actors.get_mut(&aid)?;
        if a.state() == ActorState::Dead {
            return None;
        }
        a.node = Some(node);
        a.last_node = Some(node);
        a.holds_resources = holds;
        self.placed(node, aid);
        m.set_actor_state(aid, ActorState::Alive, now);
        Some(m.actors[&aid].queue.iter().copied().collect())
    }

    /// Per node slot, its actors (for the invariants).
    pub(crate) fn by_node(&self) -> impl Iterator<Item = &[ActorId]> {
        self.on_node.iter().map(|l| l.as_slice())
    }
}

impl Engine {
    /// Create an actor: the GCS registers it, then its creation task is submitted.
    pub(crate) fn create_actor(
        &mut self,
        spec_id: u32,
        creator: TaskId,
        level: u32,
        flag: bool,
        bundle: Option<(PgId, u32)>,
    ) -> ActorId {
        let opts = self.specs[spec_id as usize].actor.as_ref().expect("actor constructor spec has actor options");
        let new = NewActor { spec_id, creator, level, flag, bundle };
        let aid = ActorManager::register(&mut self.model, opts, new, self.clock.now);
        let (tid, ret, follows) = super::tasks::submit(
            cx!(self),
            &mut self.flow,
            self.node_manager.head(),
            super::tasks::Call { spec: spec_id, parent: creator, args: Box::new([]), actor: Some(aid), bundle: bundle },
        );
        self.follow_all(follows);
        if let Some(a) = self.model.actors.get_mut(&aid) {
            a.creation_task = tid;
        }
        // The creation task's return is the handle; nobody waits on it.
        if let Some(o) = self.model.objects.get_mut(&ret) {
            o.owner_waits = false;
        }
        self.follow(Follow::UnrefObject(ret));
        aid
    }

    /// The creation task finished on `node`: the actor is ALIVE there, its queued
    /// calls go to its worker, and the first of them start.
    pub(crate) fn actor_created(&mut self, aid: ActorId, node: NodeIdx, holds: bool) {
        let Some(waiting) = self.actor_manager.created(&mut self.model, aid, node, holds, self.clock.now) else {
            return;
        };
        for tid in waiting {
            push_to_actor(&mut self.model, tid, self.clock.now);
        }
        self.pump_actor(aid);
    }

    /// An actor call ready to go joins its actor's queue: pushed to the actor's worker at
    /// once if the actor is alive, else when it is (its address is known then).
    pub(crate) fn enqueue_actor_task(&mut self, tid: TaskId) {
        let Some(aid) = self.model.tasks.get(&tid).and_then(|t| t.actor) else { return };
        match self.model.actors.get_mut(&aid) {
            Some(a) if a.state() != ActorState::Dead => {
                a.queue.push_back(tid);
                if a.state() == ActorState::Alive {
                    push_to_actor(&mut self.model, tid, self.clock.now);
                }
                self.pump_actor(aid);
            }
            _ => self.follow(Follow::FailTask(tid, ErrorType::ActorDied, false)),
        }
    }

    /// Start queued calls while the actor has free concurrency (one at a time by default).
    pub(crate) fn pump_actor(&mut self, aid: ActorId) {
        loop {
            let Some(a) = self.model.actors.get_mut(&aid) else { return };
            if !a.has_free_slot() {
                return;
            }
            let Some(tid) = a.queue.pop_front() else { return };
            let node = a.node.expect("alive actor has a node");
            a.running.push(tid);
            let Some(t) = self.model.tasks.get_mut(&tid) else { continue };
            t.node = Some(node);
            let attempt = t.attempt;
            let fetch = self.fetch_args(tid, node);
            if fetch > 0 {
                self.model.set_task_state(tid, TaskState::PendingActorTaskArgsFetch, self.clock.now);
                self.clock.schedule_in(fetch, super::clock::Event::ArgsFetched(tid, attempt));
            } else {
                self.follow(Follow::StartTask(tid, node));
            }
        }
    }

    /// An actor's worker died (node death, OOM kill, `ray.kill`, owner exit). It restarts
    /// within `max_restarts` when allowed, else it is DEAD and its pending calls fail.
    pub(crate) fn actor_died(&mut self, aid: ActorId, cause: &str, allow_restart: bool) {
        let Some(a) = self.model.actors.get_mut(&aid) else { return };
        if a.state() == ActorState::Dead {
            return;
        }
        let node = a.node.take();
        let running = std::mem::take(&mut a.running);
        let restart = allow_restart && (a.max_restarts < 0 || (a.num_restarts as i32) < a.max_restarts);
        let holds = std::mem::take(&mut a.holds_resources);
        let (spec_id, creation_task, bundle) = (a.creation_spec, a.creation_task, a.bundle);
        if let Some(n) = node {
            self.actor_manager.left(n, aid);
            if holds && self.model.nodes[n.index()].is_alive() {
                let req = self.specs[spec_id as usize].request.clone();
                match bundle {
                    Some((pg, b)) => self.follow(Follow::ReturnToBundle(pg, b, req.clone())),
                    None => {
                        self.local_resources().release(n, &req);
                        self.follow(Follow::ResourcesFreed(n));
                    }
                }
            }
        }
        // A creation task still in flight dies with the worker.
        if self.model.tasks.contains_key(&creation_task) {
            self.follow(Follow::FailTask(creation_task, ErrorType::ActorDied, false));
        }
        self.cluster_events().actor_died(aid, node, cause, restart);
        if restart {
            let a = self.model.actors.get_mut(&aid).expect("actor exists");
            a.num_restarts += 1;
            a.death_cause = Some(cause.to_string());
            self.model.counters.actors_restarted += 1;
            self.model.set_actor_state(aid, ActorState::Restarting, self.clock.now);
            for tid in running {
                self.follow(Follow::FailTask(tid, ErrorType::ActorDied, true));
            }
            // Failing those calls can end the job (the driver sees the error), which kills
            // this actor for good: then there is nothing to restart.
            if self.model.actors.get(&aid).is_some_and(|a| a.state() == ActorState::Restarting) {
                self.resubmit_actor_creation(aid);
            }
            return;
        }
        let a = self.model.actors.get_mut(&aid).expect("actor exists");
        a.death_cause = Some(cause.to_string());
        let queued: Vec<TaskId> = a.queue.drain(..).collect();
        let children = a.children.clone();
        self.model.set_actor_state(aid, ActorState::Dead, self.clock.now);
        for tid in running.into_iter().chain(queued) {
            self.follow(Follow::FailTask(tid, ErrorType::ActorDied, false));
        }
        // Actors fate-share with their owner.
        for c in children {
            self.actor_died(c, "owner actor died", false);
        }
    }

    /// Run the constructor again (a new attempt of the creation task).
    fn resubmit_actor_creation(&mut self, aid: ActorId) {
        let a = &self.model.actors[&aid];
        let (spec_id, tid, owner, job, attempt, bundle) =
            (a.creation_spec, a.creation_task, a.owner, a.job, a.num_restarts, a.bundle);
        let owner_node = self.model.tasks.get(&owner).and_then(|t| t.node).unwrap_or(self.node_manager.head());
        let ret = super::objects::new_return_object(cx!(self), tid, owner, job, spec_id, 0, &[]);
        let name = self.specs[spec_id as usize].name;
        if let Some(o) = self.model.objects.get_mut(&ret) {
            o.owner_waits = false;
            o.refs = 0;
        }
        let mut task = Task::new(tid, job, name, TaskType::ActorCreationTask, spec_id, owner_node, self.clock.now);
        task.attempt = attempt;
        task.parent = Some(owner);
        task.actor = Some(aid);
        task.returns = ret;
        // A restarted actor is placed in its bundle again.
        task.bundle = bundle;
        self.model.insert_task(task);
        self.model.counters.tasks_retried += 1;
        self.follow(Follow::TrySchedule(tid));
    }
}

/// The owner pushes a call to the actor's worker (SUBMITTED_TO_WORKER), where it waits
/// its turn (PENDING_ACTOR_TASK_ORDERING_OR_CONCURRENCY): Ray 2.60's order.
fn push_to_actor(m: &mut Model, tid: TaskId, now: u64) {
    if m.tasks.get(&tid).is_some_and(|t| t.state() == TaskState::PendingNodeAssignment) {
        m.set_task_state(tid, TaskState::SubmittedToWorker, now);
        m.set_task_state(tid, TaskState::PendingActorTaskOrderingOrConcurrency, now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_actor_is_listed_on_its_node_until_it_leaves() {
        let mut m = ActorManager::default();
        let (a, b) = (NodeIdx(0), NodeIdx(1));
        m.joined(a);
        m.joined(b);
        m.placed(a, ActorId(5));
        m.placed(a, ActorId(6));
        m.placed(b, ActorId(7));
        m.left(a, ActorId(5));
        m.left(a, ActorId(7)); // not on `a`: nothing changes
        assert_eq!(m.on(a), [ActorId(6)]);
        assert_eq!(m.by_node().map(|l| l.len()).collect::<Vec<_>>(), [1, 1]);
        assert_eq!(m.take_on(b), [ActorId(7)]);
        assert!(m.on(b).is_empty());
        m.placed(b, ActorId(8));
        m.joined(b);
        assert!(m.on(b).is_empty(), "a node joining a reused slot inherits no actors");
    }
}
