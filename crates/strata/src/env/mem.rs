//! An in-memory filesystem that models what survives a crash.
//!
//! Model: a file's bytes live in an inode with a `synced_len`; a directory's entries exist in a
//! *live* namespace and, as of the last `sync_dir` of their parent, in a *durable* one.
//! - `flush` moves a handle's buffered bytes into the inode (the "OS page cache").
//! - `sync` marks the inode's bytes durable; `sync_dir` makes the directory's entries durable.
//! - [`MemFs::crash`] with [`CrashMode::ProcessKill`] invalidates every open handle (their
//!   unflushed buffers are lost) and keeps everything flushed; with [`CrashMode::PowerLoss`] it
//!   also reverts the namespace to its durable state and truncates every inode to its synced
//!   length; [`CrashMode::TornPowerLoss`] keeps a seeded random prefix of the unsynced bytes.
//! - A file reused for writing (`reuse_for_write`) is overwritten from its start: its inode
//!   keeps the durable old bytes, and power loss restores them past the synced (and kept torn)
//!   prefix of the new ones.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{parent_dir, FileLock, FileSystem, RandomAccessFile, WritableFile};
use crate::error::{Error, Result};

#[derive(Default)]
struct Inode {
    /// The live content.
    data: Vec<u8>,
    /// `data[..synced_len]` is durable.
    synced_len: usize,
    /// For a reused file: its durable content before the reuse; past `synced_len` the durable
    /// bytes are these (empty for other files).
    old: Vec<u8>,
    /// The durable content past `old`'s end: zeros up to this offset (a zero extension,
    /// `write_zeros_ahead`), kept as a length so that extending a file by a megabyte of zeros
    /// does not write a megabyte here too. At most `old.len()` means none.
    old_zeros_to: usize,
    /// `data[..written]` was written since the file was created or reused (the rest of `data`
    /// is `old`'s).
    written: usize,
}

type InodeRef = Arc<Mutex<Inode>>;

#[derive(Default)]
struct State {
    live: BTreeMap<PathBuf, InodeRef>,
    durable: BTreeMap<PathBuf, InodeRef>,
    dirs: BTreeSet<PathBuf>,
    locks: BTreeSet<PathBuf>,
}

/// How a simulated crash treats data that was not made durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashMode {
    /// The process died; the OS kept every flushed byte.
    ProcessKill,
    /// The machine lost power: only synced bytes and synced directory entries remain.
    PowerLoss,
    /// Like `PowerLoss`, but each file keeps a random prefix of its unsynced bytes (a torn
    /// write), chosen from the seed.
    /// Power loss that keeps a random prefix of each file's unsynced bytes (`seed` picks it).
    TornPowerLoss {
        /// Seeds the choice of how much of each file survives.
        seed: u64,
    },
}

/// The in-memory filesystem. Cloning shares the same files.
#[derive(Clone, Default)]
pub struct MemFs {
    state: Arc<Mutex<State>>,
    /// Bumped by every crash; handles from an older generation fail.
    generation: Arc<AtomicU64>,
}

fn dead_handle(path: &Path) -> Error {
    Error::io("write", path, io::Error::other("file handle invalidated by a simulated crash"))
}

fn not_found(op: &'static str, path: &Path) -> Error {
    Error::io(op, path, io::Error::from(io::ErrorKind::NotFound))
}

impl MemFs {
    /// An empty filesystem.
    pub fn new() -> Self {
        Self::default()
    }

    /// Simulates a crash; see [`CrashMode`]. Open handles become unusable and locks are released.
    pub fn crash(&self, mode: CrashMode) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        let mut st = self.state.lock();
        st.locks.clear();
        let mut rng = match mode {
            CrashMode::ProcessKill => return,
            CrashMode::PowerLoss => None,
            CrashMode::TornPowerLoss { seed } => Some(seed | 1),
        };
        st.live = st.durable.clone();
        let mut seen = BTreeSet::new();
        let inodes: Vec<InodeRef> = st.live.values().cloned().collect();
        for inode in inodes {
            if !seen.insert(Arc::as_ptr(&inode) as usize) {
                continue;
            }
            let mut ino = inode.lock();
            let unsynced = ino.written.saturating_sub(ino.synced_len);
            let keep = match rng.as_mut() {
                Some(s) if unsynced > 0 => {
                    *s ^= *s << 13;
                    *s ^= *s >> 7;
                    *s ^= *s << 17;
                    (*s % (unsynced as u64 + 1)) as usize
                }
                _ => 0,
            };
            let n = ino.synced_len + keep;
            ino.data.truncate(n);
            if ino.old.len() > n {
                let old = std::mem::take(&mut ino.old);
                ino.data.extend_from_slice(&old[n..]);
            }
            let zeros_to = ino.old_zeros_to;
            if zeros_to > ino.data.len() {
                ino.data.resize(zeros_to, 0);
            }
            ino.old.clear();
            ino.old_zeros_to = 0;
            ino.synced_len = ino.data.len();
            ino.written = ino.data.len();
        }
    }

    /// The current (live) contents of a file, for tests that inspect or damage files.
    pub fn read_file(&self, path: &Path) -> Option<Vec<u8>> {
        let st = self.state.lock();
        st.live.get(path).map(|i| i.lock().data.clone())
    }

    /// Replaces a file's contents durably, for corruption tests.
    pub fn write_file(&self, path: &Path, data: &[u8]) {
        let mut st = self.state.lock();
        let inode = Arc::new(Mutex::new(Inode {
            data: data.to_vec(),
            synced_len: data.len(),
            old: Vec::new(),
            old_zeros_to: 0,
            written: data.len(),
        }));
        st.live.insert(path.to_path_buf(), inode.clone());
        st.durable.insert(path.to_path_buf(), inode);
    }

    /// Every live file path.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.state.lock().live.keys().cloned().collect()
    }

    /// Total bytes in live files.
    pub fn total_bytes(&self) -> u64 {
        self.state.lock().live.values().map(|i| i.lock().data.len() as u64).sum()
    }
}

struct MemWritable {
    path: PathBuf,
    inode: InodeRef,
    buf: Vec<u8>,
    len: u64,
    /// Where the next flushed byte goes in the inode.
    pos: usize,
    generation: u64,
    fs_generation: Arc<AtomicU64>,
}

impl MemWritable {
    fn check_alive(&self) -> Result<()> {
        if self.fs_generation.load(Ordering::SeqCst) == self.generation {
            Ok(())
        } else {
            Err(dead_handle(&self.path))
        }
    }
}

impl WritableFile for MemWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.check_alive()?;
        self.buf.extend_from_slice(data);
        self.len += data.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.check_alive()?;
        let mut ino = self.inode.lock();
        let (pos, n) = (self.pos, self.buf.len());
        let overlap = ino.data.len().saturating_sub(pos).min(n);
        ino.data[pos..pos + overlap].copy_from_slice(&self.buf[..overlap]);
        ino.data.extend_from_slice(&self.buf[overlap..]);
        self.pos += n;
        ino.written = ino.written.max(self.pos);
        self.buf.clear();
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.flush()?;
        let mut ino = self.inode.lock();
        ino.synced_len = ino.synced_len.max(self.pos);
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    /// The zeros are modelled as durable at once (as if the next sync had happened): power
    /// loss reverts unsynced appends over them to zeros, never cuts the file shorter. A real
    /// file system may lose the extension with them, which readers see the same way (the
    /// log ends there).
    fn write_zeros_ahead(&mut self, to: u64) -> Result<bool> {
        self.check_alive()?;
        let mut ino = self.inode.lock();
        let Ok(to) = usize::try_from(to) else { return Ok(false) };
        if to <= ino.data.len() {
            return Ok(true);
        }
        // What power loss leaves: the durable old bytes, then zeros (never-synced bytes
        // between the old end and the zeros revert to zeros too).
        let len = ino.data.len();
        ino.old.truncate(len);
        ino.old_zeros_to = to;
        ino.data.resize(to, 0);
        Ok(true)
    }

    /// Modelled as durable at once, as the zeros it drops were.
    fn truncate_to_len(&mut self) -> Result<()> {
        self.flush()?;
        let mut ino = self.inode.lock();
        let pos = self.pos;
        ino.data.truncate(pos);
        ino.old.truncate(pos);
        ino.old_zeros_to = ino.old_zeros_to.min(pos);
        ino.synced_len = ino.synced_len.min(pos);
        ino.written = ino.written.min(pos);
        Ok(())
    }

    fn syncer(&mut self) -> Option<Box<dyn super::FileSyncer>> {
        Some(Box::new(MemSyncer {
            path: self.path.clone(),
            inode: self.inode.clone(),
            upto: self.pos,
            generation: self.generation,
            fs_generation: self.fs_generation.clone(),
        }))
    }
}

/// Makes an inode durable up to where its writer had flushed when the syncer was made.
struct MemSyncer {
    path: PathBuf,
    inode: InodeRef,
    upto: usize,
    generation: u64,
    fs_generation: Arc<AtomicU64>,
}

impl super::FileSyncer for MemSyncer {
    fn sync(&self) -> Result<()> {
        if self.fs_generation.load(Ordering::SeqCst) != self.generation {
            return Err(dead_handle(&self.path));
        }
        let mut ino = self.inode.lock();
        ino.synced_len = ino.synced_len.max(self.upto);
        Ok(())
    }
}

impl Drop for MemWritable {
    fn drop(&mut self) {
        // Closing a file hands its buffer to the OS, as the real filesystem's close does,
        // unless the "process" already died.
        if self.check_alive().is_ok() {
            let _ = self.flush();
        }
    }
}

struct MemRandom {
    path: PathBuf,
    inode: InodeRef,
    len: u64,
}

impl RandomAccessFile for MemRandom {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let ino = self.inode.lock();
        let Ok(start) = usize::try_from(offset) else { return Ok(0) };
        if start >= ino.data.len() {
            return Ok(0);
        }
        let n = buf.len().min(ino.data.len() - start);
        buf[..n].copy_from_slice(&ino.data[start..start + n]);
        Ok(n)
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

struct MemLock {
    path: PathBuf,
    state: Arc<Mutex<State>>,
    generation: u64,
    fs_generation: Arc<AtomicU64>,
}

impl FileLock for MemLock {}

impl Drop for MemLock {
    fn drop(&mut self) {
        if self.fs_generation.load(Ordering::SeqCst) == self.generation {
            self.state.lock().locks.remove(&self.path);
        }
    }
}

/// Moves directory `from` and everything under it to `to`, which must not exist. Directories
/// are not crash-modeled: the move is durable at once, entries inside keep their durability.
fn rename_dir(st: &mut State, from: &Path, to: &Path) -> Result<()> {
    if st.dirs.contains(to) || st.live.contains_key(to) {
        return Err(Error::io("rename", to, io::Error::from(io::ErrorKind::AlreadyExists)));
    }
    let moved = |p: &Path| p.strip_prefix(from).ok().map(|rest| to.join(rest));
    for map in [&mut st.live, &mut st.durable] {
        let old = std::mem::take(map);
        *map = old.into_iter().map(|(p, i)| (moved(&p).unwrap_or(p), i)).collect();
    }
    let dirs = std::mem::take(&mut st.dirs);
    st.dirs = dirs.into_iter().map(|d| moved(&d).unwrap_or(d)).collect();
    Ok(())
}

impl FileSystem for MemFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let mut st = self.state.lock();
        let dir = parent_dir(path);
        if !st.dirs.contains(&dir) {
            return Err(not_found("create", path));
        }
        let inode: InodeRef = Arc::default();
        st.live.insert(path.to_path_buf(), inode.clone());
        Ok(Box::new(MemWritable {
            path: path.to_path_buf(),
            inode,
            buf: Vec::new(),
            len: 0,
            pos: 0,
            generation: self.generation.load(Ordering::SeqCst),
            fs_generation: self.generation.clone(),
        }))
    }

    fn reuse_for_write(&self, old: &Path, new: &Path) -> Result<Box<dyn WritableFile>> {
        let mut st = self.state.lock();
        if !st.dirs.contains(&parent_dir(new)) {
            return Err(not_found("rename", new));
        }
        let inode = st.live.remove(old).ok_or_else(|| not_found("rename", old))?;
        st.live.insert(new.to_path_buf(), inode.clone());
        {
            let mut ino = inode.lock();
            let durable = ino.data[..ino.synced_len].to_vec();
            ino.old = durable;
            ino.old_zeros_to = 0;
            ino.synced_len = 0;
            ino.written = 0;
        }
        Ok(Box::new(MemWritable {
            path: new.to_path_buf(),
            inode,
            buf: Vec::new(),
            len: 0,
            pos: 0,
            generation: self.generation.load(Ordering::SeqCst),
            fs_generation: self.generation.clone(),
        }))
    }

    /// Memory has no page cache to bypass: direct handles are the plain ones, so the crash
    /// model covers the engine's direct I/O paths (the alignment is `direct.rs`'s, tested on
    /// the OS's file system).
    fn open_direct(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.open(path)
    }

    fn create_direct(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.create(path)
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let st = self.state.lock();
        let inode = st.live.get(path).ok_or_else(|| not_found("open", path))?.clone();
        let len = inode.lock().data.len() as u64;
        Ok(Arc::new(MemRandom { path: path.to_path_buf(), inode, len }))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let mut st = self.state.lock();
        if st.dirs.contains(from) {
            return rename_dir(&mut st, from, to);
        }
        let inode = st.live.remove(from).ok_or_else(|| not_found("rename", from))?;
        st.live.insert(to.to_path_buf(), inode);
        Ok(())
    }

    fn remove(&self, path: &Path) -> Result<()> {
        let mut st = self.state.lock();
        st.live.remove(path).map(|_| ()).ok_or_else(|| not_found("remove", path))
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let st = self.state.lock();
        if !st.dirs.contains(dir) {
            return Err(not_found("readdir", dir));
        }
        Ok(st
            .live
            .keys()
            .filter(|p| parent_dir(p) == dir)
            .filter_map(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_string))
            .collect())
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        let mut st = self.state.lock();
        let mut d = Some(dir);
        while let Some(p) = d {
            if p.as_os_str().is_empty() {
                break;
            }
            st.dirs.insert(p.to_path_buf());
            d = p.parent();
        }
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let mut st = self.state.lock();
        let st = &mut *st;
        st.durable.retain(|p, _| parent_dir(p) != dir);
        for (p, i) in &st.live {
            if parent_dir(p) == dir {
                st.durable.insert(p.clone(), i.clone());
            }
        }
        Ok(())
    }

    fn sync_file(&self, path: &Path) -> Result<()> {
        let st = self.state.lock();
        let inode = st.live.get(path).ok_or_else(|| not_found("fsync", path))?;
        let mut ino = inode.lock();
        ino.synced_len = ino.data.len();
        ino.old.clear();
        ino.old_zeros_to = 0;
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        let st = self.state.lock();
        st.live.contains_key(path) || st.dirs.contains(path)
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        let st = self.state.lock();
        let inode = st.live.get(path).ok_or_else(|| not_found("stat", path))?;
        let len = inode.lock().data.len() as u64;
        Ok(len)
    }

    fn link(&self, from: &Path, to: &Path) -> Result<()> {
        let mut st = self.state.lock();
        if st.live.contains_key(to) {
            return Err(Error::io("link", to, io::Error::from(io::ErrorKind::AlreadyExists)));
        }
        if !st.dirs.contains(&parent_dir(to)) {
            return Err(not_found("link", to));
        }
        let inode = st.live.get(from).ok_or_else(|| not_found("link", from))?.clone();
        st.live.insert(to.to_path_buf(), inode);
        Ok(())
    }

    fn remove_dir(&self, dir: &Path) -> Result<()> {
        let mut st = self.state.lock();
        if !st.dirs.contains(dir) {
            return Err(not_found("rmdir", dir));
        }
        let busy = st.live.keys().any(|p| p.starts_with(dir))
            || st.dirs.iter().any(|d| d != dir && d.starts_with(dir));
        if busy {
            return Err(Error::io("rmdir", dir, io::Error::other("directory not empty")));
        }
        st.dirs.remove(dir);
        st.durable.retain(|p, _| !p.starts_with(dir));
        Ok(())
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let mut st = self.state.lock();
        if !st.locks.insert(path.to_path_buf()) {
            return Err(Error::Locked(parent_dir(path)));
        }
        if !st.live.contains_key(path) {
            st.live.insert(path.to_path_buf(), Arc::default());
        }
        Ok(Box::new(MemLock {
            path: path.to_path_buf(),
            state: self.state.clone(),
            generation: self.generation.load(Ordering::SeqCst),
            fs_generation: self.generation.clone(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (MemFs, PathBuf) {
        let fs = MemFs::new();
        let d = PathBuf::from("/db");
        fs.create_dir_all(&d).unwrap();
        (fs, d)
    }

    #[test]
    fn power_loss_keeps_only_synced_bytes_and_entries() {
        let (fs, d) = setup();
        let a = d.join("a");
        let mut w = fs.create(&a).unwrap();
        w.append(b"durable").unwrap();
        w.sync().unwrap();
        fs.sync_dir(&d).unwrap();
        w.append(b"-flushed").unwrap();
        w.flush().unwrap();
        w.append(b"-buffered").unwrap();
        let b = d.join("b");
        let mut wb = fs.create(&b).unwrap();
        wb.append(b"never in dir").unwrap();
        wb.sync().unwrap();
        fs.crash(CrashMode::PowerLoss);
        assert!(w.append(b"x").is_err(), "old handles are dead");
        assert_eq!(fs.read_file(&a).unwrap(), b"durable");
        assert!(!fs.exists(&b), "entry not synced to the directory is lost");
    }

    #[test]
    fn process_kill_keeps_flushed_bytes() {
        let (fs, d) = setup();
        let a = d.join("a");
        let mut w = fs.create(&a).unwrap();
        w.append(b"flushed").unwrap();
        w.flush().unwrap();
        w.append(b"-buffered").unwrap();
        fs.crash(CrashMode::ProcessKill);
        drop(w);
        assert_eq!(fs.read_file(&a).unwrap(), b"flushed");
    }

    #[test]
    fn torn_power_loss_keeps_a_prefix() {
        for seed in 0..20 {
            let (fs, d) = setup();
            let a = d.join("a");
            let mut w = fs.create(&a).unwrap();
            w.append(b"0123").unwrap();
            w.sync().unwrap();
            fs.sync_dir(&d).unwrap();
            w.append(b"456789").unwrap();
            w.flush().unwrap();
            fs.crash(CrashMode::TornPowerLoss { seed });
            let got = fs.read_file(&a).unwrap();
            assert!(got.len() >= 4 && b"0123456789".starts_with(&got));
        }
    }

    #[test]
    fn rename_durable_after_dir_sync() {
        let (fs, d) = setup();
        let tmp = d.join("tmp");
        let cur = d.join("CURRENT");
        crate::env::write_file_synced(&fs, &cur, b"old").unwrap();
        let mut w = fs.create(&tmp).unwrap();
        w.append(b"new").unwrap();
        w.sync().unwrap();
        drop(w);
        fs.rename(&tmp, &cur).unwrap();
        fs.crash(CrashMode::PowerLoss);
        assert_eq!(fs.read_file(&cur).unwrap(), b"old");
        let mut w = fs.create(&tmp).unwrap();
        w.append(b"new").unwrap();
        w.sync().unwrap();
        drop(w);
        fs.rename(&tmp, &cur).unwrap();
        fs.sync_dir(&d).unwrap();
        fs.crash(CrashMode::PowerLoss);
        assert_eq!(fs.read_file(&cur).unwrap(), b"new");
        assert_eq!(fs.list(&d).unwrap(), vec!["CURRENT".to_string()]);
    }

    #[test]
    fn a_replaced_file_is_old_or_new_after_power_loss_and_leaves_no_temporary() {
        let (fs, d) = setup();
        let conf = d.join("redis.conf");
        crate::env::write_file_synced(&fs, &conf, b"old").unwrap();
        crate::env::replace_file_synced(&fs, &conf, b"new").unwrap();
        fs.crash(CrashMode::PowerLoss);
        assert_eq!(fs.read_file(&conf).unwrap(), b"new");
        assert_eq!(fs.list(&d).unwrap(), vec!["redis.conf".to_string()]);
        let gone = d.join("no-such-dir").join("redis.conf");
        assert!(crate::env::replace_file_synced(&fs, &gone, b"x").is_err());
        assert_eq!(fs.list(&d).unwrap(), vec!["redis.conf".to_string()], "nothing left behind");
    }

    #[test]
    fn links_share_the_file_and_directories_move() {
        let (fs, d) = setup();
        let a = d.join("a");
        crate::env::write_file_synced(&fs, &a, b"abc").unwrap();
        let sub = d.join("sub");
        fs.create_dir_all(&sub).unwrap();
        fs.link(&a, &sub.join("l")).unwrap();
        assert!(fs.link(&a, &sub.join("l")).is_err(), "the name exists");
        fs.sync_dir(&sub).unwrap();
        let moved = d.join("moved");
        fs.rename(&sub, &moved).unwrap();
        assert!(!fs.exists(&sub));
        assert_eq!(fs.read_file(&moved.join("l")).unwrap(), b"abc");
        assert!(fs.remove_dir(&moved).is_err(), "not empty");
        fs.crash(CrashMode::PowerLoss);
        assert_eq!(fs.read_file(&moved.join("l")).unwrap(), b"abc", "the link was synced");
        fs.remove(&moved.join("l")).unwrap();
        fs.remove_dir(&moved).unwrap();
        assert!(!fs.exists(&moved));
        assert_eq!(fs.read_file(&a).unwrap(), b"abc");
    }

    #[test]
    fn locks_are_exclusive_until_drop_or_crash() {
        let (fs, d) = setup();
        let l = fs.lock(&d.join("LOCK")).unwrap();
        assert!(matches!(fs.lock(&d.join("LOCK")), Err(Error::Locked(_))));
        drop(l);
        let _l2 = fs.lock(&d.join("LOCK")).unwrap();
        fs.crash(CrashMode::ProcessKill);
        let _l3 = fs.lock(&d.join("LOCK")).unwrap();
    }
}
