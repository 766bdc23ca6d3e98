use super::*;

fn task(id: &str, job: &str, state: &str, t: u64) -> ObservedTask {
    ObservedTask {
        task_id: id.into(),
        job_id: job.into(),
        state: state.into(),
        kind: "NORMAL_TASK".into(),
        events: vec![("PENDING_ARGS_AVAIL".into(), t)],
        ..Default::default()
    }
}

fn job(id: &str, status: &str, end: Option<u64>) -> ObservedJob {
    ObservedJob {
        job_id: id.into(),
        status: status.into(),
        start_time: Some(1_000),
        end_time: end,
        ..Default::default()
    }
}

#[test]
fn job_numbers_are_rays_little_endian_bytes() {
    assert_eq!(job_number("01000000"), Some(1));
    assert_eq!(job_number("0a010000"), Some(266));
    assert_eq!(job_number("xyz"), None);
}

#[test]
fn the_same_row_twice_changes_nothing_and_ids_stay() {
    let mut s = Store::new(StoreLimits::default());
    assert!(s.apply(&Change::Task(task("aa", "01000000", "RUNNING", 5_000))).is_some());
    let gen = s.generation;
    assert!(s.apply(&Change::Task(task("aa", "01000000", "RUNNING", 5_000))).is_none());
    assert_eq!(s.generation, gen);
    assert!(s.apply(&Change::Task(task("aa", "01000000", "FINISHED", 5_000))).is_some());
    assert!(s.apply(&Change::Task(task("aa", "01000000", "RUNNING", 5_000))).is_none(), "a stale poll never goes back");
    assert_eq!(s.task_number("aa"), Some(1));
    assert_eq!(s.zero_ms, Some(5_000));
    assert_eq!(s.time(5_250), VirtualTime(250_000));
}

#[test]
fn past_the_cap_the_oldest_ended_job_goes_whole_and_a_running_one_is_cut() {
    let limits = StoreLimits { max_tasks: 4, ..StoreLimits::default() };
    let mut s = Store::new(limits);
    s.apply(&Change::Job(job("01000000", "SUCCEEDED", Some(2_000))));
    s.apply(&Change::Job(job("02000000", "RUNNING", None)));
    for i in 0..3 {
        s.apply(&Change::Task(task(&format!("a{i}"), "01000000", "FINISHED", 1_000)));
    }
    for i in 0..3 {
        s.apply(&Change::Task(task(&format!("b{i}"), "02000000", "RUNNING", 3_000)));
    }
    assert!(!s.jobs.contains_key(&1), "the ended job made room");
    assert_eq!(s.job_tasks(2).count(), 3);
    for i in 3..6 {
        s.apply(&Change::Task(task(&format!("b{i}"), "02000000", "RUNNING", 3_000)));
    }
    assert_eq!(s.attempts(), 4, "never past the cap");
    assert_eq!(s.dropped_by_job.get(&2), Some(&2));
    assert_eq!((s.forgotten_jobs, s.forgotten_tasks), (1, 3));
    assert_eq!(s.job_tasks(1).count(), 0, "a forgotten job lists no tasks");
    let listed: Vec<u64> = s.job_tasks(2).map(|e| e.id).collect();
    let held: Vec<u64> = s.tasks.values().filter(|e| e.job == 2).map(|e| e.id).collect();
    assert_eq!(listed, held, "the per-job index lists what is held, first seen first");
}

#[test]
fn running_jobs_past_the_job_cap_are_refused_and_counted_and_an_ended_one_makes_room() {
    let mut s = Store::new(StoreLimits { max_jobs: 3, ..StoreLimits::default() });
    for n in 1..=3u32 {
        let id = format!("{:08x}", n.swap_bytes());
        assert!(s.apply(&Change::Job(job(&id, "RUNNING", None))).is_some());
    }
    // 100,000 more running jobs, by job record or by task: none is held.
    for n in 4..100_004u32 {
        let id = format!("{:08x}", n.swap_bytes());
        if n % 2 == 0 {
            s.apply(&Change::Job(job(&id, "RUNNING", None)));
        } else {
            s.apply(&Change::Task(task(&format!("t{n}"), &id, "RUNNING", 1_000)));
        }
    }
    assert_eq!((s.jobs_held(), s.jobs_refused), (3, 100_000));
    assert!(s.jobs_full_of_running());
    assert!(s.job_generation.len() <= 3, "nothing kept of a refused job");
    assert_eq!(s.attempts(), 0);
    s.apply(&Change::Job(job("02000000", "SUCCEEDED", Some(5_000))));
    assert!(!s.jobs_full_of_running());
    s.apply(&Change::Task(task("late", "09000000", "RUNNING", 6_000)));
    assert!(s.jobs.contains_key(&1) && !s.jobs.contains_key(&2), "the ended job made room");
    assert_eq!((s.jobs_held(), s.forgotten_jobs), (3, 1));
    assert_eq!(s.job_tasks(9).count(), 1);
}

#[test]
fn a_time_outside_the_plausible_window_is_refused_and_never_time_zero() {
    let now = 1_795_000_000_000;
    let mut s = Store { now_ms: now, ..Store::new(StoreLimits::default()) };
    let year_9999 = 253_402_300_799_000;
    assert!(s.apply(&Change::Task(task("aa", "01000000", "RUNNING", year_9999))).is_none());
    assert_eq!((s.implausible_times, s.zero_ms), (1, None), "refused, not time zero");
    let node = ObservedNode { node_id: "n1".into(), start_time_ms: Some(now - 60_000), ..Default::default() };
    assert!(s.apply(&Change::Node(node)).is_some());
    let long_before = now - 60_000 - TIME_MARGIN_MS - 1;
    assert!(s.apply(&Change::Task(task("bb", "01000000", "RUNNING", long_before))).is_none());
    assert!(s.apply(&Change::Task(task("cc", "01000000", "RUNNING", now - 1_000))).is_some());
    assert_eq!((s.implausible_times, s.zero_ms), (2, Some(now - 60_000)));
}

#[test]
fn a_job_id_not_of_4_bytes_is_counted() {
    let mut s = Store::new(StoreLimits::default());
    assert!(s.apply(&Change::Task(task("aa", "0100", "RUNNING", 1_000))).is_none());
    assert!(s.apply(&Change::Job(job("0100000000", "RUNNING", None))).is_none());
    assert_eq!(s.bad_job_ids, 2);
}

#[test]
fn past_the_actor_cap_the_oldest_dead_actor_goes() {
    let mut s = Store::new(StoreLimits { max_actors: 2, ..StoreLimits::default() });
    let actor = |id: &str, state: &str| {
        Change::Actor(ObservedActor {
            actor_id: id.into(),
            job_id: "01000000".into(),
            state: state.into(),
            ..Default::default()
        })
    };
    s.apply(&actor("a1", "ALIVE"));
    s.apply(&actor("a2", "ALIVE"));
    assert!(s.apply(&actor("a3", "ALIVE")).is_none(), "no dead actor to forget");
    s.apply(&actor("a1", "DEAD"));
    assert!(s.apply(&actor("a3", "ALIVE")).is_some());
    assert!(s.actor_number("a1").is_none() && s.actor_number("a3").is_some());
}

#[test]
fn an_ended_job_read_past_the_cap_keeps_its_first_tasks() {
    let mut s = Store::new(StoreLimits { max_tasks: 4, ..StoreLimits::default() });
    s.apply(&Change::Job(job("01000000", "SUCCEEDED", Some(2_000))));
    for i in 0..6 {
        s.apply(&Change::Task(task(&format!("a{i}"), "01000000", "FINISHED", 1_000 + i)));
    }
    assert!(s.jobs.contains_key(&1), "the job being read is not forgotten to make room for itself");
    assert_eq!(s.job_tasks(1).count(), 4);
    assert!(s.task_number("a0").is_some() && s.task_number("a5").is_none());
    assert_eq!(s.dropped_by_job.get(&1), Some(&2));
}

#[test]
fn an_object_listing_gives_its_tasks_their_return_bytes() {
    let mut s = Store::new(StoreLimits::default());
    let id = format!("{:016x}{}01000000", 7, "f".repeat(24));
    s.apply(&Change::Task(task(&id, "01000000", "FINISHED", 1_000)));
    let object = |index: &str, size| ObservedObject {
        object_id: format!("{id}{index}"),
        object_size: Some(size),
        ..Default::default()
    };
    // Its two returns, and a ray.put of its own (Ray's put indices start past 1e8).
    let listing = vec![object("01000000", 3 << 20), object("02000000", 1 << 20), object("01e1f505", 9 << 20)];
    let changes = s.set_objects(listing, 2_000);
    assert_eq!(changes.len(), 1, "one task's change, to be traced");
    assert_eq!(s.tasks[&1].last().return_bytes, Some(4 << 20), "both returns, not the put");
    assert!(s.set_objects(vec![object("01000000", 3 << 20)], 3_000).is_empty(), "a freed return takes nothing away");
    assert_eq!(s.tasks[&1].last().return_bytes, Some(4 << 20));
}

#[test]
fn a_change_reads_back_from_its_trace_line() {
    let c = Change::Task(task("aa", "01000000", "RUNNING", 5));
    let line = serde_json::to_string(&c).unwrap();
    assert!(line.starts_with("{\"kind\":\"task\""), "{line}");
    assert_eq!(serde_json::from_str::<Change>(&line).unwrap(), c);
}

#[test]
fn an_ended_job_is_said_settled_only_by_a_store_that_pulls_once_marked() {
    let mut s = Store::new(StoreLimits::default());
    s.apply(&Change::Job(job("01000000", "SUCCEEDED", Some(2_000))));
    s.apply(&Change::Task(task("aa", "01000000", "FINISHED", 1_500)));
    assert_eq!(s.settled(1), None, "a push-only store cannot tell");
    assert!(s.unsettled_ended_jobs().is_empty());
    s.pulled = true;
    assert_eq!(s.settled(1), Some(false));
    assert_eq!(s.unsettled_ended_jobs(), vec!["01000000".to_string()]);
    let job_gen = s.job_generation[&1];
    s.mark_settled(1);
    assert_eq!(s.settled(1), Some(true));
    assert!(s.job_generation[&1] > job_gen, "the job's record is rebuilt to say so");
    assert!(s.unsettled_ended_jobs().is_empty());
}

#[test]
fn an_ended_job_forgotten_is_not_taken_back_when_ray_lists_it_again() {
    // Ray's job listing holds every job of its session, on every poll.
    let mut s = Store::new(StoreLimits { max_jobs: 2, ..StoreLimits::default() });
    let listing: Vec<ObservedJob> = (1..=4u32)
        .map(|n| job(&format!("{:08x}", n.swap_bytes()), "SUCCEEDED", Some(1_000 + u64::from(n) * 100)))
        .collect();
    for _poll in 0..3 {
        for j in &listing {
            s.apply(&Change::Job(j.clone()));
        }
    }
    assert_eq!(s.held_jobs().collect::<Vec<_>>(), [3, 4], "the latest ended are held");
    assert_eq!(s.forgotten_jobs, 2, "each forgotten once, not again on every poll");
    // A job still running is taken, and the oldest ended held makes room; a job that
    // ended before one forgotten is not.
    assert!(s.apply(&Change::Job(job("05000000", "RUNNING", None))).is_some());
    assert!(s.apply(&Change::Job(job("06000000", "SUCCEEDED", Some(1_250)))).is_none());
    assert!(s.apply(&Change::Job(job("03000000", "SUCCEEDED", Some(1_300)))).is_none());
    assert_eq!(s.held_jobs().collect::<Vec<_>>(), [4, 5]);
    // One that ended after every job forgotten is news.
    assert!(s.apply(&Change::Job(job("05000000", "SUCCEEDED", Some(2_000)))).is_some());
    assert!(s.apply(&Change::Job(job("07000000", "SUCCEEDED", Some(1_900)))).is_some());
    assert_eq!(s.held_jobs().collect::<Vec<_>>(), [5, 7]);
}

#[test]
fn a_late_task_event_of_a_forgotten_job_does_not_bring_the_job_back() {
    let mut s = Store::new(StoreLimits { max_jobs: 2, ..StoreLimits::default() });
    for n in 1..=3u32 {
        let id = format!("{:08x}", n.swap_bytes());
        s.apply(&Change::Job(job(&id, "SUCCEEDED", Some(1_000 + u64::from(n) * 100))));
        s.apply(&Change::Task(task(&format!("t{n}"), &id, "FINISHED", 1_000 + u64::from(n) * 100)));
    }
    assert_eq!(s.held_jobs().collect::<Vec<_>>(), [2, 3], "job 1 was forgotten");
    // Ray's export sends one more of job 1's task events, seconds late.
    assert!(s.apply(&Change::Task(task("t1", "01000000", "FINISHED", 1_100))).is_none());
    assert_eq!(s.late_records, 1);
    assert_eq!(s.held_jobs().collect::<Vec<_>>(), [2, 3], "no job without a record is held");
    // A running job's first task is still taken (the oldest ended held makes room).
    assert!(s.apply(&Change::Task(task("t4", "04000000", "RUNNING", 1_500))).is_some());
    assert_eq!(s.held_jobs().collect::<Vec<_>>(), [3, 4]);
}
