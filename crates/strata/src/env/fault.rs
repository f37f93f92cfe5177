//! A wrapper filesystem that injects failures, seeded and by operation count.
//!
//! A [`FaultRule`] says: on the `nth` matching operation from now (1-based), fail with `kind`;
//! when `persistent`, keep failing every matching operation after that. Crash simulation is
//! the inner [`super::MemFs`]'s job; this layer only makes calls fail or lie about reads.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{FileLock, FileSystem, RandomAccessFile, WritableFile};
use crate::error::{Error, Result};

/// The operations a rule can target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultOp {
    /// `FileSystem::create`.
    Create,
    /// `FileSystem::open`.
    Open,
    /// `WritableFile::append`.
    Append,
    /// `WritableFile::flush` (and `start_writeback`, `write_zeros_ahead`: writes to the OS).
    Flush,
    /// `WritableFile::sync`.
    Sync,
    /// `FileSystem::sync_dir`.
    SyncDir,
    /// `FileSystem::rename`.
    Rename,
    /// `FileSystem::remove`.
    Remove,
    /// `RandomAccessFile::read_at`.
    Read,
    /// Any of the above.
    Any,
}

/// What an injected fault does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// Fails with EIO.
    Eio,
    /// Fails with ENOSPC.
    NoSpace,
    /// An append writes only the first half of its bytes, then fails with EIO.
    ShortWrite,
    /// A read succeeds but one bit of the returned bytes is flipped.
    BitFlip,
    /// The operation succeeds after a pause of this many milliseconds (a slow device, a
    /// loaded machine): what a thread does after it is then slow enough to be seen.
    Delay(u64),
}

/// One injection rule.
#[derive(Clone, Debug)]
pub struct FaultRule {
    /// The operation the rule applies to.
    pub op: FaultOp,
    /// What the fault does.
    pub kind: FaultKind,
    /// Fail the nth matching operation (1-based), counted from when the rule was added.
    pub nth: u64,
    /// Keep failing after the first injected failure.
    pub persistent: bool,
    /// Only operations on paths whose file name contains this string match.
    pub path_contains: Option<String>,
}

struct ActiveRule {
    rule: FaultRule,
    seen: u64,
}

/// An operation seen while recording ([`FaultFs::start_recording`]).
#[derive(Clone, Debug)]
pub struct RecordedOp {
    /// What was called.
    pub op: FaultOp,
    /// The thread that made the call.
    pub thread: std::thread::ThreadId,
    /// The file or directory it was called on.
    pub path: std::path::PathBuf,
}

struct Shared {
    rules: Mutex<Vec<ActiveRule>>,
    injected: AtomicU64,
    ops: AtomicU64,
    seed: AtomicU64,
    recording: std::sync::atomic::AtomicBool,
    recorded: Mutex<Vec<RecordedOp>>,
}

/// The fault-injecting filesystem. Cloning shares rules and counters.
#[derive(Clone)]
pub struct FaultFs {
    inner: Arc<dyn FileSystem>,
    shared: Arc<Shared>,
}

impl FaultFs {
    /// Wraps `inner`; `seed` drives the random choices of injected faults (which bit flips).
    pub fn new(inner: Arc<dyn FileSystem>, seed: u64) -> Self {
        FaultFs {
            inner,
            shared: Arc::new(Shared {
                rules: Mutex::new(Vec::new()),
                injected: AtomicU64::new(0),
                ops: AtomicU64::new(0),
                seed: AtomicU64::new(seed | 1),
                recording: std::sync::atomic::AtomicBool::new(false),
                recorded: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Adds a rule.
    pub fn add_rule(&self, rule: FaultRule) {
        self.shared.rules.lock().push(ActiveRule { rule, seen: 0 });
    }

    /// Removes every rule.
    pub fn clear(&self) {
        self.shared.rules.lock().clear();
    }

    /// Makes every later gated operation fail with EIO: the "process" using this view of the
    /// filesystem is dead. Crash tests call this before [`super::MemFs::crash`] so the old DB's
    /// threads cannot touch the files the next DB recovers from.
    pub fn kill(&self) {
        self.add_rule(FaultRule {
            op: FaultOp::Any,
            kind: FaultKind::Eio,
            nth: 1,
            persistent: true,
            path_contains: None,
        });
    }

    /// How many faults were injected so far.
    pub fn injected(&self) -> u64 {
        self.shared.injected.load(Ordering::SeqCst)
    }

    /// How many operations passed through so far.
    pub fn ops(&self) -> u64 {
        self.shared.ops.load(Ordering::SeqCst)
    }

    /// From now on, every gated operation is recorded with its thread and path (tests of who
    /// does which I/O, e.g. that a writer never syncs what it did not ask for).
    pub fn start_recording(&self) {
        self.shared.recorded.lock().clear();
        self.shared.recording.store(true, Ordering::SeqCst);
    }

    /// The operations recorded since [`FaultFs::start_recording`].
    pub fn recorded(&self) -> Vec<RecordedOp> {
        self.shared.recorded.lock().clone()
    }
}

impl Shared {
    /// Decides whether this operation fails, and how; a [`FaultKind::Delay`] is served here
    /// (outside the rules' lock) and the operation then goes ahead.
    fn check(&self, op: FaultOp, path: &Path) -> Option<FaultKind> {
        match self.matching_rule(op, path) {
            Some(FaultKind::Delay(millis)) => {
                std::thread::sleep(std::time::Duration::from_millis(millis));
                None
            }
            kind => kind,
        }
    }

    /// The kind of the first rule this operation triggers, if any.
    fn matching_rule(&self, op: FaultOp, path: &Path) -> Option<FaultKind> {
        self.ops.fetch_add(1, Ordering::Relaxed);
        if self.recording.load(Ordering::Relaxed) {
            self.recorded.lock().push(RecordedOp {
                op,
                thread: std::thread::current().id(),
                path: path.to_path_buf(),
            });
        }
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let mut rules = self.rules.lock();
        for r in rules.iter_mut() {
            let op_match = r.rule.op == FaultOp::Any || r.rule.op == op;
            let path_match = r.rule.path_contains.as_deref().is_none_or(|s| name.contains(s));
            if !(op_match && path_match) {
                continue;
            }
            r.seen += 1;
            if r.seen == r.rule.nth || (r.rule.persistent && r.seen > r.rule.nth) {
                self.injected.fetch_add(1, Ordering::SeqCst);
                return Some(r.rule.kind);
            }
        }
        None
    }

    fn next_random(&self) -> u64 {
        let mut s = self.seed.load(Ordering::Relaxed);
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        self.seed.store(s, Ordering::Relaxed);
        s
    }
}

fn injected_error(kind: FaultKind, op: &'static str, path: &Path) -> Error {
    let e = match kind {
        FaultKind::NoSpace => io::Error::from_raw_os_error(28),
        _ => io::Error::from_raw_os_error(5),
    };
    Error::io(op, path, e)
}

/// Applies a fault check for a non-read operation.
fn gate(shared: &Shared, op: FaultOp, name: &'static str, path: &Path) -> Result<()> {
    match shared.check(op, path) {
        None | Some(FaultKind::BitFlip) => Ok(()),
        Some(kind) => Err(injected_error(kind, name, path)),
    }
}

struct FaultWritable {
    inner: Box<dyn WritableFile>,
    path: std::path::PathBuf,
    shared: Arc<Shared>,
}

impl WritableFile for FaultWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        match self.shared.check(FaultOp::Append, &self.path) {
            None | Some(FaultKind::BitFlip) => self.inner.append(data),
            Some(FaultKind::ShortWrite) => {
                self.inner.append(&data[..data.len() / 2])?;
                Err(injected_error(FaultKind::Eio, "append", &self.path))
            }
            Some(kind) => Err(injected_error(kind, "append", &self.path)),
        }
    }

    fn flush(&mut self) -> Result<()> {
        gate(&self.shared, FaultOp::Flush, "flush", &self.path)?;
        self.inner.flush()
    }

    fn sync(&mut self) -> Result<()> {
        gate(&self.shared, FaultOp::Sync, "fdatasync", &self.path)?;
        self.inner.sync()
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn preallocate(&mut self, bytes: u64) -> Result<()> {
        self.inner.preallocate(bytes)
    }

    fn truncate_to_len(&mut self) -> Result<()> {
        gate(&self.shared, FaultOp::Flush, "ftruncate", &self.path)?;
        self.inner.truncate_to_len()
    }

    fn write_zeros_ahead(&mut self, to: u64) -> Result<bool> {
        gate(&self.shared, FaultOp::Flush, "pwrite", &self.path)?;
        self.inner.write_zeros_ahead(to)
    }

    fn syncer(&mut self) -> Option<Box<dyn super::FileSyncer>> {
        let inner = self.inner.syncer()?;
        Some(Box::new(FaultSyncer { inner, path: self.path.clone(), shared: self.shared.clone() }))
    }

    fn start_writeback(&mut self) -> Result<()> {
        gate(&self.shared, FaultOp::Flush, "sync_file_range", &self.path)?;
        self.inner.start_writeback()
    }
}

struct FaultSyncer {
    inner: Box<dyn super::FileSyncer>,
    path: std::path::PathBuf,
    shared: Arc<Shared>,
}

impl super::FileSyncer for FaultSyncer {
    fn sync(&self) -> Result<()> {
        gate(&self.shared, FaultOp::Sync, "fdatasync", &self.path)?;
        self.inner.sync()
    }
}

struct FaultRandom {
    inner: Arc<dyn RandomAccessFile>,
    shared: Arc<Shared>,
}

impl RandomAccessFile for FaultRandom {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        match self.shared.check(FaultOp::Read, self.inner.path()) {
            None => self.inner.read_at(offset, buf),
            Some(FaultKind::BitFlip) => {
                let n = self.inner.read_at(offset, buf)?;
                if n > 0 {
                    let r = self.shared.next_random();
                    let i = (r % n as u64) as usize;
                    buf[i] ^= 1 << ((r >> 32) % 8);
                }
                Ok(n)
            }
            Some(kind) => Err(injected_error(kind, "pread", self.inner.path())),
        }
    }

    fn advise_random(&self) {
        self.inner.advise_random();
    }

    fn prefetch(&self, offset: u64, len: usize) -> bool {
        self.inner.prefetch(offset, len)
    }

    fn read_alignment(&self) -> u64 {
        self.inner.read_alignment()
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn path(&self) -> &Path {
        self.inner.path()
    }
}

impl FileSystem for FaultFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        gate(&self.shared, FaultOp::Create, "create", path)?;
        let inner = self.inner.create(path)?;
        Ok(Box::new(FaultWritable { inner, path: path.to_path_buf(), shared: self.shared.clone() }))
    }

    fn reuse_for_write(&self, old: &Path, new: &Path) -> Result<Box<dyn WritableFile>> {
        gate(&self.shared, FaultOp::Rename, "rename", old)?;
        let inner = self.inner.reuse_for_write(old, new)?;
        Ok(Box::new(FaultWritable { inner, path: new.to_path_buf(), shared: self.shared.clone() }))
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        gate(&self.shared, FaultOp::Open, "open", path)?;
        let inner = self.inner.open(path)?;
        Ok(Arc::new(FaultRandom { inner, shared: self.shared.clone() }))
    }

    fn open_direct(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        gate(&self.shared, FaultOp::Open, "open", path)?;
        let inner = self.inner.open_direct(path)?;
        Ok(Arc::new(FaultRandom { inner, shared: self.shared.clone() }))
    }

    fn create_direct(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        gate(&self.shared, FaultOp::Create, "create", path)?;
        let inner = self.inner.create_direct(path)?;
        Ok(Box::new(FaultWritable { inner, path: path.to_path_buf(), shared: self.shared.clone() }))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        gate(&self.shared, FaultOp::Rename, "rename", from)?;
        self.inner.rename(from, to)
    }

    fn remove(&self, path: &Path) -> Result<()> {
        gate(&self.shared, FaultOp::Remove, "remove", path)?;
        self.inner.remove(path)
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.inner.list(dir)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.inner.create_dir_all(dir)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        gate(&self.shared, FaultOp::SyncDir, "fsync dir", dir)?;
        self.inner.sync_dir(dir)
    }

    fn sync_file(&self, path: &Path) -> Result<()> {
        gate(&self.shared, FaultOp::Sync, "fsync", path)?;
        self.inner.sync_file(path)
    }

    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.inner.is_dir(path)
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        self.inner.file_size(path)
    }

    fn modified(&self, path: &Path) -> Result<std::time::SystemTime> {
        self.inner.modified(path)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }

    fn link(&self, from: &Path, to: &Path) -> Result<()> {
        gate(&self.shared, FaultOp::Create, "link", to)?;
        self.inner.link(from, to)
    }

    fn remove_dir(&self, dir: &Path) -> Result<()> {
        gate(&self.shared, FaultOp::Remove, "rmdir", dir)?;
        self.inner.remove_dir(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::MemFs;
    use std::path::PathBuf;

    fn setup() -> (FaultFs, PathBuf) {
        let mem = MemFs::new();
        let d = PathBuf::from("/db");
        mem.create_dir_all(&d).unwrap();
        (FaultFs::new(Arc::new(mem), 7), d)
    }

    #[test]
    fn a_delay_pauses_the_matching_operations_which_then_succeed() {
        let (fs, d) = setup();
        fs.add_rule(FaultRule {
            op: FaultOp::Remove,
            kind: FaultKind::Delay(30),
            nth: 1,
            persistent: true,
            path_contains: Some(".log".into()),
        });
        for name in ["1.log", "2.log", "3.sst"] {
            fs.create(&d.join(name)).unwrap();
        }
        for (name, paused) in [("1.log", true), ("3.sst", false), ("2.log", true)] {
            let start = std::time::Instant::now();
            fs.remove(&d.join(name)).unwrap();
            if paused {
                assert!(start.elapsed() >= std::time::Duration::from_millis(30), "{name}");
            }
            assert!(!fs.exists(&d.join(name)), "{name}");
        }
        // The table's removal matched no rule: two pauses, no more.
        assert_eq!(fs.injected(), 2);
    }

    #[test]
    fn nth_single_and_persistent() {
        let (fs, d) = setup();
        fs.add_rule(FaultRule {
            op: FaultOp::Sync,
            kind: FaultKind::Eio,
            nth: 2,
            persistent: false,
            path_contains: None,
        });
        let mut w = fs.create(&d.join("a")).unwrap();
        w.sync().unwrap();
        assert!(w.sync().is_err());
        w.sync().unwrap();
        fs.clear();
        fs.add_rule(FaultRule {
            op: FaultOp::Append,
            kind: FaultKind::NoSpace,
            nth: 1,
            persistent: true,
            path_contains: Some("a".into()),
        });
        assert!(w.append(b"x").unwrap_err().is_no_space());
        assert!(w.append(b"x").unwrap_err().is_no_space());
        let mut other = fs.create(&d.join("b")).unwrap();
        other.append(b"fine").unwrap();
        assert_eq!(fs.injected(), 3);
    }

    #[test]
    fn bit_flip_changes_one_bit() {
        let (fs, d) = setup();
        crate::env::write_file_synced(&fs, &d.join("f"), &[0u8; 64]).unwrap();
        fs.add_rule(FaultRule {
            op: FaultOp::Read,
            kind: FaultKind::BitFlip,
            nth: 1,
            persistent: false,
            path_contains: None,
        });
        let r = fs.open(&d.join("f")).unwrap();
        let data = r.read_all().unwrap();
        assert_eq!(data.iter().map(|b| b.count_ones()).sum::<u32>(), 1);
        assert_eq!(r.read_all().unwrap(), vec![0u8; 64]);
    }

    #[test]
    fn short_write_keeps_half() {
        let (fs, d) = setup();
        fs.add_rule(FaultRule {
            op: FaultOp::Append,
            kind: FaultKind::ShortWrite,
            nth: 1,
            persistent: false,
            path_contains: None,
        });
        let mut w = fs.create(&d.join("a")).unwrap();
        assert!(w.append(b"abcdef").is_err());
        w.flush().unwrap();
        assert_eq!(w.len(), 3);
    }
}
