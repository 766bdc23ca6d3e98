//! The count views: tasks per state, running tasks per node, actors per state and per
//! node, placement groups per state.
//!
//! Owns: turning the model's incremental aggregates (and the actor table, which is
//! bounded) into sorted, named rows. Must never: mutate the model; walk the task
//! table (the counts are kept per transition so this stays O(names × jobs)).

use crate::model::*;
use crate::snapshot::{ActorCount, ActorExecutorCount, RunningCount, TaskCount};
use std::collections::BTreeMap;

/// Tasks per (name, job, retry, state), sorted by those keys.
pub(super) fn task_counts(m: &Model) -> Vec<TaskCount> {
    let mut task_counts: Vec<TaskCount> = m
        .task_counts
        .iter()
        .map(|(k, v)| TaskCount {
            name: m.names.get(k.name).to_string(),
            job: k.job.hex(),
            is_retry: k.is_retry,
            state: k.state,
            count: v,
        })
        .collect();
    task_counts.sort_by(|a, b| (&a.name, &a.job, a.is_retry, a.state).cmp(&(&b.name, &b.job, b.is_retry, b.state)));
    task_counts
}

/// Running tasks per executing node, sorted by node, name, job, retry and state.
pub(super) fn running_counts(m: &Model) -> Vec<RunningCount> {
    let mut running_counts: Vec<RunningCount> = m
        .task_counts
        .running()
        .map(|(n, k, v)| RunningCount {
            node: n.0,
            name: m.names.get(k.name).to_string(),
            job: k.job.hex(),
            is_retry: k.is_retry,
            state: k.state,
            count: v,
        })
        .collect();
    running_counts.sort_by(|a, b| {
        (a.node, &a.name, &a.job, a.is_retry, a.state).cmp(&(b.node, &b.name, &b.job, b.is_retry, b.state))
    });
    running_counts
}

/// Actors per (class, job, state), and alive actors per (node, class, job, busy):
/// one pass over the actor table for both.
pub(super) fn actor_counts(m: &Model) -> (Vec<ActorCount>, Vec<ActorExecutorCount>) {
    let mut actor_counts: BTreeMap<(NameId, JobId, ActorState), i64> = BTreeMap::new();
    let mut actor_exec: BTreeMap<(u32, NameId, JobId, bool), i64> = BTreeMap::new();
    for a in m.actors().values() {
        *actor_counts.entry((a.class, a.job, a.state())).or_insert(0) += 1;
        if a.state() == ActorState::Alive {
            if let Some(n) = a.node {
                *actor_exec.entry((n.0, a.class, a.job, !a.running.is_empty())).or_insert(0) += 1;
            }
        }
    }
    let counts = actor_counts
        .into_iter()
        .map(|((class, job, state), count)| ActorCount {
            class: m.names.get(class).to_string(),
            job: job.hex(),
            state,
            count,
        })
        .collect();
    let executors = actor_exec
        .into_iter()
        .map(|((node, class, job, running), count)| ActorExecutorCount {
            node,
            class: m.names.get(class).to_string(),
            job: job.hex(),
            running,
            count,
        })
        .collect();
    (counts, executors)
}

/// Placement groups per state name.
pub(super) fn pg_counts(m: &Model) -> BTreeMap<String, i64> {
    let mut pg_counts = BTreeMap::new();
    for pg in m.pgs().values() {
        *pg_counts.entry(pg.state().as_str().to_string()).or_insert(0) += 1;
    }
    pg_counts
}
