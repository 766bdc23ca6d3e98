//! Recording Ray's cluster events (`model::ClusterEvents`) where the engine makes them
//! happen: one method of [`EventWriter`] per kind, called once from the handler that
//! makes the change.
//!
//! Wording, severity, source and label follow what Ray 2.60 writes for the same moment:
//! * a node that fails: the GCS's `RAY_NODE_REMOVED` ERROR ("... has been marked dead
//!   because the detector has missed too many heartbeats ..."), with `node_id` and `ip`;
//! * an OOM kill: the raylet's `Out of Memory` ERROR, at most one per node per 10 s
//!   (`RAY_EVENT_EVERY_MS`), naming the node (IP, id), the task or actor and its worker;
//! * the autoscaler's summary lines, INFO (its monitor emits every line with `info`):
//!   "Adding N node(s) of type T.", "Failed to launch N node(s) of type T. ...",
//!   "Removing N nodes of type T (idle).";
//! * the job manager's "Started a ray job S." and "Completed a ray job S with a status
//!   X.", INFO, with `submission_id`.
//!
//! Two kinds Ray writes only to its logs are recorded too, because an operator asks
//! for them here: a node joining (GCS, INFO) and an actor's death or restart with its
//! cause (GCS; ERROR when a system failure killed it for good, WARNING when it
//! restarts, INFO when it was killed on purpose). An actor that dies because its job
//! ended is not an event: the job's completion says it.
//!
//! Ids are the State API's (`/api/v0/nodes`, `jobs`, `actors`, `tasks`). Every method
//! returns at once while the store is disabled, and none writes the event log or draws
//! from the RNG: recording never changes the run.

use crate::config::NodeTypeConfig;
use crate::model::cluster_events::{NewEvent, Severity, Source};
use crate::model::*;

/// Ray's raylet writes the OOM event at most once per 10 s (`RAY_EVENT_EVERY_MS`).
const OOM_EVENT_PERIOD_US: u64 = 10_000_000;

/// Ray's advice after an OOM kill (`NodeManager::CreateOomKillMessageSuggestions`).
const OOM_ADVICE: &str = "Refer to the documentation on how to address the out of memory issue: \
https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html. Consider provisioning more memory on this \
node or reducing task parallelism by requesting more CPUs per task.";

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// A float as C++'s `ostream` writes it by default: six significant digits, no
/// trailing zeros.
fn sig6(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let decimals = (5 - x.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Writes cluster events into the model's store at one instant: what each of Ray's
/// components says when the engine makes something happen. Borrowed from the engine
/// by [`Engine::cluster_events`] for one call.
pub(crate) struct EventWriter<'a> {
    m: &'a mut Model,
    now: u64,
}

impl<'a> EventWriter<'a> {
    /// A writer over the model's cluster events, at `now`.
    pub(crate) fn at(m: &'a mut Model, now: u64) -> EventWriter<'a> {
        EventWriter { m, now }
    }

    fn record_cluster_event(&mut self, e: NewEvent) {
        self.m.cluster_events.record_with(self.now, || e);
    }

    fn node_fields(&self, n: NodeIdx) -> Vec<(&'static str, String)> {
        let nd = &self.m.nodes()[n.index()];
        vec![("node_id", nd.node_id.to_string()), ("ip", nd.ip.to_string()), ("node_type", nd.type_name.to_string())]
    }

    /// A node registered with the GCS (at start, launched, or restored).
    pub(crate) fn node_added(&mut self, n: NodeIdx) {
        self.m.cluster_events.slot_reused(n.index());
        if !self.m.cluster_events.enabled() {
            return;
        }
        let nd = &self.m.nodes()[n.index()];
        let message = format!(
            "The node with node id: {} and address: {} and node name: {} has joined the cluster (node type {}).",
            nd.node_id, nd.ip, nd.ip, nd.type_name
        );
        let fields = self.node_fields(n);
        self.record_cluster_event(NewEvent {
            severity: Severity::Info,
            source: Source::Gcs,
            label: "",
            message,
            fields,
        });
    }

    /// A node failed (not an autoscaler's termination): Ray's GCS marks it dead when its
    /// health checks stop. `cause` is what killed it, kept beside Ray's wording.
    pub(crate) fn node_died(&mut self, n: NodeIdx, cause: &str) {
        if !self.m.cluster_events.enabled() {
            return;
        }
        let nd = &self.m.nodes()[n.index()];
        let message = format!(
            "The node with node id: {} and address: {} and node name: {} has been marked dead because the detector \
             has missed too many heartbeats from it. This can happen when a \t(1) raylet crashes unexpectedly (OOM, \
             etc.) \n\t(2) raylet has lagging heartbeats due to slow network or busy workload.",
            nd.node_id, nd.ip, nd.ip
        );
        let mut fields = self.node_fields(n);
        fields.push(("death_reason", "UNEXPECTED_TERMINATION".into()));
        fields.push(("cause", cause.to_string()));
        let e = NewEvent { severity: Severity::Error, source: Source::Gcs, label: "RAY_NODE_REMOVED", message, fields };
        self.record_cluster_event(e);
    }

    /// The autoscaler terminates node `n` (`why`: Ray's reason, e.g. `idle`).
    pub(crate) fn node_removed(&mut self, n: NodeIdx, why: &str) {
        if !self.m.cluster_events.enabled() {
            return;
        }
        let message = format!("Removing 1 nodes of type {} ({why}).", self.m.nodes()[n.index()].type_name);
        let fields = self.node_fields(n);
        let e = NewEvent { severity: Severity::Info, source: Source::Autoscaler, label: "", message, fields };
        self.record_cluster_event(e);
    }

    /// The autoscaler asks for `count` nodes of type `t`.
    pub(crate) fn launch(&mut self, node_type: &NodeTypeConfig, count: u32) {
        if !self.m.cluster_events.enabled() {
            return;
        }
        let name = node_type.name.clone();
        let message = format!("Adding {count} node(s) of type {name}.");
        let fields = vec![("node_type", name), ("count", count.to_string())];
        let e = NewEvent { severity: Severity::Info, source: Source::Autoscaler, label: "", message, fields };
        self.record_cluster_event(e);
    }

    /// A launch of type `t` found no address to give the node.
    pub(crate) fn launch_failed(&mut self, nt: &NodeTypeConfig) {
        if !self.m.cluster_events.enabled() {
            return;
        }
        let message = format!(
            "Failed to launch 1 node(s) of type {}. (NoFreeAddress): every address of ip_range {} is in use.",
            nt.name, nt.ip_range
        );
        let fields = vec![("node_type", nt.name.clone()), ("count", "1".into())];
        let e = NewEvent { severity: Severity::Info, source: Source::Autoscaler, label: "", message, fields };
        self.record_cluster_event(e);
    }

    /// The memory monitor, at usage `threshold`, killed `victim`'s worker (`heap` bytes
    /// used) on node `n`.
    pub(crate) fn oom_kill(&mut self, n: NodeIdx, victim: TaskId, heap: u64, threshold: f64) {
        if !self.m.cluster_events.enabled() || !self.m.cluster_events.due(n.index(), self.now, OOM_EVENT_PERIOD_US) {
            return;
        }
        let Some(t) = self.m.tasks.get(&victim) else { return };
        let nd = &self.m.nodes()[n.index()];
        let actor = t.actor.get().filter(|_| t.kind != TaskType::NormalTask);
        let task_id = task_id_hex(t.id.0, t.job.0, t.kind == TaskType::DriverTask);
        let (who, pid) = match actor.and_then(|a| self.m.actors().get(&a)) {
            Some(a) => (format!("actor ID: {}", actor_id_hex(a.id.0, a.job.0)), a.pid),
            None => (format!("task ID: {task_id}"), worker_pid(t.id.0)),
        };
        let worker = worker_id_hex(pid);
        let (used, total) = (nd.memory_used().0 as f64, nd.memory_bytes.0 as f64);
        let heap = heap as f64;
        let ip = &nd.ip;
        let message = format!(
            "Task was killed due to the node running low on memory.\nMemory on the node (IP: {ip}, ID: {}) where the \
             task ({who}, name={}, pid={pid}, memory used={:.2}GB) was running was {:.2}GB / {:.2}GB ({}), which \
             exceeds the memory usage threshold of {}. Ray killed this worker (ID: {worker}) because it was the most \
             recently scheduled task; to see more information about memory usage on this node, use `ray logs \
             raylet.out -ip {ip}`. To see the logs of the worker, use `ray logs worker-{worker}*out -ip {ip}.\n\n\
             {OOM_ADVICE}",
            nd.node_id,
            self.m.names.get(t.name),
            heap / GIB,
            used / GIB,
            total / GIB,
            sig6(used / total.max(1.0)),
            sig6(threshold),
        );
        let mut fields = vec![("node_id", nd.node_id.to_string()), ("ip", ip.to_string()), ("task_id", task_id)];
        if let Some(a) = actor.and_then(|a| self.m.actors().get(&a)) {
            fields.push(("actor_id", actor_id_hex(a.id.0, a.job.0)));
        }
        fields.extend([("job_id", t.job.hex()), ("worker_id", worker), ("pid", pid.to_string())]);
        let e = NewEvent { severity: Severity::Error, source: Source::Raylet, label: "Out of Memory", message, fields };
        self.record_cluster_event(e);
    }

    fn job_fields(&self, job: JobId) -> Option<(String, Vec<(&'static str, String)>)> {
        let j = self.m.jobs().get(&job)?;
        let fields = vec![("submission_id", j.submission_id.clone()), ("job_id", job.hex())];
        Some((j.submission_id.clone(), fields))
    }

    /// The job manager started job `job`'s driver.
    pub(crate) fn job_started(&mut self, job: JobId) {
        if !self.m.cluster_events.enabled() {
            return;
        }
        let Some((sub, fields)) = self.job_fields(job) else { return };
        let message = format!("Started a ray job {sub}.");
        self.record_cluster_event(NewEvent {
            severity: Severity::Info,
            source: Source::Jobs,
            label: "",
            message,
            fields,
        });
    }

    /// Job `job` reached a terminal status.
    pub(crate) fn job_ended(&mut self, job: JobId) {
        if !self.m.cluster_events.enabled() {
            return;
        }
        let Some((sub, mut fields)) = self.job_fields(job) else { return };
        let j = &self.m.jobs()[&job];
        let message = format!("Completed a ray job {sub} with a status {}.", j.status().as_str());
        fields.push(("message", j.message.clone()));
        self.record_cluster_event(NewEvent {
            severity: Severity::Info,
            source: Source::Jobs,
            label: "",
            message,
            fields,
        });
    }

    /// Actor `a`'s worker died of `cause` on `node`; it restarts or is dead for good.
    pub(crate) fn actor_died(&mut self, a: ActorId, node: Option<NodeIdx>, cause: &str, restarting: bool) {
        if !self.m.cluster_events.enabled() {
            return;
        }
        let Some(actor) = self.m.actors().get(&a) else { return };
        // Fate-sharing with an ended job is the job's event, not one per actor.
        if self.m.jobs().get(&actor.job).is_none_or(|j| j.status().is_terminal()) {
            return;
        }
        let id = actor_id_hex(a.0, actor.job.0);
        let class = self.m.names.get(actor.class).to_string();
        let reason = actor::death_reason(cause);
        let node = node.or(actor.last_node);
        let place = match node {
            Some(n) => {
                let nd = &self.m.nodes()[n.index()];
                format!("It ran on node {} with IP {}.", nd.node_id, nd.ip)
            }
            None => "It was not placed on a node.".to_string(),
        };
        let (severity, message) = if restarting {
            let max = if actor.max_restarts < 0 { "unlimited".to_string() } else { actor.max_restarts.to_string() };
            let n = actor.num_restarts + 1;
            (
                Severity::Warning,
                format!("Actor {id} of class {class} died and is restarting ({n} of {max}): {cause}. {place}"),
            )
        } else {
            let severity = match reason {
                "RAY_KILL" | "OWNER_DIED" => Severity::Info,
                _ => Severity::Error,
            };
            (severity, format!("Actor {id} of class {class} is dead: {cause}. {place}"))
        };
        let mut fields = vec![("actor_id", id), ("job_id", actor.job.hex()), ("class_name", class)];
        if let Some(n) = node {
            let nd = &self.m.nodes()[n.index()];
            fields.extend([("node_id", nd.node_id.to_string()), ("ip", nd.ip.to_string())]);
        }
        fields.extend([("death_reason", reason.to_string()), ("pid", actor.pid.to_string())]);
        self.record_cluster_event(NewEvent { severity, source: Source::Gcs, label: "", message, fields });
    }
}

#[cfg(test)]
mod tests {
    use super::sig6;

    #[test]
    fn fractions_read_as_cpp_streams_write_them() {
        assert_eq!(sig6(0.95), "0.95");
        assert_eq!(sig6(0.9534217), "0.953422");
        assert_eq!(sig6(1.0), "1");
        assert_eq!(sig6(12.5), "12.5");
    }
}
