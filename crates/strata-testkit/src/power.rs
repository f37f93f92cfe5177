//! The power-loss loop: the crash-loop workload, in process, on `MemFs` behind `FaultFs`.
//!
//! Each cycle opens the DB with random options, runs the writer threads, cuts the filesystem
//! off at a random moment (`FaultFs::kill`, from a timer or from a kill point's hook, so
//! the crash can land exactly inside a MANIFEST or flush step), simulates the crash
//! (`MemFs::crash` with `PowerLoss`, `TornPowerLoss` or `ProcessKill`) and reopens.
//!
//! Check after a power loss: the recovered DB must be the state after an exact prefix of the
//! DB's write order that includes every write acknowledged with `sync`. The harness knows each
//! thread's order (a thread waits for each acknowledgement) and, across threads, a write
//! acknowledged at logical tick `a` precedes every write started after `a`. So:
//! - per thread, the recovered keys must equal the thread's model after some prefix of its
//!   writes (the candidate prefixes are found by replaying its history);
//! - no recovered write may have started after an acknowledged write that is missing;
//! - every synced write, and every write acknowledged before a synced one started, is there.
//!
//! After `ProcessKill` every acknowledged write must be there.
//!
//! In half the cycles a thread also takes checkpoints and backups (restored at once) while
//! the writers run, and opens each copy: its two families must agree key for key (every
//! write goes to both in one batch), and it must be the state after an exact prefix of every
//! thread's writes that holds every write acknowledged before the copy was asked for.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::env::{CrashMode, FaultFs, FileSystem, MemFs};
use strata::{BackupEngine, Checkpoint, Db, Options};

use crate::expected::{ExpectedState, KeyState, Observed};
use crate::value::mix;
use crate::verify::{check_acked, read_all, state_from_observed};
use crate::workload::{run_thread, HistEntry, History, Progress, WorkloadConfig, Writer};
use crate::{random_options, verify_options, Summary};

/// Settings of a power-loss run.
#[derive(Clone, Debug)]
pub struct PowerConfig {
    pub seed: u64,
    pub duration: Duration,
    pub max_cycles: u64,
    pub threads: u32,
    pub keys: u32,
    /// Longest a cycle writes before the filesystem is cut off.
    pub max_cycle_ms: u64,
    /// Also crash from kill points (needs the `kill-points` feature; process-global, so run
    /// one power-loss loop per process).
    pub kill_points: bool,
    pub verbose: bool,
}

impl Default for PowerConfig {
    fn default() -> Self {
        PowerConfig {
            seed: 1,
            duration: Duration::from_secs(10),
            max_cycles: u64::MAX,
            threads: 4,
            keys: 2000,
            max_cycle_ms: 150,
            kill_points: cfg!(feature = "kill-points"),
            verbose: false,
        }
    }
}

const DB: &str = "/db";

/// Runs the loop until the duration or cycle budget is spent, or a violation is found.
pub fn run(cfg: &PowerConfig) -> Summary {
    let mut sum = Summary { mode: "power-loss".into(), seed: cfg.seed, ..Summary::default() };
    let started = Instant::now();
    let mem = MemFs::new();
    let state = Arc::new(ExpectedState::in_memory(cfg.keys));
    let mut cycle = 0u64;
    while started.elapsed() < cfg.duration && cycle < cfg.max_cycles && sum.passed() {
        let cycle_seed = mix(cfg.seed ^ cycle.wrapping_mul(0x9e37_79b9));
        if let Err(f) = one_cycle(cfg, cycle_seed, &mem, &state, &mut sum) {
            sum.failures
                .push(format!("seed {} cycle {cycle} (cycle seed {cycle_seed}): {f}", cfg.seed));
        }
        cycle += 1;
        sum.cycles = cycle;
    }
    sum.seconds = started.elapsed().as_secs_f64();
    sum
}

#[cfg(feature = "kill-points")]
fn arm_kill_point(rng: &mut StdRng, view: &FaultFs) -> Option<&'static str> {
    use strata::kill_point::{configure, Action, ALL};
    let candidates: Vec<&'static str> =
        // Points of an open would never fire: the loop cuts the filesystem off only once the
        // DB is open (checkpoints and backups run in half the cycles). Nor would an OPTIONS
        // file's, written at open and by family and option changes the loop does not make.
        ALL.iter()
            .copied()
            .filter(|n| !n.starts_with("open.") && !n.starts_with("options."))
            .collect();
    let name = candidates[rng.gen_range(0..candidates.len())];
    let p = match name {
        "wal.append" => 0.002,
        "wal.sync" => 0.02,
        _ => 0.3,
    };
    let v = view.clone();
    configure(
        vec![(name.to_string(), p)],
        rng.gen(),
        Action::Hook(Arc::new(move |_| v.kill())),
        None,
    );
    Some(name)
}

#[cfg(not(feature = "kill-points"))]
fn arm_kill_point(_rng: &mut StdRng, _view: &FaultFs) -> Option<&'static str> {
    None
}

/// Adds the kill point counters to the summary and resets them; true when one fired.
#[cfg(feature = "kill-points")]
fn collect_kill_points(sum: &mut Summary) -> bool {
    for (k, v) in strata::kill_point::hits() {
        *sum.kill_point_hits.entry(k.to_string()).or_default() += v;
    }
    let fired = strata::kill_point::fired();
    for (k, v) in &fired {
        *sum.kill_point_fired.entry((*k).to_string()).or_default() += v;
    }
    strata::kill_point::reset();
    !fired.is_empty()
}

#[cfg(not(feature = "kill-points"))]
fn collect_kill_points(_sum: &mut Summary) -> bool {
    false
}

fn one_cycle(
    cfg: &PowerConfig,
    seed: u64,
    mem: &MemFs,
    state: &Arc<ExpectedState>,
    sum: &mut Summary,
) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let view = FaultFs::new(Arc::new(mem.clone()), seed);
    let wal_dir = crate::run_wal_dir(cfg.seed, std::path::Path::new(DB));
    let db_paths = crate::run_db_paths(cfg.seed, std::path::Path::new(DB));
    let comparator = crate::run_key_order(cfg.seed);
    let opts = Options {
        db_paths: db_paths.clone(),
        comparator: comparator.clone(),
        ..random_options(&mut rng, Arc::new(view.clone()), true, wal_dir.clone())
    };
    let db = crate::open_db(&opts, DB).map_err(|e| format!("open before writing: {e}"))?;
    let wl = WorkloadConfig {
        key_order: comparator.clone(),
        ..WorkloadConfig::random(&mut rng, cfg.keys, cfg.threads)
    };
    let init: Vec<KeyState> = (0..cfg.keys).map(|i| state.get(i).state).collect();
    let history = History::new(cfg.threads);
    let stop = AtomicBool::new(false);
    let running = AtomicU32::new(cfg.threads);
    if cfg.kill_points && rng.gen_bool(0.5) {
        arm_kill_point(&mut rng, &view);
    }
    let write_for = Duration::from_millis(rng.gen_range(1..=cfg.max_cycle_ms.max(1)));
    let progress = Progress::new(None);
    let copier_seed = rng.gen_bool(0.5).then(|| rng.gen::<u64>());
    let mut copies = CopyChecks::default();
    let stats = std::thread::scope(|s| {
        let copier = copier_seed.map(|seed| {
            let (db, view, history, stop) = (&db, &view, &history, &stop);
            let order = opts.comparator.clone();
            s.spawn(move || take_copies(db, view, history, stop, seed, cfg.keys, order))
        });
        let handles: Vec<_> = (0..cfg.threads)
            .map(|tid| {
                let (db, wl, state, stop, history, progress, running) =
                    (&db, &wl, &**state, &stop, &history, &progress, &running);
                s.spawn(move || {
                    let w =
                        Writer { db, cfg: wl, seed, state, stop, history: Some(history), progress };
                    let st = run_thread(&w, tid);
                    running.fetch_sub(1, Ordering::SeqCst);
                    st
                })
            })
            .collect();
        let t0 = Instant::now();
        while t0.elapsed() < write_for && running.load(Ordering::SeqCst) == cfg.threads {
            std::thread::sleep(Duration::from_millis(1));
        }
        view.kill();
        stop.store(true, Ordering::SeqCst);
        if let Some(c) = copier {
            copies = c.join().expect("copier thread panicked");
        }
        handles.into_iter().map(|h| h.join().expect("writer thread panicked")).collect::<Vec<_>>()
    });
    let hist = history.take();
    check_copies(&copies, &init, &hist, cfg, seed, sum);
    let fired = collect_kill_points(sum);
    let mode = match rng.gen_range(0..5) {
        0 => CrashMode::ProcessKill,
        1 | 2 => CrashMode::PowerLoss,
        _ => CrashMode::TornPowerLoss { seed: rng.gen() },
    };
    mem.crash(mode);
    drop(db);
    let ending = match mode {
        CrashMode::ProcessKill => "process-kill",
        CrashMode::PowerLoss => "power-loss",
        CrashMode::TornPowerLoss { .. } => "torn-power-loss",
    };
    let ending = if fired { format!("{ending} at a kill point") } else { ending.to_string() };
    *sum.endings.entry(ending).or_default() += 1;
    for st in &stats {
        sum.acked_sync += st.acked_sync;
        sum.acked_nosync += st.acked_nosync;
        sum.wrong += st.wrong_reads.len() as u64;
        for w in &st.wrong_reads {
            sum.failures.push(format!(
                "seed {} (cycle seed {seed}): {w}; options: {}; workload: {wl:?}",
                cfg.seed,
                crate::describe_options(&opts)
            ));
        }
    }

    let view2 = FaultFs::new(Arc::new(mem.clone()), seed ^ 1);
    let t0 = Instant::now();
    let verify = Options { db_paths, comparator, ..verify_options(Arc::new(view2), wal_dir) };
    let db =
        crate::open_db(&verify, DB).map_err(|e| format!("recovery after {mode:?} failed: {e}"))?;
    sum.recovery_us.push(t0.elapsed().as_micros() as u64);
    let (obs, problems) =
        read_all(&db, cfg.keys).map_err(|e| format!("read after {mode:?}: {e}"))?;
    drop(db);
    sum.wrong += problems.len() as u64;
    for p in problems.iter().take(10) {
        sum.failures.push(format!("seed {} (cycle seed {seed}) {mode:?}: {p}", cfg.seed));
    }
    let garbage = obs.iter().filter(|o| **o == Observed::Garbage).count() as u64;
    if garbage > 0 {
        sum.wrong += garbage;
        sum.failures.push(format!(
            "seed {} (cycle seed {seed}) {mode:?}: {garbage} keys hold garbage",
            cfg.seed
        ));
    }
    if mode == CrashMode::ProcessKill {
        let rep = check_acked(state, &obs, true).map_err(|e| e.to_string())?;
        sum.lost += rep.lost;
        sum.wrong += rep.wrong;
        sum.torn_batches += rep.torn_batches;
        sum.pending_new += rep.pending_new;
        sum.pending_old += rep.pending_old;
        for m in rep.messages {
            sum.failures.push(format!("seed {} (cycle seed {seed}) {mode:?}: {m}", cfg.seed));
        }
        return Ok(());
    }
    let rep = check_prefix(&init, &hist, &obs, cfg.threads);
    sum.lost += rep.lost;
    sum.prefix_violations += rep.prefix_violations;
    sum.unsynced_dropped += rep.unsynced_dropped;
    sum.pending_new += rep.pending_new;
    sum.pending_old += rep.pending_old;
    for m in rep.messages {
        sum.failures.push(format!("seed {} (cycle seed {seed}) {mode:?}: {m}", cfg.seed));
    }
    for (i, &o) in obs.iter().enumerate() {
        let i = i as u32;
        let rec = state.get(i);
        let s = state_from_observed(i, o, KeyState { version: rec.issued, ..rec.state });
        state.resolve(i, s).map_err(|e| e.to_string())?;
    }
    if cfg.verbose {
        eprintln!("cycle seed {seed}: {mode:?}, prefixes {:?}", rep.prefixes);
    }
    Ok(())
}

/// What the copier thread saw: each copy's contents with the tick it was asked for at, and
/// errors that came before the filesystem was cut off.
#[derive(Default)]
struct CopyChecks {
    copies: Vec<CopyCheck>,
    errors: Vec<String>,
}

struct CopyCheck {
    /// A checkpoint or a restored backup.
    what: &'static str,
    /// The history's tick just before the copy was asked for.
    start: u64,
    obs: Vec<Observed>,
    /// Families that disagree, iterator and `get` that disagree.
    problems: Vec<String>,
}

/// Until `stop`: now and then a checkpoint, or a backup restored at once, of `db`, each opened
/// and read whole, then deleted. An error once the filesystem was cut off (by the timer or a
/// kill point) ends the thread quietly; any other error is recorded.
fn take_copies(
    db: &Db,
    view: &FaultFs,
    history: &History,
    stop: &AtomicBool,
    seed: u64,
    keys: u32,
    order: strata::comparator::KeyOrder,
) -> CopyChecks {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = CopyChecks::default();
    let fs: Arc<dyn FileSystem> = Arc::new(view.clone());
    let opts = Options { comparator: order, ..verify_options(fs.clone(), None) };
    let backups = std::path::PathBuf::from("/backups");
    for n in 0.. {
        std::thread::sleep(Duration::from_millis(rng.gen_range(1..=15)));
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let dir = std::path::PathBuf::from(format!("/copy-{seed:016x}-{n}"));
        let what = if rng.gen_bool(0.5) { "checkpoint" } else { "backup" };
        let start = history.tick();
        let made = if what == "checkpoint" {
            Checkpoint::create(db, &dir).map(|_| ())
        } else {
            BackupEngine::open(&opts, &backups).and_then(|engine| {
                let info = engine.create_new_backup(db)?;
                engine.restore_from_backup(info.id, &dir)?;
                engine.purge_old_backups(1)
            })
        };
        let read = made.and_then(|()| {
            let copy = crate::open_db(&opts, &dir)?;
            read_all(&copy, keys)
        });
        match read {
            Ok((obs, problems)) => out.copies.push(CopyCheck { what, start, obs, problems }),
            Err(e) => {
                if view.injected() == 0 {
                    out.errors.push(format!("{what} {}: {e}", dir.display()));
                }
                break;
            }
        }
        let _ = Db::destroy(&opts, &dir);
    }
    out
}

/// Checks the copies the copier took against the writers' whole histories: families agree,
/// and each copy is a prefix of every thread's writes holding those acknowledged before it
/// was asked for (marked as the prefix check's required writes).
fn check_copies(
    copies: &CopyChecks,
    init: &[KeyState],
    hist: &[Vec<HistEntry>],
    cfg: &PowerConfig,
    seed: u64,
    sum: &mut Summary,
) {
    let fail = |sum: &mut Summary, m: String| {
        sum.failures.push(format!("seed {} (cycle seed {seed}): {m}", cfg.seed));
    };
    for e in &copies.errors {
        fail(sum, format!("a copy taken under writes failed: {e}"));
    }
    for c in &copies.copies {
        sum.copies_checked += 1;
        let required: Vec<Vec<HistEntry>> = hist
            .iter()
            .map(|h| {
                h.iter()
                    .map(|e| HistEntry { sync: e.ack.is_some_and(|a| a < c.start), ..e.clone() })
                    .collect()
            })
            .collect();
        let rep = check_prefix(init, &required, &c.obs, cfg.threads);
        let garbage = c.obs.contains(&Observed::Garbage);
        if !c.problems.is_empty() || rep.prefix_violations > 0 || rep.lost > 0 || garbage {
            sum.torn_copies += 1;
            let mut msgs = c.problems.clone();
            msgs.extend(rep.messages);
            msgs.truncate(6);
            fail(sum, format!("a {} taken under writes is torn: {}", c.what, msgs.join("; ")));
        }
    }
}

/// The outcome of the prefix check.
#[derive(Debug, Default)]
pub struct PrefixReport {
    pub lost: u64,
    pub prefix_violations: u64,
    pub unsynced_dropped: u64,
    pub pending_new: u64,
    pub pending_old: u64,
    /// Per thread, the (smallest, largest) matching prefix length.
    pub prefixes: Vec<(usize, usize)>,
    pub messages: Vec<String>,
}

/// Checks that `obs` is the state after an exact prefix of the writes in `hist` (per-thread
/// histories starting from `init`) that includes every synced write; see the module docs.
pub fn check_prefix(
    init: &[KeyState],
    hist: &[Vec<HistEntry>],
    obs: &[Observed],
    threads: u32,
) -> PrefixReport {
    let mut rep = PrefixReport::default();
    let mut model = init.to_vec();
    let mut ranges = Vec::new();
    for (t, h) in hist.iter().enumerate() {
        let owned: Vec<u32> = (t as u32..obs.len() as u32).step_by(threads as usize).collect();
        let matches = |model: &[KeyState], i: u32| model[i as usize].observed(i) == obs[i as usize];
        let mut mismatches = owned.iter().filter(|&&i| !matches(&model, i)).count();
        let mut candidates = Vec::new();
        if mismatches == 0 {
            candidates.push(0usize);
        }
        for (j, e) in h.iter().enumerate() {
            for &(i, op, v) in &e.ops {
                let before = matches(&model, i);
                model[i as usize] = model[i as usize].apply(i, op, v);
                let after = matches(&model, i);
                match (before, after) {
                    (true, false) => mismatches += 1,
                    (false, true) => mismatches -= 1,
                    _ => {}
                }
            }
            if mismatches == 0 {
                candidates.push(j + 1);
            }
        }
        match (candidates.first(), candidates.last()) {
            (Some(&lo), Some(&hi)) => ranges.push(Some((lo, hi))),
            _ => {
                rep.prefix_violations += 1;
                let mut m = init.to_vec();
                for e in h {
                    for &(i, op, v) in &e.ops {
                        m[i as usize] = m[i as usize].apply(i, op, v);
                    }
                }
                let bad: Vec<String> = owned
                    .iter()
                    .filter(|&&i| {
                        !matches(&m, i) && init[i as usize].observed(i) != obs[i as usize]
                    })
                    .take(3)
                    .map(|&i| {
                        format!(
                            "key {i}: found {:?}, before the cycle {:?}, after all writes {:?}",
                            obs[i as usize],
                            init[i as usize].observed(i),
                            m[i as usize].observed(i)
                        )
                    })
                    .collect();
                rep.messages.push(format!(
                    "thread {t}: no prefix of its {} writes matches the recovered keys ({})",
                    h.len(),
                    bad.join("; ")
                ));
                ranges.push(None);
            }
        }
    }
    rep.prefixes = ranges.iter().map(|r| r.unwrap_or((0, 0))).collect();

    // Writes that must be present: every synced acknowledged write, and every write
    // acknowledged before a synced one started.
    let synced_starts: Vec<u64> = hist
        .iter()
        .flat_map(|h| h.iter().filter(|e| e.sync && e.ack.is_some()).map(|e| e.start))
        .collect();
    let latest_sync_start = synced_starts.iter().copied().max();
    for (t, h) in hist.iter().enumerate() {
        let Some((lo, hi)) = ranges[t] else { continue };
        let mut required = 0usize;
        for (j, e) in h.iter().enumerate() {
            let acked_before_sync =
                matches!((e.ack, latest_sync_start), (Some(a), Some(s)) if a < s);
            if (e.sync && e.ack.is_some()) || acked_before_sync {
                required = j + 1;
            }
        }
        if hi < required {
            rep.lost += (required - hi) as u64;
            rep.messages.push(format!(
                "thread {t}: recovered {hi} of its writes but {required} were synced or \
                 acknowledged before a synced write started"
            ));
        }
        rep.unsynced_dropped +=
            h[hi.min(h.len())..].iter().filter(|e| e.ack.is_some() && !e.sync).count() as u64;
        rep.pending_new += h[..lo].iter().filter(|e| e.ack.is_none()).count() as u64;
        rep.pending_old += h[hi.min(h.len())..].iter().filter(|e| e.ack.is_none()).count() as u64;
    }
    // No present write may have started after a missing acknowledged write was acknowledged.
    for (t, ht) in hist.iter().enumerate() {
        let Some((lo_t, _)) = ranges[t] else { continue };
        if lo_t == 0 {
            continue;
        }
        let last_present = &ht[lo_t - 1];
        for (u, hu) in hist.iter().enumerate() {
            if u == t {
                continue;
            }
            let Some((_, hi_u)) = ranges[u] else { continue };
            if let Some(Some(a)) = hu.get(hi_u).map(|e| e.ack) {
                if last_present.start > a {
                    rep.prefix_violations += 1;
                    rep.messages.push(format!(
                        "hole: thread {t}'s write {} (started at tick {}) survived, but thread \
                         {u}'s write {hi_u} acknowledged earlier (tick {a}) is missing",
                        lo_t - 1,
                        last_present.start
                    ));
                }
            }
        }
    }
    rep
}

/// Runs the loop on a fresh directory path; used by tests.
pub fn run_default(seed: u64, secs: u64) -> Summary {
    run(&PowerConfig { seed, duration: Duration::from_secs(secs), ..PowerConfig::default() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expected::OpKind;

    fn e(start: u64, ack: Option<u64>, sync: bool, ops: Vec<(u32, OpKind, u64)>) -> HistEntry {
        HistEntry { start, ack, sync, ops }
    }

    #[test]
    fn prefix_check_accepts_prefixes_and_finds_holes() {
        // Two threads: keys 0, 2 (thread 0) and 1 (thread 1).
        let init = vec![KeyState::default(); 3];
        let hist = vec![
            vec![
                e(1, Some(2), false, vec![(0, OpKind::Put, 1)]),
                e(5, Some(6), false, vec![(2, OpKind::Put, 1)]),
            ],
            vec![e(3, Some(4), false, vec![(1, OpKind::Put, 1)])],
        ];
        let ok = [Observed::Value(1), Observed::Value(1), Observed::Absent];
        assert_eq!(check_prefix(&init, &hist, &ok, 2).prefix_violations, 0);
        // Thread 0's second write (started at 5) survived but thread 1's (acked at 4) did not.
        let hole = [Observed::Value(1), Observed::Absent, Observed::Value(1)];
        assert_eq!(check_prefix(&init, &hist, &hole, 2).prefix_violations, 1);
        // Not a prefix of thread 0's writes.
        let skip = [Observed::Absent, Observed::Absent, Observed::Value(1)];
        assert_eq!(check_prefix(&init, &hist, &skip, 2).prefix_violations, 1);
        // A synced write missing.
        let mut synced = hist.clone();
        synced[1][0].sync = true;
        let lost = [Observed::Absent, Observed::Absent, Observed::Absent];
        assert!(check_prefix(&init, &synced, &lost, 2).lost > 0);
    }
}
