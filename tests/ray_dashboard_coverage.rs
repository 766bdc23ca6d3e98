//! docs/ray-dashboard-coverage.md maps every panel of Ray's default Grafana dashboard to
//! the bundle panel that covers it. This holds the page to both sides, so it cannot drift:
//! every bundle panel it names exists in grafana/dashboards/ (always checked), and every
//! panel of the default dashboard that the installed Ray generates is listed, under its
//! row (needs Ray: `RAYSCOPE_RAY_CLI` names the `ray` executable of a venv with
//! `ray[default]`, its `python` beside it; skipped without, unless `RAYSCOPE_REQUIRE_TOOLS`).

mod bundle_support;

use bundle_support::*;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Prints `[[row, title], ...]` for every panel of Ray's default dashboard. A collapsed
/// row holds its panels; an open row owns the panels that follow it.
const PANELS_PY: &str = r#"
import json
from ray.dashboard.modules.metrics.grafana_dashboard_factory import generate_default_grafana_dashboard
content, _uid = generate_default_grafana_dashboard()
out, row = [], ""
for p in json.loads(content)["panels"]:
    if p.get("type") == "row":
        row = p.get("title", "")
        out += [[row, q.get("title", "")] for q in p.get("panels", [])]
    else:
        out.append([row, p.get("title", "")])
print(json.dumps(out))
"#;

/// One row of the page's table: Ray row, Ray panel, bundle panels as (dashboard, title);
/// empty for "none: why".
type DocRow = (String, String, Vec<(String, String)>);

/// The page's table.
fn doc_rows() -> Vec<DocRow> {
    let text = std::fs::read_to_string(repo().join("docs/ray-dashboard-coverage.md")).unwrap();
    let mut rows = Vec::new();
    for line in text.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| Ray row")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 3, "three cells: {line}");
        let covered = if cells[2].starts_with("none: ") {
            Vec::new()
        } else {
            cells[2]
                .split("; ")
                .map(|c| {
                    let (d, p) = c.split_once(" / ").unwrap_or_else(|| panic!("`Dashboard / Panel`: {c}"));
                    (d.to_string(), p.to_string())
                })
                .collect()
        };
        rows.push((cells[0].to_string(), cells[1].to_string(), covered));
    }
    assert!(rows.len() > 30, "the table is parsed: {} rows", rows.len());
    rows
}

#[test]
fn every_bundle_panel_the_page_names_exists() {
    let mut exists = BTreeSet::new();
    for (_, d) in dashboards() {
        let dashboard = d["title"].as_str().unwrap().trim_start_matches("Ray / ").to_string();
        for p in panels(&d) {
            exists.insert((dashboard.clone(), p["title"].as_str().unwrap().to_string()));
        }
    }
    for (row, panel, covered) in doc_rows() {
        for c in &covered {
            assert!(exists.contains(c), "docs/ray-dashboard-coverage.md: {row} / {panel}: no bundle panel {c:?}");
        }
        // Only what rayscope cannot model goes uncovered.
        assert!(!covered.is_empty() || row.starts_with("TPU"), "{row} / {panel}: no bundle panel");
    }
}

#[test]
fn the_page_lists_every_panel_of_rays_default_dashboard() {
    let Some(python) = ray_python() else { return };
    let (ok, out) = run(Command::new(python).arg("-c").arg(PANELS_PY));
    assert!(ok, "Ray's dashboard factory:\n{out}");
    let json = out.lines().last().unwrap_or("");
    let ray: Vec<(String, String)> = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(ray.len() > 30, "Ray's default dashboard has its panels: {ray:?}");
    let listed: BTreeMap<String, String> = doc_rows().into_iter().map(|(row, panel, _)| (panel, row)).collect();
    for (row, title) in &ray {
        assert_eq!(
            listed.get(title),
            Some(row),
            "docs/ray-dashboard-coverage.md does not list Ray's panel {row} / {title}"
        );
    }
    let ray_titles: BTreeSet<&String> = ray.iter().map(|(_, t)| t).collect();
    for panel in listed.keys() {
        assert!(
            ray_titles.contains(panel),
            "docs/ray-dashboard-coverage.md lists {panel:?}, which Ray's default dashboard no longer has"
        );
    }
}
