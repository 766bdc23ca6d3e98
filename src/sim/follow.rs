//! Follow-ups: what one component asks of another once its own table is updated.
//!
//! Ray's components talk through RPCs and callbacks: the GCS actor manager tells the
//! owner that an actor died, the owner fails the calls it had queued, the raylet hands a
//! freed CPU to the next lease. Here the same requests are [`Follow`] values. A component
//! updates its own table, returns the follow-ups in the order it would have made the
//! calls, and the engine runs them depth first, before the next event: the event log is
//! exactly what direct calls wrote, and no component needs a handle on another.
//!
//! Owns: the vocabulary the components share, below all of them: the requests that
//! cross a component's border ([`Follow`], with what a multi-step request carries
//! between its steps: [`Dying`], [`Pull`]) and the narrow context a component runs
//! with ([`Cx`]). Must never: import a component, or route a request (the router,
//! `router.rs`, does, from above).

use super::clock::Clock;
use super::cluster_events::EventWriter;
use super::core_worker::task_runs::TaskRuns;
use super::raylet::node_cpu::NodeCpus;
use super::raylet::node_runtime::{LocalResources, Raylets};
use crate::config::Config;
use crate::model::*;
use crate::scheduler::Scheduler;
use crate::workload::CallSpec;
use rand_chacha::ChaCha8Rng;
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
        LocalResources::of(self.model, self.sched)
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

/// A request from one component to another, run at once by the router (`Engine::follow`).
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

/// An actor on its way out, between the steps of `ActorManager::died`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Dying {
    pub(crate) aid: ActorId,
    pub(crate) cause: Cow<'static, str>,
    pub(crate) restart: bool,
    pub(crate) node: Option<NodeIdx>,
    pub(crate) running: Vec<TaskId>,
}

/// Objects on their way to a task's node: where the pull stands while the memory
/// monitor looks at a store it grew.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Pull {
    pub(crate) tid: TaskId,
    pub(crate) attempt: u32,
    pub(crate) node: NodeIdx,
    /// What the task does once the bytes are there.
    pub(crate) ending: Ending,
    /// The objects as the pull began: its arguments, or what its `ray.get` asks for.
    pub(crate) args: ObjectList,
    /// The next object to look at.
    pub(crate) next: usize,
    /// An argument just restored from disk whose transfer is still to come: its id, size
    /// and primary as the restore found them.
    pub(crate) transfer: Option<(ObjectId, u64, Option<NodeIdx>)>,
    /// The virtual time the pull takes so far (µs).
    pub(crate) micros: f64,
    /// The bytes moved to the node so far.
    pub(crate) fetched: u64,
}

/// What a pull is for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Ending {
    /// A task's arguments: it waits in this state (a leased task's, an actor call's),
    /// then starts.
    Start(TaskState),
    /// A `ray.get`: the getter, already in `RUNNING_IN_RAY_GET`, goes on.
    Get,
}
