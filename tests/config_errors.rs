//! Each class of config mistake is reported at the exact line, column and field, with
//! a message that says what would be valid.

use rayscope::config::{load_str, ConfigError};

fn errors(yaml: &str) -> Vec<ConfigError> {
    match load_str(yaml, "test.yaml") {
        Ok(_) => panic!("expected errors for:\n{yaml}"),
        Err(e) => e.0,
    }
}

fn one(yaml: &str) -> ConfigError {
    let mut e = errors(yaml);
    assert_eq!(e.len(), 1, "expected exactly one error, got:\n{}", rayscope::config::ConfigErrors(e.clone()));
    e.remove(0)
}

#[track_caller]
fn assert_error(e: &ConfigError, line: usize, column: usize, field: &str, words: &[&str]) {
    assert_eq!(e.file, "test.yaml");
    assert_eq!((e.line, e.column, e.field.as_str()), (line, column, field), "{e}");
    for w in words {
        assert!(e.message.contains(w), "message lacks {w:?}: {e}");
    }
}

#[test]
fn unknown_top_level_key_points_at_the_key_and_lists_valid_keys() {
    let e = one("cluster: {}\nschedular:\n  spread_threshold: 0.5\n");
    assert_error(
        &e,
        2,
        1,
        "schedular",
        &[
            "unknown key `schedular`",
            "did you mean `scheduler`?",
            "valid keys: cluster, scheduler, object_store, memory_monitor, workloads, faults, sim, server",
        ],
    );
    assert_eq!(
        e.to_string(),
        format!("test.yaml:2:1: schedular: {}", e.message),
        "the one-line form names file, line, column and field"
    );
}

#[test]
fn unknown_nested_key_points_at_the_key() {
    let e = one("cluster:\n  head:\n    cpu: 8\n    cpus: 4\n");
    assert_error(
        &e,
        4,
        5,
        "cluster.head.cpus",
        &["unknown key `cpus`", "did you mean `cpu`?", "valid keys: name, ip, cpu, cores, gpu"],
    );
}

#[test]
fn unknown_key_inside_a_workload_is_rejected_and_located() {
    let e = one("workloads:\n  - kind: fan_out\n    tasks: 10\n    num_cpu: 2\n");
    assert_error(
        &e,
        4,
        5,
        "workloads[0].num_cpu",
        &["unknown key `num_cpu`", "did you mean `num_cpus`?", "valid keys: kind, name, start, tasks, reducers"],
    );
}

#[test]
fn unknown_key_inside_a_job_mix_template_keeps_the_full_path() {
    let yaml = "workloads:\n  - kind: job_mix\n    arrivals_per_minute: 2\n    templates:\n      \
                - weight: 1\n        workload: {kind: actor_pool, actors: 2, clas: Cache}\n";
    let e = one(yaml);
    assert_error(
        &e,
        6,
        49,
        "workloads[0].templates[0].workload.clas",
        &["unknown key `clas`", "did you mean `class`?"],
    );
}

#[test]
fn unknown_key_inside_a_fault_is_rejected_and_located() {
    let e = one("faults:\n  - kind: kill_node\n    at: 30s\n    node_type: ray.head.default\n    nodes: 2\n");
    assert_error(&e, 5, 5, "faults[0].nodes", &["unknown key `nodes`", "valid keys: kind, at, node, node_type"]);
}

#[test]
fn string_where_a_number_belongs_points_at_the_value() {
    let yaml = "cluster:\n  node_types:\n    - name: cpu\n      cpu: sixteen\n      memory: 64GiB\n      ip_range: 10.0.1.0/24\n";
    let e = one(yaml);
    assert_error(&e, 4, 12, "cluster.node_types[0].cpu", &["invalid type: string \"sixteen\"", "expected a number"]);
}

#[test]
fn wrong_type_inside_a_workload_points_at_the_value() {
    let e = one("workloads:\n  - kind: fan_out\n    tasks: ten\n");
    assert_error(&e, 3, 12, "workloads[0].tasks", &["invalid type: string \"ten\"", "expected a whole number ≥ 0"]);
}

#[test]
fn missing_required_key_names_the_key_at_its_mapping() {
    let e = one("cluster:\n  node_types:\n    - name: cpu\n      ip_range: 10.0.1.0/24\n");
    assert_error(&e, 3, 7, "cluster.node_types[0].memory", &["missing required key `memory`"]);
}

#[test]
fn negative_resources_are_each_reported() {
    let yaml = "\
cluster:
  head:
    cpu: -2
  node_types:
    - {name: gpu, gpu: -1, memory: 8GiB, ip_range: 10.0.1.0/24, resources: {tpu: -4}}
";
    let e = errors(yaml);
    assert_eq!(e.len(), 3, "{e:?}");
    assert_error(&e[0], 3, 10, "cluster.head.cpu", &["must be a finite number ≥ 0, got -2"]);
    assert_error(&e[1], 5, 24, "cluster.node_types[0].gpu", &["must be a finite number ≥ 0, got -1"]);
    assert_error(&e[2], 5, 82, "cluster.node_types[0].resources.tpu", &["must be a finite number ≥ 0, got -4"]);
}

#[test]
fn unknown_workload_kind_lists_the_workload_kinds() {
    let e = one("workloads:\n  - name: etl\n    kind: fanout\n    tasks: 3\n");
    assert_error(
        &e,
        3,
        11,
        "workloads[0].kind",
        &[
            "unknown workload kind `fanout`",
            "did you mean `fan_out`?",
            "valid workload kinds: flow_insight, fan_out, training, actor_pool, job_mix",
        ],
    );
}

#[test]
fn unknown_fault_kind_lists_the_fault_kinds() {
    let e = one("faults:\n  - {kind: crash_node, at: 1s}\n");
    assert_error(
        &e,
        2,
        12,
        "faults[0].kind",
        &["unknown fault kind `crash_node`", "kill_node, restore_node, kill_actor, task_failures, memory_pressure"],
    );
}

#[test]
fn undefined_node_type_lists_the_defined_ones() {
    let yaml = "\
cluster:
  node_types:
    - {name: cpu-worker, cpu: 16, memory: 64GiB, ip_range: 10.0.1.0/24, count: 2}
faults:
  - kind: kill_node
    at: 1m
    node_type: gpu-worker
";
    let e = one(yaml);
    assert_error(
        &e,
        7,
        16,
        "faults[0].node_type",
        &["undefined node type `gpu-worker`", "defined node types: ray.head.default, cpu-worker"],
    );
}

#[test]
fn infeasible_request_names_the_largest_node() {
    let yaml = "\
cluster:
  head: {cpu: 4}
  node_types:
    - {name: cpu-worker, cpu: 16, memory: 64GiB, ip_range: 10.0.1.0/24, count: 2}
workloads:
  - kind: fan_out
    tasks: 100
    num_cpus: 32
";
    let e = one(yaml);
    assert_error(
        &e,
        8,
        15,
        "workloads[0].num_cpus",
        &["infeasible on every node type", "requests {CPU: 32}", "largest CPU is 16"],
    );
}

#[test]
fn defaulted_field_problems_point_at_the_enclosing_key() {
    let e = one("workloads:\n  - kind: fan_out\n    tasks: 1\n    strategy: {kind: NODE_AFFINITY}\n");
    assert_error(&e, 4, 5, "workloads[0].strategy.node", &["NODE_AFFINITY needs `node`", "10.0.0.1"]);
}

#[test]
fn multiple_problems_are_reported_together_in_document_order() {
    let yaml = "\
scheduler:
  top_k_fraction: 0
cluster:
  node_types:
    - {name: a, memory: 8GiB, ip_range: 10.0.1.0/24, count: 3, autoscaler: {max_workers: 2}}
workloads:
  - {kind: fan_out, tasks: 0}
faults:
  - {kind: kill_actor, at: 5s, class: Ghost}
";
    let e = errors(yaml);
    assert_eq!(e.len(), 4, "{e:?}");
    assert_error(&e[0], 2, 19, "scheduler.top_k_fraction", &["must be in (0, 1]", "got 0"]);
    assert_error(&e[1], 5, 61, "cluster.node_types[0].count", &["count 3 exceeds autoscaler.max_workers 2"]);
    assert_error(&e[2], 7, 28, "workloads[0].tasks", &["must be at least 1, got 0"]);
    assert_error(
        &e[3],
        9,
        39,
        "faults[0].class",
        &["no workload creates actor class `Ghost`", "no workload creates actors"],
    );
}

#[test]
fn yaml_syntax_errors_are_located() {
    let e = one("cluster:\n  head: {cpu: 8\nsim: {}\n");
    assert!(e.line >= 2, "{e}");
    assert!(e.message.starts_with("invalid YAML:"), "{e}");
}
