//! `scripts/build-pgo`, the profile-guided release build: its checks of the tools and
//! its plan. The build itself (two release builds, minutes each) is run by hand and by
//! `scripts/bench-scale --pgo`; these keep its front door and its training runs working.
//!
//! Needs python3 (scripts/test installs it) and rustc.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn build_pgo(args: &[&str], profdata: Option<&Path>) -> Output {
    let mut c = Command::new("python3");
    c.arg(repo().join("scripts/build-pgo")).args(args).current_dir(repo());
    match profdata {
        Some(p) => c.env("LLVM_PROFDATA", p),
        None => c.env_remove("LLVM_PROFDATA"),
    };
    c.output().expect("python3 runs scripts/build-pgo")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn rustc_llvm_major() -> u32 {
    let o = Command::new("rustc").arg("-vV").output().expect("rustc runs");
    let v = text(&o.stdout);
    let line = v.lines().find_map(|l| l.strip_prefix("LLVM version: ")).expect("rustc -vV names its LLVM");
    line.split('.').next().unwrap().parse().unwrap()
}

/// A stand-in llvm-profdata that only answers `--version` as LLVM `major` does.
fn fake_profdata(dir: &Path, major: u32) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(format!("llvm-profdata-{major}"));
    std::fs::write(&path, format!("#!/bin/sh\necho 'LLVM (http://llvm.org/):'\necho '  LLVM version {major}.1.0'\n"))
        .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn help_says_what_it_needs_and_where_it_builds() {
    let o = build_pgo(&["--help"], None);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let help = text(&o.stdout);
    for needle in ["rustup component add llvm-tools", "LLVM_PROFDATA", "target/pgo", "--dry-run", "bench-scale --pgo"] {
        assert!(help.contains(needle), "--help does not mention {needle}:\n{help}");
    }
}

#[test]
fn a_profdata_that_is_missing_or_of_another_llvm_is_refused_before_building() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-llvm-profdata");
    let o = build_pgo(&["--dry-run"], Some(&missing));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("no-such-llvm-profdata: no such program"), "{}", text(&o.stderr));

    let other = rustc_llvm_major() - 8;
    let o = build_pgo(&["--dry-run"], Some(&fake_profdata(dir.path(), other)));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains(&format!("is LLVM {other}, rustc is LLVM {}", rustc_llvm_major())), "{err}");
}

/// The plan trains on every shipped example and a served, scraped cluster, and each
/// training run is a real command: `--train-with` runs them all with this build's binary.
/// A CLI change that breaks one fails here, not in someone's PGO build.
#[test]
fn the_plan_trains_on_the_shipped_examples_and_every_training_run_works() {
    let dir = tempfile::tempdir().unwrap();
    let o = build_pgo(&["--dry-run", "--json"], Some(&fake_profdata(dir.path(), rustc_llvm_major())));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).expect("--dry-run --json prints JSON");
    assert_eq!(Path::new(plan["optimized"]["binary"].as_str().unwrap()), repo().join("target/pgo/release/rayscope"));
    assert!(plan["instrumented"]["rustflags"].as_str().unwrap().contains("-Cprofile-generate="));
    assert!(plan["optimized"]["rustflags"].as_str().unwrap().contains("-Cprofile-use="));
    let all = plan["training"].as_array().unwrap().iter().map(|r| r["argv"].to_string()).collect::<Vec<_>>().join(" ");
    for example in ["scale.yaml", "default.yaml", "faults.yaml", "flow-insight.yaml", "--openmetrics", "\"flow\""] {
        assert!(all.contains(example), "no training run uses {example}: {all}");
    }
    assert_eq!(plan["served"]["argv"][1], "serve");
    assert!(plan["served"]["scrapes"].as_u64().unwrap() > 0);

    let o = build_pgo(&["--train-with", env!("CARGO_BIN_EXE_rayscope")], None);
    assert!(o.status.success(), "a training run failed: {}", text(&o.stderr));
    let said = text(&o.stderr);
    assert!(said.contains("trained on scale.yaml at 2 %") && said.contains("trained on a server"), "{said}");

    let o = build_pgo(&["--train-with", "/no/such/rayscope"], None);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("--train-with /no/such/rayscope: not an executable file"));
}
