//! Appends records to a log file in the format of [`super::format`].
//!
//! Durability is the caller's choice: [`LogWriter::add_record`] only appends (the bytes may stay
//! in the process), [`LogWriter::flush`] hands them to the OS (they survive a killed process),
//! [`LogWriter::sync`] makes them durable (they survive power loss).
//!
//! Zeros ahead ([`LogWriter::write_zeros_ahead`]): a new WAL file is kept at least half of
//! [`ZEROS_AHEAD_CHUNK`] longer than its records, by writing zeros past them in chunks of that
//! size before the records get there. Records then overwrite blocks that exist, so a synced
//! write's fdatasync writes the data alone, with no file size or block allocation to journal
//! (one sync in a chunk's worth of bytes still writes the zeros and the new size). The WAL
//! header says so, and readers take zeros from a fragment boundary to the end of the file as
//! the log's end (`reader.rs`). A failed or declined zero write (a file whose appends are
//! large declines them, `env/os.rs`) only stops the zeros ahead (appends then extend the
//! file, as without them); the zeros written so far are still zeros.
//!
//! After any failed append, flush or sync the writer is poisoned: the file may hold a partial
//! fragment, and the OS may have dropped dirty pages whose failure it reported once and will
//! not report again, so every later call fails. The DB must never acknowledge a write after a
//! failure of its log; it switches to a new log (or reopens) instead.

use super::format::{
    encode_header, encode_recyclable_header, FragmentType, BLOCK_SIZE, HEADER_SIZE,
    RECYCLABLE_HEADER_SIZE,
};
use crate::env::WritableFile;
use crate::error::{Error, Result};

const ZEROS: [u8; RECYCLABLE_HEADER_SIZE] = [0; RECYCLABLE_HEADER_SIZE];

/// How far ahead of its records a WAL written with zeros ahead is zero-filled, and in what
/// steps: one sync in this many WAL bytes writes file-size metadata.
pub(crate) const ZEROS_AHEAD_CHUNK: u64 = 1 << 20;

/// Writes records into a log file.
pub(crate) struct LogWriter {
    file: Box<dyn WritableFile>,
    /// Log size when this writer was created (bytes already in the file before `file` counted).
    base: u64,
    /// `file.len()` when this writer was created.
    start_len: u64,
    /// Write position inside the current block, `0..BLOCK_SIZE`.
    block_offset: usize,
    /// The first failure, once one happened.
    failure: Option<String>,
    /// `Some(low 32 bits of the log number)`: recyclable fragments (types 5-8) are written.
    recyclable: Option<u32>,
    /// `file.len()` at the last sync or writeback request (for `bytes_per_sync`).
    written_back_len: u64,
    bytes_per_sync: u64,
    /// Zeros are written ahead of the records (see the module documentation).
    zeros_ahead: bool,
    /// The file reaches at least this offset (`file.len()` terms) with zeros past the records.
    zeroed_to: u64,
}

impl LogWriter {
    /// A writer appending to `file`, whose `len()` is the log's current size (0 for a new file).
    pub fn new(file: Box<dyn WritableFile>) -> Self {
        let len = file.len();
        Self::with_initial_offset(file, len)
    }

    /// A writer appending to a log that already holds `offset` bytes, through a handle whose
    /// `len()` may not count them (a file reopened for append, possibly after truncating a torn
    /// tail to `ReplayOutcome::last_valid_end`). Fragment placement continues from `offset`.
    pub fn with_initial_offset(file: Box<dyn WritableFile>, offset: u64) -> Self {
        let start_len = file.len();
        LogWriter {
            file,
            base: offset,
            start_len,
            block_offset: (offset % BLOCK_SIZE as u64) as usize,
            failure: None,
            recyclable: None,
            written_back_len: start_len,
            bytes_per_sync: 0,
            zeros_ahead: false,
            zeroed_to: 0,
        }
    }

    /// A writer of recyclable fragments for the log numbered `log`, from the start of `file`
    /// (a new file, or a reused one whose old bytes it overwrites).
    pub fn recyclable(file: Box<dyn WritableFile>, log: u64) -> Self {
        let mut w = Self::with_initial_offset(file, 0);
        w.recyclable = Some(log as u32);
        w
    }

    /// Asks the OS to start writing the log out every `bytes` flushed bytes (0: never), so a
    /// later sync finds little left to write.
    pub fn set_bytes_per_sync(&mut self, bytes: u64) {
        self.bytes_per_sync = bytes;
    }

    /// Starts writing zeros ahead of the records (module documentation), for a new, empty
    /// file. Returns `false` when the file system cannot: then nothing changed. Call before
    /// the first record; the WAL header should then say so (`header.rs`).
    pub fn write_zeros_ahead(&mut self) -> bool {
        if self.failure.is_some() || !self.file.is_empty() {
            return false;
        }
        self.zeros_ahead = true;
        self.zero_fill_for(0);
        self.zeros_ahead
    }

    /// Flushes, and drops the zeros written ahead of the records (for a clean close: the
    /// file then ends at its last record, as a WAL without zeros ahead).
    pub fn trim_zeros_ahead(&mut self) -> Result<()> {
        self.check_usable()?;
        let r = if self.zeroed_to > 0 { self.file.truncate_to_len() } else { self.file.flush() };
        self.zeros_ahead = false;
        self.record_failure(r)
    }

    /// Copies flushed records into a shared mapping of the zeros written ahead instead of
    /// writing them with a system call, where the file system can (`WritableFile::
    /// map_zeros_ahead`); returns whether it does. Call after [`Self::write_zeros_ahead`].
    pub fn map_zeros_ahead(&mut self) -> bool {
        self.zeros_ahead && self.failure.is_none() && self.file.map_zeros_ahead()
    }

    /// Whether the file's last appends were too large for zeros ahead to pay
    /// (`WritableFile::appends_large`): the next WAL is better started without them.
    pub fn appends_large(&self) -> bool {
        self.file.appends_large()
    }

    /// Whether zeros are written ahead of the records (they were at least at the start).
    pub fn zeros_ahead(&self) -> bool {
        self.zeroed_to > 0
    }

    /// Appends one record (possibly empty). Does not flush.
    pub fn add_record(&mut self, data: &[u8]) -> Result<()> {
        self.check_usable()?;
        if self.zeros_ahead {
            // The record's bytes: its payload, a header per block it touches, and at most a
            // block trailer before it.
            let blocks = data.len() as u64 / BLOCK_SIZE as u64 + 2;
            let size = data.len() as u64 + blocks * RECYCLABLE_HEADER_SIZE as u64;
            self.zero_fill_for(self.file.len() + size);
        }
        let r = self.write_fragments(data);
        self.record_failure(r)
    }

    /// Keeps the zeros at least half a chunk past `end`: when they are not, extends them to
    /// the chunk boundary that is.
    fn zero_fill_for(&mut self, end: u64) {
        let want = end + ZEROS_AHEAD_CHUNK / 2;
        if want <= self.zeroed_to {
            return;
        }
        let to = (want / ZEROS_AHEAD_CHUNK + 1) * ZEROS_AHEAD_CHUNK;
        match self.file.write_zeros_ahead(to) {
            Ok(true) => self.zeroed_to = to,
            // Not supported, declined or failed: appends extend the file from here on. Should the
            // failure be the device's, the next append or sync reports it.
            Ok(false) | Err(_) => self.zeros_ahead = false,
        }
    }

    /// Hands every appended byte to the OS.
    pub fn flush(&mut self) -> Result<()> {
        self.check_usable()?;
        let r = self.file.flush();
        let r = self.record_failure(r);
        let len = self.file.len();
        if r.is_ok()
            && self.bytes_per_sync > 0
            && len - self.written_back_len >= self.bytes_per_sync
        {
            self.written_back_len = len;
            // A hint: the data's durability still rests on `sync`.
            let _ = self.file.start_writeback();
        }
        r
    }

    /// Flushes, for a log that takes no more records (a retired WAL): the file lets go of
    /// what served the appends (`WritableFile::finish_appends`), so the sync that follows
    /// is as cheap as a written file's.
    pub fn finish(&mut self) -> Result<()> {
        self.check_usable()?;
        let r = self.file.finish_appends();
        self.record_failure(r)
    }

    /// Flushes, then makes every appended byte durable.
    pub fn sync(&mut self) -> Result<()> {
        self.check_usable()?;
        let r = self.file.sync();
        self.written_back_len = self.file.len();
        self.record_failure(r)
    }

    /// A handle that makes every byte flushed so far durable, to call without holding this
    /// writer (`WritableFile::syncer`); `None` when the file has none (then `sync` here).
    pub fn syncer(&mut self) -> Result<Option<Box<dyn crate::env::FileSyncer>>> {
        self.check_usable()?;
        Ok(self.file.syncer())
    }

    /// Reserves space for `bytes` more bytes (a hint; see `WritableFile::preallocate`).
    pub fn preallocate(&mut self, bytes: u64) {
        let _ = self.file.preallocate(bytes);
    }

    /// The log's size in bytes, counting appended but unflushed bytes.
    pub fn file_size(&self) -> u64 {
        self.base + (self.file.len() - self.start_len)
    }

    #[cfg(test)]
    /// True once an append, flush or sync has failed.
    pub fn is_poisoned(&self) -> bool {
        self.failure.is_some()
    }

    fn check_usable(&self) -> Result<()> {
        match &self.failure {
            None => Ok(()),
            Some(first) => Err(Error::Background(format!(
                "log writer refuses further writes after an earlier failure: {first}"
            ))),
        }
    }

    fn record_failure(&mut self, r: Result<()>) -> Result<()> {
        if let Err(e) = &r {
            self.failure = Some(e.to_string());
        }
        r
    }

    fn write_fragments(&mut self, data: &[u8]) -> Result<()> {
        let header_size =
            if self.recyclable.is_some() { RECYCLABLE_HEADER_SIZE } else { HEADER_SIZE };
        let mut rest = data;
        let mut first = true;
        loop {
            let left = BLOCK_SIZE - self.block_offset;
            if left < header_size {
                // Too small for a header: pad the block with zeros and start the next one.
                if left > 0 {
                    self.file.append(&ZEROS[..left])?;
                }
                self.block_offset = 0;
                continue;
            }
            let room = left - header_size;
            let n = rest.len().min(room);
            let last = n == rest.len();
            let t = match (first, last) {
                (true, true) => FragmentType::Full,
                (true, false) => FragmentType::First,
                (false, false) => FragmentType::Middle,
                (false, true) => FragmentType::Last,
            };
            let (payload, tail) = rest.split_at(n);
            match self.recyclable {
                Some(log) => self.file.append(&encode_recyclable_header(t, log, payload))?,
                None => self.file.append(&encode_header(t, payload))?,
            }
            if !payload.is_empty() {
                self.file.append(payload)?;
            }
            self.block_offset += header_size + n;
            debug_assert!(self.block_offset <= BLOCK_SIZE);
            if self.block_offset == BLOCK_SIZE {
                self.block_offset = 0;
            }
            rest = tail;
            first = false;
            if last {
                return Ok(());
            }
        }
    }
}
