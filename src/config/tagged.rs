//! Deserializing the `kind`-tagged enums (workloads, faults) without losing the
//! field path of an error inside them.
//!
//! serde's derived internally tagged enums buffer the whole mapping and deserialize the
//! variant from that buffer, out of reach of `serde_path_to_error`: an error in
//! `workloads[0].tasks` would only say `workloads[0]`. Here the `kind` is read by hand,
//! the variant is deserialized from an externally tagged mirror (`serde(remote)`, so
//! the compiler checks the mirror against the schema) under its own path tracker, and
//! the path inside the variant is handed to the loader through a thread-local.
//! Must never: accept a key the schema does not name (every mirror denies unknown keys).

use super::locate::join_path;
use super::schema::*;
use super::suggest::{unknown_choice_message, unknown_key_message};
use super::units::DurationSpec;
use serde::de::{Deserializer, Error as _};
use serde::Deserialize;
use serde_yaml::value::{Tag, TaggedValue};
use serde_yaml::{Mapping, Value};
use std::cell::RefCell;

/// The innermost error of the last failed tagged enum: its path relative to the enum
/// value, and its message without that path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Nested {
    pub rel: String,
    pub message: String,
}

thread_local! {
    static NESTED: RefCell<Option<Nested>> = const { RefCell::new(None) };
}

/// Take (and clear) what the last failed tagged enum left behind.
pub(crate) fn take_nested() -> Option<Nested> {
    NESTED.with(|n| n.borrow_mut().take())
}

/// Render a tracked path the way the rest of the config module writes paths.
pub(crate) fn path_string(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for seg in path.iter() {
        match seg {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } => out = join_path(&out, key),
            // The mirror's variant is the `kind` value, not a key in the file.
            Segment::Enum { .. } => {}
            Segment::Unknown => out = join_path(&out, "?"),
        }
    }
    out
}

/// Read a `kind`-tagged mapping into the externally tagged form the mirrors accept.
fn prepare<'de, D: Deserializer<'de>>(d: D, what: &str, kinds: &[&str]) -> Result<Value, D::Error> {
    // Anything left from an earlier, successful sibling is stale.
    NESTED.with(|n| n.borrow_mut().take());
    let mut map = Mapping::deserialize(d)?;
    let fail = |rel: &str, message: String| {
        let err = D::Error::custom(format!("{rel}: {message}"));
        NESTED.with(|n| *n.borrow_mut() = Some(Nested { rel: rel.into(), message }));
        err
    };
    let kind = match map.remove("kind") {
        None => {
            return Err(fail("kind", format!("missing required key `kind`; valid {what} kinds: {}", kinds.join(", "))))
        }
        Some(Value::String(s)) => s,
        Some(other) => {
            let found = match other {
                Value::Null => "null".to_string(),
                Value::Bool(b) => format!("boolean `{b}`"),
                Value::Number(n) => format!("number `{n}`"),
                Value::Sequence(_) => "a list".to_string(),
                Value::Mapping(_) => "a mapping".to_string(),
                Value::Tagged(t) => format!("tagged value `{}`", t.tag),
                Value::String(_) => unreachable!("handled above"),
            };
            return Err(fail(
                "kind",
                format!("invalid {what} kind: found {found}, expected one of {}", kinds.join(", ")),
            ));
        }
    };
    if !kinds.contains(&kind.as_str()) {
        return Err(fail("kind", unknown_choice_message(&format!("{what} kind"), &kind, kinds)));
    }
    Ok(Value::Tagged(Box::new(TaggedValue { tag: Tag::new(kind), value: Value::Mapping(map) })))
}

/// Turn the mirror's result into the outer deserializer's, recording where it failed.
fn finish<T, E: serde::de::Error>(
    result: Result<T, serde_yaml::Error>,
    track: serde_path_to_error::Track,
) -> Result<T, E> {
    let err = match result {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    let mut rel = path_string(&track.path());
    // A tagged enum nested inside this one already knows the finer path.
    let message = match take_nested() {
        Some(inner) => {
            rel = join_path(&rel, &inner.rel);
            inner.message
        }
        None => {
            let raw = err.to_string();
            // An unknown key directly in the variant: `kind` is valid there too.
            match unknown_field_parts(&raw) {
                Some((name, mut valid)) if !rel.contains(['.', '[']) => {
                    valid.insert(0, "kind".to_string());
                    unknown_key_message(&name, &valid)
                }
                _ => raw,
            }
        }
    };
    let shown = if rel.is_empty() { message.clone() } else { format!("{rel}: {message}") };
    NESTED.with(|n| *n.borrow_mut() = Some(Nested { rel, message }));
    Err(E::custom(shown))
}

/// `unknown field `x`, expected one of `a`, `b`` → ("x", ["a", "b"]).
pub(crate) fn unknown_field_parts(msg: &str) -> Option<(String, Vec<String>)> {
    let rest = msg.strip_prefix("unknown field ")?;
    let mut quoted = rest.split('`').skip(1).step_by(2).map(str::to_string);
    let name = quoted.next()?;
    Some((name, quoted.collect()))
}

impl<'de> Deserialize<'de> for WorkloadConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = prepare(d, "workload", WorkloadConfig::KINDS)?;
        let mut track = serde_path_to_error::Track::new();
        let result = WorkloadDef::deserialize(serde_path_to_error::Deserializer::new(value, &mut track));
        finish(result, track)
    }
}

impl<'de> Deserialize<'de> for FaultConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = prepare(d, "fault", FaultConfig::KINDS)?;
        let mut track = serde_path_to_error::Track::new();
        let result = FaultDef::deserialize(serde_path_to_error::Deserializer::new(value, &mut track));
        finish(result, track)
    }
}

#[derive(Deserialize)]
#[serde(remote = "WorkloadConfig", rename_all = "snake_case")]
enum WorkloadDef {
    FlowInsight(FlowInsightConfig),
    FanOut(FanOutConfig),
    Training(TrainingConfig),
    ActorPool(ActorPoolConfig),
    JobMix(JobMixConfig),
}

#[derive(Deserialize)]
#[serde(remote = "FaultConfig", rename_all = "snake_case", deny_unknown_fields)]
enum FaultDef {
    KillNode {
        at: DurationSpec,
        #[serde(default)]
        node: Option<String>,
        #[serde(default)]
        node_type: Option<String>,
    },
    RestoreNode {
        at: DurationSpec,
        node: String,
    },
    KillActor {
        at: DurationSpec,
        class: String,
        #[serde(default)]
        no_restart: bool,
    },
    TaskFailures {
        at: DurationSpec,
        #[serde(default)]
        until: Option<DurationSpec>,
        probability: f64,
        #[serde(default)]
        application_error: bool,
    },
    MemoryPressure {
        at: DurationSpec,
        #[serde(default)]
        node: Option<String>,
        #[serde(default)]
        node_type: Option<String>,
        fraction: f64,
        duration: DurationSpec,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(text: &str) -> Result<WorkloadConfig, (String, String)> {
        let value: Value = serde_yaml::from_str(text).unwrap();
        take_nested();
        serde_path_to_error::deserialize::<_, WorkloadConfig>(value).map_err(|e| {
            let n = take_nested().expect("tagged enum records where it failed");
            (join_path(&path_string(e.path()), &n.rel), n.message)
        })
    }

    #[test]
    fn variants_deserialize_by_kind() {
        let w = workload("kind: fan_out\ntasks: 3\n").unwrap();
        assert!(matches!(w, WorkloadConfig::FanOut(FanOutConfig { tasks: 3, .. })));
        let f: FaultConfig = serde_yaml::from_str("{kind: kill_node, at: 5s, node_type: gpu}").unwrap();
        assert!(matches!(f, FaultConfig::KillNode { node_type: Some(ref t), .. } if t == "gpu"));
    }

    #[test]
    fn serialized_workloads_and_faults_load_back() {
        let text = "- {kind: actor_pool, actors: 2, class: Cache}\n- kind: job_mix\n  arrivals_per_minute: 1\n  \
                    templates: [{workload: {kind: training}}]\n";
        let ws: Vec<WorkloadConfig> = serde_yaml::from_str(text).unwrap();
        let again: Vec<WorkloadConfig> = serde_yaml::from_str(&serde_yaml::to_string(&ws).unwrap()).unwrap();
        assert_eq!(format!("{ws:?}"), format!("{again:?}"));
        let f: FaultConfig = serde_yaml::from_str("{kind: task_failures, at: 1s, probability: 0.5}").unwrap();
        let again: FaultConfig = serde_yaml::from_str(&serde_yaml::to_string(&f).unwrap()).unwrap();
        assert_eq!(format!("{f:?}"), format!("{again:?}"));
    }

    #[test]
    fn unknown_keys_in_variants_are_rejected_with_kind_listed() {
        let (path, msg) = workload("kind: fan_out\ntasks: 3\ntaks: 4\n").unwrap_err();
        assert_eq!(path, "taks");
        assert!(msg.contains("unknown key `taks`") && msg.contains("kind, name, start"), "{msg}");
        let err = serde_yaml::from_str::<FaultConfig>("{kind: kill_actor, at: 1s, class: A, nodes: x}").unwrap_err();
        assert!(err.to_string().contains("unknown key `nodes`"), "{err}");
    }

    #[test]
    fn errors_deep_inside_nested_workloads_keep_their_path() {
        let text = "kind: job_mix\narrivals_per_minute: 1\ntemplates:\n  - workload: {kind: fan_out, tasks: many}\n";
        let (path, msg) = workload(text).unwrap_err();
        assert_eq!(path, "templates[0].workload.tasks");
        assert!(msg.starts_with("invalid type: string \"many\""), "{msg}");
    }

    #[test]
    fn unknown_and_missing_kinds_name_the_valid_kinds() {
        let (path, msg) = workload("kind: fanout\n").unwrap_err();
        assert_eq!(path, "kind");
        assert!(msg.contains("did you mean `fan_out`") && msg.contains("job_mix"), "{msg}");
        let (path, msg) = workload("tasks: 1\n").unwrap_err();
        assert_eq!(path, "kind");
        assert!(msg.contains("missing required key `kind`"), "{msg}");
    }
}
