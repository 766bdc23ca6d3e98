//! Follow-ups: what one component asks of another once its own table is updated.
//!
//! Ray's components talk through RPCs and callbacks: the GCS actor manager tells the
//! owner that an actor died, the owner fails the calls it had queued, the raylet hands a
//! freed CPU to the next lease. Here the same requests are [`Follow`] values. A component
//! updates its own table, returns the follow-ups in the order it would have made the
//! calls, and the engine runs them depth first, before the next event: the event log is
//! exactly what direct calls wrote, and no component needs a handle on another.
//!
//! Owns: the list of requests that cross a component's border, and the one place they
//! are routed ([`Engine::follow`]). Must never: decide anything itself (each arm hands
//! the request to the component that owns it), or defer a follow-up to a later event
//! (that would reorder the log).

use super::actors::{ActorManager, Dying};
use super::autoscaler::Autoscaler;
use super::clock::Clock;
use super::cluster_events::EventWriter;
use super::cluster_queues::ClusterQueues;
use super::engine::Engine;
use super::faults::FaultState;
use super::jobs::JobManager;
use super::node_cpu::NodeCpus;
use super::node_runtime::{LocalResources, Raylets};
use super::objects::{self, PlasmaStores};
use super::placement_groups::PlacementGroupManager;
use super::pull::Pull;
use super::task_runs::TaskRuns;
use super::{futures, retries, task_run, tasks};
use crate::config::Config;
use crate::model::*;
use crate::scheduler::Scheduler;
use crate::workload::CallSpec;
use rand_chacha::ChaCha8Rng;
use smallvec::smallvec;
use smallvec::SmallVec;
use std::borrow::Cow;

/// What a component may touch beside its own state: the model's tables (each record's
/// state changes only through its transition), each live task's run, the clock, the
/// node runtime (raylets' lists, and availability through [`LocalResources`]), the
/// config, the programs' specs and the seeded RNG. Another component's state is never in it: a component that must
/// read one gets it as an argument, and one that must change one returns a [`Follow`].
pub(crate) struct Cx<'a> {
    pub(crate) model: &'a mut Model,
    /// Each live task's run state, entering and leaving with its task.
    pub(crate) runs: &'a mut TaskRuns,
    pub(crate) clock: &'a mut Clock,
    pub(crate) raylets: &'a mut Raylets,
    /// Each node's cores, which Ray's per-call work shares.
    pub(crate) cpus: &'a mut NodeCpus,
    pub(crate) sched: &'a mut Scheduler,
    pub(crate) cfg: &'a Config,
    pub(crate) specs: &'a [CallSpec],
    pub(crate) rng: &'a mut ChaCha8Rng,
}

impl Cx<'_> {
    /// Virtual time now, in µs.
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        self.clock.now
    }

    /// The node runtime: the one way to change a node's availability.
    pub(crate) fn local_resources(&mut self) -> LocalResources<'_> {
        LocalResources::of(&mut self.model.nodes, self.sched)
    }

    /// The cluster-event writer, at the current instant.
    pub(crate) fn cluster_events(&mut self) -> EventWriter<'_> {
        EventWriter::at(self.model, self.clock.now)
    }
}

/// The context of a component call, borrowed from the engine's fields (so the component
/// itself, another field, can be borrowed beside it): `cx!(self)`.
macro_rules! cx {
    ($e:expr) => {
        &mut $crate::sim::follow::Cx {
            model: &mut $e.model,
            runs: &mut $e.runs,
            clock: &mut $e.clock,
            raylets: &mut $e.raylets,
            cpus: &mut $e.cpus,
            sched: &mut $e.sched,
            cfg: &$e.cfg,
            specs: &$e.specs,
            rng: &mut $e.rng,
        }
    };
}
pub(crate) use cx;

/// A request from one component to another, run at once by [`Engine::follow`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Follow {
    /// The owner fails a task (retrying it if allowed and budgeted).
    FailTask(TaskId, ErrorType, bool),
    /// A failed attempt's lease is back: it leaves its actor, drops its references, and
    /// is retried or fails for good.
    FailTaskReleased(TaskId, ErrorType, bool),
    /// The GCS actor manager hears that an actor's worker died (restart allowed or not).
    ActorDied(ActorId, Cow<'static, str>, bool),
    /// An actor's creation task is submitted: record it, drop the creator's handle ref.
    ActorCreationSubmitted(ActorId, TaskId, ObjectId),
    /// A dying actor gave back what it held: its creation task fails if still in flight.
    ActorDiedReleased(Box<Dying>),
    /// A dying actor's death is recorded: its calls fail or retry, its children die.
    ActorDiedAnnounced(Box<Dying>),
    /// A restarting actor's constructor runs again (unless it died for good meanwhile).
    RestartActor(ActorId),
    /// An actor's creation task finished on a node (holding its resources or not).
    ActorCreated(ActorId, NodeIdx, bool),
    /// An actor call whose arguments are ready joins its actor's queue.
    EnqueueActorTask(TaskId),
    /// An actor may start queued calls.
    PumpActor(ActorId),
    /// A job ends with a status and a message.
    EndJob(JobId, JobStatus, Cow<'static, str>),
    /// An ended job's tasks fail, once its actors are dead.
    EndJobTasks(JobId),
    /// An ended job's groups are removed and its driver's references dropped.
    EndJobGroups(JobId),
    /// A job mix draws its next arrival.
    NextArrival(usize),
    /// A node's host fails: it stops answering, and the GCS notices later (why).
    CrashNode(NodeIdx, &'static str),
    /// A node dies (why, and whether it counts as a failure).
    KillNode(NodeIdx, &'static str, bool),
    /// A task leased on a dead node fails (its job, if it was the driver).
    FailLeaseOnDeadNode(TaskId),
    /// A dead node's getters stop waiting and its actors die, once its leases failed.
    KillActorsOnDeadNode(NodeIdx),
    /// An actor on a dead node dies, its resources gone with the node.
    KillActorOnDeadNode(ActorId),
    /// Work only a dead node could hold is asked again, once its actors died.
    RequeueStrandedBy(NodeIdx),
    /// A dead node's store reads empty, once its objects are lost.
    EmptyDeadStore(NodeIdx),
    /// A dead node's lists are given back and the GCS caches it, once its groups moved.
    ForgetDeadNode(NodeIdx),
    /// A node comes back at this IP as a new raylet (a new node id).
    RestoreNode(String),
    /// The memory monitor looks at a node.
    CheckMemory(NodeIdx),
    /// The memory monitor looks again later if a node is still above the threshold
    /// once the work it killed there has failed.
    RecheckMemory(NodeIdx),
    /// The autoscaler terminates an idle worker.
    TerminateIdleNode(NodeIdx),
    /// The autoscaler schedules its next look, once the idle workers went.
    NextAutoscalerTick,
    /// A node of this type joins, the launch having come due; the autoscaler counts it.
    LaunchNode(u16),
    /// Every copy on a dead node is gone.
    LoseObjectsOn(NodeIdx),
    /// A task's return exists on a node.
    SealObject(ObjectId, NodeIdx),
    /// A task's return failed for good.
    ObjectFailed(ObjectId),
    /// A sealed object's readers wake (once the memory monitor looked at its store).
    WakeReaders(ObjectId),
    /// One of a waiting task's arguments is ready: the task counts it.
    ArgReady(TaskId),
    /// One of a waiting task's arguments failed: the task fails, if it still waits.
    ArgFailed(TaskId),
    /// An object goes if nobody holds it (once its readers ran).
    FreeIfUnreferenced(ObjectId),
    /// A pull to a task's node goes on (once the memory monitor looked at a store it grew).
    GoOnPulling(Box<Pull>),
    /// A put object (of a task's attempt, with its size) is sealed: Flow Insight records
    /// the put and the task holds the object.
    PutSealed(TaskId, u32, ObjectId, u64),
    /// An object left without a copy is reconstructed, or its readers fail.
    ReconstructOrFail(ObjectId),
    /// An owner holds the futures it just got.
    HoldFutures(TaskId, u32, Vec<ObjectId>),
    /// A future of a task resolved (or failed).
    FutureResolved(TaskId, bool),
    /// A task's arguments are all available.
    TaskReady(TaskId),
    /// The scheduler tries to place a task.
    TrySchedule(TaskId),
    /// A task in a placement group bundle tries to start there.
    TryScheduleInBundle(TaskId, PgId, u32),
    /// A task drops its references (its arguments too, or only its futures).
    ReleaseTaskRefs(TaskId, bool),
    /// Resources came free on a node.
    ResourcesFreed(NodeIdx),
    /// The next getter returning from `ray.get` on a node takes its CPU back.
    ResumeGetters(NodeIdx),
    /// A node serves the waiting scheduling classes.
    ServeWaiting(NodeIdx),
    /// The newest node serves the waiting classes (a node joined).
    WakeNewestNode,
    /// A bundle gets resources back.
    ReturnToBundle(PgId, u32, ResourceRequest),
    /// Pending placement groups try again.
    RetryPendingPgs,
    /// Pending placement groups try again, if there are any now.
    RetryPendingPgsIfAny,
    /// A placement group is removed.
    RemovePlacementGroup(PgId),
    /// The groups with bundles on a dead node are placed again.
    ReschedulePgsOn(NodeIdx),
    /// A retry of pending groups goes on with those not tried yet (the last one placed
    /// has had its creator and waiters run first).
    RetryPgs(Vec<PgId>),
    /// Rescheduling after a node's loss goes on with the groups not rescheduled yet.
    ReschedulePgs(NodeIdx, Vec<PgId>),
    /// A placed group's bundle waiters try again (after its creator resumed).
    DrainBundleWaiters(PgId),
    /// A task that waited for room in a bundle tries again, if it still exists.
    WakeBundleWaiter(TaskId),
    /// A worker runs a task's program on.
    RunProgram(TaskId),
    /// A task starts on a node.
    StartTask(TaskId, NodeIdx),
    /// A task's program ended.
    FinishTask(TaskId),
    /// A finished normal task's lease passes to its owner's next queued task of the same
    /// kind, or goes back.
    ReuseOrReleaseLease(TaskId),
    /// A finished task's lease is back: it drops its references, retires, and its
    /// result is sealed.
    FinishReleased(TaskId),
    /// A dispatched task whose arguments were lost gave its lease back: it waits for them.
    RewaitArgs(TaskId, u32),
    /// A task's body runs once the memory monitor looked at its node.
    BeginRun(TaskId, NodeIdx),
}

/// The follow-ups of one step, in the order they run. Most steps ask for none, one or
/// two, so two live inline and most steps allocate nothing (BENCHMARKS.md).
pub(crate) type Follows = SmallVec<[Follow; 2]>;

impl Engine {
    /// Run one follow-up, and whatever it asks next, before returning.
    pub(crate) fn follow(&mut self, f: Follow) {
        self.follow_all(smallvec![f]);
    }

    /// Run follow-ups in order, depth first: each one's own follow-ups run before the
    /// next one, as the nested calls they stand for would have. An explicit stack rather
    /// than recursion, so a long chain of continuations cannot exhaust the thread's
    /// stack. The engine keeps it: a follow-up that runs the interpreter (which calls
    /// this again) pushes above `base` and drains back to it before this goes on.
    pub(crate) fn follow_all(&mut self, follows: Follows) {
        let base = self.follow_stack.len();
        self.push_follows(follows);
        while self.follow_stack.len() > base {
            let mut f = self.follow_stack.pop().expect("the stack is above its base");
            // Most follow-ups ask for one more or none: run a chain of single ones
            // without the stack, and put the rest of a longer list on it.
            loop {
                let mut next = self.route(f);
                f = match next.len() {
                    0 => break,
                    1 => next.pop().expect("one follow-up"),
                    _ => {
                        self.push_follows(next);
                        self.follow_stack.pop().expect("just pushed")
                    }
                };
            }
        }
    }

    /// Put follow-ups on the stack so that the first comes off first. Popping the list
    /// rather than iterating it: a list's iterator moves the whole inline buffer.
    fn push_follows(&mut self, mut follows: Follows) {
        self.follow_stack.reserve(follows.len());
        while let Some(f) = follows.pop() {
            self.follow_stack.push(f);
        }
    }

    /// The component that owns a follow-up takes it and says what follows.
    #[inline(never)]
    fn route(&mut self, f: Follow) -> Follows {
        match f {
            Follow::FailTask(t, err, retry) => retries::fail(cx!(self), &mut self.queues, t, err, retry),
            Follow::FailTaskReleased(t, err, retry) => retries::fail_released(cx!(self), &mut self.flow, t, err, retry),
            Follow::ActorDied(a, cause, restart) => self.actor_manager.died(cx!(self), a, cause, restart),
            Follow::ActorDiedReleased(dying) => ActorManager::died_released(&self.model, dying),
            Follow::ActorDiedAnnounced(dying) => ActorManager::died_announced(cx!(self), *dying),
            Follow::RestartActor(a) => ActorManager::restart(cx!(self), self.node_manager.head(), a),
            Follow::ActorCreationSubmitted(a, t, ret) => ActorManager::creation_submitted(&mut self.model, a, t, ret),
            Follow::ActorCreated(a, n, holds) => self.actor_manager.on_created(cx!(self), a, n, holds),
            Follow::EnqueueActorTask(t) => ActorManager::enqueue(cx!(self), t),
            Follow::PumpActor(a) => self.actor_manager.pump(cx!(self), &mut self.plasma, a),
            Follow::EndJob(j, status, message) => self.jobs.end(cx!(self), j, status, &message),
            Follow::EndJobTasks(j) => JobManager::end_tasks(&self.model, j),
            Follow::EndJobGroups(j) => JobManager::end_groups(&self.model, j),
            Follow::NextArrival(m) => {
                self.jobs.next_arrival(cx!(self), m);
                Follows::new()
            }
            Follow::CrashNode(n, reason) => self.faults.crash_node(cx!(self), n, reason),
            Follow::KillNode(n, reason, failure) => {
                FaultState::kill_node(cx!(self), &mut self.autoscaler, n, reason, failure)
            }
            Follow::FailLeaseOnDeadNode(t) => FaultState::fail_lease_on_dead_node(&mut self.model, t),
            Follow::KillActorsOnDeadNode(n) => {
                FaultState::kill_actors_on_dead_node(cx!(self), &mut self.actor_manager, n)
            }
            Follow::KillActorOnDeadNode(a) => FaultState::kill_actor_on_dead_node(&mut self.model, a),
            Follow::RequeueStrandedBy(n) => FaultState::requeue_stranded_by(cx!(self), &mut self.queues, n),
            Follow::EmptyDeadStore(n) => FaultState::empty_dead_store(&mut self.model, n),
            Follow::ForgetDeadNode(n) => {
                FaultState::forget_dead_node(&mut self.raylets, &mut self.plasma, &mut self.node_manager, n);
                self.cpus.lost(n);
                self.queues.gc.lost(n);
                Follows::new()
            }
            Follow::RestoreNode(ip) => {
                if let Some(n) = self.node_manager.alive_at(&self.model, &ip) {
                    self.faults.restore_after_death(&mut self.model, n, self.clock.now);
                    return Follows::new();
                }
                if let Some(node_type) = self.node_manager.returning_type(&self.model, &self.cfg.cluster, &ip) {
                    self.add_node(node_type, ip);
                }
                Follows::new()
            }
            Follow::CheckMemory(n) => self.faults.check_memory(cx!(self), &self.actor_manager, n),
            Follow::RecheckMemory(n) => {
                self.faults.recheck_memory(cx!(self), n);
                Follows::new()
            }
            Follow::TerminateIdleNode(n) => Autoscaler::terminate_idle_node(cx!(self), n),
            Follow::NextAutoscalerTick => {
                Autoscaler::schedule_next_tick(cx!(self), &self.jobs, &self.queues);
                Follows::new()
            }
            Follow::LaunchNode(t) => {
                let launched = self.launch_node_of_type(t);
                self.autoscaler.launch_done(cx!(self), t, launched.is_some());
                Follows::new()
            }
            Follow::LoseObjectsOn(n) => self.plasma.lose_objects_on(cx!(self), &self.actor_manager, n),
            Follow::SealObject(o, n) => self.plasma.seal(cx!(self), &self.actor_manager, o, n),
            Follow::ObjectFailed(o) => objects::object_failed(&mut self.model, o),
            Follow::WakeReaders(o) => objects::wake_readers(&mut self.model, o),
            Follow::ArgReady(t) => objects::arg_ready(&self.model, &mut self.runs, t),
            Follow::ArgFailed(t) => objects::arg_failed(&self.model, t),
            Follow::FreeIfUnreferenced(o) => {
                PlasmaStores::free_if_unreferenced(&mut self.model, o);
                Follows::new()
            }
            Follow::GoOnPulling(fetch) => self.plasma.go_on_pulling(cx!(self), &self.actor_manager, *fetch),
            Follow::PutSealed(t, attempt, o, size) => {
                objects::put_sealed(cx!(self), &mut self.flow, t, attempt, o, size)
            }
            Follow::ReconstructOrFail(o) => objects::reconstruct_or_fail(cx!(self), self.node_manager.head(), o),
            Follow::HoldFutures(t, attempt, returns) => {
                futures::hold_futures(&mut self.model, &mut self.runs, t, attempt, returns)
            }
            Follow::FutureResolved(t, failed) => futures::future_resolved(cx!(self), t, failed),
            Follow::TaskReady(t) => tasks::task_ready(cx!(self), t),
            Follow::TrySchedule(t) => self.queues.try_schedule(cx!(self), &self.node_manager, t),
            Follow::TryScheduleInBundle(t, pg, b) => {
                PlacementGroupManager::try_schedule_in_bundle(cx!(self), &mut self.queues, t, pg, b)
            }
            Follow::ReleaseTaskRefs(t, args_too) => {
                tasks::release_refs(&mut self.model, &mut self.runs, t, args_too);
                Follows::new()
            }
            Follow::ResourcesFreed(n) => ClusterQueues::resources_freed(cx!(self), n),
            Follow::ResumeGetters(n) => self.queues.resume_next(cx!(self), &self.pg_manager, n),
            Follow::ServeWaiting(n) => {
                self.queues.serve_waiting(cx!(self), n);
                Follows::new()
            }
            Follow::WakeNewestNode => self.queues.wake_newest_node(&self.model),
            Follow::ReturnToBundle(pg, b, req) => {
                PlacementGroupManager::return_to_bundle(&mut self.model, &mut self.queues, pg, b, &req)
            }
            Follow::RetryPendingPgs => self.pg_manager.retry_pending(cx!(self)),
            Follow::RetryPendingPgsIfAny => {
                if self.pg_manager.has_pending() {
                    smallvec![Follow::RetryPendingPgs]
                } else {
                    Follows::new()
                }
            }
            Follow::RemovePlacementGroup(pg) => self.pg_manager.remove(cx!(self), &mut self.queues, pg),
            Follow::ReschedulePgsOn(n) => self.pg_manager.reschedule_on(cx!(self), n),
            Follow::RetryPgs(ids) => self.pg_manager.retry(cx!(self), ids),
            Follow::ReschedulePgs(n, ids) => self.pg_manager.reschedule(cx!(self), n, ids),
            Follow::DrainBundleWaiters(pg) => PlacementGroupManager::drain_bundle_waiters(&mut self.queues, pg),
            Follow::WakeBundleWaiter(t) => PlacementGroupManager::wake_bundle_waiter(&self.model, t),
            Follow::RunProgram(t) => {
                self.run_program(t);
                Follows::new()
            }
            Follow::StartTask(t, n) => task_run::start(cx!(self), &mut self.flow, t, n),
            Follow::BeginRun(t, n) => task_run::begin_run(cx!(self), &mut self.flow, t, n),
            Follow::RewaitArgs(t, missing) => {
                task_run::rewait_args(cx!(self), t, missing);
                Follows::new()
            }
            Follow::FinishTask(t) => task_run::finish(cx!(self), &mut self.flow, t),
            Follow::ReuseOrReleaseLease(t) => self.queues.reuse_or_release_lease(cx!(self), t),
            Follow::FinishReleased(t) => task_run::finish_released(cx!(self), &mut self.flow, t),
        }
    }
}
