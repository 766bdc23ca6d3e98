//! Everything observed of one Ray cluster, merged from polls, pushed events or a trace,
//! under caps.
//!
//! Owns: the observed records by Ray's ids, the dense numbers readers index them by
//! (a node's slot, a job's number, a task's and an actor's id), which records changed
//! (only those go to a trace), and the bounds: at most `max_tasks` task attempts and
//! `max_jobs` jobs in memory (a job counts once it has a record or a task). Past
//! either cap, the oldest ended jobs are forgotten whole (a trace keeps them), each in
//! O(log n) from an index of ended jobs by end time, and not taken back when Ray lists
//! them again (every poll lists every job of Ray's session) or a late task event names
//! one of the latest forgotten (`late_records`); a job still running that alone
//! passes the task cap keeps its first tasks and counts the rest, as the model's Flow
//! Insight cap does; and when the job cap is full of running jobs, a new job's records
//! are refused and counted (`jobs_refused`), so the page can say so.
//! Times must be plausible: a record naming a time after `now_ms` plus
//! [`TIME_MARGIN_MS`], or before the observed cluster's first node started minus that
//! margin, is refused and counted (`implausible_times`), so one bad clock (or one
//! hostile push) never becomes time zero.
//! Must never: grow past its caps, renumber what it numbered (a reader holding a
//! snapshot's ids must find them again), or take a record's time from the wall clock
//! (the wall clock only bounds which times are plausible).

use super::args::ArgSightings;
use super::cpu_times::{CpuReadings, WorkerCpu};
use super::merge;
use super::rows::{ObservedActor, ObservedJob, ObservedNode, ObservedObject, ObservedPg, ObservedTask};
use super::workers::{ObservedWorker, Workers};
use crate::model::VirtualTime;
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, BTreeSet};

/// The store's bounds.
#[derive(Clone, Copy, Debug)]
pub struct StoreLimits {
    /// Task attempts kept in memory, every job together.
    pub max_tasks: usize,
    /// Jobs kept (the oldest ended ones go first).
    pub max_jobs: usize,
    /// Actors kept (the oldest dead ones go first).
    pub max_actors: usize,
    /// Nodes kept (the oldest dead ones go first).
    pub max_nodes: usize,
    /// Objects of the latest listing kept.
    pub max_objects: usize,
}

impl Default for StoreLimits {
    fn default() -> Self {
        StoreLimits { max_tasks: 200_000, max_jobs: 1_000, max_actors: 100_000, max_nodes: 10_000, max_objects: 10_000 }
    }
}

/// A task's attempts, oldest first.
#[derive(Clone, Debug, Default)]
pub struct TaskEntry {
    /// Its dense id (never 0: 0 is "no parent" in Flow Insight's records).
    pub id: u64,
    pub job: u32,
    pub attempts: Vec<ObservedTask>,
}

impl TaskEntry {
    pub fn last(&self) -> &ObservedTask {
        self.attempts.last().expect("an entry holds at least one attempt")
    }
}

/// A record that changed what the store holds: what a trace appends.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    Node(ObservedNode),
    Job(ObservedJob),
    Actor(ObservedActor),
    Task(ObservedTask),
    PlacementGroup(ObservedPg),
    Worker(ObservedWorker),
    /// Worker processes' CPU time, read on the observer's machine (`cpu_times.rs`).
    WorkerCpu(WorkerCpu),
}

/// What was observed, merged.
#[derive(Debug, Default)]
pub struct Store {
    pub limits: StoreLimits,
    /// The Unix ms that time 0 of the snapshots stands for (set by the first record).
    pub zero_ms: Option<u64>,
    /// The wall clock's Unix ms as the caller last said (0: unknown, no upper bound):
    /// records naming times past it plus [`TIME_MARGIN_MS`] are refused.
    pub now_ms: u64,
    /// The earliest start of a node held: records naming times before it minus
    /// [`TIME_MARGIN_MS`] are refused.
    cluster_start_ms: Option<u64>,
    /// Records refused for a time outside that window.
    pub implausible_times: u64,
    /// Nodes by slot; a slot is never reused.
    pub nodes: Vec<ObservedNode>,
    node_index: FxHashMap<String, u32>,
    pub jobs: BTreeMap<u32, ObservedJob>,
    /// Actors by dense id.
    pub actors: BTreeMap<u64, ObservedActor>,
    actor_index: FxHashMap<String, u64>,
    /// Dead actors' ids, oldest first: the next to forget past the actor cap.
    dead_actors: BTreeSet<u64>,
    next_actor: u64,
    /// Tasks by dense id (first seen first).
    pub tasks: BTreeMap<u64, TaskEntry>,
    task_index: FxHashMap<String, u64>,
    /// Per job held (one with a record or a task), its tasks' ids in the order first
    /// seen: a job's trace and its forgetting read its own tasks, not every task held.
    tasks_by_job: BTreeMap<u32, Vec<u64>>,
    /// Ended jobs by (end time, number): the next to forget is the first.
    ended: BTreeSet<(u64, u32)>,
    /// The latest (end time, number) of an ended job forgotten. Ray lists every job of
    /// its session on each poll: an ended job no later than this would be forgotten
    /// before anything held, so its record is not taken back (one key, not a set of
    /// every job forgotten).
    forgotten_through: Option<(u64, u32)>,
    /// The latest jobs forgotten, oldest first, at most `max_jobs`: a task event that
    /// comes after its job was forgotten (Ray's export is late by seconds) is refused,
    /// not taken as a new job that has no record to end it, and so could never be
    /// forgotten again. Only ended jobs are forgotten, so none of these is still running.
    recently_forgotten: std::collections::VecDeque<u32>,
    next_task: u64,
    /// Task attempts held (the cap counts these).
    attempts: usize,
    /// Per job: tasks refused past the cap (its first tasks are kept).
    pub dropped_by_job: BTreeMap<u32, u64>,
    pub placement_groups: BTreeMap<u32, ObservedPg>,
    pg_index: FxHashMap<String, u32>,
    /// The latest object listing, capped.
    pub objects: Vec<ObservedObject>,
    /// Worker processes seen, with their starts, capped.
    pub workers: Workers,
    /// Worker processes' CPU time as read on the observer's machine, capped.
    pub cpu: CpuReadings,
    /// Running calls' arguments seen in object listings, until their calls are known.
    pub arg_sightings: ArgSightings,
    /// Bumped on every change, so a producer can tell whether to rebuild.
    pub generation: u64,
    /// Per job, the generation of its last change (its tasks, its actors, itself).
    pub job_generation: BTreeMap<u32, u64>,
    /// Jobs and tasks forgotten to stay under the caps.
    pub forgotten_jobs: u64,
    pub forgotten_tasks: u64,
    /// State transitions dropped by the per-attempt cap (`merge::cap_transitions`).
    pub transitions_dropped: u64,
    /// Whether tasks are read from Ray's State API (`pull`): a push-only observer
    /// cannot tell when an ended job's last reports are in.
    pub pulled: bool,
    /// Ended jobs whose tasks were read after the end until Ray's listing stopped
    /// changing (or until the observer gave up): their records hold Ray's last reports.
    settled: BTreeSet<u32>,
    /// Records refused because their job id was not Ray's 4 bytes.
    pub bad_job_ids: u64,
    /// Records of new jobs refused because `max_jobs` jobs, all running, were held.
    pub jobs_refused: u64,
    /// Task records refused because their job had ended and been forgotten.
    pub late_records: u64,
}

/// How far a record's time may lie after now, or before the cluster's first node
/// started: Ray's nodes' clocks differ by seconds, not a day.
pub const TIME_MARGIN_MS: u64 = 24 * 3600 * 1000;

/// Attempts kept of one task: Ray retries a task 3 times by default; a client posting
/// attempt after attempt of one task gets no further.
pub const MAX_ATTEMPTS: usize = 64;

/// A Ray job id's number: its 4 bytes, little-endian (`01000000` is job 1), as Ray and
/// the model number jobs alike.
pub fn job_number(hex: &str) -> Option<u32> {
    if hex.len() != 8 {
        return None;
    }
    let b = u32::from_str_radix(hex, 16).ok()?;
    Some(b.swap_bytes())
}

impl Store {
    pub fn new(limits: StoreLimits) -> Store {
        Store { limits, next_actor: 1, next_task: 1, ..Default::default() }
    }

    /// Time 0 is fixed by the first record that names a time, and never moves; earlier
    /// times read as 0.
    pub fn anchor(&mut self, unix_ms: u64) {
        if self.zero_ms.is_none() && unix_ms > 0 {
            self.zero_ms = Some(unix_ms);
        }
    }

    /// Unix ms as the snapshots' virtual time: µs since time 0.
    pub fn time(&self, unix_ms: u64) -> VirtualTime {
        VirtualTime(unix_ms.saturating_sub(self.zero_ms.unwrap_or(unix_ms)).saturating_mul(1000))
    }

    pub fn node_slot(&self, node_id: &str) -> Option<u32> {
        self.node_index.get(node_id).copied()
    }

    /// The job's driver node: by id, else the alive node (or any) at its address.
    pub fn driver_slot(&self, job: &ObservedJob) -> Option<u32> {
        job.driver_node_id.as_deref().and_then(|n| self.node_slot(n)).or_else(|| {
            let ip = job.driver_ip.as_deref()?;
            let at = |alive: bool| self.nodes.iter().position(|n| n.node_ip == ip && (!alive || n.state == "ALIVE"));
            at(true).or_else(|| at(false)).map(|i| i as u32)
        })
    }

    pub fn actor_number(&self, actor_id: &str) -> Option<u64> {
        self.actor_index.get(actor_id).copied()
    }

    pub fn task_number(&self, task_id: &str) -> Option<u64> {
        self.task_index.get(task_id).copied()
    }

    pub fn pg_number(&self, pg_id: &str) -> Option<u32> {
        self.pg_index.get(pg_id).copied()
    }

    pub fn attempts(&self) -> usize {
        self.attempts
    }

    /// Jobs held: those with a job record or tasks (the job cap counts these).
    pub fn jobs_held(&self) -> usize {
        self.tasks_by_job.len()
    }

    /// The jobs held, by number.
    pub fn held_jobs(&self) -> impl Iterator<Item = u32> + '_ {
        self.tasks_by_job.keys().copied()
    }

    /// Whether the job cap is full of jobs still running (new jobs are refused).
    pub fn jobs_full_of_running(&self) -> bool {
        self.tasks_by_job.len() >= self.limits.max_jobs && self.ended.is_empty()
    }

    /// Hold `job`, forgetting the oldest ended job if the cap is full; `false` (and
    /// counted) when every job held still runs.
    fn admit_job(&mut self, job: u32) -> bool {
        if self.tasks_by_job.contains_key(&job) {
            return true;
        }
        if self.tasks_by_job.len() >= self.limits.max_jobs {
            match self.ended.iter().next().map(|&(_, n)| n) {
                Some(oldest) => self.forget_job(oldest),
                None => {
                    self.jobs_refused += 1;
                    return false;
                }
            }
        }
        self.tasks_by_job.insert(job, Vec::new());
        true
    }

    /// Merge one record (a whole State API row, or the part of one a pushed event
    /// carries); the merged record if it changed what the store holds.
    pub fn apply(&mut self, change: &Change) -> Option<Change> {
        if !self.plausible(change) {
            self.implausible_times += 1;
            return None;
        }
        let merged = match change {
            Change::Node(n) => self.apply_node(n).map(Change::Node),
            Change::Job(j) => self.apply_job(j).map(Change::Job),
            Change::Actor(a) => self.apply_actor(a).map(Change::Actor),
            Change::Task(t) => self.apply_task(t).map(Change::Task),
            Change::PlacementGroup(p) => self.apply_pg(p).then(|| change.clone()),
            Change::Worker(w) => self.workers.apply(w).then(|| change.clone()),
            Change::WorkerCpu(c) => self.cpu.apply(c).then(|| change.clone()),
        };
        // Readings of CPU time are in no snapshot: they leave what readers see unchanged.
        if merged.is_some() && !matches!(change, Change::WorkerCpu(_)) {
            self.generation += 1;
            let job = match change {
                Change::Job(j) => job_number(&j.job_id),
                Change::Actor(a) => job_number(&a.job_id),
                Change::Task(t) => job_number(&t.job_id),
                Change::Node(_) | Change::PlacementGroup(_) | Change::Worker(_) | Change::WorkerCpu(_) => None,
            };
            if let Some(job) = job.filter(|j| self.tasks_by_job.contains_key(j)) {
                self.job_generation.insert(job, self.generation);
            }
        }
        merged
    }

    /// Whether every time `change` names lies in the plausible window.
    fn plausible(&self, change: &Change) -> bool {
        let latest = if self.now_ms == 0 { u64::MAX } else { self.now_ms.saturating_add(TIME_MARGIN_MS) };
        let earliest = self.cluster_start_ms.map_or(0, |s| s.saturating_sub(TIME_MARGIN_MS));
        let ok = |t: &u64| (earliest..=latest).contains(t);
        match change {
            Change::Task(t) => {
                [t.creation_time_ms, t.start_time_ms, t.end_time_ms].iter().flatten().all(ok)
                    && t.events.iter().all(|e| ok(&e.1))
            }
            Change::Job(j) => [j.start_time, j.end_time].iter().flatten().all(ok),
            Change::Actor(a) => [a.start_time_ms, a.end_time_ms].iter().flatten().all(ok),
            // A node's start is what sets the lower bound: only the upper one holds it.
            Change::Node(n) => [n.start_time_ms, n.end_time_ms].iter().flatten().all(|t| *t <= latest),
            Change::PlacementGroup(_) => true,
            Change::Worker(w) => [w.launch_ms, w.launched_ms].iter().flatten().all(ok),
            Change::WorkerCpu(c) => ok(&c.at_ms),
        }
    }

    fn apply_node(&mut self, n: &ObservedNode) -> Option<ObservedNode> {
        if let Some(ms) = n.start_time_ms {
            self.anchor(ms);
            self.cluster_start_ms = Some(self.cluster_start_ms.map_or(ms, |s| s.min(ms)));
        }
        if let Some(&slot) = self.node_index.get(&n.node_id) {
            let old = &mut self.nodes[slot as usize];
            let merged = merge::node(old, n);
            if *old == merged {
                return None;
            }
            *old = merged.clone();
            return Some(merged);
        }
        if self.nodes.len() >= self.limits.max_nodes {
            // Slots are never reused (snapshots index by them): past the cap, new nodes
            // are not listed. 10,000 is beyond any Ray cluster's size.
            return None;
        }
        self.node_index.insert(n.node_id.clone(), self.nodes.len() as u32);
        self.nodes.push(n.clone());
        Some(n.clone())
    }

    /// A record's job number; a job id that is not Ray's 4 bytes is counted.
    fn job_of(&mut self, job_id: &str) -> Option<u32> {
        let num = job_number(job_id);
        if num.is_none() {
            self.bad_job_ids += 1;
        }
        num
    }

    fn apply_job(&mut self, j: &ObservedJob) -> Option<ObservedJob> {
        let num = self.job_of(&j.job_id)?;
        let forgotten = |through: (u64, u32)| is_terminal_job(&j.status) && (j.end_time.unwrap_or(0), num) <= through;
        if !self.tasks_by_job.contains_key(&num) && self.forgotten_through.is_some_and(forgotten) {
            return None;
        }
        if let Some(ms) = j.start_time {
            self.anchor(ms);
        }
        if !self.admit_job(num) {
            return None;
        }
        let merged = match self.jobs.get(&num) {
            Some(old) => merge::job(old, j),
            None => j.clone(),
        };
        if let Some(old) = self.jobs.get(&num) {
            if *old == merged {
                return None;
            }
            if is_terminal_job(&old.status) {
                self.ended.remove(&(old.end_time.unwrap_or(0), num));
            }
        }
        if is_terminal_job(&merged.status) {
            self.ended.insert((merged.end_time.unwrap_or(0), num));
        }
        self.jobs.insert(num, merged.clone());
        Some(merged)
    }

    fn apply_actor(&mut self, a: &ObservedActor) -> Option<ObservedActor> {
        if let Some(&id) = self.actor_index.get(&a.actor_id) {
            let old = self.actors.get_mut(&id).expect("indexed actors are kept");
            let merged = merge::actor(old, a);
            if *old == merged {
                return None;
            }
            *old = merged.clone();
            if merged.state == "DEAD" {
                self.dead_actors.insert(id);
            }
            return Some(merged);
        }
        if self.actors.len() >= self.limits.max_actors {
            match self.dead_actors.pop_first() {
                Some(k) => {
                    let gone = self.actors.remove(&k).expect("found above");
                    self.actor_index.remove(&gone.actor_id);
                }
                None => return None,
            }
        }
        let id = self.next_actor;
        self.next_actor += 1;
        if a.state == "DEAD" {
            self.dead_actors.insert(id);
        }
        self.actor_index.insert(a.actor_id.clone(), id);
        self.actors.insert(id, a.clone());
        Some(a.clone())
    }

    fn apply_task(&mut self, t: &ObservedTask) -> Option<ObservedTask> {
        let job = self.job_of(&t.job_id)?;
        if !self.tasks_by_job.contains_key(&job) && self.recently_forgotten.contains(&job) {
            self.late_records += 1;
            return None;
        }
        if !self.admit_job(job) {
            return None;
        }
        if let Some(ms) = t.submitted_ms() {
            self.anchor(ms);
        }
        if let Some(&id) = self.task_index.get(&t.task_id) {
            let entry = self.tasks.get_mut(&id).expect("indexed tasks are kept");
            let full = entry.attempts.len() >= MAX_ATTEMPTS;
            match entry.attempts.iter_mut().find(|a| a.attempt_number == t.attempt_number) {
                Some(old) => {
                    let (merged, dropped) = merge::task_capped(old, t);
                    self.transitions_dropped += dropped;
                    if *old == merged {
                        return None;
                    }
                    *old = merged.clone();
                    return Some(merged);
                }
                None if full || self.attempts >= self.limits.max_tasks => {
                    *self.dropped_by_job.entry(job).or_insert(0) += 1;
                    return None;
                }
                None => {
                    let mut t = t.clone();
                    self.transitions_dropped += merge::cap_transitions(&mut t.events);
                    let at = entry.attempts.partition_point(|a| a.attempt_number < t.attempt_number);
                    entry.attempts.insert(at, t.clone());
                    self.attempts += 1;
                    return Some(t);
                }
            }
        }
        if self.attempts >= self.limits.max_tasks {
            self.forget_over_caps(job);
            if self.attempts >= self.limits.max_tasks {
                *self.dropped_by_job.entry(job).or_insert(0) += 1;
                return None;
            }
        }
        let id = self.next_task;
        self.next_task += 1;
        let mut t = t.clone();
        self.transitions_dropped += merge::cap_transitions(&mut t.events);
        self.task_index.insert(t.task_id.clone(), id);
        self.tasks.insert(id, TaskEntry { id, job, attempts: vec![t.clone()] });
        self.tasks_by_job.entry(job).or_default().push(id);
        self.attempts += 1;
        Some(t.clone())
    }

    fn apply_pg(&mut self, p: &ObservedPg) -> bool {
        if let Some(&id) = self.pg_index.get(&p.placement_group_id) {
            let old = self.placement_groups.get_mut(&id).expect("indexed groups are kept");
            if old == p {
                return false;
            }
            *old = p.clone();
            return true;
        }
        if self.placement_groups.len() >= self.limits.max_actors {
            return false;
        }
        let id = self.pg_index.len() as u32;
        self.pg_index.insert(p.placement_group_id.clone(), id);
        self.placement_groups.insert(id, p.clone());
        true
    }

    /// Replace the object listing, listed at `at_ms` (objects change too fast to
    /// merge, and are not traced), and note on the tasks what it shows of them: on
    /// each producing task the bytes of its returns (an object id is its task's id and a
    /// return index; a put's index is past [`ObservedObject::is_put`]'s floor), and on
    /// each ended call the arguments its worker held while it ran ([`ArgSightings`]).
    /// The merged task changes are traced. A return freed between two listings is never
    /// seen: its task keeps 0.
    pub fn set_objects(&mut self, mut objects: Vec<ObservedObject>, at_ms: u64) -> Vec<Change> {
        objects.truncate(self.limits.max_objects);
        self.arg_sightings.see(&objects, at_ms);
        let mut by_task: BTreeMap<&str, u64> = BTreeMap::new();
        for o in objects.iter().filter(|o| !o.is_put()) {
            if let (Some(task), Some(size)) = (o.object_id.get(..48), o.object_size) {
                *by_task.entry(task).or_insert(0) += size;
            }
        }
        let mut parts = Vec::new();
        for (task, bytes) in by_task {
            let Some(entry) = self.task_index.get(task).and_then(|id| self.tasks.get(id)) else { continue };
            let last = entry.last();
            if last.return_bytes.is_some_and(|b| b >= bytes) {
                continue;
            }
            parts.push(Change::Task(ObservedTask {
                task_id: last.task_id.clone(),
                attempt_number: last.attempt_number,
                job_id: last.job_id.clone(),
                return_bytes: Some(bytes),
                ..Default::default()
            }));
        }
        let attempts = self.tasks.values().flat_map(|e| e.attempts.iter());
        parts.extend(self.arg_sightings.resolve(attempts, at_ms).into_iter().map(Change::Task));
        if objects != self.objects {
            self.objects = objects;
            self.generation += 1;
        }
        parts.iter().filter_map(|c| self.apply(c)).collect()
    }

    /// Forget the oldest ended jobs, whole, while the task cap is reached; never `keep`,
    /// the job whose task is being added (it keeps its first tasks and counts the rest).
    /// Each job forgotten is found in O(log n).
    fn forget_over_caps(&mut self, keep: u32) {
        while self.attempts >= self.limits.max_tasks {
            let Some(job) = self.ended.iter().map(|&(_, n)| n).find(|&n| n != keep) else { return };
            self.forget_job(job);
        }
    }

    /// Marks an ended job's task reads done (`pull`), which its record then says.
    pub fn mark_settled(&mut self, job: u32) {
        if self.settled.insert(job) {
            self.generation += 1;
            if self.tasks_by_job.contains_key(&job) {
                self.job_generation.insert(job, self.generation);
            }
        }
    }

    /// Whether the job's record is final (`None`: nothing tells, tasks are not pulled).
    pub fn settled(&self, job: u32) -> Option<bool> {
        self.pulled.then(|| self.settled.contains(&job))
    }

    /// Ended jobs whose tasks are still to be read once more (`pull`), by id.
    pub fn unsettled_ended_jobs(&self) -> Vec<String> {
        let ended = self.jobs.iter().filter(|(_, j)| is_terminal_job(&j.status));
        ended.filter(|(n, _)| self.settled(**n) == Some(false)).map(|(_, j)| j.job_id.clone()).collect()
    }

    fn forget_job(&mut self, job: u32) {
        if let Some(j) = self.jobs.remove(&job) {
            let key = (j.end_time.unwrap_or(0), job);
            if self.ended.remove(&key) {
                self.forgotten_through = self.forgotten_through.max(Some(key));
            }
        }
        self.settled.remove(&job);
        self.dropped_by_job.remove(&job);
        self.job_generation.remove(&job);
        for id in self.tasks_by_job.remove(&job).unwrap_or_default() {
            let e = self.tasks.remove(&id).expect("a job's indexed tasks are kept");
            self.attempts -= e.attempts.len();
            self.forgotten_tasks += e.attempts.len() as u64;
            self.task_index.remove(&e.last().task_id);
        }
        if self.recently_forgotten.len() >= self.limits.max_jobs.max(1) {
            self.recently_forgotten.pop_front();
        }
        self.recently_forgotten.push_back(job);
        self.forgotten_jobs += 1;
        self.generation += 1;
    }

    /// Tasks of `job`, first seen first.
    pub fn job_tasks(&self, job: u32) -> impl Iterator<Item = &TaskEntry> + '_ {
        let ids = self.tasks_by_job.get(&job).map(Vec::as_slice).unwrap_or_default();
        ids.iter().map(|id| &self.tasks[id])
    }
}

pub fn is_terminal_job(status: &str) -> bool {
    matches!(status, "SUCCEEDED" | "FAILED" | "STOPPED")
}

#[cfg(test)]
mod tests;
