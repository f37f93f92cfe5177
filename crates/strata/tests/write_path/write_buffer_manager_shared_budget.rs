//! Two DBs share one `WriteBufferManager` with a budget far below their `write_buffer_size`:
//! while both write, the manager's count of memtable memory stays within the budget plus the
//! documented slack (with stalls allowed: one arena chunk and one write group per DB), the
//! budget alone makes them flush, and each DB holds exactly what a `BTreeMap` model holds.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata::env::MemFs;
use strata::{Db, IteratorMode, Options, WriteBatch, WriteBufferManager};

const BUDGET: usize = 3 << 20;
/// Per writing DB: one standard arena chunk (1 MiB), reserved by a write that passed the
/// stall check just before memory reached the budget, plus that write's own bytes.
const SLACK_PER_DB: usize = (1 << 20) + (64 << 10);

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn open(fs: &MemFs, path: &str, m: &Arc<WriteBufferManager>) -> Db {
    let o = Options {
        fs: Arc::new(fs.clone()),
        write_buffer_size: 256 << 20,
        max_write_buffer_number: 4,
        write_buffer_manager: Some(m.clone()),
        ..Options::default()
    };
    Db::open(&o, path).unwrap()
}

/// Random puts (values of 200 to 2000 bytes) and deletes over 4000 keys, some in batches,
/// until `bytes` were written; returns the model.
fn write(db: &Db, seed: u64, bytes: usize) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut rng = Rng(seed);
    let mut model = BTreeMap::new();
    let mut written = 0;
    while written < bytes {
        let mut batch = WriteBatch::default();
        let n = 1 + rng.next() % 4;
        for _ in 0..n {
            let k = format!("key{:06}", rng.next() % 4000).into_bytes();
            if rng.next().is_multiple_of(10) {
                batch.delete(&k);
                model.remove(&k);
            } else {
                let len = 200 + (rng.next() % 1800) as usize;
                let v: Vec<u8> = (0..len).map(|i| (seed as usize + i) as u8).collect();
                written += len + k.len();
                batch.put(&k, &v);
                model.insert(k, v);
            }
        }
        db.write(batch).unwrap();
    }
    model
}

#[test]
fn two_dbs_stay_within_one_budget() {
    let m = Arc::new(WriteBufferManager::new(BUDGET, None, true));
    let fs = MemFs::new();
    let dbs = [Arc::new(open(&fs, "/a", &m)), Arc::new(open(&fs, "/b", &m))];
    let done = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicUsize::new(0));
    let sampler = {
        let (m, done, peak) = (m.clone(), done.clone(), peak.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(m.memory_usage(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_micros(200));
            }
        })
    };
    let started = Instant::now();
    let writers: Vec<_> = dbs
        .iter()
        .enumerate()
        .map(|(i, db)| {
            let db = db.clone();
            std::thread::spawn(move || write(&db, 7 + i as u64, 12 << 20))
        })
        .collect();
    let models: Vec<_> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    done.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    assert!(started.elapsed() < Duration::from_secs(120), "writes took too long");

    let peak = peak.load(Ordering::Relaxed);
    assert!(
        peak <= BUDGET + 2 * SLACK_PER_DB,
        "memtables held {peak} bytes, budget {BUDGET} + slack {}",
        2 * SLACK_PER_DB
    );
    assert!(peak >= BUDGET / 2, "the test must fill the budget (peak {peak})");
    for (db, model) in dbs.iter().zip(&models) {
        // 12 MiB written with 256 MiB memtables: only the budget can have flushed them.
        let l0 = db.property_int_value("rocksdb.num-files-at-level0").unwrap().unwrap_or(0);
        let deeper: u64 = (1..7)
            .map(|l| {
                db.property_int_value(format!("rocksdb.num-files-at-level{l}"))
                    .unwrap()
                    .unwrap_or(0)
            })
            .sum();
        assert!(l0 + deeper >= 1, "the budget flushed the memtables");
        let active = db.property_int_value("rocksdb.cur-size-active-mem-table").unwrap().unwrap();
        assert!(active < BUDGET as u64, "active memtable {active}");
        let got: BTreeMap<Vec<u8>, Vec<u8>> = db
            .iterator(IteratorMode::Start)
            .map(|r| {
                let (k, v) = r.unwrap();
                (k.to_vec(), v.to_vec())
            })
            .collect();
        assert!(got == *model, "DB content differs from the model");
        for (k, v) in model.iter().step_by(97) {
            assert_eq!(db.get(k).unwrap().as_deref(), Some(&v[..]));
        }
    }
    drop(dbs);
    assert_eq!(m.memory_usage(), 0, "every memtable's memory was released");
    assert_eq!(m.mutable_memtable_memory_usage(), 0);
}
