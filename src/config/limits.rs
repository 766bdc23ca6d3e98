//! How much work one config or one submitted job may ask for (`cluster.limits`).
//!
//! Owns: the limits, the size estimate of one job (tasks and actors it can create at
//! most), and the checks every path shares: config validation (`check`, `simulate`,
//! `serve`, and the Jobs API, which loads a submitted workload as a config) and the
//! engine's admission of each job against the work already live ([`admit`]).
//!
//! Why: a record costs the model about a kilobyte, so one `fan-out --tasks 4000000000`
//! or a 3M-node cluster aborted the process on allocation failure. The defaults are far
//! above anything the examples or a real user asks for (`examples/scale.yaml`: 2,000
//! nodes, about 1.1M tasks) and keep the model within a few GiB. Every refusal names the
//! limit and the setting that raises it.
//!
//! Must never: refuse a config for something other than its size, or let a refusal go
//! without the setting's name.

use super::workloads::WorkloadConfig;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// Nodes the cluster may ever hold at once: the head plus every type's start count
    /// or autoscaler maximum, whichever is larger.
    #[serde(default = "default_max_nodes")]
    pub max_nodes: u64,
    /// Tasks and actors one job may create (estimated from its parameters, at most).
    #[serde(default = "default_max_tasks_per_job")]
    pub max_tasks_per_job: u64,
    /// Tasks alive at once across all jobs: a job that would pass it is refused (Jobs
    /// API: 429) or, arriving from a `job_mix`, dropped like one over
    /// `max_concurrent_jobs`.
    #[serde(default = "default_max_live_tasks")]
    pub max_live_tasks: u64,
    /// A `job_mix`'s `arrivals_per_minute` at most.
    #[serde(default = "default_max_arrivals_per_minute")]
    pub max_arrivals_per_minute: f64,
}

fn default_max_nodes() -> u64 {
    10_000
}
fn default_max_tasks_per_job() -> u64 {
    5_000_000
}
fn default_max_live_tasks() -> u64 {
    5_000_000
}
fn default_max_arrivals_per_minute() -> f64 {
    60_000.0
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_nodes: default_max_nodes(),
            max_tasks_per_job: default_max_tasks_per_job(),
            max_live_tasks: default_max_live_tasks(),
            max_arrivals_per_minute: default_max_arrivals_per_minute(),
        }
    }
}

/// The most tasks (actor creations included) one instance of `w` can create. A float,
/// so absurd parameters (2^64 tasks, a depth-60 tree) saturate instead of wrapping.
pub fn job_tasks(w: &WorkloadConfig) -> f64 {
    match w {
        WorkloadConfig::FanOut(c) => c.tasks as f64 + c.reducers as f64,
        WorkloadConfig::Replay(c) => c.job.calls.len() as f64,
        WorkloadConfig::ActorPool(c) => c.actors as f64 * (c.calls_per_actor as f64 + 1.0),
        WorkloadConfig::Training(c) => c.workers as f64 * (c.steps as f64 + 1.0),
        WorkloadConfig::FlowInsight(c) => {
            // Every actor of the tree (at the widest, when drawn: Σ max_children^d for d
            // in 1..=depth), each with its constructor, the calls queued on it and the call
            // that spawns its children. Calls are made one at a time, so this is what can
            // be live at once; their total over the run costs time, not memory.
            let actors: f64 = match &c.tree {
                Some(t) => t.size() as f64,
                None => {
                    let width = c.children_range().1.max(1) as f64;
                    (1..=c.root_depth().min(1_000)).map(|d| width.powi(d as i32)).sum()
                }
            };
            actors * (c.calls_per_child as f64 + 2.0)
        }
        WorkloadConfig::JobMix(m) => m.templates.iter().map(|t| job_tasks(&t.workload)).fold(0.0, f64::max),
    }
}

/// A job refused because, with the tasks already live, it could take the cluster over
/// `cluster.limits.max_live_tasks`; the message names the setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the job creates up to {tasks} tasks and {live} are live: together over the limit of {max_live_tasks} live tasks \
     (cluster.limits.max_live_tasks); retry when jobs have finished, or raise the limit"
)]
pub struct OverLiveLimit {
    pub tasks: u64,
    pub live: u64,
    pub max_live_tasks: u64,
}

/// Whether a job of `tasks` fits beside `live` live tasks.
pub fn admit(limits: &LimitsConfig, live: u64, tasks: u64) -> Result<(), OverLiveLimit> {
    if live.saturating_add(tasks) <= limits.max_live_tasks {
        return Ok(());
    }
    Err(OverLiveLimit { tasks, live, max_live_tasks: limits.max_live_tasks })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(yaml: &str) -> WorkloadConfig {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn estimates_saturate_instead_of_wrapping() {
        assert_eq!(job_tasks(&workload("kind: fan_out\ntasks: 10\nreducers: 2")), 12.0);
        let huge = job_tasks(&workload("kind: fan_out\ntasks: 18446744073709551615"));
        assert!(huge > 1e19);
        let deep = job_tasks(&workload("kind: flow_insight\ndepth: 60\nmax_children: 2"));
        assert!(deep > 1e18);
    }

    #[test]
    fn admission_names_the_setting() {
        let l = LimitsConfig { max_live_tasks: 100, ..Default::default() };
        assert!(admit(&l, 50, 50).is_ok());
        let e = admit(&l, 50, 51).unwrap_err().to_string();
        assert!(e.contains("cluster.limits.max_live_tasks"), "{e}");
        assert_eq!(
            e,
            "the job creates up to 51 tasks and 50 are live: together over the limit of 100 live tasks \
             (cluster.limits.max_live_tasks); retry when jobs have finished, or raise the limit"
        );
        assert!(admit(&l, u64::MAX, 1).is_err());
    }
}
