//! `scripts/bench-scale`, the side-by-side benchmark BENCHMARKS.md's ratios come from:
//! its help, its argument errors and its `--dry-run` plan. The measurement itself (two
//! release builds, minutes each) is a tool run by hand, not a test; these keep the
//! script's front door working so that run is not the first to find it broken.
//!
//! Needs python3 (scripts/test installs it) and, for the plan, a git checkout.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn bench_scale(args: &[&str]) -> Output {
    Command::new("python3")
        .arg(repo().join("scripts/bench-scale"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("python3 runs scripts/bench-scale")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `args` (a `--dry-run --json`) succeed: the plan they print.
fn dry_plan(args: &[&str]) -> serde_json::Value {
    let o = bench_scale(args);
    assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
    let printed: serde_json::Value = serde_json::from_slice(&o.stdout).expect("--dry-run --json prints JSON");
    printed["plan"].clone()
}

/// `args` are refused as a usage error whose message says `says`.
fn refused(args: &[&str], says: &str) {
    let o = bench_scale(args);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
    assert!(text(&o.stderr).contains(says), "{args:?} should say {says:?}: {}", text(&o.stderr));
}

/// HEAD's commit, or None where the tree is not a git checkout (a source tarball).
fn head() -> Option<String> {
    let o = Command::new("git").args(["rev-parse", "HEAD"]).current_dir(repo()).output().ok()?;
    o.status.success().then(|| text(&o.stdout).trim().to_string())
}

#[test]
fn help_names_every_option_and_the_older_form() {
    let o = bench_scale(&["--help"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let help = text(&o.stdout);
    for flag in [
        "--against REV",
        "--rounds N",
        "--config FILE",
        "--callgrind",
        "--full",
        "--json",
        "--dry-run",
        "--clean",
        "RUNS",
    ] {
        assert!(help.contains(flag), "--help does not mention {flag}:\n{help}");
    }
    assert!(help.contains("target/bench-scale/<sha>"), "--help does not say where REV is built:\n{help}");
}

#[test]
fn dry_run_plans_both_builds_in_turn_and_builds_nothing() {
    let Some(sha) = head() else {
        let o = bench_scale(&["--against", "HEAD", "--dry-run"]);
        assert_eq!(o.status.code(), Some(2));
        assert!(text(&o.stderr).contains("not a git checkout"), "{}", text(&o.stderr));
        return;
    };
    let worktree = repo().join("target/bench-scale").join(&sha);
    let existed = worktree.exists();
    let plan = &dry_plan(&["--against", "HEAD", "--rounds", "3", "--dry-run", "--json"]);
    assert_eq!(plan["against"]["sha"], sha.as_str());
    assert_eq!(Path::new(plan["against"]["worktree"].as_str().unwrap()), worktree);
    assert_eq!(Path::new(plan["config"].as_str().unwrap()), repo().join("examples/scale.yaml"));
    let order: Vec<(u64, &str)> = plan["order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["round"].as_u64().unwrap(), o["build"].as_str().unwrap()))
        .collect();
    let expected: Vec<(u64, &str)> = (1..=3).flat_map(|r| [(r, "against"), (r, "current")]).collect();
    assert_eq!(order, expected, "the builds must alternate, one of each per round");
    assert_eq!(worktree.exists(), existed, "a dry run must not create the worktree");

    let o = bench_scale(&["--against", "HEAD", "--dry-run"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let plan = text(&o.stdout);
    assert!(plan.contains(&sha) && plan.contains("5 rounds"), "the text plan names the commit and 5 rounds:\n{plan}");
}

#[test]
fn pgo_plans_this_tree_through_build_pgo_and_only_with_against() {
    refused(&["--pgo"], "go with --against REV");
    if head().is_none() {
        return;
    }
    let plan = dry_plan(&["--against", "HEAD", "--pgo", "--dry-run", "--json"]);
    let current = &plan["current"];
    assert_eq!(current["pgo"], true);
    assert_eq!(Path::new(current["binary"].as_str().unwrap()), repo().join("target/pgo/release/rayscope"));
    assert!(current["build"].as_str().unwrap().ends_with("scripts/build-pgo"), "{current}");
}

#[test]
fn callgrind_plans_one_counted_run_each_at_two_percent_of_scale_yaml() {
    refused(&["--callgrind"], "go with --against REV");
    refused(&["--against", "HEAD", "--callgrind", "--rounds", "3"], "leave out --rounds");
    if head().is_none() {
        return;
    }
    let plan = &dry_plan(&["--against", "HEAD", "--callgrind", "--dry-run", "--json"]);
    assert_eq!(plan["rounds"], 1, "the counts barely move between runs: one run each");
    assert_eq!(plan["callgrind"]["scaled_to_2_percent"], true);
    let valgrind: Vec<&str> =
        plan["callgrind"]["valgrind"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(valgrind.contains(&"--tool=callgrind") && valgrind.contains(&"--cache-sim=yes"), "{valgrind:?}");
    let command: Vec<&str> = plan["command"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(command.contains(&"workloads[0].tasks=20000"), "scale.yaml runs at 2 %: {command:?}");

    // Another config runs as written.
    let plan =
        dry_plan(&["--against", "HEAD", "--callgrind", "--config", "examples/default.yaml", "--dry-run", "--json"]);
    assert_eq!(plan["callgrind"]["scaled_to_2_percent"], false);
    assert!(!plan["command"].to_string().contains("--set"), "{}", plan["command"]);

    // --full counts scale.yaml at its own size; it means nothing without --callgrind.
    refused(&["--against", "HEAD", "--full"], "goes with --callgrind");
    let plan = dry_plan(&["--against", "HEAD", "--callgrind", "--full", "--dry-run", "--json"]);
    assert_eq!(plan["callgrind"]["scaled_to_2_percent"], false);
    assert!(!plan["command"].to_string().contains("--set"), "scale.yaml runs as written: {}", plan["command"]);
}

#[test]
fn a_revision_that_is_not_a_commit_is_refused_by_name() {
    if head().is_none() {
        return; // outside a git checkout every --against fails, as the dry-run test checks
    }
    refused(&["--against", "no-such-revision-anywhere", "--dry-run"], "'no-such-revision-anywhere' is not a commit");
}

#[test]
fn a_missing_config_is_refused_by_name() {
    let o = bench_scale(&["--against", "HEAD", "--config", "examples/no-such.yaml", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("examples/no-such.yaml") || err.contains("not a git checkout"), "{err}");
}

#[test]
fn bad_arguments_are_usage_errors_that_say_what_is_valid() {
    refused(&["--against", "HEAD", "--rounds", "0"], "--rounds must be at least 1");
    refused(&["3", "--against", "HEAD"], "with --against use --rounds N");
    refused(&["--json"], "go with --against REV");
    refused(&["--rounds", "x"], "invalid int value");
}
