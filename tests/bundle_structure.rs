//! The bundle's files fit together: the compose file passes `docker-compose config`,
//! every path it mounts exists, its service names and ports are the ones the configs
//! name, images are pinned, config is read-only; the Dockerfile is multi-stage with a
//! non-root user and a readiness healthcheck; the dashboards are raw provisioning JSON
//! that follows the dashboard linter's rules (unique ids, a grid without overlaps,
//! units and descriptions, `${datasource}` everywhere, `$__rate_interval` in ranges,
//! nodes by `ip`/`NodeAddress` and never `instance`), and match their generator.
//!
//! `docker-compose` (Debian package, no engine needed) is required only for the
//! `config` check; python3 for the generator check.

mod bundle_support;

use bundle_support::*;
use serde_json::Value as Json;
use serde_yaml::Value as Yaml;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

fn compose() -> Yaml {
    serde_yaml::from_str(&std::fs::read_to_string(repo().join("docker-compose.yml")).unwrap()).unwrap()
}

fn yaml(rel: &str) -> Yaml {
    serde_yaml::from_str(&std::fs::read_to_string(repo().join(rel)).unwrap()).unwrap()
}

/// (host, port) of an `http://host:port/...` URL or a `host:port` target.
fn host_port(s: &str) -> (String, u16) {
    let s = s.split("://").last().unwrap();
    let authority = s.split('/').next().unwrap();
    let (h, p) = authority.rsplit_once(':').unwrap_or_else(|| panic!("no port in {s}"));
    (h.to_string(), p.parse().unwrap())
}

/// Container ports each service publishes.
fn published() -> BTreeMap<String, BTreeSet<u16>> {
    let c = compose();
    let mut out = BTreeMap::new();
    for (name, svc) in c["services"].as_mapping().unwrap() {
        let ports = svc["ports"].as_sequence().into_iter().flatten().map(|p| {
            let p = p.as_str().unwrap();
            assert!(p.starts_with("${BIND_ADDRESS:-127.0.0.1}:"), "{p}: ports are published on 127.0.0.1 by default");
            p.rsplit(':').next().unwrap().parse::<u16>().unwrap()
        });
        out.insert(name.as_str().unwrap().to_string(), ports.collect());
    }
    out
}

#[test]
fn docker_compose_accepts_the_file() {
    let Some(dc) = tool("docker-compose", "docker-compose") else { return };
    let (ok, out) = run(Command::new(dc).current_dir(repo()).args(["-f", "docker-compose.yml", "config", "-q"]));
    assert!(ok, "docker-compose config:\n{out}");
}

#[test]
fn compose_runs_the_four_services_on_their_ports_with_pinned_images() {
    let ports = published();
    let want: BTreeMap<String, BTreeSet<u16>> =
        [("rayscope", 8080), ("prometheus", 9090), ("alertmanager", 9093), ("grafana", 3000)]
            .into_iter()
            .map(|(s, p)| (s.to_string(), BTreeSet::from([p])))
            .collect();
    assert_eq!(ports, want);
    let c = compose();
    for (name, svc) in c["services"].as_mapping().unwrap() {
        if let Some(image) = svc["image"].as_str().filter(|_| svc["build"].is_null()) {
            let tag = image.rsplit_once(':').map(|(_, t)| t).unwrap_or("");
            assert!(
                tag != "latest" && tag.chars().any(|c| c.is_ascii_digit()),
                "{name:?}: image {image} is not pinned to a version"
            );
        }
    }
    let env = std::fs::read_to_string(repo().join(".env")).unwrap();
    assert!(
        env.lines().any(|l| l.starts_with("RAYSCOPE_TOKEN=") && l.len() > "RAYSCOPE_TOKEN=".len() + 8),
        ".env sets a default token"
    );
    assert!(env.lines().any(|l| l == "BIND_ADDRESS=127.0.0.1"), ".env binds to loopback by default");
    for svc in ["rayscope", "alertmanager"] {
        let tok = &c["services"][svc]["environment"]["RAYSCOPE_TOKEN"];
        assert!(
            tok.as_str().is_some_and(|t| t.starts_with("${RAYSCOPE_TOKEN")),
            "{svc} gets the token from the compose variable"
        );
    }
}

#[test]
fn every_mount_exists_config_is_read_only_and_data_is_in_named_volumes() {
    let c = compose();
    let volumes: BTreeSet<String> =
        c["volumes"].as_mapping().unwrap().keys().map(|k| k.as_str().unwrap().to_string()).collect();
    let mut targets = BTreeMap::new();
    for (name, svc) in c["services"].as_mapping().unwrap() {
        let name = name.as_str().unwrap();
        for v in svc["volumes"].as_sequence().into_iter().flatten() {
            let v = v.as_str().unwrap();
            let parts: Vec<&str> = v.split(':').collect();
            if let Some(rel) = parts[0].strip_prefix("./") {
                assert!(repo().join(rel).exists(), "{name}: {v}: {rel} does not exist in the repository");
                assert_eq!(parts.get(2), Some(&"ro"), "{name}: {v}: config is mounted read-only");
            } else {
                assert!(volumes.contains(parts[0]), "{name}: {v}: data lives in a declared named volume");
            }
            targets.insert((name.to_string(), parts[1].to_string()), parts[0].to_string());
        }
    }
    let mounted = |svc: &str, path: &str| {
        targets.keys().any(|(s, t)| s == svc && (path == t || path.starts_with(&format!("{t}/"))))
    };
    // The paths the configs name inside the containers are the ones mounted.
    let prom = yaml("prometheus/prometheus.yml");
    for f in prom["rule_files"].as_sequence().unwrap() {
        assert!(mounted("prometheus", f.as_str().unwrap()), "rule files {f:?} are not mounted");
    }
    assert!(mounted("prometheus", "/etc/prometheus/prometheus.yml"));
    let provider = yaml("grafana/provisioning/dashboards/rayscope.yml");
    let path = provider["providers"][0]["options"]["path"].as_str().unwrap();
    assert!(mounted("grafana", path), "the dashboards' provider path {path} is not mounted");
    assert!(mounted("grafana", "/etc/grafana/provisioning/datasources/prometheus.yml"));
    assert!(mounted("alertmanager", "/etc/alertmanager/alertmanager.yml"));
    let home = c["services"]["grafana"]["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"].as_str().unwrap();
    assert!(
        mounted("grafana", home) && repo().join("grafana/dashboards").join(home.rsplit('/').next().unwrap()).exists(),
        "{home}"
    );
    // Alertmanager reads the token from the file its entrypoint writes.
    let am = yaml("alertmanager/alertmanager.yml");
    let hook = am["receivers"].as_sequence().unwrap().iter().find(|r| r["name"] == "rayscope").unwrap();
    let file = hook["webhook_configs"][0]["http_config"]["authorization"]["credentials_file"].as_str().unwrap();
    let cmd = c["services"]["alertmanager"]["command"][0].as_str().unwrap();
    assert!(cmd.contains(&format!("> {file}")) && cmd.contains("$$RAYSCOPE_TOKEN"), "{cmd}");
    assert!(cmd.contains("--config.file=/etc/alertmanager/alertmanager.yml"), "{cmd}");
}

#[test]
fn service_names_and_ports_match_what_the_configs_name() {
    let ports = published();
    let reach = |what: &str, target: &str| {
        let (host, port) = host_port(target);
        assert!(
            ports.get(&host).is_some_and(|p| p.contains(&port)),
            "{what} names {host}:{port}, which compose does not run"
        );
    };
    let prom = yaml("prometheus/prometheus.yml");
    reach("prometheus.yml scrape", prom["scrape_configs"][0]["static_configs"][0]["targets"][0].as_str().unwrap());
    assert_eq!(prom["scrape_configs"][0]["honor_labels"].as_bool(), Some(true));
    reach(
        "prometheus.yml alerting",
        prom["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"][0].as_str().unwrap(),
    );
    let am = yaml("alertmanager/alertmanager.yml");
    let hook = am["receivers"].as_sequence().unwrap().iter().find(|r| r["name"] == "rayscope").unwrap();
    let url = hook["webhook_configs"][0]["url"].as_str().unwrap();
    reach("alertmanager.yml webhook", url);
    assert!(url.ends_with("/api/alerts"), "{url}");
    let ds = yaml("grafana/provisioning/datasources/prometheus.yml");
    reach("the Grafana datasource", ds["datasources"][0]["url"].as_str().unwrap());
    assert_eq!(ds["datasources"][0]["uid"].as_str(), Some("rayscope-prometheus"), "a fixed datasource uid");
    let c = compose();
    let rs_cmd: Vec<&str> =
        c["services"]["rayscope"]["command"].as_sequence().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let cfg = rs_cmd.last().unwrap().replace("${RAYSCOPE_EXAMPLE:-default.yaml}", "default.yaml");
    assert!(repo().join("examples").join(cfg.trim_start_matches("/etc/rayscope/examples/")).exists(), "{cfg}");
}

#[test]
fn the_dockerfile_is_multi_stage_non_root_and_checks_readiness() {
    let text = std::fs::read_to_string(repo().join("Dockerfile")).unwrap();
    let froms: Vec<&str> = text.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(froms.len(), 2, "a build stage and a runtime stage: {froms:?}");
    assert!(froms[0].contains(" AS build"), "{froms:?}");
    for f in &froms {
        let image = f.split_whitespace().nth(1).unwrap();
        assert!(image.contains(':') && !image.ends_with(":latest"), "{image} is not pinned");
    }
    assert!(text.contains("COPY --from=build"), "the runtime stage takes only the binary");
    let user = text.lines().find_map(|l| l.strip_prefix("USER ")).expect("a USER line");
    assert!(!user.starts_with("root") && !user.starts_with('0'), "runs as {user}");
    assert!(text.contains("HEALTHCHECK") && text.contains("/-/ready"), "a healthcheck on /-/ready");
    assert!(text.lines().any(|l| l.trim() == "EXPOSE 8080"));
    let ignore = std::fs::read_to_string(repo().join(".dockerignore")).unwrap();
    assert!(ignore.lines().any(|l| l.trim() == "target"), "the build context leaves out target/");
    // The runbooks are compiled in (src/api/runbooks.rs): the build stage needs the file.
    assert!(ignore.lines().any(|l| l.trim() == "!docs/runbooks.md"), "the build context keeps docs/runbooks.md");
    assert!(text.contains("COPY docs/runbooks.md docs/runbooks.md"), "the build stage copies docs/runbooks.md");
}

fn rects_overlap(a: &Json, b: &Json) -> bool {
    let r = |p: &Json| {
        (p["x"].as_i64().unwrap(), p["y"].as_i64().unwrap(), p["w"].as_i64().unwrap(), p["h"].as_i64().unwrap())
    };
    let (ax, ay, aw, ah) = r(a);
    let (bx, by, bw, bh) = r(b);
    ax < bx + bw && bx < ax + aw && ay < by + bh && by < ay + ah
}

#[test]
fn dashboards_are_raw_provisioning_json_that_follows_the_linters_rules() {
    let all = dashboards();
    let names: Vec<&str> = all.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        names,
        [
            "actors.json",
            "alerts.json",
            "cluster-overview.json",
            "flow.json",
            "jobs-and-tasks.json",
            "nodes.json",
            "object-store-and-memory.json",
            "scheduler-and-autoscaler.json"
        ]
    );
    let mut uids = BTreeSet::new();
    for (file, d) in &all {
        assert!(
            d.get("__inputs").is_none() && d.get("__requires").is_none(),
            "{file}: exported for sharing, not raw JSON"
        );
        assert!(d["uid"].as_str().is_some_and(|u| uids.insert(u.to_string())), "{file}: a unique uid");
        let vars = d["templating"]["list"].as_array().unwrap();
        let var = |n: &str| vars.iter().find(|v| v["name"] == n).unwrap_or_else(|| panic!("{file}: no {n} variable"));
        assert_eq!(var("datasource")["type"], "datasource");
        assert_eq!(var("datasource")["query"], "prometheus");
        for v in vars.iter().filter(|v| v["type"] == "query") {
            assert_eq!(v["datasource"]["uid"], "${datasource}", "{file}: {}", v["name"]);
            assert_eq!(v["includeAll"], true, "{file}: {}", v["name"]);
        }
        // Ray's own Cluster variable: on ray_io_cluster, and "All" matches series without
        // the label (a plain Ray cluster, or rayscope, exports none).
        let cluster = var("Cluster");
        assert!(cluster["query"].as_str().is_some_and(|q| q.ends_with(", ray_io_cluster)")), "{file}: {cluster}");
        assert_eq!(cluster["allValue"], ".*", "{file}: Cluster's All must match an absent label");
        var("SessionName");
        let has_node = vars.iter().any(|v| v["name"] == "node");
        assert!(
            d["links"].as_array().unwrap().iter().any(|l| l["url"] == "${rayscope}/")
                && d["links"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|l| l["url"].as_str().is_some_and(|u| u.contains("/api/v0/"))),
            "{file}: links to rayscope's landing page and State API"
        );
        assert!(
            d["links"].as_array().unwrap().iter().any(|l| l["url"] == "${rayscope}/flow"),
            "{file}: links to Flow Insight"
        );

        let panels = panels(d);
        let mut ids = BTreeSet::new();
        for (i, p) in panels.iter().enumerate() {
            let title = p["title"].as_str().unwrap_or("");
            assert!(p["id"].as_i64().is_some_and(|id| ids.insert(id)), "{file}: {title}: a unique panel id");
            let g = &p["gridPos"];
            assert!(g["x"].as_i64().unwrap() + g["w"].as_i64().unwrap() <= 24, "{file}: {title}: wider than the grid");
            for q in &panels[..i] {
                assert!(!rects_overlap(g, &q["gridPos"]), "{file}: {title} overlaps {}", q["title"]);
            }
            if p["type"] == "row" {
                continue;
            }
            assert!(p["description"].as_str().is_some_and(|s| s.len() > 20), "{file}: {title}: no description");
            assert!(
                p["fieldConfig"]["defaults"]["unit"].as_str().is_some_and(|u| !u.is_empty()),
                "{file}: {title}: no unit"
            );
            if p["type"] == "alertlist" {
                continue; // reads Prometheus' rules API, no queries (alert_list_shows_summaries_and_runbooks)
            }
            if p["datasource"]["type"] == "yesoreyeram-infinity-datasource" {
                // Alertmanager's API (the_alerts_dashboard_lists_alerts_with_summaries_and_runbooks).
                assert_eq!(p["datasource"]["uid"], "${alertmanager}", "{file}: {title}: the alertmanager variable");
                assert_eq!(var("alertmanager")["query"], "yesoreyeram-infinity-datasource", "{file}");
                continue;
            }
            assert_eq!(p["datasource"]["uid"], "${datasource}", "{file}: {title}: panel datasource");
            let targets = p["targets"].as_array().unwrap();
            assert!(!targets.is_empty(), "{file}: {title}: no query");
            for t in targets {
                assert_eq!(t["datasource"]["uid"], "${datasource}", "{file}: {title}: target datasource");
                let expr = t["expr"].as_str().unwrap();
                for bad in ["instance=", "instance!", "by (instance", "$__interval]", "[1m]", "[5m]"] {
                    assert!(!expr.contains(bad), "{file}: {title}: {expr} uses {bad}");
                }
                // Range selectors: $__rate_interval for rates; $__range (evaluated `@ end()`)
                // to pick a top-k set for the whole graph; 5 m where a panel shows an
                // alert's own 5 m window.
                let mut rest = expr;
                while let Some(i) = rest.find('[') {
                    let sel = &rest[i..];
                    let ok = sel.starts_with("[$__rate_interval]")
                        || ((sel.starts_with("[$__range]") || sel.starts_with("[$__range:]"))
                            && sel.contains(" @ end()"))
                        || sel.starts_with("[5m:]");
                    assert!(ok, "{file}: {title}: {expr}");
                    rest = &rest[i + 1..];
                }
                // Where a dashboard has a node variable, series filter on it by Ray's labels.
                if expr.contains("ray_node_cpu_utilization{") && has_node {
                    assert!(expr.contains("ip=~\"$node\""), "{file}: {title}: {expr}");
                }
                if expr.contains("ray_object_store_used_memory{") && has_node {
                    assert!(expr.contains("NodeAddress=~\"$node\""), "{file}: {title}: {expr}");
                }
            }
        }
    }
}

#[test]
fn dashboards_match_their_generator() {
    let Some(python) = tool("python3", "python3") else { return };
    let dir = tempfile::tempdir().unwrap();
    let (ok, out) = run(Command::new(python).arg(repo().join("grafana/generate.py")).arg(dir.path()));
    assert!(ok, "grafana/generate.py:\n{out}");
    for (file, _) in dashboards() {
        let committed = std::fs::read_to_string(repo().join("grafana/dashboards").join(&file)).unwrap();
        let generated = std::fs::read_to_string(dir.path().join(&file)).unwrap_or_default();
        assert!(
            committed == generated,
            "grafana/dashboards/{file} differs from what grafana/generate.py writes: run it and commit"
        );
    }
}

/// Every expression of every panel, with its dashboard's file and the panel.
fn expressions(d: &Json) -> Vec<(&Json, String)> {
    let mut out = Vec::new();
    for p in panels(d) {
        // An alert list filters its alert instances by label matchers.
        if let Some(filter) = p["options"]["alertInstanceLabelFilter"].as_str() {
            out.push((p, filter.to_string()));
        }
        for t in p["targets"].as_array().into_iter().flatten() {
            // A PromQL expression, or an HTTP query (its URL and parameters, matchers included).
            let text = match t["expr"].as_str() {
                Some(expr) => expr.to_string(),
                None => format!("{} {}", t["url"].as_str().unwrap(), t["url_options"]["params"]),
            };
            out.push((p, text));
        }
    }
    out
}

#[test]
fn every_panel_honours_every_variable_of_its_dashboard() {
    for (file, d) in dashboards() {
        let names: Vec<String> = d["templating"]["list"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|v| v["type"] == "query")
            .map(|v| v["name"].as_str().unwrap().to_string())
            .collect();
        assert!(names.iter().any(|n| n == "Cluster") && names.iter().any(|n| n == "SessionName"), "{file}: {names:?}");
        for (p, expr) in expressions(&d) {
            for n in &names {
                assert!(
                    expr.contains(&format!("${n}")) || expr.contains(&format!("${{{n}}}")),
                    "{file}: {}: ignores the {n} variable (filter on it, or drop it from the dashboard): {expr}",
                    p["title"]
                );
            }
        }
    }
}

#[test]
fn alert_thresholds_are_drawn_on_the_panels_of_their_series() {
    let rules = yaml("prometheus/rules/ray-alerts.yml");
    let rule = |name: &str| -> String {
        let all = rules["groups"].as_sequence().unwrap().iter().flat_map(|g| g["rules"].as_sequence().unwrap().iter());
        let r = all.clone().find(|r| r["alert"] == name).unwrap_or_else(|| panic!("no alert {name}"));
        r["expr"].as_str().unwrap().to_string()
    };
    // The number of the rule's first `> number` (a minimum volume after it, `>= 20`, is
    // not the threshold): the value it fires above.
    let threshold = |alert: &str| -> f64 {
        let expr = rule(alert);
        let at = expr.match_indices('>').map(|(i, _)| i).find(|i| !expr[i + 1..].starts_with('='));
        let after = expr[at.unwrap_or_else(|| panic!("{alert}: no `>` in {expr}")) + 1..].trim_start();
        let number: String = after.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
        number.parse().unwrap_or_else(|_| panic!("{alert}: no number after its first `>`: {expr}"))
    };
    // (alert, what the panels' expressions show, their unit)
    let cases = [
        ("RayNodeHighCpu", "ray_node_cpu_utilization{", "percent"),
        ("RayNodeHighMemory", "session_ip:ray_node_mem:ratio{", "percentunit"),
        ("RayObjectStoreAlmostFull", "session_node:ray_object_store:ratio{", "percentunit"),
        ("RayTaskFailureRateHigh", "State=\"FAILED\"", "percentunit"),
        ("RayGpuMemoryHigh", "session_gpu:ray_node_gram:ratio{", "percentunit"),
        ("RaySchedulingLatencyHigh", "ray_scheduler_placement_time_ms_bucket{", "ms"),
    ];
    let all = dashboards();
    for (alert, series, unit) in cases {
        let value = threshold(alert);
        let mut drawn = 0;
        for (file, d) in &all {
            for p in panels(d).into_iter().filter(|p| p["type"] == "timeseries") {
                let defaults = &p["fieldConfig"]["defaults"];
                let exprs: Vec<&str> =
                    p["targets"].as_array().unwrap().iter().map(|t| t["expr"].as_str().unwrap()).collect();
                if defaults["unit"] != unit || !exprs.iter().any(|e| e.contains(series)) {
                    continue;
                }
                let line = defaults["thresholds"]["steps"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|s| s["value"].as_f64() == Some(value))
                    && ["line", "dashed", "line+area", "dashed+area"]
                        .iter()
                        .any(|m| defaults["custom"]["thresholdsStyle"]["mode"] == *m);
                // A graph of the alert's own series (per node, or the failure share) draws the line.
                let own = exprs.iter().any(|e| e.contains("topk(") || e.contains("[5m:]"));
                assert!(line || !own, "{file}: {}: no threshold line at {alert}'s {value}", p["title"]);
                drawn += line as usize;
            }
        }
        assert!(drawn > 0, "no panel draws {alert}'s threshold {value}");
    }
}

#[test]
fn panels_only_rayscope_can_fill_are_marked() {
    for (file, d) in dashboards() {
        for p in panels(&d).into_iter().filter(|p| p["type"] != "row") {
            let title = p["title"].as_str().unwrap();
            let own = p["targets"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|t| t["expr"].as_str().unwrap_or("").contains("rayscope_"));
            let marked = title.ends_with(" (rayscope only)");
            assert_eq!(own, marked, "{file}: {title}: rayscope_* series ⇔ the \" (rayscope only)\" suffix");
            assert_eq!(
                own,
                p["description"].as_str().unwrap().starts_with("rayscope only: "),
                "{file}: {title}: description mark"
            );
        }
    }
}

/// The static half of the 50-series rule (bundle_e2e measures the other half at scale):
/// a graph with a line per node, job or process picks a fixed top k.
#[test]
fn graphs_with_a_line_per_node_pick_a_top_k() {
    for (file, d) in dashboards() {
        for p in panels(&d).into_iter().filter(|p| p["type"] == "timeseries") {
            for t in p["targets"].as_array().unwrap() {
                let legend = t["legendFormat"].as_str().unwrap_or("");
                if ["{{ip}}", "{{NodeAddress}}", "{{JobId}}", "{{pid}}", "{{instance}}"]
                    .iter()
                    .any(|l| legend.contains(l))
                {
                    let expr = t["expr"].as_str().unwrap();
                    assert!(expr.contains(" @ end()))") && expr.contains("topk("), "{file}: {}: {expr}", p["title"]);
                }
            }
        }
    }
}

#[test]
fn the_alerts_dashboard_lists_alerts_with_summaries_and_runbooks() {
    let all = dashboards();
    let d = &all.iter().find(|(f, _)| f == "alerts.json").unwrap().1;
    let list = panels(d).into_iter().find(|p| p["type"] == "alertlist").expect("an alert list panel");
    let prom = yaml("grafana/provisioning/datasources/prometheus.yml");
    let prom = &prom["datasources"][0];
    // Grafana's alert list reads data-source managed rules (Prometheus' /api/v1/rules, with
    // their annotations) from the data source it names, by name.
    assert_eq!(
        list["options"]["datasource"].as_str(),
        prom["name"].as_str(),
        "the alert list reads the provisioned Prometheus"
    );
    assert_eq!(prom["jsonData"]["manageAlerts"].as_bool(), Some(true));
    assert_eq!(list["options"]["stateFilter"]["firing"], true);
    assert_eq!(list["options"]["showInstances"], true, "each firing instance, not only the rule");
    let am = yaml("grafana/provisioning/datasources/alertmanager.yml");
    let am = &am["datasources"][0];
    assert_eq!(am["type"].as_str(), Some("alertmanager"));
    assert_eq!(am["jsonData"]["implementation"].as_str(), Some("prometheus"));
    assert_eq!(prom["jsonData"]["alertmanagerUid"], am["uid"]);
    let (host, port) = host_port(am["url"].as_str().unwrap());
    assert!(
        published().get(&host).is_some_and(|p| p.contains(&port)),
        "the Alertmanager data source names {host}:{port}"
    );
    // The table of active alerts: Alertmanager's API through the provisioned Infinity data
    // source (the plugin installed, pinned), a column each for the summary and the runbook,
    // which links to it.
    let table = panels(d)
        .into_iter()
        .find(|p| p["datasource"]["uid"] == "${alertmanager}")
        .expect("a table of Alertmanager's alerts");
    assert_eq!(table["type"], "table");
    let t = &table["targets"][0];
    assert_eq!(t["url"], "/api/v2/alerts");
    let selectors: Vec<&str> =
        t["columns"].as_array().unwrap().iter().map(|c| c["selector"].as_str().unwrap()).collect();
    for want in ["labels.alertname", "labels.severity", "annotations.summary", "annotations.runbook_url"] {
        assert!(selectors.contains(&want), "the table shows {want}: {selectors:?}");
    }
    let runbook = t["columns"].as_array().unwrap().iter().find(|c| c["selector"] == "annotations.runbook_url").unwrap()
        ["text"]
        .clone();
    let linked = table["fieldConfig"]["overrides"].as_array().unwrap().iter().any(|o| {
        o["matcher"]["options"] == runbook
            && o["properties"][0]["id"] == "links"
            && o["properties"][0]["value"][0]["url"] == "${__value.raw}"
    });
    assert!(linked, "the runbook column links to the runbook");
    let api = yaml("grafana/provisioning/datasources/alertmanager-api.yml");
    let api = &api["datasources"][0];
    assert_eq!(api["type"], "yesoreyeram-infinity-datasource");
    assert_eq!(api["url"], am["url"], "the Infinity data source reads the bundle's Alertmanager");
    assert_eq!(api["jsonData"]["allowedHosts"][0], am["url"]);
    let plugins =
        compose()["services"]["grafana"]["environment"]["GF_INSTALL_PLUGINS"].as_str().unwrap_or("").to_string();
    assert!(
        plugins
            .split(',')
            .any(|p| p.split_whitespace().collect::<Vec<_>>().first() == Some(&"yesoreyeram-infinity-datasource")
                && p.split_whitespace().count() == 2),
        "Grafana installs the Infinity plugin at a pinned version: {plugins:?}"
    );
    // Every rule the list shows carries what it links to.
    for f in std::fs::read_dir(repo().join("prometheus/rules")).unwrap() {
        let rules: Yaml = serde_yaml::from_str(&std::fs::read_to_string(f.unwrap().path()).unwrap()).unwrap();
        for r in rules["groups"].as_sequence().unwrap().iter().flat_map(|g| g["rules"].as_sequence().unwrap()) {
            if let Some(name) = r["alert"].as_str() {
                for a in ["summary", "runbook_url"] {
                    assert!(r["annotations"][a].as_str().is_some_and(|s| !s.is_empty()), "{name}: no {a} annotation");
                }
            }
        }
    }
}
