//! Ray 2.60's default Grafana dashboard as the installed Ray package builds it: every
//! panel query, read at test time through the venv's python (never copied into this
//! repository, so a Ray upgrade that adds or renames a panel shows up in the tests), and
//! its template variables at their "All" values. The TPU row is left out (rayscope models
//! no TPUs).

#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// Prints `[{"row", "title", "expr"}]` for every target of Ray's default dashboard.
const PANELS_PY: &str = r#"
import json
from ray.dashboard.modules.metrics.grafana_dashboard_factory import generate_default_grafana_dashboard
content, _uid = generate_default_grafana_dashboard()
dashboard = json.loads(content)
variables = {v["name"]: v for v in dashboard["templating"]["list"]}
out = []
def walk(panels, row):
    for p in panels:
        if p.get("type") == "row":
            walk(p.get("panels", []), p.get("title", ""))
            continue
        for t in p.get("targets", []):
            if t.get("expr"):
                out.append({"row": row, "title": p.get("title", ""), "expr": t["expr"]})
walk(dashboard["panels"], "")
node_types = variables.get("RayNodeType", {}).get("query", "")
print(json.dumps({"targets": out, "ray_node_types": [o.strip() for o in node_types.split(",") if o.strip()]}))
"#;

/// (row, title, expr) of every non-TPU target, and the `RayNodeType` options.
pub fn ray_default_panels(python: &Path) -> (Vec<(String, String, String)>, Vec<String>) {
    let out = Command::new(python).args(["-c", PANELS_PY]).output().expect("Ray's python runs");
    assert!(out.status.success(), "reading Ray's dashboard failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let panels: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the panel list is JSON");
    let node_types: Vec<String> =
        panels["ray_node_types"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
    assert!(!node_types.is_empty(), "RayNodeType has options in Ray's dashboard");
    let targets: Vec<(String, String, String)> = panels["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (t["row"].as_str().unwrap().into(), t["title"].as_str().unwrap().into(), t["expr"].as_str().unwrap().into())
        })
        .filter(|(row, _, _): &(String, String, String)| !row.contains("TPU"))
        .collect();
    assert!(targets.len() >= 60, "Ray's default dashboard has its panels ({} non-TPU queries)", targets.len());
    assert!(targets.iter().all(|(_, _, e)| !e.contains("ray_tpu_")), "only the TPU row queries TPU metrics");
    (targets, node_types)
}

/// A query with the dashboard's variables at "All" as Grafana sends them: `$SessionName`
/// and `$Instance` `.+`, `$Cluster` `.*`, the multi-valued `$RayNodeType` as an alternation.
pub fn with_all_values(expr: &str, node_types: &[String]) -> String {
    expr.replace("$SessionName", ".+")
        .replace("$Instance", ".+")
        .replace("$Cluster", ".*")
        .replace("$RayNodeType", &format!("({})", node_types.join("|")))
}
