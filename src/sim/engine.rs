//! The engine: one thread, one virtual clock, one seeded RNG, one event queue.
//!
//! Owns: the model, the scheduler, the seeded RNG, and Ray's components as fields, each
//! a struct in the file named for it (ARCHITECTURE.md, "The engine's components"): the
//! clock and event queue (`clock.rs`), the raylets' lists (`node_runtime.rs`; a node's
//! availability changes only through its `LocalResources`), the cluster task queues
//! (`cluster_queues.rs`), the placement group, actor and job managers
//! (`placement_groups.rs`, `actors.rs`, `jobs.rs`), the GCS node manager
//! (`node_manager.rs`), each live task's run state (`task_runs.rs`), the plasma stores (`objects.rs`), faults (`faults.rs`), the
//! autoscaler and Flow Insight's recorder. Here: building the cluster, telling the
//! components that a node joined, and sending each event to its handler. Events with equal
//! times run in insertion order (the clock's sequence number breaks ties), so the same
//! config and seed always produce the same event log.

use super::autoscaler::Autoscaler;
use super::clock::{Clock, Event};
use super::core_worker::task_runs::TaskRuns;
use super::faults::FaultState;
use super::follow::cx;
use super::follow::Follow;
use super::gcs::actors::ActorManager;
use super::gcs::jobs::JobManager;
use super::gcs::node_manager::GcsNodeManager;
use super::gcs::placement_groups::PlacementGroupManager;
use super::objects::PlasmaStores;
use super::raylet::cluster_queues::ClusterQueues;
use super::raylet::node_cpu::{CpuSettings, NodeCpus, NodeMachine};
use super::raylet::node_runtime::{LocalResources, Raylets};
use super::raylet::task_run;
use crate::config::Config;
use crate::model::*;
use crate::scheduler::{Params, Scheduler};
use crate::workload::{self, CallSpec};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use std::sync::Arc;

pub struct Engine {
    pub(crate) cfg: Arc<Config>,
    /// Virtual time and the event queue (`clock.rs`).
    pub(crate) clock: Clock,
    pub(crate) rng: ChaCha8Rng,
    pub model: Model,
    /// What the engine keeps of each live task while it runs (`task_runs.rs`).
    pub(crate) runs: TaskRuns,
    pub(crate) sched: Scheduler,
    pub(crate) specs: Vec<CallSpec>,
    /// Jobs' programs, mixes and live count (`jobs.rs`).
    pub(crate) jobs: JobManager,
    /// Per node: the plasma store's copies in spill and eviction order (`objects.rs`).
    pub(crate) plasma: PlasmaStores,
    /// Views of dead nodes, built by the first snapshot after they died and shared by
    /// every later one (see `Snapshot::nodes`), and what views share (`publish/nodes.rs`).
    pub(crate) node_views: std::cell::RefCell<super::publish::nodes::NodeViewCache>,
    /// Each raylet's lists: leases held and getters waiting to resume (`node_runtime.rs`).
    pub(crate) raylets: Raylets,
    /// Each node's physical cores, which Ray's per-call work shares (`node_cpu.rs`).
    pub(crate) cpus: NodeCpus,
    /// The actors placed on each node (`actors.rs`).
    pub(crate) actor_manager: ActorManager,
    /// Tasks not placed yet: scheduling classes, infeasible tasks, bundle waiters
    /// (`cluster_queues.rs`).
    pub(crate) queues: ClusterQueues,
    /// Placement groups waiting to be placed (`placement_groups.rs`).
    pub(crate) pg_manager: PlacementGroupManager,
    pub(crate) faults: FaultState,
    pub(crate) autoscaler: Autoscaler,
    /// Node membership: the head, addresses, the dead-node cache (`node_manager.rs`).
    pub(crate) node_manager: GcsNodeManager,
    pub(crate) stopped: bool,
    /// Flow Insight's record of every call (`flow_recorder.rs`).
    pub(crate) flow: super::flow_recorder::FlowRecorder,
    /// Follow-ups still to run, newest on top (`follow.rs`), kept between events so
    /// running them allocates nothing once it has grown.
    pub(crate) follow_stack: Vec<Follow>,
    /// Replayed jobs' actors and argument returns (`replay_slots.rs`).
    pub(crate) replay: super::core_worker::replay_slots::ReplaySlots,
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
        // Only the object table is sized up front, its pages faulted in beside the run.
        // Tasks leave their table as they finish, at the pace of the cluster's slots
        // (about 12k live at scale.yaml's peak): sized for the million tasks, it would
        // fault in 200 MB to hold thousands. The objects' estimate gets headroom: pages
        // past it are opened on first touch, one fault at a time.
        let objects = workload::Plan::expected_peak_objects(&cfg.workloads);
        model.objects.reserve(objects + objects / 16);
        let mut engine = Engine {
            rng: ChaCha8Rng::seed_from_u64(seed),
            clock: Clock::default(),
            sched: Scheduler::new(Params::from(&cfg.scheduler)),
            specs: plan.specs,
            jobs: JobManager::default(),
            plasma: PlasmaStores::new(cfg.object_store.spill_threshold),
            node_views: Default::default(),
            raylets: Raylets::default(),
            cpus: NodeCpus::new(CpuSettings::of(&cfg)),
            actor_manager: ActorManager::default(),
            queues: ClusterQueues::default(),
            pg_manager: PlacementGroupManager::default(),
            faults: FaultState::default(),
            autoscaler: Autoscaler::new(&cfg.cluster),
            stopped: false,
            node_manager: GcsNodeManager::new(&cfg),
            flow: super::flow_recorder::FlowRecorder::new(cfg.sim.flow_calls_per_job),
            replay: Default::default(),
            follow_stack: Vec::new(),
            model,
            runs: TaskRuns::default(),
            cfg: cfg.clone(),
        };
        // The head first, then each type's initial nodes.
        engine.add_node(None, cfg.cluster.head.ip.clone());
        for (t, nt) in cfg.cluster.node_types.iter().enumerate() {
            let count = nt.count.unwrap_or_else(|| nt.autoscaler.as_ref().map(|a| a.min_workers).unwrap_or(0));
            for _ in 0..count {
                engine.launch_node_of_type(t as u16);
            }
        }
        for (start, t) in plan.jobs {
            let idx = engine.jobs.add_template(t);
            engine.jobs.expect_start();
            engine.clock.schedule_at(start, Event::StartJob(idx));
        }
        for mix in plan.mixes {
            let start = mix.start;
            let i = engine.jobs.add_mix(mix);
            engine.jobs.expect_start();
            engine.clock.schedule_at(start, Event::MixArrival(i));
        }
        for (i, f) in cfg.faults.iter().enumerate() {
            engine.clock.schedule_at(f.at().as_micros(), Event::Fault(i));
        }
        if engine.autoscaler.enabled() {
            engine.clock.schedule_at(super::autoscaler::TICK_US, Event::AutoscalerTick);
        }
        engine
    }

    /// Add a worker node of a configured type at its next free address.
    pub(crate) fn launch_node_of_type(&mut self, t: u16) -> Option<NodeIdx> {
        let ip = self.node_manager.next_address(&self.cfg.cluster, &self.model, t)?;
        Some(self.add_node(Some(t), ip))
    }

    /// Add a node of a configured type (`None`: the head node's shape) at `ip`: the GCS
    /// registers it, then every component that keeps something per node learns of it.
    pub(crate) fn add_node(&mut self, node_type: Option<u16>, ip: String) -> NodeIdx {
        let idx = self.node_manager.register(&mut self.model, &self.cfg.cluster, node_type, ip, self.clock.now);
        self.local_resources().joined(idx);
        self.raylets.joined(idx);
        let mut machine = NodeMachine::of(&self.cfg, node_type);
        if node_type.is_some_and(|t| self.cfg.cluster.node_types[t as usize].on_head_machine) {
            machine.on = Some(self.node_manager.head());
        }
        self.cpus.joined(idx, machine);
        // The prestarted workers are processes the node's pool started.
        self.model.worker_processes_started(idx, u64::from(machine.prestarted));
        self.actor_manager.joined(idx);
        self.faults.memory_monitor.node_added(idx);
        self.plasma.clear_node(idx);
        cx!(self).cluster_events().node_added(idx);
        let follows = self.queues.node_added();
        self.follow_all(follows);
        idx
    }

    /// The autoscaler's state: per node type, bounds, launches in flight and totals.
    pub fn autoscaler(&self) -> &Autoscaler {
        &self.autoscaler
    }

    /// The node runtime, for a change whose request is not borrowed from the engine.
    pub(crate) fn local_resources(&mut self) -> LocalResources<'_> {
        LocalResources::of(&mut self.model, &mut self.sched)
    }

    /// Virtual time now, in µs.
    pub fn now_us(&self) -> u64 {
        self.clock.now
    }

    pub fn events_processed(&self) -> u64 {
        self.clock.events_processed()
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
        self.prefetch_ahead(&ev);
        self.cpus.time_is(self.clock.now);
        match ev {
            Event::StartJob(t) => {
                self.jobs.start_reached();
                let (_, follows) = self.jobs.start(cx!(self), &mut self.flow, self.node_manager.head(), t, None);
                self.follow_all(follows);
            }
            Event::MixArrival(m) => {
                let follows = self.jobs.arrival(cx!(self), &mut self.flow, self.node_manager.head(), m);
                self.follow_all(follows);
            }
            Event::Push(t, a) => super::raylet::cluster_queues::push(cx!(self), t, a),
            Event::Dispatch(t, a) => {
                let follows = task_run::dispatch(cx!(self), &mut self.plasma, &self.actor_manager, t, a);
                self.follow_all(follows);
            }
            Event::ArgsFetched(t, a) => {
                let follows = task_run::args_fetched(cx!(self), &mut self.flow, t, a);
                self.follow_all(follows);
            }
            Event::Pulled(t, a) => {
                let follows = super::core_worker::futures::pulled(cx!(self), t, a);
                self.follow_all(follows);
            }
            Event::Begin(t, a) => {
                let follows = task_run::on_begin(cx!(self), &mut self.flow, t, a);
                self.follow_all(follows);
            }
            Event::PgCommitted(id) => {
                let follows = super::gcs::placement_groups::commit(cx!(self), id);
                self.follow_all(follows);
            }
            Event::Raised(t, a) => {
                let follows = task_run::on_raised(&self.model, t, a);
                self.follow_all(follows);
            }
            Event::OpDone(t, a) => {
                let follows = task_run::op_done(cx!(self), &self.faults, t, a);
                self.follow_all(follows);
            }
            Event::Resume(t, a) => {
                let follows = task_run::on_resume(&self.model, t, a);
                self.follow_all(follows);
            }
            Event::Resubmit(t, a) => {
                let follows = super::core_worker::retries::resubmit(cx!(self), &mut self.queues, t, a);
                self.follow_all(follows);
            }
            Event::Fault(i) => {
                let follows = self.faults.inject(cx!(self), &self.node_manager, &self.actor_manager, i);
                self.follow_all(follows);
            }
            Event::FaultEnd(i) => self.faults.end(&mut self.model, i, self.clock.now),
            Event::NodeLaunched(t) => {
                let follows = self.autoscaler.node_launched(t);
                self.follow_all(follows);
            }
            Event::AutoscalerTick => {
                let follows = self.autoscaler.tick(cx!(self), &self.queues, &self.pg_manager, &self.actor_manager);
                self.follow_all(follows);
            }
            Event::MemoryCheck(n) => {
                self.faults.memory_monitor.look_taken(n);
                self.follow(Follow::CheckMemory(n));
            }
            Event::GcLook => self.queues.gc_look(cx!(self)),
            Event::NodeDeathDetected(n) => {
                let follows = self.faults.death_detected(&self.model, n);
                self.follow_all(follows);
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
