//! Jobs (one per workload instance, each with a driver) and placement groups.

use super::ids::{JobId, NodeIdx, PgId, TaskId};
use super::resources::ResourceRequest;
use super::states::{JobStatus, PgState, PgStrategy};
use super::Model;
use std::collections::BTreeMap;

#[derive(Clone, Debug)]
pub struct Job {
    pub id: JobId,
    /// Ray's submission id (`raysubmit_...`).
    pub submission_id: String,
    pub name: String,
    pub entrypoint: String,
    /// Private to the model: only `Model::set_job_status` writes it. Read [`Job::status`].
    pub(in crate::model) status: JobStatus,
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
    /// A job the job manager just accepted (PENDING), its driver `driver` on `driver_node`.
    pub fn pending(id: JobId, submission_id: String, driver: TaskId, driver_node: NodeIdx, now: u64) -> Job {
        Job {
            id,
            submission_id,
            name: String::new(),
            entrypoint: String::new(),
            status: JobStatus::Pending,
            driver,
            driver_node,
            start_time: now,
            end_time: None,
            message: String::new(),
            workload: 0,
            log: Vec::new(),
            log_total: 0,
        }
    }

    /// The job's status; only the model's transitions change it.
    ///
    /// ```compile_fail
    /// fn bypass(j: &mut rayscope::model::Job) {
    ///     j.status = rayscope::model::JobStatus::Succeeded;
    /// }
    /// ```
    #[inline]
    pub fn status(&self) -> JobStatus {
        self.status
    }

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
    /// Private to the model: only `Model::set_pg_state` writes it. Read [`PlacementGroup::state`].
    pub(in crate::model) state: PgState,
    pub bundles: Vec<Bundle>,
    pub creator: TaskId,
    pub created_at: u64,
    pub scheduled_at: Option<u64>,
}

impl PlacementGroup {
    /// A group just created (PENDING), its bundles not placed yet.
    pub fn pending(
        id: PgId,
        job: JobId,
        strategy: PgStrategy,
        bundles: Vec<Bundle>,
        creator: TaskId,
        now: u64,
    ) -> Self {
        PlacementGroup {
            id,
            job,
            name: format!("pg_{}", id.0),
            strategy,
            state: PgState::Pending,
            bundles,
            creator,
            created_at: now,
            scheduled_at: None,
        }
    }

    /// The group's state; only the model's transitions change it.
    ///
    /// ```compile_fail
    /// fn bypass(pg: &mut rayscope::model::PlacementGroup) {
    ///     pg.state = rayscope::model::PgState::Removed;
    /// }
    /// ```
    #[inline]
    pub fn state(&self) -> PgState {
        self.state
    }
}

#[derive(Clone, Debug)]
pub struct Bundle {
    pub request: ResourceRequest,
    pub node: Option<NodeIdx>,
    /// What is left of the bundle's reservation for tasks and actors placed in it.
    pub available: ResourceRequest,
}

/// The job table, sealed: a field of [`Model`] that only the GCS job manager changes
/// (beside the model's transitions).
impl Model {
    /// The jobs by id. Only the GCS job manager writes them (`sim::gcs::jobs`, with its
    /// key); code elsewhere cannot:
    ///
    /// ```compile_fail
    /// fn bypass(m: &mut rayscope::model::Model) {
    ///     m.jobs.clear();
    /// }
    /// ```
    #[inline]
    pub fn jobs(&self) -> &BTreeMap<JobId, Job> {
        &self.jobs
    }

    /// The jobs to change: only with the job manager's key.
    #[inline]
    pub(crate) fn jobs_mut(&mut self, _: &crate::sim::gcs::jobs::Key) -> &mut BTreeMap<JobId, Job> {
        &mut self.jobs
    }

    /// The drivers that lived on forgotten node `n` now count as on `head` (the GCS
    /// node manager forgets it).
    pub(crate) fn move_drivers(&mut self, n: NodeIdx, head: NodeIdx) {
        for j in self.jobs.values_mut().filter(|j| j.driver_node == n) {
            j.driver_node = head;
        }
    }
}

/// The placement group table, sealed: a field of [`Model`] that only the GCS placement
/// group manager changes (beside the model's transitions).
impl Model {
    /// The placement groups by id. Only the GCS placement group manager writes them
    /// (`sim::gcs::placement_groups`, with its key); code elsewhere cannot:
    ///
    /// ```compile_fail
    /// fn bypass(m: &mut rayscope::model::Model) {
    ///     m.pgs.clear();
    /// }
    /// ```
    #[inline]
    pub fn pgs(&self) -> &BTreeMap<PgId, PlacementGroup> {
        &self.pgs
    }

    /// The placement groups to change: only with the placement group manager's key.
    #[inline]
    pub(crate) fn pgs_mut(
        &mut self,
        _: &crate::sim::gcs::placement_groups::Key,
    ) -> &mut BTreeMap<PgId, PlacementGroup> {
        &mut self.pgs
    }

    /// A forgotten node's slot names no bundle any more (the GCS node manager forgets it).
    pub(crate) fn unplace_bundles_on(&mut self, n: NodeIdx) {
        for b in self.pgs.values_mut().flat_map(|pg| pg.bundles.iter_mut()).filter(|b| b.node == Some(n)) {
            b.node = None;
        }
    }
}
