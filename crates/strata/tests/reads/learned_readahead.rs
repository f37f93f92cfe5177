//! Learned readahead at a seek (`sstable/readahead.rs`): when a table's iterators
//! keep reading the block after (or before) the one a seek lands on, a seek's read takes that
//! block too, so a short scan costs one table read, not two; point seeks keep one read each
//! (that they read one block's bytes is the unit tests'). Checked through the DB with no
//! block cache (every block comes from the file), counting table reads with `FaultFs`'s
//! recording, and every scan checked against a model (BTreeMap).

use std::collections::BTreeMap;
use std::sync::Arc;

use strata::env::{FaultFs, FaultOp, MemFs};
use strata::{CompressionType, Db, Options};

/// Table reads recorded since `fs.start_recording()`.
fn table_reads(fs: &FaultFs) -> usize {
    let is_table = |p: &std::path::Path| p.extension().is_some_and(|e| e == "sst");
    fs.recorded().iter().filter(|r| r.op == FaultOp::Read && is_table(&r.path)).count()
}

const KEYS: u64 = 20_000;

/// One table of `KEYS` entries of about 110 bytes in 1 KiB blocks (about nine a block), no
/// block cache, and its model.
fn loaded() -> (Db, FaultFs, BTreeMap<Vec<u8>, Vec<u8>>) {
    let fs = FaultFs::new(Arc::new(MemFs::new()), 1);
    let opts = Options {
        fs: Arc::new(fs.clone()),
        block_size: 1024,
        block_cache_size: 0,
        compression: CompressionType::None,
        target_file_size_base: 64 << 20,
        ..Options::default()
    };
    let db = Db::open(&opts, "/db").unwrap();
    let mut model = BTreeMap::new();
    for i in 0..KEYS {
        let (k, v) = (format!("key{i:08}").into_bytes(), format!("{i:0100}").into_bytes());
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    (db, fs, model)
}

/// A seek to a pseudo-random key, then `steps` entries forward (or backward from a
/// `seek_for_prev`), each checked against the model.
fn scan(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, i: u64, steps: usize, backward: bool) {
    let target = format!("key{:08}", (i * 7_919) % KEYS).into_bytes();
    let expected: Vec<_> = if backward {
        model.range(..=target.clone()).rev().take(steps + 1).collect()
    } else {
        model.range(target.clone()..).take(steps + 1).collect()
    };
    let mut it = db.raw_iterator();
    if backward {
        it.seek_for_prev(&target);
    } else {
        it.seek(&target);
    }
    for (n, (k, v)) in expected.into_iter().enumerate() {
        if n > 0 {
            if backward {
                it.prev();
            } else {
                it.next();
            }
        }
        assert_eq!(
            (it.key(), it.value()),
            (Some(&k[..]), Some(&v[..])),
            "scan {i} from {target:?}"
        );
    }
}

/// Table reads per scan over 500 scans, after 100 unmeasured ones (the table learns).
fn reads_per_scan(steps: usize, backward: bool) -> f64 {
    let (db, fs, model) = loaded();
    for i in 0..100 {
        scan(&db, &model, i, steps, backward);
    }
    fs.start_recording();
    for i in 100..600 {
        scan(&db, &model, i, steps, backward);
    }
    table_reads(&fs) as f64 / 500.0
}

#[test]
fn short_forward_scans_take_one_read_once_learned() {
    // Eight entries after the sought one: the next block is needed on most scans, and without
    // learning a scan takes 1 + (about 0.9) reads.
    let rps = reads_per_scan(8, false);
    assert!(rps < 1.2, "{rps} table reads per forward scan");
}

#[test]
fn short_backward_scans_take_one_read_once_learned() {
    let rps = reads_per_scan(8, true);
    assert!(rps < 1.2, "{rps} table reads per backward scan");
}

#[test]
fn point_seeks_take_one_read_each() {
    let rps = reads_per_scan(0, false);
    assert!((0.95..=1.0).contains(&rps), "{rps} table reads per point seek");
}
