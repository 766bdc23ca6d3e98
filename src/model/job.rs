//! Jobs (one per workload instance, each with a driver) and placement groups.

use super::ids::{JobId, NodeIdx, PgId, TaskId};
use super::resources::ResourceRequest;
use super::states::{JobStatus, PgState, PgStrategy};

#[derive(Clone, Debug)]
pub struct Job {
    pub id: JobId,
    /// Ray's submission id (`raysubmit_...`).
    pub submission_id: String,
    pub name: String,
    pub entrypoint: String,
    pub status: JobStatus,
    pub driver: TaskId,
    pub driver_node: NodeIdx,
    pub start_time: u64,
    pub end_time: Option<u64>,
    pub message: String,
    /// Workload template index (the job mix picks among several).
    pub workload: usize,
    pub log: Vec<String>,
    /// Lines ever written to `log` (the oldest leave at the cap), so a tail can tell
    /// which lines it has already sent.
    pub log_total: u64,
}

impl Job {
    pub fn makespan_s(&self) -> Option<f64> {
        self.end_time.map(|e| (e - self.start_time) as f64 / 1e6)
    }
}

#[derive(Clone, Debug)]
pub struct PlacementGroup {
    pub id: PgId,
    pub job: JobId,
    pub name: String,
    pub strategy: PgStrategy,
    pub state: PgState,
    pub bundles: Vec<Bundle>,
    pub creator: TaskId,
    pub created_at: u64,
    pub scheduled_at: Option<u64>,
}

#[derive(Clone, Debug)]
pub struct Bundle {
    pub request: ResourceRequest,
    pub node: Option<NodeIdx>,
    /// What is left of the bundle's reservation for tasks and actors placed in it.
    pub available: ResourceRequest,
}
