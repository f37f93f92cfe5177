//! The corruption matrix: damage each file of a DB (WAL, SST, blob, MANIFEST, CURRENT) in every way
//! a disk or a bug can (bit flips, zeroed 4 KiB pages, truncation, appended garbage,
//! deletion), reopen, read everything, and classify the outcome:
//!
//! - *clean error*: `open` or a read returned an error (the contract's `Corruption`);
//! - *prefix*: the DB reads as it was after an earlier write of its history (point-in-time
//!   recovery dropped a damaged tail);
//! - *intact*: the DB reads as it was after its last write;
//! - *wrong*: the DB answers with a state no prefix of the history produced (must be 0);
//! - *panic* (must be 0) and *hang* (no answer within 20 s; must be 0).
//!
//! The tiny DB is damaged at every offset (CI); the larger one at random offsets
//! (`strata-stress --mode corruption`). Damage is labelled by file kind and by the structure
//! it hits (SST blocks from the footer and metaindex; WAL and MANIFEST by record).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Once};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::env::{FileSystem, MemFs};
use strata::{CompressionType, Db, IteratorMode, Options, WriteBatch};

/// Outcome classes, in table column order.
pub const OUTCOMES: [&str; 6] = ["clean error", "prefix", "intact", "wrong", "panic", "hang"];

/// A key's value in the model: `None` = absent.
type Model = Vec<Option<Vec<u8>>>;

/// One write of the history: (key index, new value or None).
type Step = Vec<(usize, Option<Vec<u8>>)>;

/// A built DB: its files and the history that produced them.
pub struct BuiltDb {
    pub fs: MemFs,
    pub keys: usize,
    pub steps: Vec<Step>,
}

const DIR: &str = "/db";

fn key(i: usize) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn options(fs: &MemFs, compression: CompressionType, at_commit: bool) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        merge_operator: strata::merge_operator::builtin_merge_operator("uint64add"),
        block_size: 256,
        compression,
        paranoid_checks: true,
        // The longer values (`build`) go to blob files, which the matrix damages too.
        blob: strata::BlobOptions {
            enable_blob_files: true,
            min_blob_size: 24,
            blob_compression_type: Some(compression),
            write_blobs_at_commit: at_commit,
            ..strata::BlobOptions::default()
        },
        ..Options::default()
    }
}

/// Builds a DB of `keys` keys: `rounds` rounds of writes, each flushed to a table except the
/// last, which stays in the WAL. Values are puts, deletes and `uint64add` merges. With
/// `at_commit`, the longer values go to blob files as they are written: the last round's are
/// in a blob file without a footer, which the WAL's blob indexes point into.
pub fn build(
    keys: usize,
    rounds: usize,
    writes_per_round: usize,
    seed: u64,
    at_commit: bool,
) -> BuiltDb {
    let fs = MemFs::new();
    let compression = if keys > 100 { CompressionType::Snappy } else { CompressionType::None };
    let db = Db::open(&options(&fs, compression, at_commit), DIR).expect("open a fresh DB");
    let mut rng = StdRng::seed_from_u64(seed);
    let mut model: Model = vec![None; keys];
    let mut steps = Vec::new();
    let mut n = 0u64;
    for round in 0..rounds {
        for _ in 0..writes_per_round {
            let mut step = Step::new();
            let mut batch = WriteBatch::new();
            let size = if rng.gen_bool(0.2) { rng.gen_range(2..5) } else { 1 };
            for _ in 0..size {
                let i = rng.gen_range(0..keys);
                if step.iter().any(|(k, _)| *k == i) {
                    continue;
                }
                n += 1;
                let new = if i % 5 == 0 && rng.gen_bool(0.7) {
                    let base = model[i]
                        .as_ref()
                        .map_or(0, |v| u64::from_le_bytes(v[..8].try_into().unwrap_or_default()));
                    let op = n * 7919;
                    batch.merge(key(i), op.to_le_bytes());
                    Some(base.wrapping_add(op).to_le_bytes().to_vec())
                } else if rng.gen_bool(0.15) {
                    batch.delete(key(i));
                    None
                } else {
                    let mut v = format!("value-{i}-{n}-").into_bytes();
                    if i % 5 == 0 {
                        v = n.to_le_bytes().to_vec();
                    } else {
                        v.resize(v.len() + rng.gen_range(0..40), b'a' + (n % 26) as u8);
                    }
                    batch.put(key(i), &v);
                    Some(v)
                };
                model[i].clone_from(&new);
                step.push((i, new));
            }
            db.write(batch).expect("write");
            steps.push(step);
        }
        if round + 1 < rounds {
            db.flush().expect("flush");
        }
    }
    drop(db);
    BuiltDb { fs, keys, steps }
}

/// A copy of the DB's files (no LOCK), so a damaged copy leaves the original alone.
fn clone_fs(fs: &MemFs) -> MemFs {
    let copy = MemFs::new();
    let _ = copy.create_dir_all(Path::new(DIR));
    for p in fs.paths() {
        if p.file_name().is_some_and(|n| n == "LOCK") {
            continue;
        }
        if let Some(d) = fs.read_file(&p) {
            copy.write_file(&p, &d);
        }
    }
    copy
}

/// What a damaged copy reads as.
fn read_db(fs: MemFs, keys: usize) -> Result<Model, String> {
    // Recovery reads values written at commit back whatever the options say.
    let db =
        Db::open(&options(&fs, CompressionType::None, false), DIR).map_err(|e| e.to_string())?;
    let mut m: Model = Vec::with_capacity(keys);
    for i in 0..keys {
        m.push(db.get(key(i)).map_err(|e| e.to_string())?);
    }
    let mut scanned: Model = vec![None; keys];
    for item in db.iterator(IteratorMode::Start) {
        let (k, v) = item.map_err(|e| e.to_string())?;
        let i = std::str::from_utf8(&k)
            .ok()
            .and_then(|s| s.strip_prefix("key"))
            .and_then(|s| s.parse::<usize>().ok())
            .filter(|&i| i < keys && key(i) == *k);
        match i {
            // An unknown key makes the state match no prefix: counted as wrong.
            None => return Ok(vec![Some(b"<unknown key>".to_vec()); keys]),
            Some(i) => scanned[i] = Some(v.to_vec()),
        }
    }
    if scanned != m {
        return Ok(vec![Some(b"<iterator disagrees with get>".to_vec()); keys]);
    }
    Ok(m)
}

/// Which prefix of `steps` (if any) gives `got`: `Some(n)` for the largest such `n`.
fn matching_prefix(keys: usize, steps: &[Step], got: &Model) -> Option<usize> {
    let mut model: Model = vec![None; keys];
    let mut mismatches = (0..keys).filter(|&i| model[i] != got[i]).count();
    let mut best = (mismatches == 0).then_some(0);
    for (n, step) in steps.iter().enumerate() {
        for (i, v) in step {
            let before = model[*i] == got[*i];
            model[*i].clone_from(v);
            let after = model[*i] == got[*i];
            match (before, after) {
                (true, false) => mismatches += 1,
                (false, true) => mismatches -= 1,
                _ => {}
            }
        }
        if mismatches == 0 {
            best = Some(n + 1);
        }
    }
    best
}

static PANICS: AtomicU64 = AtomicU64::new(0);
static HOOK: Once = Once::new();

/// Counts panics on every thread (the DB's background threads included).
fn install_panic_counter() {
    HOOK.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            prev(info);
        }));
    });
}

/// Classifies one damaged copy; returns the outcome's index in [`OUTCOMES`].
fn classify(fs: MemFs, built: &BuiltDb) -> usize {
    let keys = built.keys;
    let before = PANICS.load(Ordering::SeqCst);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let r = catch_unwind(AssertUnwindSafe(|| read_db(fs, keys)));
        let _ = tx.send(r);
    });
    let r = match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(r) => r,
        Err(_) => return 5,
    };
    if PANICS.load(Ordering::SeqCst) != before {
        return 4;
    }
    match r {
        Err(_) => 4,
        Ok(Err(_)) => 0,
        Ok(Ok(m)) => match matching_prefix(keys, &built.steps, &m) {
            Some(n) if n == built.steps.len() => 2,
            Some(_) => 1,
            None => 3,
        },
    }
}

/// Kinds of damage.
#[derive(Clone, Copy, Debug)]
enum Damage {
    Flip(usize),
    ZeroPage(usize),
    Truncate(usize),
    Garbage(usize, u8),
    Delete,
}

impl Damage {
    fn name(self) -> &'static str {
        match self {
            Damage::Flip(_) => "bit flip",
            Damage::ZeroPage(_) => "zero 4K page",
            Damage::Truncate(_) => "truncate",
            Damage::Garbage(..) => "append garbage",
            Damage::Delete => "delete file",
        }
    }

    fn offset(self) -> Option<usize> {
        match self {
            Damage::Flip(o) | Damage::Truncate(o) => Some(o),
            Damage::ZeroPage(p) => Some(p * 4096),
            _ => None,
        }
    }

    /// The damaged contents, `None` for deletion.
    fn apply(self, data: &[u8]) -> Option<Vec<u8>> {
        let mut d = data.to_vec();
        match self {
            Damage::Flip(o) => d[o] ^= 1 << (o % 8),
            Damage::ZeroPage(p) => {
                let end = ((p + 1) * 4096).min(d.len());
                d[p * 4096..end].fill(0);
            }
            Damage::Truncate(len) => d.truncate(len),
            Damage::Garbage(n, seed) => {
                let mut s = u64::from(seed) | 1;
                for _ in 0..n {
                    s = crate::value::mix(s);
                    d.push(if seed == 0 { 0 } else { s as u8 });
                }
            }
            Damage::Delete => return None,
        }
        Some(d)
    }
}

/// The counts table.
#[derive(Debug, Default, Clone)]
pub struct Matrix {
    /// (file kind, region, damage) -> counts per outcome.
    pub counts: BTreeMap<(String, String, String), [u64; 6]>,
    /// Descriptions of the wrong / panic / hang cases.
    pub bad: Vec<String>,
    pub cases: u64,
}

impl Matrix {
    pub fn totals(&self) -> [u64; 6] {
        let mut t = [0u64; 6];
        for c in self.counts.values() {
            for (a, b) in t.iter_mut().zip(c) {
                *a += b;
            }
        }
        t
    }

    /// Adds `other`'s cases to this matrix.
    pub fn merge(&mut self, other: Matrix) {
        for (k, c) in other.counts {
            for (a, b) in self.counts.entry(k).or_default().iter_mut().zip(c) {
                *a += b;
            }
        }
        self.bad.extend(other.bad);
        self.cases += other.cases;
    }

    pub fn passed(&self) -> bool {
        let t = self.totals();
        t[3] == 0 && t[4] == 0 && t[5] == 0
    }

    /// The table: one row per (file, region, damage), then totals by file and overall.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:<9} {:<12} {:<15} {:>11} {:>7} {:>7} {:>6} {:>6} {:>5}",
            "file",
            "region",
            "damage",
            OUTCOMES[0],
            OUTCOMES[1],
            OUTCOMES[2],
            OUTCOMES[3],
            OUTCOMES[4],
            OUTCOMES[5]
        );
        let row = |s: &mut String, a: &str, b: &str, c: &str, n: &[u64; 6]| {
            let _ = writeln!(
                s,
                "{a:<9} {b:<12} {c:<15} {:>11} {:>7} {:>7} {:>6} {:>6} {:>5}",
                n[0], n[1], n[2], n[3], n[4], n[5]
            );
        };
        let mut by_file: BTreeMap<&str, [u64; 6]> = BTreeMap::new();
        for ((f, r, d), n) in &self.counts {
            row(&mut s, f, r, d, n);
            let t = by_file.entry(f).or_default();
            for (a, b) in t.iter_mut().zip(n) {
                *a += b;
            }
        }
        for (f, n) in &by_file {
            row(&mut s, f, "(all)", "(all)", n);
        }
        row(&mut s, "TOTAL", "", "", &self.totals());
        for b in self.bad.iter().take(30) {
            let _ = writeln!(s, "BAD: {b}");
        }
        let _ = writeln!(
            s,
            "result: {} ({} cases)",
            if self.passed() { "PASS" } else { "FAIL" },
            self.cases
        );
        s
    }
}

fn has_extension(name: &str, ext: &str) -> bool {
    Path::new(name).extension().is_some_and(|e| e.eq_ignore_ascii_case(ext))
}

fn file_kind(name: &str) -> &'static str {
    if name == "CURRENT" {
        "CURRENT"
    } else if name.starts_with("MANIFEST") {
        "MANIFEST"
    } else if has_extension(name, "sst") {
        "SST"
    } else if has_extension(name, "log") {
        "WAL"
    } else if has_extension(name, "blob") {
        "BLOB"
    } else {
        "other"
    }
}

/// Labels a damage offset with the structure it lands in.
fn region_of(kind: &str, data: &[u8], offset: Option<usize>) -> String {
    let Some(off) = offset else { return "whole file".into() };
    if off >= data.len() {
        return "end".into();
    }
    let off = off as u64;
    match kind {
        "SST" => strata::fuzz_api::table_regions(data)
            .ok()
            .and_then(|rs| {
                rs.into_iter().find(|(_, o, l)| off >= *o && off < o + l).map(|(n, _, _)| n)
            })
            .unwrap_or_else(|| "unparsed".into()),
        "WAL" | "MANIFEST" => {
            let recs = strata::fuzz_api::log_record_offsets(data);
            let idx = recs.iter().rposition(|&r| r <= off);
            match idx {
                None => "before first".into(),
                Some(0) if kind == "WAL" => "header rec".into(),
                Some(0) => "first rec".into(),
                Some(i) if i + 1 == recs.len() => "last rec".into(),
                Some(_) => "middle recs".into(),
            }
        }
        // A blob file: its 20-byte header, its records, its 28-byte footer (none while a
        // memtable's values are written to it at commit).
        "BLOB" if off < 20 => "header".into(),
        "BLOB" if off + 28 >= data.len() as u64 && strata::inspect::blob_file_has_footer(data) => {
            "footer".into()
        }
        "BLOB" => "records".into(),
        _ => "contents".into(),
    }
}

fn run_case(built: &BuiltDb, path: &Path, data: &[u8], damage: Damage, m: &mut Matrix) {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string();
    let kind = file_kind(&name);
    let copy = clone_fs(&built.fs);
    match damage.apply(data) {
        Some(d) => copy.write_file(path, &d),
        None => {
            let _ = copy.remove(path);
        }
    }
    let outcome = classify(copy, built);
    let region = region_of(kind, data, damage.offset());
    m.counts.entry((kind.to_string(), region, damage.name().to_string())).or_default()[outcome] +=
        1;
    m.cases += 1;
    if outcome >= 3 {
        m.bad.push(format!("{}: {name} {damage:?}", OUTCOMES[outcome]));
    }
}

fn db_files(built: &BuiltDb) -> Vec<PathBuf> {
    built.fs.paths().into_iter().filter(|p| p.file_name().is_some_and(|n| n != "LOCK")).collect()
}

fn garbage_cases() -> Vec<Damage> {
    vec![
        Damage::Garbage(1, 7),
        Damage::Garbage(7, 0),
        Damage::Garbage(100, 9),
        Damage::Garbage(4096, 0),
        Damage::Garbage(5000, 3),
        Damage::Delete,
    ]
}

/// The offsets worth damaging in `data`: every one, except in a run of zeros that ends the
/// file (a WAL's zeros ahead of its records, a megabyte of them), where every 4093rd and the
/// last few stand for the rest. Their handling does not depend on where in the run they are.
pub fn damage_offsets(data: &[u8]) -> Vec<usize> {
    let content = data.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    let dense = (content + 4096).min(data.len());
    let mut offsets: Vec<usize> = (0..dense).collect();
    offsets.extend((dense..data.len()).step_by(4093));
    offsets.extend(data.len().saturating_sub(8).max(dense)..data.len());
    offsets.sort_unstable();
    offsets.dedup();
    offsets
}

/// The part of `data` before the zeros that end it (plus a page of them), where random
/// damage is drawn (`damage_offsets`).
fn content_len(data: &[u8]) -> usize {
    let content = data.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    (content + 4096).min(data.len())
}

/// The tiny-DB matrix: every byte flipped, every truncation length, every 4 KiB page zeroed,
/// garbage appended, each file deleted (in a run of zeros ending a file, a sample of its
/// bytes: `damage_offsets`).
pub fn run_tiny() -> Matrix {
    install_panic_counter();
    // Blob files written at flushes, then blob files written at commit.
    let mut m = run_tiny_of(&build(24, 2, 24, 11, false));
    m.merge(run_tiny_of(&build(24, 2, 24, 12, true)));
    m
}

fn run_tiny_of(built: &BuiltDb) -> Matrix {
    let mut files = Vec::new();
    for path in db_files(built) {
        let data = built.fs.read_file(&path).unwrap_or_default();
        let mut cases: Vec<Damage> = Vec::new();
        let offsets = damage_offsets(&data);
        cases.extend(offsets.iter().copied().map(Damage::Flip));
        cases.extend(offsets.iter().copied().map(Damage::Truncate));
        cases.extend((0..data.len().div_ceil(4096)).map(Damage::ZeroPage));
        cases.extend(garbage_cases());
        files.push((path, data, cases));
    }
    run_cases(built, &files)
}

/// Runs every file's cases on the machine's cores (`STRATA_MATRIX_WORKERS` overrides, 1 runs
/// them in order). The cases are independent (each damages its own copy of the DB). A panic
/// is counted by a process-wide hook, so with several workers it may be reported against a
/// case that ran beside the one that panicked: the matrix fails either way, and one worker
/// pins the case.
fn run_cases(built: &BuiltDb, files: &[(PathBuf, Vec<u8>, Vec<Damage>)]) -> Matrix {
    let all: Vec<(&Path, &[u8], Damage)> = files
        .iter()
        .flat_map(|(p, data, cases)| cases.iter().map(move |d| (p.as_path(), &data[..], *d)))
        .collect();
    let workers = std::env::var("STRATA_MATRIX_WORKERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, 16);
    let parts: Vec<Matrix> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let all = &all;
                s.spawn(move || {
                    let mut m = Matrix::default();
                    for (path, data, d) in all.iter().skip(w).step_by(workers) {
                        run_case(built, path, data, *d, &mut m);
                    }
                    m
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a matrix worker panicked")).collect()
    });
    let mut m = Matrix::default();
    for p in parts {
        m.merge(p);
    }
    m
}

/// Settings of the larger, randomly sampled matrix.
#[derive(Clone, Debug)]
pub struct MatrixConfig {
    pub seed: u64,
    /// Random offsets per (file, damage kind).
    pub samples: u64,
}

/// The larger DB (2000 keys, several tables, a WAL spanning log blocks), damaged at random
/// offsets.
pub fn run_large(cfg: &MatrixConfig) -> Matrix {
    install_panic_counter();
    // Odd seeds write the longer values to blob files at commit.
    let built = build(2000, 4, 1500, cfg.seed, cfg.seed % 2 == 1);
    let mut rng = StdRng::seed_from_u64(cfg.seed);
    let mut files = Vec::new();
    for path in db_files(&built) {
        let data = built.fs.read_file(&path).unwrap_or_default();
        if data.is_empty() {
            continue;
        }
        let mut cases: Vec<Damage> = Vec::new();
        // Mostly in the content; one draw in 16 anywhere (the zeros ending a WAL included).
        let content = content_len(&data);
        let n = cfg.samples.min(content as u64 * 2);
        let offset = |rng: &mut StdRng| {
            if rng.gen_range(0..16) == 0 {
                rng.gen_range(0..data.len())
            } else {
                rng.gen_range(0..content)
            }
        };
        for _ in 0..n {
            cases.push(Damage::Flip(offset(&mut rng)));
        }
        for _ in 0..n / 4 {
            cases.push(Damage::Truncate(offset(&mut rng)));
        }
        cases.extend((0..content.div_ceil(4096)).map(Damage::ZeroPage));
        cases.extend(
            (content.div_ceil(4096)..data.len().div_ceil(4096)).step_by(16).map(Damage::ZeroPage),
        );
        cases.extend(garbage_cases());
        files.push((path, data, cases));
    }
    run_cases(&built, &files)
}
