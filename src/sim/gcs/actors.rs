//! Actors, as Ray's GCS actor manager keeps them: creation, placement on a node,
//! per-actor call queues, death and restart within `max_restarts`.
//!
//! Owns: [`ActorManager`], which actors are placed on each node. The actor records
//! themselves live in the model's actor table (what the snapshot reads), which only
//! this manager changes ([`Key`]: the other components ask it, as when a worker's
//! process starts or a call leaves an actor's lists). Must never:
//! place an actor's creation task (it is scheduled like any task, `tasks.rs`) or
//! change a node's resources except through the node runtime.

use crate::log_event;
use crate::model::*;
use crate::sim::core_worker::task_runs::Run;
use crate::sim::core_worker::tasks::Call;
use crate::sim::flow_recorder::FlowRecorder;
use crate::sim::follow::{Cx, Dying, Follow, Follows};
use crate::sim::objects::{new_return_object, unref_object, ActorsOn, PlasmaStores};
use crate::workload::ActorOptions;
use smallvec::smallvec;
use std::borrow::Cow;

/// The key to `Model::actors_mut`: only this file can make one, so the actors change
/// only here (and through the model's transitions).
pub struct Key(());

const KEY: Key = Key(());

/// The actors placed on each node slot. Invariant (checked by `check_invariants`): an
/// actor is listed exactly on the node it is ALIVE on, and nowhere while it is not
/// alive; a dead node lists none.
#[derive(Default)]
pub(crate) struct ActorManager {
    on_node: Vec<Vec<ActorId>>,
}

impl ActorsOn for ActorManager {
    fn on(&self, n: NodeIdx) -> &[ActorId] {
        ActorManager::on(self, n)
    }
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
        m.actors_mut(&KEY).insert(aid, actor);
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
        let a = m.actors_mut(&KEY).get_mut(&aid)?;
        if a.state() == ActorState::Dead {
            return None;
        }
        a.node = Some(node);
        a.last_node = Some(node);
        a.holds_resources = holds;
        self.placed(node, aid);
        m.set_actor_state(aid, ActorState::Alive, now);
        Some(m.actors()[&aid].queue.iter().copied().collect())
    }

    /// Per node slot, its actors (for the invariants).
    pub(crate) fn by_node(&self) -> impl Iterator<Item = &[ActorId]> {
        self.on_node.iter().map(|l| l.as_slice())
    }
}

impl ActorManager {
    /// Create an actor: the GCS registers it, then its creation task is submitted; once
    /// the submission's follow-ups ran, the task and its handle are recorded
    /// ([`Follow::ActorCreationSubmitted`]).
    pub(crate) fn create(cx: &mut Cx, flow: &mut FlowRecorder, head: NodeIdx, new: NewActor) -> (ActorId, Follows) {
        let opts = cx.specs[new.spec_id as usize].actor.as_ref().expect("actor constructor spec has actor options");
        let (spec, parent, bundle) = (new.spec_id, new.creator, new.bundle);
        let aid = ActorManager::register(cx.model, opts, new, cx.clock.now);
        let call = Call { spec, parent, args: ObjectList::EMPTY, actor: Some(aid), bundle };
        let (tid, ret, mut follows) = crate::sim::core_worker::tasks::submit(cx, flow, head, call);
        follows.push(Follow::ActorCreationSubmitted(aid, tid, ret));
        (aid, follows)
    }

    /// Actor `aid`'s place in an explicit workload tree (`tree:`), once it is created.
    pub(crate) fn place_in_tree(m: &mut Model, aid: ActorId, tree_node: Option<u32>) {
        if let Some(a) = m.actors_mut(&KEY).get_mut(&aid) {
            a.tree_node = tree_node;
        }
    }

    /// Actor `parent` created `child`'s handle; false when `parent` is not in the table.
    pub(crate) fn child_created(m: &mut Model, parent: ActorId, child: ActorId) -> bool {
        let Some(a) = m.actors_mut(&KEY).get_mut(&parent) else { return false };
        a.children.push(child);
        true
    }

    /// Actor `aid`'s process submits for the first time (true), or had already (false,
    /// or it is not in the table).
    pub(crate) fn first_submit(m: &mut Model, aid: ActorId) -> bool {
        let Some(a) = m.actors_mut(&KEY).get_mut(&aid) else { return false };
        !std::mem::replace(&mut a.submitted, true)
    }

    /// Actor `aid`'s creation task started its dedicated worker process `pid` on `node`
    /// (a new process: it has submitted nothing yet); false when it is not in the table.
    pub(crate) fn process_started(m: &mut Model, aid: ActorId, node: NodeIdx, pid: u32) -> bool {
        let Some(a) = m.actors_mut(&KEY).get_mut(&aid) else { return false };
        a.node = Some(node);
        a.pid = pid;
        a.submitted = false;
        true
    }

    /// Call `tid` of actor `aid` ended: it leaves the running calls, and with `queued`
    /// the queue too (a failed call may not have started).
    pub(crate) fn call_left(m: &mut Model, aid: ActorId, tid: TaskId, queued: bool) {
        let Some(a) = m.actors_mut(&KEY).get_mut(&aid) else { return };
        if let Some(pos) = a.running.iter().position(|x| *x == tid) {
            a.running.swap_remove(pos);
        }
        if queued {
            if let Some(pos) = a.queue.iter().position(|x| *x == tid) {
                a.queue.remove(pos);
            }
        }
    }

    /// An actor on a node that died dies (and may restart elsewhere); its resources are
    /// gone with the node. One actor at a time: one's death may take another's with it.
    pub(crate) fn kill_on_dead_node(m: &mut Model, a: ActorId) -> Follows {
        if let Some(actor) = m.actors_mut(&KEY).get_mut(&a) {
            actor.holds_resources = false;
        }
        smallvec![Follow::ActorDied(a, "the node running the actor died".into(), true)]
    }

    /// The actor's creation task is `tid`; its return `ret` is the handle, which nobody
    /// waits on, so the creator's reference goes.
    pub(crate) fn creation_submitted(m: &mut Model, aid: ActorId, tid: TaskId, ret: ObjectId) -> Follows {
        if let Some(a) = m.actors_mut(&KEY).get_mut(&aid) {
            a.creation_task = tid;
        }
        if let Some(o) = m.objects.get_mut(&ret) {
            o.owner_waits = false;
        }
        unref_object(m, ret);
        Follows::new()
    }

    /// The creation task finished on `node`: the actor is ALIVE there, its queued
    /// calls go to its worker, and the first of them start.
    pub(crate) fn on_created(&mut self, cx: &mut Cx, aid: ActorId, node: NodeIdx, holds: bool) -> Follows {
        let Some(waiting) = self.created(cx.model, aid, node, holds, cx.clock.now) else {
            return Follows::new();
        };
        for tid in waiting {
            push_to_actor(cx.model, tid, cx.clock.now);
        }
        smallvec![Follow::PumpActor(aid)]
    }

    /// An actor call ready to go joins its actor's queue: pushed to the actor's worker at
    /// once if the actor is alive, else when it is (its address is known then).
    pub(crate) fn enqueue(cx: &mut Cx, tid: TaskId) -> Follows {
        let Some(aid) = cx.model.tasks.get(&tid).and_then(|t| t.actor.get()) else { return Follows::new() };
        match cx.model.actors_mut(&KEY).get_mut(&aid) {
            Some(a) if a.state() != ActorState::Dead => {
                a.queue.push_back(tid);
                if a.state() == ActorState::Alive {
                    push_to_actor(cx.model, tid, cx.clock.now);
                }
                smallvec![Follow::PumpActor(aid)]
            }
            _ => smallvec![Follow::FailTask(tid, ErrorType::ActorDied, false)],
        }
    }

    /// Start the next queued call if the actor has free concurrency (one at a time by
    /// default): its arguments are fetched first, or it starts at once and the actor is
    /// pumped again after it started (starting may run it to its end).
    pub(crate) fn pump(&self, cx: &mut Cx, plasma: &mut PlasmaStores, aid: ActorId) -> Follows {
        loop {
            let Some(a) = cx.model.actors_mut(&KEY).get_mut(&aid) else { return Follows::new() };
            if !a.has_free_slot() {
                return Follows::new();
            }
            let Some(tid) = a.queue.pop_front() else { return Follows::new() };
            let node = a.node.expect("alive actor has a node");
            a.running.push(tid);
            let Some(t) = cx.model.tasks.get_mut(&tid) else { continue };
            t.node = Some(node).into();
            let attempt = t.attempt;
            let waiting = TaskState::PendingActorTaskArgsFetch;
            let mut follows = plasma.fetch_args(cx, self, tid, attempt, node, waiting);
            if follows.is_empty() {
                // Waiting for its arguments: the next call may start meanwhile.
                continue;
            }
            // It starts now, or the fetch goes on after a memory look: the actor is
            // pumped again after either.
            follows.push(Follow::PumpActor(aid));
            return follows;
        }
    }

    /// An actor's worker died (node death, OOM kill, `ray.kill`, owner exit). It leaves
    /// its node and gives back what it held; the rest follows once that is handed on
    /// ([`Follow::ActorDiedReleased`]).
    pub(crate) fn died(&mut self, cx: &mut Cx, aid: ActorId, cause: Cow<'static, str>, allow_restart: bool) -> Follows {
        let Some(a) = cx.model.actors_mut(&KEY).get_mut(&aid) else { return Follows::new() };
        if a.state() == ActorState::Dead {
            return Follows::new();
        }
        let node = a.node.take();
        let running = std::mem::take(&mut a.running);
        let restart = allow_restart && (a.max_restarts < 0 || (a.num_restarts as i32) < a.max_restarts);
        let holds = std::mem::take(&mut a.holds_resources);
        let (spec_id, bundle) = (a.creation_spec, a.bundle);
        let mut follows = Follows::new();
        if let Some(n) = node {
            self.left(n, aid);
            cx.cpus.process_exited(n, aid);
            if holds && cx.model.nodes()[n.index()].is_alive() {
                let req = &cx.specs[spec_id as usize].request;
                match bundle {
                    Some((pg, b)) => follows.push(Follow::ReturnToBundle(pg, b, req.clone())),
                    None => {
                        cx.local_resources().release(n, req);
                        follows.push(Follow::ResourcesFreed(n));
                    }
                }
            }
        }
        follows.push(Follow::ActorDiedReleased(Box::new(Dying { aid, cause, restart, node, running })));
        follows
    }

    /// A creation task still in flight dies with the worker; then the death is announced.
    pub(crate) fn died_released(m: &Model, dying: Box<Dying>) -> Follows {
        let creation_task = m.actors()[&dying.aid].creation_task;
        if m.tasks.contains_key(&creation_task) {
            smallvec![Follow::FailTask(creation_task, ErrorType::ActorDied, false), Follow::ActorDiedAnnounced(dying)]
        } else {
            smallvec![Follow::ActorDiedAnnounced(dying)]
        }
    }

    /// The death is recorded. Within `max_restarts` the actor is RESTARTING, its running
    /// calls are retried and its constructor runs again ([`Follow::RestartActor`]);
    /// otherwise it is DEAD, its pending calls fail and its children die with it.
    pub(crate) fn died_announced(cx: &mut Cx, dying: Dying) -> Follows {
        let Dying { aid, cause, restart, node, running } = dying;
        let now = cx.now();
        cx.cluster_events().actor_died(aid, node, &cause, restart);
        let m = &mut *cx.model;
        let a = m.actors_mut(&KEY).get_mut(&aid).expect("actor exists");
        a.death_cause = Some(cause.into_owned());
        if restart {
            a.num_restarts += 1;
            m.counters.actors_restarted += 1;
            m.set_actor_state(aid, ActorState::Restarting, now);
            let mut follows: Follows =
                running.into_iter().map(|t| Follow::FailTask(t, ErrorType::ActorDied, true)).collect();
            // Failing those calls can end the job (the driver sees the error), which kills
            // this actor for good: then there is nothing to restart.
            follows.push(Follow::RestartActor(aid));
            return follows;
        }
        let queued: Vec<TaskId> = a.queue.drain(..).collect();
        let children = a.children.clone();
        m.set_actor_state(aid, ActorState::Dead, now);
        let mut follows: Follows =
            running.into_iter().chain(queued).map(|t| Follow::FailTask(t, ErrorType::ActorDied, false)).collect();
        // Actors fate-share with their owner.
        follows.extend(children.into_iter().map(|c| Follow::ActorDied(c, "owner actor died".into(), false)));
        follows
    }

    /// Run the constructor again (a new attempt of the creation task), unless the actor
    /// died for good meanwhile.
    pub(crate) fn restart(cx: &mut Cx, head: NodeIdx, aid: ActorId) -> Follows {
        if cx.model.actors().get(&aid).is_none_or(|a| a.state() != ActorState::Restarting) {
            return Follows::new();
        }
        let a = &cx.model.actors()[&aid];
        let (spec_id, tid, owner, job, attempt, bundle) =
            (a.creation_spec, a.creation_task, a.owner, a.job, a.num_restarts, a.bundle);
        let owner_node = cx.model.tasks.get(&owner).and_then(|t| t.node.get()).unwrap_or(head);
        let ret = new_return_object(cx, tid, owner, job, spec_id, 0, &ObjectList::EMPTY);
        let name = cx.specs[spec_id as usize].name;
        let m = &mut *cx.model;
        if let Some(o) = m.objects.get_mut(&ret) {
            o.owner_waits = false;
            o.refs = 0;
        }
        let mut task = Task::new(tid, job, name, TaskType::ActorCreationTask, spec_id, owner_node, cx.clock.now);
        task.attempt = attempt;
        task.parent = Some(owner).into();
        task.actor = Some(aid).into();
        task.returns = ret;
        // A restarted actor is placed in its bundle again.
        task.bundle = bundle.into();
        cx.runs.insert_task(m, task, Run::default());
        m.counters.tasks_retried += 1;
        smallvec![Follow::TrySchedule(tid)]
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
