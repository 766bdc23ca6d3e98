//! The engine: one thread, one virtual clock, one seeded RNG, one event queue.
//!
//! Owns: the model, the scheduler, the seeded RNG, and Ray's components as fields, each
//! a struct in the file named for it (ARCHITECTURE.md, "The engine's components"): the
//! clock and event queue (`clock.rs`), the raylets' lists (`node_runtime.rs`; a node's
//! availability changes only through its `LocalResources`), the cluster task queues
//! (`cluster_queues.rs`), the placement group, actor and job managers
//! (`placement_groups.rs`, `actors.rs`, `jobs.rs`), the plasma stores' order
//! (`objects.rs`), faults (`faults.rs`), the autoscaler and Flow Insight's recorder.
//! Here: building the cluster and sending each event to its handler. Events with equal
//! times run in insertion order (the clock's sequence number breaks ties), so the same
//! config and seed always produce the same event log.

use super::actors::ActorManager;
use super::autoscaler::Autoscaler;
use super::clock::{Clock, Event};
use super::cluster_queues::ClusterQueues;
use super::faults::FaultState;
use super::jobs::JobManager;
use super::node_runtime::Raylets;
use super::objects::PlasmaOrder;
use super::placement_groups::PlacementGroupManager;
use crate::config::Config;
use crate::log_event;
use crate::model::*;
use crate::scheduler::{Params, Scheduler};
use crate::workload::{self, CallSpec};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

pub struct Engine {
    pub(crate) cfg: Arc<Config>,
    /// Virtual time and the event queue (`clock.rs`).
    pub(crate) clock: Clock,
    pub(crate) rng: ChaCha8Rng,
    pub model: Model,
    pub(crate) sched: Scheduler,
    pub(crate) specs: Vec<CallSpec>,
    /// Jobs' programs, mixes and live count (`jobs.rs`).
    pub(crate) jobs: JobManager,
    /// Per node: the plasma store's copies in spill and eviction order (`objects.rs`).
    pub(crate) plasma: PlasmaOrder,
    /// Views of dead nodes, built by the first snapshot after they died and shared by
    /// every later one (see `Snapshot::nodes`), and what views share (`publish/nodes.rs`).
    pub(crate) node_views: std::cell::RefCell<super::publish::NodeViewCache>,
    pub(crate) head: NodeIdx,
    /// Each raylet's lists: leases held and getters waiting to resume (`node_runtime.rs`).
    pub(crate) raylets: Raylets,
    /// The actors placed on each node (`actors.rs`).
    pub(crate) actor_manager: ActorManager,
    /// Tasks not placed yet: scheduling classes, infeasible tasks, bundle waiters
    /// (`cluster_queues.rs`).
    pub(crate) queues: ClusterQueues,
    /// Placement groups waiting to be placed (`placement_groups.rs`).
    pub(crate) pg_manager: PlacementGroupManager,
    pub(crate) faults: FaultState,
    pub(crate) autoscaler: Autoscaler,
    /// Actor id → pid-like worker numbers, and per-node worker counts, for the exporter.
    pub(crate) node_by_ip: FxHashMap<String, NodeIdx>,
    /// Per node type: the next address of its range to try.
    ip_cursor: Vec<u32>,
    /// The head's (first) and each node type's name and GPU model, shared by all their
    /// nodes and views: a cached dead node holds no copy of them.
    shape_names: Vec<(Arc<str>, Option<Arc<str>>)>,
    pub(crate) stopped: bool,
    /// Dead nodes still in the node table, in order of death (`dead_nodes.rs`).
    pub(crate) dead_nodes: VecDeque<NodeIdx>,
    /// Nodes ever added: each gets a new node id, even in a reused slot.
    nodes_added: u32,
    /// Flow Insight's record of every call (`flow_recorder.rs`).
    pub(crate) flow: super::flow_recorder::FlowRecorder,
}

impl Engine {
    /// Build the cluster and the workloads from a validated config.
    pub fn new(cfg: Config) -> Engine {
        Engine::with_events_sink(cfg, None)
    }

    /// As [`Engine::new`], streaming every event-log line to `sink` from the first one
    /// (the cluster's setup included), so the stream is exactly what the digest covers.
    pub fn with_events_sink(cfg: Config, sink: Option<Box<dyn std::io::Write + Send>>) -> Engine {
        let cfg = Arc::new(cfg);
        let seed = cfg.sim.seed;
        let session = cfg.cluster.session_name.clone().unwrap_or_else(|| session_name_for(seed));
        let mut resource_names = ResourceNames::default();
        for r in cfg.cluster.head.resources.keys() {
            resource_names.intern(r);
        }
        for t in &cfg.cluster.node_types {
            for r in t.resources.keys() {
                resource_names.intern(r);
            }
        }
        // The model's bounds, from the config's `sim` section (the model knows no config).
        let limits = Limits {
            finished_task_capacity: cfg.sim.finished_task_capacity,
            dead_actor_capacity: cfg.sim.dead_actor_capacity,
            finished_job_capacity: cfg.sim.finished_job_capacity,
            event_log_capacity: cfg.sim.event_log_capacity,
            cluster_event_capacity: cfg.sim.cluster_event_capacity,
        };
        let mut model = Model::new(session, cfg.cluster.ray_version.clone(), resource_names, limits);
        if let Some(sink) = sink {
            model.log.set_sink(sink);
        }
        let plan = workload::plan(&cfg.workloads, &mut model.names, &mut model.resource_names);
        // Only the object table is sized up front. Tasks leave their table as they finish,
        // at the pace of the cluster's slots (about 12k live at scale.yaml's peak), and a
        // table's ring walks through all of its capacity: sized for the million tasks it
        // faulted in 220 MB to hold a window of thousands. The objects' estimate gets
        // headroom: a window one slot short of it would double (and copy) the table.
        let objects = workload::Plan::expected_peak_objects(&cfg.workloads);
        model.objects.reserve(objects + objects / 16);
        let mut engine = Engine {
            rng: ChaCha8Rng::seed_from_u64(seed),
            clock: Clock::default(),
            sched: Scheduler::new(Params::from(&cfg.scheduler)),
            specs: plan.specs,
            jobs: JobManager::default(),
            plasma: PlasmaOrder::default(),
            node_views: Default::default(),
            head: NodeIdx(0),
            raylets: Raylets::default(),
            actor_manager: ActorManager::default(),
            queues: ClusterQueues::default(),
            pg_manager: PlacementGroupManager::default(),
            faults: FaultState::default(),
            autoscaler: Autoscaler::new(&cfg.cluster),
            node_by_ip: FxHashMap::default(),
            ip_cursor: vec![0; cfg.cluster.node_types.len()],
            shape_names: std::iter::once((&cfg.cluster.head.name, &cfg.cluster.head.gpu_model))
                .chain(cfg.cluster.node_types.iter().map(|t| (&t.name, &t.gpu_model)))
                .map(|(name, gpu)| (Arc::from(name.as_str()), gpu.as_deref().map(Arc::from)))
                .collect(),
            stopped: false,
            dead_nodes: VecDeque::new(),
            nodes_added: 0,
            flow: super::flow_recorder::FlowRecorder::new(cfg.sim.flow_calls_per_job),
            model,
            cfg: cfg.clone(),
        };
        engine.build_cluster();
        for (start, t) in plan.jobs {
            let idx = engine.jobs.add_template(t);
            engine.jobs.expect_start();
            engine.schedule_at(start, Event::StartJob(idx));
        }
        for mix in plan.mixes {
            let start = mix.start;
            let i = engine.jobs.add_mix(mix);
            engine.jobs.expect_start();
            engine.schedule_at(start, Event::MixArrival(i));
        }
        for (i, f) in cfg.faults.iter().enumerate() {
            engine.schedule_at(f.at().as_micros(), Event::Fault(i));
        }
        if engine.autoscaler.enabled() {
            engine.schedule_at(super::autoscaler::TICK_US, Event::AutoscalerTick);
        }
        engine
    }

    fn build_cluster(&mut self) {
        let cfg = self.cfg.clone();
        self.head = self.add_node(None, cfg.cluster.head.ip.clone());
        for (t, nt) in cfg.cluster.node_types.iter().enumerate() {
            let count = nt.count.unwrap_or_else(|| nt.autoscaler.as_ref().map(|a| a.min_workers).unwrap_or(0));
            for _ in 0..count {
                self.launch_node_of_type(t as u16);
            }
        }
    }

    /// Add a worker node of a configured type at its next free address.
    pub(crate) fn launch_node_of_type(&mut self, t: u16) -> Option<NodeIdx> {
        let cfg = self.cfg.clone();
        let nt = &cfg.cluster.node_types[t as usize];
        let range = crate::config::ip_range::IpRange::parse(&nt.ip_range).ok()?;
        // Addresses are handed out in order; after wrapping, the first one not in use.
        let start = self.ip_cursor[t as usize];
        let ip = (0..range.len())
            .map(|k| (start + k) % range.len())
            .filter_map(|i| range.nth(i).map(|a| (i, a.to_string())))
            .find(|(_, ip)| self.node_by_ip.get(ip).is_none_or(|n| !self.model.node(*n).is_alive()))
            .map(|(i, ip)| {
                self.ip_cursor[t as usize] = i + 1;
                ip
            })?;
        Some(self.add_node(Some(t), ip))
    }

    /// Add a node of a configured type (`None`: the head node's shape) at `ip`.
    pub(crate) fn add_node(&mut self, node_type: Option<u16>, ip: String) -> NodeIdx {
        let cfg = self.cfg.clone();
        let shape = NodeShape::of(&cfg.cluster, node_type);
        let (cpu, gpu, memory, object_store, custom) =
            (shape.cpu, shape.gpu, shape.memory, shape.object_store, shape.custom);
        let gpu_memory = shape.gpu_memory;
        let (type_name, gpu_model) = self.shape_names[node_type.map_or(0, |t| t as usize + 1)].clone();
        let reused = self.free_node_slot();
        let idx = reused.unwrap_or(NodeIdx(self.model.nodes.len() as u32));
        let serial = NodeIdx(self.nodes_added);
        self.nodes_added += 1;
        // Ray: 30% of memory by default, capped at 200 GB.
        let store = object_store.unwrap_or(((memory as f64 * 0.3) as u64).min(200_000_000_000));
        let n = self.model.resource_names.len();
        let mut total = ResVec::zeros(n);
        total.set(ResourceId::CPU, FixedPoint::from_f64(cpu));
        total.set(ResourceId::GPU, FixedPoint::from_f64(gpu));
        total.set(ResourceId::MEMORY, FixedPoint::from_f64((memory - store.min(memory)) as f64));
        total.set(ResourceId::OBJECT_STORE_MEMORY, FixedPoint::from_f64(store as f64));
        for (name, q) in custom {
            if let Some(id) = self.model.resource_names.id_of(name) {
                total.set(id, FixedPoint::from_f64(*q));
            }
        }
        let node = Node {
            idx,
            node_id: node_id_hex(self.cfg.sim.seed, serial).into(),
            ip: ip.as_str().into(),
            node_type,
            type_name: type_name.clone(),
            is_head: node_type.is_none(),
            state: NodeState::Alive,
            available: Available::new(total.clone()),
            total,
            memory_bytes: Bytes(memory),
            store: ObjectStore { capacity: Bytes(store), ..Default::default() },
            worker_heap_used: Bytes(0),
            pressure_bytes: Bytes(0),
            gpu_model,
            gpu_memory: Bytes(gpu_memory),
            started_at: self.clock.now,
            died_at: None,
            death_reason: None,
            idle_since: Some(self.clock.now),
            stats: NodeStats::default(),
        };
        log_event!(self.model.log, self.clock.now, "node", "{} ALIVE ip={} type={}", idx.0, ip, type_name);
        if let Some(slot) = reused {
            let i = slot.index();
            self.model.nodes[i] = node;
        } else {
            self.model.nodes.push(node);
        }
        self.local_resources().joined(idx);
        self.raylets.joined(idx);
        self.actor_manager.joined(idx);
        self.faults.memory_monitor.node_added(idx);
        self.plasma.clear_node(idx);
        self.node_by_ip.insert(ip, idx);
        self.note_node_added(idx);
        self.on_node_added();
        idx
    }

    pub(crate) fn schedule_at(&mut self, time: u64, event: Event) {
        self.clock.schedule_at(time, event);
    }

    pub(crate) fn schedule_in(&mut self, delay: u64, event: Event) {
        self.schedule_at(self.clock.now + delay, event);
    }

    /// Virtual time now, in µs.
    pub fn now_us(&self) -> u64 {
        self.clock.now
    }

    pub fn events_processed(&self) -> u64 {
        self.clock.events_processed()
    }

    /// Every scheduled event, in no particular order (for the invariant checks).
    pub(crate) fn pending_events(&self) -> impl Iterator<Item = &Event> {
        self.clock.pending()
    }

    /// Time of the next event, if any. `&mut`: finding it may reorganise the queue.
    pub fn next_event_time(&mut self) -> Option<u64> {
        self.clock.next_time()
    }

    /// True when every job has ended and none will start.
    pub fn workloads_done(&self) -> bool {
        self.jobs.done()
    }

    /// Process every event at or before `until`; returns how many ran.
    pub fn run_until(&mut self, until: u64) -> u64 {
        let mut n = 0;
        while !self.stopped {
            let Some(event) = self.clock.pop_due(until) else { break };
            self.handle(event);
            n += 1;
        }
        if !self.stopped {
            self.clock.advance_to(until);
        }
        n
    }

    /// Process the next event (or nothing if the queue is empty).
    pub fn step(&mut self) -> bool {
        let Some(event) = self.clock.pop_due(u64::MAX) else { return false };
        self.handle(event);
        true
    }

    fn handle(&mut self, ev: Event) {
        match ev {
            Event::StartJob(t) => {
                self.jobs.start_reached();
                self.start_job(t, None);
            }
            Event::MixArrival(m) => self.mix_arrival(m),
            Event::Dispatch(t, a) => self.on_dispatch(t, a),
            Event::ArgsFetched(t, a) => self.on_args_fetched(t, a),
            Event::Begin(t, a) => self.on_begin(t, a),
            Event::OpDone(t, a) => self.on_op_done(t, a),
            Event::Resume(t, a) => self.on_resume(t, a),
            Event::Resubmit(t, a) => self.on_resubmit(t, a),
            Event::Fault(i) => self.on_fault(i),
            Event::FaultEnd(i) => self.on_fault_end(i),
            Event::NodeLaunched(t) => self.on_node_launched(t),
            Event::AutoscalerTick => self.on_autoscaler_tick(),
            Event::MemoryCheck(n) => {
                self.faults.memory_monitor.look_taken(n);
                self.check_memory(n);
            }
        }
    }
}

/// The configured shape of a node type (or of the head node).
struct NodeShape<'a> {
    cpu: f64,
    gpu: f64,
    memory: u64,
    object_store: Option<u64>,
    custom: &'a BTreeMap<String, f64>,
    gpu_memory: u64,
}

impl<'a> NodeShape<'a> {
    fn of(c: &'a crate::config::ClusterConfig, node_type: Option<u16>) -> NodeShape<'a> {
        match node_type.and_then(|t| c.node_types.get(t as usize)) {
            Some(nt) => NodeShape {
                cpu: nt.cpu,
                gpu: nt.gpu,
                memory: nt.memory.0,
                object_store: nt.object_store_memory.map(|b| b.0),
                custom: &nt.resources,
                gpu_memory: nt.gpu_memory.map(|b| b.0).unwrap_or(0),
            },
            None => {
                let h = &c.head;
                NodeShape {
                    cpu: h.cpu,
                    gpu: h.gpu,
                    memory: h.memory.0,
                    object_store: h.object_store_memory.map(|b| b.0),
                    custom: &h.resources,
                    gpu_memory: h.gpu_memory.map(|b| b.0).unwrap_or(0),
                }
            }
        }
    }
}

/// Ray-shaped session name, derived from the seed so it is stable across runs.
pub fn session_name_for(seed: u64) -> String {
    format!("session_2026-01-01_00-00-00_{:06}_{}", seed % 1_000_000, 1000 + seed % 60000)
}

/// A session name as Ray makes one on every start (`session_<UTC date>_<time>_<µs>_<pid>`),
/// for `serve`: each start is a new session, so Prometheus sees new series rather than
/// counter resets on the old ones. `simulate` keeps [`session_name_for`], for determinism.
pub fn session_name_at(unix_us: u64, pid: u32) -> String {
    let (year, month, day, hour, minute, second) = crate::model::utc::civil((unix_us / 1_000_000) as i64);
    format!("session_{year:04}-{month:02}-{day:02}_{hour:02}-{minute:02}-{second:02}_{:06}_{pid}", unix_us % 1_000_000)
}

#[cfg(test)]
mod tests {
    use super::session_name_at;

    #[test]
    fn a_served_session_is_named_as_ray_names_one_from_the_utc_time_and_pid() {
        // 1700000000 s is 2023-11-14 22:13:20 UTC; 951782400 s is 2000-02-29, a leap day.
        assert_eq!(session_name_at(1_700_000_000_000_123, 42), "session_2023-11-14_22-13-20_000123_42");
        assert_eq!(session_name_at(951_782_400_000_000, 7), "session_2000-02-29_00-00-00_000000_7");
        assert_ne!(session_name_at(1_700_000_000_000_000, 1), session_name_at(1_700_000_000_000_001, 1));
    }
}
