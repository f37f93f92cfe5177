//! The engine's modules form layers and every import points down (`docs/design.md`, "Layers").
//! This test reads the sources and fails when a module names a module of its own layer or of
//! a layer above it, or when a new top-level module has no layer yet.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Top-level modules by layer, from the bottom. Keep in step with `docs/design.md`.
const LAYERS: &[&[&str]] = &[
    &["util", "error", "types", "statistics", "perf_context"],
    &[
        "stats",
        "env",
        "key",
        "filename",
        "prefix",
        "snapshot",
        "column_family",
        "cstr_like",
        "wide_columns",
    ],
    &["comparator"],
    &["cache", "merge_operator", "compaction_filter", "range_del", "write_batch"],
    &["iterator", "wal"],
    &["sstable"],
    &["memtable", "version"],
    &["blob"],
    &["compaction"],
    &["options"],
    &["db"],
    &["utilities"],
    &["compat"],
    &["lib", "fuzz_api", "inspect", "perf"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a source file belongs to (`lib` for `lib.rs`).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next().unwrap().as_os_str().to_str().unwrap();
    first.strip_suffix(".rs").unwrap_or(first).to_string()
}

/// Every `crate::name` a file's non-test code mentions.
fn crate_paths(text: &str) -> Vec<String> {
    let code = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    let mut out = Vec::new();
    for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let name: String =
                rest.chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
            // `crate::kill_point!` is util's macro, exported at the crate root.
            let name = if name == "kill_point" { "util".to_string() } else { name };
            if !name.is_empty() {
                out.push(name);
            }
        }
    }
    out
}

#[test]
fn imports_point_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut problems = BTreeSet::new();
    for file in &files {
        let name = file.file_name().unwrap().to_str().unwrap();
        if name == "tests.rs" || name == "conformance.rs" {
            continue; // test-only modules may use anything
        }
        let from = module_of(&src, file);
        let Some(from_layer) = layer_of(&from) else {
            problems.insert(format!("{from}: no layer (add it to LAYERS and docs/design.md)"));
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap();
        for to in crate_paths(&text) {
            if to == from {
                continue;
            }
            match layer_of(&to) {
                Some(to_layer) if to_layer < from_layer => {}
                Some(_) => {
                    let rel = file.strip_prefix(&src).unwrap().display().to_string();
                    problems.insert(format!("{rel}: {from} imports {to}, not below it"));
                }
                // A re-export at the crate root (`crate::Error`), not a module.
                None => {}
            }
        }
    }
    let list: Vec<String> = problems.into_iter().collect();
    assert!(list.is_empty(), "imports that do not point down:\n  {}", list.join("\n  "));
}
