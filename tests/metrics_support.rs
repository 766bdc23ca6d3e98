//! A strict reader of the classic Prometheus text format, shared by the metrics tests
//! (integration tests include it with `#[path]`; so do the unit tests in
//! `src/metrics/testutil.rs`). It knows nothing about rayscope.
#![allow(dead_code)]

use std::collections::BTreeMap;

/// One `# TYPE`d family.
#[derive(Clone, Debug)]
pub struct FamilyInfo {
    pub name: String,
    pub kind: String,
    pub help: String,
}

/// One sample line.
#[derive(Clone, Debug)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

impl Sample {
    pub fn label(&self, key: &str) -> &str {
        self.labels.get(key).map(String::as_str).unwrap_or("")
    }
    pub fn has(&self, key: &str) -> bool {
        self.labels.contains_key(key)
    }
}

#[derive(Clone, Debug, Default)]
pub struct Exposition {
    pub families: BTreeMap<String, FamilyInfo>,
    pub samples: Vec<Sample>,
}

impl Exposition {
    /// Samples of a family: the name itself, or `_bucket`/`_sum`/`_count` of a histogram.
    pub fn of<'a>(&'a self, family: &'a str) -> impl Iterator<Item = &'a Sample> + 'a {
        let histogram = self.families.get(family).is_some_and(|f| f.kind == "histogram");
        self.samples.iter().filter(move |s| {
            s.name == family
                || (histogram
                    && s.name.strip_prefix(family).is_some_and(|rest| matches!(rest, "_bucket" | "_sum" | "_count")))
        })
    }

    /// Sum of a family's samples whose labels include every `(key, value)` given.
    pub fn sum(&self, family: &str, matching: &[(&str, &str)]) -> f64 {
        self.of(family).filter(|s| matching.iter().all(|(k, v)| s.label(k) == *v)).map(|s| s.value).sum()
    }
}

/// Parse, panicking with the line number on anything malformed.
pub fn parse(text: &str) -> Exposition {
    let mut out = Exposition::default();
    let mut help: BTreeMap<String, String> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let at = || format!("line {}: {line:?}", i + 1);
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, text) = rest.split_once(' ').unwrap_or((rest, ""));
            help.insert(name.to_string(), text.to_string());
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or_else(|| panic!("bad TYPE at {}", at()));
            assert!(
                !out.families.contains_key(name),
                "family {name} described twice (its samples must be contiguous) at {}",
                at()
            );
            out.families.insert(
                name.to_string(),
                FamilyInfo {
                    name: name.to_string(),
                    kind: kind.to_string(),
                    help: help.get(name).cloned().unwrap_or_default(),
                },
            );
        } else if line.starts_with('#') {
            continue;
        } else {
            out.samples.push(parse_sample(line).unwrap_or_else(|e| panic!("{e} at {}", at())));
        }
    }
    out
}

fn parse_sample(line: &str) -> Result<Sample, String> {
    let name_end = line.find(['{', ' ']).ok_or("no value")?;
    let name = &line[..name_end];
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
        return Err(format!("bad metric name {name:?}"));
    }
    let bytes = line.as_bytes();
    let mut labels = BTreeMap::new();
    let mut j = name_end;
    if bytes[j] == b'{' {
        j += 1;
        loop {
            if bytes.get(j) == Some(&b'}') {
                j += 1;
                break;
            }
            let eq = line[j..].find('=').ok_or("label without =")? + j;
            let key = &line[j..eq];
            if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!("bad label name {key:?}"));
            }
            if bytes.get(eq + 1) != Some(&b'"') {
                return Err(format!("label {key} value not quoted"));
            }
            j = eq + 2;
            let mut value = String::new();
            loop {
                match bytes.get(j) {
                    None => return Err("unterminated label value".into()),
                    Some(b'\\') => {
                        match bytes.get(j + 1) {
                            Some(b'n') => value.push('\n'),
                            Some(b'\\') => value.push('\\'),
                            Some(b'"') => value.push('"'),
                            other => return Err(format!("bad escape {other:?}")),
                        }
                        j += 2;
                    }
                    Some(b'"') => break,
                    Some(_) => {
                        let ch = line[j..].chars().next().unwrap();
                        value.push(ch);
                        j += ch.len_utf8();
                    }
                }
            }
            if labels.insert(key.to_string(), value).is_some() {
                return Err(format!("label {key} repeated"));
            }
            j += 1;
            if bytes.get(j) == Some(&b',') {
                j += 1;
            }
        }
    }
    let value_text = line[j..].trim();
    if value_text.contains(' ') {
        return Err("timestamps are not allowed".into());
    }
    let value = match value_text {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        "NaN" => f64::NAN,
        v => v.parse::<f64>().map_err(|e| format!("bad value {v:?}: {e}"))?,
    };
    Ok(Sample { name: name.to_string(), labels, value })
}

#[test]
fn parses_labels_escapes_and_histograms() {
    let e = parse(
        "# HELP h A histogram.\n# TYPE h histogram\nh_bucket{a=\"x\\\"y\",le=\"1.0\"} 2\nh_bucket{le=\"+Inf\"} 3\nh_sum 4.5\nh_count 3\n",
    );
    assert_eq!(e.families["h"].kind, "histogram");
    assert_eq!(e.of("h").count(), 4);
    assert_eq!(e.samples[0].label("a"), "x\"y");
    assert_eq!(e.sum("h_bucket", &[("le", "1.0")]), 2.0);
}

#[test]
#[should_panic(expected = "described twice")]
fn rejects_split_families() {
    parse("# TYPE g gauge\ng 1\n# TYPE g gauge\ng 2\n");
}
