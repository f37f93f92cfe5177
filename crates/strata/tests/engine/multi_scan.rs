//! Multi-range scans (`Db::multi_scan`, RocksDB's `MultiScan`): each range yields what an
//! iterator bounded to it yields, at one consistent view, forward and backward, whatever the
//! coalescing threshold and prefetch limit; ranges that are out of order, overlapping, empty
//! or unbounded where a limit is needed are refused naming the range. A randomized run
//! checks scans against a model through memtables, flushes and compactions, with point and
//! range deletions, at a snapshot and at the latest state.

use std::collections::BTreeMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::{Db, Error, MultiScanArgs, Options, ReadOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn key(i: u32) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

fn small() -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: 16 << 10,
        block_size: 256,
        level0_file_num_compaction_trigger: 3,
        max_bytes_for_level_base: 64 << 10,
        target_file_size_base: 16 << 10,
        ..Options::default()
    }
}

/// Every range's entries, in the order the scan yields them.
fn scan_all(db: &Db, ro: &ReadOptions, args: &MultiScanArgs) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut ms = db.multi_scan(ro, args).unwrap();
    let mut out = Vec::new();
    while let Some(mut scan) = ms.next_scan() {
        assert_eq!(scan.index(), out.len());
        let mut entries = Vec::new();
        while let Some(r) = scan.next_entry() {
            let (k, v) = r.unwrap();
            entries.push((k.to_vec(), v.to_vec()));
        }
        out.push(entries);
    }
    assert_eq!(out.len(), args.len());
    out
}

/// What the model yields for each range of `args`.
fn expected(m: &Model, args: &MultiScanArgs, lower: Option<&[u8]>) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
    args.ranges()
        .iter()
        .map(|r| {
            let mut v: Vec<_> = m
                .iter()
                .filter(|(k, _)| {
                    k.as_slice() >= r.start.as_slice()
                        && r.limit.as_deref().is_none_or(|l| k.as_slice() < l)
                        && (args.reverse || lower.is_none_or(|l| k.as_slice() >= l))
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if args.reverse {
                v.reverse();
            }
            v
        })
        .collect()
}

/// Sorted, disjoint ranges over the key space `0..n`, the last one unbounded sometimes.
fn random_args(rng: &mut StdRng, n: u32) -> MultiScanArgs {
    let mut args = MultiScanArgs::new();
    args.reverse = rng.gen_bool(0.4);
    args.io_coalesce_threshold = [0, 1 << 10, 16 << 10][rng.gen_range(0..3)];
    args.max_prefetch_size = [0, 0, 700, 5 << 10][rng.gen_range(0..4)];
    let mut at = rng.gen_range(0..n / 4);
    for _ in 0..rng.gen_range(1..12) {
        let len = rng.gen_range(1..40);
        if at + len >= n {
            break;
        }
        args.insert(key(at), key(at + len));
        // Adjacent ranges sometimes: one starting at the limit of the one before.
        at += len + if rng.gen_bool(0.2) { 0 } else { rng.gen_range(1..200) };
    }
    if args.is_empty() {
        args.insert(key(0), key(1));
    }
    if !args.reverse && rng.gen_bool(0.2) && at < n {
        args.insert_from(key(at));
    }
    args
}

#[test]
fn multi_scans_read_what_the_model_holds() {
    const N: u32 = 3000;
    let seeds = std::env::var("STRATA_MULTI_SCAN_SEEDS").ok().and_then(|s| s.parse().ok());
    for seed in 0..seeds.unwrap_or(6u64) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&small(), dir.path()).unwrap();
        let mut rng = StdRng::seed_from_u64(seed);
        let mut m = Model::new();
        let write = |db: &Db, m: &mut Model, rng: &mut StdRng, n: usize| {
            for _ in 0..n {
                let i = rng.gen_range(0..N);
                let k = key(i);
                if rng.gen_bool(0.005) {
                    // A range deletion of up to 40 keys.
                    let end = key(i + rng.gen_range(1..40));
                    db.delete_range(&k, &end).unwrap();
                    m.retain(|x, _| x.as_slice() < k.as_slice() || x.as_slice() >= end.as_slice());
                } else if rng.gen_bool(0.15) {
                    db.delete(&k).unwrap();
                    m.remove(&k);
                } else {
                    let v = format!("v{}-{}", rng.gen::<u32>(), "x".repeat(rng.gen_range(0..60)));
                    db.put(&k, &v).unwrap();
                    m.insert(k, v.into_bytes());
                }
            }
        };
        write(&db, &mut m, &mut rng, 4000);
        if seed % 2 == 0 {
            db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        }
        write(&db, &mut m, &mut rng, 1500);
        db.flush().unwrap();
        write(&db, &mut m, &mut rng, 300);
        let snap = db.snapshot();
        let at_snap = m.clone();
        write(&db, &mut m, &mut rng, 1000);
        for round in 0..30 {
            let args = random_args(&mut rng, N);
            let lower = (round % 5 == 0).then(|| key(rng.gen_range(0..N)));
            let mut ro =
                ReadOptions { iterate_lower_bound: lower.clone(), ..ReadOptions::default() };
            // The read options' upper bound gives way to each range's.
            ro.iterate_upper_bound = Some(key(1));
            let (model, ro) = if round % 3 == 0 {
                let mut ro = ro;
                ro.set_snapshot(&snap);
                (&at_snap, ro)
            } else {
                (&m, ro)
            };
            let got = scan_all(&db, &ro, &args);
            let want = expected(model, &args, lower.as_deref());
            assert_eq!(got, want, "seed {seed} round {round}: {args:?}");
        }
    }
}

#[test]
fn a_scan_left_midway_does_not_disturb_the_next_range() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&small(), dir.path()).unwrap();
    for i in 0..500 {
        db.put(key(i), format!("v{i}")).unwrap();
    }
    db.flush().unwrap();
    let mut args = MultiScanArgs::new();
    args.insert(key(10), key(100));
    args.insert(key(100), key(103));
    args.insert(key(490), key(600));
    let mut ms = db.multi_scan(&ReadOptions::default(), &args).unwrap();
    let mut first = ms.next_scan().unwrap();
    assert_eq!(first.next().unwrap().unwrap().0.as_ref(), key(10).as_slice());
    let second: Vec<_> = ms.next_scan().unwrap().map(|r| r.unwrap().0.to_vec()).collect();
    assert_eq!(second, [key(100), key(101), key(102)]);
    let third = ms.next_scan().unwrap();
    assert_eq!(third.range().limit.as_deref(), Some(key(600).as_slice()));
    assert_eq!(third.count(), 10);
    assert!(ms.next_scan().is_none());
}

#[test]
fn bad_ranges_are_refused_naming_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&small(), dir.path()).unwrap();
    let ro = ReadOptions::default();
    let refused = |args: &MultiScanArgs, what: &str| {
        let e = db.multi_scan(&ro, args).err().expect("refused");
        assert!(matches!(&e, Error::InvalidArgument(m) if m.contains(what)), "{e}");
    };
    refused(&MultiScanArgs::new(), "at least one range");
    let mut a = MultiScanArgs::new();
    a.insert("b", "a");
    refused(&a, "scan range 0: start is not below limit");
    let mut a = MultiScanArgs::new();
    a.insert("a", "c");
    a.insert("b", "d");
    refused(&a, "scan range 1: starts below the limit");
    let mut a = MultiScanArgs::new();
    a.insert_from("a");
    a.insert("b", "c");
    refused(&a, "scan range 0: only the last range may have no limit");
    let mut a = MultiScanArgs::new();
    a.insert("a", "b");
    a.insert_from("c");
    a.reverse = true;
    refused(&a, "scan range 1: a reverse scan needs a limit");
    // A history is not scanned in ranges.
    let mut ro = ReadOptions::default();
    ro.set_iter_start_ts(1u64.to_le_bytes());
    let mut a = MultiScanArgs::new();
    a.insert("a", "b");
    assert!(matches!(db.multi_scan(&ro, &a), Err(Error::NotSupported(_))));
}
