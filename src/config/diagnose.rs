//! Turning YAML syntax errors and serde's deserialization errors into located,
//! actionable messages.
//!
//! Owns: the wording of parse-time errors (serde says "expected u32"; a user needs "a
//! whole number ≥ 0", and for a typo, the keys that would be valid). Must never: guess a
//! position; positions come from [`PosMap`] or, for syntax errors, from the YAML parser.

use super::locate::{join_key, PosMap, Target};
use super::schema::Config;
use super::suggest::{unknown_choice_message, unknown_key_message};
use super::tagged::{path_string, take_nested, unknown_field_parts};

/// An error with its place in the document, not yet tied to a file name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Located {
    pub line: usize,
    pub column: usize,
    pub field: String,
    pub message: String,
}

/// Parse `text` into a [`Config`]; on failure, say where and why.
#[cfg(test)]
pub(crate) fn parse(text: &str) -> Result<Config, Located> {
    deserialize(parse_document(text)?, text)
}

/// The YAML document in `text`, before any typing (an empty file is an empty mapping).
pub(crate) fn parse_document(text: &str) -> Result<serde_yaml::Value, Located> {
    match serde_yaml::from_str(text) {
        Ok(serde_yaml::Value::Null) => Ok(serde_yaml::Value::Mapping(Default::default())),
        Ok(v) => Ok(v),
        Err(e) => Err(syntax_error(&e, &PosMap::build(text))),
    }
}

/// Type a parsed document; errors are located in `text` by their field path (the
/// document may hold values that `text` does not, such as `--set` overrides).
pub(crate) fn deserialize(value: serde_yaml::Value, text: &str) -> Result<Config, Located> {
    take_nested();
    serde_path_to_error::deserialize::<_, Config>(value).map_err(|e| {
        let mut path = path_string(e.path());
        let raw = match take_nested() {
            Some(n) => {
                path = super::locate::join_path(&path, &n.rel);
                n.message
            }
            None => e.inner().to_string(),
        };
        let (field, target, message) = explain(path, &raw);
        let (line, column) = PosMap::build(text).locate(&field, target);
        Located { line, column, field, message }
    })
}

fn syntax_error(e: &serde_yaml::Error, map: &PosMap) -> Located {
    let raw = e.to_string();
    if raw.contains("duplicate entry") {
        if let Some((path, first, second)) = map.duplicates().first() {
            let key = path.rsplit('.').next().unwrap_or(path);
            return Located {
                line: second.line,
                column: second.column,
                field: path.clone(),
                message: format!("duplicate key `{key}` (first given at line {}); remove one", first.line),
            };
        }
    }
    let (line, column) = e.location().map_or((1, 1), |l| (l.line(), l.column()));
    // serde_yaml appends the position we report separately.
    let message = raw.replacen(&format!(" at line {line} column {column}"), "", 1);
    Located {
        line,
        column,
        field: map.error_path().unwrap_or_default().to_string(),
        message: format!("invalid YAML: {message}"),
    }
}

/// From serde's path and message to (field, what to point at, message for a user).
fn explain(path: String, raw: &str) -> (String, Target, String) {
    if let Some((name, valid)) = unknown_field_parts(raw) {
        // serde_path_to_error's path already ends with the unknown key.
        return (path, Target::Key, unknown_key_message(&name, &valid));
    }
    if raw.starts_with("unknown key") {
        return (path, Target::Key, raw.to_string());
    }
    if let Some(rest) = raw.strip_prefix("missing field `") {
        let name = rest.split('`').next().unwrap_or_default();
        return (join_key(&path, name), Target::Value, format!("missing required key `{name}`"));
    }
    if let Some(rest) = raw.strip_prefix("unknown variant ") {
        let mut quoted = rest.split('`').skip(1).step_by(2);
        let name = quoted.next().unwrap_or_default().to_string();
        let valid: Vec<&str> = quoted.collect();
        return (path, Target::Value, unknown_choice_message("value", &name, &valid));
    }
    (path, Target::Value, plain_expected(raw))
}

/// Rewrite serde's `expected u32` and friends into words.
fn plain_expected(raw: &str) -> String {
    let Some(i) = raw.rfind(", expected ") else { return raw.to_string() };
    let (head, expected) = (&raw[..i], &raw[i + ", expected ".len()..]);
    let words = match expected {
        "f64" | "f32" => "a number".to_string(),
        "u8" | "u16" | "u32" => {
            let max = match expected {
                "u8" => u8::MAX as u64,
                "u16" => u16::MAX as u64,
                _ => u32::MAX as u64,
            };
            format!("a whole number from 0 to {max}")
        }
        "u64" | "usize" => "a whole number ≥ 0".to_string(),
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number".to_string(),
        "a boolean" => "true or false".to_string(),
        "a YAML mapping" | "a map" => "a mapping".to_string(),
        "a sequence" => "a list (YAML sequence)".to_string(),
        e if e.starts_with("struct ") => "a mapping of keys to values".to_string(),
        e => e.to_string(),
    };
    format!("{head}, expected {words}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_type_names_become_words() {
        assert_eq!(
            plain_expected("invalid type: string \"x\", expected f64"),
            "invalid type: string \"x\", expected a number"
        );
        assert_eq!(
            plain_expected("invalid value: integer `-1`, expected u32"),
            "invalid value: integer `-1`, expected a whole number from 0 to 4294967295"
        );
        assert_eq!(plain_expected("invalid duration \"5 parsecs\""), "invalid duration \"5 parsecs\"");
    }

    #[test]
    fn missing_keys_are_named_in_the_path() {
        let (field, target, msg) = explain("cluster.node_types[0]".into(), "missing field `memory`");
        assert_eq!((field.as_str(), target), ("cluster.node_types[0].memory", Target::Value));
        assert_eq!(msg, "missing required key `memory`");
    }

    #[test]
    fn syntax_errors_are_located_without_repeating_the_position() {
        let e = parse("cluster:\n  head: [1, 2\n").unwrap_err();
        assert_eq!(e.field, "cluster.head");
        assert!(e.message.starts_with("invalid YAML: "), "{}", e.message);
        assert!(!e.message.contains(&format!("line {} column {}", e.line, e.column)), "{}", e.message);
        let e = parse("sim:\n  seed: 1\n  seed: 2\n").unwrap_err();
        assert_eq!((e.line, e.column, e.field.as_str()), (3, 3, "sim.seed"));
        assert!(e.message.contains("duplicate key `seed` (first given at line 2)"), "{}", e.message);
    }
}
