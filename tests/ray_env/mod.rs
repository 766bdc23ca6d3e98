//! Where the tests find Ray 2.60 (the venv scripts/test installs, its `ray` named by
//! `RAYSCOPE_RAY_CLI`), and what a test does when Ray is not there: skips, saying why;
//! under `RAYSCOPE_REQUIRE_TOOLS` it fails instead, unless `RAYSCOPE_SKIP_RAY_CLI` says
//! why Ray could not be installed (scripts/test sets it when pip fails).
#![allow(dead_code)]

use std::path::PathBuf;

/// Ray's `ray` executable, or `None` after a skip message.
pub fn ray_cli() -> Option<String> {
    let cli = std::env::var("RAYSCOPE_RAY_CLI").ok().filter(|c| PathBuf::from(c).exists());
    if cli.is_none() {
        missing("Ray's CLI");
    }
    cli
}

/// The Python of Ray's venv (beside its `ray`), or `None` after a skip message.
pub fn ray_python() -> Option<PathBuf> {
    let python = std::env::var("RAYSCOPE_RAY_CLI")
        .ok()
        .map(|cli| PathBuf::from(cli).with_file_name("python"))
        .filter(|p| p.exists());
    if python.is_none() {
        missing("Ray's Python package");
    }
    python
}

fn missing(what: &str) {
    let why = std::env::var("RAYSCOPE_SKIP_RAY_CLI").ok();
    if std::env::var_os("RAYSCOPE_REQUIRE_TOOLS").is_some() && why.is_none() {
        panic!(
            "{what} is required (RAYSCOPE_REQUIRE_TOOLS is set) but RAYSCOPE_RAY_CLI does not name the `ray` of a \
             venv; run scripts/test"
        );
    }
    let why = why.unwrap_or_else(|| "RAYSCOPE_RAY_CLI is unset or names no file".into());
    eprintln!("skipping: {what} is not available ({why})");
}

/// The Python of the oldest supported Ray's venv (2.49, its `ray` named by
/// `RAYSCOPE_RAY_OLDEST_CLI`), or `None` after a skip message; under
/// `RAYSCOPE_REQUIRE_TOOLS` it fails instead, unless `RAYSCOPE_SKIP_RAY_OLDEST` says why
/// that Ray could not be installed.
pub fn ray_oldest_python() -> Option<PathBuf> {
    let python = std::env::var("RAYSCOPE_RAY_OLDEST_CLI")
        .ok()
        .map(|cli| PathBuf::from(cli).with_file_name("python"))
        .filter(|p| p.exists());
    if python.is_none() {
        let why = std::env::var("RAYSCOPE_SKIP_RAY_OLDEST").ok();
        if std::env::var_os("RAYSCOPE_REQUIRE_TOOLS").is_some() && why.is_none() {
            panic!(
                "Ray 2.49 is required (RAYSCOPE_REQUIRE_TOOLS is set) but RAYSCOPE_RAY_OLDEST_CLI does not name the \
                 `ray` of a venv; run scripts/test"
            );
        }
        let why = why.unwrap_or_else(|| "RAYSCOPE_RAY_OLDEST_CLI is unset or names no file".into());
        eprintln!("skipping: Ray 2.49's Python package is not available ({why})");
    }
    python
}
