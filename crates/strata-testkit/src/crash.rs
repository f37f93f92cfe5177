//! The kill -9 crash loop.
//!
//! The parent starts a child process (`strata-stress --child ...`) that opens the DB on the
//! real filesystem with random options and runs the multi-threaded workload, keeping the
//! expected-state file. At a random moment the parent sends SIGKILL (unless a kill point
//! aborted the child first), then opens the DB itself, checks every key against the file
//! (all acknowledged writes must be there, whether synced or not: the bytes reached the OS
//! before the acknowledgement) and settles pending operations, and starts the next child.
//!
//! One cycle in four is a *clean-close* cycle instead: the child writes for the cycle's time,
//! part of it with the WAL disabled, then drops the DB and exits 0 (no kill points). A clean
//! close must keep every acknowledged write, those that skipped the WAL included.
//!
//! The lock: once the child has its DB open it tries to open it again itself (refused), and
//! then the parent, another process, tries to open it too. That must be refused while the
//! child lives: two processes never write one DB.

use std::collections::BTreeMap;
#[cfg(feature = "kill-points")]
use std::fmt::Write as _;
use std::fs::File;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::env::OsFs;
use strata::Options;

use crate::expected::ExpectedState;
use crate::value::mix;
use crate::verify::{check_acked, read_all};
use crate::workload::{run_thread, Progress, WorkloadConfig, Writer};
use crate::{random_options, verify_options, Summary};

/// How the parent configures the child's kill points.
#[derive(Clone, Debug)]
pub enum KillPoints {
    /// Never.
    None,
    /// Each cycle, with probability 1/2, one random point with a probability that makes it
    /// likely to fire within the cycle.
    Auto,
    /// This `STRATA_KILL_POINTS` spec every cycle.
    Spec(String),
}

/// Settings of a kill -9 run.
#[derive(Clone, Debug)]
pub struct KillConfig {
    pub seed: u64,
    pub duration: Duration,
    pub max_cycles: u64,
    pub threads: u32,
    pub keys: u32,
    /// Working directory (DB, expected state, child logs); created, and removed on success.
    pub dir: PathBuf,
    /// The `strata-stress` executable to start as the child.
    pub exe: PathBuf,
    pub kill_points: KillPoints,
    pub min_cycle_ms: u64,
    pub max_cycle_ms: u64,
    pub verbose: bool,
}

fn auto_spec(rng: &mut StdRng) -> Option<String> {
    if !cfg!(feature = "kill-points") || rng.gen_bool(0.5) {
        return None;
    }
    // Checkpoints and backups are not part of this loop's workload (`ops_crash` covers them).
    let all: Vec<&str> = strata_kill_point_names()
        .iter()
        .copied()
        .filter(|n| !n.starts_with("checkpoint.") && !n.starts_with("backup."))
        .collect();
    let name = all[rng.gen_range(0..all.len())];
    let p = match name {
        "wal.append" => 0.0005,
        "wal.sync" => 0.005,
        _ => 0.25,
    };
    Some(format!("{name}={p}"))
}

#[cfg(feature = "kill-points")]
fn strata_kill_point_names() -> &'static [&'static str] {
    strata::kill_point::ALL
}

#[cfg(not(feature = "kill-points"))]
fn strata_kill_point_names() -> &'static [&'static str] {
    &["wal.append"]
}

fn parse_counts(path: &Path, into: &mut BTreeMap<String, u64>) {
    let Ok(text) = std::fs::read_to_string(path) else { return };
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        if let Some(name) = parts.next() {
            let n: u64 = parts.next().and_then(|n| n.parse().ok()).unwrap_or(1);
            *into.entry(name.to_string()).or_default() += n;
        }
    }
}

/// Runs the loop; see the module docs.
pub fn run(cfg: &KillConfig) -> Summary {
    let mut sum = Summary { mode: "kill-9".into(), seed: cfg.seed, ..Summary::default() };
    let started = Instant::now();
    let dbdir = cfg.dir.join("db");
    let state_path = cfg.dir.join("expected-state");
    let _ = std::fs::remove_dir_all(&cfg.dir);
    if let Err(e) = std::fs::create_dir_all(&cfg.dir)
        .and_then(|()| ExpectedState::create(&state_path, cfg.keys).map(|_| ()))
    {
        sum.failures.push(format!("setting up {}: {e}", cfg.dir.display()));
        return sum;
    }
    let mut rng = StdRng::seed_from_u64(cfg.seed);
    let mut cycle = 0u64;
    while started.elapsed() < cfg.duration && cycle < cfg.max_cycles && sum.passed() {
        let child_seed = mix(cfg.seed ^ cycle.wrapping_mul(0x9e37_79b9));
        if let Err(f) = one_cycle(cfg, &mut rng, child_seed, &dbdir, &state_path, &mut sum) {
            sum.failures
                .push(format!("seed {} cycle {cycle} (child seed {child_seed}): {f}", cfg.seed));
        }
        cycle += 1;
        sum.cycles = cycle;
    }
    sum.seconds = started.elapsed().as_secs_f64();
    if sum.passed() {
        let _ = std::fs::remove_dir_all(&cfg.dir);
    } else {
        sum.failures.push(format!("DB and expected state kept in {}", cfg.dir.display()));
    }
    sum
}

fn one_cycle(
    cfg: &KillConfig,
    rng: &mut StdRng,
    child_seed: u64,
    dbdir: &Path,
    state_path: &Path,
    sum: &mut Summary,
) -> Result<(), String> {
    // One cycle in four ends in a clean close instead of a kill (with writes that skip the
    // WAL, which only a clean close keeps); kill points stay off for it.
    let clean_close = rng.gen_bool(0.25);
    let spec = match &cfg.kill_points {
        _ if clean_close => None,
        KillPoints::None => None,
        KillPoints::Auto => auto_spec(rng),
        KillPoints::Spec(s) => Some(s.clone()),
    };
    let fired_log = cfg.dir.join("fired.log");
    let hits_file = cfg.dir.join("hits");
    let progress = cfg.dir.join("progress");
    let child_err = cfg.dir.join("child.stderr");
    let opened = opened_marker(&progress);
    for p in [&fired_log, &hits_file, &progress, &opened] {
        let _ = std::fs::remove_file(p);
    }
    let err_file = File::create(&child_err).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(&cfg.exe);
    cmd.arg("--child")
        .arg("--dir")
        .arg(dbdir)
        .arg("--state")
        .arg(state_path)
        .arg("--progress")
        .arg(&progress)
        .arg("--hits")
        .arg(&hits_file)
        .args(["--seed", &child_seed.to_string()])
        .args(["--threads", &cfg.threads.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err_file)
        .env_remove("STRATA_KILL_POINTS");
    let run_for = Duration::from_millis(rng.gen_range(cfg.min_cycle_ms..=cfg.max_cycle_ms));
    if clean_close {
        cmd.args(["--clean-close-ms", &run_for.as_millis().to_string()]);
    }
    if let Some(w) = crate::run_wal_dir(cfg.seed, dbdir) {
        cmd.arg("--wal-dir").arg(w);
    }
    if !crate::run_db_paths(cfg.seed, dbdir).is_empty() {
        cmd.arg("--db-paths");
    }
    if !crate::run_key_order(cfg.seed).is_bytewise() {
        cmd.arg("--key-order");
    }
    if let Some(spec) = &spec {
        cmd.env("STRATA_KILL_POINTS", spec)
            .env("STRATA_KILL_POINTS_SEED", child_seed.to_string())
            .env("STRATA_KILL_POINTS_LOG", &fired_log);
    }
    let mut child = cmd.spawn().map_err(|e| format!("starting {}: {e}", cfg.exe.display()))?;
    // A clean-closing child ends by itself; a close that takes a minute is a hang.
    let wait_for = if clean_close { run_for + Duration::from_secs(60) } else { run_for };
    let t0 = Instant::now();
    let mut status = None;
    let mut probed = false;
    while t0.elapsed() < wait_for {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            status = Some(s);
            break;
        }
        if !probed && opened.exists() {
            probed = true;
            if let Err(e) = probe_lock(cfg, dbdir, &mut child, sum) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(e);
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let status = match status {
        Some(s) => s,
        None => {
            let _ = child.kill();
            let s = child.wait().map_err(|e| e.to_string())?;
            if clean_close {
                return Err(format!("a clean close did not finish within {wait_for:?}"));
            }
            s
        }
    };
    let ending = match (status.signal(), status.code()) {
        (None, Some(0)) if clean_close => "clean close".to_string(),
        (Some(9), _) => "SIGKILL".to_string(),
        (Some(6), _) => "kill point (abort)".to_string(),
        (Some(sig), _) => format!("signal {sig}"),
        (None, Some(code)) => format!("exit {code}"),
        (None, None) => "unknown".to_string(),
    };
    *sum.endings.entry(ending.clone()).or_default() += 1;
    let (s, n) = Progress::read(&progress);
    sum.acked_sync += s;
    sum.acked_nosync += n;
    parse_counts(&fired_log, &mut sum.kill_point_fired);
    parse_counts(&hits_file, &mut sum.kill_point_hits);
    let stderr = std::fs::read_to_string(&child_err).unwrap_or_default();
    let wrong_lines = stderr.lines().filter(|l| l.starts_with("WRONG")).count() as u64;
    sum.wrong += wrong_lines;
    if status.code().is_some_and(|c| c != 0) || status.signal().is_some_and(|s| s != 9 && s != 6) {
        return Err(format!("child ended with {ending} (kill points {spec:?}): {}", stderr.trim()));
    }
    if cfg.verbose {
        eprintln!("cycle: child {ending} after {:?}, kill points {spec:?}", t0.elapsed());
    }

    // The files as the child left them, for a failure's post-mortem (the verifying open below
    // changes them).
    keep_crashed_files(cfg, dbdir);
    let state = ExpectedState::open(state_path).map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    let db = crate::open_db(&run_verify_options(cfg.seed, dbdir), dbdir)
        .map_err(|e| format!("recovery failed (kill points {spec:?}): {e}"))?;
    sum.recovery_us.push(t0.elapsed().as_micros() as u64);
    let (obs, problems) =
        read_all(&db, cfg.keys).map_err(|e| format!("read after recovery: {e}"))?;
    drop(db);
    sum.wrong += problems.len() as u64;
    let rep = check_acked(&state, &obs, true).map_err(|e| e.to_string())?;
    sum.lost += rep.lost;
    sum.wrong += rep.wrong;
    sum.torn_batches += rep.torn_batches;
    sum.pending_new += rep.pending_new;
    sum.pending_old += rep.pending_old;
    if rep.violations() > 0 || !problems.is_empty() {
        let mut msgs = rep.messages;
        msgs.extend(problems.into_iter().take(10));
        return Err(format!(
            "after {ending} (kill points {spec:?}; child {}): {}",
            stderr.lines().next().unwrap_or(""),
            msgs.join("\n    ")
        ));
    }
    Ok(())
}

/// The options the parent opens the run's DB with: its WAL directory, table paths and key
/// order.
fn run_verify_options(seed: u64, dbdir: &Path) -> Options {
    Options {
        db_paths: crate::run_db_paths(seed, dbdir),
        comparator: crate::run_key_order(seed),
        ..verify_options(Arc::new(OsFs), crate::run_wal_dir(seed, dbdir))
    }
}

/// The file the child creates once its DB is open and its own second opens were refused.
fn opened_marker(progress: &Path) -> PathBuf {
    progress.with_extension("opened")
}

/// The parent, another process, tries to open the DB the child holds: refused with `Locked`,
/// or opened only because the child has ended meanwhile.
fn probe_lock(
    cfg: &KillConfig,
    dbdir: &Path,
    child: &mut std::process::Child,
    sum: &mut Summary,
) -> Result<(), String> {
    let opts = run_verify_options(cfg.seed, dbdir);
    match crate::open_db(&opts, dbdir) {
        Err(strata::Error::Locked(_)) => {
            sum.lock_refusals += 1;
            Ok(())
        }
        Ok(db) => {
            drop(db);
            match child.try_wait() {
                Ok(Some(_)) => Ok(()),
                _ => Err("another process opened the DB while the child held it".into()),
            }
        }
        // The child died meanwhile (a kill point): the open raced its end.
        Err(_) if child.try_wait().is_ok_and(|s| s.is_some()) => Ok(()),
        Err(e) => Err(format!("a second process's open failed otherwise than Locked: {e}")),
    }
}

/// The child's own second opens of the DB it holds (through two paths) must be refused.
fn refuse_second_opens(opts: &strata::Options, dir: &Path) -> Result<(), String> {
    for path in [dir.to_path_buf(), dir.join(".")] {
        match crate::open_db(opts, &path) {
            Err(strata::Error::Locked(_)) => {}
            Ok(_) => {
                return Err(format!("a second open of {} in the process succeeded", path.display()))
            }
            Err(e) => {
                return Err(format!("a second open of {} failed otherwise: {e}", path.display()))
            }
        }
    }
    Ok(())
}

/// Copies the DB directory (and the WAL directory, if apart) to `<dir>/as-crashed/`,
/// replacing the previous cycle's copy. Best effort: a failed copy only loses the post-mortem.
fn keep_crashed_files(cfg: &KillConfig, dbdir: &Path) {
    let to = cfg.dir.join("as-crashed");
    let _ = std::fs::remove_dir_all(&to);
    let mut dirs = vec![(dbdir.to_path_buf(), to.join("db"))];
    if let Some(w) = crate::run_wal_dir(cfg.seed, dbdir) {
        dirs.push((w, to.join("wal")));
    }
    for (i, p) in crate::run_db_paths(cfg.seed, dbdir).iter().enumerate() {
        dirs.push((p.path().to_path_buf(), to.join(format!("tables{i}"))));
    }
    for (from, to) in dirs {
        let Ok(entries) = std::fs::read_dir(&from) else { continue };
        let _ = std::fs::create_dir_all(&to);
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_file()) {
                let _ = std::fs::copy(e.path(), to.join(e.file_name()));
            }
        }
    }
}

/// Child-mode arguments.
#[derive(Clone, Debug)]
pub struct ChildArgs {
    pub dir: PathBuf,
    pub state: PathBuf,
    pub progress: PathBuf,
    pub hits: Option<PathBuf>,
    pub seed: u64,
    pub threads: u32,
    /// The child stops by itself after this long (a safety net; the parent kills it sooner).
    pub max_life: Duration,
    /// A clean-close cycle: the child writes for `max_life` (some writes with the WAL
    /// disabled), closes the DB and exits 0; the parent does not kill it.
    pub clean_close: bool,
    /// The run's WAL directory (`--wal-dir`), if the WAL is kept apart.
    pub wal_dir: Option<PathBuf>,
    /// The run spreads the tables over [`crate::table_paths_for`] (`--db-paths`).
    pub db_paths: bool,
    /// The run orders keys by [`crate::loop_key_order`] (`--key-order`).
    pub key_order: bool,
}

/// The child: opens the DB and writes until killed. Returns the process exit code.
pub fn child_main(args: &ChildArgs) -> i32 {
    #[cfg(feature = "kill-points")]
    if let Err(e) = strata::kill_point::configure_from_env() {
        eprintln!("bad kill point configuration: {e}");
        return 2;
    }
    let state = match ExpectedState::open(&args.state) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("expected state: {e}");
            return 2;
        }
    };
    let mut rng = StdRng::seed_from_u64(args.seed);
    let db_paths = if args.db_paths { crate::table_paths_for(&args.dir) } else { Vec::new() };
    let comparator = if args.key_order {
        crate::loop_key_order()
    } else {
        strata::comparator::KeyOrder::Bytewise
    };
    let opts = Options {
        db_paths,
        comparator: comparator.clone(),
        ..random_options(&mut rng, Arc::new(OsFs), false, args.wal_dir.clone())
    };
    let mut wl = WorkloadConfig::random(&mut rng, state.keys(), args.threads);
    wl.key_order = comparator;
    if args.clean_close {
        // Only a clean close keeps writes that skipped the WAL.
        wl.disable_wal_ratio = [0.3, 1.0][rng.gen_range(0..2)];
    }
    eprintln!("options: {}; workload: {wl:?}", crate::describe_options(&opts));
    let stop = AtomicBool::new(false);
    let progress_file = match File::create(&args.progress) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("progress file: {e}");
            return 2;
        }
    };
    let progress = Progress::new(Some(progress_file));
    let db = match crate::open_db(&opts, &args.dir) {
        Ok(db) => db,
        Err(e) => {
            eprintln!("open: {e}");
            return 3;
        }
    };
    if let Err(w) = refuse_second_opens(&opts, &args.dir) {
        eprintln!("WRONG {w}");
        return 5;
    }
    // Best effort: without the marker the parent only skips its probe this cycle.
    let _ = std::fs::write(opened_marker(&args.progress), b"");
    let done = AtomicBool::new(false);
    let results = std::thread::scope(|s| {
        if let Some(hits) = &args.hits {
            let done = &done;
            s.spawn(move || dump_hits(hits, done));
        }
        let handles: Vec<_> = (0..args.threads)
            .map(|tid| {
                let (db, wl, state, stop, progress) = (&db, &wl, &state, &stop, &progress);
                let w =
                    Writer { db, cfg: wl, seed: args.seed, state, stop, history: None, progress };
                s.spawn(move || run_thread(&w, tid))
            })
            .collect();
        let t0 = Instant::now();
        while t0.elapsed() < args.max_life && !handles.iter().all(|h| h.is_finished()) {
            std::thread::sleep(Duration::from_millis(10));
        }
        stop.store(true, Ordering::SeqCst);
        let r: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        done.store(true, Ordering::SeqCst);
        r
    });
    let mut code = 0;
    for r in results {
        match r {
            Ok(st) => {
                for w in &st.wrong_reads {
                    eprintln!("WRONG {w}");
                    code = 5;
                }
                if let Some(e) = st.error {
                    eprintln!("writer failed: {e}");
                    code = code.max(4);
                }
            }
            Err(_) => {
                eprintln!("writer thread panicked");
                code = 6;
            }
        }
    }
    code
}

fn dump_hits(path: &Path, done: &AtomicBool) {
    let tmp = path.with_extension("tmp");
    while !done.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
        #[cfg(feature = "kill-points")]
        {
            let text = strata::kill_point::hits().iter().fold(String::new(), |mut t, (k, v)| {
                let _ = writeln!(t, "{k} {v}");
                t
            });
            if std::fs::write(&tmp, text).is_ok() {
                let _ = std::fs::rename(&tmp, path);
            }
        }
        #[cfg(not(feature = "kill-points"))]
        let _ = &tmp;
    }
}
