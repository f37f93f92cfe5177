//! Reads records back from a log file, checking every fragment, and decides what damage means
//! according to a [`WalRecoveryMode`] (see the module documentation of [`super`]).
//!
//! The file is read one 32 KiB block at a time through `RandomAccessFile::read_at`; a fragment
//! length is bounded by its block, so damaged bytes never cause a large allocation. A record
//! held in one fragment is handed out as a slice of the block buffer (no copy); only records
//! spanning blocks are assembled in a scratch buffer.

use std::sync::Arc;

use super::format::{
    decode_header, fragment_checksum, header_size_of, recyclable_checksum, FragmentType,
    BLOCK_SIZE, HEADER_SIZE, RECYCLABLE_HEADER_SIZE,
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
    /// The log is written in recyclable fragments. Its file may have held an older log, whose
    /// bytes follow the last record: a torn tail there cannot be told from them, and its bytes
    /// are not counted as dropped.
    pub recyclable: bool,
}

/// One fragment as read from the file.
enum Fragment {
    /// A fragment whose checksum verifies; its payload is `block[start..end]`; `t` is its role
    /// (`Full`, `First`, `Middle` or `Last`).
    Good { offset: u64, t: FragmentType, start: usize, end: usize },
    /// A recyclable fragment whose checksum verifies but which names another log: the bytes of
    /// the file's previous use, so this log ends here.
    OtherLog { offset: u64, log: u32 },
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
    /// The low 32 bits of the log's number when it is a WAL (recyclable fragments must name
    /// it); `None` for a log whose fragments are never recyclable (the MANIFEST).
    log: Option<u32>,
    /// Set by the first good fragment: whether the log is written in recyclable fragments.
    kind: Option<bool>,
    /// Set by the WAL's header record: zeros from a fragment boundary to the end of the file
    /// are the log's end (the writer wrote them ahead of its records, `writer.rs`).
    zeros_end_log: bool,
    /// Whether a writer may be appending to the log as it is read (`beside_live_writer`).
    live: bool,
    /// The offset of the last bad fragment read a second time (see `next_record`).
    reread_at: Option<u64>,
}

/// How long the reader waits before reading a bad fragment's block again.
const REREAD_PAUSE: std::time::Duration = std::time::Duration::from_millis(2);

impl LogReader {
    /// A reader of a log that has no number (the MANIFEST): recyclable fragments are damage.
    pub fn new(file: Arc<dyn RandomAccessFile>, mode: WalRecoveryMode) -> Self {
        Self::with_log(file, mode, None)
    }

    /// A reader of the WAL numbered `log`, written in either kind of fragment.
    pub fn for_wal(file: Arc<dyn RandomAccessFile>, mode: WalRecoveryMode, log: u64) -> Self {
        Self::with_log(file, mode, Some(log as u32))
    }

    fn with_log(file: Arc<dyn RandomAccessFile>, mode: WalRecoveryMode, log: Option<u32>) -> Self {
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
            log,
            kind: None,
            zeros_end_log: false,
            live: false,
            reread_at: None,
        }
    }

    /// This reader's log may be appended to while it is read (a read-only open beside a live
    /// writer): a bad fragment's block is read once more, after a pause, before it is judged.
    pub(crate) fn beside_live_writer(mut self) -> Self {
        self.live = true;
        self
    }

    /// The smallest header of the log's kind: fewer bytes left in a block are its trailer.
    fn min_header(&self) -> usize {
        if self.kind == Some(true) {
            RECYCLABLE_HEADER_SIZE
        } else {
            HEADER_SIZE
        }
    }

    /// The next record and the file offset of its first fragment, or `None` at the end of the
    /// log (including a dropped torn tail). Damage is an error or is skipped as the mode says;
    /// after a `Corruption` error the reader returns `None`.
    pub fn read_record(&mut self) -> Result<Option<(u64, &[u8])>> {
        let Some((offset, loc)) = self.next_record()? else { return Ok(None) };
        if self.log.is_some() && self.outcome.records == 1 {
            // A WAL's first record is its header.
            self.zeros_end_log = super::header::header_says_zeros_ahead(self.bytes(&loc));
        }
        Ok(Some((offset, self.bytes(&loc))))
    }

    fn bytes(&self, loc: &Location) -> &[u8] {
        match *loc {
            Location::Block(s, e) => &self.block[s..e],
            Location::Scratch => &self.scratch[..],
        }
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
                Fragment::Bad { offset, .. } if self.live && self.reread_at != Some(offset) => {
                    // A log still being written can be read mid-write: a new WAL's zeros
                    // before its header lands, or a write the kernel has copied only in part.
                    // Read the block once more before judging; a file at rest reads the same
                    // and is judged the same.
                    self.reread_at = Some(offset);
                    self.block_start = None;
                    std::thread::sleep(REREAD_PAUSE);
                }
                Fragment::Bad { offset, reason } => {
                    let start = self.pending_start.take().unwrap_or(offset);
                    self.on_damage(start, Resume::Scan(offset + 1), reason)?;
                }
                Fragment::OtherLog { offset, log } => {
                    // The file's previous log starts here (aligned with a fragment of ours).
                    if let Some(start) = self.pending_start.take() {
                        self.on_damage(
                            start,
                            Resume::Scan(offset + 1),
                            format!(
                                "record is cut short: a fragment of log {log} (the file's \
                                 previous use) follows at offset {offset}"
                            ),
                        )?;
                    } else {
                        self.done = true;
                    }
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
                    FragmentType::Zero
                    | FragmentType::RecyclableFull
                    | FragmentType::RecyclableFirst
                    | FragmentType::RecyclableMiddle
                    | FragmentType::RecyclableLast => {
                        // `next_fragment` returns roles only, never a reserved type.
                        debug_assert!(false, "fragment type {t:?} returned as a role");
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
        if self.kind.is_none() && self.log.is_some() && self.holds_recyclable_fragment()? {
            // Damage before any good fragment, in a file holding an older log's recyclable
            // fragments: a reused file whose first write (the WAL header) did not survive.
            self.kind = Some(true);
            self.outcome.recyclable = true;
        }
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
                // Nothing valid follows: a torn tail, dropped in every remaining mode. In a
                // recyclable log the rest may be the file's previous log: not counted.
                self.outcome.torn_tail = true;
                if self.kind != Some(true) {
                    self.outcome.dropped_bytes += self.file_size.saturating_sub(start);
                }
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

    /// Whether every byte from `offset` (in the loaded block) to the end of the file is zero.
    fn zeros_to_end(&self, offset: u64) -> Result<bool> {
        let in_block = (offset % BLOCK_SIZE as u64) as usize;
        if self.block[in_block..].iter().any(|&b| b != 0) {
            return Ok(false);
        }
        let mut pos = offset - in_block as u64 + self.block.len() as u64;
        let mut buf = vec![0u8; BLOCK_SIZE];
        while pos < self.file_size {
            let want = (self.file_size - pos).min(BLOCK_SIZE as u64) as usize;
            let n = self.file.read_at(pos, &mut buf[..want])?;
            if n == 0 {
                break; // the file shrank since it was opened
            }
            if buf[..n].iter().any(|&b| b != 0) {
                return Ok(false);
            }
            pos += n as u64;
        }
        Ok(true)
    }

    /// Reads the fragment at `self.cur`, advancing past it when it is good.
    fn next_fragment(&mut self) -> Result<Fragment> {
        loop {
            let in_block = (self.cur % BLOCK_SIZE as u64) as usize;
            if in_block + self.min_header() > BLOCK_SIZE {
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
            if self.zeros_end_log
                && self.pending_start.is_none()
                && self.block[in_block] == 0
                && self.zeros_to_end(offset)?
            {
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
            let zeros = hbytes.iter().all(|&b| b == 0);

            let header_size = header_size_of(h.type_byte);
            if in_block + header_size > BLOCK_SIZE || avail < header_size {
                let reason = if in_block + header_size > BLOCK_SIZE {
                    format!("a {header_size}-byte fragment header does not fit in its block")
                } else {
                    format!("truncated fragment header ({avail} of {header_size} bytes)")
                };
                return Ok(Fragment::Bad { offset, reason });
            }
            let start = in_block + header_size;
            let end = start + h.length;
            if end > BLOCK_SIZE {
                let reason = if zeros {
                    "zero-filled bytes where a fragment was expected".to_string()
                } else {
                    format!(
                        "fragment length {} overruns its block (at most {} bytes fit)",
                        h.length,
                        BLOCK_SIZE - start
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
            let log = (header_size == RECYCLABLE_HEADER_SIZE).then(|| {
                let b = &self.block[in_block + HEADER_SIZE..start];
                u32::from_le_bytes([b[0], b[1], b[2], b[3]])
            });
            let sum = match log {
                Some(log) => recyclable_checksum(h.type_byte, log, payload),
                None => fragment_checksum(h.type_byte, payload),
            };
            if sum != h.masked_crc {
                let reason = if zeros {
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
            if let Some(log) = log {
                match self.log {
                    None => {
                        return Ok(Fragment::Bad {
                            offset,
                            reason: format!(
                                "recyclable fragment (type {}) in a log that is not a WAL",
                                h.type_byte
                            ),
                        })
                    }
                    // In a legacy log this cannot be the file's previous use: damage.
                    Some(ours) if ours != log && self.kind != Some(false) => {
                        return Ok(Fragment::OtherLog { offset, log })
                    }
                    Some(_) => {}
                }
            }
            match self.kind {
                None => self.kind = Some(t.is_recyclable()),
                Some(k) if k != t.is_recyclable() => {
                    return Ok(Fragment::Bad {
                        offset,
                        reason: format!(
                            "fragment of type {} in a log written in {} fragments",
                            h.type_byte,
                            if k { "recyclable" } else { "legacy" }
                        ),
                    })
                }
                Some(_) => {}
            }
            self.outcome.recyclable = self.kind == Some(true);
            self.cur += (header_size + h.length) as u64;
            return Ok(Fragment::Good { offset, t: t.role(), start, end });
        }
    }

    /// Whether any verified recyclable fragment (of any log) is in the file, at any offset.
    fn holds_recyclable_fragment(&mut self) -> Result<bool> {
        let mut block_start = 0;
        while block_start < self.file_size {
            self.load_block(block_start)?;
            let blk = &self.block[..];
            let mut p = 0;
            loop {
                p = next_candidate(blk, p, RECYCLABLE_TYPES);
                if p + RECYCLABLE_HEADER_SIZE > blk.len() {
                    break;
                }
                let h = decode_header(&blk[p..]);
                let end = p + RECYCLABLE_HEADER_SIZE + h.length;
                if FragmentType::from_u8(h.type_byte).is_some_and(FragmentType::is_recyclable)
                    && end <= blk.len()
                {
                    let b = &blk[p + HEADER_SIZE..p + RECYCLABLE_HEADER_SIZE];
                    let log = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                    let payload = &blk[p + RECYCLABLE_HEADER_SIZE..end];
                    if recyclable_checksum(h.type_byte, log, payload) == h.masked_crc {
                        return Ok(true);
                    }
                }
                p += 1;
            }
            block_start += BLOCK_SIZE as u64;
        }
        Ok(false)
    }

    /// The offset of the first fragment at or after `from` that starts a record (`Full` or
    /// `First`) of this log and whose checksum verifies, trying every byte offset. Verified
    /// `Middle` and `Last` fragments are stepped over: they continue a record whose start is
    /// damaged and do not show that anything was written after it; so are fragments of
    /// another log (a reused file's previous content).
    fn scan_for_record_start(&mut self, from: u64) -> Result<Option<u64>> {
        let min_header = self.min_header();
        let mut off = from;
        while off < self.file_size {
            let in_block = (off % BLOCK_SIZE as u64) as usize;
            if in_block + min_header > BLOCK_SIZE {
                off += (BLOCK_SIZE - in_block) as u64;
                continue;
            }
            self.load_block(off)?;
            let block_start = off - in_block as u64;
            let blk = &self.block[..];
            let mut p = in_block;
            loop {
                p = next_candidate(blk, p, FRAGMENT_TYPES);
                if p + HEADER_SIZE > blk.len() {
                    break;
                }
                let h = decode_header(&blk[p..]);
                // Cheap filters first: most garbage fails the type test.
                let Some(t) = FragmentType::from_u8(h.type_byte) else {
                    p += 1;
                    continue;
                };
                let hs = header_size_of(h.type_byte);
                let end = p + hs + h.length;
                let verified = end <= blk.len()
                    && if t.is_recyclable() {
                        let b = &blk[p + HEADER_SIZE..p + hs];
                        let log = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                        recyclable_checksum(h.type_byte, log, &blk[p + hs..end]) == h.masked_crc
                            && Some(log) == self.log
                    } else {
                        fragment_checksum(h.type_byte, &blk[p + hs..end]) == h.masked_crc
                    };
                if verified {
                    let kind_matches = self.kind.is_none_or(|k| k == t.is_recyclable());
                    if kind_matches && matches!(t.role(), FragmentType::Full | FragmentType::First)
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
    f: impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<ReplayOutcome> {
    replay(LogReader::new(file.clone(), mode), f)
}

/// [`replay_log`] for the WAL numbered `log`: its fragments may be recyclable ones, and the
/// log ends where a fragment of another log (the file's previous use) starts.
pub(crate) fn replay_wal(
    file: &Arc<dyn RandomAccessFile>,
    mode: WalRecoveryMode,
    log: u64,
    f: impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<ReplayOutcome> {
    replay(LogReader::for_wal(file.clone(), mode, log), f)
}

/// [`replay_wal`], for a WAL a live writer may be appending to when `live` (see
/// [`LogReader::beside_live_writer`]).
pub(crate) fn replay_live_wal(
    file: &Arc<dyn RandomAccessFile>,
    mode: WalRecoveryMode,
    log: u64,
    live: bool,
    f: impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<ReplayOutcome> {
    let reader = LogReader::for_wal(file.clone(), mode, log);
    replay(if live { reader.beside_live_writer() } else { reader }, f)
}

fn replay(
    mut reader: LogReader,
    mut f: impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<ReplayOutcome> {
    while let Some((offset, record)) = reader.read_record()? {
        f(offset, record)?;
    }
    Ok(reader.outcome())
}

/// The type bytes of fragments (`format.rs`): every kind, and the recyclable kinds.
const FRAGMENT_TYPES: std::ops::RangeInclusive<u8> = 1..=8;
const RECYCLABLE_TYPES: std::ops::RangeInclusive<u8> = 5..=8;

/// The first offset at or after `from` in `blk` at which a fragment header with a type byte
/// in `types` could start (the type byte is at offset 6 of the header), or `blk.len()` if
/// none. The byte-by-byte scans for a fragment after damage test this first: zero fill and
/// garbage fail it at almost every offset, and one pass over the type bytes costs far less
/// than decoding a header at each.
fn next_candidate(blk: &[u8], from: usize, types: std::ops::RangeInclusive<u8>) -> usize {
    const TYPE_AT: usize = 6;
    blk.get(from + TYPE_AT..)
        .and_then(|bytes| bytes.iter().position(|b| types.contains(b)))
        .map_or(blk.len(), |i| from + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scans' type ranges are exactly the types `FragmentType::from_u8` knows.
    #[test]
    fn candidate_types_are_the_fragment_types() {
        for b in 0..=u8::MAX {
            let t = FragmentType::from_u8(b);
            assert_eq!(FRAGMENT_TYPES.contains(&b), t.is_some(), "type byte {b}");
            assert_eq!(RECYCLABLE_TYPES.contains(&b), t.is_some_and(FragmentType::is_recyclable));
        }
    }

    #[test]
    fn the_next_candidate_is_the_first_offset_whose_type_byte_fits() {
        let mut blk = vec![0u8; 64];
        assert_eq!(next_candidate(&blk, 0, FRAGMENT_TYPES), 64);
        blk[20] = 9; // no fragment type
        blk[30] = 6; // a recyclable First
        assert_eq!(next_candidate(&blk, 0, FRAGMENT_TYPES), 24);
        assert_eq!(next_candidate(&blk, 24, FRAGMENT_TYPES), 24);
        assert_eq!(next_candidate(&blk, 25, FRAGMENT_TYPES), 64);
        blk[10] = 2; // a First
        assert_eq!(next_candidate(&blk, 0, FRAGMENT_TYPES), 4);
        assert_eq!(next_candidate(&blk, 0, RECYCLABLE_TYPES), 24);
        assert_eq!(next_candidate(&blk, 60, FRAGMENT_TYPES), 64);
    }
}
