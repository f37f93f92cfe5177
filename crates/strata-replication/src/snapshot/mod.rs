//! Snapshots of a group: SST files of its key ranges, cut from one engine snapshot
//! ([`build`]), streamed in checksummed chunks ([`transfer`]) and installed by the state
//! machine (`state_machine.rs`).
//!
//! A snapshot is a directory under the node's snapshot directory holding one table file per
//! non-empty key range and a `files` list:
//!
//! ```text
//! files = version u8 (1) | count u32 | per file: name (u32 len, UTF-8) | cf (u32 len, UTF-8)
//!                                                | size u64 | crc32c u32   (little-endian)
//! ```
//!
//! Snapshots are not kept across restarts (the state machine is the engine itself, so Raft
//! rebuilds one when it needs it); the directory is removed when the last handle to it is
//! dropped, and an open removes leftovers except the one an install under way still needs.

pub mod build;
pub mod transfer;

use build::SnapshotSource;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use crate::codec::{put_bytes, put_u32, put_u64, put_u8, DecodeError, Reader};
use crate::error::{Error, Result};
use crate::types::GroupId;

/// Name of the file list in a snapshot directory.
pub const FILES_NAME: &str = "files";
/// Version of the file list's format (on-disk: never change).
const FILES_VERSION: u8 = 1;

/// One table file of a snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotFile {
    /// File name inside the snapshot directory.
    pub name: String,
    /// Column family its keys belong to.
    pub cf: String,
    /// Its size in bytes.
    pub size: u64,
    /// crc32c of its whole content.
    pub crc32c: u32,
}

/// The directory of one snapshot; removed when the last handle is dropped.
#[derive(Debug)]
struct SnapshotDir {
    path: PathBuf,
    files: Vec<SnapshotFile>,
}

impl Drop for SnapshotDir {
    fn drop(&mut self) {
        // Best effort: a directory left behind is removed by the next open.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A handle to a snapshot's files (the snapshot data Raft passes around). Clones share the
/// directory.
#[derive(Clone, Debug)]
pub struct SnapshotFiles {
    dir: Arc<SnapshotDir>,
}

impl SnapshotFiles {
    /// Takes ownership of `path` holding `files` (already checked), writing the file list.
    pub(crate) fn seal(group: GroupId, path: PathBuf, files: Vec<SnapshotFile>) -> Result<Self> {
        let mut out = Vec::new();
        put_u8(&mut out, FILES_VERSION);
        put_u32(&mut out, files.len() as u32);
        for f in &files {
            put_bytes(&mut out, f.name.as_bytes());
            put_bytes(&mut out, f.cf.as_bytes());
            put_u64(&mut out, f.size);
            put_u32(&mut out, f.crc32c);
        }
        let list = path.join(FILES_NAME);
        write_synced(&list, &out)
            .map_err(|e| Error::io(format!("{group}: write the snapshot file list"), &list, e))?;
        sync_dir(&path)
            .map_err(|e| Error::io(format!("{group}: sync the snapshot directory"), &path, e))?;
        Ok(SnapshotFiles { dir: Arc::new(SnapshotDir { path, files }) })
    }

    /// Opens the snapshot in `path` and checks every file's size and checksum.
    pub(crate) fn load(group: GroupId, path: &Path) -> Result<Self> {
        let list = path.join(FILES_NAME);
        let bytes = std::fs::read(&list)
            .map_err(|e| Error::io(format!("{group}: read the snapshot file list"), &list, e))?;
        let files =
            decode_files(&bytes).map_err(|e| Error::corrupt(group, "snapshot file list", &e))?;
        for f in &files {
            let p = path.join(&f.name);
            let data = std::fs::read(&p)
                .map_err(|e| Error::io(format!("{group}: read snapshot file"), &p, e))?;
            let crc = crc32c::crc32c(&data);
            if data.len() as u64 != f.size || crc != f.crc32c {
                return Err(Error::snapshot(
                    group,
                    format!(
                        "file {} has {} bytes with crc32c {crc:#x}; the list says {} bytes with {:#x}",
                        p.display(),
                        data.len(),
                        f.size,
                        f.crc32c
                    ),
                ));
            }
        }
        Ok(SnapshotFiles { dir: Arc::new(SnapshotDir { path: path.to_path_buf(), files }) })
    }

    /// The snapshot's directory.
    pub fn path(&self) -> &Path {
        &self.dir.path
    }

    /// Its table files.
    pub fn files(&self) -> &[SnapshotFile] {
        &self.dir.files
    }

    /// Total bytes of its table files.
    pub fn total_bytes(&self) -> u64 {
        self.dir.files.iter().map(|f| f.size).sum()
    }
}

/// A group's snapshot as Raft passes it around: its table files, either on disk already
/// (received, or an install's found at open) or cut when first asked for from the engine
/// snapshot it was made at (`build`'s module doc: a snapshot made only to purge the log is
/// never written out). Clones share the files, and the engine snapshot until they are cut.
#[derive(Clone)]
pub struct SnapshotData(Arc<DataInner>);

struct DataInner {
    group: GroupId,
    /// Until the files are cut (kept after a failed cut, for the next ask).
    source: Mutex<Option<SnapshotSource>>,
    files: OnceLock<SnapshotFiles>,
}

impl SnapshotData {
    /// `group`'s files already on disk.
    pub fn of_files(group: GroupId, files: SnapshotFiles) -> Self {
        let data = DataInner { group, source: Mutex::new(None), files: OnceLock::from(files) };
        SnapshotData(Arc::new(data))
    }

    /// Files to cut from `source` when first asked for.
    pub(crate) fn pending(source: SnapshotSource) -> Self {
        let group = source.group();
        let data = DataInner { group, source: Mutex::new(Some(source)), files: OnceLock::new() };
        SnapshotData(Arc::new(data))
    }

    /// The files, cut now if they were not yet (one clone cuts, the others wait for it); the
    /// engine snapshot is let go once they are. Blocking.
    pub fn files(&self) -> Result<SnapshotFiles> {
        if let Some(f) = self.0.files.get() {
            return Ok(f.clone());
        }
        let mut source = self.0.source.lock();
        if let Some(f) = self.0.files.get() {
            return Ok(f.clone());
        }
        let cut = match source.as_ref() {
            Some(s) => s.cut()?,
            None => return Err(Error::snapshot(self.0.group, "neither files nor a source")),
        };
        *source = None;
        Ok(self.0.files.get_or_init(|| cut).clone())
    }

    /// Whether the files are on disk (cut or received).
    pub fn is_cut(&self) -> bool {
        self.0.files.get().is_some()
    }
}

impl std::fmt::Debug for SnapshotData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.files.get() {
            Some(files) => f.debug_tuple("SnapshotData").field(files).finish(),
            None => f.write_str("SnapshotData(not cut yet)"),
        }
    }
}

fn decode_files(bytes: &[u8]) -> Result<Vec<SnapshotFile>, DecodeError> {
    let mut r = Reader::new(bytes);
    let v = r.u8("file list version")?;
    if v != FILES_VERSION {
        return Err(DecodeError {
            what: format!("file list version {FILES_VERSION} (found {v})"),
            offset: 0,
        });
    }
    let n = r.count("file count", 24)?;
    let mut files = Vec::with_capacity(n);
    for _ in 0..n {
        let name = r.string("file name")?;
        if name.is_empty() || name.contains('/') || name == FILES_NAME || name == ".." {
            return Err(DecodeError {
                what: format!("a plain file name (found {name:?})"),
                offset: 0,
            });
        }
        let cf = r.string("column family")?;
        files.push(SnapshotFile {
            name,
            cf,
            size: r.u64("file size")?,
            crc32c: r.u32("file crc32c")?,
        });
    }
    r.finish("the file list")?;
    Ok(files)
}

/// Writes `data` to a new file at `path` and syncs it.
pub(crate) fn write_synced(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::File::create(path)?;
    f.write_all(data)?;
    f.sync_data()
}

/// Syncs a directory, so the files created in it survive power loss.
pub(crate) fn sync_dir(path: &Path) -> std::io::Result<()> {
    std::fs::File::open(path)?.sync_all()
}

/// A fresh, unique directory name for a snapshot of `group`.
pub(crate) fn fresh_dir(root: &Path, group: GroupId, what: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    root.join(format!("{what}-g{}-{nanos}-{n}", group.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_list_round_trips_and_a_damaged_file_is_refused_on_load() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("s");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("0.sst"), b"table bytes").unwrap();
        let f = SnapshotFile {
            name: "0.sst".into(),
            cf: "default".into(),
            size: 11,
            crc32c: crc32c::crc32c(b"table bytes"),
        };
        let sealed = SnapshotFiles::seal(GroupId(1), dir.clone(), vec![f.clone()]).unwrap();
        let loaded = SnapshotFiles::load(GroupId(1), &dir).unwrap();
        assert_eq!(loaded.files(), [f]);
        std::fs::write(dir.join("0.sst"), b"table bytez").unwrap();
        let e = SnapshotFiles::load(GroupId(1), &dir).unwrap_err().to_string();
        assert!(e.contains("group 1: snapshot: file") && e.contains("crc32c"), "{e}");
        drop(loaded);
        assert!(!dir.exists(), "the last handle removes the directory");
        drop(sealed);
    }

    #[test]
    fn a_file_list_naming_a_path_outside_the_directory_is_corrupt() {
        let mut out = Vec::new();
        put_u8(&mut out, FILES_VERSION);
        put_u32(&mut out, 1);
        put_bytes(&mut out, b"../x");
        put_bytes(&mut out, b"default");
        put_u64(&mut out, 1);
        put_u32(&mut out, 0);
        assert!(decode_files(&out).is_err());
    }
}
