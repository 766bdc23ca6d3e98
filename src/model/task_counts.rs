//! `TaskCounts`: live and ended tasks per (name, job, retry, state), and running tasks
//! per (node, name, job, retry, state): the aggregates behind `ray_tasks` and the
//! per-node executor series.
//!
//! Owns: the counts and which of them exist. A non-terminal count exists while it is not
//! zero; a terminal (FINISHED, FAILED) count exists from its first task on, so a job's
//! finished total never disappears while the job is kept. Must never: look at the task
//! table (callers report each move), or keep anything of a forgotten job's ended tasks.
//!
//! Every state change touches these counts twice, a million tasks five times each at
//! scale.yaml size, so they are rows, not a map keyed by the whole key: a (name, job,
//! retry) triple is hashed once per move to find its row, and each state is an array
//! slot in it. Running counts per node are a short list per node (a node runs a handful
//! of distinct functions at once), found by a scan instead of a hash.

use super::{JobId, NameId, NodeIdx, TaskCountKey, TaskState};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

const STATES: usize = TaskState::ALL.len();

/// What one row counts: a function (or method) of a job, first attempts or retries.
type RowKey = (NameId, JobId, bool);

#[derive(Default)]
pub struct TaskCounts {
    row_of: FxHashMap<RowKey, u32>,
    /// Row → its key; `None` for a freed row waiting in `free`.
    keys: Vec<Option<RowKey>>,
    counts: Vec<[i64; STATES]>,
    /// Bit per state: a terminal count that exists even at zero.
    kept: Vec<u16>,
    free: Vec<u32>,
    /// Per node index: (row, state, count) of its running tasks, none at zero; two held
    /// inline, so the lists of all nodes sit in one array instead of one heap block each.
    running: Vec<SmallVec<[(u32, TaskState, i64); 2]>>,
}

/// A task's row: found when the task is inserted (and when it is retried), kept on the
/// task, so a move costs no hash at all. A row is only reused once no live task counts
/// in it, so the one a task holds stays its own.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Row(u32);

impl Row {
    /// Not counted yet: any use of it panics on the index.
    pub const UNSET: Row = Row(u32::MAX);
}

impl TaskCounts {
    /// The row of (name, job, retry), made on first use.
    pub fn row(&mut self, name: NameId, job: JobId, is_retry: bool) -> Row {
        let key = (name, job, is_retry);
        if let Some(&r) = self.row_of.get(&key) {
            return Row(r);
        }
        let r = match self.free.pop() {
            Some(r) => {
                self.keys[r as usize] = Some(key);
                r
            }
            None => {
                self.keys.push(Some(key));
                self.counts.push([0; STATES]);
                self.kept.push(0);
                (self.keys.len() - 1) as u32
            }
        };
        self.row_of.insert(key, r);
        Row(r)
    }

    /// Count `delta` tasks of `row` in `state`, on `node` too when they run there.
    #[inline]
    pub fn add(&mut self, row: Row, state: TaskState, node: Option<NodeIdx>, delta: i64) {
        let r = row.0 as usize;
        self.counts[r][state as usize] += delta;
        if state.is_terminal() {
            self.kept[r] |= 1 << state as u16;
        }
        if let (true, Some(n)) = (state.is_running(), node) {
            self.add_running(n, row.0, state, delta);
        }
    }

    /// Bring `node`'s running counts into cache ahead of a task's step there
    /// (`cache_hint`): a task starting or ending changes them, and at 2,000 nodes the
    /// list of the node it runs on is cold by then.
    #[inline]
    pub(crate) fn prefetch_running(&self, node: NodeIdx) {
        if let Some(list) = self.running.get(node.index()) {
            super::cache_hint::prefetch(list);
        }
    }

    fn add_running(&mut self, node: NodeIdx, row: u32, state: TaskState, delta: i64) {
        let n = node.index();
        if n >= self.running.len() {
            self.running.resize_with(n + 1, SmallVec::new);
        }
        let list = &mut self.running[n];
        match list.iter().position(|&(r, s, _)| r == row && s == state) {
            Some(i) => {
                list[i].2 += delta;
                if list[i].2 == 0 {
                    list.swap_remove(i);
                }
            }
            None => list.push((row, state, delta)),
        }
    }

    /// Every count that exists, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (TaskCountKey, i64)> + '_ {
        self.keys.iter().enumerate().filter_map(|(r, k)| k.map(|k| (r, k))).flat_map(
            move |(r, (name, job, is_retry))| {
                let (counts, kept) = (&self.counts[r], self.kept[r]);
                TaskState::ALL.iter().filter_map(move |&state| {
                    let c = counts[state as usize];
                    let exists = c != 0 || kept & (1 << state as u16) != 0;
                    exists.then_some((TaskCountKey { name, job, is_retry, state }, c))
                })
            },
        )
    }

    /// Running tasks per (node, key), in no particular order.
    pub fn running(&self) -> impl Iterator<Item = (NodeIdx, TaskCountKey, i64)> + '_ {
        self.running.iter().enumerate().flat_map(move |(n, list)| {
            list.iter().map(move |&(r, state, c)| {
                let (name, job, is_retry) = self.keys[r as usize].expect("a running row is never freed");
                (NodeIdx(n as u32), TaskCountKey { name, job, is_retry, state }, c)
            })
        })
    }

    /// Drop a forgotten job's counts, so `ray_tasks` stays bounded. A row that still
    /// counts live tasks keeps those (its ended counts go); the others are reused.
    pub fn forget_job(&mut self, job: JobId) {
        let rows: Vec<(RowKey, u32)> = self.row_of.iter().filter(|(k, _)| k.1 == job).map(|(k, r)| (*k, *r)).collect();
        for (key, r) in rows {
            let i = r as usize;
            self.kept[i] = 0;
            for s in [TaskState::Finished, TaskState::Failed] {
                self.counts[i][s as usize] = 0;
            }
            let live =
                self.counts[i].iter().any(|&c| c != 0) || self.running.iter().flatten().any(|&(row, _, _)| row == r);
            if !live {
                self.row_of.remove(&key);
                self.keys[i] = None;
                self.free.push(r);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(job: u32, state: TaskState) -> TaskCountKey {
        TaskCountKey { name: NameId(1), job: JobId(job), is_retry: false, state }
    }

    #[test]
    fn non_terminal_counts_vanish_at_zero_and_terminal_ones_stay() {
        let mut c = TaskCounts::default();
        let r = c.row(NameId(1), JobId(1), false);
        c.add(r, TaskState::PendingNodeAssignment, None, 1);
        assert_eq!(c.iter().collect::<Vec<_>>(), vec![(key(1, TaskState::PendingNodeAssignment), 1)]);
        c.add(r, TaskState::PendingNodeAssignment, None, -1);
        c.add(r, TaskState::Running, Some(NodeIdx(3)), 1);
        assert_eq!(c.running().collect::<Vec<_>>(), vec![(NodeIdx(3), key(1, TaskState::Running), 1)]);
        c.add(r, TaskState::Running, Some(NodeIdx(3)), -1);
        c.add(r, TaskState::Finished, Some(NodeIdx(3)), 1);
        assert_eq!(c.iter().collect::<Vec<_>>(), vec![(key(1, TaskState::Finished), 1)]);
        assert_eq!(c.running().count(), 0);
    }

    #[test]
    fn a_forgotten_job_frees_its_rows_for_the_next() {
        let mut c = TaskCounts::default();
        let r = c.row(NameId(1), JobId(1), false);
        c.add(r, TaskState::Finished, None, 5);
        c.forget_job(JobId(1));
        assert_eq!(c.iter().count(), 0);
        let r2 = c.row(NameId(1), JobId(2), false);
        assert_eq!(r2, r, "the freed row is reused");
        c.add(r2, TaskState::Finished, None, 1);
        assert_eq!(c.iter().collect::<Vec<_>>(), vec![(key(2, TaskState::Finished), 1)]);
    }

    #[test]
    fn a_row_with_live_tasks_survives_its_job_being_forgotten() {
        let mut c = TaskCounts::default();
        let r = c.row(NameId(1), JobId(1), false);
        c.add(r, TaskState::Running, Some(NodeIdx(0)), 1);
        c.add(r, TaskState::Finished, None, 2);
        c.forget_job(JobId(1));
        assert_eq!(c.iter().collect::<Vec<_>>(), vec![(key(1, TaskState::Running), 1)]);
        assert_eq!(c.row(NameId(1), JobId(1), false), r);
    }
}
