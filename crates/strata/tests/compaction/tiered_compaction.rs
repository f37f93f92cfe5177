//! Tiered (write-optimised) compaction under fillrandom + overwrite: the DB stays equal to a
//! model, the sorted-run budget and the space bound hold at rest, and the same workload writes
//! fewer bytes per flushed byte than leveled compaction.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::env::MemFs;
use strata::{
    CompactionStyle, CompressionType, Db, IteratorMode, Options, TieredCompactionOptions,
};

fn opts(fs: &MemFs, style: CompactionStyle) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        write_buffer_size: 64 << 10,
        target_file_size_base: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        level0_file_num_compaction_trigger: 4,
        compression: CompressionType::None,
        compaction_style: style,
        compaction_options_tiered: TieredCompactionOptions {
            fan_in: 4,
            max_sorted_runs: 8,
            max_size_amplification_percent: 100,
            skewed_filter_bits: false,
        },
        ..Options::default()
    }
}

fn ticker(db: &Db, name: &str) -> u64 {
    let stats = db.property_value("strata.statistics").unwrap().unwrap();
    let line = stats.lines().find(|l| l.starts_with(&format!("{name} COUNT : "))).unwrap();
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// Fills 8000 keys, overwrites them 5 times at random, checking `at_rest` 24 times; returns
/// the DB, its model and the bytes written (flushes + compactions) per flushed byte.
fn fill_and_overwrite(
    style: CompactionStyle,
    mut at_rest: impl FnMut(&Db, usize),
) -> (Db, BTreeMap<Vec<u8>, Vec<u8>>, f64) {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs, style), "/db").unwrap();
    let mut rng = StdRng::seed_from_u64(16);
    let mut model = BTreeMap::new();
    let keys = 8000u32;
    let mut checks = 0;
    for pass in 0..6 {
        for i in 0..keys {
            let k = if pass == 0 { i } else { rng.gen_range(0..keys) };
            let key = format!("key{k:06}");
            let value = vec![b'a' + (pass as u8); 100 + (k % 50) as usize];
            db.put(&key, &value).unwrap();
            model.insert(key.into_bytes(), value);
            if i % 2000 == 1999 {
                db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
                at_rest(&db, pass);
                checks += 1;
            }
        }
    }
    assert_eq!(checks, 24);
    db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
    let flushed = ticker(&db, "rocksdb.flush.write.bytes");
    let compacted = ticker(&db, "rocksdb.compact.write.bytes");
    assert!(flushed > 0 && compacted > 0, "flushed {flushed}, compacted {compacted}");
    let w_amp = (flushed + compacted) as f64 / flushed as f64;
    (db, model, w_amp)
}

#[test]
fn fillrandom_then_overwrite_keeps_the_run_budget_and_the_space_bound() {
    let (db, model, _) = fill_and_overwrite(CompactionStyle::Tiered, |db, pass| {
        let int = |name: &str| db.property_int_value(name).unwrap().unwrap();
        let runs = int("strata.num-sorted-runs");
        let amp = int("strata.estimate-size-amplification-percent");
        assert!(runs <= 8, "pass {pass}: {runs} sorted runs at rest");
        assert!(amp < 100, "pass {pass}: size amplification {amp}% at rest");
        // Every compaction is settled: nothing left to estimate.
        assert_eq!(int("strata.estimate-pending-compaction-bytes"), 0, "pass {pass}");
    });
    let int = |name: &str| db.property_int_value(name).unwrap().unwrap();
    assert!(
        int("strata.num-files-at-level6") > 0,
        "the oldest run is in the last level: {}",
        db.property_value("strata.levelstats").unwrap().unwrap()
    );
    let got: BTreeMap<Vec<u8>, Vec<u8>> = db
        .iterator(IteratorMode::Start)
        .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())))
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(got, model);
    for (k, v) in model.iter().step_by(97) {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(v.as_slice()));
    }
}

/// The point of the style: on the same overwrite workload it rewrites less than leveled.
/// (Write amplification is a byte count, not a speed.)
#[test]
fn tiered_writes_less_than_leveled() {
    let (_, _, tiered) = fill_and_overwrite(CompactionStyle::Tiered, |_, _| {});
    let (_, _, leveled) = fill_and_overwrite(CompactionStyle::Leveled, |_, _| {});
    assert!(tiered < leveled, "write amplification: tiered {tiered:.2}, leveled {leveled:.2}");
}
