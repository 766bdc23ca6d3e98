//! What a replayed job (`Op::Replay`) needs to remember while it runs: the actor in each
//! of its slots, and the return of each of its calls another call takes as an argument.
//!
//! Owns: those two tables, per job. Must never: hold a reference past the object's
//! life (a return is looked up in the object table before it is passed on) or grow past
//! the job's recorded calls and actors.

use crate::model::{ActorId, JobId, ObjectId};
use rustc_hash::FxHashMap;

#[derive(Default)]
pub(crate) struct ReplaySlots {
    jobs: FxHashMap<JobId, Slots>,
}

#[derive(Default)]
struct Slots {
    actors: FxHashMap<u32, ActorId>,
    returns: FxHashMap<u32, ObjectId>,
    /// Whether a call's argument was dropped because its producer was not submitted
    /// yet (said once a job: the recording's order is then not one Ray could run).
    dropped_a_dep: bool,
}

impl ReplaySlots {
    pub fn actor(&self, job: JobId, slot: u32) -> Option<ActorId> {
        self.jobs.get(&job)?.actors.get(&slot).copied()
    }

    pub fn set_actor(&mut self, job: JobId, slot: u32, actor: ActorId) {
        self.jobs.entry(job).or_default().actors.insert(slot, actor);
    }

    pub fn output(&self, job: JobId, call: u32) -> Option<ObjectId> {
        self.jobs.get(&job)?.returns.get(&call).copied()
    }

    pub fn set_output(&mut self, job: JobId, call: u32, object: ObjectId) {
        self.jobs.entry(job).or_default().returns.insert(call, object);
    }

    /// Notes that a call of `job` took the return of a call not submitted yet; true the
    /// first time for the job (the time to say so).
    pub fn first_dropped_dep(&mut self, job: JobId) -> bool {
        !std::mem::replace(&mut self.jobs.entry(job).or_default().dropped_a_dep, true)
    }
}
