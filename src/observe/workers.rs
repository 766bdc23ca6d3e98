//! Ray's worker processes, as its worker table lists them (`GET
//! /api/v0/workers?detail=true`): when the raylet launched each and when it registered.
//!
//! That span is a process's start, and the only one a trace shows of a worker no call
//! waited for: a raylet prestarts its workers for the first driver, so a job whose
//! calls all ran on those never waits for a start in its task rows (`calibrate` reads
//! it here then).
//!
//! Owns: reading worker rows and keeping them, bounded. Must never: hold a driver
//! (a driver's row has no launch), or more than [`MAX_WORKERS`] workers.

use super::rows::{id, num, opt_id, text, FieldError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Workers kept; one past it is not (a cluster of 2,000 nodes of 16 CPUs has 32,000 at
/// most, and a start is read from a few).
pub const MAX_WORKERS: usize = 10_000;

/// Ray writes an unset time as the largest u64; no real Unix ms comes near this.
const UNSET_FROM: u64 = 1 << 62;

/// One worker process.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ObservedWorker {
    pub worker_id: String,
    #[serde(default)]
    pub node_id: String,
    #[serde(default)]
    pub pid: Option<u32>,
    /// Ray's `worker_type`: `WORKER` for a task or actor worker.
    #[serde(default)]
    pub worker_type: String,
    /// When the raylet launched the process, Unix ms.
    #[serde(default)]
    pub launch_ms: Option<u64>,
    /// When the process registered with its raylet, Unix ms.
    #[serde(default)]
    pub launched_ms: Option<u64>,
}

impl ObservedWorker {
    pub fn from_row(v: &Value) -> Result<ObservedWorker, FieldError> {
        let time = |key| num(v, key).filter(|t| *t < UNSET_FROM);
        Ok(ObservedWorker {
            worker_id: id(v, "worker_id")?,
            node_id: opt_id(v, "node_id").unwrap_or_default(),
            pid: num(v, "pid").and_then(|p| u32::try_from(p).ok()),
            worker_type: text(v, "worker_type").unwrap_or_default(),
            launch_ms: time("worker_launch_time_ms"),
            launched_ms: time("worker_launched_time_ms"),
        })
    }

    /// How long its process took from launch to registering, ms (a task or actor
    /// worker's, both times known and in order).
    pub fn start_ms(&self) -> Option<u64> {
        if self.worker_type != "WORKER" {
            return None;
        }
        self.launched_ms?.checked_sub(self.launch_ms?)
    }
}

/// The workers seen, by id.
#[derive(Debug, Default)]
pub struct Workers {
    by_id: BTreeMap<String, ObservedWorker>,
}

impl Workers {
    /// Keep `w`: true when it is new or changed (a new one past [`MAX_WORKERS`] is not
    /// kept). A row that lost a time it had keeps the time.
    pub fn apply(&mut self, w: &ObservedWorker) -> bool {
        if w.worker_type == "DRIVER" {
            return false;
        }
        let full = self.by_id.len() >= MAX_WORKERS;
        match self.by_id.get_mut(&w.worker_id) {
            Some(old) => {
                let merged = ObservedWorker {
                    launch_ms: w.launch_ms.or(old.launch_ms),
                    launched_ms: w.launched_ms.or(old.launched_ms),
                    ..w.clone()
                };
                if *old == merged {
                    return false;
                }
                *old = merged;
                true
            }
            None if full => false,
            None => {
                self.by_id.insert(w.worker_id.clone(), w.clone());
                true
            }
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &ObservedWorker> {
        self.by_id.values()
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kind: &str, launch: u64, launched: u64) -> Value {
        serde_json::json!({"worker_id": "ab12", "node_id": "cd34", "pid": 11300, "worker_type": kind,
            "worker_launch_time_ms": launch, "worker_launched_time_ms": launched, "is_alive": true})
    }

    #[test]
    fn a_workers_start_is_its_launch_to_its_registration() {
        let w = ObservedWorker::from_row(&row("WORKER", 1_796_217_222_782, 1_796_217_223_672)).unwrap();
        assert_eq!((w.pid, w.start_ms()), (Some(11300), Some(890)));
        // Ray's unset time, a driver's row, and times out of order say nothing.
        let unset = ObservedWorker::from_row(&row("WORKER", u64::MAX, u64::MAX)).unwrap();
        assert_eq!((unset.launch_ms, unset.start_ms()), (None, None));
        assert_eq!(ObservedWorker::from_row(&row("DRIVER", 1_000, 2_000)).unwrap().start_ms(), None);
        assert_eq!(ObservedWorker::from_row(&row("WORKER", 2_000, 1_000)).unwrap().start_ms(), None);
        let no_id = serde_json::json!({"worker_type": "WORKER"});
        assert_eq!(ObservedWorker::from_row(&no_id), Err(FieldError::Missing("worker_id")));
    }

    #[test]
    fn workers_are_kept_once_without_drivers_and_bounded() {
        let mut workers = Workers::default();
        let w = ObservedWorker::from_row(&row("WORKER", 1_000, 1_500)).unwrap();
        assert!(workers.apply(&w));
        assert!(!workers.apply(&w), "the same row again changes nothing");
        let later = ObservedWorker { launched_ms: None, pid: Some(1), ..w.clone() };
        assert!(workers.apply(&later));
        assert_eq!(workers.iter().next().unwrap().start_ms(), Some(500), "a time once seen is kept");
        assert!(!workers.apply(&ObservedWorker::from_row(&row("DRIVER", 1, 2)).unwrap()));
        for i in 0..MAX_WORKERS + 5 {
            workers.apply(&ObservedWorker { worker_id: format!("{i:x}0"), ..w.clone() });
        }
        assert_eq!(workers.len(), MAX_WORKERS);
    }
}
