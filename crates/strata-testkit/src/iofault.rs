//! The I/O error loop: for each operation in [`OPS`] and each fault in [`FAULTS`], inject the
//! fault at the operation's 1st, 2nd, ... I/O (once as a single fault, once persistent) until
//! the operation completes without reaching the fault. After each attempt:
//!
//! - a failed write or flush must leave the DB refusing writes: a synced probe write must fail
//!   (no write is acknowledged after a failed WAL write or sync; `docs/contract.md` rule 6);
//! - the faults are cleared, the machine loses power (`MemFs::crash(PowerLoss)`), and the DB
//!   must reopen (twice) with every acknowledged write, without the probe, and take writes
//!   again (a full disk loses nothing acknowledged; `docs/contract.md` rule 5).
//!
//! Adding an operation is one entry in [`OPS`].

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use strata::env::{CrashMode, FaultFs, FaultKind, FaultOp, FaultRule, MemFs};
use strata::{Db, Error, Options, WriteOptions};

const DIR: &str = "/db";
const SYNC: WriteOptions = WriteOptions { sync: true, disable_wal: false, ..WriteOptions::new() };

/// State of one attempt: the filesystem and what the DB acknowledged.
pub struct Ctx {
    pub mem: MemFs,
    pub fs: FaultFs,
    /// Acknowledged (synced) writes: they must survive.
    pub model: BTreeMap<Vec<u8>, Vec<u8>>,
    /// Writes whose call failed: after recovery each is either there or not.
    pub uncertain: Vec<(Vec<u8>, Vec<u8>)>,
    /// Write buffer size the operation wants.
    pub write_buffer_size: usize,
    /// Whether background compactions run.
    pub auto_compactions: bool,
    /// Where WAL files go (`Options::wal_dir`); attempts alternate between the DB directory
    /// and a separate one.
    pub wal_dir: Option<std::path::PathBuf>,
}

impl Ctx {
    fn new() -> Ctx {
        let mem = MemFs::new();
        let fs = FaultFs::new(Arc::new(mem.clone()), 5);
        Ctx {
            mem,
            fs,
            model: BTreeMap::new(),
            uncertain: Vec::new(),
            write_buffer_size: 64 << 10,
            auto_compactions: true,
            wal_dir: None,
        }
    }

    pub fn options(&self) -> Options {
        Options {
            fs: Arc::new(self.fs.clone()),
            write_buffer_size: self.write_buffer_size,
            block_size: 512,
            disable_auto_compactions: !self.auto_compactions,
            wal_dir: self.wal_dir.clone(),
            ..Options::default()
        }
    }

    pub fn open(&self) -> Result<Db, Error> {
        Db::open(&self.options(), DIR)
    }

    /// A synced put, recorded as acknowledged or uncertain.
    pub fn put(&mut self, db: &Db, k: &str, v: &[u8]) -> Result<(), Error> {
        let r = db.put_opt(k, v, &SYNC);
        match &r {
            Ok(()) => {
                self.model.insert(k.as_bytes().to_vec(), v.to_vec());
            }
            Err(_) => self.uncertain.push((k.as_bytes().to_vec(), v.to_vec())),
        }
        r
    }

    /// Writes `n` synced keys with prefix `p`.
    pub fn fill(&mut self, db: &Db, p: &str, n: usize) {
        for i in 0..n {
            let v = format!("{p}-value-{i}").repeat(1 + i % 3);
            self.put(db, &format!("{p}{i:03}"), v.as_bytes()).expect("write without faults");
        }
    }
}

/// What an operation returns: its result and the DB, if one is open.
pub type OpResult = (Result<(), Error>, Option<Db>);

/// An operation under test: `prepare` builds the state (no faults active) and may return an
/// open DB; `run` performs the operation with faults active and returns its result and the
/// DB, if one is open.
pub struct IoOp {
    pub name: &'static str,
    pub prepare: fn(&mut Ctx) -> Option<Db>,
    pub run: fn(&mut Ctx, Option<Db>) -> OpResult,
}

fn prepare_closed_with_wal_and_table(c: &mut Ctx) -> Option<Db> {
    let db = c.open().expect("open");
    c.fill(&db, "a", 30);
    db.flush().expect("flush");
    c.fill(&db, "b", 30);
    None
}

fn prepare_closed_flushed(c: &mut Ctx) -> Option<Db> {
    let db = c.open().expect("open");
    c.fill(&db, "a", 30);
    db.flush().expect("flush");
    None
}

fn prepare_open(c: &mut Ctx) -> Option<Db> {
    let db = c.open().expect("open");
    c.fill(&db, "a", 20);
    db.flush().expect("flush");
    c.fill(&db, "b", 20);
    Some(db)
}

fn prepare_full_memtable(c: &mut Ctx) -> Option<Db> {
    c.write_buffer_size = 4096;
    let db = c.open().expect("open");
    c.fill(&db, "a", 5);
    c.put(&db, "big", &vec![b'x'; 5000]).expect("write without faults");
    Some(db)
}

fn prepare_l0_files(c: &mut Ctx) -> Option<Db> {
    c.auto_compactions = false;
    let db = c.open().expect("open");
    for p in ["a", "b", "c"] {
        c.fill(&db, p, 15);
        c.fill(&db, "a", 5);
        db.flush().expect("flush");
    }
    c.fill(&db, "d", 5);
    Some(db)
}

fn run_open(c: &mut Ctx, _: Option<Db>) -> OpResult {
    match c.open() {
        Ok(db) => (Ok(()), Some(db)),
        Err(e) => (Err(e), None),
    }
}

fn run_put(c: &mut Ctx, db: Option<Db>) -> OpResult {
    let db = db.expect("prepared DB");
    let r = c.put(&db, "op-key", b"op-value");
    (r, Some(db))
}

fn run_compact(_: &mut Ctx, db: Option<Db>) -> OpResult {
    let db = db.expect("prepared DB");
    let r = db.compact_range(None::<&[u8]>, None::<&[u8]>);
    (r, Some(db))
}

fn run_flush(_: &mut Ctx, db: Option<Db>) -> OpResult {
    let db = db.expect("prepared DB");
    let r = db.flush();
    (r, Some(db))
}

/// The operations the loop covers.
pub const OPS: &[IoOp] = &[
    IoOp { name: "open (WAL replay)", prepare: prepare_closed_with_wal_and_table, run: run_open },
    IoOp { name: "synced put", prepare: prepare_open, run: run_put },
    IoOp { name: "put + memtable switch", prepare: prepare_full_memtable, run: run_put },
    IoOp { name: "flush", prepare: prepare_open, run: run_flush },
    IoOp { name: "MANIFEST roll-over (open)", prepare: prepare_closed_flushed, run: run_open },
    IoOp { name: "compaction (compact_range)", prepare: prepare_l0_files, run: run_compact },
];

/// The faults injected: (name, operations matched, kind).
pub const FAULTS: &[(&str, FaultOp, FaultKind)] = &[
    ("EIO", FaultOp::Any, FaultKind::Eio),
    ("ENOSPC", FaultOp::Any, FaultKind::NoSpace),
    ("fsync fails", FaultOp::Sync, FaultKind::Eio),
    ("dir fsync fails", FaultOp::SyncDir, FaultKind::Eio),
    ("short write", FaultOp::Append, FaultKind::ShortWrite),
];

/// Counts for one (operation, fault, persistence) row.
#[derive(Debug, Default, Clone)]
pub struct Row {
    /// Attempts (N = 1, 2, ...).
    pub attempts: u64,
    /// Attempts where the operation returned an error.
    pub failed: u64,
    /// Attempts where a fault was injected but the operation still succeeded.
    pub absorbed: u64,
}

/// The loop's results.
#[derive(Debug, Default, Clone)]
pub struct IoReport {
    pub rows: BTreeMap<(String, String, bool), Row>,
    pub violations: Vec<String>,
}

impl IoReport {
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:<27} {:<16} {:<10} {:>8} {:>7} {:>9}",
            "operation", "fault", "", "attempts", "failed", "absorbed"
        );
        for ((op, fault, persistent), r) in &self.rows {
            let p = if *persistent { "persistent" } else { "single" };
            let _ = writeln!(
                s,
                "{op:<27} {fault:<16} {p:<10} {:>8} {:>7} {:>9}",
                r.attempts, r.failed, r.absorbed
            );
        }
        for v in &self.violations {
            let _ = writeln!(s, "VIOLATION: {v}");
        }
        s
    }
}

fn check_recovered(c: &Ctx, db: &Db, what: &str, out: &mut Vec<String>) {
    for (k, v) in &c.model {
        match db.get(k) {
            Ok(Some(got)) if got == *v => {}
            Ok(got) => out.push(format!(
                "{what}: acknowledged key {} reads {:?}",
                String::from_utf8_lossy(k),
                got.map(|g| String::from_utf8_lossy(&g).into_owned())
            )),
            Err(e) => out.push(format!("{what}: reading {}: {e}", String::from_utf8_lossy(k))),
        }
    }
    for (k, v) in &c.uncertain {
        if c.model.contains_key(k) {
            continue;
        }
        match db.get(k) {
            Ok(None) => {}
            Ok(Some(got)) if got == *v => {}
            other => out.push(format!(
                "{what}: failed write {} reads {other:?}",
                String::from_utf8_lossy(k)
            )),
        }
    }
    if !matches!(db.get(b"probe"), Ok(None)) {
        out.push(format!("{what}: a write refused after the failure is in the DB"));
    }
}

/// One attempt: fault `f` at the `nth` matching I/O of `op`. Returns (op result was Err,
/// fault was injected).
fn attempt(
    op: &IoOp,
    f: (&str, FaultOp, FaultKind),
    nth: u64,
    persistent: bool,
    out: &mut Vec<String>,
) -> (bool, bool) {
    let mut c = Ctx::new();
    c.wal_dir = nth.is_multiple_of(2).then(|| crate::wal_dir_for(std::path::Path::new(DIR)));
    let db = (op.prepare)(&mut c);
    c.fs.add_rule(FaultRule { op: f.1, kind: f.2, nth, persistent, path_contains: None });
    let (r, db) = (op.run)(&mut c, db);
    let injected = c.fs.injected() > 0;
    let what = format!(
        "{} / {} / {} / N={nth}{}",
        op.name,
        f.0,
        if persistent { "persistent" } else { "single" },
        if c.wal_dir.is_some() { " / separate wal_dir" } else { "" }
    );
    if let (Err(_), Some(db)) = (&r, &db) {
        // The operation failed: nothing may be acknowledged after it, even once the fault is
        // gone.
        c.fs.clear();
        if db.put_opt(b"probe", b"after failure", &SYNC).is_ok() {
            out.push(format!("{what}: a synced write was acknowledged after the failure ({r:?})"));
        }
    }
    c.fs.clear();
    c.fs.kill();
    c.mem.crash(CrashMode::PowerLoss);
    drop(db);
    for round in 0..2 {
        let view = FaultFs::new(Arc::new(c.mem.clone()), 9);
        let opts = Options { fs: Arc::new(view), ..c.options() };
        match Db::open(&opts, DIR) {
            Ok(db) => {
                check_recovered(&c, &db, &format!("{what} (reopen {round})"), out);
                match db.put_opt(format!("resume{round}"), b"x", &SYNC) {
                    Ok(()) => {
                        c.model.insert(format!("resume{round}").into_bytes(), b"x".to_vec());
                    }
                    Err(e) => out.push(format!("{what}: writes do not resume after reopen: {e}")),
                }
            }
            Err(e) => {
                out.push(format!("{what}: reopen {round} after the fault failed: {e}"));
                break;
            }
        }
    }
    (r.is_err(), injected)
}

/// Runs every operation against every fault; see the module docs.
pub fn run(max_n: u64) -> IoReport {
    let mut rep = IoReport::default();
    for op in OPS {
        for &f in FAULTS {
            for persistent in [false, true] {
                let mut row = Row::default();
                for nth in 1..=max_n {
                    let (failed, injected) = attempt(op, f, nth, persistent, &mut rep.violations);
                    row.attempts += 1;
                    if failed {
                        row.failed += 1;
                    } else if injected {
                        row.absorbed += 1;
                    }
                    if !injected {
                        break;
                    }
                }
                rep.rows.insert((op.name.to_string(), f.0.to_string(), persistent), row);
            }
        }
    }
    rep
}
