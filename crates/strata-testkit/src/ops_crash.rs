//! Crashes during checkpoints, backups, ingestions, OPTIONS file writes (a family created
//! or dropped, options set), a TTL DB's expiring compactions,
//! two-phase commits (`two_phase_crash.rs`) and the writes, flushes and compactions of a DB
//! whose keys carry user-defined timestamps (`ts_crash.rs`), on `MemFs` behind `FaultFs`.
//!
//! Each cycle builds a DB (every write synced, so the model is exact), then cuts the
//! filesystem off in the middle of `Checkpoint::create`, `BackupEngine::create_new_backup`,
//! `Db::ingest_external_file` of one to three external files, or (one cycle in five) a
//! compaction that drops expired values, of a `DbWithTtl` or a `Db` opened with a TTL
//! (`Db::open_cf_descriptors_with_ttl_clock`), (at one of their kill points, or at the
//! Nth filesystem operation), simulates a crash
//! (power loss, torn power loss or a killed process) and checks:
//! - the source DB opens and holds exactly the model;
//! - the checkpoint directory either does not exist or opens as a DB equal to the model (a
//!   half-made checkpoint never opens as if complete; its temporary directory never opens);
//! - the backup directory lists either no backup or one that verifies and restores to the
//!   model; the next backup after the crash succeeds;
//! - after an ingestion, the DB holds the model before it or the model with every file
//!   applied (all or none), the latter whenever the ingestion was acknowledged;
//! - a TTL DB, reopened with the same clock, shows exactly the model's values that have not
//!   expired (a value written at `t` lives while `t + ttl >= now`), before and after a
//!   compaction run after the crash and after the clock moves on; a `Db` opened with a TTL
//!   (whose reads, as RocksDB's, show expired values until a compaction drops them) shows
//!   every unexpired value and nothing the model lacks, and exactly the unexpired ones after
//!   a compaction.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::env::{CrashMode, FaultFs, FaultKind, FaultOp, FaultRule, FileSystem, MemFs};
use strata::{
    BackupEngine, Cache, Checkpoint, Db, DbWithTtl, Env, IngestExternalFileOptions, IteratorMode,
    Options, SstFileWriter, TtlClock, WriteBatch, WriteOptions,
};

/// What a run did.
#[derive(Debug, Default)]
pub struct OpsCrashSummary {
    /// Cycles run.
    pub cycles: u64,
    /// Cycles whose operation failed because of the cut (the rest completed before it).
    pub interrupted: u64,
    /// Cycles after which the checkpoint or backup existed and was checked whole.
    pub complete_after_crash: u64,
    /// Kill points that fired, by name.
    pub fired: BTreeMap<String, u64>,
    /// Violations found.
    pub failures: Vec<String>,
}

fn options(fs: Arc<dyn FileSystem>) -> Options {
    Options { fs, create_if_missing: true, write_buffer_size: 8 << 10, ..Options::default() }
}

fn contents(db: &Db) -> Result<BTreeMap<Vec<u8>, Vec<u8>>, String> {
    db.iterator(IteratorMode::Start)
        .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).map_err(|e| e.to_string()))
        .collect()
}

/// Turns an engine error into a failure naming the step.
fn e(what: &str) -> impl FnOnce(strata::Error) -> String + '_ {
    move |err| format!("{what}: {err}")
}

/// Runs `cycles` cycles from `seed`.
pub fn run(seed: u64, cycles: u64) -> OpsCrashSummary {
    let mut sum = OpsCrashSummary::default();
    for cycle in 0..cycles {
        let cycle_seed = seed ^ cycle.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        if let Err(f) = one_cycle(cycle_seed, &mut sum) {
            sum.failures.push(format!("seed {seed} cycle {cycle} (cycle seed {cycle_seed}): {f}"));
        }
        sum.cycles += 1;
    }
    sum
}

/// Runs the one cycle whose seed a failure named (`cycle seed N`).
pub fn replay(cycle_seed: u64) -> OpsCrashSummary {
    let mut sum = OpsCrashSummary::default();
    if let Err(f) = one_cycle(cycle_seed, &mut sum) {
        sum.failures.push(format!("cycle seed {cycle_seed}: {f}"));
    }
    sum.cycles = 1;
    sum
}

fn one_cycle(seed: u64, sum: &mut OpsCrashSummary) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()), seed);
    match rng.gen_range(0..7) {
        3 => return options_cycle(&mut rng, &mem, &fault, sum),
        0 => {
            let plain = rng.gen_bool(0.5);
            return ttl_cycle(&mut rng, &mem, &fault, sum, plain);
        }
        1 => {
            let mut arm_cut = |r: &mut StdRng| {
                let prefix = if r.gen_bool(0.5) { "wal." } else { "txn." };
                arm(r, &fault, prefix);
            };
            let mut crash_it =
                |r: &mut StdRng, interrupted: bool| crash(r, &mem, &fault, sum, interrupted);
            let recovered =
                crate::two_phase_crash::cycle(&mut rng, &mem, &fault, &mut arm_cut, &mut crash_it)?;
            if recovered > 0 {
                sum.complete_after_crash += 1;
            }
            return Ok(());
        }
        2 => {
            let mut arm_cut = |r: &mut StdRng| {
                let prefixes = ["wal.", "manifest.", "flush.", "compaction.", "sst."];
                let prefix = prefixes[r.gen_range(0..prefixes.len())];
                arm(r, &fault, prefix);
            };
            let mut crash_it =
                |r: &mut StdRng, interrupted: bool| crash(r, &mem, &fault, sum, interrupted);
            let checked =
                crate::ts_crash::cycle(&mut rng, &mem, &fault, &mut arm_cut, &mut crash_it)?;
            sum.complete_after_crash += checked as u64;
            return Ok(());
        }
        _ => {}
    }
    let opts = options(Arc::new(fault.clone()));
    let db = Db::open(&opts, "/db").map_err(e("open"))?;
    let sync = WriteOptions { sync: true, ..WriteOptions::default() };
    let mut model = BTreeMap::new();
    let n = rng.gen_range(50..400);
    for i in 0..n {
        let k = format!("k{:04}", rng.gen_range(0..200)).into_bytes();
        if rng.gen_bool(0.1) {
            db.delete_opt(&k, &sync).map_err(e("delete"))?;
            model.remove(&k);
        } else {
            let v = format!("v{i}-{}", "x".repeat(rng.gen_range(0..64))).into_bytes();
            db.put_opt(&k, &v, &sync).map_err(e("put"))?;
            model.insert(k, v);
        }
    }
    if rng.gen_range(0..3) == 0 {
        return ingest_cycle(&mut rng, &mem, &fault, db, model, sum);
    }
    let backup = rng.gen_bool(0.5);
    let engine = if backup {
        let engine = BackupEngine::open(&opts, "/backups").map_err(e("open backups"))?;
        if rng.gen_bool(0.5) {
            // An earlier backup whose tables the interrupted one shares.
            engine.create_new_backup(&db).map_err(e("first backup"))?;
        }
        Some(engine)
    } else {
        None
    };
    let backups_before = engine.as_ref().map_or(Ok(0), |en| en.backups().map(|b| b.len()));
    let backups_before = backups_before.map_err(e("list backups"))?;
    arm(&mut rng, &fault, if backup { "backup." } else { "checkpoint." });
    let result = match &engine {
        Some(en) => en.create_new_backup(&db).map(|_| ()),
        // Half of the checkpoints copy the WALs instead of flushing.
        None if rng.gen_bool(0.5) => {
            Checkpoint::create_with_log_size(&db, "/cp", u64::MAX).map(|_| ())
        }
        None => Checkpoint::create(&db, "/cp").map(|_| ()),
    };
    drop(engine);
    drop(db);
    let mode = crash(&mut rng, &mem, &fault, sum, result.is_err());

    let plain = options(Arc::new(mem.clone()));
    let db = Db::open(&plain, "/db").map_err(e("reopen the source after the crash"))?;
    if contents(&db)? != model {
        return Err(format!("{mode:?}: the source DB changed"));
    }
    drop(db);
    if backup {
        let engine = BackupEngine::open(&plain, "/backups").map_err(e("reopen backups"))?;
        let list = engine.backups().map_err(e("list backups after the crash"))?;
        if list.len() < backups_before || list.len() > backups_before + 1 {
            return Err(format!("{mode:?}: {} backups, {backups_before} before", list.len()));
        }
        for b in &list {
            engine.verify_backup(b.id).map_err(e("verify a listed backup"))?;
        }
        if list.len() > backups_before {
            sum.complete_after_crash += 1;
        }
        if let Some(last) = list.last() {
            let target = format!("/restored-{}", last.id);
            engine.restore_from_backup(last.id, &target).map_err(e("restore"))?;
            let r = Db::open(&plain, &target).map_err(e("open the restored DB"))?;
            if contents(&r)? != model {
                return Err(format!("{mode:?}: backup {} restores other data", last.id));
            }
        }
        let db = Db::open(&plain, "/db").map_err(e("reopen the source"))?;
        engine.create_new_backup(&db).map_err(e("a backup after the crash"))?;
    } else if mem.exists(Path::new("/cp")) {
        let cp = Db::open(&Options { create_if_missing: false, ..plain.clone() }, "/cp")
            .map_err(e(&format!("{mode:?}: the checkpoint exists but does not open")))?;
        if contents(&cp)? != model {
            return Err(format!("{mode:?}: the checkpoint differs from the source"));
        }
        sum.complete_after_crash += 1;
    } else if mem.exists(Path::new("/cp.checkpoint-tmp")) {
        let half =
            Db::open(&Options { create_if_missing: false, ..plain.clone() }, "/cp.checkpoint-tmp");
        if let Ok(half) = half {
            // CURRENT is written last: a temporary directory that opens is complete.
            if contents(&half)? != model {
                return Err(format!("{mode:?}: a half-made checkpoint opens with other data"));
            }
        }
        let db = Db::open(&plain, "/db").map_err(e("reopen the source"))?;
        Checkpoint::create(&db, "/cp").map_err(e("a checkpoint after the crash"))?;
    }
    Ok(())
}

/// Builds a DB with a family `a`, cuts the filesystem off while a family is created or
/// dropped or the default family's options are set (each writes a new OPTIONS file),
/// crashes, and checks that `Options::load_latest` then reads the options from before the
/// change or after it (after it whenever the change was acknowledged), never an error, and
/// that the DB reopens holding its data.
fn options_cycle(
    rng: &mut StdRng,
    mem: &MemFs,
    fault: &FaultFs,
    sum: &mut OpsCrashSummary,
) -> Result<(), String> {
    let opts = Options { create_missing_column_families: true, ..options(Arc::new(fault.clone())) };
    let db = Db::open_cf(&opts, "/db", ["a"]).map_err(e("open"))?;
    let sync = WriteOptions { sync: true, ..WriteOptions::default() };
    let mut model = BTreeMap::new();
    for i in 0..rng.gen_range(10..100u32) {
        let k = format!("k{i:04}").into_bytes();
        db.put_opt(&k, b"v", &sync).map_err(e("put"))?;
        model.insert(k, b"v".to_vec());
    }
    let (small, large) = (opts.write_buffer_size, opts.write_buffer_size * 2);
    let change = rng.gen_range(0..3);
    let families = |created: bool| match change {
        0 if created => vec!["default", "a", "b"],
        1 if created => vec!["default"],
        _ => vec!["default", "a"],
    };
    arm(rng, fault, "options.");
    let result = match change {
        0 => db.create_cf("b", &Options::default()),
        1 => db.drop_cf("a"),
        _ => db.set_options(&[("write_buffer_size", &large.to_string())]),
    };
    drop(db);
    let mode = crash(rng, mem, fault, sum, result.is_err());

    // Before any reopen, which writes an OPTIONS file of its own.
    let env = Env::from_file_system(Arc::new(mem.clone()));
    let (loaded, cfs) = Options::load_latest("/db", env, false, Cache::new_lru_cache(1 << 20))
        .map_err(e(&format!("{mode:?}: load_latest after the crash")))?;
    let names: Vec<&str> = cfs.iter().map(|c| c.name()).collect();
    let (before, after) = (families(false), families(true));
    let size = loaded.write_buffer_size;
    let changed = if change == 2 { size == large } else { names == after };
    let unchanged = if change == 2 { size == small } else { names == before };
    // Either state is possible after an interrupted change; an acknowledged one is durable.
    let allowed = if result.is_ok() { changed } else { changed || unchanged };
    if !allowed {
        return Err(format!(
            "{mode:?}: change {change} (acknowledged: {}) loads families {names:?}, \
             write_buffer_size {size}",
            result.is_ok()
        ));
    }
    if changed {
        sum.complete_after_crash += 1;
    }
    let plain = options(Arc::new(mem.clone()));
    let names = Db::list_cf(&plain, "/db").map_err(e("list families after the crash"))?;
    let others: Vec<&String> = names.iter().filter(|n| *n != "default").collect();
    let db = Db::open_cf(&plain, "/db", others).map_err(e("reopen after the crash"))?;
    if contents(&db)? != model {
        return Err(format!("{mode:?}: the DB changed"));
    }
    Ok(())
}

/// Writes one to three external files over disjoint key ranges, cuts the filesystem off
/// during their ingestion, crashes, and checks that the DB holds all of them or none.
fn ingest_cycle(
    rng: &mut StdRng,
    mem: &MemFs,
    fault: &FaultFs,
    db: Db,
    model: BTreeMap<Vec<u8>, Vec<u8>>,
    sum: &mut OpsCrashSummary,
) -> Result<(), String> {
    let opts = options(Arc::new(fault.clone()));
    fault.create_dir_all(Path::new("/ext")).map_err(e("mkdir /ext"))?;
    let mut after = model.clone();
    let mut paths = Vec::new();
    let files = rng.gen_range(1..=3);
    for f in 0..files {
        // Key ranges k{f}000.. are disjoint across files and overlap the DB's keys.
        let path = format!("/ext/{f}.sst");
        let mut w = SstFileWriter::create(&opts);
        w.open(&path).map_err(e("open an external file"))?;
        let base = f * 70;
        for i in base..base + 69 {
            if !rng.gen_bool(0.4) {
                continue;
            }
            let k = format!("k{i:04}").into_bytes();
            if rng.gen_bool(0.15) {
                w.delete(&k).map_err(e("external delete"))?;
                after.remove(&k);
            } else {
                let v = format!("ext{f}-{i}").into_bytes();
                w.put(&k, &v).map_err(e("external put"))?;
                after.insert(k, v);
            }
        }
        w.put(format!("k{:04}", base + 70 - 1), b"last").map_err(e("external put"))?;
        after.insert(format!("k{:04}", base + 70 - 1).into_bytes(), b"last".to_vec());
        w.finish().map_err(e("finish an external file"))?;
        paths.push(path);
    }
    fault.sync_dir(Path::new("/ext")).map_err(e("sync /ext"))?;
    let io = IngestExternalFileOptions { move_files: rng.gen_bool(0.5), ..Default::default() };
    arm(rng, fault, "ingest.");
    let acked = db.ingest_external_file_opts(&io, &paths).is_ok();
    drop(db);
    let mode = crash(rng, mem, fault, sum, !acked);
    let db = Db::open(&options(Arc::new(mem.clone())), "/db")
        .map_err(e("reopen after a crash during ingestion"))?;
    let got = contents(&db)?;
    if got == after {
        sum.complete_after_crash += 1;
    } else if acked {
        return Err(format!("{mode:?}: an acknowledged ingestion is not all there"));
    } else if got != model {
        return Err(format!("{mode:?}: part of an ingestion survived"));
    }
    Ok(())
}

/// After the cut operation (`interrupted`: it failed) and with its DB dropped: counts it,
/// collects the kill points that fired, and crashes the file system (a power loss, a torn
/// power loss or a killed process, one in three each), which is then reachable again without
/// faults. Returns the crash's kind.
fn crash(
    rng: &mut StdRng,
    mem: &MemFs,
    fault: &FaultFs,
    sum: &mut OpsCrashSummary,
    interrupted: bool,
) -> CrashMode {
    if interrupted {
        sum.interrupted += 1;
    }
    collect_fired(sum);
    let mode = match rng.gen_range(0..3) {
        0 => CrashMode::PowerLoss,
        1 => CrashMode::TornPowerLoss { seed: rng.gen() },
        _ => CrashMode::ProcessKill,
    };
    mem.crash(mode);
    fault.clear();
    mode
}

/// TTL of [`ttl_cycle`]'s DB, in seconds.
const TTL: u64 = 100;

/// The keys of `model` (value, write time) alive at `now`, with their values.
fn alive(model: &BTreeMap<Vec<u8>, (Vec<u8>, u64)>, now: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    model
        .iter()
        .filter(|(_, (_, t))| t + TTL >= now)
        .map(|(k, (v, _))| (k.clone(), v.clone()))
        .collect()
}

/// The two TTL DBs: `DbWithTtl`, whose reads hide expired values, and a `Db` opened with a
/// TTL, whose reads show them until a compaction drops them.
enum TtlDb {
    Wrapper(DbWithTtl),
    Plain(Db),
}

impl TtlDb {
    fn write_opt(&self, b: WriteBatch, o: WriteOptions) -> strata::Result<()> {
        match self {
            TtlDb::Wrapper(db) => db.write_opt(b, &o),
            TtlDb::Plain(db) => db.write_opt(b, &o),
        }
    }

    fn compact(&self) -> strata::Result<()> {
        match self {
            TtlDb::Wrapper(db) => db.compact(),
            TtlDb::Plain(db) => db.compact_range(None::<&[u8]>, None::<&[u8]>),
        }
    }

    /// What it shows: its iterator's pairs, each also read back with `get`. In the plain DB
    /// an automatic compaction may drop an expired value between the scan and the `get` (even
    /// under a snapshot taken after the compaction started: its filter only spares what the
    /// snapshots it started with can see), so there a `get` finding nothing for a value not
    /// in `live` leaves the key out; any other disagreement is a failure.
    fn contents(
        &self,
        live: &BTreeMap<Vec<u8>, Vec<u8>>,
    ) -> Result<BTreeMap<Vec<u8>, Vec<u8>>, String> {
        let mut out = BTreeMap::new();
        let items: Vec<_> = match self {
            TtlDb::Wrapper(db) => db.iterator(IteratorMode::Start).collect(),
            TtlDb::Plain(db) => db.iterator(IteratorMode::Start).collect(),
        };
        for item in items {
            let (k, v) = item.map_err(e("iterate the TTL DB"))?;
            out.insert(k.to_vec(), v.to_vec());
        }
        let mut vanished = Vec::new();
        for (k, v) in &out {
            let got = match self {
                TtlDb::Wrapper(db) => db.get(k),
                TtlDb::Plain(db) => db.get(k),
            }
            .map_err(e("get from the TTL DB"))?;
            match got {
                Some(g) if g == *v => {}
                None if matches!(self, TtlDb::Plain(_)) && live.get(k) != Some(v) => {
                    vanished.push(k.clone());
                }
                _ => {
                    let kind = if matches!(self, TtlDb::Plain(_)) { "plain" } else { "wrapper" };
                    return Err(format!(
                        "{kind} TTL DB, key {k:?}: the iterator shows {v:?}, get {got:?}"
                    ));
                }
            }
        }
        for k in vanished {
            out.remove(&k);
        }
        Ok(out)
    }

    /// Checks what it shows against `live` (the unexpired values now) and `shown_before`
    /// (what may still show: every value written, or what showed at an earlier time).
    fn check(
        &self,
        live: &BTreeMap<Vec<u8>, Vec<u8>>,
        shown_before: &BTreeMap<Vec<u8>, Vec<u8>>,
    ) -> Result<BTreeMap<Vec<u8>, Vec<u8>>, String> {
        let got = self.contents(live)?;
        let ok = match self {
            TtlDb::Wrapper(_) => &got == live,
            TtlDb::Plain(_) => {
                live.iter().all(|(k, v)| got.get(k) == Some(v))
                    && got.iter().all(|(k, v)| shown_before.get(k) == Some(v))
            }
        };
        if ok {
            Ok(got)
        } else {
            Err(format!("shows {} keys, {} live", got.len(), live.len()))
        }
    }
}

/// Writes to a TTL DB (`plain`: a `Db` opened with a TTL, else a `DbWithTtl`) whose clock
/// moves on between writes (synced: the model, each key's
/// value and write time, is exact; flushes of its small memtables drop what expired), moves
/// the clock so that more expires, cuts the filesystem off during a compaction that drops
/// expired values, crashes, and checks the reopened DB against the model at that time, then
/// again after a compaction and after the clock moves on.
fn ttl_cycle(
    rng: &mut StdRng,
    mem: &MemFs,
    fault: &FaultFs,
    sum: &mut OpsCrashSummary,
    plain: bool,
) -> Result<(), String> {
    let now = Arc::new(AtomicU64::new(1_700_000_000));
    let clock: TtlClock = {
        let now = Arc::clone(&now);
        Arc::new(move || now.load(Ordering::SeqCst))
    };
    let open = |fs: Arc<dyn FileSystem>| {
        let ttl = std::time::Duration::from_secs(TTL);
        if plain {
            Db::open_cf_descriptors_with_ttl_clock(
                &options(fs),
                "/db",
                Vec::new(),
                ttl,
                clock.clone(),
            )
            .map(TtlDb::Plain)
        } else {
            DbWithTtl::open_cf_descriptors_with_clock(
                &options(fs),
                "/db",
                Vec::new(),
                ttl,
                clock.clone(),
            )
            .map(TtlDb::Wrapper)
        }
    };
    let db = open(Arc::new(fault.clone())).map_err(e("open the TTL DB"))?;
    let sync = WriteOptions { sync: true, ..WriteOptions::default() };
    let mut model: BTreeMap<Vec<u8>, (Vec<u8>, u64)> = BTreeMap::new();
    for i in 0..rng.gen_range(50..400) {
        now.fetch_add(rng.gen_range(0..4), Ordering::SeqCst);
        let k = format!("k{:04}", rng.gen_range(0..200)).into_bytes();
        let mut batch = WriteBatch::new();
        if rng.gen_bool(0.1) {
            batch.delete(&k);
            db.write_opt(batch, sync).map_err(e("TTL delete"))?;
            model.remove(&k);
        } else {
            let v = format!("v{i}-{}", "x".repeat(rng.gen_range(0..64))).into_bytes();
            batch.put(&k, &v);
            db.write_opt(batch, sync).map_err(e("TTL put"))?;
            model.insert(k, (v, now.load(Ordering::SeqCst)));
        }
    }
    now.fetch_add(rng.gen_range(0..TTL + 20), Ordering::SeqCst);
    arm(rng, fault, "compaction.");
    let interrupted = db.compact().is_err();
    drop(db);
    let mode = crash(rng, mem, fault, sum, interrupted);
    let db = open(Arc::new(mem.clone())).map_err(e("reopen the TTL DB after the crash"))?;
    let t = now.load(Ordering::SeqCst);
    let written: BTreeMap<Vec<u8>, Vec<u8>> =
        model.iter().map(|(k, (v, _))| (k.clone(), v.clone())).collect();
    db.check(&alive(&model, t), &written).map_err(|f| {
        format!("{mode:?}: the TTL DB after the crash differs from the model at {t}: {f}")
    })?;
    db.compact().map_err(e("a TTL compaction after the crash"))?;
    let live = alive(&model, t);
    if db.contents(&live)? != live {
        return Err(format!("{mode:?}: a TTL compaction after the crash changed live values"));
    }
    now.fetch_add(rng.gen_range(1..TTL), Ordering::SeqCst);
    let t = now.load(Ordering::SeqCst);
    db.check(&alive(&model, t), &live)
        .map_err(|f| format!("{mode:?}: after the crash, values expire other than at {t}: {f}"))?;
    sum.complete_after_crash += 1;
    Ok(())
}

/// Cuts the filesystem off during the coming operation: at one of its kill points (those
/// named `prefix*`), or at a random filesystem operation.
fn arm(rng: &mut StdRng, fault: &FaultFs, prefix: &str) {
    #[cfg(feature = "kill-points")]
    if rng.gen_bool(0.5) {
        use strata::kill_point::{configure, Action, ALL};
        let names: Vec<&str> = ALL.iter().copied().filter(|n| n.starts_with(prefix)).collect();
        let name = names[rng.gen_range(0..names.len())];
        let f = fault.clone();
        configure(
            vec![(name.to_string(), 0.5)],
            rng.gen(),
            Action::Hook(Arc::new(move |_| f.kill())),
            None,
        );
        return;
    }
    let _ = prefix;
    fault.add_rule(FaultRule {
        op: FaultOp::Any,
        kind: FaultKind::Eio,
        nth: rng.gen_range(1..60),
        persistent: true,
        path_contains: None,
    });
}

#[cfg(feature = "kill-points")]
fn collect_fired(sum: &mut OpsCrashSummary) {
    for (k, v) in strata::kill_point::fired() {
        *sum.fired.entry(k.to_string()).or_default() += v;
    }
    strata::kill_point::reset();
}

#[cfg(not(feature = "kill-points"))]
fn collect_fired(_sum: &mut OpsCrashSummary) {}
