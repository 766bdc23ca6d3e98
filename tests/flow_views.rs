//! Flow Insight's views on the seed scenario (`examples/flow-insight.yaml`), for
//! several seeds, checked against what the engine's own tables say the run did:
//! call counts, the bottleneck rule, the Gantt on single-threaded actors, the flame
//! graph's root total, the stack at a mid-run instant; and the SVG and trace JSON
//! formats.

mod common;

use rayscope::flow::graph::Level;
use rayscope::flow::spans::Spans;
use rayscope::flow::timeline::{self, Window};
use rayscope::flow::{critical_path, flame, graph, render, stack, View};
use rayscope::model::TaskType;
use rayscope::snapshot::flow::{actor_hex, span_hex, JobRecord};
use rayscope::snapshot::{Snapshot, Tables};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Seeds whose drawn trees have a flagged worker with leaf children (2, 3, 5) and
/// ones that have none (1, 42), as `rayscope flow` shows them.
const SEEDS: &[u64] = &[1, 2, 3, 5, 42];

struct Run {
    snap: Snapshot,
    tables: Tables,
    job: Arc<JobRecord>,
}

fn run(seed: u64) -> Run {
    let engine = common::run(common::seed_example(seed));
    let snap = engine.publish(rayscope::sim::PublishOptions::seq(0));
    let tables = engine.build_tables();
    let job = snap.flow.jobs.values().next().expect("the seed job has records").clone();
    Run { snap, tables, job }
}

#[test]
fn graph_counts_are_the_calls_the_workload_made() {
    for &seed in SEEDS {
        let r = run(seed);
        let spans = Spans::replay(&r.job, u64::MAX);
        let g = graph::graph(&r.job, &spans, Level::Instance, true);
        let nodes: BTreeMap<&str, u64> = g["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| (n["id"].as_str().unwrap(), n["calls"].as_u64().unwrap()))
            .collect();
        // The actor tree, from the engine's actor table: each worker's children.
        let names = &r.snap.names;
        let workers: Vec<_> = r.tables.actors.iter().filter(|a| names[a.class as usize] == "Worker").collect();
        assert!(workers.len() >= 2, "seed {seed}: the tree has workers");
        let mut checked = 0;
        for a in &workers {
            let parent = format!("Worker:{}.process", actor_hex(a.id, a.job));
            let parent_calls = nodes.get(parent.as_str()).copied().unwrap_or(0);
            for c in &a.children {
                let child = format!("Worker:{}.process", actor_hex(*c, a.job));
                let edge = g["edges"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|e| e["source"] == parent.as_str() && e["target"] == child.as_str())
                    .unwrap_or_else(|| panic!("seed {seed}: no edge {parent} -> {child}"));
                assert_eq!(
                    edge["calls"],
                    10 * parent_calls,
                    "seed {seed}: 10 calls per child per parent call ({parent} -> {child})"
                );
                assert_eq!(edge["completed"], edge["calls"], "seed {seed}: all calls completed");
                checked += 1;
            }
        }
        assert!(checked >= 1, "seed {seed}: some parent-child edge checked");
        // Every Worker.process call the engine ran is in the graph, and nothing else.
        let ran = r
            .tables
            .tasks
            .iter()
            .filter(|t| t.kind == TaskType::ActorTask && names[t.name as usize] == "Worker.process")
            .count() as u64;
        let class = graph::graph(&r.job, &spans, Level::Class, true);
        let process = class["nodes"].as_array().unwrap().iter().find(|n| n["id"] == "Worker.process").unwrap();
        assert_eq!(process["calls"], ran, "seed {seed}: class-level calls = calls run");
        // The class-level aggregates (kept for every call) agree with the records.
        let agg: u64 = r.job.edges.values().map(|e| e.calls).sum();
        let edges: u64 = class["edges"].as_array().unwrap().iter().map(|e| e["calls"].as_u64().unwrap()).sum();
        assert_eq!(agg, edges, "seed {seed}: aggregates = records");
    }
}

#[test]
fn the_first_bottleneck_is_the_flagged_worker_with_leaf_children_on_the_critical_path() {
    let mut with_flagged = 0;
    for &seed in SEEDS {
        let r = run(seed);
        let by_id: BTreeMap<u64, _> = r.tables.actors.iter().map(|a| (a.id, a)).collect();
        // Workers flagged as bottlenecks whose children are all leaves (level 0).
        let flagged: BTreeSet<String> = r
            .tables
            .actors
            .iter()
            .filter(|a| a.flag && !a.children.is_empty() && a.children.iter().all(|c| by_id[c].level == 0))
            .map(|a| actor_hex(a.id, a.job))
            .collect();
        let spans = Spans::replay(&r.job, u64::MAX);
        let (entries, total, _) = critical_path::rank(&r.job, &spans);
        let first = r.job.target(entries[0].target);
        let first_actor = first.actor_id().unwrap_or_default();
        if !flagged.is_empty() {
            with_flagged += 1;
            assert!(
                flagged.contains(&first_actor),
                "seed {seed}: first entry {first_actor} is not a flagged leaf-parent ({flagged:?})"
            );
            assert_eq!(first.method, "process");
            assert!(first.flag && first.level == 1, "seed {seed}: attributes on the entry");
            // On the path: its self time there is most of the job's.
            assert!(entries[0].self_us * 2 > total, "seed {seed}: the bottleneck holds most of the critical path");
        } else {
            assert!(!first.flag || first.level != 1, "seed {seed}: no flagged leaf-parent in the tree");
        }
        // Self times on the path add up to the path (the driver's own share included).
        let (self_us, path) = critical_path::critical_self(&spans, &r.job);
        assert_eq!(self_us.iter().sum::<u64>(), path, "seed {seed}: every instant on exactly one call");
        let driver = r.snap.jobs.iter().find(|j| j.id == r.job.job_hex).unwrap();
        assert_eq!(
            path,
            driver.end_time_us.unwrap().micros_since(driver.start_time_us),
            "seed {seed}: path = driver wall time"
        );
    }
    assert!(with_flagged >= 2, "the seeds cover trees with a flagged leaf-parent");
}

#[test]
fn the_gantt_never_overlaps_partially_on_a_single_threaded_actor() {
    for &seed in SEEDS {
        let r = run(seed);
        let spans = Spans::replay(&r.job, u64::MAX);
        let tl = timeline::timeline(&r.job, &spans, &Window::ALL);
        let mut rows: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
        for e in tl["traceEvents"].as_array().unwrap() {
            if e["ph"] != "X" || e["args"]["actor_id"].is_null() {
                continue;
            }
            let (ts, dur) = (e["ts"].as_u64().unwrap(), e["dur"].as_u64().unwrap());
            rows.entry(e["args"]["actor_id"].as_str().unwrap().to_string()).or_default().push((ts, ts + dur));
        }
        assert!(rows.len() >= 2, "seed {seed}: actor rows");
        for (actor, mut v) in rows {
            v.sort();
            for i in 0..v.len() {
                for j in i + 1..v.len() {
                    let (a, b) = (v[i], v[j]);
                    let disjoint = a.1 <= b.0 || b.1 <= a.0;
                    let nested = (a.0 <= b.0 && b.1 <= a.1) || (b.0 <= a.0 && a.1 <= b.1);
                    assert!(disjoint || nested, "seed {seed}: actor {actor}: {a:?} and {b:?} overlap partially");
                }
            }
        }
    }
}

#[test]
fn the_wall_time_flame_graph_root_total_is_the_driver_wall_time() {
    for &seed in SEEDS {
        let r = run(seed);
        let spans = Spans::replay(&r.job, u64::MAX);
        let folded = flame::folded(&r.job, &spans, flame::Mode::Wall);
        let root: u64 = folded.iter().filter(|(k, _)| k.split(';').next() == Some("_main")).map(|(_, v)| *v).sum();
        let total: u64 = folded.values().sum();
        assert_eq!(root, total, "seed {seed}: every path starts at _main");
        let driver = r.snap.jobs.iter().find(|j| j.id == r.job.job_hex).unwrap();
        assert_eq!(root, driver.end_time_us.unwrap().micros_since(driver.start_time_us), "seed {seed}");
        // The bottleneck's frame dominates where the tree has one.
        assert!(
            folded.keys().any(|k| k.ends_with("Worker.process;Worker.process")),
            "seed {seed}: nested process frames"
        );
        // Calls waiting for their actor show as waiting, not as the callee's own time.
        let queued: u64 = folded.iter().filter(|(k, _)| k.ends_with(";[queued]")).map(|(_, v)| *v).sum();
        assert!(queued > 0, "seed {seed}: queueing shown apart");
    }
}

#[test]
fn the_stack_mid_run_is_one_stack_per_chain_of_the_calls_in_flight() {
    for &seed in SEEDS {
        let r = run(seed);
        let driver = r.snap.jobs.iter().find(|j| j.id == r.job.job_hex).unwrap();
        let end = driver.end_time_us.unwrap().as_micros();
        let node_ids: BTreeMap<u64, String> =
            r.snap.nodes.iter().map(|n| (n.idx as u64, n.node_id.to_string())).collect();
        for at in [end / 3, end / 2 + 7, end - 1] {
            let spans = Spans::replay(&r.job, at);
            let v = stack::stack(&r.job, &spans, &r.snap.nodes);
            // In flight per the engine's task table: submitted by `at`, not ended by it;
            // started by then or still queued.
            let flying: Vec<_> = r
                .tables
                .tasks
                .iter()
                .filter(|t| {
                    t.kind != TaskType::DriverTask
                        && t.submitted_at_us.as_micros() <= at
                        && t.ended_at_us.is_none_or(|e| e.as_micros() > at)
                })
                .collect();
            assert!(!flying.is_empty(), "seed {seed} at {at}: something is in flight");
            assert_eq!(v["in_flight"], flying.len());
            let started = |t: &&rayscope::snapshot::TaskRow| t.started_at_us.is_some_and(|s| s.as_micros() <= at);
            // A chain ends at a started call with no started call in flight below it.
            let tips: BTreeSet<String> = flying
                .iter()
                .filter(|t| started(t) && !flying.iter().any(|c| c.parent == Some(t.id) && started(c)))
                .map(|t| span_hex(t.id))
                .collect();
            let shown: BTreeSet<String> =
                v["stacks"].as_array().unwrap().iter().map(|s| s["span"].as_str().unwrap().to_string()).collect();
            assert_eq!(shown, tips, "seed {seed} at {at}: one stack per chain");
            // Every call in flight is a frame of some stack or counted as queued under one.
            let mut frames: BTreeMap<String, u64> = BTreeMap::new();
            for s in v["stacks"].as_array().unwrap() {
                let fs = s["frames"].as_array().unwrap();
                assert_eq!(fs[0]["name"], "_main");
                assert_eq!(fs.last().unwrap()["span"], s["span"]);
                // It ends where work runs, or where a call waits on calls still queued.
                let top = fs.last().unwrap();
                assert!(
                    top["state"] == "running" || (top["state"] == "blocked" && top["queued_calls"].as_u64() > Some(0)),
                    "seed {seed} at {at}: {top}"
                );
                for f in fs {
                    frames.insert(f["span"].as_str().unwrap().to_string(), f["queued_calls"].as_u64().unwrap());
                    if let Some(n) = f["node"].as_u64() {
                        assert_eq!(f["node_id"].as_str(), node_ids.get(&n).map(String::as_str), "seed {seed}: {f}");
                    }
                }
            }
            let queued: u64 = frames.values().sum();
            let framed = frames.keys().filter(|k| **k != r.job.job_hex && flying.iter().any(|t| span_hex(t.id) == **k));
            assert_eq!(framed.count() as u64 + queued, flying.len() as u64, "seed {seed} at {at}: every call once");
            let queued_now = flying.iter().filter(|t| !started(t)).count() as u64;
            assert_eq!(queued, queued_now, "seed {seed} at {at}: queued calls counted under their callers");
        }
    }
}

#[test]
fn the_svg_is_well_formed_xml_and_the_timeline_valid_trace_events() {
    let r = run(2);
    let now = r.snap.sim_time_us.as_micros();
    let svg = render(
        &r.job,
        &Spans::replay(&r.job, now),
        &Default::default(),
        true,
        View::Svg(flame::Mode::Execution),
        &r.snap.nodes,
    )
    .unwrap();
    assert_eq!(svg.content_type, "image/svg+xml");
    let text = String::from_utf8(svg.body).unwrap();
    let mut reader = quick_xml::Reader::from_str(&text);
    let (mut depth, mut elements, mut saw_svg) = (0i64, 0usize, false);
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Start(e)) => {
                saw_svg |= e.name().as_ref() == b"svg";
                depth += 1;
                elements += 1;
            }
            Ok(quick_xml::events::Event::End(_)) => depth -= 1,
            Ok(quick_xml::events::Event::Empty(_)) => elements += 1,
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(_) => {}
            Err(e) => panic!("the SVG is not well-formed at {}: {e}", reader.buffer_position()),
        }
        assert!(depth >= 0);
    }
    assert!(saw_svg && depth == 0 && elements > 10, "an svg root with frames");
    assert!(text.contains("Worker.process"));

    let tl = render(
        &r.job,
        &Spans::replay(&r.job, now),
        &Default::default(),
        true,
        View::Timeline(Window::ALL),
        &r.snap.nodes,
    )
    .unwrap();
    // The JSON-object form, with what Perfetto reads only before `traceEvents` first
    // (its reader stops at an unknown key: `traceEvents` is the last one).
    let text = std::str::from_utf8(&tl.body).unwrap();
    assert!(text.starts_with(r#"{"displayTimeUnit":"ms","otherData":{"#), "{}", &text[..80]);
    let v: Value = serde_json::from_slice(&tl.body).expect("timeline is JSON");
    assert_eq!(v.as_object().unwrap().keys().collect::<Vec<_>>(), ["displayTimeUnit", "otherData", "traceEvents"]);
    assert!(text.ends_with("]}"), "traceEvents last");
    let events = v["traceEvents"].as_array().expect("a trace-event array");
    let (mut complete, mut blocked) = (0, Vec::new());
    for e in events {
        let ph = e["ph"].as_str().expect("ph");
        assert!(e["name"].is_string() && e["pid"].is_u64(), "{e}");
        match ph {
            "X" => {
                assert!(e["ts"].is_u64() && e["dur"].is_u64() && e["tid"].is_u64(), "{e}");
                match e["cat"].as_str() {
                    Some("task") => complete += 1,
                    Some("blocked") => blocked.push(e.clone()),
                    other => panic!("unexpected category {other:?}: {e}"),
                }
            }
            "M" => assert!(e["args"]["name"].is_string(), "{e}"),
            other => panic!("unexpected phase {other}"),
        }
    }
    let started = r.tables.tasks.iter().filter(|t| t.started_at_us.is_some() && t.job == r.job.job).count();
    assert_eq!(complete, started, "one execution event per call that ran (the driver included)");
    // Each wait in `ray.get` lies inside its call's execution, on its row.
    assert!(!blocked.is_empty(), "the tree's callers wait in ray.get");
    for b in &blocked {
        let call =
            events.iter().find(|e| e["cat"] == "task" && e["args"]["span"] == b["args"]["span"]).expect("its call");
        let (cs, ce) = (call["ts"].as_u64().unwrap(), call["ts"].as_u64().unwrap() + call["dur"].as_u64().unwrap());
        let (bs, be) = (b["ts"].as_u64().unwrap(), b["ts"].as_u64().unwrap() + b["dur"].as_u64().unwrap());
        assert!(cs <= bs && be <= ce && call["pid"] == b["pid"] && call["tid"] == b["tid"], "{b} in {call}");
    }
    let other = &v["otherData"];
    assert_eq!((other["total"].as_u64(), other["returned"].as_u64()), (Some(started as u64), Some(started as u64)));
    assert_eq!((other["truncated"].as_bool(), other["limit"].is_null()), (Some(false), true), "{other}");
    assert_eq!(tl.cut, Some((started, started)));
}

/// Executions of the job per the engine's task table: (start, task id = span, end).
fn executions(r: &Run) -> Vec<(u64, u64, u64)> {
    let now = r.snap.sim_time_us.as_micros();
    let mut v: Vec<(u64, u64, u64)> = r
        .tables
        .tasks
        .iter()
        .filter(|t| t.job == r.job.job)
        .filter_map(|t| Some((t.started_at_us?.as_micros(), t.id, t.ended_at_us.map_or(now, |e| e.as_micros()))))
        .collect();
    v.sort();
    v
}

fn spans_of(tl: &Value) -> Vec<String> {
    tl["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "task")
        .map(|e| e["args"]["span"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_window_shows_the_executions_overlapping_it_and_a_limit_keeps_the_earliest() {
    let r = run(2);
    let all = executions(&r);
    let end = all.iter().map(|e| e.2).max().unwrap();
    let spans = Spans::replay(&r.job, u64::MAX);
    let (from, to) = (end / 3, end / 2);
    // Per the engine's tables: started by `to`, not ended before `from`.
    let want: Vec<&(u64, u64, u64)> = all.iter().filter(|e| e.0 <= to && e.2 >= from).collect();
    assert!(want.len() > 20 && want.len() < all.len(), "a window in the middle holds some: {}", want.len());
    let w = Window { from_us: Some(from), to_us: Some(to), limit: None };
    let tl = timeline::timeline(&r.job, &spans, &w);
    let got: BTreeSet<String> = spans_of(&tl).into_iter().collect();
    assert_eq!(got, want.iter().map(|e| span_hex(e.1)).collect::<BTreeSet<_>>());
    assert_eq!(tl["otherData"]["total"], want.len());
    assert_eq!(tl["otherData"]["truncated"], false);
    assert_eq!(
        (tl["otherData"]["from_s"].as_f64(), tl["otherData"]["to_s"].as_f64()),
        (Some(from as f64 / 1e6), Some(to as f64 / 1e6))
    );

    // Cut at 7: the 7 earliest-starting (ties in submit order, which is task id order),
    // in start order, and the rest starts where the first one left out starts.
    let w = Window { limit: Some(7), ..w };
    let tl = timeline::timeline(&r.job, &spans, &w);
    let kept = spans_of(&tl);
    assert_eq!(kept, want[..7].iter().map(|e| span_hex(e.1)).collect::<Vec<_>>());
    let o = &tl["otherData"];
    assert_eq!(
        (o["total"].as_u64(), o["returned"].as_u64(), o["truncated"].as_bool()),
        (Some(want.len() as u64), Some(7), Some(true)),
        "{o}"
    );
    assert_eq!(o["next_from_s"].as_f64(), Some(want[7].0 as f64 / 1e6));
    assert!(o["more"].as_str().unwrap().contains(&format!("{} more", want.len() - 7)), "{o}");
    // Only the kept executions' rows are named.
    let rows = tl["traceEvents"].as_array().unwrap().iter().filter(|e| e["name"] == "thread_name").count();
    assert!(rows <= 7, "{rows} rows for 7 executions");

    // An instant: `to` past it is the instant, and calls running then end at it.
    let at = end / 2;
    let tl = timeline::timeline(
        &r.job,
        &Spans::replay(&r.job, at),
        &Window { from_us: Some(at), to_us: Some(end), limit: None },
    );
    let running: BTreeSet<String> = all.iter().filter(|e| e.0 <= at && e.2 >= at).map(|e| span_hex(e.1)).collect();
    assert!(!running.is_empty());
    assert_eq!(spans_of(&tl).into_iter().collect::<BTreeSet<_>>(), running);
    assert_eq!(tl["otherData"]["to_s"].as_f64(), Some(at as f64 / 1e6));
    for e in tl["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X" && e["cat"] == "task") {
        assert!(e["ts"].as_u64().unwrap() + e["dur"].as_u64().unwrap() <= at, "{e}");
    }
}

#[test]
fn recording_never_changes_the_run_and_the_cap_keeps_class_level_counts() {
    let digest = |cap: u64| {
        let mut cfg = common::seed_example(3);
        cfg.sim.flow_calls_per_job = cap;
        let (engine, report) = rayscope::sim::simulate(cfg, None, None, |_| {}).unwrap();
        (report.event_log_sha256, engine)
    };
    let (full, e_full) = digest(100_000);
    let (off, e_off) = digest(0);
    let (capped, e_capped) = digest(50);
    assert_eq!(full, off, "recording off: the same event log");
    assert_eq!(full, capped, "recording capped: the same event log");

    let snap = |e: &rayscope::sim::Engine| e.publish(rayscope::sim::PublishOptions::seq(0));
    assert!(snap(&e_off).flow.jobs.is_empty(), "nothing recorded when off");
    let (s_full, s_capped) = (snap(&e_full), snap(&e_capped));
    let (j_full, j_capped) = (s_full.flow.jobs.values().next().unwrap(), s_capped.flow.jobs.values().next().unwrap());
    assert!(!j_full.truncated());
    assert!(j_capped.truncated() && j_capped.recorded_calls == 50, "{} recorded", j_capped.recorded_calls);
    assert_eq!(j_capped.calls, j_full.calls, "every call counted past the cap");
    // Submit, begin, end and one `ray.get` wait (block, unblock) per call, the driver's own.
    assert!(j_capped.records.len() <= 5 * 50 + 4, "records bounded by the cap: {}", j_capped.records.len());
    // Class-level edges "now" come from the aggregates: the same as with every call recorded.
    let edges = |j: &JobRecord, s: &Snapshot| {
        let g = graph::graph(j, &Spans::replay(j, s.sim_time_us.as_micros()), Level::Class, true);
        assert_eq!(g["truncated"], j.truncated());
        g["edges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["source"].to_string(),
                    e["target"].to_string(),
                    e["calls"].as_u64().unwrap(),
                    e["completed"].as_u64().unwrap(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(edges(j_capped, &s_capped), edges(j_full, &s_full));
    // The metrics' counts too.
    assert_eq!(s_capped.flow.calls, s_full.flow.calls);
}

#[test]
fn the_physical_view_places_every_execution_once_with_the_actor_s_attributes() {
    for &seed in SEEDS {
        let r = run(seed);
        let v: Value = serde_json::from_slice(
            &render(
                &r.job,
                &Spans::replay(&r.job, r.snap.sim_time_us.as_micros()),
                &Default::default(),
                true,
                View::Physical(None),
                &r.snap.nodes,
            )
            .unwrap()
            .body,
        )
        .unwrap();
        let nodes = v["nodes"].as_array().unwrap();
        let calls = |key: &str| -> u64 {
            nodes.iter().flat_map(|n| n[key].as_array().unwrap()).map(|a| a["calls"].as_u64().unwrap()).sum()
        };
        let started = r.tables.tasks.iter().filter(|t| t.started_at_us.is_some() && t.job == r.job.job).count() as u64;
        assert_eq!(calls("actors") + calls("workers"), started, "seed {seed}: every execution placed once");
        let by_id: BTreeMap<String, _> = r.tables.actors.iter().map(|a| (actor_hex(a.id, a.job), a)).collect();
        let mut placed = 0;
        for n in nodes {
            for a in n["actors"].as_array().unwrap() {
                let t = by_id[a["actor_id"].as_str().unwrap()];
                assert_eq!(
                    (a["class"].as_str(), a["level"].as_u64(), a["program_flag"].as_bool()),
                    (Some(r.snap.names[t.class as usize].as_str()), Some(t.level as u64), Some(t.flag)),
                    "seed {seed}: {a}"
                );
                assert_eq!(
                    (a["pid"].as_u64(), n["idx"].as_u64()),
                    (Some(t.pid as u64), t.node.map(u64::from)),
                    "seed {seed}: where it ran: {a}"
                );
                placed += 1;
            }
        }
        assert_eq!(placed, by_id.len(), "seed {seed}: every actor placed");
    }
}

#[test]
fn a_capped_graph_keeps_no_dangling_edge_and_says_how_much_it_left_out() {
    // A map-reduce past the recording cap: the reducers are never recorded, yet the
    // class-level graph "now" (from the aggregates) has their node beside their edge.
    let mut cfg = common::load(
        "cluster:\n  head: {cpu: 8, memory: 32GiB}\nworkloads:\n  - kind: fan_out\n    tasks: 1200\n    reducers: 4\n    \
         task_duration: {min: 1s, max: 2s}\n    reduce_duration: {min: 1s, max: 2s}\n    output_size: 1KiB\n\
         \x20 - kind: actor_pool\n    actors: 400\n    calls_per_actor: 1\n    num_cpus: 0\n    \
         call_duration: {min: 10ms, max: 20ms}\nsim: {seed: 3}\n",
    );
    cfg.sim.flow_calls_per_job = 1000;
    let engine = common::run(cfg);
    let snap = engine.publish(rayscope::sim::PublishOptions::seq(0));
    for job in snap.flow.jobs.values() {
        let spans = Spans::replay(job, snap.sim_time_us.as_micros());
        for level in [Level::Class, Level::Instance] {
            let g = graph::graph(job, &spans, level, true);
            let ids: BTreeSet<&str> =
                g["nodes"].as_array().unwrap().iter().map(|n| n["id"].as_str().unwrap()).collect();
            for e in g["edges"].as_array().unwrap() {
                for end in ["source", "target"] {
                    assert!(ids.contains(e[end].as_str().unwrap()), "{} {level:?}: dangling {e}", job.name);
                }
            }
            assert!(ids.len() <= graph::MAX_NODES && ids.contains("_main"), "{} {level:?}", job.name);
            assert!(g["nodes_total"].as_u64().unwrap() >= ids.len() as u64);
        }
    }
    // The map-reduce's reducers, past the cap: a node from the aggregates.
    let mr = snap.flow.jobs.values().find(|j| j.truncated() && j.frames.iter().any(|f| f == "reduce")).unwrap();
    let g = graph::graph(mr, &Spans::replay(mr, snap.sim_time_us.as_micros()), Level::Class, true);
    let reduce = g["nodes"].as_array().unwrap().iter().find(|n| n["id"] == "reduce").expect("the reduce node");
    assert_eq!((reduce["recorded"].as_bool(), reduce["calls"].as_u64()), (Some(false), Some(4)), "{reduce}");
    // The actor pool's instance graph has more nodes than an answer holds: it says so.
    let pool = snap.flow.jobs.values().find(|j| j.frames.iter().any(|f| f.ends_with(".__init__"))).unwrap();
    assert!(!pool.truncated());
    let g = graph::graph(pool, &Spans::replay(pool, snap.sim_time_us.as_micros()), Level::Instance, true);
    assert_eq!(g["nodes"].as_array().unwrap().len(), graph::MAX_NODES);
    assert!(g["nodes_total"].as_u64().unwrap() as usize > graph::MAX_NODES, "{}", g["nodes_total"]);
    assert!(g["edges_total"].as_u64().unwrap() as usize > g["edges"].as_array().unwrap().len());
}
