//! Which priority a node's work runs at (`scheduler.worker_niceness`), and the
//! time-sliced normal-priority work a node keeps ([`super::NodeCpus`]).
//!
//! Owns: the rule that says whose work is reniced, and the stretches of time-sliced work
//! placed and not over. Must never: place work itself (`super` does), or be read for
//! anything but timing.

use crate::model::{Task, TaskType};

/// The time-sliced normal-priority work placed on a node and not over yet (a driver's
/// own and the starts; at `worker_niceness` above 0, all of it), as stretches of busy
/// time: a piece that starts when a stretch ends (the next piece of the same thread, or
/// work that waited for it) extends that stretch. A stretch's pieces follow each other,
/// so the stretches running at a time are as many as the pieces; and they stay few
/// (the raylet, each driver's threads, the starts), however long the queues behind them.
#[derive(Default)]
pub(super) struct NormalWork {
    /// (start, end) of each stretch.
    stretches: Vec<(u64, u64)>,
}

impl NormalWork {
    /// How many stretches run at `at`, placed at `now` (the simulation's clock; `at` is
    /// no earlier). Those over by `now` are dropped first.
    pub(super) fn running_at(&mut self, now: u64, at: u64) -> u64 {
        self.stretches.retain(|&(_, end)| end > now);
        self.stretches.iter().filter(|&&(start, end)| start <= at && at < end).count() as u64
    }

    /// A piece from `start` to `end`: returns `end`.
    pub(super) fn place(&mut self, start: u64, end: u64) -> u64 {
        match self.stretches.iter_mut().find(|(_, last)| *last == start) {
            Some(stretch) => stretch.1 = end,
            None => self.stretches.push((start, end)),
        }
        end
    }
}

/// Which priority a piece of work runs at on its node's cores. Ray renices each worker
/// process once it is up (Ray's `worker_niceness`, 15): on a loaded node the raylet, the
/// drivers and the workers still starting take the cores first, and the workers (task
/// workers and actors alike) get what they leave (runs/README.md, first_call.py).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Priority {
    /// The raylet, a driver, a worker process's start (and the start of the call a
    /// process came up for, handed to it before Ray renices it).
    Normal,
    /// A worker process that is up: its calls, replies, submits and pushes.
    Worker,
}

impl Priority {
    /// The priority of the process running `task`: a driver's is normal, a worker's
    /// (a task's or an actor's) reniced.
    pub(crate) fn of_process_running(task: &Task) -> Priority {
        if task.kind == TaskType::DriverTask {
            Priority::Normal
        } else {
            Priority::Worker
        }
    }

    /// The priority of the process that owns a task whose caller was `parent`, looked
    /// up as `caller` (None once it has retired). A caller that retired was a worker's
    /// task: a driver retires only with its job, whose calls go with it, and the worker
    /// that ran it stays up as its calls' owner (Ray's owner is the process, not the
    /// call). A task with no caller is a driver's own, at normal priority.
    pub(crate) fn of_owner(parent: Option<crate::model::TaskId>, caller: Option<&Task>) -> Priority {
        match (parent, caller) {
            (_, Some(caller)) => Priority::of_process_running(caller),
            (Some(_), None) => Priority::Worker,
            (None, None) => Priority::Normal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_that_follow_each_other_make_one_stretch() {
        let mut work = NormalWork::default();
        work.place(0, 10);
        work.place(10, 20);
        work.place(5, 30);
        assert_eq!(work.stretches, vec![(0, 20), (5, 30)]);
        assert_eq!(work.running_at(0, 15), 2);
        assert_eq!(work.running_at(25, 25), 1, "the stretch over by now is dropped");
        assert_eq!(work.stretches.len(), 1);
    }

    #[test]
    fn an_owner_is_reniced_unless_it_is_a_driver() {
        use crate::model::{JobId, NameId, NodeIdx, TaskId};
        let task = |id, kind| Task::new(TaskId(id), JobId(1), NameId(0), kind, 0, NodeIdx(0), 0);
        let (driver, worker) = (task(1, TaskType::DriverTask), task(2, TaskType::NormalTask));
        assert_eq!(Priority::of_owner(Some(driver.id), Some(&driver)), Priority::Normal);
        assert_eq!(Priority::of_owner(Some(worker.id), Some(&worker)), Priority::Worker);
        assert_eq!(Priority::of_owner(Some(TaskId(3)), None), Priority::Worker, "a retired caller ran on a worker");
        assert_eq!(Priority::of_owner(None, None), Priority::Normal, "no caller: a driver's own");
    }
}
