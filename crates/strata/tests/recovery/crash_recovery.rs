//! Simulated crashes on the in-memory filesystem.
//!
//! - Process kill: every acknowledged write is present after reopen.
//! - Power loss (clean or torn): the DB equals the model after some prefix of the acknowledged
//!   writes, and that prefix includes every write acknowledged with `sync = true`.
//!
//! A second run switches memtables every few writes and only loses power: a WAL that stopped
//! taking writes is synced by the flush job or the next synced write, not at the switch, so
//! power loss often cuts it while later writes in the next WAL survive (`db/recover.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::env::{CrashMode, FaultFs, MemFs};
use strata::{Db, Options, WriteBatch, WriteOptions};

const KEYS: u32 = 64;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
/// One acknowledged write: the key updates it made (None = delete), applied atomically.
type Step = Vec<(Vec<u8>, Option<Vec<u8>>)>;

fn key(i: u32) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

fn apply(model: &mut Model, step: &Step) {
    for (k, v) in step {
        match v {
            Some(v) => model.insert(k.clone(), v.clone()),
            None => model.remove(k),
        };
    }
}

/// What a run varies.
#[derive(Clone, Copy)]
struct Params {
    write_buffer_size: usize,
    /// Only power loss (clean or torn), no process kill.
    power_only: bool,
    /// Share of writes made with `sync = true`.
    sync_share: f64,
}

const MIXED: Params = Params { write_buffer_size: 16 << 10, power_only: false, sync_share: 0.1 };
const SWITCHES: Params = Params { write_buffer_size: 4 << 10, power_only: true, sync_share: 0.03 };

fn options(fs: FaultFs, p: Params) -> Options {
    Options {
        fs: Arc::new(fs),
        write_buffer_size: p.write_buffer_size,
        block_size: 512,
        ..Options::default()
    }
}

fn read_all(db: &Db) -> Model {
    let mut m = Model::new();
    for i in 0..KEYS {
        if let Some(v) = db.get(key(i)).unwrap() {
            m.insert(key(i), v);
        }
    }
    m
}

fn random_step(rng: &mut StdRng, counter: &mut u64) -> Step {
    let n = if rng.gen_bool(0.2) { rng.gen_range(2..6) } else { 1 };
    (0..n)
        .map(|_| {
            *counter += 1;
            let k = key(rng.gen_range(0..KEYS));
            if rng.gen_bool(0.2) {
                (k, None)
            } else {
                let len = if rng.gen_bool(0.05) { 5000 } else { rng.gen_range(0..50) };
                let mut v = format!("v{counter}-").into_bytes();
                v.resize(v.len() + len, b'.');
                (k, Some(v))
            }
        })
        .collect()
}

fn write_step(db: &Db, step: &Step, sync: bool) -> strata::Result<()> {
    let mut b = WriteBatch::new();
    for (k, v) in step {
        match v {
            Some(v) => b.put(k, v),
            None => b.delete(k),
        }
    }
    db.write_opt(b, &WriteOptions { sync, disable_wal: false, ..WriteOptions::default() })
}

fn run_seed(seed: u64, path: &Path, params: Params) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mem = MemFs::new();
    let mut durable_model = Model::new(); // state recovery must at least reach
    let mut counter = 0u64;
    for cycle in 0..6 {
        let view = FaultFs::new(Arc::new(mem.clone()), seed);
        let db = Db::open(&options(view.clone(), params), path).unwrap();
        assert_eq!(read_all(&db), durable_model, "seed {seed} cycle {cycle}: state after recovery");
        // history[i] = model after i acknowledged steps beyond durable_model.
        let mut steps: Vec<Step> = Vec::new();
        let mut last_synced = 0usize;
        for _ in 0..rng.gen_range(1..300) {
            let step = random_step(&mut rng, &mut counter);
            let sync = rng.gen_bool(params.sync_share);
            write_step(&db, &step, sync).unwrap();
            steps.push(step);
            if sync {
                last_synced = steps.len();
            }
            if rng.gen_bool(0.01) {
                db.flush().unwrap();
            }
        }
        let mode = match rng.gen_range(u32::from(params.power_only)..3) {
            0 => CrashMode::ProcessKill,
            1 => CrashMode::PowerLoss,
            _ => CrashMode::TornPowerLoss { seed: rng.gen() },
        };
        view.kill();
        mem.crash(mode);
        drop(db);

        let check =
            Db::open(&options(FaultFs::new(Arc::new(mem.clone()), seed), params), path).unwrap();
        let got = read_all(&check);
        drop(check);
        let mut candidate = durable_model.clone();
        let mut matched = None;
        for p in 0..=steps.len() {
            if p > 0 {
                apply(&mut candidate, &steps[p - 1]);
            }
            if p >= last_synced && candidate == got {
                matched = Some(p);
                if mode != CrashMode::ProcessKill {
                    break;
                }
            }
        }
        let p = matched.unwrap_or_else(|| {
            panic!("seed {seed} cycle {cycle} {mode:?}: recovered state is no prefix >= {last_synced} of {} steps", steps.len())
        });
        if mode == CrashMode::ProcessKill {
            assert_eq!(
                p,
                steps.len(),
                "seed {seed} cycle {cycle}: process kill lost acknowledged writes"
            );
        }
        for s in &steps[..p] {
            apply(&mut durable_model, s);
        }
    }
}

/// Runs `STRATA_CRASH_SEEDS` seeds (default 150) with `params`.
fn run_seeds(params: Params) {
    let seeds: u64 =
        std::env::var("STRATA_CRASH_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(150);
    for seed in 0..seeds {
        run_seed(seed, &PathBuf::from("/db"), params);
    }
}

#[test]
fn crash_cycles_keep_acknowledged_writes() {
    run_seeds(MIXED);
}

#[test]
fn power_loss_around_memtable_switches_keeps_a_prefix() {
    run_seeds(SWITCHES);
}
