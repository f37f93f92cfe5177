//! Many compactions under a random workload (puts, deletes, merges, snapshots, reopens) keep
//! the DB equal to a model, in each compaction style; `compact_range` brings the space used
//! close to the live data.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::env::MemFs;
use strata::merge_operator::builtin_merge_operator;
use strata::{
    CompactionStyle, CompressionType, Db, FifoCompactionOptions, IteratorMode, Options,
    ReadOptions, TieredCompactionOptions,
};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn opts(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        write_buffer_size: 32 << 10,
        block_size: 1024,
        level0_file_num_compaction_trigger: 2,
        max_bytes_for_level_base: 64 << 10,
        max_bytes_for_level_multiplier: 4.0,
        target_file_size_base: 32 << 10,
        max_subcompactions: 2,
        max_background_jobs: 3,
        merge_operator: builtin_merge_operator("uint64add"),
        compression: CompressionType::None,
        ..Options::default()
    }
}

fn counter(v: &[u8]) -> u64 {
    u64::from_le_bytes(v.try_into().unwrap())
}

fn scan(db: &Db, ro: &ReadOptions) -> Model {
    db.iterator_opt(IteratorMode::Start, ro)
        .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())))
        .collect::<Result<_, _>>()
        .unwrap()
}

/// `opts` in `style`; FIFO with room for everything (nothing expires) and intra-L0 merges;
/// tiered with fan-in 3 and a budget of 4 runs.
fn style_opts(fs: &MemFs, style: CompactionStyle) -> Options {
    Options {
        compaction_style: style,
        compaction_options_tiered: TieredCompactionOptions {
            fan_in: 3,
            max_sorted_runs: 4,
            max_size_amplification_percent: 200,
            // Every table's filter sized from the runs around it: reads stay exact.
            skewed_filter_bits: true,
        },
        compaction_options_fifo: FifoCompactionOptions {
            max_table_files_size: 1 << 40,
            ttl_secs: 0,
            allow_compaction: true,
        },
        ..opts(fs)
    }
}

#[test]
fn randomized_compactions_match_model() {
    randomized_compactions(CompactionStyle::Leveled);
}

#[test]
fn randomized_universal_compactions_match_model() {
    randomized_compactions(CompactionStyle::Universal);
}

#[test]
fn randomized_fifo_compactions_match_model() {
    randomized_compactions(CompactionStyle::Fifo);
}

#[test]
fn randomized_tiered_compactions_match_model() {
    randomized_compactions(CompactionStyle::Tiered);
}

/// Universal with incremental size-amplification merges of windows of about two files: key
/// ranges of the second oldest run merge into the oldest, with deletions, merges and
/// snapshots in the mix.
#[test]
fn randomized_incremental_universal_compactions_match_model() {
    randomized_compactions_with(CompactionStyle::Universal, |o| Options {
        max_compaction_bytes: 4 * o.target_file_size_base,
        compaction_options_universal: strata::UniversalCompactionOptions {
            incremental: true,
            // A tight bound: size amplification (not size ratio) decides most merges.
            max_size_amplification_percent: 25,
            ..o.compaction_options_universal
        },
        ..o
    });
}

/// Tables whose blocks helper threads compress (`compression_parallel_threads`): small output
/// files, so outputs are cut while blocks are still out, with everything else in the mix.
#[test]
fn randomized_compactions_with_parallel_compression_match_model() {
    randomized_compactions_with(CompactionStyle::Leveled, |o| Options {
        compression: CompressionType::Snappy,
        compression_parallel_threads: 2,
        ..o
    });
}

fn randomized_compactions(style: CompactionStyle) {
    randomized_compactions_with(style, |o| o);
}

fn randomized_compactions_with(style: CompactionStyle, tweak: impl Fn(Options) -> Options) {
    let fs = MemFs::new();
    let mut rng = StdRng::seed_from_u64(42);
    let opts = |fs: &MemFs| tweak(style_opts(fs, style));
    let mut db = Db::open(&opts(&fs), "/db").unwrap();
    let mut model = Model::new();
    let mut snaps: Vec<(strata::Snapshot, Model)> = Vec::new();
    for round in 0..40 {
        for _ in 0..1500 {
            let k = format!("key{:05}", rng.gen_range(0..3000)).into_bytes();
            match rng.gen_range(0..10) {
                0 => {
                    db.delete(&k).unwrap();
                    model.remove(&k);
                }
                1 | 2 => {
                    // Counters live in their own key space so values stay 8 bytes.
                    let mut ck = b"ctr".to_vec();
                    ck.extend_from_slice(&k[3..]);
                    let add = rng.gen_range(1..100u64);
                    db.merge(&ck, add.to_le_bytes()).unwrap();
                    let cur = model.get(&ck).map_or(0, |v| counter(v));
                    model.insert(ck, (cur + add).to_le_bytes().to_vec());
                }
                _ => {
                    let v = vec![b'a' + (round % 26) as u8; rng.gen_range(10..200)];
                    db.put(&k, &v).unwrap();
                    model.insert(k, v);
                }
            }
        }
        if rng.gen_bool(0.25) {
            snaps.push((db.snapshot(), model.clone()));
        }
        if snaps.len() > 3 {
            snaps.remove(0);
        }
        if round % 10 == 9 {
            drop(std::mem::take(&mut snaps));
            drop(db);
            db = Db::open(&opts(&fs), "/db").unwrap();
        }
        for (snap, m) in &snaps {
            let mut ro = ReadOptions::default();
            ro.set_snapshot(snap);
            assert_eq!(&scan(&db, &ro), m, "round {round}: snapshot view");
        }
        for _ in 0..200 {
            let k = format!("key{:05}", rng.gen_range(0..3000)).into_bytes();
            assert_eq!(db.get(&k).unwrap().as_ref(), model.get(&k), "round {round}");
        }
    }
    db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
    assert_eq!(scan(&db, &ReadOptions::default()), model);
    let stats = db.property_value("strata.stats").unwrap().unwrap();
    assert!(stats.contains("** Compaction Stats [default] **"), "{stats}");
    let levels: Vec<u64> = (0..7)
        .map(|l| db.property_int_value(format!("strata.num-files-at-level{l}")).unwrap().unwrap())
        .collect();
    let int = |name: &str| db.property_int_value(name).unwrap().unwrap();
    match style {
        CompactionStyle::Leveled => {
            assert!(
                levels[1..].iter().sum::<u64>() > 0,
                "compaction moved data below L0: {levels:?}"
            );
            assert!(levels[0] < 20, "L0 kept small: {levels:?}");
        }
        CompactionStyle::Universal => {
            // At rest: at most `trigger` (2) sorted runs, and with that many, the runs above
            // the oldest within 200% of it.
            let runs = int("strata.num-sorted-runs");
            let amp = int("strata.estimate-size-amplification-percent");
            assert!(runs <= 2, "sorted runs {runs}: {levels:?}");
            assert!(runs < 2 || amp < 200, "size amplification {amp}% with {runs} runs");
        }
        CompactionStyle::Tiered => {
            // At rest: within the budget of 4 runs and the 200% space bound.
            let runs = int("strata.num-sorted-runs");
            let amp = int("strata.estimate-size-amplification-percent");
            assert!(runs <= 4, "sorted runs {runs}: {levels:?}");
            assert!(amp < 200, "size amplification {amp}% with {runs} runs");
        }
        CompactionStyle::Fifo => {
            assert_eq!(levels[1..].iter().sum::<u64>(), 0, "FIFO keeps files in L0: {levels:?}");
            let stats = db.property_value("strata.stats").unwrap().unwrap();
            assert!(stats.contains("L0 "), "{stats}");
        }
    }

    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(scan(&db, &ReadOptions::default()), model);
    drop(db);
    let db = Db::open(&opts(&fs), "/db").unwrap();
    assert_eq!(scan(&db, &ReadOptions::default()), model);
}

#[test]
fn compact_range_reclaims_overwritten_and_deleted_space() {
    let fs = MemFs::new();
    let o = Options { merge_operator: None, ..opts(&fs) };
    let db = Db::open(&o, "/db").unwrap();
    let value = vec![b'x'; 500];
    for pass in 0..5 {
        for i in 0..2000u32 {
            db.put(format!("k{i:05}"), &value).unwrap();
        }
        if pass == 4 {
            for i in 0..1000u32 {
                db.delete(format!("k{i:05}")).unwrap();
            }
        }
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let size = db.property_int_value("strata.total-sst-files-size").unwrap().unwrap();
    let live = 1000 * (500 + 6 + 8);
    assert!(size < live * 13 / 10, "sst bytes {size} vs live {live}");
    assert!(size > live * 9 / 10, "sst bytes {size} vs live {live}");
    assert_eq!(db.iterator(IteratorMode::Start).count(), 1000);
    assert_eq!(db.get("k00000").unwrap(), None);
    assert_eq!(db.get("k01999").unwrap().unwrap(), value);
    let levelstats = db.property_value("strata.levelstats").unwrap().unwrap();
    assert!(levelstats.starts_with("Level Files Size(MB)\n--------------------\n"));
}
