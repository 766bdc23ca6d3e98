//! The docs read as a guide: the README opens with what rayscope is and its two set-up
//! commands, every relative link in the guide's pages reaches a file (and a heading,
//! when it names one), and the pages the project bounds stay within their bounds
//! (ARCHITECTURE.md on 300 lines; BENCHMARKS.md one table of short cells, its history
//! in docs/).
//!
//! Reads Markdown as text: links inside code (fenced blocks, `inline spans`) are not
//! links, and a heading's anchor is GitHub's (lower case, punctuation dropped, spaces
//! to hyphens, `-1`, `-2` for repeats).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The pages whose links must resolve: the top-level guide, docs/ and scripts/README.md.
fn guide_pages() -> Vec<String> {
    let mut pages = vec!["README.md".to_string(), "ARCHITECTURE.md".into(), "BENCHMARKS.md".into()];
    pages.push("scripts/README.md".into());
    let mut docs: Vec<String> = std::fs::read_dir(repo().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("a docs/ entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// The text with fenced code blocks blanked (line numbers kept) and inline code removed.
fn prose_lines(text: &str) -> Vec<String> {
    let mut fenced = false;
    text.lines()
        .map(|line| {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                return String::new();
            }
            if fenced {
                return String::new();
            }
            // Drop `code spans`: an odd backtick opens one, the next closes it.
            line.split('`').step_by(2).collect::<Vec<_>>().join(" ")
        })
        .collect()
}

/// Every `[text](target)` link of a page: (line number, target).
fn links(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in prose_lines(text).iter().enumerate() {
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            found.push((n + 1, after[..end].trim().to_string()));
            rest = &after[end..];
        }
    }
    found
}

/// GitHub's anchors for a page's headings.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for line in prose_lines(text) {
        let Some(title) = line.strip_prefix('#') else { continue };
        let title = title.trim_start_matches('#');
        if !title.starts_with(' ') {
            continue;
        }
        let slug: String = title
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut unique = slug.clone();
        let mut n = 0;
        while seen.contains(&unique) {
            n += 1;
            unique = format!("{slug}-{n}");
        }
        seen.insert(unique);
    }
    seen
}

#[test]
fn every_relative_link_in_the_guide_reaches_a_file_and_its_heading() {
    let mut broken = Vec::new();
    for page in guide_pages() {
        let text = read(&page);
        let dir = Path::new(&page).parent().unwrap_or(Path::new("")).to_path_buf();
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((file, anchor)) => (file, Some(anchor)),
                None => (target.as_str(), None),
            };
            let resolved = if file.is_empty() { PathBuf::from(&page) } else { dir.join(file) };
            let on_disk = repo().join(&resolved);
            if !on_disk.exists() {
                broken.push(format!("{page}:{line}: {target}: no file {}", resolved.display()));
                continue;
            }
            if let Some(anchor) = anchor {
                let heads = anchors(&std::fs::read_to_string(&on_disk).unwrap_or_default());
                if !heads.contains(anchor) {
                    broken.push(format!("{page}:{line}: {target}: {} has no heading #{anchor}", resolved.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_opens_with_what_rayscope_is_then_the_two_setup_commands() {
    let readme = read("README.md");
    let first: Vec<&str> = readme.lines().take(12).collect();
    let run = first.iter().position(|l| l.starts_with("cargo run --release"));
    let test = first.iter().position(|l| l.starts_with("./scripts/test"));
    assert!(
        run.is_some() && test.is_some(),
        "the README's first 12 lines give `cargo run --release` and `./scripts/test`:\n{}",
        first.join("\n")
    );
    let said = first[..run.unwrap()].join(" ");
    assert!(
        said.contains("rayscope is") && said.contains("Ray"),
        "the README says what rayscope is before its commands:\n{said}"
    );
    // CI runs the README's test command and nothing else.
    let ci = read(".ci/run");
    assert!(ci.lines().any(|l| l.trim() == "exec ./scripts/test"), ".ci/run runs the README's test command");
}

#[test]
fn the_readmes_first_screen_names_the_supported_ray_versions_and_the_kubernetes_path() {
    let readme = read("README.md");
    let screen = readme.lines().take(24).collect::<Vec<_>>().join("\n");
    for needed in ["2.49 to 2.60", "deploy/kubernetes/", "docs/kubernetes.md"] {
        assert!(screen.contains(needed), "the README's first 24 lines name {needed:?}:\n{screen}");
    }
    // The range is the one rayscope accepts for --ray-version.
    let (oldest, newest) = (rayscope::config::ray_series::OLDEST_RAY, rayscope::config::ray_series::NEWEST_RAY);
    assert!(screen.contains(&format!("{}.{} to {}.{}", oldest.0, oldest.1, newest.0, newest.1)));
}

#[test]
fn architecture_fits_on_300_lines() {
    let lines = read("ARCHITECTURE.md").lines().count();
    assert!(
        lines <= 300,
        "ARCHITECTURE.md has {lines} lines: move detail to docs/ (simplifications, calibration, performance)"
    );
}

#[test]
fn benchmarks_is_one_table_of_short_cells_with_its_history_in_docs() {
    let text = read("BENCHMARKS.md");
    let prose = prose_lines(&text);
    let rows: Vec<&String> = prose.iter().filter(|l| l.starts_with('|')).collect();
    let headers = rows.windows(2).filter(|w| w[1].starts_with("|---")).count();
    assert_eq!(headers, 1, "BENCHMARKS.md holds one table of current figures");
    for row in &rows {
        for cell in row.split('|') {
            assert!(
                cell.len() <= 400,
                "a BENCHMARKS.md cell of {} characters: summarize it, the notes go to docs/benchmarks-history.md",
                cell.len()
            );
        }
    }
    let header = rows[0].to_lowercase();
    for column in ["command", "machine", "date"] {
        assert!(header.contains(column), "every figure has its {column}: {header}");
    }
    assert!(text.contains("## How to measure"), "BENCHMARKS.md says how to measure");
    assert!(repo().join("docs/benchmarks-history.md").exists(), "the measurements' history is kept");
}
