//! How deeply a YAML document may nest, checked before any parser builds it.
//!
//! Owns: one linear pass over the document's text that stops at the first container
//! deeper than [`MAX_DEPTH`]. Why: both YAML parsers in use keep per-level state that
//! they walk for every token (and look ahead to the end of an unclosed flow collection),
//! so a flow nesting `[[[…` of 100k levels took 19.5 s, 800 KB more than two minutes,
//! and locating an error kept a path per node. No rayscope config or workload nests a
//! tenth as deep. The pass reads YAML's structure, not its values: flow brackets outside
//! quotes and comments, block indentation, and compact `- - x` sequences; block
//! scalars' lines are skipped.
//!
//! Must never: be slower than linear, or reject a document for anything but its depth
//! (syntax errors are the parser's to report, with its message).

/// Containers (mappings and sequences) open at once, at most (a line's block level counts as one).
pub const MAX_DEPTH: usize = 64;

/// Where a document first nests deeper than allowed (1-based line and column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooDeep {
    pub line: usize,
    pub column: usize,
}

impl std::fmt::Display for TooDeep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the document nests more than {MAX_DEPTH} mappings and sequences deep; rayscope configs need far fewer"
        )
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Quote {
    None,
    Single,
    Double,
}

/// `Err` at the first container opened deeper than [`MAX_DEPTH`].
pub fn check(text: &str) -> Result<(), TooDeep> {
    // Indentation of the open block collections, innermost last.
    let mut indents: Vec<usize> = Vec::new();
    let mut flow = 0usize;
    let mut quote = Quote::None;
    // A block scalar (`|`, `>`) runs while lines are indented more than this.
    let mut block_scalar: Option<usize> = None;
    for (n, line) in text.lines().enumerate() {
        let at = |column: usize| TooDeep { line: n + 1, column: column + 1 };
        let bytes = line.as_bytes();
        let indent = bytes.iter().take_while(|b| **b == b' ').count();
        let blank = indent == bytes.len() || bytes[indent] == b'#';
        if let Some(parent) = block_scalar {
            if blank || indent > parent {
                continue;
            }
            block_scalar = None;
        }
        let mut i = 0;
        if flow == 0 && quote == Quote::None && !blank {
            while indents.last().is_some_and(|&top| top >= indent) {
                indents.pop();
            }
            indents.push(indent);
            i = indent;
            // Compact nested sequences: each `- ` opens one more level on this line.
            while bytes.get(i) == Some(&b'-') && matches!(bytes.get(i + 1), Some(b' ') | None) {
                indents.push(i + 1);
                i += 2;
                while bytes.get(i) == Some(&b' ') {
                    i += 1;
                }
            }
            if indents.len() > MAX_DEPTH {
                return Err(at(indent));
            }
        }
        // Where a node may start: a bracket there opens a flow collection; elsewhere in a
        // block-context plain scalar it is text.
        let mut node_start = true;
        while i < bytes.len() {
            let c = bytes[i];
            match quote {
                Quote::Single => {
                    if c == b'\'' {
                        quote = Quote::None;
                    }
                }
                Quote::Double => match c {
                    b'\\' => i += 1,
                    b'"' => quote = Quote::None,
                    _ => {}
                },
                Quote::None => match c {
                    b'#' if i == 0 || bytes[i - 1] == b' ' || bytes[i - 1] == b'\t' => break,
                    b'\'' if node_start => quote = Quote::Single,
                    b'"' if node_start => quote = Quote::Double,
                    b'[' | b'{' if node_start || flow > 0 => {
                        flow += 1;
                        if indents.len() + flow > MAX_DEPTH {
                            return Err(at(i));
                        }
                    }
                    b']' | b'}' if flow > 0 => flow -= 1,
                    b'|' | b'>' if node_start && flow == 0 => {
                        block_scalar = Some(indents.last().copied().unwrap_or(0));
                        break;
                    }
                    _ => {}
                },
            }
            // After an indicator and a space (`: `, `- `, `, `), or a bracket, a node may start.
            node_start = match c {
                b' ' | b'\t' => {
                    node_start || matches!(i.checked_sub(1).map(|j| bytes[j]), Some(b':' | b'-' | b',' | b'?'))
                }
                b'[' | b'{' | b',' => flow > 0,
                _ => false,
            } && quote == Quote::None;
            i += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_flow_and_block_nesting_is_refused_at_the_first_level_too_many() {
        assert_eq!(check("a: [[1], {b: [2]}]\nc:\n  - d: 1\n"), Ok(()));
        let deep = "[".repeat(100_000);
        // The line's own block level counts too, so the 64th bracket is one too many.
        assert_eq!(check(&deep), Err(TooDeep { line: 1, column: MAX_DEPTH }));
        let ok = format!("{}1{}", "[".repeat(MAX_DEPTH - 1), "]".repeat(MAX_DEPTH - 1));
        assert_eq!(check(&ok), Ok(()));
        let block: String = (0..=MAX_DEPTH).map(|i| format!("{}k{i}:\n", "  ".repeat(i))).collect::<String>() + "    x";
        assert!(check(&block).is_err());
        let compact = format!("{}x\n", "- ".repeat(MAX_DEPTH + 1));
        assert!(check(&compact).is_err());
        // Brackets inside a block plain scalar, a quoted string or a comment are text,
        // and a block scalar's indentation is content.
        let text = format!("a: x{}\nb: '{}'\nc: 1 # {}\n", "[".repeat(100), "{".repeat(100), "[".repeat(100));
        assert_eq!(check(&text), Ok(()));
        let art: String = (0..100).map(|i| format!("{}*\n", " ".repeat(i + 2))).collect();
        assert_eq!(check(&format!("banner: |\n{art}next: 1\n")), Ok(()));
        // Syntax errors are the parser's to report.
        assert_eq!(check("a: [1, 2\nb: }"), Ok(()));
    }
}
