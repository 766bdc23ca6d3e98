//! Faults: the configured schedule (node loss and return, actor kills, random task
//! failures, memory pressure) and the raylet's memory monitor (OOM killer).

use super::actors::ActorManager;
use super::clock::Event;
use super::engine::Engine;
use super::follow::Follow;
use super::node_manager::GcsNodeManager;
use super::node_runtime::Raylets;
use crate::config::FaultConfig;
use crate::log_event;
use crate::model::*;
use rand_chacha::ChaCha8Rng;

/// Ray's `memory_monitor_refresh_ms` (250 ms).
pub const MEMORY_MONITOR_REFRESH_US: u64 = 250_000;

/// Faults in effect now.
#[derive(Default)]
pub struct FaultState {
    /// Active random-failure windows: (fault index, probability, application error?).
    failures: Vec<(usize, f64, bool)>,
    /// Active memory pressure: (fault index, node, bytes).
    pressure: Vec<(usize, NodeIdx, u64)>,
    pub(crate) memory_monitor: MemoryMonitor,
}

/// The memory monitor's per-node state: when it last killed a worker there, and
/// whether its next look is already scheduled (one at a time per node).
#[derive(Default)]
pub(crate) struct MemoryMonitor {
    last_kill: Vec<Option<u64>>,
    look_due: Vec<bool>,
}

impl MemoryMonitor {
    /// A node joined (or came back in a reused slot): nothing killed, no look due.
    pub(crate) fn node_added(&mut self, n: NodeIdx) {
        let i = n.index();
        if i >= self.last_kill.len() {
            self.last_kill.resize(i + 1, None);
            self.look_due.resize(i + 1, false);
        }
        self.last_kill[i] = None;
        self.look_due[i] = false;
    }

    /// The scheduled look at `n` is running now.
    pub(crate) fn look_taken(&mut self, n: NodeIdx) {
        self.look_due[n.index()] = false;
    }

    /// Mark a look at `n` scheduled; false if one already was.
    fn schedule_look(&mut self, n: NodeIdx) -> bool {
        !std::mem::replace(&mut self.look_due[n.index()], true)
    }
}

impl FaultState {
    /// Fault `i`'s window ended: its failures and memory pressure stop.
    pub(crate) fn end(&mut self, m: &mut Model, i: usize, now: u64) {
        self.failures.retain(|(f, _, _)| *f != i);
        let ended: Vec<(usize, NodeIdx, u64)> = self.pressure.iter().filter(|(f, _, _)| *f == i).copied().collect();
        self.pressure.retain(|(f, _, _)| *f != i);
        for (_, n, bytes) in ended {
            let nd = &mut m.nodes[n.index()];
            nd.pressure_bytes.0 = nd.pressure_bytes.0.saturating_sub(bytes);
        }
        log_event!(m.log, now, "fault", "fault {} ended", i);
    }

    /// The strongest active failure probability and whether it is an application error.
    pub fn failure_probability(&self) -> Option<(f64, bool)> {
        self.failures.iter().map(|(_, p, a)| (*p, *a)).fold(None, |acc, (p, a)| match acc {
            Some((q, _)) if q >= p => acc,
            _ => Some((p, a)),
        })
    }
}

impl Engine {
    pub(crate) fn on_fault(&mut self, i: usize) {
        let f = self.cfg.faults[i].clone();
        match f {
            FaultConfig::KillNode { node, node_type, .. } => {
                if let Some(n) =
                    resolve_node(&self.model, &self.node_manager, &mut self.rng, node.as_deref(), node_type.as_deref())
                {
                    self.kill_node(n, "fault injection: node killed", true);
                }
            }
            FaultConfig::RestoreNode { node, .. } => {
                self.restore_node(&node);
            }
            FaultConfig::KillActor { class, no_restart, .. } => {
                let mut alive: Vec<ActorId> = self
                    .model
                    .actors
                    .values()
                    .filter(|a| a.state() == ActorState::Alive && self.model.names.get(a.class) == class)
                    .map(|a| a.id)
                    .collect();
                alive.sort();
                if let Some(a) = alive.first() {
                    log_event!(self.model.log, self.clock.now, "fault", "kill actor {:x} class={}", a.0, class);
                    self.follow(Follow::ActorDied(*a, "killed by ray.kill (fault injection)".into(), !no_restart));
                }
            }
            FaultConfig::TaskFailures { until, probability, application_error, .. } => {
                log_event!(
                    self.model.log,
                    self.clock.now,
                    "fault",
                    "task failures p={} application={}",
                    probability,
                    application_error
                );
                self.faults.failures.push((i, probability, application_error));
                if let Some(u) = until {
                    self.clock.schedule_at(u.as_micros(), Event::FaultEnd(i));
                }
            }
            FaultConfig::MemoryPressure { node, node_type, fraction, duration, .. } => {
                if let Some(n) =
                    resolve_node(&self.model, &self.node_manager, &mut self.rng, node.as_deref(), node_type.as_deref())
                {
                    let bytes = (self.model.nodes[n.index()].memory_bytes.0 as f64 * fraction) as u64;
                    log_event!(self.model.log, self.clock.now, "fault", "memory pressure node={} bytes={}", n.0, bytes);
                    self.model.nodes[n.index()].pressure_bytes.0 += bytes;
                    self.faults.pressure.push((i, n, bytes));
                    self.clock.schedule_in(duration.as_micros(), Event::FaultEnd(i));
                    self.check_memory(n);
                }
            }
        }
    }

    /// A node dies (`failure`) or is terminated by the autoscaler (not a failure).
    pub(crate) fn kill_node(&mut self, n: NodeIdx, reason: &'static str, failure: bool) {
        if !self.model.nodes[n.index()].is_alive() {
            return;
        }
        log_event!(self.model.log, self.clock.now, "node", "{} DEAD reason={}", n.0, reason);
        {
            let nd = &mut self.model.nodes[n.index()];
            nd.state = NodeState::Dead;
            nd.died_at = Some(self.clock.now);
            nd.death_reason = Some(reason);
            nd.worker_heap_used = Bytes(0);
        }
        self.local_resources().lost(n);
        // Its raylet stops exporting: the per-node kill and failure counts go with it.
        self.model.counters.forget_node_counts(n.0);
        if failure {
            self.cluster_events().node_died(n, reason);
            self.model.counters.node_failures += 1;
            if let Some(t) = self.model.nodes[n.index()].node_type {
                self.autoscaler.note_failure(t);
            }
        }
        // Work leased there fails; retries go elsewhere.
        let mut leased = self.raylets.take_leased(n);
        leased.sort();
        for tid in leased {
            if let Some(t) = self.model.tasks.get_mut(&tid) {
                // The node's resources are gone with it: nothing to give back.
                t.holds_resources = false;
                t.cpu_released = false;
            }
            let is_driver = self.model.tasks.get(&tid).is_some_and(|t| t.kind == TaskType::DriverTask);
            if is_driver {
                if let Some(job) = self.model.tasks.get(&tid).map(|t| t.job) {
                    self.follow(Follow::EndJob(job, JobStatus::Failed, "the head node died".into()));
                }
            } else {
                self.follow(Follow::FailTask(tid, ErrorType::NodeDied, true));
            }
        }
        self.raylets.clear_resuming(n);
        let mut actors = self.actor_manager.take_on(n);
        actors.sort();
        for a in actors {
            if let Some(actor) = self.model.actors.get_mut(&a) {
                actor.holds_resources = false;
            }
            self.follow(Follow::ActorDied(a, "the node running the actor died".into(), true));
        }
        // Hard affinity to this node can never be satisfied now, and work only this node
        // could hold is infeasible: ask again (fail, or join the infeasible demand).
        let (sched, specs) = (&self.sched, &self.specs);
        let stranded = self
            .queues
            .take_classes(|k| k.1 == Some(n) || (k.1.is_none() && !sched.is_feasible(&specs[k.0 as usize].request)));
        for tid in stranded.into_iter().flatten() {
            self.follow(Follow::TrySchedule(tid));
        }
        self.follow(Follow::LoseObjectsOn(n));
        {
            let s = &mut self.model.nodes[n.index()].store;
            s.used = Bytes(0);
            s.spilled = Bytes(0);
            s.num_objects = 0;
            s.fallback = Bytes(0);
            s.worker_heap = Bytes(0);
        }
        self.follow(Follow::ReschedulePgsOn(n));
        // A dead node stays in the table (up to sim.dead_node_capacity): give back what
        // its queues grew to while alive.
        self.plasma.clear_node(n);
        self.raylets.lost(n);
        self.node_manager.remember_dead(n);
    }

    /// A node comes back at this IP as a new raylet (a new node id).
    pub(crate) fn restore_node(&mut self, ip: &str) -> Option<NodeIdx> {
        if self.node_manager.alive_at(&self.model, ip).is_some() {
            return None;
        }
        let node_type = super::node_manager::GcsNodeManager::type_at(&self.cfg.cluster, ip)?;
        Some(self.add_node(node_type, ip.to_string()))
    }

    /// Ray's memory monitor: above the usage threshold, kill the most recently started
    /// worker (retriable tasks first). Like Ray's, it looks once per refresh period
    /// (`MEMORY_MONITOR_REFRESH_US`) and kills one worker per look, so a node under
    /// pressure sheds work at a bounded rate instead of killing every arrival at once.
    pub(crate) fn check_memory(&mut self, n: NodeIdx) {
        let threshold = self.cfg.memory_monitor.usage_threshold;
        if threshold <= 0.0 {
            return;
        }
        {
            let nd = &self.model.nodes[n.index()];
            if !nd.is_alive() || (nd.memory_used().0 as f64) <= threshold * nd.memory_bytes.0 as f64 {
                return;
            }
            if let Some(last) = self.faults.memory_monitor.last_kill[n.index()] {
                if self.clock.now < last + MEMORY_MONITOR_REFRESH_US {
                    if self.faults.memory_monitor.schedule_look(n) {
                        self.clock.schedule_at(last + MEMORY_MONITOR_REFRESH_US, Event::MemoryCheck(n));
                    }
                    return;
                }
            }
            let Some(victim) = oom_victim(&self.model, &self.raylets, &self.actor_manager, n) else { return };
            self.faults.memory_monitor.last_kill[n.index()] = Some(self.clock.now);
            let t = &self.model.tasks[&victim];
            let name = self.model.names.get(t.name).to_string();
            let (kind, actor) = (t.kind, t.actor);
            self.model.nodes[n.index()].stats.oom_kills += 1;
            log_event!(
                self.model.log,
                self.clock.now,
                "memory_monitor",
                "node={} OOM kill {:x} name={}",
                n.0,
                victim.0,
                name
            );
            let heap = self.specs[self.model.tasks[&victim].spec as usize].heap;
            self.cluster_events().oom_kill(n, victim, heap, threshold);
            match (kind, actor) {
                (TaskType::ActorTask | TaskType::ActorCreationTask, Some(a)) => {
                    let class =
                        self.model.actors.get(&a).map(|x| self.model.names.get(x.class).to_string()).unwrap_or(name);
                    self.model.counters.count_oom_kill(n.0, "MemoryManager.ActorEviction.Total", class);
                    if kind == TaskType::ActorTask {
                        self.follow(Follow::ActorDied(a, "killed by the memory monitor (OOM)".into(), true));
                    } else {
                        // Failing the constructor kills (and may restart) the actor.
                        self.follow(Follow::FailTask(victim, ErrorType::OutOfMemory, false));
                    }
                }
                _ => {
                    self.model.counters.count_oom_kill(n.0, "MemoryManager.TaskEviction.Total", name);
                    self.follow(Follow::FailTask(victim, ErrorType::OutOfMemory, true));
                }
            }
        }
        // Still above the threshold? Look again after the refresh period.
        let nd = &self.model.nodes[n.index()];
        if nd.is_alive()
            && (nd.memory_used().0 as f64) > threshold * nd.memory_bytes.0 as f64
            && self.faults.memory_monitor.schedule_look(n)
        {
            self.clock.schedule_in(MEMORY_MONITOR_REFRESH_US, Event::MemoryCheck(n));
        }
    }
}

/// A node by IP, or one alive node of a type chosen with the seeded RNG.
fn resolve_node(
    m: &Model,
    nodes: &GcsNodeManager,
    rng: &mut ChaCha8Rng,
    ip: Option<&str>,
    node_type: Option<&str>,
) -> Option<NodeIdx> {
    if let Some(ip) = ip {
        return nodes.alive_at(m, ip);
    }
    let t = node_type?;
    let candidates: Vec<NodeIdx> =
        m.nodes.iter().filter(|n| n.is_alive() && *n.type_name == *t).map(|n| n.idx).collect();
    if candidates.is_empty() {
        return None;
    }
    let k = rand::Rng::random_range(rng, 0..candidates.len());
    Some(candidates[k])
}

fn oom_victim(m: &Model, raylets: &Raylets, actors: &ActorManager, n: NodeIdx) -> Option<TaskId> {
    let mut best: Option<(bool, u64, TaskId)> = None;
    let leased = raylets.leased_on(n).iter().copied();
    let actor_tasks = actors.on(n).iter().filter_map(|a| m.actors.get(a)).flat_map(|a| a.running.iter().copied());
    for tid in leased.chain(actor_tasks) {
        let Some(t) = m.tasks.get(&tid) else { continue };
        if !t.state().is_running() || t.kind == TaskType::DriverTask {
            continue;
        }
        let retriable = t.retries_left != 0 || t.kind == TaskType::NormalTask;
        let key = (retriable, t.started_at.unwrap_or(0), tid);
        if best.is_none_or(|b| key > b) {
            best = Some(key);
        }
    }
    best.map(|(_, _, t)| t)
}
