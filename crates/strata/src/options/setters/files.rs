//! The `rocksdb` crate's setters of files, logs and the environment.

use std::path::Path;

use crate::options::db_path::DBPath;
use crate::options::env_handle::Env;
use crate::options::logger::{InfoLogger, LogLevel};
use crate::options::Options;

impl Options {
    /// The directories tables go to, each with its target size (`Options::db_paths`).
    pub fn set_db_paths(&mut self, paths: &[DBPath]) {
        self.db_paths = paths.to_vec();
    }

    /// The family's own table directories (`Options::cf_paths`).
    pub fn set_cf_paths(&mut self, paths: &[DBPath]) {
        self.cf_paths = paths.to_vec();
    }

    /// The file system of `env` (`Options::fs`): `Env::mem_env()` keeps the DB in memory.
    /// Its thread-pool settings are kept with it ([`Env`]).
    pub fn set_env(&mut self, env: &Env) {
        self.fs = env.file_system().clone();
    }

    /// `use_fsync`: kept (`AcceptedOptions::use_fsync` says why fdatasync suffices).
    pub fn set_use_fsync(&mut self, useit: bool) {
        self.accepted.use_fsync = useit;
    }

    /// `use_fsync`.
    pub fn get_use_fsync(&self) -> bool {
        self.accepted.use_fsync
    }

    /// `db_log_dir`: kept (the LOG stays in the DB directory).
    pub fn set_db_log_dir<P: AsRef<Path>>(&mut self, path: P) {
        self.accepted.db_log_dir = Some(path.as_ref().to_path_buf());
    }

    /// `info_log_level`: kept (every line Strata logs is at `Info`); an
    /// [`InfoLogger`] filters by its own level.
    pub fn set_log_level(&mut self, level: LogLevel) {
        self.accepted.log_level = level;
    }

    /// `writable_file_max_buffer_size`: kept.
    pub fn set_writable_file_max_buffer_size(&mut self, nbytes: u64) {
        self.accepted.writable_file_max_buffer_size = nbytes;
    }

    /// `is_fd_close_on_exec`: kept (Rust opens every file close-on-exec).
    pub fn set_is_fd_close_on_exec(&mut self, enabled: bool) {
        self.accepted.is_fd_close_on_exec = enabled;
    }

    /// `allow_os_buffer` (removed from RocksDB): kept.
    pub fn set_allow_os_buffer(&mut self, is_allow: bool) {
        self.accepted.allow_os_buffer = is_allow;
    }

    /// `max_manifest_file_size`: kept.
    pub fn set_max_manifest_file_size(&mut self, size: usize) {
        self.accepted.max_manifest_file_size = size;
    }

    /// `manifest_preallocation_size`: kept.
    pub fn set_manifest_preallocation_size(&mut self, size: usize) {
        self.accepted.manifest_preallocation_size = size;
    }

    /// `allow_mmap_writes`: kept.
    pub fn set_allow_mmap_writes(&mut self, is_enabled: bool) {
        self.accepted.allow_mmap_writes = is_enabled;
    }

    /// `allow_mmap_reads`: [`Options::allow_mmap_reads`].
    pub fn set_allow_mmap_reads(&mut self, is_enabled: bool) {
        self.allow_mmap_reads = is_enabled;
    }

    /// `max_log_file_size`: kept (the LOG rolls at open).
    pub fn set_max_log_file_size(&mut self, size: usize) {
        self.accepted.max_log_file_size = size;
    }

    /// `log_file_time_to_roll`: kept.
    pub fn set_log_file_time_to_roll(&mut self, secs: usize) {
        self.accepted.log_file_time_to_roll = secs;
    }

    /// `delete_obsolete_files_period_micros`: kept.
    pub fn set_delete_obsolete_files_period_micros(&mut self, micros: u64) {
        self.accepted.delete_obsolete_files_period_micros = micros;
    }

    /// `max_file_opening_threads`: kept.
    pub fn set_max_file_opening_threads(&mut self, nthreads: i32) {
        self.accepted.max_file_opening_threads = nthreads;
    }

    /// `table_cache_numshardbits`: kept.
    pub fn set_table_cache_num_shard_bits(&mut self, nbits: i32) {
        self.accepted.table_cache_num_shard_bits = nbits;
    }

    /// `max_total_wal_size` (the field).
    pub fn set_max_total_wal_size(&mut self, size: u64) {
        self.max_total_wal_size = size;
    }

    /// `track_and_verify_wals_in_manifest`: kept.
    pub fn set_track_and_verify_wals_in_manifest(&mut self, val: bool) {
        self.accepted.track_and_verify_wals_in_manifest = val;
    }

    /// `track_and_verify_wals_in_manifest`.
    pub fn get_track_and_verify_wals_in_manifest(&self) -> bool {
        self.accepted.track_and_verify_wals_in_manifest
    }

    /// `write_dbid_to_manifest`: kept.
    pub fn set_write_dbid_to_manifest(&mut self, val: bool) {
        self.accepted.write_dbid_to_manifest = val;
    }

    /// `write_dbid_to_manifest`.
    pub fn get_write_dbid_to_manifest(&self) -> bool {
        self.accepted.write_dbid_to_manifest
    }

    /// Sends the info LOG's lines to `logger` instead of the `LOG` file
    /// (`Options::info_logger`).
    pub fn set_info_logger(&mut self, logger: InfoLogger) {
        self.info_logger = (!logger.is_log_file()).then_some(logger);
    }

    /// Where the info LOG's lines go: the logger set, or one standing for the `LOG` file.
    pub fn get_info_logger(&self) -> InfoLogger {
        self.info_logger.clone().unwrap_or_else(InfoLogger::log_file)
    }

    /// `avoid_unnecessary_blocking_io`: kept.
    pub fn set_avoid_unnecessary_blocking_io(&mut self, val: bool) {
        self.accepted.avoid_unnecessary_blocking_io = val;
    }

    /// `skip_stats_update_on_db_open`: kept.
    pub fn set_skip_stats_update_on_db_open(&mut self, skip: bool) {
        self.accepted.skip_stats_update_on_db_open = skip;
    }

    /// `stats_persist_period_sec`: seconds between records of the statistics history.
    pub fn set_stats_persist_period_sec(&mut self, period: u32) {
        self.stats_persist_period_sec = period;
    }

    /// `stats_history_buffer_size`: bytes the statistics history may take.
    pub fn set_stats_history_buffer_size(&mut self, size: usize) {
        self.stats_history_buffer_size = size;
    }

    /// `report_bg_io_stats`: kept.
    pub fn set_report_bg_io_stats(&mut self, enable: bool) {
        self.accepted.report_bg_io_stats = enable;
    }

    /// `dump_malloc_stats`: kept.
    pub fn set_dump_malloc_stats(&mut self, enabled: bool) {
        self.accepted.dump_malloc_stats = enabled;
    }

    /// `atomic_flush`: kept (`AcceptedOptions::atomic_flush` says what that means).
    pub fn set_atomic_flush(&mut self, atomic_flush: bool) {
        self.accepted.atomic_flush = atomic_flush;
    }

    /// `advise_random_on_open`.
    pub fn set_advise_random_on_open(&mut self, advise: bool) {
        self.advise_random_on_open = advise;
    }
}
