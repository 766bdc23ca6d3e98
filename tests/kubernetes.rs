//! deploy/kubernetes/: the kustomize base, its generated rules and dashboards, the
//! example RayCluster and the Alertmanager values, checked with no API server:
//!
//! * the generated files are what scripts/gen-kubernetes writes now, their groups and
//!   dashboards are prometheus/rules/ and grafana/dashboards/, and the groups taken
//!   out of the PrometheusRules pass `promtool check rules` and every unit test in
//!   prometheus/tests/;
//! * every object validates against Kubernetes' JSON schemas, strictly (PyPI
//!   `kubernetes-validate`, in target/k8s-validate), and prometheus-operator's objects
//!   against its published models' validators (npm `@kubernetes-models/prometheus-operator`,
//!   in target/k8s-crd-models); the RayCluster's pod templates against Kubernetes'
//!   PodTemplateSpec and its own fields against KubeRay's ray.io/v1 API (no registry
//!   reachable here ships KubeRay's CRD);
//! * rayscope's Deployment starts the real binary with its own arguments and turns
//!   ready; the PodMonitor scrapes ports the example's pods name; the example's nodes
//!   push to the Service with the settings docs/observe.md gives;
//! * amtool accepts the Alertmanager config and routes to a receiver that is not
//!   rayscope.
//!
//! scripts/test installs the validators; without them (or promtool, amtool, node) the
//! tests that need them are skipped, unless RAYSCOPE_REQUIRE_TOOLS is set.

mod bundle_support;

use bundle_support::*;
use serde_yaml::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const DIR: &str = "deploy/kubernetes";
/// Objects applied on their own, not through the kustomize base.
const OUTSIDE_BASE: &[&str] = &["raycluster-example.yaml", "alertmanager-values.yaml"];
/// Kubernetes versions the core objects must validate against: an old supported one and
/// the newest the schema package knows.
const KUBERNETES_VERSIONS: &[&str] = &["1.30", "1.37"];

fn text(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Every document of a multi-document YAML file (comment-only documents skipped).
fn docs_of(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .filter(|v: &Value| !v.is_null())
        .collect()
}

fn docs(file: &str) -> Vec<Value> {
    docs_of(&repo().join(DIR).join(file))
}

fn kustomization() -> Value {
    serde_yaml::from_str(&text(&format!("{DIR}/kustomization.yaml"))).unwrap()
}

/// The base's resource files, as kustomization.yaml lists them.
fn base_files() -> Vec<String> {
    kustomization()["resources"].as_sequence().unwrap().iter().map(|r| r.as_str().unwrap().to_string()).collect()
}

/// (file#index, object) of every object in the base.
fn base_objects() -> Vec<(String, Value)> {
    base_files()
        .iter()
        .flat_map(|f| docs(f).into_iter().enumerate().map(move |(i, d)| (format!("{f}#{i}"), d)))
        .collect()
}

fn one(kind: &str, name: &str) -> Value {
    let found: Vec<Value> = base_objects()
        .into_iter()
        .map(|(_, o)| o)
        .filter(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .collect();
    assert_eq!(found.len(), 1, "the base has one {kind} {name}");
    found.into_iter().next().unwrap()
}

fn sorted_files(dir: &str, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(repo().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

fn generate(out: &Path, extra: &[&str]) -> (bool, String) {
    run(Command::new("python3").arg(repo().join("scripts/gen-kubernetes")).arg("--out").arg(out).args(extra))
}

#[test]
fn the_generated_files_are_what_the_generator_writes_now() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, out) = generate(dir.path(), &[]);
    assert!(ok, "scripts/gen-kubernetes:\n{out}");
    for f in ["prometheus-rules.yaml", "grafana-dashboards.yaml"] {
        let fresh = std::fs::read_to_string(dir.path().join(f)).unwrap();
        assert!(fresh == text(&format!("{DIR}/{f}")), "{DIR}/{f} is stale: run scripts/gen-kubernetes");
    }
}

/// Each PrometheusRule by name, with its spec.groups.
fn prometheus_rules(objects: &[Value]) -> BTreeMap<String, Value> {
    objects
        .iter()
        .filter(|o| o["kind"] == "PrometheusRule")
        .map(|o| (o["metadata"]["name"].as_str().unwrap().to_string(), o["spec"]["groups"].clone()))
        .collect()
}

/// Where two YAML values first differ (a path of keys and indices), or `None`.
fn first_difference(a: &Value, b: &Value) -> Option<String> {
    match (a, b) {
        (Value::Mapping(x), Value::Mapping(y)) => {
            for (k, v) in x {
                let key = k.as_str().map_or_else(|| format!("{k:?}"), str::to_string);
                match y.get(k) {
                    None => return Some(format!("{key} (only in the first)")),
                    Some(w) => {
                        if let Some(d) = first_difference(v, w) {
                            return Some(format!("{key}.{d}"));
                        }
                    }
                }
            }
            y.keys().find(|k| !x.contains_key(*k)).map(|k| format!("{k:?} (only in the second)"))
        }
        (Value::Sequence(x), Value::Sequence(y)) => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                // Name the rule or group rather than its index where it has one.
                let at = ["alert", "record", "name"]
                    .iter()
                    .find_map(|k| v[*k].as_str())
                    .map_or(i.to_string(), str::to_string);
                if let Some(d) = first_difference(v, w) {
                    return Some(format!("[{at}].{d}"));
                }
            }
            (x.len() != y.len()).then(|| format!("length {} against {}", x.len(), y.len()))
        }
        _ => (a != b).then(|| format!(" {a:?} against {b:?}")),
    }
}

#[test]
fn the_prometheus_rules_are_the_rule_files_and_pass_promtool_and_its_unit_tests() {
    let rules = prometheus_rules(&docs("prometheus-rules.yaml"));
    let sources = sorted_files("prometheus/rules", "yml");
    assert_eq!(rules.len(), sources.len(), "one PrometheusRule per rule file: {:?}", rules.keys());
    for src in &sources {
        let name = src.file_stem().unwrap().to_str().unwrap();
        let want: Value = serde_yaml::from_str(&std::fs::read_to_string(src).unwrap()).unwrap();
        let got = rules.get(name).unwrap_or_else(|| panic!("no PrometheusRule {name} for {}", src.display()));
        assert!(got.as_sequence().is_some_and(|g| !g.is_empty()), "{name}: no groups");
        if let Some(diff) = first_difference(got, &want["groups"]) {
            panic!("PrometheusRule {name} differs from {} at {diff}: run scripts/gen-kubernetes", src.display());
        }
    }

    // The groups as Prometheus would load them from the PrometheusRules (the operator
    // writes spec as a rule file): promtool checks them and runs the bundle's unit tests
    // on them, which name ../rules/<file>.
    let Some(promtool) = tool("promtool", "prometheus") else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("rules")).unwrap();
    std::fs::create_dir_all(dir.path().join("tests")).unwrap();
    let mut files = Vec::new();
    for (name, groups) in &rules {
        let f = dir.path().join("rules").join(format!("{name}.yml"));
        let mut file = serde_yaml::Mapping::new();
        file.insert("groups".into(), groups.clone());
        std::fs::write(&f, serde_yaml::to_string(&file).unwrap()).unwrap();
        files.push(f);
    }
    let (ok, out) = run(Command::new(&promtool).args(["check", "rules"]).args(&files));
    assert!(ok && out.contains("SUCCESS"), "promtool check rules on the PrometheusRules' groups:\n{out}");
    let tests: Vec<PathBuf> = sorted_files("prometheus/tests", "yml")
        .iter()
        .map(|t| {
            let to = dir.path().join("tests").join(t.file_name().unwrap());
            std::fs::copy(t, &to).unwrap();
            to
        })
        .collect();
    assert!(tests.len() >= 7, "the unit tests: {tests:?}");
    let (ok, out) = run(Command::new(&promtool).args(["test", "rules"]).args(&tests));
    assert!(ok && !out.contains("FAILED"), "promtool test rules on the PrometheusRules' groups:\n{out}");
}

#[test]
fn the_runbook_base_is_a_generator_parameter_and_the_rule_files_stay_as_they_are() {
    let before: Vec<String> =
        sorted_files("prometheus/rules", "yml").iter().map(|f| std::fs::read_to_string(f).unwrap()).collect();
    let dir = tempfile::tempdir().unwrap();
    let (ok, out) = generate(dir.path(), &["--runbook-base", "no-scheme.example/runbooks"]);
    assert!(!ok && out.contains("absolute"), "{out}");
    let base = "https://oncall.example.com/ray/runbooks";
    let (ok, out) = generate(dir.path(), &["--runbook-base", base]);
    assert!(ok, "{out}");
    let shipped = prometheus_rules(&docs("prometheus-rules.yaml"));
    let moved = prometheus_rules(&docs_of(&dir.path().join("prometheus-rules.yaml")));
    let mut links = 0;
    for (name, groups) in &moved {
        let mut groups = groups.clone();
        for g in groups.as_sequence_mut().unwrap() {
            for r in g["rules"].as_sequence_mut().unwrap() {
                let Some(alert) = r["alert"].as_str().map(str::to_lowercase) else { continue };
                let url = r["annotations"]["runbook_url"].as_str().unwrap();
                assert_eq!(url, format!("{base}#{alert}"), "{name}: {alert}'s runbook link");
                // Otherwise the same rule as shipped.
                r["annotations"]["runbook_url"] = format!("http://localhost:8080/runbooks#{alert}").into();
                links += 1;
            }
        }
        assert_eq!(&groups, &shipped[name], "{name}: only the runbook links changed");
    }
    assert!(links > 10, "{links} links");
    let after: Vec<String> =
        sorted_files("prometheus/rules", "yml").iter().map(|f| std::fs::read_to_string(f).unwrap()).collect();
    assert_eq!(before, after, "the generator changed prometheus/rules/");
}

#[test]
fn the_dashboard_config_maps_are_grafana_dashboards_for_the_sidecar() {
    let maps = docs("grafana-dashboards.yaml");
    let dashboards = sorted_files("grafana/dashboards", "json");
    assert_eq!(maps.len(), dashboards.len(), "one ConfigMap per dashboard");
    let mut seen = BTreeSet::new();
    for m in &maps {
        let name = m["metadata"]["name"].as_str().unwrap();
        assert_eq!(m["kind"], "ConfigMap", "{name}");
        assert_eq!(m["metadata"]["labels"]["grafana_dashboard"].as_str(), Some("1"), "{name}: the sidecar's label");
        let data = m["data"].as_mapping().unwrap();
        assert_eq!(data.len(), 1, "{name}: one dashboard per ConfigMap");
        let (key, json) = data.iter().next().unwrap();
        let key = key.as_str().unwrap();
        let src = repo().join("grafana/dashboards").join(key);
        let want = std::fs::read_to_string(&src).unwrap_or_else(|e| panic!("{name}: {key}: {e}"));
        assert!(json.as_str() == Some(want.as_str()), "{name}'s {key} differs from {}", src.display());
        // `kubectl apply` (client side) keeps the whole object in an annotation of at
        // most 256 KiB.
        let size = serde_json::to_string(&serde_json::to_value(m).unwrap()).unwrap().len();
        assert!(size < 200 * 1024, "{name}: {size} bytes, too close to kubectl apply's 256 KiB");
        seen.insert(key.to_string());
    }
    let all: BTreeSet<String> =
        dashboards.iter().map(|d| d.file_name().unwrap().to_str().unwrap().to_string()).collect();
    assert_eq!(seen, all);
}

#[test]
fn the_kustomization_lists_every_manifest_of_the_base() {
    let listed: BTreeSet<String> = base_files().into_iter().collect();
    let present: BTreeSet<String> = sorted_files(DIR, "yaml")
        .iter()
        .map(|f| f.file_name().unwrap().to_str().unwrap().to_string())
        .filter(|f| f != "kustomization.yaml" && !OUTSIDE_BASE.contains(&f.as_str()))
        .collect();
    assert_eq!(listed, present, "kustomization.yaml's resources against the files in {DIR}");
    let k = kustomization();
    assert_eq!(k["namespace"].as_str(), Some("rayscope"));
    let ns = one("Namespace", "rayscope");
    assert_eq!(ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"].as_str(), Some("restricted"));
    let images = k["images"].as_sequence().unwrap();
    assert!(images.iter().any(|i| i["name"] == "rayscope"), "the image is set through kustomize");

    // Where kubectl is at hand, its kustomize builds the base too (none is installed
    // for the tests: no registry reachable here ships it).
    if let Some(kubectl) = which("kubectl") {
        let (ok, out) = run(Command::new(kubectl).arg("kustomize").arg(repo().join(DIR)));
        assert!(ok, "kubectl kustomize:\n{out}");
        let built: Vec<Value> = serde_yaml::Deserializer::from_str(&out)
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .collect::<Vec<Value>>();
        assert_eq!(built.len(), base_objects().len());
        for o in built.iter().filter(|o| o["kind"] != "Namespace") {
            assert_eq!(o["metadata"]["namespace"].as_str(), Some("rayscope"), "{:?}", o["metadata"]["name"]);
        }
    } else {
        eprintln!("kubectl not found: the kustomize build is not checked");
    }
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(name)).find(|p| p.is_file())
}

/// A validator installed by scripts/test under target/, or `None` (a panic when
/// RAYSCOPE_REQUIRE_TOOLS is set).
fn installed(rel: &str, what: &str) -> Option<PathBuf> {
    let p = repo().join(rel);
    if p.exists() {
        return Some(p);
    }
    if std::env::var_os("RAYSCOPE_REQUIRE_TOOLS").is_some() {
        panic!("{what} is required (RAYSCOPE_REQUIRE_TOOLS is set) but {} is missing; run scripts/test", p.display());
    }
    eprintln!("skipping: {what} is not installed ({} missing; scripts/test installs it)", p.display());
    None
}

/// Runs a validator with `input` on stdin; its stdout as JSON.
fn validate(cmd: &mut Command, input: &serde_json::Value) -> Vec<serde_json::Value> {
    use std::io::Write;
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(input.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{cmd:?}:\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice::<Vec<serde_json::Value>>(&out.stdout).unwrap()
}

fn errors(results: &[serde_json::Value]) -> BTreeMap<String, String> {
    results
        .iter()
        .filter_map(|r| {
            let at = format!("{} {}", r["where"].as_str().unwrap(), r["version"].as_str().unwrap_or(""));
            r["error"].as_str().map(|e| (at.trim().to_string(), e.to_string()))
        })
        .collect()
}

/// A Kubernetes PodTemplate wrapping a RayCluster's pod template, for the core schema.
fn pod_template(at: &str, template: &Value) -> (String, Value) {
    let mut wrapped: Value =
        serde_yaml::from_str("{apiVersion: v1, kind: PodTemplate, metadata: {name: ray}}").unwrap();
    wrapped["template"] = template.clone();
    (at.to_string(), wrapped)
}

fn raycluster() -> Value {
    let docs = docs("raycluster-example.yaml");
    assert_eq!(docs.len(), 1);
    docs.into_iter().next().unwrap()
}

#[test]
fn every_object_validates_against_the_kubernetes_and_crd_schemas() {
    let mut core: Vec<(String, Value)> = Vec::new();
    let mut monitoring: Vec<(String, Value)> = Vec::new();
    for (at, o) in base_objects() {
        let api = o["apiVersion"].as_str().unwrap_or_else(|| panic!("{at}: no apiVersion")).to_string();
        if api.starts_with("monitoring.coreos.com/") {
            monitoring.push((at, o));
        } else {
            assert!(!api.contains('.') || api.starts_with("apps/"), "{at}: {api} has no validator here");
            core.push((at, o));
        }
    }
    let kinds: BTreeSet<&str> = monitoring.iter().map(|(_, o)| o["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, BTreeSet::from(["PodMonitor", "PrometheusRule", "ServiceMonitor"]));

    // The RayCluster: KubeRay's fields here, its pod templates by Kubernetes' schema.
    let rc = raycluster();
    check_raycluster_fields(&rc);
    core.push(pod_template("raycluster-example.yaml head template", &rc["spec"]["headGroupSpec"]["template"]));
    for (i, g) in rc["spec"]["workerGroupSpecs"].as_sequence().unwrap().iter().enumerate() {
        core.push(pod_template(&format!("raycluster-example.yaml worker group {i} template"), &g["template"]));
    }

    // A broken copy of each kind of check must fail, or the validator proves nothing.
    let mut bad_deployment = one("Deployment", "rayscope");
    bad_deployment["spec"]["template"]["spec"]["containers"][0]["livenessprobe"] = Value::Null;
    core.push(("broken Deployment".into(), bad_deployment));
    let mut bad_monitor = one("PodMonitor", "ray");
    bad_monitor["spec"]["podMetricsEndpoints"][0]["port"] = 8080.into();
    monitoring.push(("broken PodMonitor".into(), bad_monitor));

    let as_json = |items: &[(String, Value)]| -> Vec<serde_json::Value> {
        items
            .iter()
            .map(|(at, o)| serde_json::json!({"where": at, "object": serde_json::to_value(o).unwrap()}))
            .collect()
    };

    if let Some(python) = installed("target/k8s-validate/bin/python", "kubernetes-validate (PyPI)") {
        let results = validate(
            Command::new(python).arg(repo().join("tests/kubernetes/validate.py")),
            &serde_json::json!({"versions": KUBERNETES_VERSIONS, "objects": as_json(&core)}),
        );
        assert_eq!(results.len(), core.len() * KUBERNETES_VERSIONS.len());
        let mut errs = errors(&results);
        let broken: Vec<_> =
            KUBERNETES_VERSIONS.iter().map(|v| errs.remove(&format!("broken Deployment {v}"))).collect();
        assert!(errs.is_empty(), "Kubernetes schema errors: {errs:#?}");
        for e in broken {
            assert!(e.expect("the broken Deployment passed").contains("livenessprobe"));
        }
    }

    if let Some(models) =
        installed("target/k8s-crd-models/node_modules", "@kubernetes-models/prometheus-operator (npm)")
    {
        let Some(node) = tool("node", "nodejs") else { return };
        let results = validate(
            Command::new(node).arg(repo().join("tests/kubernetes/validate-crds.mjs")).arg(models.parent().unwrap()),
            &serde_json::Value::from(as_json(&monitoring)),
        );
        assert_eq!(results.len(), monitoring.len());
        let mut errs = errors(&results);
        let broken = errs.remove("broken PodMonitor");
        assert!(errs.is_empty(), "prometheus-operator schema errors: {errs:#?}");
        assert!(broken.expect("the broken PodMonitor passed").contains("port"));
    }
}

/// The RayCluster's own fields against KubeRay's ray.io/v1 API reference: a misspelt
/// field would be pruned by the API server without a word.
fn check_raycluster_fields(rc: &Value) {
    fn keys(v: &Value) -> BTreeSet<&str> {
        v.as_mapping().unwrap().keys().map(|k| k.as_str().unwrap()).collect()
    }
    fn within(at: &str, v: &Value, allowed: &[&str]) {
        let extra: Vec<_> = keys(v).into_iter().filter(|k| !allowed.contains(k)).collect();
        assert!(extra.is_empty(), "raycluster-example.yaml {at}: fields KubeRay's v1 API does not have: {extra:?}");
    }
    assert_eq!(rc["apiVersion"], "ray.io/v1");
    assert_eq!(rc["kind"], "RayCluster");
    within(".", rc, &["apiVersion", "kind", "metadata", "spec"]);
    within(
        "spec",
        &rc["spec"],
        &[
            "authOptions",
            "autoscalerOptions",
            "enableInTreeAutoscaling",
            "gcsFaultToleranceOptions",
            "headGroupSpec",
            "headServiceAnnotations",
            "managedBy",
            "rayVersion",
            "suspend",
            "upgradeStrategy",
            "workerGroupSpecs",
        ],
    );
    within(
        "spec.headGroupSpec",
        &rc["spec"]["headGroupSpec"],
        &["enableIngress", "headService", "rayStartParams", "serviceType", "template"],
    );
    let groups = rc["spec"]["workerGroupSpecs"].as_sequence().unwrap();
    assert!(!groups.is_empty());
    for (i, g) in groups.iter().enumerate() {
        within(
            &format!("spec.workerGroupSpecs[{i}]"),
            g,
            &[
                "groupName",
                "idleTimeoutSeconds",
                "maxReplicas",
                "minReplicas",
                "numOfHosts",
                "rayStartParams",
                "replicas",
                "scaleStrategy",
                "suspend",
                "template",
            ],
        );
        assert!(g["groupName"].is_string(), "worker group {i}: groupName is required");
        let (min, max) = (g["minReplicas"].as_u64().unwrap_or(0), g["maxReplicas"].as_u64().unwrap());
        assert!(min <= g["replicas"].as_u64().unwrap_or(min) && g["replicas"].as_u64().unwrap_or(min) <= max);
    }
    for (at, params) in std::iter::once(("head", &rc["spec"]["headGroupSpec"]["rayStartParams"]))
        .chain(groups.iter().map(|g| ("worker", &g["rayStartParams"])))
    {
        // map[string]string
        for (k, v) in params.as_mapping().into_iter().flatten() {
            assert!(v.is_string(), "{at} rayStartParams.{k:?}: a string");
        }
    }
}

/// The Deployment's single container.
fn rayscope_container() -> Value {
    let d = one("Deployment", "rayscope");
    let containers = d["spec"]["template"]["spec"]["containers"].as_sequence().unwrap().clone();
    assert_eq!(containers.len(), 1);
    containers.into_iter().next().unwrap()
}

fn args() -> Vec<String> {
    rayscope_container()["args"].as_sequence().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect()
}

#[test]
fn rayscope_runs_non_root_read_only_with_probes_resources_and_its_trace_on_the_volume() {
    let d = one("Deployment", "rayscope");
    let pod = &d["spec"]["template"]["spec"];
    let c = rayscope_container();
    assert_eq!(pod["securityContext"]["runAsNonRoot"], Value::Bool(true));
    assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], Value::Bool(true));
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], Value::Bool(false));
    assert_eq!(d["spec"]["replicas"].as_u64(), Some(1));
    assert_eq!(d["spec"]["strategy"]["type"], "Recreate", "a ReadWriteOnce volume: the old pod goes first");
    // The Dockerfile's user, so the image's files and the volume (fsGroup) agree.
    let uid = text("Dockerfile")
        .lines()
        .find_map(|l| l.split("--uid ").nth(1))
        .map(|s| s.split(' ').next().unwrap().to_string());
    assert_eq!(pod["securityContext"]["runAsUser"].as_u64().map(|u| u.to_string()), uid);
    assert_eq!(pod["securityContext"]["fsGroup"], pod["securityContext"]["runAsUser"]);
    for (probe, path) in [("livenessProbe", "/-/healthy"), ("readinessProbe", "/-/ready")] {
        assert_eq!(c[probe]["httpGet"]["path"].as_str(), Some(path), "{probe}");
        assert_eq!(c[probe]["httpGet"]["port"], "http", "{probe}");
    }
    for kind in ["requests", "limits"] {
        for r in ["cpu", "memory"] {
            assert!(c["resources"][kind][r].is_string(), "resources.{kind}.{r}");
        }
    }
    assert_eq!(c["ports"][0]["name"], "http");

    // --record writes under the volume mount of the PersistentVolumeClaim.
    let args = args();
    assert_eq!(args[0], "observe");
    assert!(args.contains(&"--push-only".to_string()), "observe mode, receiving pushes: {args:?}");
    assert!(args.contains(&"--listen=0.0.0.0:8080".to_string()), "{args:?}");
    let record = args.iter().find_map(|a| a.strip_prefix("--record=")).expect("--record");
    let mount = c["volumeMounts"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|m| record.starts_with(m["mountPath"].as_str().unwrap()))
        .expect("--record is on a volume");
    let volume = pod["volumes"].as_sequence().unwrap().iter().find(|v| v["name"] == mount["name"]).unwrap();
    let claim = volume["persistentVolumeClaim"]["claimName"].as_str().expect("the trace volume is a claim");
    let pvc = one("PersistentVolumeClaim", claim);
    let size = pvc["spec"]["resources"]["requests"]["storage"].as_str().unwrap();
    let max = args.iter().find_map(|a| a.strip_prefix("--record-max-bytes=")).expect("--record-max-bytes");
    let gib = |s: &str| s.trim_end_matches("GiB").trim_end_matches("Gi").parse::<u64>().unwrap();
    assert!(gib(max) < gib(size), "the trace's bound {max} fits the claim's {size} with a segment to spare");

    let svc = one("Service", "rayscope");
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], "http");
    for (k, v) in svc["spec"]["selector"].as_mapping().unwrap() {
        assert_eq!(&d["spec"]["template"]["metadata"]["labels"][k.as_str().unwrap()], v, "the Service selects the pod");
    }
}

#[test]
fn the_deployments_arguments_start_rayscope_and_it_turns_ready() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    let addr = format!("127.0.0.1:{}", free_port());
    let args: Vec<String> = args()
        .into_iter()
        .map(|a| {
            if a.starts_with("--listen=") {
                format!("--listen={addr}")
            } else if a.starts_with("--record=") {
                format!("--record={}", trace.display())
            } else {
                a
            }
        })
        .collect();
    let mut rayscope = Proc::spawn(
        "rayscope observe",
        Command::new(env!("CARGO_BIN_EXE_rayscope")).args(&args),
        dir.path().join("rayscope.log"),
    );
    wait_for("rayscope observe ready", Duration::from_secs(30), || {
        rayscope.assert_alive();
        match http("GET", &addr, "/-/ready", &[], "") {
            (200, _) => Ok(()),
            (s, b) => Err(format!("{s} {b}")),
        }
    });
    assert_eq!(http("GET", &addr, "/-/healthy", &[], "").0, 200);
    // Ray's nodes post here (an empty batch is taken).
    let (status, body) = http("POST", &addr, "/api/observe/events", &[("Content-Type", "application/json")], "[]");
    assert_eq!(status, 200, "{body}");
    assert!(trace.is_dir(), "--record made its trace");
}

/// The three settings docs/observe.md gives for Ray's Event Export, with their values
/// (the address's host and port as there: RAYSCOPE:8080).
fn event_export_settings() -> BTreeMap<String, String> {
    let doc = text("docs/observe.md");
    let settings: BTreeMap<String, String> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("export RAY"))
        .map(|l| {
            let (k, v) = l.split_once('=').unwrap();
            (format!("RAY{k}"), v.split_whitespace().next().unwrap().to_string())
        })
        .collect();
    assert_eq!(settings.len(), 3, "docs/observe.md's Event Export settings: {settings:?}");
    settings
}

#[test]
fn the_example_rayclusters_nodes_push_to_rayscopes_service_and_name_the_ports_the_podmonitor_scrapes() {
    let rc = raycluster();
    let svc = one("Service", "rayscope");
    let ns = kustomization()["namespace"].as_str().unwrap().to_string();
    let port = svc["spec"]["ports"][0]["port"].as_u64().unwrap();
    let mut want = event_export_settings();
    let addr = want.values_mut().find(|v| v.contains("RAYSCOPE:8080")).expect("the export address");
    *addr = addr.replace("RAYSCOPE:8080", &format!("rayscope.{ns}.svc.cluster.local:{port}"));

    let monitor = one("PodMonitor", "ray");
    let scraped: BTreeSet<&str> = monitor["spec"]["podMetricsEndpoints"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|e| e["port"].as_str().unwrap())
        .collect();
    assert!(scraped.contains("metrics"), "Ray's metrics port, as KubeRay names it");

    let head = &rc["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0];
    let mut pods = vec![("head", head)];
    for g in rc["spec"]["workerGroupSpecs"].as_sequence().unwrap() {
        pods.push(("worker", &g["template"]["spec"]["containers"][0]));
    }
    for (kind, c) in pods {
        let env: BTreeMap<String, String> = c["env"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|e| (e["name"].as_str().unwrap().to_string(), e["value"].as_str().unwrap().to_string()))
            .collect();
        for (k, v) in &want {
            assert_eq!(env.get(k), Some(v), "{kind}: {k}");
        }
        let ports: BTreeMap<&str, u64> = c["ports"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|p| (p["name"].as_str().unwrap(), p["containerPort"].as_u64().unwrap()))
            .collect();
        assert_eq!(ports.get("metrics"), Some(&8080), "{kind}: KubeRay's metrics port");
        if kind == "head" {
            for p in &scraped {
                assert!(ports.contains_key(p), "the head names the port {p} the PodMonitor scrapes");
            }
        }
    }

    // The PodMonitor selects KubeRay's pods by KubeRay's labels, everywhere, and copies
    // the cluster's name into ray_io_cluster, which the rules keep.
    let spec = &monitor["spec"];
    assert_eq!(spec["namespaceSelector"]["any"], Value::Bool(true));
    let keys: BTreeSet<&str> = spec["selector"]["matchExpressions"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|e| e["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, BTreeSet::from(["ray.io/cluster", "ray.io/node-type"]));
    let copied: Vec<&str> =
        spec["podTargetLabels"].as_sequence().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
    assert!(copied.contains(&"ray.io/cluster"));
    assert!(text("prometheus/rules/rayscope-alerts.yml").contains("up{ray_io_cluster!=\"\"} == 0"));
}

#[test]
fn the_alertmanager_values_pass_amtool_and_route_to_a_receiver_that_is_not_rayscope() {
    let values: Value = serde_yaml::from_str(&text(&format!("{DIR}/alertmanager-values.yaml"))).unwrap();
    let config = &values["alertmanager"]["config"];
    let group_by: Vec<&str> =
        config["route"]["group_by"].as_sequence().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(group_by.contains(&"ray_io_cluster"), "one notification per RayCluster: {group_by:?}");
    let rendered = serde_yaml::to_string(config).unwrap();
    assert!(!rendered.contains("rayscope"), "a receiver points at rayscope:\n{rendered}");
    // The Slack URL file the Alertmanager mounts from the Secret it is told of.
    let secrets: Vec<&str> = values["alertmanager"]["alertmanagerSpec"]["secrets"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    let url_file = config["receivers"]
        .as_sequence()
        .unwrap()
        .iter()
        .find_map(|r| r["slack_configs"][0]["api_url_file"].as_str())
        .expect("a Slack receiver");
    assert!(secrets.iter().any(|s| url_file.starts_with(&format!("/etc/alertmanager/secrets/{s}/"))), "{url_file}");

    let Some(amtool) = tool("amtool", "prometheus-alertmanager") else { return };
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("alertmanager.yml");
    std::fs::write(&cfg, &rendered).unwrap();
    let (ok, out) = run(Command::new(&amtool).arg("check-config").arg(&cfg));
    assert!(ok, "amtool check-config:\n{out}");
    let route = |labels: &[&str]| {
        let (ok, out) =
            run(Command::new(&amtool).args(["config", "routes", "test", "--config.file"]).arg(&cfg).args(labels));
        assert!(ok, "amtool config routes test {labels:?}:\n{out}");
        out.lines().find(|l| !l.starts_with("Warning")).unwrap_or("").trim().to_string()
    };
    assert_eq!(route(&["alertname=Watchdog", "severity=none"]), "null");
    assert_eq!(route(&["alertname=RayNodeDown", "severity=critical", "ray_io_cluster=rc1", "ip=10.244.2.7"]), "oncall");
    assert_eq!(route(&["alertname=RayNodeHighCpu", "severity=warning", "ray_io_cluster=rc1"]), "oncall");
}
