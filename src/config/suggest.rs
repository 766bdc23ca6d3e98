//! Naming what was meant: the message for a key or a choice that is not one of the
//! valid ones, with the likely typo's correction. Shared by the parse's diagnosis
//! (`diagnose.rs`), the tagged enums (`tagged.rs`) and validation.

/// `unknown key `cpus` (did you mean `cpu`?); valid keys: name, cpu, …`
pub(crate) fn unknown_key_message(name: &str, valid: &[String]) -> String {
    let refs: Vec<&str> = valid.iter().map(String::as_str).collect();
    if refs.is_empty() {
        return format!("unknown key `{name}`; no keys are valid here");
    }
    format!("unknown key `{name}`{}; valid keys: {}", suggestion(name, &refs), refs.join(", "))
}

/// `unknown workload kind `fan_in` (did you mean `fan_out`?); valid workload kinds: …`
pub(crate) fn unknown_choice_message(what: &str, name: &str, valid: &[&str]) -> String {
    format!("unknown {what} `{name}`{}; valid {what}s: {}", suggestion(name, valid), valid.join(", "))
}

fn suggestion(name: &str, valid: &[&str]) -> String {
    did_you_mean(name, valid).map_or(String::new(), |s| format!(" (did you mean `{s}`?)"))
}

/// The closest candidate, if it is close enough to be a likely typo.
pub(crate) fn did_you_mean<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let lower = name.to_ascii_lowercase();
    candidates
        .iter()
        .map(|c| (edit_distance(&lower, &c.to_ascii_lowercase()), *c))
        .filter(|(d, c)| *d <= (c.chars().count() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_get_a_suggestion_and_strangers_do_not() {
        assert_eq!(did_you_mean("cpus", &["name", "cpu", "gpu"]), Some("cpu"));
        assert_eq!(did_you_mean("FAN_OUT", &["fan_out", "training"]), Some("fan_out"));
        assert_eq!(did_you_mean("bananas", &["cpu", "gpu"]), None);
    }
}
