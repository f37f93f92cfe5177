//! Only the adapter (`src/raft/`) names openraft: the storage, snapshot, state machine and
//! transport code use the crate's own types, so an openraft upgrade touches one module.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn only_the_raft_module_names_openraft() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 10, "found the sources");
    let mut offenders = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap();
        if rel.starts_with("raft") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let code: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        if code.contains("openraft") {
            offenders.push(rel.display().to_string());
        }
    }
    assert!(offenders.is_empty(), "openraft named outside src/raft/: {offenders:?}");
}
