//! Reads records back from a log file, checking every fragment, and decides what damage means
//! according to a [`WalRecoveryMode`] (see the module documentation of [`super`]).
//!
//! The file is read one 32 KiB block at a time through `RandomAccessFile::read_at`; a fragment
//! length is bounded by its block, so damaged bytes never cause a large allocation. A record
//! held in one fragment is handed out as a slice of the block buffer (no copy); only records
//! spanning blocks are assembled in a scratch buffer.

use std::sync::Arc;

use super::format::{
    decode_header, fragment_checksum, FragmentType, BLOCK_SIZE, HEADER_SIZE, MAX_FRAGMENT_PAYLOAD,
};
use crate::env::RandomAccessFile;
use crate::error::{Error, Result};

/// What recovery does with damaged bytes in a write-ahead log.
///
/// *Damage* is a fragment that fails its checksum, has an impossible length or an unknown
/// type, is cut off by the end of the file, or a record missing fragments. A *torn tail* is
/// damage after which no valid record starts anywhere in the rest of the file: what a crash in
/// the middle of a write leaves (a file cut inside a record, or ending in zeros or garbage).
/// `docs/format/wal.md` gives the exact rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum WalRecoveryMode {
    /// Drops a torn tail; damage followed by a valid record fails `open` with `Corruption`.
    /// In Strata this is the same rule as `PointInTime`; both exist for option compatibility
    /// with RocksDB.
    TolerateCorruptedTailRecords,
    /// Any damage, torn tail included, fails `open` with `Corruption`: the log must end
    /// exactly after a complete record (or inside the zero padding after one).
    AbsoluteConsistency,
    /// The default. Recovers exactly the records written before the first damage when that
    /// damage is a torn tail (dropped); damage followed by a valid record fails `open` with
    /// `Corruption` naming the file and offset, rather than silently lose later writes.
    #[default]
    PointInTime,
    /// Salvage: skips every damaged stretch and keeps every intact record, wherever it is.
    /// Recovered data may have holes (records lost between surviving ones).
    SkipAnyCorruptedRecords,
}

/// What a replay found, beyond the records themselves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplayOutcome {
    /// Records handed to the caller.
    pub records: u64,
    /// Bytes that belonged to no delivered record and were not clean padding: skipped damaged
    /// stretches, dropped partial records, and the torn tail.
    pub dropped_bytes: u64,
    /// Damaged stretches dropped: each skipped run of bad bytes, each record cut short by
    /// damage, and the torn tail count once.
    pub dropped_records_or_fragments: u64,
    /// True when the log ended in a torn tail that was dropped.
    pub torn_tail: bool,
    /// File offset just past the last fragment of the last delivered record (0 if none). A log
    /// truncated here and appended to again is well-formed.
    pub last_valid_end: u64,
}

/// One fragment as read from the file.
enum Fragment {
    /// A fragment whose checksum verifies; its payload is `block[start..end]`.
    Good { offset: u64, t: FragmentType, start: usize, end: usize },
    /// Bytes at `offset` are not a valid fragment (damaged, zero-filled or cut short).
    Bad { offset: u64, reason: String },
    /// The file ends cleanly here (possibly inside a block trailer).
    Eof,
}

/// Where reading may go on after damage.
enum Resume {
    /// Search for the next valid record start from this offset.
    Scan(u64),
    /// A valid record start is known to be at this offset.
    At(u64),
    /// Nothing follows the damage.
    Eof,
}

/// Where the bytes of a delivered record are.
enum Location {
    Block(usize, usize),
    Scratch,
}

/// Reads the records of one log file in order.
pub(crate) struct LogReader {
    file: Arc<dyn RandomAccessFile>,
    mode: WalRecoveryMode,
    /// File size when the reader was created; bytes beyond it are ignored.
    file_size: u64,
    /// Contents of the block starting at `block_start` (shorter than a block only at EOF).
    block: Vec<u8>,
    block_start: Option<u64>,
    /// File offset of the next fragment to read.
    cur: u64,
    /// Payload gathered so far of a record spanning blocks.
    scratch: Vec<u8>,
    /// Offset of the `First` fragment of the record being gathered.
    pending_start: Option<u64>,
    outcome: ReplayOutcome,
    done: bool,
}

impl LogReader {
    pub fn new(file: Arc<dyn RandomAccessFile>, mode: WalRecoveryMode) -> Self {
        let file_size = file.len();
        LogReader {
            file,
            mode,
            file_size,
            block: Vec::with_capacity(BLOCK_SIZE),
            block_start: None,
            cur: 0,
            scratch: Vec::new(),
            pending_start: None,
            outcome: ReplayOutcome::default(),
            done: false,
        }
    }

    /// The next record and the file offset of its first fragment, or `None` at the end of the
    /// log (including a dropped torn tail). Damage is an error or is skipped as the mode says;
    /// after a `Corruption` error the reader returns `None`.
    pub fn read_record(&mut self) -> Result<Option<(u64, &[u8])>> {
        Ok(match self.next_record()? {
            None => None,
            Some((offset, Location::Block(s, e))) => Some((offset, &self.block[s..e])),
            Some((offset, Location::Scratch)) => Some((offset, &self.scratch[..])),
        })
    }

    /// What the reader found so far; final once `read_record` returned `Ok(None)`.
    pub fn outcome(&self) -> ReplayOutcome {
        self.outcome
    }

    fn next_record(&mut self) -> Result<Option<(u64, Location)>> {
        loop {
            if self.done {
                return Ok(None);
            }
            match self.next_fragment()? {
                Fragment::Eof => {
                    if let Some(start) = self.pending_start.take() {
                        self.on_damage(
                            start,
                            Resume::Eof,
                            "the log ends inside a record (its last fragment is missing)".into(),
                        )?;
                    }
                    self.done = true;
                }
                Fragment::Bad { offset, reason } => {
                    let start = self.pending_start.take().unwrap_or(offset);
                    self.on_damage(start, Resume::Scan(offset + 1), reason)?;
                }
                Fragment::Good { offset, t, start, end } => match t {
                    FragmentType::Full | FragmentType::First => {
                        if let Some(pstart) = self.pending_start.take() {
                            // Reread this fragment after dealing with the cut-short record.
                            self.on_damage(
                                pstart,
                                Resume::At(offset),
                                format!(
                                    "record is cut short: a new record starts at offset {offset} \
                                     before its last fragment"
                                ),
                            )?;
                            continue;
                        }
                        if t == FragmentType::Full {
                            return Ok(Some(self.deliver(offset, Location::Block(start, end))));
                        }
                        self.pending_start = Some(offset);
                        self.scratch.clear();
                        self.scratch.extend_from_slice(&self.block[start..end]);
                    }
                    FragmentType::Middle | FragmentType::Last => {
                        let Some(pstart) = self.pending_start else {
                            let name = if t == FragmentType::Middle { "middle" } else { "last" };
                            let resume = Resume::Scan(self.cur);
                            self.on_damage(
                                offset,
                                resume,
                                format!("{name} fragment without a first fragment before it"),
                            )?;
                            continue;
                        };
                        self.scratch.extend_from_slice(&self.block[start..end]);
                        if t == FragmentType::Last {
                            self.pending_start = None;
                            return Ok(Some(self.deliver(pstart, Location::Scratch)));
                        }
                    }
                    FragmentType::Zero => {
                        // `next_fragment` never returns a reserved type as good.
                        debug_assert!(false, "zero type returned as a good fragment");
                    }
                },
            }
        }
    }

    fn deliver(&mut self, offset: u64, loc: Location) -> (u64, Location) {
        self.outcome.records += 1;
        self.outcome.last_valid_end = self.cur;
        (offset, loc)
    }

    /// Applies the recovery mode to damage starting at `start`.
    fn on_damage(&mut self, start: u64, resume: Resume, reason: String) -> Result<()> {
        if self.mode == WalRecoveryMode::AbsoluteConsistency {
            self.done = true;
            return Err(Error::corruption(self.file.path(), start, reason));
        }
        let next = match resume {
            Resume::Scan(from) => self.scan_for_record_start(from)?,
            Resume::At(at) => Some(at),
            Resume::Eof => None,
        };
        match next {
            None => {
                // Nothing valid follows: a torn tail, dropped in every remaining mode.
                self.outcome.torn_tail = true;
                self.outcome.dropped_bytes += self.file_size.saturating_sub(start);
                self.outcome.dropped_records_or_fragments += 1;
                self.done = true;
                Ok(())
            }
            Some(at) if self.mode == WalRecoveryMode::SkipAnyCorruptedRecords => {
                self.outcome.dropped_bytes += at - start;
                self.outcome.dropped_records_or_fragments += 1;
                self.cur = at;
                Ok(())
            }
            Some(at) => {
                self.done = true;
                Err(Error::corruption(
                    self.file.path(),
                    start,
                    format!(
                        "{reason}; a valid record follows at offset {at}, so this is damage \
                     before the tail, not a torn write"
                    ),
                ))
            }
        }
    }

    /// Loads the block holding `offset` (which must be below `file_size`).
    fn load_block(&mut self, offset: u64) -> Result<()> {
        let start = offset - offset % BLOCK_SIZE as u64;
        if self.block_start == Some(start) {
            return Ok(());
        }
        let want = (self.file_size - start).min(BLOCK_SIZE as u64) as usize;
        self.block.clear();
        self.block.resize(want, 0);
        let mut got = 0;
        while got < want {
            let n = self.file.read_at(start + got as u64, &mut self.block[got..])?;
            if n == 0 {
                break; // the file shrank since it was opened: what is left reads as truncated
            }
            got += n;
        }
        self.block.truncate(got);
        self.block_start = Some(start);
        Ok(())
    }

    /// Reads the fragment at `self.cur`, advancing past it when it is good.
    fn next_fragment(&mut self) -> Result<Fragment> {
        loop {
            let in_block = (self.cur % BLOCK_SIZE as u64) as usize;
            if in_block + HEADER_SIZE > BLOCK_SIZE {
                // Block trailer: padding, never a fragment. Its content is not checked.
                self.cur += (BLOCK_SIZE - in_block) as u64;
                continue;
            }
            if self.cur >= self.file_size {
                return Ok(Fragment::Eof);
            }
            let offset = self.cur;
            self.load_block(offset)?;
            let avail = self.block.len().saturating_sub(in_block);
            if avail == 0 {
                return Ok(Fragment::Eof);
            }
            if avail < HEADER_SIZE {
                return Ok(Fragment::Bad {
                    offset,
                    reason: format!("truncated fragment header ({avail} of {HEADER_SIZE} bytes)"),
                });
            }
            let hbytes = &self.block[in_block..in_block + HEADER_SIZE];
            let h = decode_header(hbytes);
            let start = in_block + HEADER_SIZE;
            let end = start + h.length;
            if end > BLOCK_SIZE {
                let reason = if hbytes.iter().all(|&b| b == 0) {
                    "zero-filled bytes where a fragment was expected".to_string()
                } else {
                    format!(
                        "fragment length {} overruns its block (at most {} bytes fit)",
                        h.length,
                        MAX_FRAGMENT_PAYLOAD - in_block
                    )
                };
                return Ok(Fragment::Bad { offset, reason });
            }
            if end > self.block.len() {
                return Ok(Fragment::Bad {
                    offset,
                    reason: format!(
                        "truncated fragment: {} payload bytes announced, {} present",
                        h.length,
                        self.block.len() - start
                    ),
                });
            }
            let payload = &self.block[start..end];
            if fragment_checksum(h.type_byte, payload) != h.masked_crc {
                let reason = if hbytes.iter().all(|&b| b == 0) {
                    "zero-filled bytes where a fragment was expected".to_string()
                } else {
                    "fragment checksum mismatch".to_string()
                };
                return Ok(Fragment::Bad { offset, reason });
            }
            let Some(t) = FragmentType::from_u8(h.type_byte) else {
                return Ok(Fragment::Bad {
                    offset,
                    reason: format!(
                        "unknown fragment type {} (written by a newer version?)",
                        h.type_byte
                    ),
                });
            };
            self.cur += (HEADER_SIZE + h.length) as u64;
            return Ok(Fragment::Good { offset, t, start, end });
        }
    }

    /// The offset of the first fragment at or after `from` that starts a record (`Full` or
    /// `First`) and whose checksum verifies, trying every byte offset. Verified `Middle` and
    /// `Last` fragments are stepped over: they continue a record whose start is damaged and do
    /// not show that anything was written after it.
    fn scan_for_record_start(&mut self, from: u64) -> Result<Option<u64>> {
        let mut off = from;
        while off < self.file_size {
            let in_block = (off % BLOCK_SIZE as u64) as usize;
            if in_block + HEADER_SIZE > BLOCK_SIZE {
                off += (BLOCK_SIZE - in_block) as u64;
                continue;
            }
            self.load_block(off)?;
            let block_start = off - in_block as u64;
            let blk = &self.block[..];
            let mut p = in_block;
            while p + HEADER_SIZE <= blk.len() {
                let h = decode_header(&blk[p..]);
                let end = p + HEADER_SIZE + h.length;
                // Cheap filters first: most garbage fails the type test.
                if FragmentType::from_u8(h.type_byte).is_some()
                    && end <= blk.len()
                    && fragment_checksum(h.type_byte, &blk[p + HEADER_SIZE..end]) == h.masked_crc
                {
                    if h.type_byte == FragmentType::Full as u8
                        || h.type_byte == FragmentType::First as u8
                    {
                        return Ok(Some(block_start + p as u64));
                    }
                    p = end;
                    continue;
                }
                p += 1;
            }
            off = block_start + BLOCK_SIZE as u64;
        }
        Ok(None)
    }
}

/// Reads every record of `file` in order, calling `f(offset of the record's first fragment,
/// record)`, and applying `mode` to damage. Stops at the first error from `f`.
pub(crate) fn replay_log(
    file: &Arc<dyn RandomAccessFile>,
    mode: WalRecoveryMode,
    mut f: impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<ReplayOutcome> {
    let mut reader = LogReader::new(file.clone(), mode);
    while let Some((offset, record)) = reader.read_record()? {
        f(offset, record)?;
    }
    Ok(reader.outcome())
}
