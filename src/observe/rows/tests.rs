use super::*;
use serde_json::json;

#[test]
fn a_nodes_metrics_port_is_read_from_the_dashboards_node_summary() {
    // As Ray 2.60's `GET /nodes?view=summary` lists a node (trimmed).
    let entry = serde_json::json!({"hostname": "vm", "raylet": {"nodeId": "6EB2825817c3341ba608ac6335f75e19557c026240ae6bd41200cccd",
        "nodeManagerAddress": "127.0.0.2", "metricsExportPort": 45123, "state": "ALIVE"}});
    let n = ObservedNode::from_summary(&entry).unwrap();
    assert_eq!(n.node_id, "6eb2825817c3341ba608ac6335f75e19557c026240ae6bd41200cccd");
    assert_eq!((n.node_ip.as_str(), n.metrics_export_port), ("127.0.0.2", Some(45123)));
    for bad in [
        serde_json::json!({"raylet": {"nodeId": "ab", "metricsExportPort": 0}}),
        serde_json::json!({"raylet": {"nodeId": "ab", "metricsExportPort": 70000}}),
        serde_json::json!({"raylet": {"nodeId": "ab"}}),
        serde_json::json!({"hostname": "vm"}),
    ] {
        assert!(ObservedNode::from_summary(&bad).is_err(), "{bad}");
    }
    // The port joins what the State API said of the node, and stays.
    let listed = ObservedNode { node_id: n.node_id.clone(), state: "ALIVE".into(), ..Default::default() };
    let merged = super::super::merge::node(&listed, &n);
    assert_eq!((merged.state.as_str(), merged.metrics_export_port), ("ALIVE", Some(45123)));
    assert_eq!(super::super::merge::node(&merged, &listed).metrics_export_port, Some(45123));
}

#[test]
fn a_task_row_keeps_rays_fields_and_reads_its_times() {
    let row = json!({
        "task_id": "AB01", "attempt_number": 1, "job_id": "01000000", "name": "Worker.process",
        "func_or_class_name": "Worker.process", "type": "ACTOR_TASK", "state": "FINISHED",
        "parent_task_id": "ffffffffffffffffffffffffffffffffffffffff01000000", "actor_id": "cd02",
        "node_id": "ee03", "worker_pid": 1234, "required_resources": {"CPU": 1.0},
        "creation_time_ms": 100, "start_time_ms": 120, "end_time_ms": 180,
        "events": [{"state": "PENDING_ARGS_AVAIL", "created_ms": 100}, {"state": "RUNNING", "created_ms": 120}],
        "error_message": "ignored"
    });
    let t = ObservedTask::from_row(&row).unwrap();
    assert_eq!(t.task_id, "ab01", "ids are kept lower case");
    assert_eq!(
        t.parent_task_id.as_deref(),
        Some("ffffffffffffffffffffffffffffffffffffffff01000000"),
        "the driver's task"
    );
    assert_eq!(opt_id(&json!({"p": "ffffffffffffffffffffffffffffffffffffffffffffffff"}), "p"), None, "Ray's nil id");
    assert_eq!((t.submitted_ms(), t.started_ms(), t.ended_ms()), (Some(100), Some(120), Some(180)));
    assert_eq!(t.required_resources, vec![("CPU".to_string(), 1.0)]);
    let back: ObservedTask = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
    assert_eq!(back, t, "a trace line reads back as the row it was");
}

#[test]
fn a_bad_row_names_its_field_and_the_rest_are_read() {
    let rows = vec![
        json!({"task_id": "aa", "job_id": "01000000"}),
        json!({"job_id": "01000000"}),
        json!({"task_id": 7, "job_id": "01000000"}),
        json!({"task_id": "not hex!", "job_id": "01000000"}),
    ];
    let (good, bad) = read_rows("tasks", &rows, ObservedTask::from_row);
    assert_eq!(good.len(), 1);
    let msgs: Vec<String> = bad.iter().map(|e| e.to_string()).collect();
    assert_eq!(msgs[0], "tasks row 1: `task_id` is missing");
    assert_eq!(msgs[1], "tasks row 2: `task_id` must be a string, got a number");
    assert!(msgs[2].starts_with("tasks row 3: `task_id` is not a Ray id"), "{}", msgs[2]);
}

#[test]
fn an_object_row_tells_a_running_calls_argument_and_a_put_from_a_return() {
    // As Ray 2.49 and 2.60 list a 4 MiB argument Ray put for one call (FINDINGS.md §2e).
    let put = "00ffffffffffffffffffffffffffffffffffffff0100000001e1f505";
    let row = |reference: &str, call_site: &str| {
        json!({"object_id": put, "object_size": 4194304, "reference_type": reference, "pid": 4479,
               "call_site": call_site, "type": "WORKER", "task_status": "NIL"})
    };
    let pinned = ObservedObject::from_row(&row("PINNED_IN_MEMORY", "(deserialize task arg) args.consume")).unwrap();
    assert_eq!(pinned.as_call_argument(), Some((4479, "args.consume")));
    assert!(pinned.is_put());
    let caller = ObservedObject::from_row(&row("USED_BY_PENDING_TASK", "disabled")).unwrap();
    assert_eq!((caller.as_call_argument(), caller.call_site.as_str()), (None, ""), "a user's call site is dropped");
    let ret = ObservedObject { object_id: format!("{}01000000", &put[..48]), ..pinned.clone() };
    assert!(!ret.is_put());
    let long =
        ObservedObject::from_row(&row("PINNED_IN_MEMORY", &format!("(deserialize task arg) {}", "m".repeat(5000))))
            .unwrap();
    assert_eq!(long.call_site.len(), MAX_CALL_SITE);
}

#[test]
fn long_text_is_cut_on_a_character_boundary() {
    let long = "é".repeat(MAX_TEXT);
    let c = cut(&long);
    assert!(c.len() <= MAX_TEXT && c.chars().all(|ch| ch == 'é'));
}

#[test]
fn an_unfinished_task_has_no_end_even_if_ray_wrote_one() {
    let t = ObservedTask { state: "RUNNING".into(), end_time_ms: Some(5), ..Default::default() };
    assert_eq!(t.ended_ms(), None);
}
