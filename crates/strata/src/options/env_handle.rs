//! `Env`: the `rocksdb` crate's environment handle, here the file system a DB does its I/O
//! through (`Options::fs`) plus RocksDB's thread-pool settings.
//!
//! `Env::new()` is the OS file system; `Env::mem_env()` an in-memory one, so that a DB opened
//! with it (`Options::set_env`) keeps every file in memory and leaves nothing on disk. Strata's
//! background threads belong to each DB (`Options::max_background_jobs`), not to a shared
//! pool: the pool sizes and priorities set here are kept (`Env::background_threads`) and do
//! not change them.

use std::sync::Arc;

use crate::env::{FileSystem, MemFs, OsFs};
use crate::error::Result;

/// A file system and thread-pool settings (module doc). Clones share the file system.
#[derive(Clone)]
pub struct Env {
    fs: Arc<dyn FileSystem>,
    /// Pool sizes asked for: `[low, high, bottom]` (RocksDB's priorities); -1 unset.
    threads: [i32; 3],
    /// Whether lower I/O or CPU priority was asked for the low or high pool.
    lowered: Vec<&'static str>,
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env")
            .field("threads", &self.threads)
            .field("lowered", &self.lowered)
            .finish_non_exhaustive()
    }
}

impl Env {
    fn with_fs(fs: Arc<dyn FileSystem>) -> Env {
        Env { fs, threads: [-1; 3], lowered: Vec::new() }
    }

    /// The OS file system. Never fails; `Result` as in the `rocksdb` crate.
    pub fn new() -> Result<Self> {
        Ok(Env::with_fs(Arc::new(OsFs)))
    }

    /// A fresh in-memory file system: a DB opened with it keeps its files in memory (they
    /// live while a clone of this `Env`, or a DB using it, does).
    pub fn mem_env() -> Result<Self> {
        Ok(Env::with_fs(Arc::new(MemFs::new())))
    }

    /// The file system `fs` (a `FaultFs` in tests, a program's own): what
    /// `Options::set_env` and `Options::load_latest` then use.
    pub fn from_file_system(fs: Arc<dyn FileSystem>) -> Env {
        Env::with_fs(fs)
    }

    /// The file system.
    pub fn file_system(&self) -> &Arc<dyn FileSystem> {
        &self.fs
    }

    /// Threads of the low-priority pool (RocksDB's compactions; kept, see the module doc).
    pub fn set_background_threads(&mut self, num_threads: i32) {
        self.threads[0] = num_threads;
    }

    /// Threads of the high-priority pool (RocksDB's flushes; kept).
    pub fn set_high_priority_background_threads(&mut self, n: i32) {
        self.threads[1] = n;
    }

    /// Threads of the low-priority pool (kept).
    pub fn set_low_priority_background_threads(&mut self, n: i32) {
        self.threads[0] = n;
    }

    /// Threads of the bottom-priority pool (kept).
    pub fn set_bottom_priority_background_threads(&mut self, n: i32) {
        self.threads[2] = n;
    }

    /// Pool sizes asked for, `[low, high, bottom]`, -1 where unset.
    pub fn background_threads(&self) -> [i32; 3] {
        self.threads
    }

    /// Waits for the pools' threads: Strata's belong to each DB and end when it closes, so
    /// there is nothing to wait for here.
    pub fn join_all_threads(&mut self) {}

    /// Lower the I/O priority of the low pool (kept).
    pub fn lower_thread_pool_io_priority(&mut self) {
        self.lowered.push("low pool I/O");
    }

    /// Lower the I/O priority of the high pool (kept).
    pub fn lower_high_priority_thread_pool_io_priority(&mut self) {
        self.lowered.push("high pool I/O");
    }

    /// Lower the CPU priority of the low pool (kept).
    pub fn lower_thread_pool_cpu_priority(&mut self) {
        self.lowered.push("low pool CPU");
    }

    /// Lower the CPU priority of the high pool (kept).
    pub fn lower_high_priority_thread_pool_cpu_priority(&mut self) {
        self.lowered.push("high pool CPU");
    }
}
