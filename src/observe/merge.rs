//! Merging what is known of one record: a State API row is whole, a pushed event says
//! part of one (a definition, or a few state transitions), and the two may arrive in
//! any order.
//!
//! Owns: the rule for each record kind. A field the newer record names replaces the
//! older one's; a field it leaves empty keeps the older one's; a task's state
//! transitions are the union of both, and its state is its latest transition's, so an
//! older listing can never take a finished task back to running.
//! Must never: drop a transition or a time either side had, but for the cap: at most
//! [`MAX_TRANSITIONS`] per attempt, Ray's own states kept first, so a client that
//! pushes one task again and again with new state names grows nothing.

use super::rows::{
    ArgObject, ObservedActor, ObservedJob, ObservedNode, ObservedTask, MAX_ARG_OBJECTS, MAX_STATE_NAME, MAX_TRANSITIONS,
};

fn text(old: &str, new: &str) -> String {
    if new.is_empty() { old } else { new }.to_string()
}

/// Ray's order of task states, for transitions at the same instant.
fn rank(state: &str) -> u8 {
    match state {
        "PENDING_ARGS_AVAIL" => 1,
        "PENDING_NODE_ASSIGNMENT" => 2,
        "PENDING_OBJ_STORE_MEM_AVAIL" => 3,
        "PENDING_ARGS_FETCH" => 4,
        "SUBMITTED_TO_WORKER" => 5,
        "PENDING_ACTOR_TASK_ARGS_FETCH" => 6,
        "PENDING_ACTOR_TASK_ORDERING_OR_CONCURRENCY" => 7,
        "RUNNING" => 8,
        "RUNNING_IN_RAY_GET" => 9,
        "RUNNING_IN_RAY_WAIT" => 10,
        "FINISHED" | "FAILED" => 20,
        _ => 0,
    }
}

/// The state a task's transitions end in (a terminal one wins whatever its time).
pub fn latest_state(events: &[(String, u64)]) -> Option<&str> {
    events.iter().max_by_key(|(s, t)| (rank(s) == 20, *t, rank(s))).map(|(s, _)| s.as_str())
}

/// Hold `events` to the caps: names past [`MAX_STATE_NAME`] go, and past
/// [`MAX_TRANSITIONS`] the states Ray does not have go first (then the latest). Returns
/// how many went.
pub fn cap_transitions(events: &mut Vec<(String, u64)>) -> u64 {
    let before = events.len();
    events.retain(|(s, _)| s.len() <= MAX_STATE_NAME);
    if events.len() > MAX_TRANSITIONS {
        // Ray's states first (stable: in time order within each group), then cut.
        events.sort_by_key(|(s, t)| (rank(s) == 0, *t, rank(s)));
        events.truncate(MAX_TRANSITIONS);
    }
    events.sort_by_key(|(s, t)| (*t, rank(s)));
    (before - events.len()) as u64
}

pub fn task(old: &ObservedTask, new: &ObservedTask) -> ObservedTask {
    task_capped(old, new).0
}

/// [`task`], and how many transitions the cap dropped.
pub fn task_capped(old: &ObservedTask, new: &ObservedTask) -> (ObservedTask, u64) {
    let mut events = old.events.clone();
    for e in &new.events {
        if !events.iter().any(|o| o.0 == e.0) {
            events.push(e.clone());
        }
    }
    let dropped = cap_transitions(&mut events);
    // Within an attempt, states only move forward (a retry is a new attempt): the
    // furthest one either side names, a terminal one first.
    let terminal = |t: &ObservedTask| t.is_terminal().then(|| t.state.clone());
    let state = terminal(new).or_else(|| terminal(old)).unwrap_or_else(|| {
        [new.state.as_str(), old.state.as_str(), latest_state(&events).unwrap_or("")]
            .into_iter()
            .max_by_key(|s| rank(s))
            .unwrap_or("")
            .to_string()
    });
    let merged = ObservedTask {
        task_id: old.task_id.clone(),
        attempt_number: old.attempt_number,
        job_id: text(&old.job_id, &new.job_id),
        name: text(&old.name, &new.name),
        func_or_class_name: text(&old.func_or_class_name, &new.func_or_class_name),
        kind: text(&old.kind, &new.kind),
        state: state.clone(),
        parent_task_id: new.parent_task_id.clone().or_else(|| old.parent_task_id.clone()),
        actor_id: new.actor_id.clone().or_else(|| old.actor_id.clone()),
        node_id: new.node_id.clone().or_else(|| old.node_id.clone()),
        worker_pid: new.worker_pid.or(old.worker_pid),
        placement_group_id: new.placement_group_id.clone().or_else(|| old.placement_group_id.clone()),
        required_resources: if new.required_resources.is_empty() {
            old.required_resources.clone()
        } else {
            new.required_resources.clone()
        },
        error_type: new.error_type.clone().or_else(|| old.error_type.clone()),
        creation_time_ms: new.creation_time_ms.or(old.creation_time_ms),
        start_time_ms: new.start_time_ms.or(old.start_time_ms),
        end_time_ms: new.end_time_ms.or(old.end_time_ms),
        events,
        killed_with_job: (old.killed_with_job || new.killed_with_job) && state == "FAILED",
        profiled: old.profiled || new.profiled,
        // Cut until either side has the execution's end (a later report, or poll).
        execution_cut: (old.profiled || new.profiled) && !(has_execution_end(old) || has_execution_end(new)),
        ray_profiling: old.ray_profiling || new.ray_profiling,
        profile: super::profile::merge(&old.profile, &new.profile),
        return_bytes: match (old.return_bytes, new.return_bytes) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        },
        args: merge_args(&old.args, &new.args),
    };
    (merged, dropped)
}

/// Ray has its phases up to the end of its execution (`task:execute`).
fn has_execution_end(t: &ObservedTask) -> bool {
    t.profiled && !t.execution_cut
}

/// Both sides' argument objects, each once, at most [`MAX_ARG_OBJECTS`] (the older
/// side's first).
fn merge_args(old: &[ArgObject], new: &[ArgObject]) -> Vec<ArgObject> {
    let mut args = old.to_vec();
    for a in new {
        if args.len() < MAX_ARG_OBJECTS && !args.iter().any(|o| o.object_id == a.object_id) {
            args.push(a.clone());
        }
    }
    args
}

pub fn actor(old: &ObservedActor, new: &ObservedActor) -> ObservedActor {
    // A dead actor stays dead: an older listing says nothing newer.
    let state = if old.state == "DEAD" { old.state.clone() } else { text(&old.state, &new.state) };
    ObservedActor {
        actor_id: old.actor_id.clone(),
        job_id: text(&old.job_id, &new.job_id),
        class_name: text(&old.class_name, &new.class_name),
        state,
        name: text(&old.name, &new.name),
        node_id: new.node_id.clone().or_else(|| old.node_id.clone()),
        pid: new.pid.or(old.pid),
        placement_group_id: new.placement_group_id.clone().or_else(|| old.placement_group_id.clone()),
        num_restarts: old.num_restarts.max(new.num_restarts),
        required_resources: if new.required_resources.is_empty() {
            old.required_resources.clone()
        } else {
            new.required_resources.clone()
        },
        death_cause: new.death_cause.clone().or_else(|| old.death_cause.clone()),
        start_time_ms: old.start_time_ms.or(new.start_time_ms),
        end_time_ms: new.end_time_ms.or(old.end_time_ms),
    }
}

pub fn node(old: &ObservedNode, new: &ObservedNode) -> ObservedNode {
    let state = if old.state == "DEAD" { old.state.clone() } else { text(&old.state, &new.state) };
    ObservedNode {
        node_id: old.node_id.clone(),
        node_ip: text(&old.node_ip, &new.node_ip),
        is_head_node: old.is_head_node || new.is_head_node,
        state,
        node_name: text(&old.node_name, &new.node_name),
        resources_total: if new.resources_total.is_empty() {
            old.resources_total.clone()
        } else {
            new.resources_total.clone()
        },
        start_time_ms: old.start_time_ms.or(new.start_time_ms),
        end_time_ms: new.end_time_ms.or(old.end_time_ms),
        state_message: new.state_message.clone().or_else(|| old.state_message.clone()),
        metrics_export_port: new.metrics_export_port.or(old.metrics_export_port),
    }
}

pub fn job(old: &ObservedJob, new: &ObservedJob) -> ObservedJob {
    let terminal = |s: &str| matches!(s, "SUCCEEDED" | "FAILED" | "STOPPED");
    let status = if terminal(&old.status) && !terminal(&new.status) {
        old.status.clone()
    } else {
        text(&old.status, &new.status)
    };
    ObservedJob {
        job_id: old.job_id.clone(),
        submission_id: new.submission_id.clone().or_else(|| old.submission_id.clone()),
        entrypoint: text(&old.entrypoint, &new.entrypoint),
        status,
        message: text(&old.message, &new.message),
        start_time: old.start_time.or(new.start_time),
        end_time: new.end_time.or(old.end_time),
        driver_node_id: new.driver_node_id.clone().or_else(|| old.driver_node_id.clone()),
        driver_ip: new.driver_ip.clone().or_else(|| old.driver_ip.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(state: &str, events: &[(&str, u64)]) -> ObservedTask {
        ObservedTask {
            task_id: "aa".into(),
            job_id: "01000000".into(),
            state: state.into(),
            events: events.iter().map(|(s, t)| (s.to_string(), *t)).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn pushed_parts_arrive_in_any_order_and_make_the_whole() {
        let definition = ObservedTask { name: "f".into(), kind: "NORMAL_TASK".into(), ..t("", &[]) };
        let late = t("", &[("RUNNING", 20), ("FINISHED", 30)]);
        let early = t("", &[("PENDING_ARGS_AVAIL", 10), ("PENDING_NODE_ASSIGNMENT", 11)]);
        let a = task(&task(&definition, &late), &early);
        let b = task(&task(&early, &definition), &late);
        assert_eq!(a, b);
        assert_eq!(a.state, "FINISHED");
        assert_eq!(a.name, "f");
        assert_eq!(a.events.len(), 4);
        assert_eq!((a.submitted_ms(), a.started_ms(), a.ended_ms()), (Some(10), Some(20), Some(30)));
    }

    #[test]
    fn new_state_names_pushed_again_and_again_never_grow_a_task_past_the_cap() {
        let mut held = t("", &[("PENDING_ARGS_AVAIL", 10), ("RUNNING", 20), ("FINISHED", 30)]);
        let mut dropped = 0;
        for i in 0..1_000u64 {
            let name = format!("BOGUS_{i}");
            let (merged, d) = task_capped(&held, &t("", &[(name.as_str(), 5 + i)]));
            held = merged;
            dropped += d;
        }
        assert_eq!(held.events.len(), MAX_TRANSITIONS);
        assert_eq!(dropped, 1_000 - (MAX_TRANSITIONS as u64 - 3));
        assert_eq!((held.submitted_ms(), held.started_ms(), held.ended_ms()), (Some(5), Some(20), Some(30)));
        assert_eq!(held.state, "FINISHED", "Ray's own states are kept first");
        let long = "X".repeat(MAX_STATE_NAME + 1);
        let (merged, d) = task_capped(&held, &t("", &[(long.as_str(), 1)]));
        assert_eq!((merged.events.len(), d), (MAX_TRANSITIONS, 1), "a name past the cap is dropped");
    }

    #[test]
    fn an_older_row_never_takes_a_finished_task_back() {
        let done = t("FINISHED", &[("RUNNING", 20), ("FINISHED", 30)]);
        let stale = t("RUNNING", &[("RUNNING", 20)]);
        assert_eq!(task(&done, &stale).state, "FINISHED");
        let dead = ObservedActor { state: "DEAD".into(), ..Default::default() };
        let alive = ObservedActor { state: "ALIVE".into(), ..Default::default() };
        assert_eq!(actor(&dead, &alive).state, "DEAD");
    }
}
