//! The info LOG: `<db>/LOG`, the human-readable account of what the DB did, the first thing
//! a user reads when something is slow.
//!
//! ```text
//! 2026/11/22-11:45:00.123456 1a2b Strata version: 0.1.0
//! 2026/11/22-11:45:00.123470 1a2b Git sha 0123abcd...
//! 2026/11/22-11:45:00.123480 1a2b Options.write_buffer_size: 67108864
//! ...
//! 2026/11/22-11:45:01.000012 1a2c [default] Flush: memtable of WAL 12 -> table 14: ...
//! 2026/11/22-11:45:01.000020 1a2c EVENT_LOG_v1 {"time_micros": ..., "event": "flush_finished", ...}
//! ```
//!
//! Each line is a timestamp (UTC, microseconds), the writing thread's id in hex, and the
//! message. What is logged: the build (`Strata version:`, `Git sha`), every option in effect
//! at open, the recovery summary, every flush and compaction (inputs, outputs, bytes, seconds;
//! also as one `EVENT_LOG_v1` JSON line for tools), every write stall with its cause and, when
//! it ends, its duration, background errors, and the `stats` dump every
//! `Options::stats_dump_period_sec`. Lines never claim to come from RocksDB, but keep its
//! shapes where RocksDB's scripts grep them (`Git sha <sha>` as the fifth field).
//!
//! At open an existing LOG is renamed to `LOG.old.<microseconds since the epoch>`, and the
//! oldest such files beyond `Options::keep_log_file_num` are deleted. Writing the LOG never
//! fails an operation: an I/O error while logging is counted and otherwise ignored.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

use crate::env::{FileSystem, WritableFile};
use crate::error::Result;
use crate::options::{InfoLogger, LogLevel};

/// The info LOG of one open DB.
pub(crate) struct InfoLog {
    file: Mutex<Option<Box<dyn WritableFile>>>,
    /// `Options::info_logger`: lines go there instead of a file.
    logger: Option<InfoLogger>,
    /// Lines that could not be written.
    pub write_errors: AtomicU64,
}

/// The file name of the active LOG.
pub(crate) const LOG_NAME: &str = "LOG";
const OLD_PREFIX: &str = "LOG.old.";

/// Whether `name` is an info LOG file (the active one or an old one).
pub(crate) fn is_info_log_name(name: &str) -> bool {
    name == LOG_NAME || name.strip_prefix(OLD_PREFIX).is_some_and(|t| t.parse::<u64>().is_ok())
}

impl InfoLog {
    /// A LOG that writes nothing (`Options::info_log = false`).
    pub fn disabled() -> InfoLog {
        InfoLog { file: Mutex::new(None), logger: None, write_errors: AtomicU64::new(0) }
    }

    /// A LOG whose lines go to `logger` (at `Info` level, timestamped as in the file) and no
    /// `LOG` file is written.
    pub fn to_logger(logger: InfoLogger) -> InfoLog {
        InfoLog { file: Mutex::new(None), logger: Some(logger), write_errors: AtomicU64::new(0) }
    }

    /// Starts `<dir>/LOG`, first renaming an existing one to `LOG.old.<micros>` and deleting
    /// the oldest old LOGs beyond `keep`.
    pub fn open(fs: &dyn FileSystem, dir: &Path, keep: usize) -> Result<InfoLog> {
        let path = dir.join(LOG_NAME);
        if fs.exists(&path) {
            let old = dir.join(format!("{OLD_PREFIX}{}", now_micros()));
            fs.rename(&path, &old)?;
        }
        let mut old: Vec<(u64, String)> = fs
            .list(dir)?
            .into_iter()
            .filter_map(|n| n.strip_prefix(OLD_PREFIX)?.parse().ok().map(|t: u64| (t, n)))
            .collect();
        old.sort_unstable();
        let excess = old.len().saturating_sub(keep);
        for (_, name) in old.into_iter().take(excess) {
            let _ = fs.remove(&dir.join(name));
        }
        let file = fs.create(&path)?;
        Ok(InfoLog { file: Mutex::new(Some(file)), logger: None, write_errors: AtomicU64::new(0) })
    }

    /// Appends `messages` as lines stamped alike, in one write (the open's options dump: one
    /// append instead of one per line); never fails.
    pub fn log_all(&self, messages: impl IntoIterator<Item = String>) {
        let mut stamp = String::with_capacity(48);
        timestamp(&mut stamp);
        let _ = write!(stamp, " {:x} ", thread_id());
        if let Some(l) = &self.logger {
            for m in messages {
                l.log(LogLevel::Info, &format!("{stamp}{m}"));
            }
            return;
        }
        let mut guard = self.file.lock();
        let Some(file) = guard.as_mut() else { return };
        let mut text = String::new();
        for m in messages {
            text.push_str(&stamp);
            text.push_str(&m);
            text.push('\n');
        }
        if file.append(text.as_bytes()).and_then(|()| file.flush()).is_err() {
            self.write_errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Appends one line (a message without its timestamp); never fails.
    pub fn log(&self, message: &str) {
        if let Some(l) = &self.logger {
            let mut line = String::with_capacity(message.len() + 48);
            timestamp(&mut line);
            let _ = write!(line, " {:x} ", thread_id());
            line.push_str(message);
            l.log(LogLevel::Info, &line);
            return;
        }
        let mut guard = self.file.lock();
        let Some(file) = guard.as_mut() else { return };
        let mut line = String::with_capacity(message.len() + 48);
        timestamp(&mut line);
        let _ = write!(line, " {:x} ", thread_id());
        line.push_str(message);
        line.push('\n');
        if file.append(line.as_bytes()).and_then(|()| file.flush()).is_err() {
            self.write_errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Appends a multi-line block (such as the stats dump), each line stamped.
    pub fn log_lines(&self, text: &str) {
        for l in text.lines() {
            self.log(l);
        }
    }
}

/// Microseconds since the Unix epoch.
pub(crate) fn now_micros() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

/// `YYYY/MM/DD-HH:MM:SS.micros` in UTC (civil date from days since the epoch).
fn timestamp(out: &mut String) {
    let micros = now_micros();
    let secs = micros / 1_000_000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    let _ = write!(
        out,
        "{y:04}/{m:02}/{d:02}-{:02}:{:02}:{:02}.{:06}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        micros % 1_000_000
    );
}

/// The proleptic Gregorian date of `days` since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// A small stable number for the calling thread (its id's hash), as RocksDB prints one.
fn thread_id() -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::thread::current().id().hash(&mut h);
    h.finish() & 0xffff_ffff
}

/// The build's git commit, recorded by the build script (`unknown` outside a git checkout).
pub(crate) const GIT_SHA: &str = match option_env!("STRATA_GIT_SHA") {
    Some(s) => s,
    None => "unknown",
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::MemFs;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_779), (2026, 11, 22));
    }

    #[test]
    fn rotation_keeps_the_newest_old_logs() {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        for i in 0..5 {
            let log = InfoLog::open(&fs, dir, 2).unwrap();
            log.log(&format!("open {i}"));
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let names = fs.list(dir).unwrap();
        let old = names.iter().filter(|n| n.starts_with(OLD_PREFIX)).count();
        assert_eq!(old, 2, "{names:?}");
        let text = String::from_utf8(fs.read_file(&dir.join(LOG_NAME)).unwrap()).unwrap();
        assert!(text.trim_end().ends_with("open 4"), "{text}");
        let first = text.lines().next().unwrap();
        assert_eq!(first.as_bytes()[4], b'/', "{first}");
    }
}
