//! Damaged files never produce a panic or a wrong answer: every bit flip and truncation of
//! each file of a small DB gives a clean error or a point-in-time prefix of the history.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::env::{FileSystem, MemFs};
use strata::{Db, Options};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const KEYS: u32 = 24;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:03}").into_bytes()
}

fn options(fs: &MemFs) -> Options {
    Options { fs: Arc::new(fs.clone()), paranoid_checks: true, ..Options::default() }
}

/// Builds the DB: some keys flushed to a table, later writes only in the WAL. Returns the
/// filesystem and the model after each write.
fn build() -> (MemFs, Vec<Model>) {
    let fs = MemFs::new();
    let path = PathBuf::from("/db");
    let db = Db::open(&options(&fs), &path).unwrap();
    let mut history = vec![Model::new()];
    let mut model = Model::new();
    for i in 0..KEYS {
        let v = format!("first-{i}").into_bytes();
        db.put(key(i), &v).unwrap();
        model.insert(key(i), v);
        history.push(model.clone());
    }
    db.flush().unwrap();
    for i in (0..KEYS).step_by(3) {
        let v = format!("second-{i}").into_bytes();
        db.put(key(i), &v).unwrap();
        model.insert(key(i), v);
        history.push(model.clone());
        db.delete(key(i + 1)).unwrap();
        model.remove(&key(i + 1));
        history.push(model.clone());
    }
    drop(db);
    (fs, history)
}

fn clone_fs(fs: &MemFs) -> MemFs {
    let copy = MemFs::new();
    copy.create_dir_all(Path::new("/db")).unwrap();
    for p in fs.paths() {
        if p.file_name().is_some_and(|n| n == "LOCK") {
            continue;
        }
        copy.write_file(&p, &fs.read_file(&p).unwrap());
    }
    copy
}

#[derive(Debug, Default)]
struct Outcomes {
    clean_error: u64,
    intact: u64,
    prefix: u64,
    wrong: Vec<String>,
    panics: Vec<String>,
}

fn classify(fs: MemFs, history: &[Model], what: &str, out: &mut Outcomes) {
    let r = catch_unwind(AssertUnwindSafe(|| -> Result<Model, strata::Error> {
        let db = Db::open(&options(&fs), "/db")?;
        let mut m = Model::new();
        for i in 0..=KEYS {
            if let Some(v) = db.get(key(i))? {
                m.insert(key(i), v);
            }
        }
        Ok(m)
    }));
    match r {
        Err(_) => out.panics.push(what.to_string()),
        Ok(Err(e)) => {
            let s = e.to_string();
            assert!(!s.is_empty());
            out.clean_error += 1;
        }
        Ok(Ok(m)) => {
            if history.last() == Some(&m) {
                out.intact += 1;
            } else if history.contains(&m) {
                out.prefix += 1;
            } else {
                out.wrong.push(what.to_string());
            }
        }
    }
}

#[test]
fn bit_flips_and_truncations_in_every_file() {
    let (fs, history) = build();
    let files = fs.paths();
    let mut kinds_seen = Vec::new();
    let mut out = Outcomes::default();
    for path in &files {
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if name == "LOCK" {
            continue;
        }
        kinds_seen.push(name.clone());
        let data = fs.read_file(path).unwrap();
        // Every byte, except in the zeros ending a WAL (zeros ahead of its records): a sample.
        let content = data.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        let dense = (content + 4096).min(data.len());
        let offsets: Vec<usize> = (0..dense).chain((dense..data.len()).step_by(4093)).collect();
        for &off in &offsets {
            let copy = clone_fs(&fs);
            let mut d = data.clone();
            d[off] ^= 1 << (off % 8);
            copy.write_file(path, &d);
            classify(copy, &history, &format!("{name} flip at {off}"), &mut out);
        }
        let step = (offsets.len() / 64).max(1);
        for len in offsets.iter().copied().step_by(step) {
            let copy = clone_fs(&fs);
            copy.write_file(path, &data[..len]);
            classify(copy, &history, &format!("{name} truncated to {len}"), &mut out);
        }
        let copy = clone_fs(&fs);
        copy.remove(path).unwrap();
        classify(copy, &history, &format!("{name} deleted"), &mut out);
    }
    eprintln!("files: {kinds_seen:?}");
    eprintln!(
        "outcomes: clean errors {}, intact {}, prefix recoveries {}, wrong answers {}, panics {}",
        out.clean_error,
        out.intact,
        out.prefix,
        out.wrong.len(),
        out.panics.len()
    );
    assert!(kinds_seen.iter().any(|n| n.to_lowercase().ends_with(".sst")));
    assert!(kinds_seen.iter().any(|n| n.to_lowercase().ends_with(".log")));
    assert!(kinds_seen.iter().any(|n| n.starts_with("MANIFEST")));
    assert!(kinds_seen.iter().any(|n| n == "CURRENT"));
    assert!(out.panics.is_empty(), "panics: {:?}", out.panics);
    assert!(out.wrong.is_empty(), "wrong answers: {:?}", out.wrong);
    assert!(out.clean_error > 0 && out.prefix > 0);
}
