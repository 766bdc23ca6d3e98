//! Task bodies as small programs the engine interprets.
//!
//! A remote function, actor constructor or actor method is a list of [`Op`]s: compute,
//! sleep, submit tasks, create actors, call each child actor, `ray.get` everything
//! submitted so far, placement groups, and a loop. This is enough to express each
//! built-in workload exactly (the seed's actor tree included) while keeping per-task
//! state to a program counter and a few counters.

use crate::config::DurationDist;
use crate::model::{NameId, PgStrategy, ResourceRequest, TaskType};
use std::sync::Arc;

/// Index into the engine's registry of call specs.
pub type SpecId = u32;

/// A spec's scheduling strategy as the workload writes it (a node by IP, the caller's
/// group); the engine resolves it to a `scheduler::Strategy` when the task is scheduled.
#[derive(Clone, Debug, PartialEq)]
pub enum StrategySpec {
    Default,
    Spread,
    /// Node affinity by IP (resolved to the node alive at that IP when scheduled).
    NodeAffinity {
        ip: String,
        soft: bool,
    },
    /// In the caller's placement group; the n-th actor created goes to bundle n.
    CallerPlacementGroup,
}

/// Actor options (Ray's `@ray.remote(max_restarts=..., ...)`).
#[derive(Clone, Debug)]
pub struct ActorOptions {
    pub class: NameId,
    pub max_restarts: i32,
    pub max_task_retries: i32,
    pub max_concurrency: u32,
    /// Explicit resources are held while alive; Ray's default (1 CPU) only to be placed.
    pub holds_resources: bool,
}

/// Everything needed to submit a call: a remote function, an actor class (its
/// constructor), or an actor method.
#[derive(Clone, Debug)]
pub struct CallSpec {
    pub kind: TaskType,
    /// `Name` label: function, `Class.__init__`, or `Class.method`.
    pub name: NameId,
    pub request: ResourceRequest,
    pub strategy: StrategySpec,
    pub program: Vec<Op>,
    /// Bytes of the return value.
    pub return_size: u64,
    /// The return value is a numpy array (`value_type: numpy`): a get of it is a view of
    /// the store's memory, not a copy.
    pub zero_copy_return: bool,
    /// The return's put into the object store is inside the program's own stretches (a
    /// replayed call: its recorded execution ran to the put's end), so the engine does
    /// not charge it again.
    pub put_in_body: bool,
    /// Heap bytes the worker uses while running this.
    pub heap: u64,
    pub max_retries: i32,
    pub retry_exceptions: bool,
    /// For actor constructors.
    pub actor: Option<ActorOptions>,
    /// The spec whose scheduling class this one's calls queue in: its own, unless a
    /// replay puts the calls of one function with one request in one class, as Ray's
    /// scheduling class is the function and its request (`workload/replay.rs`). That
    /// spec has the same request, so a class is read through it.
    pub class: SpecId,
}

/// How a created actor's workload parameters are set.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LevelRule {
    Fixed(u32),
    /// One below the creating actor's level; nothing is created at level 0.
    BelowParent,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FlagRule {
    Fixed(bool),
    /// True with this probability, drawn per actor from the seeded RNG.
    Random(f64),
}

/// How many actors a `CreateActors` makes, and their flags.
#[derive(Clone, Debug)]
pub enum Shape {
    /// Between `min` and `max` (count drawn first, then each flag, as the seed's Python does).
    Drawn { min: u32, max: u32, flag: FlagRule },
    /// The creator's children in an explicit tree; a creator outside the tree (the
    /// driver) creates its root.
    Given(Arc<ActorTree>),
}

impl Shape {
    /// `count` unflagged actors.
    pub fn exactly(count: u32) -> Shape {
        Shape::Drawn { min: count, max: count, flag: FlagRule::Fixed(false) }
    }
}

/// An explicit actor tree, flattened: node 0 is the root.
#[derive(Debug, PartialEq)]
pub struct ActorTree {
    pub nodes: Vec<TreeNode>,
}

#[derive(Debug, PartialEq)]
pub struct TreeNode {
    pub flag: bool,
    /// Indexes of its children in `nodes`, in creation order.
    pub children: Vec<u32>,
}

impl ActorTree {
    /// Flatten a config tree, parents before children.
    pub fn from_config(root: &crate::config::WorkerTree) -> ActorTree {
        let mut tree = ActorTree { nodes: Vec::with_capacity(root.size()) };
        tree.push(root);
        tree
    }

    fn push(&mut self, node: &crate::config::WorkerTree) -> u32 {
        let id = self.nodes.len() as u32;
        self.nodes.push(TreeNode { flag: node.bottleneck, children: Vec::new() });
        let children: Vec<u32> = node.children.iter().map(|c| self.push(c)).collect();
        self.nodes[id as usize].children = children;
        id
    }
}

#[derive(Clone, Debug)]
pub enum Op {
    /// Busy computing for a while.
    Compute(DurationDist),
    /// `time.sleep`: holds the worker, uses no CPU.
    Sleep(u64),
    /// A recorded stretch of a replayed call: holds the worker exactly this long (the
    /// recording already holds the sleep's overshoot and the calls' submit costs).
    Hold(u64),
    /// CPU work of this many µs on its node's cores (a replayed call's computing, `simulate
    /// --cpu`): it ends when the cores have done it, so it slows when more work than the
    /// machine has cores runs there.
    Cpu(u64),
    /// Submit `count` calls of a remote function. With `take_futures`, the futures held
    /// so far are split evenly among them as arguments (a reduce step); with `with_puts`,
    /// every call also takes each object the caller put (a broadcast input).
    Submit {
        spec: SpecId,
        count: u32,
        take_futures: bool,
        with_puts: bool,
    },
    /// Create actors, as many and flagged as `shape` says.
    CreateActors {
        spec: SpecId,
        level: LevelRule,
        shape: Shape,
    },
    /// For each child actor handle in order, `calls` times: sleep (`sleep`, plus
    /// `bottleneck_sleep` when this actor is flagged and its children are leaves), then
    /// submit `method` to that child.
    CallEach {
        method: SpecId,
        calls: u32,
        sleep: u64,
        bottleneck_sleep: u64,
    },
    /// `ray.get` on every future held: blocks until all are ready.
    Get,
    /// `ray.put` of this many bytes: the caller holds the object with its futures.
    Put(u64),
    /// Create a placement group and wait until it is ready.
    CreatePlacementGroup {
        bundles: Vec<ResourceRequest>,
        strategy: PgStrategy,
    },
    RemovePlacementGroup,
    /// A replayed job's call `call` (`config::replay`): create the actor in slot `actor`
    /// (`create`), or submit `spec` (a function, or a method on the actor in slot
    /// `actor`) with the returns of the calls `deps` as its arguments.
    Replay {
        spec: SpecId,
        call: u32,
        actor: Option<u32>,
        create: bool,
        deps: Box<[u32]>,
    },
    /// Jump back to `to` until this op has been passed `times` times.
    Repeat {
        to: u16,
        times: u32,
    },
}
