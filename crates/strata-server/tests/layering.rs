//! The server's modules form layers and every import points down (the crate's module docs,
//! `src/lib.rs`). This test reads the sources and fails when a module names a module of its
//! own layer or of a layer above it, when a new top-level module has no layer yet, or when the
//! data layers (`storage`, `types`) speak the wire protocol: they return errors, and only
//! `commands` turns them into reply texts.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Top-level modules by layer, from the bottom. Keep in step with `src/lib.rs`.
const LAYERS: &[&[&str]] = &[
    &["resp", "slots", "socket"],
    &["filing"],
    &["storage"],
    &["types"],
    &["acl", "config", "routing", "blocked", "script", "pubsub", "slowlog", "latency", "pause"],
    &["master_link", "replicas"],
    &["failover"],
    &["tracking"],
    &["state", "cluster"],
    &["commands"],
    &["sync_source"],
    &["server", "fuzz_api", "replicaof"],
    // `bin`: the other binaries (`strata-cluster`), beside `main`.
    &["lib", "main", "bin"],
];

/// Layers that hold data and must not format replies.
const DATA_LAYERS: &[&str] = &["storage", "types"];

/// How Redis error replies start; none of these may appear in a data layer's strings.
const ERROR_CODES: &[&str] = &["\"ERR ", "\"WRONGTYPE ", "\"NOAUTH ", "\"WRONGPASS ", "\"NOPROTO "];

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

/// The top-level module a source file belongs to (`lib` for `lib.rs`), and the file's depth
/// in the module tree (1 for a top-level module's own file, `x.rs` or `x/mod.rs`).
fn module_of(src: &Path, file: &Path) -> (String, usize) {
    let rel = file.strip_prefix(src).unwrap();
    let parts: Vec<&str> = rel.components().map(|c| c.as_os_str().to_str().unwrap()).collect();
    let first = parts[0].strip_suffix(".rs").unwrap_or(parts[0]).to_string();
    let depth = if parts.last() == Some(&"mod.rs") { parts.len() - 1 } else { parts.len() };
    (first, depth)
}

/// A file's non-test code without its comment lines.
fn code_of(text: &str) -> String {
    let code = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    code.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

fn ident(s: &str) -> String {
    s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect()
}

/// The names that follow a path prefix: `x` of `x::...`, or each item of `{x, y::z}`.
fn names_after(rest: &str) -> Vec<String> {
    let rest = rest.trim_start();
    let Some(inner) = rest.strip_prefix('{') else {
        return vec![ident(rest)];
    };
    let mut depth = 0;
    let mut items = vec![String::new()];
    for c in inner.chars() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(String::new());
                continue;
            }
            _ => {}
        }
        if let Some(last) = items.last_mut() {
            last.push(c);
        }
    }
    items.iter().map(|i| ident(i.trim_start())).collect()
}

/// Every top-level module (or crate-root item) that `code`, in a file at module depth
/// `depth`, names: through `crate::` paths, and through `super::` paths that climb to the
/// crate root.
fn top_level_paths(code: &str, depth: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().next_back();
        rest = &rest[i + "crate::".len()..];
        // `$crate::` and names ending in `crate` are not the crate root.
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        out.extend(names_after(rest));
    }
    let mut rest = code;
    while let Some(i) = rest.find("super::") {
        let before = rest[..i].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            rest = &rest[i + "super::".len()..];
            continue;
        }
        let mut after = &rest[i..];
        let mut ups = 0;
        while let Some(r) = after.strip_prefix("super::") {
            ups += 1;
            after = r;
        }
        rest = after;
        if ups >= depth {
            out.extend(names_after(after));
        }
    }
    out.retain(|n| !n.is_empty());
    out
}

#[test]
fn imports_point_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut problems = BTreeSet::new();
    for file in &files {
        let (from, depth) = module_of(&src, file);
        let rel = file.strip_prefix(&src).unwrap().display().to_string();
        let Some(from_layer) = layer_of(&from) else {
            problems.insert(format!("{from}: no layer (add it to LAYERS and src/lib.rs)"));
            continue;
        };
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        for to in top_level_paths(&code, depth) {
            if to == from {
                continue;
            }
            match layer_of(&to) {
                Some(to_layer) if to_layer < from_layer => {}
                Some(_) => {
                    problems.insert(format!("{rel}: {from} imports {to}, not below it"));
                }
                // A re-export at the crate root, not a module.
                None => {}
            }
        }
        if DATA_LAYERS.contains(&from.as_str()) {
            if top_level_paths(&code, depth).iter().any(|to| to == "resp") {
                problems.insert(format!("{rel}: {from} uses resp (replies are commands')"));
            }
            for code_prefix in ERROR_CODES {
                if code.contains(code_prefix) {
                    problems.insert(format!(
                        "{rel}: {from} holds the reply text {code_prefix}...\" (map a TypeError \
                         in commands::errors instead)"
                    ));
                }
            }
        }
    }
    let list: Vec<String> = problems.into_iter().collect();
    assert!(list.is_empty(), "layering problems:\n  {}", list.join("\n  "));
}

#[test]
fn the_path_reader_sees_every_form() {
    let code = "use crate::storage::Store;\nuse crate::{resp::Out, types};\nuse crate::{\n    \
                commands::{a, b},\n    state,\n};\nlet x = crate::config::parse(1);\n\
                use super::super::server;\nuse super::sibling;\nmacro: $crate::x; my_crate::y;";
    let found = top_level_paths(&code_of(code), 2);
    assert_eq!(
        found,
        ["storage", "resp", "types", "commands", "state", "config", "server"],
        "{found:?}"
    );
    // One level up from a top-level module's own file is the crate root.
    assert_eq!(top_level_paths("use super::run;", 1), ["run"]);
    assert!(top_level_paths("use super::run;", 2).is_empty());
    // Test modules and comment lines are not imports.
    let text =
        "// crate::server\nuse crate::types;\n#[cfg(test)]\nmod tests {\n    use crate::server;\n}";
    assert_eq!(top_level_paths(&code_of(text), 1), ["types"]);
}
