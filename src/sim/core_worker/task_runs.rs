//! The task runs table: what only the simulation needs of a live task while it runs
//! (its program counter, whether a `Begin` is due, the interpreter's per-run state and
//! Flow Insight's tag), keyed by task id beside the model's task table.
//!
//! Owns: one [`Run`] per live task. Entries enter and leave with their task: the only
//! ways in and out are [`TaskRuns::insert_task`], [`TaskRuns::retire_task`] and
//! [`TaskRuns::begin_retry`], which make the model's change and this table's together,
//! so memory stays bounded by the live tasks (`check_invariants` proves the two tables
//! hold the same ids). Must never: be read by a snapshot, the API or the metrics (they
//! see the model only), or be iterated where order could reach the event log.

use crate::model::{ActorId, ErrorType, IdTable, Model, ObjectId, PgId, Task, TaskId, TaskState};

/// A live task's run state.
#[derive(Clone, Debug)]
pub(crate) struct Run {
    /// The program step it is at (`workload::Op`), kept here rather than in `exec` so a
    /// one-step task never allocates its interpreter state.
    pub(crate) pc: u16,
    /// Handed to its worker, with a `Begin` due after `call_start_cost`.
    pub(crate) begin_due: bool,
    /// Its worker had run no call before this lease: after the body it works
    /// `scheduler.worker_first_call_latency` on its node's cores before it replies
    /// (set at each grant by `cluster_queues::worker_ready`, spent once).
    pub(crate) first_call: bool,
    /// Its worker came up for this lease: Ray hands it this call before it renices the
    /// process (20–80 ms after it registers), so the call's start runs at normal
    /// priority (set at each grant by `cluster_queues::worker_ready`, spent once).
    pub(crate) unreniced: bool,
    /// A driver's: it has submitted a task or created an actor before, so its next
    /// `.remote()` pays no `scheduler.first_submit_cost` (an actor's process keeps the
    /// same flag on its actor, `Actor::submitted`: its calls are runs of their own).
    pub(crate) submitted: bool,
    /// Flow Insight's tag for this call (`flow_recorder.rs`; `u32::MAX`: not recorded).
    pub(crate) flow: u32,
    /// When its owner stops reusing the lease this task runs on (`worker_lease_timeout`
    /// after the grant reached it; 0: no lease).
    pub(crate) lease_expires_at: u64,
    pub(crate) exec: LazyExec,
}

impl Default for Run {
    /// At the first step, nothing due, not recorded, no interpreter state.
    fn default() -> Run {
        Run {
            pc: 0,
            begin_due: false,
            first_call: false,
            unreniced: false,
            submitted: false,
            flow: u32::MAX,
            lease_expires_at: 0,
            exec: LazyExec::default(),
        }
    }
}

impl Run {
    /// A new task waiting for `unresolved` of its arguments.
    pub(crate) fn waiting_for(unresolved: u32) -> Run {
        // Most tasks wait for nothing: their state stays unallocated, without building
        // a whole one to compare (one a submit, a million in scale.yaml).
        let exec = match unresolved {
            0 => LazyExec::default(),
            _ => LazyExec(Some(Box::new(Exec { unresolved, ..Default::default() }))),
        };
        Run { exec, ..Run::default() }
    }

    /// The body starts (again) from its first step.
    pub(crate) fn restart(&mut self) {
        self.pc = 0;
        self.begin_due = false;
        self.exec = LazyExec::default();
    }
}

/// The run of every live task, in the model's dense-id storage (a lookup is a
/// subtraction, as for the task table itself: this sits on the interpreter's hot path).
#[derive(Default)]
pub(crate) struct TaskRuns {
    runs: IdTable<TaskId, Run>,
}

impl TaskRuns {
    /// Bring `id`'s run into cache ahead of its use ([`IdTable::prefetch`]).
    #[inline]
    pub(crate) fn prefetch(&self, id: &TaskId) {
        self.runs.prefetch(id);
    }

    #[inline]
    pub(crate) fn get(&self, id: &TaskId) -> Option<&Run> {
        self.runs.get(id)
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, id: &TaskId) -> Option<&mut Run> {
        self.runs.get_mut(id)
    }

    pub(crate) fn len(&self) -> usize {
        self.runs.len()
    }

    pub(crate) fn contains(&self, id: &TaskId) -> bool {
        self.runs.contains_key(id)
    }

    /// A task enters the model's table (`Model::insert_task`) with its run.
    pub(crate) fn insert_task(&mut self, m: &mut Model, task: Task, run: Run) {
        self.runs.insert(task.id, run);
        m.insert_task(task);
    }

    /// A task leaves the model's table (`Model::retire_task`), and its run with it.
    pub(crate) fn retire_task(&mut self, m: &mut Model, id: TaskId, terminal: TaskState, now: u64, return_bytes: u64) {
        self.runs.remove(&id);
        m.retire_task(id, terminal, now, return_bytes);
    }

    /// A new attempt (`Model::begin_retry`) runs its body from the start; its Flow
    /// Insight tag stays (the call is the same).
    pub(crate) fn begin_retry(&mut self, m: &mut Model, id: TaskId, next: TaskState, now: u64, err: ErrorType) {
        if let Some(r) = self.runs.get_mut(&id) {
            r.restart();
        }
        m.begin_retry(id, next, now, err);
    }
}

impl std::ops::Index<&TaskId> for TaskRuns {
    type Output = Run;
    #[inline]
    fn index(&self, id: &TaskId) -> &Run {
        &self.runs[id]
    }
}

/// Interpreter state of a running program (see `workload::program`).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Exec {
    /// Inner counters of the current op (e.g. child index and call index of `CallEach`).
    pub(crate) i: u32,
    pub(crate) j: u32,
    /// Whether `CallEach` already slept before its next submit.
    pub(crate) slept: bool,
    /// Iterations done of the current `Repeat`.
    pub(crate) loops: u32,
    /// Futures this task holds (returns of what it submitted, and what it put), in
    /// submission order.
    pub(crate) futures: Vec<ObjectId>,
    /// Which of `futures` it put (`ray.put`): a reduce step does not take them.
    pub(crate) puts: Vec<ObjectId>,
    /// How many of `futures` are not ready yet (or, while it waits for its arguments,
    /// how many of those).
    pub(crate) unresolved: u32,
    /// How many of `futures` failed.
    pub(crate) failed_futures: u32,
    /// Actor handles this task created (when it is not itself an actor).
    pub(crate) handles: Vec<ActorId>,
    pub(crate) pg: Option<PgId>,
    /// Its `ray.get`'s objects are on their way to its node ([`crate::sim::clock::Event::Pulled`]
    /// resumes it), or, back in its program, have arrived: the get copies them out and
    /// pulls nothing more.
    pub(crate) pulling: bool,
}

/// A task's [`Exec`], allocated on first write. Most live tasks at scale are waiting for
/// a node and have never run a step of their program, so their interpreter state is all
/// zeros; keeping it out of line until then takes ~90 bytes off each of a million live
/// tasks. Reads of an unallocated one see the all-zero state; writes through
/// `DerefMut` allocate it, so `r.exec.i += 1` reads as plain field access.
#[derive(Clone, Debug, Default)]
pub(crate) struct LazyExec(Option<Box<Exec>>);

static NO_EXEC: Exec = Exec {
    i: 0,
    j: 0,
    slept: false,
    loops: 0,
    futures: Vec::new(),
    puts: Vec::new(),
    unresolved: 0,
    failed_futures: 0,
    handles: Vec::new(),
    pg: None,
    pulling: false,
};

impl std::ops::Deref for LazyExec {
    type Target = Exec;
    #[inline]
    fn deref(&self) -> &Exec {
        self.0.as_deref().unwrap_or(&NO_EXEC)
    }
}

impl std::ops::DerefMut for LazyExec {
    #[inline]
    fn deref_mut(&mut self) -> &mut Exec {
        self.0.get_or_insert_with(Default::default)
    }
}

#[cfg(test)]
mod tests {
    use crate::sim::Engine;

    /// Node deaths, retries, lineage reconstruction and job ends all add and remove
    /// tasks: through all of them the runs table holds exactly the live tasks.
    #[test]
    fn a_run_entry_lives_exactly_as_long_as_its_task() {
        let cfg = crate::config::load_str(include_str!("../../../examples/faults.yaml"), "faults.yaml").expect("valid");
        let mut e = Engine::new(cfg);
        let (mut steps, mut peak) = (0u64, 0usize);
        while !e.workloads_done() && e.step() {
            steps += 1;
            peak = peak.max(e.runs.len());
            if steps % 8192 == 0 {
                assert_eq!(e.runs.len(), e.model.tasks.len(), "one run per live task at step {steps}");
            }
        }
        assert!(e.model.counters.tasks_retried > 0 && peak > 0, "the run retried tasks: it proves something");
        assert!(e.model.tasks.is_empty(), "every task ended: {} live", e.model.tasks.len());
        assert_eq!(e.runs.len(), 0, "every run left with its task");
        e.check_invariants().expect("invariants hold at the end");
    }
}
