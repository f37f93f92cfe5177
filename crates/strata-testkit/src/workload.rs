//! The write workload shared by the crash loop and the power-loss loop: several threads, each
//! owning the keys `i` with `i % threads == tid`, issue puts, deletes, `uint64add` merges and
//! batches of them, with and without `sync`, marking the oracle before each call and
//! committing after each acknowledgement.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use rand::rngs::StdRng;
use rand::seq::index::sample;
use rand::{Rng, SeedableRng};
use strata::{Db, WriteBatch, WriteOptions};

use crate::expected::{observe, ExpectedState, OpKind};
use crate::value::{self, is_counter, key};

/// Knobs of the workload.
#[derive(Clone, Debug)]
pub struct WorkloadConfig {
    pub keys: u32,
    pub threads: u32,
    /// Fraction of writes acknowledged with `sync = true`.
    pub sync_ratio: f64,
    /// Fraction of writes that are batches of 2..=6 keys.
    pub batch_ratio: f64,
    /// Fraction of operations that delete.
    pub delete_ratio: f64,
    /// Fraction of counter-key operations that merge.
    pub merge_ratio: f64,
    /// Fraction of puts written as wide-column entities: the value as the default column,
    /// beside a column naming the put's version (`value::VERSION_COLUMN`), which
    /// `verify::read_all` checks. Reads through `get` see the default column, so the oracle
    /// is the same; a counter's merges apply to its entity's default column.
    pub entity_ratio: f64,
    /// Per write, the chance of calling `Db::flush` first.
    pub flush_ratio: f64,
    /// Per write, the chance of calling `Db::compact_range` over everything first.
    pub compact_ratio: f64,
    /// Per write, the chance of reading back one owned key and checking it.
    pub read_ratio: f64,
    /// Fraction of deletes issued as `delete_range` over exactly that key (`[k, crate::single_key_range_end(k))`), so
    /// range tombstones go through the WAL, memtables, flushes and compactions.
    pub range_delete_ratio: f64,
    /// Fraction of non-sync writes made with the WAL disabled. Only for runs that end in a
    /// clean close (a killed process loses such writes by design).
    pub disable_wal_ratio: f64,
    /// Per write, the chance of taking a snapshot (when none is held): the value of one owned
    /// key is read at it, the snapshot is held over later writes (and across a crash), and
    /// the key is read again at it before release; both reads must agree.
    pub snapshot_ratio: f64,
    /// Fraction of writes whose deletes of value keys are puts of a dead value
    /// (`value::dead_value`), which reads take as absent and the crash loops' compaction filter
    /// turns into deletions.
    pub dead_put_ratio: f64,
    /// `(period, pause)` in milliseconds: every writer stops for the last `pause` ms of each
    /// `period` of the process's clock, all at once, so flushes stop too and start again
    /// (L0 batches that end when files stop coming, and L0 carry-over after a burst).
    pub pauses: Option<(u64, u64)>,
    /// The DB's key order (bytewise or `crate::loop_key_order`): where single-key range
    /// deletions end (`crate::single_key_range_end`).
    pub key_order: strata::comparator::KeyOrder,
}

impl WorkloadConfig {
    /// A random mix from `rng`.
    pub fn random(rng: &mut StdRng, keys: u32, threads: u32) -> WorkloadConfig {
        WorkloadConfig {
            keys,
            threads,
            sync_ratio: [0.0, 0.01, 0.1, 0.5, 1.0][rng.gen_range(0..5)],
            batch_ratio: [0.0, 0.2, 0.5][rng.gen_range(0..3)],
            delete_ratio: [0.05, 0.2][rng.gen_range(0..2)],
            merge_ratio: [0.5, 0.9][rng.gen_range(0..2)],
            entity_ratio: [0.0, 0.3][rng.gen_range(0..2)],
            flush_ratio: [0.0, 0.0005, 0.002][rng.gen_range(0..3)],
            compact_ratio: [0.0, 0.0001][rng.gen_range(0..2)],
            read_ratio: 0.05,
            range_delete_ratio: [0.0, 0.3, 1.0][rng.gen_range(0..3)],
            disable_wal_ratio: 0.0,
            snapshot_ratio: [0.0, 0.002, 0.02][rng.gen_range(0..3)],
            dead_put_ratio: [0.0, 0.5][rng.gen_range(0..2)],
            pauses: [None, None, Some((500, 150)), Some((1500, 400))][rng.gen_range(0..4)],
            key_order: strata::comparator::KeyOrder::Bytewise,
        }
    }
}

/// A snapshot a writer thread holds, with what it saw of one key.
struct HeldSnapshot {
    snapshot: strata::Snapshot<'static>,
    key: u32,
    seen: crate::expected::Observed,
    /// Writes left before the key is read again and the snapshot released.
    writes_left: u32,
}

/// One write as the power-loss check needs it: logical start and acknowledgement times and
/// the key updates it made.
#[derive(Clone, Debug)]
pub struct HistEntry {
    pub start: u64,
    /// `None` when the write returned an error (its effect is uncertain).
    pub ack: Option<u64>,
    pub sync: bool,
    pub ops: Vec<(u32, OpKind, u64)>,
}

/// Per-thread histories with one logical clock: a write acknowledged at tick `a` precedes
/// (in the DB's sequence order) every write started at a tick `> a`.
pub struct History {
    tick: AtomicU64,
    pub threads: Vec<Mutex<Vec<HistEntry>>>,
}

impl History {
    pub fn new(threads: u32) -> History {
        History {
            tick: AtomicU64::new(1),
            threads: (0..threads).map(|_| Mutex::default()).collect(),
        }
    }

    pub(crate) fn tick(&self) -> u64 {
        self.tick.fetch_add(1, Ordering::SeqCst)
    }

    /// Takes the histories out, one vector per thread.
    pub fn take(&self) -> Vec<Vec<HistEntry>> {
        self.threads
            .iter()
            .map(|m| {
                std::mem::take(&mut *m.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
            })
            .collect()
    }
}

/// Counters of acknowledged writes, optionally mirrored to a file (one 16-byte slot per thread:
/// sync acks, non-sync acks) so that a parent can read them after killing the writer.
pub struct Progress {
    file: Option<File>,
}

impl Progress {
    pub fn new(file: Option<File>) -> Progress {
        Progress { file }
    }

    fn record(&self, tid: u32, stats: &ThreadStats) {
        if let Some(f) = &self.file {
            let mut b = [0u8; 16];
            b[..8].copy_from_slice(&stats.acked_sync.to_le_bytes());
            b[8..].copy_from_slice(&stats.acked_nosync.to_le_bytes());
            let _ = f.write_all_at(&b, u64::from(tid) * 16);
        }
    }

    /// Sums the slots of a progress file: (sync acks, non-sync acks).
    pub fn read(path: &std::path::Path) -> (u64, u64) {
        let Ok(data) = std::fs::read(path) else { return (0, 0) };
        let mut out = (0, 0);
        for c in data.chunks_exact(16) {
            out.0 += u64::from_le_bytes(c[..8].try_into().unwrap_or_default());
            out.1 += u64::from_le_bytes(c[8..].try_into().unwrap_or_default());
        }
        out
    }
}

/// What one writer thread did.
#[derive(Debug, Default)]
pub struct ThreadStats {
    pub acked_sync: u64,
    pub acked_nosync: u64,
    pub flushes: u64,
    /// The error that stopped the thread, if one did.
    pub error: Option<String>,
    /// Read-back checks that disagreed with the oracle.
    pub wrong_reads: Vec<String>,
}

/// What the writer threads share.
pub struct Writer<'a> {
    pub db: &'a Db,
    pub cfg: &'a WorkloadConfig,
    pub seed: u64,
    pub state: &'a ExpectedState,
    /// Set to make the threads return.
    pub stop: &'a AtomicBool,
    /// Where writes are logged for the power-loss check, if anywhere.
    pub history: Option<&'a History>,
    pub progress: &'a Progress,
}

/// Runs writer thread `tid` until `stop` is set or a write fails.
pub fn run_thread(w: &Writer<'_>, tid: u32) -> ThreadStats {
    let Writer { db, cfg, seed, state, stop, history, progress } = *w;
    let mut rng = StdRng::seed_from_u64(value::mix(seed ^ (u64::from(tid) << 32)));
    let owned: Vec<u32> = (tid..cfg.keys).step_by(cfg.threads as usize).collect();
    let mut stats = ThreadStats::default();
    let mut writes = 0u64;
    let mut held: Option<HeldSnapshot> = None;
    while !stop.load(Ordering::Relaxed) && !owned.is_empty() {
        if let Some((period, pause)) = cfg.pauses {
            pause_with_the_others(period, pause);
        }
        if let Err(e) = snapshot_step(db, cfg, &mut rng, &owned, &mut held, &mut stats) {
            stats.error = Some(e);
            break;
        }
        if cfg.flush_ratio > 0.0 && rng.gen_bool(cfg.flush_ratio) {
            // Either family alone: each flushes on its own.
            let shadow = db.cf_handle(crate::SHADOW_CF).filter(|_| rng.gen_bool(0.5));
            let flushed = match &shadow {
                Some(cf) => db.flush_cf(cf),
                None => db.flush(),
            };
            if let Err(e) = flushed {
                stats.error = Some(format!("flush: {e}"));
                break;
            }
            stats.flushes += 1;
        }
        if cfg.compact_ratio > 0.0 && rng.gen_bool(cfg.compact_ratio) {
            if let Err(e) = db.compact_range(None::<&[u8]>, None::<&[u8]>) {
                stats.error = Some(format!("compact_range: {e}"));
                break;
            }
        }
        writes += 1;
        let batch_id = (u64::from(tid) + 1) << 40 | writes;
        // One batch in ten is large enough for its writer to insert it itself when it joins a
        // group (`allow_concurrent_memtable_write`).
        let n = match (rng.gen_bool(cfg.batch_ratio), rng.gen_bool(0.1)) {
            (true, true) => rng.gen_range(16..=24),
            (true, false) => rng.gen_range(2..=6),
            (false, _) => 1,
        };
        let n = n.min(owned.len());
        let mut ops = Vec::with_capacity(n);
        for idx in sample(&mut rng, owned.len(), n) {
            let i = owned[idx];
            let op = if rng.gen_bool(cfg.delete_ratio) {
                OpKind::Delete
            } else if is_counter(i) && rng.gen_bool(cfg.merge_ratio) {
                OpKind::Merge
            } else {
                OpKind::Put
            };
            let version = match state.mark(i, op, batch_id) {
                Ok(v) => v,
                Err(e) => {
                    stats.error = Some(format!("expected-state file: {e}"));
                    return stats;
                }
            };
            ops.push((i, op, version));
        }
        let sync = cfg.sync_ratio > 0.0 && rng.gen_bool(cfg.sync_ratio);
        let disable_wal =
            !sync && cfg.disable_wal_ratio > 0.0 && rng.gen_bool(cfg.disable_wal_ratio);
        let wo = WriteOptions { sync, disable_wal, ..WriteOptions::default() };
        let ranged = cfg.range_delete_ratio > 0.0 && rng.gen_bool(cfg.range_delete_ratio);
        let dead = cfg.dead_put_ratio > 0.0 && rng.gen_bool(cfg.dead_put_ratio);
        let entity = cfg.entity_ratio > 0.0 && rng.gen_bool(cfg.entity_ratio);
        let start = history.map_or(0, History::tick);
        // Every op also goes to the shadow family, in the same batch (`crate::SHADOW_CF`).
        let shadow = db.cf_handle(crate::SHADOW_CF);
        let result = if ops.len() == 1 && shadow.is_none() {
            let (i, op, v) = ops[0];
            match op {
                OpKind::Put if entity => {
                    let mut b = WriteBatch::new();
                    b.put_entity(key(i), &entity_columns(i, v));
                    db.write_opt(b, &wo)
                }
                OpKind::Put => db.put_opt(key(i), payload(i, v), &wo),
                OpKind::Delete if dead && !is_counter(i) => {
                    db.put_opt(key(i), value::dead_value(i), &wo)
                }
                OpKind::Delete if ranged => db.delete_range_opt(
                    key(i),
                    crate::single_key_range_end(&cfg.key_order, &key(i)),
                    &wo,
                ),
                OpKind::Delete => db.delete_opt(key(i), &wo),
                OpKind::Merge => db.merge_opt(key(i), value::operand(i, v).to_le_bytes(), &wo),
            }
        } else {
            let mut b = WriteBatch::new();
            // Log data rides in some batches: in the WAL, never applied, no sequence number,
            // so recovery must skip it without shifting the batch's records.
            if ops.len() % 2 == 0 {
                b.put_log_data(format!("note {}", ops[0].0));
            }
            for &(i, op, v) in &ops {
                match op {
                    OpKind::Put if entity => b.put_entity(key(i), &entity_columns(i, v)),
                    OpKind::Put => b.put(key(i), payload(i, v)),
                    OpKind::Delete if dead && !is_counter(i) => b.put(key(i), value::dead_value(i)),
                    OpKind::Delete if ranged => {
                        b.delete_range(
                            key(i),
                            crate::single_key_range_end(&cfg.key_order, &key(i)),
                        );
                    }
                    OpKind::Delete => b.delete(key(i)),
                    OpKind::Merge => b.merge(key(i), value::operand(i, v).to_le_bytes()),
                }
                if let Some(cf) = &shadow {
                    match op {
                        OpKind::Put if entity => b.put_entity_cf(cf, key(i), &entity_columns(i, v)),
                        OpKind::Put => b.put_cf(cf, key(i), payload(i, v)),
                        OpKind::Delete if dead && !is_counter(i) => {
                            b.put_cf(cf, key(i), value::dead_value(i));
                        }
                        OpKind::Delete if ranged => {
                            b.delete_range_cf(
                                cf,
                                key(i),
                                crate::single_key_range_end(&cfg.key_order, &key(i)),
                            );
                        }
                        OpKind::Delete => b.delete_cf(cf, key(i)),
                        OpKind::Merge => b.merge_cf(cf, key(i), value::operand(i, v).to_le_bytes()),
                    }
                }
            }
            db.write_opt(b, &wo)
        };
        let ack = match &result {
            Ok(()) => Some(history.map_or(0, History::tick)),
            Err(_) => None,
        };
        if let Some(h) = history {
            h.threads[tid as usize]
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(HistEntry { start, ack, sync, ops: ops.clone() });
        }
        if let Err(e) = result {
            stats.error = Some(format!("write: {e}"));
            break;
        }
        for &(i, _, _) in &ops {
            if let Err(e) = state.commit(i) {
                stats.error = Some(format!("expected-state file: {e}"));
                return stats;
            }
        }
        if sync {
            stats.acked_sync += 1;
        } else {
            stats.acked_nosync += 1;
        }
        progress.record(tid, &stats);
        if rng.gen_bool(cfg.read_ratio) {
            let i = owned[rng.gen_range(0..owned.len())];
            match db.get(key(i)) {
                Ok(got) => {
                    let want = state.get(i).state.observed(i);
                    let obs = observe(i, got.as_deref());
                    if obs != want {
                        let again = db.get(key(i)).map(|g| observe(i, g.as_deref()));
                        stats.wrong_reads.push(format!(
                            "live read of key {i}: got {obs:?}, oracle says {want:?} (read again: \
                             {again:?}; stopping: {})",
                            stop.load(Ordering::Relaxed)
                        ));
                    }
                }
                Err(e) => {
                    stats.error = Some(format!("read: {e}"));
                    break;
                }
            }
        }
    }
    stats
}

/// Sleeps out the rest of the pause when the process's clock is in the last `pause` ms of a
/// `period` (see [`WorkloadConfig::pauses`]).
fn pause_with_the_others(period: u64, pause: u64) {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let period = period.max(1);
    let elapsed = EPOCH.get_or_init(std::time::Instant::now).elapsed().as_millis();
    let phase = (elapsed % u128::from(period)) as u64;
    if phase >= period.saturating_sub(pause) {
        std::thread::sleep(std::time::Duration::from_millis(period - phase));
    }
}

/// Takes, checks or releases the thread's snapshot (see `WorkloadConfig::snapshot_ratio`). A
/// disagreement between the two reads at one snapshot is a wrong read.
fn snapshot_step(
    db: &Db,
    cfg: &WorkloadConfig,
    rng: &mut StdRng,
    owned: &[u32],
    held: &mut Option<HeldSnapshot>,
    stats: &mut ThreadStats,
) -> Result<(), String> {
    let read_at = |snapshot: &strata::Snapshot, i: u32| {
        let mut ro = strata::ReadOptions::default();
        ro.set_snapshot(snapshot);
        db.get_opt(key(i), &ro).map(|g| observe(i, g.as_deref())).map_err(|e| format!("{e}"))
    };
    match held {
        Some(h) if h.writes_left == 0 => {
            let again = read_at(&h.snapshot, h.key).map_err(|e| format!("snapshot read: {e}"))?;
            if again != h.seen {
                stats.wrong_reads.push(format!(
                    "snapshot at {} changed: key {} read {:?}, then {again:?}",
                    h.snapshot.sequence_number(),
                    h.key,
                    h.seen
                ));
            }
            *held = None;
        }
        Some(h) => h.writes_left -= 1,
        None if cfg.snapshot_ratio > 0.0 && rng.gen_bool(cfg.snapshot_ratio) => {
            let snapshot = db.snapshot();
            let i = owned[rng.gen_range(0..owned.len())];
            let seen = read_at(&snapshot, i).map_err(|e| format!("snapshot read: {e}"))?;
            *held =
                Some(HeldSnapshot { snapshot, key: i, seen, writes_left: rng.gen_range(1..500) });
        }
        None => {}
    }
    Ok(())
}

/// The bytes a put of key `i` at version `v` stores.
/// The columns of an entity put of key `i` at version `v`: the payload as the default
/// column, and the version (`value::VERSION_COLUMN`).
fn entity_columns(i: u32, v: u64) -> [(&'static [u8], Vec<u8>); 2] {
    [(b"", payload(i, v)), (value::VERSION_COLUMN, v.to_le_bytes().to_vec())]
}

pub fn payload(i: u32, v: u64) -> Vec<u8> {
    if is_counter(i) {
        value::operand(i, v).to_le_bytes().to_vec()
    } else {
        value::value(i, v)
    }
}
