use super::*;
use crate::observe::rows::{ObservedActor, ObservedJob, ObservedTask};
use crate::observe::store::{Change, StoreLimits};

const JOB: &str = "01000000";
const DRIVER: &str = "ffffffffffffffffffffffffffffffffffffffff01000000";

fn call(id: &str, parent: &str, name: &str, actor: Option<&str>, times: (u64, u64, u64)) -> Change {
    Change::Task(ObservedTask {
        task_id: id.into(),
        job_id: JOB.into(),
        name: name.into(),
        kind: if actor.is_some() { "ACTOR_TASK" } else { "NORMAL_TASK" }.into(),
        state: "FINISHED".into(),
        parent_task_id: Some(parent.into()),
        actor_id: actor.map(Into::into),
        events: vec![("PENDING_ARGS_AVAIL".into(), times.0)],
        start_time_ms: Some(times.1),
        end_time_ms: Some(times.2),
        ..Default::default()
    })
}

fn store() -> Store {
    let mut s = Store::new(StoreLimits::default());
    s.apply(&Change::Job(ObservedJob {
        job_id: JOB.into(),
        status: "SUCCEEDED".into(),
        start_time: Some(1_000),
        end_time: Some(2_000),
        entrypoint: "python app.py".into(),
        ..Default::default()
    }));
    s.apply(&Change::Task(ObservedTask {
        task_id: DRIVER.into(),
        job_id: JOB.into(),
        kind: "DRIVER_TASK".into(),
        state: "RUNNING".into(),
        ..Default::default()
    }));
    s.apply(&Change::Actor(ObservedActor {
        actor_id: "aa01".into(),
        job_id: JOB.into(),
        class_name: "Worker".into(),
        state: "ALIVE".into(),
        ..Default::default()
    }));
    // A child listed before its parent, and with a clock that reads earlier.
    s.apply(&call("c2", "c1", "leaf", None, (1_100, 1_105, 1_150)));
    s.apply(&call("c1", DRIVER, "Worker.process", Some("aa01"), (1_101, 1_110, 1_900)));
    s
}

#[test]
fn parents_come_first_and_times_never_go_back() {
    let s = store();
    let mut totals = Totals::default();
    let r = job_record(&s, 1, &mut totals).unwrap();
    assert_eq!(totals.calls.get(&(None, "Worker.process".to_string())), Some(&1));
    let recs: Vec<Rec> = r.records.iter().copied().collect();
    assert!(recs.windows(2).all(|w| w[0].time() <= w[1].time()));
    let submit_of = |span: u64| recs.iter().position(|r| matches!(r, Rec::Submit { span: s, .. } if *s == span));
    let (c1, c2) = (s.task_number("c1").unwrap(), s.task_number("c2").unwrap());
    assert!(submit_of(r.driver) < submit_of(c1) && submit_of(c1) < submit_of(c2));
    let c2_submit = recs.iter().find_map(|r| match r {
        Rec::Submit { span, t, parent, .. } if *span == c2 => Some((*t, *parent)),
        _ => None,
    });
    assert_eq!(c2_submit, Some((110_000, c1)), "raised to its parent's start, under its parent");
    assert_eq!(r.end_us, Some(1_000_000));
    assert_eq!(r.frames.as_slice(), ["_main", "Worker.process", "leaf"]);
    assert_eq!(r.edges.get(&(0, 1)).map(|e| e.calls), Some(1));
    assert_eq!(r.edges.get(&(1, 2)).map(|e| e.calls), Some(1));
    assert_eq!(r.target(1).actor, s.actor_number("aa01"));
    assert_eq!((r.target(1).class.as_str(), r.target(1).method.as_str()), ("Worker", "process"));
}

#[test]
fn an_actors_calls_are_methods_even_when_ray_sent_no_record_of_the_actor() {
    // Ray 2.49's push: actor task definitions name their actor, but no actor event
    // ever comes. Read as functions, ten calls to one actor in a loop were named
    // `get_in_loop` instead of `blocked_actor_calls`.
    let mut s = store();
    s.apply(&call("m1", DRIVER, "Counter.add", Some("never_listed"), (1_200, 1_201, 1_210)));
    let r = job_record(&s, 1, &mut Totals::default()).unwrap();
    let t = (0..r.targets.len() as u32).map(|i| r.target(i)).find(|t| t.method == "add").unwrap();
    assert_eq!((t.kind, t.class.as_str(), t.actor), (TargetKind::Method, "Counter", None));
}

#[test]
fn a_reduce_waits_for_the_map_that_ended_last_before_its_arguments_were_ready() {
    let mut s = store();
    let task = |id: &str, name: &str, events: &[(&str, u64)], end: u64| {
        Change::Task(ObservedTask {
            task_id: id.into(),
            job_id: JOB.into(),
            name: name.into(),
            kind: "NORMAL_TASK".into(),
            state: "FINISHED".into(),
            parent_task_id: Some(DRIVER.into()),
            events: events.iter().map(|(st, t)| (st.to_string(), *t)).collect(),
            end_time_ms: Some(end),
            ..Default::default()
        })
    };
    s.apply(&task(
        "m1",
        "map",
        &[("PENDING_ARGS_AVAIL", 1_200), ("PENDING_NODE_ASSIGNMENT", 1_200), ("RUNNING", 1_201)],
        1_300,
    ));
    s.apply(&task(
        "m2",
        "map",
        &[("PENDING_ARGS_AVAIL", 1_200), ("PENDING_NODE_ASSIGNMENT", 1_200), ("RUNNING", 1_201)],
        1_400,
    ));
    s.apply(&task(
        "m3",
        "map",
        &[("PENDING_ARGS_AVAIL", 1_200), ("PENDING_NODE_ASSIGNMENT", 1_200), ("RUNNING", 1_401)],
        1_500,
    ));
    s.apply(&task(
        "r1",
        "reduce",
        &[("PENDING_ARGS_AVAIL", 1_201), ("PENDING_NODE_ASSIGNMENT", 1_400), ("RUNNING", 1_401)],
        1_450,
    ));
    let r = job_record(&s, 1, &mut Totals::default()).unwrap();
    let deps: Vec<(u64, u64)> = r
        .records
        .iter()
        .filter_map(|x| match x {
            Rec::Dep { span, on, .. } => Some((*span, *on)),
            _ => None,
        })
        .collect();
    assert_eq!(deps, [(s.task_number("r1").unwrap(), s.task_number("m2").unwrap())]);
}

/// The spans of `caller`'s inferred waits in `ray.get`, as (from, until) in ms
/// from the job's start.
fn waits_of(s: &Store, caller: &str) -> Vec<(u64, u64)> {
    let r = job_record(s, 1, &mut Totals::default()).unwrap();
    let span = s.task_number(caller).unwrap();
    let mut from = None;
    let mut out = Vec::new();
    for rec in r.records.iter() {
        match *rec {
            Rec::Block { span: v, t } if v == span => from = Some(t),
            Rec::Unblock { span: v, t } if v == span => out.push((from.take().unwrap() / 1_000, t / 1_000)),
            _ => {}
        }
    }
    out
}

#[test]
fn a_caller_that_submits_just_after_a_child_ends_waited_only_if_no_child_was_running() {
    // The calls "p" (on the actor) makes: k1, then k2 (ending 1 ms before the
    // next submit), then k3, its last, whose end it outlives.
    let calls = |k1_end: u64| {
        let mut s = store();
        s.apply(&call("p", DRIVER, "Worker.process", Some("aa01"), (1_100, 1_100, 1_900)));
        s.apply(&call("k1", "p", "leaf", None, (1_200, 1_201, k1_end)));
        s.apply(&call("k2", "p", "leaf", None, (1_250, 1_251, 1_299)));
        s.apply(&call("k3", "p", "leaf", None, (1_300, 1_301, 1_350)));
        waits_of(&s, "p")
    };
    // k1 still running at k2's end: p only happened to submit then.
    assert_eq!(calls(1_600), [(300, 600)]);
    // Everything it had submitted was done: `ray.get(futures)`, then the next submit.
    assert_eq!(calls(1_240), [(250, 299), (300, 350)]);
}

#[test]
fn a_retried_call_is_requeued_between_its_attempts() {
    let mut s = store();
    let mut failed = match call("c3", DRIVER, "flaky", None, (1_200, 1_210, 1_220)) {
        Change::Task(t) => t,
        _ => unreachable!(),
    };
    failed.state = "FAILED".into();
    s.apply(&Change::Task(failed.clone()));
    let mut retry = failed;
    retry.attempt_number = 1;
    retry.state = "FINISHED".into();
    retry.start_time_ms = Some(1_230);
    retry.end_time_ms = Some(1_240);
    s.apply(&Change::Task(retry));
    let r = job_record(&s, 1, &mut Totals::default()).unwrap();
    let span = s.task_number("c3").unwrap();
    let mine: Vec<&Rec> = r
        .records
        .iter()
        .filter(|x| match x {
            Rec::Submit { span: v, .. }
            | Rec::Begin { span: v, .. }
            | Rec::Requeue { span: v, .. }
            | Rec::End { span: v, .. } => *v == span,
            _ => false,
        })
        .collect();
    let kinds: Vec<&str> = mine
        .iter()
        .map(|r| match r {
            Rec::Submit { .. } => "submit",
            Rec::Begin { .. } => "begin",
            Rec::Requeue { .. } => "requeue",
            Rec::End { .. } => "end",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["submit", "begin", "requeue", "begin", "end"]);
}
