//! The fidelity report (`docs/fidelity.md`, and its rows in `docs/fidelity.json`) against
//! the runs recorded on real Ray (`scripts/ray-calibration/runs/`): it is what `rayscope
//! fidelity` writes now, the suite covers every workload issue 19 names, and the rows
//! that claim to be within their bound are.

use rayscope::fidelity::{self, Row};
use std::path::{Path, PathBuf};

fn runs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ray-calibration/runs")
}

fn rows() -> (Vec<fidelity::Run>, Vec<Row>) {
    fidelity::rows(&runs_dir(), &fidelity::Costs::default())
        .unwrap_or_else(|e| panic!("the recorded runs put to the model: {e}"))
}

#[test]
fn the_shipped_report_is_what_the_command_writes_from_the_recorded_runs() {
    let (runs, rows) = rows();
    let mut now = fidelity::report("scripts/ray-calibration/runs", &fidelity::Costs::default(), &runs, &rows);
    // The what-ifs on a recorded job, from scripts/ray-whatif's record.
    let whatifs = "scripts/ray-whatif/runs/whatif.json";
    let record = fidelity::whatif::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join(whatifs)).unwrap();
    now.push('\n');
    now.push_str(&fidelity::whatif::section(whatifs, &record));
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/fidelity.md");
    let shipped = std::fs::read_to_string(&path).expect("docs/fidelity.md is in the repo");
    assert!(
        shipped == now,
        "docs/fidelity.md is stale: run `cargo run --release -- fidelity --out docs/fidelity.md`\n--- now ---\n{now}"
    );
}

/// `docs/fidelity.json`, the rows `simulate`'s report quotes (`config::calibration::
/// measured_for`), is what the command writes now too: the binary carries it as built.
#[test]
fn the_shipped_rows_are_what_the_command_writes_from_the_recorded_runs() {
    let (_, rows) = rows();
    let now = fidelity::rows_json(&rows);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/fidelity.json");
    let shipped = std::fs::read_to_string(&path).expect("docs/fidelity.json is in the repo");
    assert!(
        shipped == now,
        "docs/fidelity.json is stale: run `cargo run --release -- fidelity --format json --out docs/fidelity.json` \
         (and rebuild: simulate's report quotes it)"
    );
}

#[test]
fn the_report_names_every_cpu_its_runs_came_from() {
    let (mut runs, rows) = rows();
    let one = fidelity::report("runs", &fidelity::Costs::default(), &runs, &rows);
    assert!(one.contains("cores (Intel(R) Xeon(R) Processor);"), "the recorded runs' CPU is named");
    // The rows are labelled as one machine's record before any row, naming it and the costs.
    let label = one.find(
        "**One reference machine's record.** Every row below was measured on the machine its runs \
                          were made on (Intel(R) Xeon(R) Processor, 2 cores), and the model ran with the reference \
                          machine's costs (the shipped defaults: ",
    );
    assert!(label.is_some_and(|at| at < one.find("| workload |").unwrap()), "{one}");
    assert!(one.contains(rayscope::config::calibration::CALIBRATION.machine));
    runs[0].cpu_model = Some("AMD EPYC".into());
    let mixed = fidelity::report("runs", &fidelity::Costs::default(), &runs, &rows);
    assert!(mixed.contains("(AMD EPYC, Intel(R) Xeon(R) Processor)"), "a mixed set shows both CPUs");
}

/// `rayscope fidelity --costs` with the shipped fit's own record gives the shipped rows:
/// the defaults are that fit's values and its fixed settings (`tests/calibration.rs`), and
/// the rows it marks fitted are the record's. The report names the record it ran with.
#[test]
fn the_shipped_fits_record_given_as_costs_gives_the_shipped_rows_and_says_so() {
    let record = runs_dir().join("fit.json");
    let fit = fidelity::fit::read(&record).unwrap_or_else(|e| panic!("the shipped fit's record: {e}"));
    let costs = fidelity::Costs { fit: Some(fit), set: Vec::new() };
    let (runs, with_record) = fidelity::rows(&runs_dir(), &costs).expect("the runs put to the model");
    let (_, shipped) = rows();
    assert_eq!(fidelity::rows_json(&with_record), fidelity::rows_json(&shipped));
    let report = fidelity::report("runs", &costs, &runs, &with_record);
    let named = format!("`rayscope fidelity --runs runs --costs {}`", record.display());
    assert!(report.contains(&named), "the report gives the command with its --costs");
    assert!(report.contains("every cost at its default but the costs of the fit recorded in"), "{report}");
    assert!(!report.contains("do not edit by hand"), "only the shipped report is held to the command");
}

/// A put run timed the get after each put too: that figure has its own row, beside the
/// put's, and is the median of the get's recorded figures.
#[test]
fn every_put_run_gives_its_get_a_row_of_its_own() {
    second_rows_are_their_runs_medians("object_local", "object_get", "get_seconds");
}

/// A no-op run's submit loop (`submit_seconds`) is a row of its own too, and the model's
/// figure for it is its driver's loop, not its whole run.
#[test]
fn every_noop_run_gives_its_submit_loop_a_row_of_its_own() {
    second_rows_are_their_runs_medians("noop_tasks", "noop_submit", "submit_seconds");
    let (_, rows) = rows();
    for submit in rows.iter().filter(|r| r.workload == "noop_submit") {
        let whole = rows.iter().find(|r| r.workload == "noop_tasks" && r.params == submit.params).unwrap();
        let (loop_s, run_s) = (submit.model.expect("the model has a submit loop"), whole.model.unwrap());
        assert!(loop_s > 0.0 && loop_s < run_s, "{}: the loop {loop_s} s within the run's {run_s} s", submit.params);
    }
}

#[test]
fn a_median_of_an_even_count_is_the_mean_of_the_middle_two() {
    assert_eq!(fidelity::median(&[1.0, 2.0, 7.0]), 2.0);
    assert_eq!(fidelity::median(&[1.0, 2.0, 4.0, 7.0]), 3.0);
    assert_eq!(fidelity::median(&[5.0]), 5.0);
}

/// Each row of `first` (a kind of run) has a row of `second` with the same parameters,
/// whose real figure is the median of those runs' `field`.
fn second_rows_are_their_runs_medians(first: &str, second: &str, field: &str) {
    let (runs, rows) = rows();
    let firsts: Vec<&Row> = rows.iter().filter(|r| r.workload == first).collect();
    assert!(!firsts.is_empty());
    for one in firsts {
        let other = rows
            .iter()
            .find(|r| r.workload == second && r.params == one.params)
            .unwrap_or_else(|| panic!("no {second} row for the runs of {first} {}", one.params));
        let mut figures: Vec<f64> = runs
            .iter()
            .filter(|r| r.workload == first && r.params_label() == one.params && !fidelity::busy(r))
            .map(|r| r.figure(field).unwrap_or_else(|| panic!("a {first} run records its {field}")))
            .collect();
        figures.sort_by(f64::total_cmp);
        assert_eq!(other.runs, figures.len(), "{}", one.params);
        assert_eq!(other.real, fidelity::median(&figures), "the median {field} of {}", one.params);
        assert_ne!(other.real, one.real, "{}: the {second} figure, not the {first} one", one.params);
    }
}

#[test]
fn the_suite_covers_every_workload_kind_on_real_ray_2_60() {
    let (runs, rows) = rows();
    for kind in [
        "noop_tasks",
        "actor_creation",
        "actor_calls",
        "object_local",
        "object_get",
        "object_transfer",
        "task_retries",
        "actor_restart",
        "node_death",
        "placement_group",
        "spillback",
        "seed_tree",
    ] {
        assert!(rows.iter().any(|r| r.workload == kind), "no recorded run of {kind}");
    }
    let trees = rows.iter().filter(|r| r.workload == "seed_tree").count();
    assert!(trees >= 3, "the seed tree in at least three shapes, found {trees}");
    for run in &runs {
        assert_eq!(run.ray_version, "2.60.0", "{}", run.file);
        assert_eq!(run.cores, 2, "{}: measured on this kind of machine (2 cores)", run.file);
    }
    // Every size the issue lists for the no-op tasks, on 1, 2 and 4 logical CPUs.
    for cpus in [1, 2, 4] {
        for tasks in [1000, 10000, 100000] {
            let params = format!("cpus={cpus} tasks={tasks}");
            assert!(rows.iter().any(|r| r.workload == "noop_tasks" && r.params == params), "noop_tasks {params}");
        }
    }
}

#[test]
fn every_seed_tree_is_within_half_a_percent() {
    let (_, rows) = rows();
    for r in rows.iter().filter(|r| r.workload == "seed_tree") {
        let error = r.error().expect("the model runs a seed tree");
        assert!(r.within_bound(), "seed tree {}: {:+.3} % (bound ±0.5 %)", r.params, error * 100.0);
    }
}

#[test]
fn a_row_is_within_its_bound_only_when_its_error_is() {
    // The verdict the report prints is the error against the bound, not a label.
    let row = |model: Option<f64>| Row {
        workload: "noop_tasks".into(),
        params: "cpus=2 tasks=1000".into(),
        runs: 1,
        real: 10.0,
        real_low: 10.0,
        real_high: 10.0,
        model,
        bound: 0.05,
        resolution: None,
        fitted: false,
    };
    assert!(row(Some(10.4)).within_bound());
    assert!(!row(Some(10.6)).within_bound());
    assert!(!row(Some(9.4)).within_bound());
    assert!(!row(None).within_bound(), "a workload with no model is not within anything");
    // A figure smaller than its runs resolve is compared with nothing, either way.
    let unresolved = Row { resolution: Some(12.0), ..row(Some(10.0)) };
    assert_eq!(unresolved.error(), None);
    assert!(!unresolved.within_bound());
    // It says only whether the model's figure is within that resolution of Ray's too.
    assert!(unresolved.unresolved_alike());
    assert!(!Row { resolution: Some(12.0), ..row(Some(23.0)) }.unresolved_alike(), "13 from Ray's, resolving 12");
    assert!(!row(Some(10.0)).unresolved_alike(), "a resolved row is compared by its error");
    assert_eq!(Row { resolution: Some(8.0), ..row(Some(10.4)) }.error().map(|e| (e * 100.0).round()), Some(4.0));
}

#[test]
fn a_rows_range_is_its_lowest_and_highest_run_against_the_median() {
    let row = |runs: usize, model: Option<f64>| Row {
        workload: "noop_tasks".into(),
        params: "cpus=2 tasks=1000".into(),
        runs,
        real: 1.0,
        real_low: 0.9,
        real_high: 1.2,
        model,
        bound: 0.05,
        resolution: None,
        fitted: false,
    };
    let (low, high) = row(3, Some(1.15)).spread().expect("three runs have a range");
    assert!((low + 0.1).abs() < 1e-9 && (high - 0.2).abs() < 1e-9, "{low} {high}");
    assert!(row(3, Some(1.15)).within_spread() && !row(3, Some(1.15)).within_bound(), "+15 %: in 0.9..1.2, not in 5 %");
    assert!(!row(3, Some(1.25)).within_spread());
    assert!(!row(3, None).within_spread(), "no model, nothing to place");
    assert!(row(1, Some(1.0)).spread().is_none() && !row(1, Some(1.0)).within_spread(), "one run has no range");
}

#[test]
fn every_rows_median_lies_in_its_range() {
    for r in rows().1 {
        assert!(r.real_low <= r.real && r.real <= r.real_high, "{} {}: {r:?}", r.workload, r.params);
    }
}

#[test]
fn a_transfer_resolves_what_its_samples_spread_allows() {
    // The transfer is the difference of two medians: its resolution comes from their
    // samples' spread, so a tight run resolves a small transfer and a loose one does not.
    let run = |spread: f64| -> fidelity::Run {
        let call: Vec<f64> = (0..21).map(|i| 0.010 + spread * (i as f64 - 10.0) / 10.0).collect();
        let small: Vec<f64> = (0..21).map(|i| 0.009 + spread * (i as f64 - 10.0) / 10.0).collect();
        fidelity::Run {
            file: "t.json".into(),
            workload: "object_transfer".into(),
            params: [("size".to_string(), serde_json::json!(100000))].into_iter().collect(),
            result: serde_json::json!({"transfer_seconds": 0.001, "samples": {"call": call, "small_call": small}}),
            ray_version: "2.60.0".into(),
            measured_at: "2026-11-27T00:00:00Z".into(),
            cores: 2,
            cpu_model: None,
            load_before: Some(0.1),
        }
    };
    let tight = fidelity::cases::resolution(&run(0.0001)).expect("a resolution");
    let loose = fidelity::cases::resolution(&run(0.005)).expect("a resolution");
    assert!(tight < 0.001 && loose > 0.001, "tight {tight}, loose {loose}");
}

#[test]
fn a_run_without_its_fields_is_an_error_naming_the_file_and_field() {
    let dir = std::env::temp_dir().join(format!("rayscope-fidelity-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("suite")).unwrap();
    std::fs::write(dir.join("suite/broken.json"), r#"{"workload": "noop_tasks", "params": {}}"#).unwrap();
    let err = fidelity::rows(&dir, &fidelity::Costs::default()).expect_err("a run without a result").to_string();
    assert!(err.contains("broken.json") && err.contains("`result`"), "{err}");
    std::fs::write(dir.join("suite/broken.json"), "not json").unwrap();
    let err = fidelity::rows(&dir, &fidelity::Costs::default()).expect_err("not JSON").to_string();
    assert!(err.contains("broken.json") && err.contains("not JSON"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_negative_figure_is_an_error_naming_the_file_and_field() {
    let dir = std::env::temp_dir().join(format!("rayscope-fidelity-negative-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("suite")).unwrap();
    let run = r#"{"workload": "noop_tasks", "params": {"tasks": 1000, "cpus": 2}, "result": {"seconds": -5},
        "ray_version": "2.60.0", "measured_at": "2026-11-30T14:27:30Z", "machine": {"cores": 2}}"#;
    std::fs::write(dir.join("suite/negative.json"), run).unwrap();
    let err = fidelity::rows(&dir, &fidelity::Costs::default()).expect_err("a negative time").to_string();
    assert!(err.contains("negative.json") && err.contains("`result.seconds`") && err.contains("-5"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs from two CPUs in one folder are refused by name, before any row is made from them.
#[test]
fn runs_from_two_cpus_in_one_folder_are_an_error_naming_each() {
    let dir = std::env::temp_dir().join(format!("rayscope-fidelity-cpus-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("suite")).unwrap();
    let run = |cpu: &str| {
        format!(
            r#"{{"workload": "noop_tasks", "params": {{"tasks": 1000, "cpus": 2}}, "result": {{"seconds": 0.7, "submit_seconds": 0.12}},
                "ray_version": "2.60.0", "measured_at": "2026-11-30T14:27:30Z",
                "machine": {{"cores": 2, "cpu_model": "{cpu}"}}, "load_average_before": [0.2, 0.5, 0.7]}}"#
        )
    };
    std::fs::write(dir.join("suite/a.json"), run("Intel(R) Xeon(R) Processor")).unwrap();
    std::fs::write(dir.join("suite/b.json"), run("Intel(R) Xeon(R) Processor")).unwrap();
    fidelity::rows(&dir, &fidelity::Costs::default()).expect("one CPU's runs are read");
    std::fs::write(dir.join("suite/c.json"), run("AMD EPYC")).unwrap();
    let err = fidelity::rows(&dir, &fidelity::Costs::default()).expect_err("two CPUs' runs").to_string();
    assert!(
        err.contains("runs from 2 CPUs")
            && err.contains("AMD EPYC (1 run, as suite/c.json)")
            && err.contains("Intel(R) Xeon(R) Processor (2 runs, as suite/a.json)"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_rows_marked_fit_are_exactly_the_ones_fit_json_names() {
    // fit.py writes its FIT rows as the report labels them: a label that drifted would
    // leave a fitted row passing as a hold-out.
    let (_, rows) = rows();
    let text = std::fs::read_to_string(runs_dir().join("fit.json")).expect("runs/fit.json is in the repo");
    let fit: serde_json::Value = serde_json::from_str(&text).expect("fit.json is JSON");
    let named: Vec<&str> = fit["fitted_on"].as_array().expect("fitted_on").iter().filter_map(|v| v.as_str()).collect();
    let marked: Vec<String> =
        rows.iter().filter(|r| r.fitted).map(|r| format!("{} {}", r.workload, r.params)).collect();
    assert!(!named.is_empty());
    assert_eq!(marked.len(), named.len(), "marked {marked:?}, fit.json names {named:?}");
    for n in named {
        assert!(marked.iter().any(|m| m == n), "{n} is named in fit.json but no row is marked fit");
    }
}

/// The band `simulate --replay` prints for a shape change is the range of the errors the
/// what-if record measured against each of Ray's runs (rounded out to 0.1 %): a band is a
/// measurement, so a new record moves it, and a band edited by hand fails here.
#[test]
fn the_shape_change_band_is_the_range_the_whatif_record_measured() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ray-whatif/runs/whatif.json");
    let record = fidelity::whatif::read(&path).unwrap();
    let errors: Vec<f64> = record
        .programs
        .iter()
        .flat_map(|p| p.shapes.iter())
        .flat_map(|s| s.runs_s.iter().map(move |r| (s.model_s - r) / r))
        .collect();
    let low = (errors.iter().copied().fold(f64::INFINITY, f64::min) * 1000.0).floor() / 1000.0;
    let high = (errors.iter().copied().fold(f64::NEG_INFINITY, f64::max) * 1000.0).ceil() / 1000.0;
    let band = rayscope::calibrate::bands::Change::Shape.band();
    assert!(
        (band.low - low).abs() < 1e-9 && (band.high - high).abs() < 1e-9,
        "the shape change's band is {:+.3} … {:+.3}, the record's errors {low:+.3} … {high:+.3}",
        band.low,
        band.high
    );
    assert!(band.source.contains("scripts/ray-whatif/runs/whatif.json"), "{}", band.source);
}
