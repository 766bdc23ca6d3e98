//! What a submitted job runs: a built-in workload named by its entrypoint
//! (`fan-out --tasks 1000 --reducers 10`), or a workload written in YAML.
//!
//! Both roads end in the config loader, so a submitted workload obeys exactly the
//! rules a config file does (units, ranges, feasibility on the running cluster) and its
//! errors say the same things. Flags map onto config keys (`--calls-per-child` is
//! `calls_per_child`), and an error about a key is reported against its flag; YAML
//! errors keep their line and column in the text the client sent.

use crate::config::{self, ClusterConfig, WorkloadConfig};
use serde::Serialize;
use std::fmt;

/// A built-in workload: the name on the command line, its `kind`, and its flags as
/// (flag, config key). `--start` is left out: a submitted job starts now.
struct Builtin {
    names: &'static [&'static str],
    kind: &'static str,
    flags: &'static [(&'static str, &'static str)],
}

const BUILTINS: &[Builtin] = &[
    Builtin {
        names: &["flow-insight", "flow_insight"],
        kind: "flow_insight",
        flags: &[
            ("name", "name"),
            ("depth", "depth"),
            ("min-children", "min_children"),
            ("max-children", "max_children"),
            ("calls-per-child", "calls_per_child"),
            ("calls", "calls_per_child"),
            ("sleep", "sleep"),
            ("bottleneck-sleep", "bottleneck_sleep"),
            ("bottleneck-probability", "bottleneck_probability"),
            ("root-bottleneck", "root_bottleneck"),
            ("max-concurrency", "max_concurrency"),
            ("num-cpus", "num_cpus"),
            ("return-size", "return_size"),
            ("value-type", "value_type"),
        ],
    },
    Builtin {
        names: &["fan-out", "fan_out", "map-reduce"],
        kind: "fan_out",
        flags: &[
            ("name", "name"),
            ("tasks", "tasks"),
            ("reducers", "reducers"),
            ("task-duration", "task_duration"),
            ("reduce-duration", "reduce_duration"),
            ("output-size", "output_size"),
            ("shared-input", "shared_input"),
            ("value-type", "value_type"),
            ("num-cpus", "num_cpus"),
            ("num-gpus", "num_gpus"),
            ("memory", "memory"),
            ("max-retries", "max_retries"),
            ("retry-exceptions", "retry_exceptions"),
            ("function", "function"),
        ],
    },
    Builtin {
        names: &["actor-pool", "actor_pool"],
        kind: "actor_pool",
        flags: &[
            ("name", "name"),
            ("actors", "actors"),
            ("calls", "calls_per_actor"),
            ("calls-per-actor", "calls_per_actor"),
            ("call-duration", "call_duration"),
            ("num-cpus", "num_cpus"),
            ("num-gpus", "num_gpus"),
            ("memory", "memory"),
            ("return-size", "return_size"),
            ("value-type", "value_type"),
            ("max-restarts", "max_restarts"),
            ("max-task-retries", "max_task_retries"),
            ("max-concurrency", "max_concurrency"),
            ("class", "class"),
        ],
    },
    Builtin {
        names: &["train", "training"],
        kind: "training",
        flags: &[
            ("name", "name"),
            ("workers", "workers"),
            ("steps", "steps"),
            ("step-duration", "step_duration"),
            ("bundle-cpu", "bundle_cpu"),
            ("bundle-gpu", "bundle_gpu"),
            ("bundle-memory", "bundle_memory"),
            ("placement-strategy", "placement_strategy"),
            ("gradient-size", "gradient_size"),
            ("value-type", "value_type"),
            ("max-restarts", "max_restarts"),
            ("max-task-retries", "max_task_retries"),
        ],
    },
];

/// Why a submitted workload was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadError {
    /// The request field at fault: `entrypoint` or `workload`.
    pub field: &'static str,
    pub message: String,
    /// The flag or YAML key at fault (`--tasks`, `tasks`), when known.
    pub at: Option<String>,
    /// (line, column) in the submitted YAML, 1-based, when known.
    pub position: Option<(usize, usize)>,
    /// What would be valid (workload names or flags), when the error is a bad name.
    pub valid: Vec<String>,
}

impl fmt::Display for WorkloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((l, c)) = self.position {
            write!(f, "{}:{l}:{c}: ", self.field)?;
        }
        f.write_str(&self.message)
    }
}

fn entrypoint_error(message: String, at: Option<String>, valid: Vec<String>) -> WorkloadError {
    WorkloadError { field: "entrypoint", message, at, position: None, valid }
}

/// The built-in workload names, for messages.
pub fn builtin_names() -> Vec<String> {
    BUILTINS.iter().map(|b| b.names[0].to_string()).collect()
}

/// Parse `fan-out --tasks 1000 --reducers 10` into a workload, validated against `cluster`.
pub fn parse_entrypoint(entrypoint: &str, cluster: &ClusterConfig) -> Result<WorkloadConfig, WorkloadError> {
    let words = shell_words(entrypoint)?;
    let mut words = words.iter().map(String::as_str);
    let Some(name) = words.next() else {
        return Err(entrypoint_error(
            format!("the entrypoint is empty; name a built-in workload: {}", builtin_names().join(", ")),
            None,
            builtin_names(),
        ));
    };
    let Some(builtin) = BUILTINS.iter().find(|b| b.names.contains(&name)) else {
        return Err(entrypoint_error(
            format!(
                "unknown workload {name:?}; built-in workloads: {} (or send workload YAML in `workload`)",
                builtin_names().join(", ")
            ),
            Some(name.to_string()),
            builtin_names(),
        ));
    };
    let valid_flags = || builtin.flags.iter().map(|(f, _)| format!("--{f}")).collect::<Vec<_>>();
    let mut map = serde_yaml::Mapping::new();
    map.insert("kind".into(), builtin.kind.into());
    let words: Vec<&str> = words.collect();
    let mut i = 0;
    while i < words.len() {
        let word = words[i];
        i += 1;
        let Some(flag) = word.strip_prefix("--") else {
            return Err(entrypoint_error(
                format!("unexpected argument {word:?}: {name} takes flags only ({})", valid_flags().join(", ")),
                Some(word.to_string()),
                valid_flags(),
            ));
        };
        let (flag, inline) = match flag.split_once('=') {
            Some((f, v)) => (f, Some(v)),
            None => (flag, None),
        };
        let Some((_, key)) = builtin.flags.iter().find(|(f, _)| *f == flag) else {
            return Err(entrypoint_error(
                format!("unknown flag --{flag} for {name}; valid flags: {}", valid_flags().join(", ")),
                Some(format!("--{flag}")),
                valid_flags(),
            ));
        };
        let value = match inline {
            Some(v) => v,
            None if words.get(i).is_some_and(|w| !w.starts_with("--")) => {
                i += 1;
                words[i - 1]
            }
            // A bare flag is a switch (`--retry-exceptions`).
            None => "true",
        };
        let value: serde_yaml::Value = serde_yaml::from_str(value).unwrap_or_else(|_| value.into());
        if map.insert((*key).into(), value).is_some() {
            return Err(entrypoint_error(format!("--{flag} is given twice"), Some(format!("--{flag}")), Vec::new()));
        }
    }
    let text = serde_yaml::to_string(&map).unwrap_or_default();
    load_workload(&text, cluster).map_err(|e| {
        let flag = e.at.as_deref().and_then(|key| {
            let top = key.split(['.', '[']).next().unwrap_or(key);
            builtin.flags.iter().find(|(_, k)| *k == top).map(|(f, _)| format!("--{f}"))
        });
        let message = match &flag {
            Some(f) => format!("{f}: {}", e.message),
            None => e.message,
        };
        entrypoint_error(message, flag.or(e.at), Vec::new())
    })
}

/// Split an entrypoint as a POSIX shell would (quotes, escapes), since Ray's CLI
/// shell-quotes the argv it is given (`ray job submit -- fan-out --name 'a b'`). A
/// command quoted whole (`ray job submit -- "fan-out --tasks 50"` arrives as
/// `'fan-out --tasks 50'`) is one word holding spaces: it is split once more, as
/// `sh -c` would run it.
fn shell_words(entrypoint: &str) -> Result<Vec<String>, WorkloadError> {
    let split = |text: &str| {
        shlex::split(text).ok_or_else(|| {
            entrypoint_error(
                format!("the entrypoint {text:?} has an unterminated quote or a trailing backslash"),
                None,
                Vec::new(),
            )
        })
    };
    let words = split(entrypoint)?;
    match words.as_slice() {
        [only] if only.split_whitespace().nth(1).is_some() => split(only),
        _ => Ok(words),
    }
}

/// Parse one workload written in YAML (a mapping with `kind`, as under `workloads:` in
/// a config file), validated against `cluster`. Errors carry the line and column in
/// `yaml` itself.
pub fn parse_workload_yaml(yaml: &str, cluster: &ClusterConfig) -> Result<WorkloadConfig, WorkloadError> {
    let located = |line, column, at: Option<String>, message: String| WorkloadError {
        field: "workload",
        message,
        at,
        position: Some((line, column)),
        valid: Vec::new(),
    };
    if let Err(e) = crate::config::depth::check(yaml) {
        return Err(located(e.line, e.column, None, e.to_string()));
    }
    match serde_yaml::from_str::<serde_yaml::Value>(yaml) {
        Err(e) => {
            let (line, column) = e.location().map_or((1, 1), |l| (l.line(), l.column()));
            let raw = e.to_string();
            let message = raw.replacen(&format!(" at line {line} column {column}"), "", 1);
            return Err(located(line, column, None, format!("invalid YAML: {message}")));
        }
        Ok(serde_yaml::Value::Mapping(m)) if m.contains_key("start") => {
            // A config's `start` delays a workload from the run's beginning; a submitted
            // job starts when it is submitted, so a `start` here could only be ignored.
            let line = yaml.lines().position(|l| l.starts_with("start")).map_or(1, |i| i + 1);
            return Err(located(
                line,
                1,
                Some("start".to_string()),
                "start: a submitted job starts when it is submitted; remove `start` (submit the job later to delay it)"
                    .to_string(),
            ));
        }
        Ok(serde_yaml::Value::Mapping(_)) => {}
        Ok(_) => {
            return Err(located(
                1,
                1,
                None,
                format!("expected one workload as a mapping with `kind` (one of {})", WorkloadConfig::KINDS.join(", ")),
            ))
        }
    }
    load_workload(yaml, cluster).map_err(|e| {
        let (line, column) = e.position.unwrap_or((1, 1));
        located(line, column, e.at, e.message)
    })
}

/// Lines the wrapper adds above the workload, and columns it indents it by.
const WRAP_LINES: usize = 1;
const WRAP_COLUMNS: usize = 2;

/// Load `yaml` (one workload mapping) through the config loader, as the only item of
/// `workloads:` in a config whose cluster is `cluster`.
fn load_workload(yaml: &str, cluster: &ClusterConfig) -> Result<WorkloadConfig, WorkloadError> {
    let mut text = String::from("workloads:\n");
    for (i, line) in yaml.lines().enumerate() {
        text.push_str(if i == 0 { "- " } else { "  " });
        text.push_str(line);
        text.push('\n');
    }
    // The cluster goes below the workload, so the workload's lines keep their numbers.
    #[derive(Serialize)]
    struct ClusterOnly<'a> {
        cluster: &'a ClusterConfig,
    }
    text.push_str(&serde_yaml::to_string(&ClusterOnly { cluster }).unwrap_or_default());
    let workload_lines = yaml.lines().count().max(1);
    match config::load_str(&text, "workload") {
        Ok(mut c) if c.workloads.len() == 1 => Ok(c.workloads.remove(0)),
        Ok(_) => Err(internal("expected exactly one workload")),
        Err(errors) => {
            let e = errors.0.into_iter().next().ok_or_else(|| internal("empty error list"))?;
            let at = e
                .field
                .strip_prefix("workloads[0]")
                .map(|f| f.trim_start_matches('.').to_string())
                .filter(|f| !f.is_empty());
            if e.line > WRAP_LINES + workload_lines {
                // About the cluster we appended, which was valid when the engine started.
                return Err(internal(&e.to_string()));
            }
            let line = e.line.saturating_sub(WRAP_LINES).max(1);
            let column = e.column.saturating_sub(WRAP_COLUMNS).max(1);
            let message = match &at {
                Some(f) => format!("{f}: {}", e.message),
                None => e.message,
            };
            Err(WorkloadError { field: "workload", message, at, position: Some((line, column)), valid: Vec::new() })
        }
    }
}

fn internal(what: &str) -> WorkloadError {
    WorkloadError {
        field: "workload",
        message: format!("could not check the workload: {what}"),
        at: None,
        position: None,
        valid: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster() -> ClusterConfig {
        config::default_config().cluster
    }

    #[test]
    fn builtins_parse_with_flags() {
        match parse_entrypoint("fan-out --tasks 1000 --reducers 10 --task-duration 2s", &cluster()).unwrap() {
            WorkloadConfig::FanOut(c) => {
                assert_eq!((c.tasks, c.reducers, c.task_duration.min.as_secs_f64()), (1000, 10, 2.0))
            }
            other => panic!("{other:?}"),
        }
        match parse_entrypoint("fan-out --tasks 8 --shared-input 64MiB", &cluster()).unwrap() {
            WorkloadConfig::FanOut(c) => assert_eq!((c.tasks, c.shared_input.0), (8, 64 << 20)),
            other => panic!("{other:?}"),
        }
        match parse_entrypoint("actor-pool --actors 2 --return-size 1MB --value-type numpy", &cluster()).unwrap() {
            WorkloadConfig::ActorPool(c) => assert_eq!(c.value_type, crate::config::ValueType::Numpy),
            other => panic!("{other:?}"),
        }
        match parse_entrypoint("actor-pool --actors 10 --calls=5", &cluster()).unwrap() {
            WorkloadConfig::ActorPool(c) => assert_eq!((c.actors, c.calls_per_actor), (10, 5)),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse_entrypoint("flow-insight --depth 3", &cluster()).unwrap(),
            WorkloadConfig::FlowInsight(_)
        ));
        // The entrypoint the engine shows for a configured map-reduce submits again as is.
        assert!(matches!(
            parse_entrypoint("map-reduce --tasks 10 --reducers 2", &cluster()).unwrap(),
            WorkloadConfig::FanOut(_)
        ));
        assert!(matches!(
            parse_entrypoint("train --workers 1 --steps 50 --bundle-gpu 0 --bundle-cpu 1", &cluster()).unwrap(),
            WorkloadConfig::Training(_)
        ));
    }

    #[test]
    fn entrypoints_split_as_a_shell_would() {
        // `ray job submit -- fan-out --name 'a b'` sends the argv shell-quoted.
        match parse_entrypoint("fan-out --tasks 7 --name 'map job'", &cluster()).unwrap() {
            WorkloadConfig::FanOut(c) => assert_eq!((c.tasks, c.name.as_str()), (7, "map job")),
            other => panic!("{other:?}"),
        }
        // `ray job submit -- "fan-out --tasks 50"`: the whole command quoted as one word.
        match parse_entrypoint("'fan-out --tasks 50'", &cluster()).unwrap() {
            WorkloadConfig::FanOut(c) => assert_eq!(c.tasks, 50),
            other => panic!("{other:?}"),
        }
        let e = parse_entrypoint("fan-out --name 'open", &cluster()).unwrap_err();
        assert!(e.message.contains("unterminated quote"), "{e}");
    }

    #[test]
    fn a_submitted_workload_refuses_start_instead_of_ignoring_it() {
        let e = parse_workload_yaml("kind: fan_out\ntasks: 3\nstart: 10m\n", &cluster()).unwrap_err();
        assert_eq!((e.field, e.at.as_deref(), e.position), ("workload", Some("start"), Some((3, 1))));
        assert!(e.message.contains("submitted"), "{e}");
        assert!(parse_workload_yaml("kind: fan_out\ntasks: 3\n", &cluster()).is_ok());
    }

    #[test]
    fn every_flag_names_a_real_key() {
        for b in BUILTINS {
            for (flag, key) in b.flags {
                let text = format!("kind: {}\n{key}: {{}}\n", b.kind);
                let e = load_workload(&text, &cluster()).unwrap_err();
                assert!(!e.message.contains("unknown key"), "--{flag} of {}: {}", b.names[0], e.message);
            }
        }
    }

    #[test]
    fn errors_name_the_workload_or_flag() {
        let e = parse_entrypoint("python train.py", &cluster()).unwrap_err();
        assert_eq!(e.at.as_deref(), Some("python"));
        assert!(e.valid.contains(&"fan-out".to_string()), "{e:?}");
        let e = parse_entrypoint("fan-out --tasks 10 --colour red", &cluster()).unwrap_err();
        assert_eq!(e.at.as_deref(), Some("--colour"));
        assert!(e.message.contains("--reducers"), "{e}");
        let e = parse_entrypoint("fan-out", &cluster()).unwrap_err();
        assert!(e.message.contains("tasks"), "{e}");
        let e = parse_entrypoint("fan-out --tasks many", &cluster()).unwrap_err();
        assert_eq!(e.at.as_deref(), Some("--tasks"), "{e:?}");
        let e = parse_entrypoint("fan-out --tasks 10 --num-cpus 1000", &cluster()).unwrap_err();
        assert_eq!(e.at.as_deref(), Some("--num-cpus"), "{e:?}");
    }

    #[test]
    fn yaml_errors_keep_their_position() {
        let e = parse_workload_yaml("kind: fan_out\ntasks: 10\ntask_duration: 2 fortnights\n", &cluster()).unwrap_err();
        assert_eq!(e.position, Some((3, 16)), "{e:?}");
        assert_eq!(e.at.as_deref(), Some("task_duration"));
        let e = parse_workload_yaml("kind: fan_out\n  tasks: [\n", &cluster()).unwrap_err();
        assert!(e.message.starts_with("invalid YAML"), "{e:?}");
        assert!(e.position.is_some());
        let e = parse_workload_yaml("kind: fan_out\ntaks: 10\n", &cluster()).unwrap_err();
        assert_eq!(e.position, Some((2, 1)), "{e:?}");
        let w = parse_workload_yaml("kind: fan_out\ntasks: 10\n", &cluster()).unwrap();
        assert!(matches!(w, WorkloadConfig::FanOut(_)));
    }
}
