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
use super::clock::Clock;
use super::cluster_events::EventWriter;
use super::cluster_queues::ClusterQueues;
use super::engine::Engine;
use super::fetch;
use super::jobs::JobManager;
use super::node_runtime::{LocalResources, Raylets};
use super::placement_groups::PlacementGroupManager;
use super::task_runs::TaskRuns;
use super::{exec, retries, task_run, tasks};
use crate::config::Config;
use crate::model::*;
use crate::scheduler::Scheduler;
use crate::workload::CallSpec;
use rand_chacha::ChaCha8Rng;
use std::borrow::Cow;

/// What a component may touch beside its own state: the model's tables (each record's
/// state changes only through its transition), each live task's run, the clock, the node runtime (raylets'
/// lists, and availability through [`LocalResources`]), the config, the programs' specs
/// and the seeded RNG. Another component's state is never in it: a component that must
/// read one gets it as an argument, and one that must change one returns a [`Follow`].
pub(crate) struct Cx<'a> {
    pub(crate) model: &'a mut Model,
    /// Each live task's run state, entering and leaving with its task.
    pub(crate) runs: &'a mut TaskRuns,
    pub(crate) clock: &'a mut Clock,
    pub(crate) raylets: &'a mut Raylets,
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
    /// A failed attempt's lease is back: it leaves its actor and drops its references.
    FailTaskReleased(TaskId, ErrorType, bool),
    /// A failed attempt is retried, or fails for good with what depends on it.
    FailTaskSettled(TaskId, ErrorType, bool),
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
    /// A task whose arguments are being fetched waits in a state until they arrive.
    WaitForFetch(TaskId, u32, u64, TaskState),
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
    /// A node dies (why, and whether it counts as a failure).
    KillNode(NodeIdx, &'static str, bool),
    /// The memory monitor looks at a node.
    CheckMemory(NodeIdx),
    /// Every copy on a dead node is gone.
    LoseObjectsOn(NodeIdx),
    /// A task's return exists on a node.
    SealObject(ObjectId, NodeIdx),
    /// A task's return failed for good.
    ObjectFailed(ObjectId),
    /// An object reference is dropped.
    UnrefObject(ObjectId),
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
    /// A finished task's lease is back: it drops its references.
    FinishReleased(TaskId),
    /// A finished task retires and its result is sealed.
    FinishSettled(TaskId),
    /// A dispatched task whose arguments were lost gave its lease back: it waits for them.
    RewaitArgs(TaskId, u32),
    /// A task's body runs once the memory monitor looked at its node.
    BeginRun(TaskId, NodeIdx),
}

/// The follow-ups of one step, in the order they run.
pub(crate) type Follows = Vec<Follow>;

impl Engine {
    /// Run one follow-up: the component that owns it takes it, and whatever that asks
    /// next runs before this returns (depth first, as the calls it stands for would).
    pub(crate) fn follow(&mut self, f: Follow) {
        match f {
            Follow::FailTask(t, err, retry) => {
                let follows = retries::fail(cx!(self), &mut self.queues, t, err, retry);
                self.follow_all(follows);
            }
            Follow::FailTaskReleased(t, err, retry) => {
                let follows = retries::fail_released(cx!(self), t, err, retry);
                self.follow_all(follows);
            }
            Follow::FailTaskSettled(t, err, retry) => {
                let follows = retries::fail_settled(cx!(self), &mut self.flow, t, err, retry);
                self.follow_all(follows);
            }
            Follow::ActorDied(a, cause, restart) => {
                let follows = self.actor_manager.died(cx!(self), a, cause, restart);
                self.follow_all(follows);
            }
            Follow::ActorDiedReleased(dying) => {
                let follows = ActorManager::died_released(&self.model, dying);
                self.follow_all(follows);
            }
            Follow::ActorDiedAnnounced(dying) => {
                let follows = ActorManager::died_announced(cx!(self), *dying);
                self.follow_all(follows);
            }
            Follow::RestartActor(a) => {
                let follows = ActorManager::restart(cx!(self), self.node_manager.head(), a);
                self.follow_all(follows);
            }
            Follow::ActorCreationSubmitted(a, t, ret) => {
                let follows = ActorManager::creation_submitted(&mut self.model, a, t, ret);
                self.follow_all(follows);
            }
            Follow::ActorCreated(a, n, holds) => {
                let follows = self.actor_manager.on_created(cx!(self), a, n, holds);
                self.follow_all(follows);
            }
            Follow::EnqueueActorTask(t) => {
                let follows = ActorManager::enqueue(cx!(self), t);
                self.follow_all(follows);
            }
            Follow::PumpActor(a) => {
                let follows = self.actor_manager.pump(cx!(self), &mut self.plasma, a);
                self.follow_all(follows);
            }
            Follow::WaitForFetch(t, attempt, micros, state) => {
                fetch::wait_for_fetch(cx!(self), t, attempt, micros, state)
            }
            Follow::EndJob(j, status, message) => {
                let follows = self.jobs.end(cx!(self), j, status, &message);
                self.follow_all(follows);
            }
            Follow::EndJobTasks(j) => {
                let follows = JobManager::end_tasks(&self.model, j);
                self.follow_all(follows);
            }
            Follow::EndJobGroups(j) => {
                let follows = JobManager::end_groups(&self.model, j);
                self.follow_all(follows);
            }
            Follow::NextArrival(m) => self.jobs.next_arrival(cx!(self), m),
            Follow::KillNode(n, reason, failure) => self.kill_node(n, reason, failure),
            Follow::CheckMemory(n) => self.check_memory(n),
            Follow::LoseObjectsOn(n) => self.lose_objects_on(n),
            Follow::SealObject(o, n) => self.seal_object(o, n),
            Follow::ObjectFailed(o) => self.object_failed(o),
            Follow::UnrefObject(o) => self.unref_object(o),
            Follow::HoldFutures(t, attempt, returns) => {
                let follows = exec::hold_futures(&mut self.model, &mut self.runs, t, attempt, returns);
                self.follow_all(follows);
            }
            Follow::FutureResolved(t, failed) => {
                let follows = exec::future_resolved(cx!(self), t, failed);
                self.follow_all(follows);
            }
            Follow::TaskReady(t) => {
                let follows = tasks::task_ready(cx!(self), t);
                self.follow_all(follows);
            }
            Follow::TrySchedule(t) => {
                let follows = self.queues.try_schedule(cx!(self), &self.node_manager, t);
                self.follow_all(follows);
            }
            Follow::TryScheduleInBundle(t, pg, b) => {
                let follows = PlacementGroupManager::try_schedule_in_bundle(cx!(self), &mut self.queues, t, pg, b);
                self.follow_all(follows);
            }
            Follow::ReleaseTaskRefs(t, args_too) => {
                let follows = tasks::release_refs(&mut self.model, &mut self.runs, t, args_too);
                self.follow_all(follows);
            }
            Follow::ResourcesFreed(n) => {
                let follows = ClusterQueues::resources_freed(cx!(self), n);
                self.follow_all(follows);
            }
            Follow::ResumeGetters(n) => {
                let follows = ClusterQueues::resume_next(cx!(self), &self.pg_manager, n);
                self.follow_all(follows);
            }
            Follow::ServeWaiting(n) => self.queues.serve_waiting(cx!(self), n),
            Follow::WakeNewestNode => {
                let follows = self.queues.wake_newest_node(&self.model);
                self.follow_all(follows);
            }
            Follow::ReturnToBundle(pg, b, req) => {
                let follows = PlacementGroupManager::return_to_bundle(&mut self.model, &mut self.queues, pg, b, &req);
                self.follow_all(follows);
            }
            Follow::RetryPendingPgs => {
                let follows = self.pg_manager.retry_pending(cx!(self));
                self.follow_all(follows);
            }
            Follow::RetryPendingPgsIfAny => {
                if self.pg_manager.has_pending() {
                    self.follow(Follow::RetryPendingPgs);
                }
            }
            Follow::RemovePlacementGroup(pg) => {
                let follows = self.pg_manager.remove(cx!(self), &mut self.queues, pg);
                self.follow_all(follows);
            }
            Follow::ReschedulePgsOn(n) => {
                let follows = self.pg_manager.reschedule_on(cx!(self), n);
                self.follow_all(follows);
            }
            Follow::RetryPgs(ids) => {
                let follows = self.pg_manager.retry(cx!(self), ids);
                self.follow_all(follows);
            }
            Follow::ReschedulePgs(n, ids) => {
                let follows = self.pg_manager.reschedule(cx!(self), n, ids);
                self.follow_all(follows);
            }
            Follow::DrainBundleWaiters(pg) => {
                let follows = PlacementGroupManager::drain_bundle_waiters(&mut self.queues, pg);
                self.follow_all(follows);
            }
            Follow::WakeBundleWaiter(t) => self.follow_all(PlacementGroupManager::wake_bundle_waiter(&self.model, t)),
            Follow::RunProgram(t) => self.run_program(t),
            Follow::StartTask(t, n) => {
                let follows = task_run::start(cx!(self), &mut self.flow, t, n);
                self.follow_all(follows);
            }
            Follow::BeginRun(t, n) => {
                let follows = task_run::begin_run(cx!(self), &mut self.flow, t, n);
                self.follow_all(follows);
            }
            Follow::RewaitArgs(t, missing) => task_run::rewait_args(cx!(self), t, missing),
            Follow::FinishTask(t) => {
                let follows = task_run::finish(cx!(self), t);
                self.follow_all(follows);
            }
            Follow::FinishReleased(t) => {
                let follows = task_run::finish_released(cx!(self), t);
                self.follow_all(follows);
            }
            Follow::FinishSettled(t) => {
                let follows = task_run::finish_settled(cx!(self), &mut self.flow, t);
                self.follow_all(follows);
            }
        }
    }

    /// Run follow-ups in order.
    pub(crate) fn follow_all(&mut self, follows: Follows) {
        for f in follows {
            self.follow(f);
        }
    }
}
