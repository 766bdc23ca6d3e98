//! The engine stays a thin top: every `impl Engine` block under `src/sim` together holds
//! at most 30 methods, private ones included (ARCHITECTURE.md, "The engine's
//! components"). Work that belongs to a component's state moves into that component
//! rather than growing the engine.

use std::path::{Path, PathBuf};

const MAX_ENGINE_METHODS: usize = 30;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/sim is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Whether a line opens an `impl` block of `Engine` itself (inherent or of a trait),
/// written at the start of a line as rustfmt leaves it.
fn opens_engine_impl(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("impl") else { return false };
    let Some(head) = rest.strip_suffix('{') else { return false };
    let ty = head.rsplit(" for ").next().unwrap_or(head).trim();
    let ty = ty.rsplit("::").next().unwrap_or(ty);
    (rest.starts_with(' ') || rest.starts_with('<')) && ty == "Engine"
}

/// The methods of each `impl Engine` block in `source`: the `fn` items one indent in.
fn engine_methods(source: &str) -> Vec<String> {
    let mut methods = Vec::new();
    let mut inside = false;
    for line in source.lines() {
        if !inside {
            inside = opens_engine_impl(line);
            continue;
        }
        if line == "}" {
            inside = false;
            continue;
        }
        let Some(item) = line.strip_prefix("    ") else { continue };
        if item.starts_with(' ') {
            continue;
        }
        let item = match item.strip_prefix("pub") {
            Some(rest) if rest.starts_with('(') => rest.split_once(") ").map_or(rest, |(_, r)| r),
            Some(rest) => rest.trim_start(),
            None => item,
        };
        let item = item.strip_prefix("const ").unwrap_or(item);
        if let Some(name) = item.strip_prefix("fn ") {
            methods.push(name.split(['(', '<']).next().unwrap_or(name).to_string());
        }
    }
    methods
}

#[test]
fn the_engine_holds_at_most_thirty_methods() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src/sim"), &mut files);
    files.sort();
    let mut all = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).expect("a source file is readable");
        for name in engine_methods(&source) {
            all.push(format!("{}: {name}", file.strip_prefix(root).unwrap_or(file).display()));
        }
    }
    // The count reads the real blocks: the engine's constructor and its step are found.
    assert!(all.iter().any(|m| m.ends_with("engine.rs: new")), "no `Engine::new` found: {all:#?}");
    assert!(all.iter().any(|m| m.ends_with(": step")), "no `Engine::step` found: {all:#?}");
    assert!(
        all.len() <= MAX_ENGINE_METHODS,
        "Engine has {} methods, more than {MAX_ENGINE_METHODS}: move work into the component that owns its state\n{}",
        all.len(),
        all.join("\n")
    );
}

#[test]
fn the_count_sees_every_kind_of_method() {
    let source = "impl Engine {\n    pub fn a(&self) {}\n    pub(crate) fn b<T>(&self) {}\n    fn c(&mut self) {\n        fn inner() {}\n    }\n    const fn d() {}\n}\n\
                  impl super::engine::Engine {\n    pub(in crate::sim) fn e(&self) {}\n}\n\
                  impl Drop for Engine {\n    fn drop(&mut self) {}\n}\n\
                  impl EngineHandle {\n    fn not_counted(&self) {}\n}\n";
    assert_eq!(engine_methods(source), ["a", "b", "c", "d", "e", "drop"]);
}
