//! Ray's id layouts, as the State API prints them and the control API reads them
//! back, so tools that slice ids keep working: an actor id is 12 unique bytes then the
//! 4-byte job id (32 hex); a task id is 8 unique bytes then 16 bytes naming the actor
//! or the job (48 hex; drivers start with 40 `f`s, as Ray's `DRIVER_TASK_ID_PREFIX`);
//! an object id is a task-id-shaped prefix and a 4-byte return index (56 hex); a
//! placement group id is 14 unique bytes then the job id (36 hex).
//!
//! Owns formatting and parsing only; which id a row shows is its table's business.

use crate::model::{JobId, TaskType};

pub(crate) fn job_hex(job: u32) -> String {
    JobId(job).hex()
}

pub(crate) fn actor_hex(actor: u64, job: u32) -> String {
    crate::model::actor_id_hex(actor, job)
}

pub(crate) fn task_hex(task: u64, job: u32, kind: TaskType) -> String {
    crate::model::task_id_hex(task, job, kind == TaskType::DriverTask)
}

pub(crate) fn object_hex(object: u64, job: u32) -> String {
    format!("{object:016x}{}{}01000000", "f".repeat(24), job_hex(job))
}

pub(crate) fn pg_hex(pg: u32, job: u32) -> String {
    format!("{pg:028x}{}", job_hex(job))
}

/// A worker id (28 bytes, 56 hex) for a worker process.
pub(crate) fn worker_hex(pid: u32) -> String {
    crate::model::worker_id_hex(pid)
}

/// An actor id as the State API shows it (32 hex) or as the event log does (short hex).
pub(crate) fn parse_actor_id(id: &str) -> Option<u64> {
    let id = id.trim();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    match id.len() {
        32 => u128::from_str_radix(&id[..24], 16).ok().and_then(|v| u64::try_from(v).ok()),
        1..=16 => u64::from_str_radix(id, 16).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_rays_lengths_and_read_back() {
        assert_eq!(actor_hex(0xabc, 1).len(), 32);
        assert!(actor_hex(0xabc, 1).ends_with("01000000"));
        assert_eq!(parse_actor_id(&actor_hex(0xabc, 1)), Some(0xabc));
        assert_eq!(parse_actor_id("abc"), Some(0xabc));
        assert_eq!(parse_actor_id("xyz"), None);
        assert_eq!(parse_actor_id(""), None);
        assert_eq!(task_hex(5, 2, TaskType::NormalTask).len(), 48);
        assert!(task_hex(5, 2, TaskType::DriverTask).starts_with(&"f".repeat(40)));
        assert_eq!(object_hex(5, 2).len(), 56);
        assert_eq!(pg_hex(5, 2).len(), 36);
    }
}
