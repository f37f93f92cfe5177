//! Universal compaction under a long fillrandom + overwrite: the DB stays equal to a model,
//! the sorted runs stay within the trigger, the size-amplification bound holds at rest, and
//! the space used stays within the bound of the live data; the same with one level
//! (`num_levels` 1, every run in L0), where a manual compaction leaves one L0 table.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::env::MemFs;
use strata::{
    CompactionStyle, CompressionType, Db, IteratorMode, Options, UniversalCompactionOptions,
};

fn opts(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        write_buffer_size: 64 << 10,
        target_file_size_base: 64 << 10,
        level0_file_num_compaction_trigger: 4,
        compression: CompressionType::None,
        compaction_style: CompactionStyle::Universal,
        compaction_options_universal: UniversalCompactionOptions {
            max_size_amplification_percent: 100,
            ..UniversalCompactionOptions::default()
        },
        ..Options::default()
    }
}

#[test]
fn fillrandom_then_overwrite_keeps_runs_and_size_amplification_bounded() {
    let fs = MemFs::new();
    fill_and_overwrite(&Db::open(&opts(&fs), "/db").unwrap(), 6);
}

#[test]
fn one_level_keeps_every_run_in_l0_and_compacts_into_one_table() {
    let fs = MemFs::new();
    let o = Options { num_levels: 1, ..opts(&fs) };
    let db = Db::open(&o, "/db").unwrap();
    fill_and_overwrite(&db, 0);
    let files = db.live_files_metadata();
    assert_eq!(files.len(), 1, "one sorted run after the manual compaction: {files:?}");
    assert_eq!(files[0].level, 0);
    let want: Vec<_> = db.iterator(IteratorMode::Start).map(|r| r.unwrap()).collect();
    drop(db);
    // Reopened with one level, and with seven (the tables stay in L0 until compacted).
    for levels in [1, 7] {
        let db = Db::open(&Options { num_levels: levels, ..opts(&fs) }, "/db").unwrap();
        let got: Vec<_> = db.iterator(IteratorMode::Start).map(|r| r.unwrap()).collect();
        assert_eq!(got, want, "reopened with {levels} levels");
    }
    // Every property answers (those of levels: L0's).
    let db = Db::open(&Options { num_levels: 1, ..opts(&fs) }, "/db").unwrap();
    for name in [
        "stats",
        "levelstats",
        "sstables",
        "base-level",
        "compaction-pending",
        "estimate-pending-compaction-bytes",
        "estimate-size-amplification-percent",
        "num-sorted-runs",
        "num-files-at-level0",
        "compression-ratio-at-level0",
        "estimate-live-data-size",
        "live-sst-files-size",
        "aggregated-table-properties",
    ] {
        let name = format!("rocksdb.{name}");
        db.property_value(&name).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    drop(db);
    // Leveled compaction needs a level below L0.
    let o = Options { num_levels: 1, compaction_style: CompactionStyle::Leveled, ..opts(&fs) };
    let e = Db::open(&o, "/db2").expect_err("one level with leveled compaction");
    assert!(e.to_string().contains("num_levels = 1: must be between 2 and 64"), "{e}");
}

/// The same with incremental size-amplification compactions over a real directory (for the
/// LOG): key ranges of the second oldest run merge into the oldest, several times per pass,
/// and the DB still equals the model with the same bounds.
#[test]
fn incremental_size_amplification_merges_key_ranges_and_keeps_every_key() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = MemFs::new();
    let o = Options {
        fs: Arc::new(strata::env::OsFs),
        // Windows of about 4 output files: each size-amplification step is partial.
        max_compaction_bytes: 8 * (64 << 10),
        compaction_options_universal: UniversalCompactionOptions {
            // A tight bound: size amplification (not size ratio) decides most merges.
            max_size_amplification_percent: 25,
            incremental: true,
            ..UniversalCompactionOptions::default()
        },
        ..opts(&fs)
    };
    fill_and_overwrite(&Db::open(&o, tmp.path()).unwrap(), 6);
    let log = std::fs::read_to_string(tmp.path().join("LOG")).unwrap();
    let partial = log.matches("(universal incremental size amplification)").count();
    let full = log.matches("(universal size amplification)").count();
    assert!(partial >= 5, "{partial} incremental and {full} full size-amplification merges");
}

/// Writes and checks as the tests above say; the oldest run ends in `last_level`.
fn fill_and_overwrite(db: &Db, last_level: usize) {
    let int = |name: &str| db.property_int_value(name).unwrap().unwrap();
    let mut rng = StdRng::seed_from_u64(16);
    let mut model = BTreeMap::new();
    let keys = 8000u32;
    let mut checks = 0;
    for pass in 0..6 {
        for i in 0..keys {
            // fillrandom, then overwrites of random keys.
            let k = if pass == 0 { i } else { rng.gen_range(0..keys) };
            let key = format!("key{k:06}");
            let value = vec![b'a' + (pass as u8); 100 + (k % 50) as usize];
            db.put(&key, &value).unwrap();
            model.insert(key.into_bytes(), value);
            if i % 2000 == 1999 {
                db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
                let runs = int("strata.num-sorted-runs");
                let amp = int("strata.estimate-size-amplification-percent");
                assert!(runs <= 4, "pass {pass}: {runs} sorted runs at rest");
                assert!(runs < 4 || amp < 100, "pass {pass}: size amplification {amp}%");
                checks += 1;
            }
        }
    }
    assert_eq!(checks, 24);
    // Runs were placed in levels: the oldest one in the last level.
    assert!(
        int(&format!("strata.num-files-at-level{last_level}")) > 0,
        "{}",
        db.property_value("strata.levelstats").unwrap().unwrap()
    );
    let got: BTreeMap<Vec<u8>, Vec<u8>> = db
        .iterator(IteratorMode::Start)
        .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())))
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(got, model);
    // Space: at most the oldest run (the live data, give or take) plus the bound's 100%.
    let before = int("strata.total-sst-files-size");
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let live = int("strata.total-sst-files-size");
    assert!(before <= live * 2 + (64 << 10) * 4, "space {before} vs live {live}");
    let stats = db.property_value("strata.stats").unwrap().unwrap();
    assert!(stats.contains("** Compaction Stats [default] **"), "{stats}");
}

#[test]
fn allow_trivial_move_moves_sequential_runs_without_rewriting() {
    let fs = MemFs::new();
    // Large outputs: a rewrite would merge several flushed files into one larger file.
    let o = Options {
        target_file_size_base: 4 << 20,
        compaction_options_universal: UniversalCompactionOptions {
            allow_trivial_move: true,
            ..UniversalCompactionOptions::default()
        },
        ..opts(&fs)
    };
    let db = Db::open(&o, "/db").unwrap();
    for i in 0..20_000u32 {
        db.put(format!("key{i:08}"), [b'v'; 100]).unwrap();
    }
    db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
    let files = db.live_files_metadata();
    assert!(db.property_int_value("strata.num-sorted-runs").unwrap().unwrap() <= 4);
    assert!(files.iter().any(|f| f.level > 0), "runs were moved below L0: {files:?}");
    // Sequential keys: every merge was a move, so every file is still a flushed one.
    assert!(files.iter().all(|f| f.size < 200 << 10), "a merge rewrote files: {files:?}");
    for i in (0..20_000u32).step_by(997) {
        assert!(db.get(format!("key{i:08}")).unwrap().is_some());
    }
}
