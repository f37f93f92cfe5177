//! Crashes in a DB whose keys carry user-defined timestamps (`Options::set_comparator_with_ts`):
//! a `Db` on `MemFs` behind `FaultFs` writes versions (`put_with_ts`, `delete_with_ts`,
//! `merge_with_ts`, batches of `put_cf_with_ts` and `merge_cf_with_ts`), raises
//! `full_history_ts_low`, flushes and compacts (every write
//! synced, memtables small enough to switch and flush, so the model is exact). The filesystem
//! is cut off at a random point (a kill point of the WAL, the MANIFEST, a flush or a
//! compaction, or the Nth filesystem operation), the process crashes (power loss, torn power
//! loss or a kill), and the reopened DB must show:
//! - at every timestamp at or above the recorded `full_history_ts_low`, exactly the model's
//!   newest version of each key at or below it (scans and point reads), with the operation
//!   the cut interrupted either wholly there or wholly absent, the same choice at every
//!   timestamp;
//! - the acknowledged `full_history_ts_low` (or the interrupted raise), reads below it refused;
//! - the same after a compaction run after the crash (which must keep every version).

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::Rng;
use strata::env::{CrashMode, FaultFs, FileSystem, MemFs};
use strata::{Db, Options, ReadOptions, WriteBatch, WriteOptions};

/// The timestamp size: a u64, little-endian (as the `rocksdb` crate's tests encode theirs).
const TS: usize = 8;

/// One write of a version.
#[derive(Clone, Debug)]
enum Write {
    Put(Vec<u8>),
    Delete,
    Merge(Vec<u8>),
}

/// Each key's versions: timestamp -> its writes, oldest first.
type Model = BTreeMap<Vec<u8>, BTreeMap<u64, Vec<Write>>>;

/// A view at one timestamp: (key, its version's timestamp, value), ascending by key.
type View = Vec<(Vec<u8>, u64, Vec<u8>)>;

/// One write the model applies once acknowledged.
#[derive(Clone, Debug)]
enum Step {
    Put(Vec<u8>, u64, Vec<u8>),
    Delete(Vec<u8>, u64),
    Merge(Vec<u8>, u64, Vec<u8>),
    /// Puts (`false`) and merges (`true`).
    Batch(Vec<(bool, Vec<u8>, u64, Vec<u8>)>),
    RaiseLow(u64),
    Flush,
    Compact,
}

fn ts(t: u64) -> [u8; TS] {
    t.to_le_bytes()
}

fn ts_of(b: &[u8]) -> u64 {
    let mut a = [0u8; TS];
    a.copy_from_slice(&b[b.len() - TS..]);
    u64::from_le_bytes(a)
}

fn options(fs: Arc<dyn FileSystem>) -> Options {
    let mut o = Options {
        fs,
        create_if_missing: true,
        write_buffer_size: 4 << 10,
        level0_file_num_compaction_trigger: 3,
        target_file_size_base: 8 << 10,
        max_bytes_for_level_base: 32 << 10,
        merge_operator: strata::merge_operator::builtin_merge_operator("stringappend"),
        ..Options::default()
    };
    // The key, then the timestamp, newest first.
    o.set_comparator_with_ts(
        "strata-testkit.u64ts",
        TS,
        Box::new(|a: &[u8], b: &[u8]| {
            a[..a.len() - TS].cmp(&b[..b.len() - TS]).then_with(|| ts_of(b).cmp(&ts_of(a)))
        }),
        Box::new(|a: &[u8], b: &[u8]| ts_of(a).cmp(&ts_of(b))),
        Box::new(|a: &[u8], a_ts: bool, b: &[u8], b_ts: bool| {
            let a = if a_ts { &a[..a.len() - TS] } else { a };
            let b = if b_ts { &b[..b.len() - TS] } else { b };
            a.cmp(b)
        }),
    );
    o
}

fn open(fs: Arc<dyn FileSystem>) -> Result<Db, String> {
    Db::open(&options(fs), "/db").map_err(|e| format!("open the timestamped DB: {e}"))
}

/// The model after `step`, with the new `full_history_ts_low`.
fn apply(model: &mut Model, low: &mut u64, step: &Step) {
    let mut add = |k: &[u8], t: u64, w: Write| {
        model.entry(k.to_vec()).or_default().entry(t).or_default().push(w);
    };
    match step {
        Step::Put(k, t, v) => add(k, *t, Write::Put(v.clone())),
        Step::Delete(k, t) => add(k, *t, Write::Delete),
        Step::Merge(k, t, v) => add(k, *t, Write::Merge(v.clone())),
        Step::Batch(writes) => {
            for (merge, k, t, v) in writes {
                add(k, *t, if *merge { Write::Merge(v.clone()) } else { Write::Put(v.clone()) });
            }
        }
        Step::RaiseLow(t) => *low = (*low).max(*t),
        Step::Flush | Step::Compact => {}
    }
}

fn run_step(db: &Db, step: &Step) -> strata::Result<()> {
    let sync = WriteOptions { sync: true, ..WriteOptions::default() };
    match step {
        Step::Put(k, t, v) => db.put_with_ts_opt(k, ts(*t), v, &sync),
        Step::Delete(k, t) => db.delete_with_ts_opt(k, ts(*t), &sync),
        Step::Merge(k, t, v) => db.merge_with_ts_opt(k, ts(*t), v, &sync),
        Step::Batch(writes) => {
            let cf = db.cf_handle("default").expect("the default family");
            let mut b = WriteBatch::default();
            for (merge, k, t, v) in writes {
                if *merge {
                    b.merge_cf_with_ts(&cf, k, ts(*t), v);
                } else {
                    b.put_cf_with_ts(&cf, k, ts(*t), v);
                }
            }
            db.write_opt(b, &sync)
        }
        Step::RaiseLow(t) => {
            let cf = db.cf_handle("default").expect("the default family");
            db.increase_full_history_ts_low(&cf, ts(*t))
        }
        Step::Flush => db.flush(),
        Step::Compact => db.compact_range(None::<&[u8]>, None::<&[u8]>),
    }
}

fn random_step(rng: &mut StdRng, now: &mut u64, low: u64, i: usize) -> Step {
    *now += rng.gen_range(0..3);
    let key = |rng: &mut StdRng| format!("k{:03}", rng.gen_range(0..80)).into_bytes();
    let value =
        |rng: &mut StdRng| format!("v{i}-{}", "x".repeat(rng.gen_range(0..48))).into_bytes();
    match rng.gen_range(0..100) {
        0..=49 => Step::Put(key(rng), *now, value(rng)),
        50..=59 => Step::Merge(key(rng), *now, value(rng)),
        60..=74 => Step::Delete(key(rng), *now),
        75..=86 => Step::Batch(
            (0..rng.gen_range(2..5))
                .map(|_| (rng.gen_bool(0.3), key(rng), *now, value(rng)))
                .collect(),
        ),
        87..=90 if *now > low + 4 => Step::RaiseLow(rng.gen_range(low + 1..*now - 2)),
        87..=94 => Step::Flush,
        _ => Step::Compact,
    }
}

/// The model's view at `t`: each key's newest version at or below `t`, deletions hiding, a
/// merge operand read as the `stringappend` merge of the operands down to a put (the base)
/// or a deletion.
fn view(model: &Model, t: u64) -> View {
    model
        .iter()
        .filter_map(|(k, versions)| {
            let (&vt, _) = versions.range(..=t).next_back()?;
            let mut writes = versions.range(..=vt).rev().flat_map(|(_, w)| w.iter().rev());
            let mut operands = Vec::new(); // newest first
            let base = loop {
                match writes.next() {
                    Some(Write::Put(v)) => break Some(v.as_slice()),
                    Some(Write::Merge(v)) => operands.push(v.as_slice()),
                    Some(Write::Delete) | None => break None,
                }
            };
            if base.is_none() && operands.is_empty() {
                return None;
            }
            let parts: Vec<&[u8]> = base.into_iter().chain(operands.into_iter().rev()).collect();
            Some((k.clone(), vt, parts.join(&b","[..])))
        })
        .collect()
}

fn read_at(t: u64) -> ReadOptions {
    let mut ro = ReadOptions::default();
    ro.set_timestamp(ts(t));
    ro
}

/// The DB's view at `t`, by a forward scan.
fn scan(db: &Db, t: u64) -> Result<View, String> {
    let mut it = db.raw_iterator_opt(read_at(t));
    it.seek_to_first();
    let mut out = Vec::new();
    while let (Some(k), Some(v), Some(vt)) = (it.key(), it.value(), it.timestamp()) {
        out.push((k.to_vec(), ts_of(vt), v.to_vec()));
        it.next();
    }
    it.status().map_err(|e| format!("scan at {t}: {e}"))?;
    Ok(out)
}

/// The timestamps a check reads at: the newest, the low, and a spread between.
fn check_points(rng: &mut StdRng, low: u64, now: u64) -> Vec<u64> {
    let mut out = vec![low, now + 1];
    for _ in 0..12 {
        out.push(rng.gen_range(low..=now));
    }
    out
}

/// Whether `db` shows `model` (low `low`) at `points`: scans, and point reads of a few keys.
fn shows(db: &Db, model: &Model, low: u64, points: &[u64], rng: &mut StdRng) -> Result<(), String> {
    let cf = db.cf_handle("default").expect("the default family");
    let got_low = db.get_full_history_ts_low(&cf).map_err(|e| e.to_string())?;
    let want_low = if low == 0 { Vec::new() } else { ts(low).to_vec() };
    if got_low != want_low {
        return Err(format!("full_history_ts_low {got_low:?}, the model's {want_low:?}"));
    }
    if low > 0 && db.get_opt(b"k000", &read_at(low - 1)).is_ok() {
        return Err(format!("a read below full_history_ts_low {low} was answered"));
    }
    for &t in points {
        let want = view(model, t);
        let got = scan(db, t)?;
        if got != want {
            let first = got
                .iter()
                .zip(&want)
                .position(|(a, b)| a != b)
                .unwrap_or(got.len().min(want.len()));
            return Err(format!(
                "scan at {t}: {} entries, the model's {}; first difference at {first}: {:?} vs {:?}",
                got.len(),
                want.len(),
                got.get(first),
                want.get(first)
            ));
        }
        for _ in 0..4 {
            let k = format!("k{:03}", rng.gen_range(0..80)).into_bytes();
            let want_v = want.iter().find(|(mk, _, _)| *mk == k).map(|(_, _, v)| v.clone());
            let got_v = db.get_opt(&k, &read_at(t)).map_err(|e| format!("get at {t}: {e}"))?;
            if got_v != want_v {
                return Err(format!("get {k:?} at {t}: {got_v:?}, the model's {want_v:?}"));
            }
        }
    }
    Ok(())
}

/// One cycle; returns 1 when the DB was checked whole after the crash.
pub(crate) fn cycle(
    rng: &mut StdRng,
    mem: &MemFs,
    fault: &FaultFs,
    arm: &mut dyn FnMut(&mut StdRng),
    crash: &mut dyn FnMut(&mut StdRng, bool) -> CrashMode,
) -> Result<usize, String> {
    let db = open(Arc::new(fault.clone()))?;
    let mut model = Model::new();
    let (mut low, mut now) = (0u64, 1u64);
    for i in 0..rng.gen_range(50..300) {
        let step = random_step(rng, &mut now, low, i);
        run_step(&db, &step).map_err(|e| format!("{step:?} before the cut: {e}"))?;
        apply(&mut model, &mut low, &step);
    }
    // The cut: the steps after it fail; the first to fail is either done or not.
    arm(rng);
    let mut cut: Option<Step> = None;
    for i in 0..rng.gen_range(1..40) {
        let step = random_step(rng, &mut now, low, 10_000 + i);
        if run_step(&db, &step).is_err() {
            cut = Some(step);
            break;
        }
        apply(&mut model, &mut low, &step);
    }
    drop(db);
    let mode = crash(rng, cut.is_some());
    let db = open(Arc::new(mem.clone())).map_err(|e| format!("{mode:?}: reopen: {e}"))?;
    let mut with_cut = (model.clone(), low);
    if let Some(step) = &cut {
        apply(&mut with_cut.0, &mut with_cut.1, step);
    }
    let points = check_points(rng, with_cut.1, now);
    let seed: u64 = rng.gen();
    let check = |db: &Db, m: &Model, l: u64| {
        let mut r = <StdRng as rand::SeedableRng>::seed_from_u64(seed);
        shows(db, m, l, &points, &mut r)
    };
    let (model, low) = match check(&db, &model, low) {
        Ok(()) => (model, low),
        Err(without) => match check(&db, &with_cut.0, with_cut.1) {
            Ok(()) => with_cut,
            Err(with) => {
                return Err(format!(
                    "{mode:?}: the timestamped DB after the crash (cut: {cut:?}) is neither the \
                     model without the cut ({without}) nor with it ({with})"
                ))
            }
        },
    };
    db.compact_range(None::<&[u8]>, None::<&[u8]>)
        .map_err(|e| format!("{mode:?}: a compaction after the crash: {e}"))?;
    check(&db, &model, low)
        .map_err(|f| format!("{mode:?}: after a compaction after the crash: {f}"))?;
    Ok(1)
}
