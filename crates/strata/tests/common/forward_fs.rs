//! A file system that hands every call to a [`MemFs`] except the ones its [`Hooks`] take: a
//! test that needs one call to behave otherwise (slow, held, wrapped) writes only that call.

use std::path::Path;
use std::sync::Arc;

use strata::env::{FileLock, FileSystem, MemFs, RandomAccessFile, WritableFile};
use strata::Result;

/// The calls a test may take over; each does what `MemFs` does unless overridden.
pub trait Hooks: Send + Sync + 'static {
    /// `FileSystem::create`.
    fn create(&self, fs: &MemFs, path: &Path) -> Result<Box<dyn WritableFile>> {
        fs.create(path)
    }

    /// `FileSystem::remove`.
    fn remove(&self, fs: &MemFs, path: &Path) -> Result<()> {
        fs.remove(path)
    }

    /// `FileSystem::create_direct`: refused, as `FileSystem`'s default, unless a test takes
    /// it (`MemFs` has direct handles: its plain ones).
    fn create_direct(&self, _fs: &MemFs, path: &Path) -> Result<Box<dyn WritableFile>> {
        Err(no_direct_io(path))
    }

    /// `FileSystem::open_direct`: as `create_direct`.
    fn open_direct(&self, _fs: &MemFs, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        Err(no_direct_io(path))
    }
}

fn no_direct_io(path: &Path) -> strata::Error {
    strata::Error::NotSupported(format!("{}: no direct I/O in this test", path.display()))
}

/// `MemFs` with `H`'s hooks. The calls `FileSystem` gives a default (hard links, reuse of a
/// file, modification times) keep that default: no links.
pub struct ForwardFs<H>(pub MemFs, pub H);

impl<H: Hooks> FileSystem for ForwardFs<H> {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.1.create(&self.0, path)
    }
    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.0.open(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.0.rename(from, to)
    }
    fn remove(&self, path: &Path) -> Result<()> {
        self.1.remove(&self.0, path)
    }
    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.0.list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.0.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.0.sync_dir(dir)
    }
    fn sync_file(&self, path: &Path) -> Result<()> {
        self.0.sync_file(path)
    }
    fn exists(&self, path: &Path) -> bool {
        self.0.exists(path)
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        self.0.file_size(path)
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.0.lock(path)
    }
    fn remove_dir(&self, dir: &Path) -> Result<()> {
        self.0.remove_dir(dir)
    }
    fn create_direct(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.1.create_direct(&self.0, path)
    }
    fn open_direct(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.1.open_direct(&self.0, path)
    }
}
