//! `--set KEY=VALUE` and `--sweep KEY=V1,V2,...`: changing a config from the command
//! line without editing it.
//!
//! Owns: parsing dotted paths (`cluster.node_types[0].count`), writing a value at such a
//! path in the parsed document, and the sweep's list of values. Must never: validate on
//! its own. An overridden document goes through the same parser and validator as a file,
//! and every error still names where it came from: the file's line and column, or the
//! `--set` argument that put the value there.

use serde_yaml::Value;
use std::fmt;

/// Why a `--set` or `--sweep` argument was refused: each names the argument and what
/// would be valid.
#[derive(Debug, thiserror::Error)]
pub enum OverrideError {
    #[error("`{0}`: expected KEY=VALUE, e.g. cluster.node_types[0].count=400")]
    NotKeyValue(String),
    #[error("`{0}`: expected KEY=V1,V2,..., e.g. cluster.node_types[0].count=100,200,400")]
    SweepNotKeyValues(String),
    #[error("`{0}`: every value in the list must be non-empty")]
    EmptySweepValue(String),
    #[error("`{key}={raw_value}`: the value is not valid YAML: {source}")]
    Yaml { key: String, raw_value: String, source: serde_yaml::Error },
    #[error("`{key}`: {why}; write a dotted path such as cluster.node_types[0].count")]
    Path { key: String, why: String },
    #[error("{here} is a list of {len} item(s); index [{index}] does not exist")]
    IndexPastEnd { here: String, len: usize, index: usize },
    #[error("{here} is not a mapping, so it has no key `{key}`")]
    NotAMapping { here: String, key: String },
    #[error("{here} is not a list, so it has no item [{index}]")]
    NotAList { here: String, index: usize },
}

/// One step of a dotted path.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// One `--set KEY=VALUE`, parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct Override {
    /// The path as the config's errors write it, e.g. `cluster.node_types[0].count`.
    pub key: String,
    steps: Vec<Step>,
    value: Value,
    /// The value as given, for messages and tables.
    pub raw_value: String,
}

impl fmt::Display for Override {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "--set {}={}", self.key, self.raw_value)
    }
}

impl Override {
    /// Parse `KEY=VALUE`. The value is read as YAML, so `400`, `2s`, `true`,
    /// `{min: 1s, max: 3s}` and `[a, b]` mean what they mean in a config file.
    pub fn parse(arg: &str) -> Result<Override, OverrideError> {
        let (key, raw) = arg.split_once('=').ok_or_else(|| OverrideError::NotKeyValue(arg.to_string()))?;
        Override::new(key.trim(), raw.trim())
    }

    fn new(key: &str, raw_value: &str) -> Result<Override, OverrideError> {
        let steps = parse_path(key)?;
        let value: Value = serde_yaml::from_str(raw_value).map_err(|source| OverrideError::Yaml {
            key: key.to_string(),
            raw_value: raw_value.to_string(),
            source,
        })?;
        Ok(Override { key: render_path(&steps), steps, value, raw_value: raw_value.to_string() })
    }

    /// Whether an error about `field` is about the value this override wrote.
    pub(crate) fn covers(&self, field: &str) -> bool {
        field == self.key
            || field.strip_prefix(self.key.as_str()).is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
    }

    /// Write the value into `doc`, creating missing mappings on the way. Indexing past
    /// the end of a list, or descending into a scalar, is an error that names the step.
    pub(crate) fn apply(&self, doc: &mut Value) -> Result<(), OverrideError> {
        let mut cur = doc;
        let mut walked = Vec::new();
        for step in &self.steps {
            if cur.is_null() {
                *cur = Value::Mapping(Default::default());
            }
            let here =
                if walked.is_empty() { "the top level".to_string() } else { format!("`{}`", render_path(&walked)) };
            cur = match (step, cur) {
                (Step::Key(k), Value::Mapping(m)) => m.entry(Value::String(k.clone())).or_insert(Value::Null),
                (Step::Index(i), Value::Sequence(s)) => {
                    let len = s.len();
                    s.get_mut(*i).ok_or(OverrideError::IndexPastEnd { here, len, index: *i })?
                }
                (Step::Key(k), _) => return Err(OverrideError::NotAMapping { here, key: k.clone() }),
                (Step::Index(i), _) => return Err(OverrideError::NotAList { here, index: *i }),
            };
            walked.push(step.clone());
        }
        *cur = self.value.clone();
        Ok(())
    }
}

/// `--sweep KEY=V1,V2,...`: one override per value, in order. Commas inside `{}` or
/// `[]` belong to a value (`--sweep a={min: 1s, max: 2s},{min: 2s, max: 4s}`).
pub fn parse_sweep(arg: &str) -> Result<Vec<Override>, OverrideError> {
    let (key, raw) = arg.split_once('=').ok_or_else(|| OverrideError::SweepNotKeyValues(arg.to_string()))?;
    let values = split_top_level(raw);
    if values.iter().any(|v| v.is_empty()) || values.is_empty() {
        return Err(OverrideError::EmptySweepValue(arg.to_string()));
    }
    values.iter().map(|v| Override::new(key.trim(), v)).collect()
}

fn split_top_level(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0i32);
    for c in s.chars() {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur.trim().to_string());
    out
}

fn parse_path(key: &str) -> Result<Vec<Step>, OverrideError> {
    let bad = |why: &str| OverrideError::Path { key: key.to_string(), why: why.to_string() };
    if key.is_empty() {
        return Err(bad("empty key"));
    }
    let mut steps = Vec::new();
    for part in key.split('.') {
        let (name, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if name.is_empty() && (steps.is_empty() || rest.is_empty()) {
            return Err(bad("a path step is empty"));
        }
        if !name.is_empty() {
            if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                return Err(bad(&format!("`{name}` is not a config key")));
            }
            steps.push(Step::Key(name.to_string()));
        }
        while !rest.is_empty() {
            let close = rest.find(']').ok_or_else(|| bad("a `[` is not closed"))?;
            let index = rest[1..close].parse::<usize>().map_err(|_| bad("a list index must be a whole number ≥ 0"))?;
            steps.push(Step::Index(index));
            rest = &rest[close + 1..];
            if !rest.is_empty() && !rest.starts_with('[') {
                return Err(bad("unexpected text after `]`"));
            }
        }
    }
    Ok(steps)
}

fn render_path(steps: &[Step]) -> String {
    let mut s = String::new();
    for step in steps {
        match step {
            Step::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Step::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(y: &str) -> Value {
        serde_yaml::from_str(y).unwrap()
    }

    #[test]
    fn paths_with_indexes_write_where_they_say() {
        let mut d = doc("cluster:\n  node_types:\n    - {name: a, count: 1}\n    - {name: b, count: 2}\n");
        Override::parse("cluster.node_types[1].count=400").unwrap().apply(&mut d).unwrap();
        assert_eq!(d["cluster"]["node_types"][1]["count"], Value::from(400));
        assert_eq!(d["cluster"]["node_types"][0]["count"], Value::from(1));
    }

    #[test]
    fn missing_mappings_are_created_but_lists_are_not_extended() {
        let mut d = doc("cluster: {}\n");
        Override::parse("sim.speed=5").unwrap().apply(&mut d).unwrap();
        assert_eq!(d["sim"]["speed"], Value::from(5));
        let e = Override::parse("cluster.node_types[3].count=1").unwrap().apply(&mut d).unwrap_err().to_string();
        assert!(e.contains("`cluster.node_types` is not a list") || e.contains("does not exist"), "{e}");
        let mut d = doc("cluster:\n  node_types: [{count: 1}]\n");
        let e = Override::parse("cluster.node_types[3].count=1").unwrap().apply(&mut d).unwrap_err().to_string();
        assert!(e.contains("list of 1 item(s); index [3] does not exist"), "{e}");
        let e = Override::parse("cluster.node_types[0].count.x=1").unwrap().apply(&mut d).unwrap_err().to_string();
        assert!(e.contains("`cluster.node_types[0].count` is not a mapping"), "{e}");
    }

    #[test]
    fn values_are_yaml() {
        let o = Override::parse("workloads[0].task_duration={min: 1s, max: 3s}").unwrap();
        assert!(o.value.is_mapping());
        assert_eq!(Override::parse("a.b=true").unwrap().value, Value::Bool(true));
        assert_eq!(Override::parse("a.b=2s").unwrap().value, Value::from("2s"));
    }

    #[test]
    fn bad_arguments_say_what_to_write() {
        assert!(Override::parse("sim.speed").unwrap_err().to_string().contains("expected KEY=VALUE"));
        assert!(Override::parse("sim..speed=1").unwrap_err().to_string().contains("empty"));
        assert!(Override::parse("a[x]=1").unwrap_err().to_string().contains("whole number"));
        assert!(Override::parse("a[1=1").unwrap_err().to_string().contains("not closed"));
        assert!(Override::parse("a b=1").unwrap_err().to_string().contains("not a config key"));
    }

    #[test]
    fn sweeps_split_at_top_level_commas_only() {
        let s = parse_sweep("workloads[0].task_duration={min: 1s, max: 2s},3s").unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].raw_value, "{min: 1s, max: 2s}");
        assert_eq!(s[1].raw_value, "3s");
        assert!(parse_sweep("a=1,,2").is_err());
        assert!(parse_sweep("a").is_err());
    }

    #[test]
    fn an_override_covers_its_own_subtree_only() {
        let o = Override::parse("cluster.node_types[0]={count: 1}").unwrap();
        assert!(o.covers("cluster.node_types[0]"));
        assert!(o.covers("cluster.node_types[0].count"));
        assert!(!o.covers("cluster.node_types[01]"));
        assert!(!o.covers("cluster.node_types[1].count"));
    }
}
