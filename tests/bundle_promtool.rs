//! The bundle's Prometheus and Alertmanager configs pass the real tools' own checks:
//! `promtool check config` / `check rules` / `test rules` and `amtool check-config`,
//! every alert has a unit test that makes it fire and one where it stays quiet, every
//! recording rule has a unit test, and Alertmanager routes and inhibits as documented.
//!
//! Needs promtool (Debian package `prometheus`) and amtool (`prometheus-alertmanager`).
//! Without them the tests are skipped, unless RAYSCOPE_REQUIRE_TOOLS is set.

mod bundle_support;

use bundle_support::*;
use serde_yaml::Value;
use std::collections::BTreeSet;
use std::process::Command;

fn yaml(path: &std::path::Path) -> Value {
    serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn files(dir: &str) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(repo().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml"))
        .collect();
    v.sort();
    v
}

/// (alert names, recording rule names) over every rule file.
fn rules() -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut alerts, mut records) = (BTreeSet::new(), BTreeSet::new());
    for f in files("prometheus/rules") {
        for g in yaml(&f)["groups"].as_sequence().unwrap() {
            for r in g["rules"].as_sequence().unwrap() {
                if let Some(a) = r["alert"].as_str() {
                    assert!(alerts.insert(a.to_string()), "alert {a} defined twice");
                } else {
                    records.insert(r["record"].as_str().unwrap().to_string());
                }
            }
        }
    }
    (alerts, records)
}

#[test]
fn promtool_accepts_the_config_and_rules_and_every_unit_test_passes() {
    let Some(promtool) = tool("promtool", "prometheus") else { return };
    // The config names /etc/prometheus/rules as mounted in the compose stack; check a
    // copy pointing at the repository's rules instead, changing nothing else.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(repo().join("prometheus/prometheus.yml")).unwrap();
    let local = text.replace("/etc/prometheus/rules/", &format!("{}/", repo().join("prometheus/rules").display()));
    assert_ne!(local, text, "prometheus.yml loads its rules from /etc/prometheus/rules/");
    std::fs::write(dir.path().join("prometheus.yml"), local).unwrap();
    let (ok, out) = run(Command::new(&promtool).args(["check", "config"]).arg(dir.path().join("prometheus.yml")));
    assert!(ok, "promtool check config:\n{out}");
    assert!(out.contains("SUCCESS"), "{out}");

    let (ok, out) = run(Command::new(&promtool).args(["check", "rules"]).args(files("prometheus/rules")));
    assert!(ok, "promtool check rules:\n{out}");

    let (ok, out) = run(Command::new(&promtool).args(["test", "rules"]).args(files("prometheus/tests")));
    assert!(ok, "promtool test rules:\n{out}");
    assert!(!out.contains("FAILED"), "{out}");
}

#[test]
fn every_alert_is_tested_firing_and_quiet_and_every_record_is_tested() {
    let (alerts, records) = rules();
    let (mut fires, mut quiet, mut recorded) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    for f in files("prometheus/tests") {
        for t in yaml(&f)["tests"].as_sequence().unwrap() {
            for a in t["alert_rule_test"].as_sequence().into_iter().flatten() {
                let name = a["alertname"].as_str().unwrap().to_string();
                let expected = a["exp_alerts"].as_sequence().unwrap();
                if expected.is_empty() {
                    quiet.insert(name.clone());
                } else {
                    fires.insert(name.clone());
                    // A test that fires for one series and not for its healthy sibling also
                    // proves quiet; count it when the inputs hold more series than fire.
                    let inputs = t["input_series"].as_sequence().map_or(0, |s| s.len());
                    if expected.len() < inputs && name != "Watchdog" {
                        quiet.insert(name.clone());
                    }
                }
                for e in expected {
                    let ann = &e["exp_annotations"];
                    for key in ["summary", "description", "runbook_url"] {
                        assert!(
                            ann[key].as_str().is_some_and(|s| !s.is_empty()),
                            "{}: {name} expects no {key}",
                            f.display()
                        );
                    }
                    assert!(
                        e["exp_labels"]["severity"].as_str().is_some(),
                        "{}: {name} expects no severity",
                        f.display()
                    );
                }
            }
            for e in t["promql_expr_test"].as_sequence().into_iter().flatten() {
                recorded.insert(e["expr"].as_str().unwrap().to_string());
            }
        }
    }
    let untested: Vec<_> = alerts.iter().filter(|a| !fires.contains(*a)).collect();
    assert!(untested.is_empty(), "alerts no test makes fire: {untested:?}");
    let unquiet: Vec<_> = alerts.iter().filter(|a| !quiet.contains(*a) && *a != "Watchdog").collect();
    assert!(unquiet.is_empty(), "alerts no test shows quiet on healthy input: {unquiet:?}");
    let unrecorded: Vec<_> = records.iter().filter(|r| !recorded.contains(*r)).collect();
    assert!(unrecorded.is_empty(), "recording rules without a promql_expr_test: {unrecorded:?}");
}

/// The base every shipped rule's runbook_url starts with.
const RUNBOOKS_BASE: &str = "http://localhost:8080/runbooks";

/// Alerts without `for:`, each because its condition cannot flicker: an event counted
/// over a window (it holds for the window), or a latched state.
const NO_FOR: &[&str] = &[
    "RayNodeDown",         // series gone AND a GCS-counted failure; latched while the node stays away
    "RayObjectSpilling",   // spill requests over 5 m
    "RayWorkersOomKilled", // OOM kills over 5 m
    "RayActorRestartLoop", // restarts sampled over 15 m
    "Watchdog",            // always firing
];

#[test]
fn every_alert_whose_condition_can_flicker_has_a_for() {
    for f in files("prometheus/rules") {
        for g in yaml(&f)["groups"].as_sequence().unwrap() {
            for r in g["rules"].as_sequence().unwrap() {
                let Some(name) = r["alert"].as_str() else { continue };
                if NO_FOR.contains(&name) {
                    assert!(r["for"].is_null(), "{name} is listed as needing no for: but has one");
                } else {
                    assert!(r["for"].as_str().is_some(), "{name}: no for:, and not listed in NO_FOR with a reason");
                }
            }
        }
    }
}

#[test]
fn set_runbooks_url_rewrites_every_link_and_the_unit_tests_still_pass() {
    let Some(promtool) = tool("promtool", "prometheus") else { return };
    let dir = tempfile::tempdir().unwrap();
    let copy = |sub: &str| -> Vec<std::path::PathBuf> {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        let to = |f: &std::path::PathBuf| dir.path().join(sub).join(f.file_name().unwrap());
        files(sub).iter().map(|f| std::fs::copy(f, to(f)).map(|_| to(f)).unwrap()).collect()
    };
    let (rules, tests) = (copy("prometheus/rules"), copy("prometheus/tests"));
    std::fs::create_dir_all(dir.path().join("scripts")).unwrap();
    let script = dir.path().join("scripts/set-runbooks-url");
    std::fs::copy(repo().join("scripts/set-runbooks-url"), &script).unwrap();

    let (ok, out) = run(Command::new(&script).arg("no-scheme.example/runbooks"));
    assert!(!ok && out.contains("absolute"), "{out}");
    let (ok, out) = run(Command::new(&script).arg("https://oncall.example.com/ray/runbooks"));
    assert!(ok, "{out}");
    let text: String = rules.iter().map(|f| std::fs::read_to_string(f).unwrap()).collect();
    let links: Vec<&str> = text.lines().filter(|l| l.contains("runbook_url:")).collect();
    assert!(links.len() > 10 && links.iter().all(|l| !l.contains(RUNBOOKS_BASE)), "a link kept the old base");
    assert!(text.contains("runbook_url: \"https://oncall.example.com/ray/runbooks#raynodedown\""));
    let (ok, out) = run(Command::new(&promtool).args(["test", "rules"]).args(&tests));
    assert!(ok, "promtool test rules after set-runbooks-url:\n{out}");
}

#[test]
fn every_alert_has_severity_summary_description_and_a_runbook_section() {
    let runbooks = std::fs::read_to_string(repo().join("docs/runbooks.md")).unwrap();
    // GitHub's anchors: a heading's text, lower-cased, spaces to dashes.
    let anchors: BTreeSet<String> = runbooks
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(|h| h.trim().to_lowercase().replace(' ', "-"))
        .collect();
    for f in files("prometheus/rules") {
        for g in yaml(&f)["groups"].as_sequence().unwrap() {
            for r in g["rules"].as_sequence().unwrap() {
                let Some(name) = r["alert"].as_str() else { continue };
                let sev = r["labels"]["severity"].as_str().unwrap_or_else(|| panic!("{name}: no severity"));
                assert!(["critical", "warning", "none"].contains(&sev), "{name}: severity {sev}");
                for key in ["summary", "description"] {
                    assert!(r["annotations"][key].as_str().is_some_and(|s| s.len() > 10), "{name}: no {key}");
                }
                let url = r["annotations"]["runbook_url"].as_str().unwrap_or_else(|| panic!("{name}: no runbook_url"));
                // Absolute, so it opens from Alertmanager, Slack or Grafana: rayscope's
                // /runbooks at the default base (scripts/set-runbooks-url changes it).
                let anchor = url.strip_prefix(RUNBOOKS_BASE).and_then(|u| u.strip_prefix('#'));
                let anchor = anchor.unwrap_or_else(|| panic!("{name}: {url} is not {RUNBOOKS_BASE}#<anchor>"));
                assert_eq!(anchor, name.to_lowercase(), "{name}: the runbook anchor is the alert's name");
                assert!(anchors.contains(anchor), "{name}: docs/runbooks.md has no section {anchor}");
            }
        }
    }
}

#[test]
fn amtool_accepts_the_alertmanager_config_and_routes_as_documented() {
    let Some(amtool) = tool("amtool", "prometheus-alertmanager") else { return };
    let cfg = repo().join("alertmanager/alertmanager.yml");
    let (ok, out) = run(Command::new(&amtool).arg("check-config").arg(&cfg));
    assert!(ok, "amtool check-config:\n{out}");
    let route = |labels: &[&str]| {
        let (ok, out) =
            run(Command::new(&amtool).args(["config", "routes", "test", "--config.file"]).arg(&cfg).args(labels));
        assert!(ok, "amtool config routes test {labels:?}:\n{out}");
        out.lines().find(|l| !l.starts_with("Warning")).unwrap_or("").trim().to_string()
    };
    assert_eq!(route(&["alertname=Watchdog", "severity=none"]), "null");
    assert_eq!(route(&["alertname=RayNodeDown", "severity=critical", "ip=10.0.1.2"]), "rayscope");
    assert_eq!(route(&["alertname=RayNodeHighCpu", "severity=warning"]), "rayscope");

    // Critical alerts wait less before their first notification than warnings.
    let am = yaml(&cfg);
    let wait = |sev: &str| {
        am["route"]["routes"]
            .as_sequence()
            .unwrap()
            .iter()
            .find(|r| r["matchers"][0].as_str() == Some(&format!("severity=\"{sev}\"")))
            .and_then(|r| r["group_wait"].as_str())
            .map(|s| rayscope::config::units::parse_duration(s).unwrap().as_micros())
            .unwrap_or_else(|| panic!("no {sev} route with a group_wait"))
    };
    assert!(wait("critical") < wait("warning"));
    let group_by: Vec<_> = am["route"]["group_by"].as_sequence().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(group_by, ["alertname", "SessionName"]);
}
