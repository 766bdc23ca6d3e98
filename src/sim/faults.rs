//! Faults: the configured schedule (node loss and return, actor kills, random task
//! failures, memory pressure), a node's crash and the GCS noticing it, a node's death,
//! and the raylet's memory monitor (OOM killer).
//!
//! Owns: [`FaultState`]: the failure windows and memory pressure in effect, the crashed
//! nodes the GCS has not yet marked dead, and the memory monitor's per-node state; and
//! the methods that inject a fault, crash a node, kill it once its health checks fail,
//! and let the memory monitor look at a node. A node's death reaches every component
//! with something on it (its leases, its actors, the work only it could hold, its
//! objects, its groups) as follow-ups, in the order Ray's GCS tells them. Must never:
//! change another component's state when a follow-up can ask it to, or add a node
//! (a restored node joins through the engine, which tells every component).

use super::autoscaler::Autoscaler;
use super::clock::Event;
use super::follow::{Cx, Follow, Follows};
use super::gcs::actors::ActorManager;
use super::gcs::node_manager::GcsNodeManager;
use super::objects::PlasmaStores;
use super::raylet::cluster_queues::ClusterQueues;
use super::raylet::node_runtime::{self, Raylets};
use crate::config::FaultConfig;
use crate::log_event;
use crate::model::*;
use rand_chacha::ChaCha8Rng;
use smallvec::smallvec;

/// Ray's `memory_monitor_refresh_ms` (250 ms).
pub const MEMORY_MONITOR_REFRESH_US: u64 = 250_000;

/// Faults in effect now.
#[derive(Default)]
pub struct FaultState {
    /// Active random-failure windows: (fault index, probability, application error?).
    failures: Vec<(usize, f64, bool)>,
    /// Active memory pressure: (fault index, node, bytes).
    pressure: Vec<(usize, NodeIdx, u64)>,
    /// Crashed nodes the GCS has not yet marked dead, with why they crashed, and
    /// whether a restore of their host waits for that.
    crashed: Vec<(NodeIdx, &'static str, bool)>,
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
            node_runtime::pressure_ended(m, n, bytes);
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

impl FaultState {
    /// The configured fault `i` comes due. A node's target is resolved through the GCS
    /// node manager (by IP, or one alive node of a type drawn with the seeded RNG).
    pub(crate) fn inject(
        &mut self,
        cx: &mut Cx,
        node_manager: &GcsNodeManager,
        actor_manager: &ActorManager,
        i: usize,
    ) -> Follows {
        let cfg = cx.cfg;
        match &cfg.faults[i] {
            FaultConfig::KillNode { node, node_type, .. } => {
                match resolve_node(cx.model, node_manager, cx.rng, node.as_deref(), node_type.as_deref()) {
                    Some(n) => smallvec![Follow::CrashNode(n, "fault injection: node killed")],
                    None => Follows::new(),
                }
            }
            FaultConfig::RestoreNode { node, .. } => smallvec![Follow::RestoreNode(node.clone())],
            FaultConfig::KillActor { class, no_restart, .. } => {
                let m = &*cx.model;
                let mut alive: Vec<ActorId> = m
                    .actors()
                    .values()
                    .filter(|a| a.state() == ActorState::Alive && m.names.get(a.class) == class.as_str())
                    .map(|a| a.id)
                    .collect();
                alive.sort();
                let Some(a) = alive.first().copied() else { return Follows::new() };
                log_event!(cx.model.log, cx.now(), "fault", "kill actor {:x} class={}", a.0, class);
                smallvec![Follow::ActorDied(a, "killed by ray.kill (fault injection)".into(), !no_restart)]
            }
            FaultConfig::TaskFailures { until, probability, application_error, .. } => {
                log_event!(
                    cx.model.log,
                    cx.now(),
                    "fault",
                    "task failures p={} application={}",
                    probability,
                    application_error
                );
                self.failures.push((i, *probability, *application_error));
                if let Some(u) = until {
                    cx.clock.schedule_at(u.as_micros(), Event::FaultEnd(i));
                }
                Follows::new()
            }
            FaultConfig::MemoryPressure { node, node_type, fraction, duration, .. } => {
                let Some(n) = resolve_node(cx.model, node_manager, cx.rng, node.as_deref(), node_type.as_deref())
                else {
                    return Follows::new();
                };
                let bytes = (cx.model.nodes()[n.index()].memory_bytes.0 as f64 * fraction) as u64;
                log_event!(cx.model.log, cx.now(), "fault", "memory pressure node={} bytes={}", n.0, bytes);
                node_runtime::pressure_added(cx.model, n, bytes);
                self.pressure.push((i, n, bytes));
                cx.clock.schedule_in(duration.as_micros(), Event::FaultEnd(i));
                self.check_memory(cx, actor_manager, n)
            }
        }
    }
}

impl FaultState {
    /// A node's host fails without warning. The head takes the GCS with it: it is dead
    /// at once. Any other node stops answering now, and the GCS marks it dead at its
    /// health checks' failure threshold (`cluster.health_check`). Meanwhile nothing new
    /// is placed there and its normal tasks fail (their owners' calls broke; they retry
    /// on the owner's next heartbeat); its actors, objects and groups wait for the GCS.
    pub(crate) fn crash_node(&mut self, cx: &mut Cx, n: NodeIdx, reason: &'static str) -> Follows {
        let node = &cx.model.nodes()[n.index()];
        if !node.is_alive() || node.crashed_at.is_some() {
            return Follows::new();
        }
        if node.is_head {
            return smallvec![Follow::KillNode(n, reason, true)];
        }
        let now = cx.now();
        let dead_at = cx.cfg.cluster.health_check.dead_at(node.started_at, now);
        log_event!(cx.model.log, now, "node", "{} CRASHED reason={} dead_at={}", n.0, reason, dead_at);
        GcsNodeManager::crashed(cx.model, n, now);
        cx.local_resources().unreachable(n);
        self.crashed.push((n, reason, false));
        cx.clock.schedule_at(dead_at, Event::NodeDeathDetected(n));
        let m = &*cx.model;
        let mut normal: Vec<TaskId> = cx
            .raylets
            .leased_on(n)
            .iter()
            .copied()
            .filter(|t| m.tasks.get(t).is_some_and(|t| t.kind == TaskType::NormalTask))
            .collect();
        normal.sort();
        normal.into_iter().map(|t| Follow::FailTask(t, ErrorType::NodeDied, true)).collect()
    }

    /// The GCS's health checks of a crashed node reached their threshold: it is dead,
    /// then its host comes back if a restore waited for that.
    pub(crate) fn death_detected(&mut self, m: &Model, n: NodeIdx) -> Follows {
        let Some(pos) = self.crashed.iter().position(|(c, ..)| *c == n) else { return Follows::new() };
        let (_, reason, restore) = self.crashed.swap_remove(pos);
        let mut follows: Follows = smallvec![Follow::KillNode(n, reason, true)];
        if restore {
            follows.push(Follow::RestoreNode(m.nodes()[n.index()].ip.to_string()));
        }
        follows
    }

    /// A restore of a crashed node's host waits until the GCS marks the old node dead
    /// (a node that did not crash is alive: nothing to restore).
    pub(crate) fn restore_after_death(&mut self, m: &mut Model, n: NodeIdx, now: u64) {
        let Some(entry) = self.crashed.iter_mut().find(|(c, ..)| *c == n) else { return };
        entry.2 = true;
        log_event!(m.log, now, "node", "{} restore waits for the GCS to mark it dead", n.0);
    }

    /// A node dies (`failure`) or is terminated by the autoscaler (not a failure): its
    /// record says so and its resources leave the index. Then every component with
    /// something on it hears, each step once the previous one ran (what it reads may
    /// have changed): its leased work fails ([`Follow::FailLeaseOnDeadNode`]), its
    /// actors die, the work only it could hold is asked again, its objects are lost,
    /// its groups are placed again and its lists are given back.
    pub(crate) fn kill_node(
        cx: &mut Cx,
        autoscaler: &mut Autoscaler,
        n: NodeIdx,
        reason: &'static str,
        failure: bool,
    ) -> Follows {
        if !cx.model.nodes()[n.index()].is_alive() {
            return Follows::new();
        }
        let now = cx.now();
        log_event!(cx.model.log, now, "node", "{} DEAD reason={}", n.0, reason);
        GcsNodeManager::died(cx.model, n, reason, now);
        cx.local_resources().lost(n);
        // Its raylet stops exporting: the per-node kill and failure counts go with it.
        cx.model.counters.forget_node_counts(n.0);
        if failure {
            cx.cluster_events().node_died(n, reason);
            cx.model.counters.node_failures += 1;
            if let Some(t) = cx.model.nodes()[n.index()].node_type {
                autoscaler.note_failure(t);
            }
        }
        let mut leased = cx.raylets.take_leased(n);
        leased.sort();
        let mut follows: Follows = leased.into_iter().map(Follow::FailLeaseOnDeadNode).collect();
        follows.push(Follow::KillActorsOnDeadNode(n));
        follows
    }

    /// Work leased on a node that died fails (retries go elsewhere); a driver's job
    /// fails with it. The node's resources are gone with it: nothing to give back.
    /// One task at a time: failing one may read another's lease (a job's driver).
    pub(crate) fn fail_lease_on_dead_node(m: &mut Model, tid: TaskId) -> Follows {
        let Some(t) = m.tasks.get_mut(&tid) else {
            return smallvec![Follow::FailTask(tid, ErrorType::NodeDied, true)];
        };
        t.holds_resources = false;
        t.cpu_released = false;
        if t.kind == TaskType::DriverTask {
            smallvec![Follow::EndJob(t.job, JobStatus::Failed, "the head node died".into())]
        } else {
            smallvec![Follow::FailTask(tid, ErrorType::NodeDied, true)]
        }
    }

    /// Once a dead node's leased work failed: its getters stop waiting and the actors
    /// placed on it die, then the work it stranded is asked again.
    pub(crate) fn kill_actors_on_dead_node(cx: &mut Cx, actor_manager: &mut ActorManager, n: NodeIdx) -> Follows {
        cx.raylets.clear_resuming(n);
        let mut actors = actor_manager.take_on(n);
        actors.sort();
        let mut follows: Follows = actors.into_iter().map(Follow::KillActorOnDeadNode).collect();
        follows.push(Follow::RequeueStrandedBy(n));
        follows
    }

    /// Once a dead node's actors died: hard affinity to it can never be satisfied now,
    /// and work only it could hold is infeasible: ask again (fail, or join the
    /// infeasible demand). Then its objects are lost and its store emptied.
    pub(crate) fn requeue_stranded_by(cx: &mut Cx, queues: &mut ClusterQueues, n: NodeIdx) -> Follows {
        let (sched, specs) = (&*cx.sched, cx.specs);
        let stranded = queues.take_classes(cx.model, |k| {
            k.1 == Some(n) || (k.1.is_none() && !sched.is_feasible(&specs[k.0 as usize].request))
        });
        let mut follows: Follows = stranded.into_iter().flatten().map(Follow::TrySchedule).collect();
        follows.push(Follow::LoseObjectsOn(n));
        follows.push(Follow::EmptyDeadStore(n));
        follows
    }

    /// Once a dead node's objects are lost, its store reads empty; then its groups are
    /// placed again and its lists given back.
    pub(crate) fn empty_dead_store(m: &mut Model, n: NodeIdx) -> Follows {
        PlasmaStores::empty_dead(m, n);
        smallvec![Follow::ReschedulePgsOn(n), Follow::ForgetDeadNode(n)]
    }

    /// The last step of a death: a dead node stays in the table (up to
    /// `sim.dead_node_capacity`), so give back what its lists grew to while alive, and
    /// the GCS node manager remembers it in its dead-node cache.
    pub(crate) fn forget_dead_node(
        raylets: &mut Raylets,
        plasma: &mut PlasmaStores,
        node_manager: &mut GcsNodeManager,
        n: NodeIdx,
    ) {
        plasma.clear_node(n);
        raylets.lost(n);
        node_manager.remember_dead(n);
    }
}

impl FaultState {
    /// Ray's memory monitor: above the usage threshold, kill the most recently started
    /// worker (retriable tasks first). Like Ray's, it looks once per refresh period
    /// (`MEMORY_MONITOR_REFRESH_US`) and kills one worker per look, so a node under
    /// pressure sheds work at a bounded rate instead of killing every arrival at once.
    /// After a kill, [`Follow::RecheckMemory`] looks at the node as the kill left it.
    pub(crate) fn check_memory(&mut self, cx: &mut Cx, actor_manager: &ActorManager, n: NodeIdx) -> Follows {
        let threshold = cx.cfg.memory_monitor.usage_threshold;
        if threshold <= 0.0 {
            return Follows::new();
        }
        let now = cx.now();
        if !cx.model.nodes()[n.index()].over_memory_threshold(threshold) {
            return Follows::new();
        }
        if let Some(last) = self.memory_monitor.last_kill[n.index()] {
            if now < last + MEMORY_MONITOR_REFRESH_US {
                if self.memory_monitor.schedule_look(n) {
                    cx.clock.schedule_at(last + MEMORY_MONITOR_REFRESH_US, Event::MemoryCheck(n));
                }
                return Follows::new();
            }
        }
        let Some(victim) = oom_victim(cx.model, cx.raylets, actor_manager, n) else { return Follows::new() };
        self.memory_monitor.last_kill[n.index()] = Some(now);
        let m = &mut *cx.model;
        let t = &m.tasks[&victim];
        let name = m.names.get(t.name).to_string();
        let (kind, actor, spec) = (t.kind, t.actor.get(), t.spec);
        super::raylet::count_oom_kill(m, n);
        log_event!(m.log, now, "memory_monitor", "node={} OOM kill {:x} name={}", n.0, victim.0, name);
        let heap = cx.specs[spec as usize].heap;
        cx.cluster_events().oom_kill(n, victim, heap, threshold);
        let m = &mut *cx.model;
        let kill = match (kind, actor) {
            (TaskType::ActorTask | TaskType::ActorCreationTask, Some(a)) => {
                let class = m.actors().get(&a).map(|x| m.names.get(x.class).to_string()).unwrap_or(name);
                m.counters.count_oom_kill(n.0, "MemoryManager.ActorEviction.Total", class);
                if kind == TaskType::ActorTask {
                    Follow::ActorDied(a, "killed by the memory monitor (OOM)".into(), true)
                } else {
                    // Failing the constructor kills (and may restart) the actor.
                    Follow::FailTask(victim, ErrorType::OutOfMemory, false)
                }
            }
            _ => {
                m.counters.count_oom_kill(n.0, "MemoryManager.TaskEviction.Total", name);
                Follow::FailTask(victim, ErrorType::OutOfMemory, true)
            }
        };
        smallvec![kill, Follow::RecheckMemory(n)]
    }

    /// After an OOM kill ran: a node still above the threshold gets another look after
    /// the refresh period.
    pub(crate) fn recheck_memory(&mut self, cx: &mut Cx, n: NodeIdx) {
        let threshold = cx.cfg.memory_monitor.usage_threshold;
        if cx.model.nodes()[n.index()].over_memory_threshold(threshold) && self.memory_monitor.schedule_look(n) {
            cx.clock.schedule_in(MEMORY_MONITOR_REFRESH_US, Event::MemoryCheck(n));
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
        m.nodes().iter().filter(|n| n.is_alive() && *n.type_name == *t).map(|n| n.idx).collect();
    if candidates.is_empty() {
        return None;
    }
    let k = rand::Rng::random_range(rng, 0..candidates.len());
    Some(candidates[k])
}

fn oom_victim(m: &Model, raylets: &Raylets, actors: &ActorManager, n: NodeIdx) -> Option<TaskId> {
    let mut best: Option<(bool, u64, TaskId)> = None;
    let leased = raylets.leased_on(n).iter().copied();
    let actor_tasks = actors.on(n).iter().filter_map(|a| m.actors().get(a)).flat_map(|a| a.running.iter().copied());
    for tid in leased.chain(actor_tasks) {
        let Some(t) = m.tasks.get(&tid) else { continue };
        if !t.state().is_running() || t.kind == TaskType::DriverTask {
            continue;
        }
        let retriable = t.retries_left != 0 || t.kind == TaskType::NormalTask;
        let key = (retriable, t.started_at.get().unwrap_or(0), tid);
        if best.is_none_or(|b| key > b) {
            best = Some(key);
        }
    }
    best.map(|(_, _, t)| t)
}
