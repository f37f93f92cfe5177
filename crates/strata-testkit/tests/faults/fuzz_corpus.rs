//! Runs every fuzz target over its committed corpus (`fuzz/corpus/<target>/`) on stable Rust,
//! without cargo-fuzz, plus random and mutated inputs from proptest.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use proptest::prelude::*;
use strata_testkit::fuzz::{write_seed_corpus, Target, TARGETS};

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus")
}

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = corpus_dir().join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files.into_iter().map(|p| (p.display().to_string(), std::fs::read(&p).unwrap())).collect()
}

#[test]
fn replay_committed_corpus() {
    for (name, target) in TARGETS {
        let files = corpus(name);
        assert!(!files.is_empty(), "no corpus for {name}");
        for (path, data) in files {
            let r = catch_unwind(AssertUnwindSafe(|| target(&data)));
            assert!(r.is_ok(), "{name} panicked on {path}");
        }
    }
}

/// Regenerates the seed files: `cargo test -p strata-testkit --test faults fuzz_corpus -- --ignored`.
#[test]
#[ignore = "writes the seed corpus into fuzz/corpus"]
fn write_seed_corpus_files() {
    write_seed_corpus(&corpus_dir()).unwrap();
}

fn target(name: &str) -> Target {
    TARGETS.iter().find(|(n, _)| *n == name).unwrap().1
}

/// A corpus file of `name` with a few random edits: flips, overwrites, truncation, insertion.
fn mutated(name: &'static str) -> impl Strategy<Value = Vec<u8>> {
    let seeds = corpus(name);
    (0..seeds.len(), prop::collection::vec((any::<u8>(), any::<u16>(), any::<u8>()), 1..6))
        .prop_map(move |(i, edits)| {
            let mut d = seeds[i].1.clone();
            for (kind, at, byte) in edits {
                let at = if d.is_empty() { 0 } else { usize::from(at) % d.len() };
                match kind % 4 {
                    0 if !d.is_empty() => d[at] ^= 1 << (byte % 8),
                    1 if !d.is_empty() => d[at] = byte,
                    2 => d.truncate(at),
                    _ => d.insert(at, byte),
                }
            }
            d
        })
}

macro_rules! fuzz_props {
    ($($test:ident: $name:literal, $cases:expr;)*) => {$(
        proptest! {
            #![proptest_config(ProptestConfig { cases: $cases, failure_persistence: None, ..ProptestConfig::default() })]
            #[test]
            fn $test(random in prop::collection::vec(any::<u8>(), 0..1500), edited in mutated($name)) {
                let t = target($name);
                t(&random);
                t(&edited);
            }
        }
    )*};
}

fuzz_props! {
    prop_wal_reader: "wal_reader", 256;
    prop_block: "block", 256;
    prop_table: "table", 256;
    prop_version_edit: "version_edit", 256;
    prop_manifest: "manifest", 256;
    prop_write_batch: "write_batch", 256;
    prop_db_ops: "db_ops", 64;
    prop_blob_file: "blob_file", 256;
    prop_db_blobs: "db_blobs", 64;
}
