//! The `simulate` report (text or JSON with stable keys).

use super::engine::Engine;
use crate::config::calibration::{self, CALIBRATION};
use crate::model::*;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

#[derive(Clone, Debug, Serialize)]
pub struct JobReport {
    pub id: String,
    pub name: String,
    pub status: String,
    /// Seconds of virtual time from start to end; null while running.
    pub makespan: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct NodeTypeUtilization {
    pub node_type: String,
    pub nodes: u64,
    /// Busy CPU time over available CPU time, 0 to 1.
    pub cpu_utilization: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub seed: u64,
    pub sim_seconds: f64,
    pub wall_seconds: f64,
    pub events: u64,
    pub event_log_lines: u64,
    pub tasks_submitted: u64,
    pub tasks_finished: u64,
    pub tasks_failed: u64,
    pub tasks_retried: u64,
    pub tasks_in_flight: u64,
    /// Most tasks ever waiting for a node at once (`PENDING_NODE_ASSIGNMENT`).
    pub peak_pending_tasks: u64,
    pub actors_created: u64,
    pub actors_restarted: u64,
    pub actors_dead: u64,
    pub spillbacks: u64,
    pub spilled_bytes: u64,
    pub restored_bytes: u64,
    pub transferred_bytes: u64,
    pub objects_reconstructed: u64,
    pub oom_kills: u64,
    pub node_failures: u64,
    pub nodes_alive: u64,
    pub peak_rss_bytes: u64,
    pub tasks_per_wall_second: f64,
    pub event_log_sha256: String,
    pub jobs: Vec<JobReport>,
    pub utilization: Vec<NodeTypeUtilization>,
    /// Where the cost defaults come from (Ray version, machine, the fidelity report).
    pub calibration: String,
    /// What the config asks beyond that calibration, one reason each
    /// (`config::calibration::beyond`): in JSON the one warning line they make,
    /// `calibration_warning` (absent: nothing); a sweep says once which of its values
    /// each one applies to.
    #[serde(
        rename = "calibration_warning",
        serialize_with = "calibration::serialize_warning",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub calibration_beyond: Vec<String>,
    /// How far the model was from real Ray on the recorded workloads like this config's
    /// (`config::calibration::measured_for`): the error its answer carries.
    pub measured: Vec<calibration::Measured>,
    /// Set when writing the `--events` file failed part way.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events_file_error: Option<String>,
}

impl Report {
    pub fn build(e: &Engine, wall_seconds: f64, events_file_error: Option<String>) -> Report {
        let m = &e.model;
        let c = &m.counters;
        let now = e.now_us();
        let beyond = calibration::beyond(&e.cfg);
        let mut util: BTreeMap<String, (u64, f64, f64)> =
            c.forgotten_nodes.iter().map(|(t, f)| (t.clone(), (f.nodes, f.cpu_busy_us, f.cpu_available_us))).collect();
        for n in m.nodes() {
            let end = n.died_at.unwrap_or(now);
            let lifetime = end.saturating_sub(n.started_at) as f64;
            let cpus = n.total.get(ResourceId::CPU).to_f64();
            let u = util.entry(n.type_name.to_string()).or_insert((0, 0.0, 0.0));
            u.0 += 1;
            u.1 += n.stats.cpu_busy_us as f64;
            u.2 += lifetime * cpus;
        }
        Report {
            seed: e.cfg.sim.seed,
            sim_seconds: now as f64 / 1e6,
            wall_seconds,
            events: e.events_processed(),
            event_log_lines: m.log.total(),
            tasks_submitted: c.tasks_submitted,
            tasks_finished: c.tasks_finished,
            tasks_failed: c.tasks_failed,
            tasks_retried: c.tasks_retried,
            tasks_in_flight: m.tasks.len() as u64,
            peak_pending_tasks: c.backlog.peak,
            actors_created: c.actors_created,
            actors_restarted: c.actors_restarted,
            actors_dead: c.actors_died,
            spillbacks: c.spillbacks,
            spilled_bytes: c.spilled_bytes,
            restored_bytes: c.restored_bytes,
            transferred_bytes: c.transferred_bytes,
            objects_reconstructed: c.objects_reconstructed,
            oom_kills: c.oom_kills.values().sum(),
            node_failures: c.node_failures,
            nodes_alive: m.nodes().iter().filter(|n| n.is_alive()).count() as u64,
            peak_rss_bytes: peak_rss_bytes(),
            tasks_per_wall_second: if wall_seconds > 0.0 { c.tasks_finished as f64 / wall_seconds } else { 0.0 },
            event_log_sha256: m.log.sha256_hex(),
            jobs: m
                .jobs()
                .values()
                .map(|j| JobReport {
                    id: j.id.hex(),
                    name: j.name.clone(),
                    status: j.status().as_str().to_string(),
                    makespan: j.makespan_s(),
                })
                .collect(),
            utilization: util
                .into_iter()
                .map(|(k, (nodes, busy, avail))| NodeTypeUtilization {
                    node_type: k,
                    nodes,
                    cpu_utilization: if avail > 0.0 { (busy / avail).min(1.0) } else { 0.0 },
                })
                .collect(),
            calibration: CALIBRATION.line(),
            calibration_beyond: beyond,
            measured: calibration::measured_for(&e.cfg),
            events_file_error,
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("report serializes")
    }

    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "rayscope simulation report (seed {})", self.seed);
        let _ = writeln!(s, "  virtual time      {:>14.1} s ({:.2} h)", self.sim_seconds, self.sim_seconds / 3600.0);
        let _ = writeln!(s, "  wall time         {:>14.3} s", self.wall_seconds);
        let _ = writeln!(s, "  events            {:>14}", self.events);
        let _ = writeln!(s, "  tasks submitted   {:>14}", self.tasks_submitted);
        let _ = writeln!(s, "  tasks finished    {:>14}", self.tasks_finished);
        let _ = writeln!(s, "  tasks failed      {:>14}", self.tasks_failed);
        let _ = writeln!(s, "  tasks retried     {:>14}", self.tasks_retried);
        let _ = writeln!(s, "  tasks in flight   {:>14}", self.tasks_in_flight);
        let _ = writeln!(s, "  peak pending      {:>14} tasks waiting for a node", self.peak_pending_tasks);
        let _ = writeln!(s, "  actors created    {:>14}", self.actors_created);
        let _ = writeln!(s, "  actors restarted  {:>14}", self.actors_restarted);
        let _ = writeln!(s, "  spillbacks        {:>14}", self.spillbacks);
        let _ = writeln!(s, "  spilled           {:>14}", Bytes(self.spilled_bytes).to_string());
        let _ = writeln!(s, "  transferred       {:>14}", Bytes(self.transferred_bytes).to_string());
        let _ = writeln!(s, "  OOM kills         {:>14}", self.oom_kills);
        let _ = writeln!(s, "  node failures     {:>14}", self.node_failures);
        let _ = writeln!(s, "  peak RSS          {:>14}", Bytes(self.peak_rss_bytes).to_string());
        let _ = writeln!(s, "  throughput        {:>14.0} tasks/s (wall)", self.tasks_per_wall_second);
        let _ = writeln!(s, "  utilization by node type:");
        for u in &self.utilization {
            let _ =
                writeln!(s, "    {:<24} {:>5} nodes  CPU {:>5.1}%", u.node_type, u.nodes, u.cpu_utilization * 100.0);
        }
        let _ = writeln!(s, "  jobs:");
        for j in &self.jobs {
            let span = j.makespan.map(|m| format!("{m:.1} s")).unwrap_or_else(|| "running".into());
            let _ = writeln!(s, "    {} {:<24} {:<10} {}", j.id, j.name, j.status, span);
        }
        let _ = writeln!(s, "  event log sha256  {}", self.event_log_sha256);
        let _ = writeln!(s, "  costs calibrated  {}", self.calibration);
        if !self.measured.is_empty() {
            let _ = writeln!(s, "  measured on Ray   {}:", calibration::MEASURED_HEADING);
            for m in &self.measured {
                let _ = writeln!(s, "    {}", m.line());
            }
        }
        if let Some(w) = calibration::warning_of(&self.calibration_beyond) {
            let _ = writeln!(s, "  WARNING: {w}");
        }
        if let Some(e) = &self.events_file_error {
            let _ = writeln!(s, "  WARNING: writing the event log failed: {e}");
        }
        s
    }
}

/// Peak resident set size of this process (VmHWM), 0 where unknown.
pub fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}
