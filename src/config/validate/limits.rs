//! A config against its own work limits (`cluster.limits`): the nodes its cluster may
//! hold, each job's size, and the one-off jobs' tasks together. The limits and the size
//! estimate are `config::limits`'s; this is where validation reads them.

use super::Problems;
use crate::config::limits::{job_tasks, LimitsConfig};
use crate::config::locate::{join_index, join_key};
use crate::config::schema::{cluster_nodes, Config};
use crate::config::workloads::WorkloadConfig;

/// Check a config against its own limits.
pub(crate) fn check(p: &mut Problems, config: &Config) {
    let limits = &config.cluster.limits;
    let nodes = cluster_nodes(&config.cluster);
    if nodes > limits.max_nodes {
        p.push(
            "cluster.node_types",
            format!(
                "the cluster could hold {nodes} nodes, over the limit of {} (cluster.limits.max_nodes; raise it to allow more)",
                limits.max_nodes
            ),
        );
    }
    let mut one_off = 0.0;
    for (i, w) in config.workloads.iter().enumerate() {
        let path = join_index("workloads", i);
        match w {
            WorkloadConfig::JobMix(m) => {
                if m.arrivals_per_minute > limits.max_arrivals_per_minute {
                    p.push(
                        join_key(&path, "arrivals_per_minute"),
                        format!(
                            "{} arrivals per minute is over the limit of {} (cluster.limits.max_arrivals_per_minute)",
                            m.arrivals_per_minute, limits.max_arrivals_per_minute
                        ),
                    );
                }
                for (j, t) in m.templates.iter().enumerate() {
                    let at = join_key(&join_index(&join_key(&path, "templates"), j), "workload");
                    check_job(p, limits, &t.workload, &at);
                }
            }
            other => {
                check_job(p, limits, other, &path);
                one_off += job_tasks(other);
            }
        }
    }
    if one_off > limits.max_live_tasks as f64 && !config.workloads.is_empty() {
        p.push(
            "workloads",
            format!(
                "the workloads create up to {one_off:.0} tasks, which may all be live at once: over the limit of {} \
                 (cluster.limits.max_live_tasks)",
                limits.max_live_tasks
            ),
        );
    }
}

fn check_job(p: &mut Problems, limits: &LimitsConfig, w: &WorkloadConfig, path: &str) {
    let tasks = job_tasks(w);
    if tasks > limits.max_tasks_per_job as f64 {
        p.push(
            path.to_string(),
            format!(
                "this job creates up to {tasks:.0} tasks and actors, over the limit of {} per job \
                 (cluster.limits.max_tasks_per_job; raise it to allow more)",
                limits.max_tasks_per_job
            ),
        );
    }
}
