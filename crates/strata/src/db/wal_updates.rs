//! `Db::get_updates_since`: the write batches of the WAL files after a sequence number, in
//! sequence order, across archived and live WALs (RocksDB's `GetUpdatesSince`, with the
//! `rocksdb` crate's `DBWALIterator` on top).
//!
//! **Which batches.** `get_updates_since(s)` yields, as `(first sequence, batch)`, every
//! batch whose first sequence number is greater than `s` and at most the DB's last sequence
//! number when the iterator was made, each exactly as one WAL record holds it (a write
//! group's batches merged into one record come as one batch). A batch that *contains* `s`
//! without starting after it is skipped whole, as the `rocksdb` crate's iterator skips it;
//! passing what `latest_sequence_number` returned earlier gives exactly the writes made since.
//! The records that are not writes (the WAL's header and events, and two-phase commit's
//! prepare and rollback records) are not yielded; a commit yields its batch.
//!
//! **A contiguous run or an error.** The batches yielded follow each other without a gap in
//! sequence numbers. The call fails with `NotFound` when `s` is past the last sequence number,
//! or when the WALs kept no longer hold the batch after `s` (obsolete WALs are deleted unless
//! `Options::wal_ttl_seconds` / `wal_size_limit_mb` archive them, `db/wal_archive.rs`). While
//! iterating, a gap (writes made with `disable_wal`, an ingested file) or a run that ends
//! short of the last sequence number at creation is one `Err(NotFound)` item; a damaged record
//! is one `Err(Corruption)` naming the file and offset (the WAL reader in `PointInTime` mode,
//! so a torn tail is the end of that file's records). After an error the iterator is spent.
//!
//! **Batches recovery dropped.** A crash can leave whole batches in a WAL that recovery then
//! dropped (they were behind a WAL cut short, never synced, `db/recover.rs`); their sequence
//! numbers went to later writes, in later WALs. Such WALs are deleted rather than archived,
//! and as a second guard a batch in one WAL whose sequence number is at or past the first
//! sequence number of a later WAL is not this DB's: it and the rest of its WAL are skipped.
//!
//! **Values written at commit.** A record holding blob indexes (`write_blobs_at_commit`) is
//! handed out with the values read back: the blob files stay on disk while a kept WAL may
//! refer to them (`db/wal_blob_refs.rs`).
//!
//! **WALs being retired.** A flush deletes (or archives) the WALs it made obsolete after it
//! installs its table; one nobody waits for may be doing so while an iterator is made. A live
//! WAL below the oldest one kept (`WalBlobRefs::oldest_live`: those below are deleted next,
//! and the blob files they refer to may be gone already) is not read, so whether such a WAL's
//! batches are yielded does not depend on how far its deletion got: the run ends there with
//! the gap any deleted WAL leaves. An archived WAL is read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{Db, DbInner};
use crate::env::FileSystem;
use crate::error::{Error, Result};
use crate::filename::{archive_dir, parse_file_name, wal_path, FileKind};
use crate::types::FileNumber;
use crate::wal::reader::LogReader;
use crate::wal::{
    decode_txn_record, decode_wal_event, decode_wal_header, TxnRecord, WalRecoveryMode,
};
use crate::write_batch::WriteBatch;

impl Db {
    /// The write batches written after sequence number `seq_number`, oldest first, read from
    /// the WAL files (live and archived); see `db/wal_updates.rs` for exactly which. Fails
    /// with `NotFound` when `seq_number` is past the last sequence number or the WALs kept no
    /// longer reach back to it.
    pub fn get_updates_since(&self, seq_number: u64) -> Result<DBWALIterator> {
        DBWALIterator::new(&self.inner, seq_number)
    }
}

/// Iterates the write batches after a sequence number, made by [`Db::get_updates_since`].
/// Each item is `(sequence number of the batch's first record, batch)`, or one error that
/// ends the iteration.
pub struct DBWALIterator {
    fs: Arc<dyn FileSystem>,
    /// Reads the values the WAL's batches hold as blob indexes (values written at commit).
    blobs: Arc<crate::blob::BlobSource>,
    /// The WALs still to read, oldest first.
    files: std::vec::IntoIter<Source>,
    cur: Option<Current>,
    /// Batches starting at or before this are skipped.
    after: u64,
    /// The DB's last sequence number when the iterator was made: the run ends there.
    bound: u64,
    /// The last sequence number of the last batch read (yielded or skipped).
    last_seen: Option<u64>,
    /// The next item, read ahead so that `valid` can answer.
    ahead: Option<Result<(u64, WriteBatch)>>,
    /// The error that ended the iteration, for `status`.
    error: Option<Error>,
}

/// One WAL file to read.
#[derive(Debug)]
struct Source {
    number: FileNumber,
    path: PathBuf,
    /// Where the file is once archived, for a live WAL moved while the iterator runs.
    archived: Option<PathBuf>,
    /// The first sequence number of a later WAL (or past the bound): batches from it on are
    /// not this file's.
    cutoff: u64,
    /// The newest WAL: a writer may be appending to it.
    newest: bool,
}

/// The WAL being read.
struct Current {
    reader: LogReader,
    path: PathBuf,
    cutoff: u64,
    header_read: bool,
}

/// What a WAL record is, for this iterator.
enum Record {
    Batch(WriteBatch),
    /// The header, an event, a prepare or a rollback: no writes.
    Other,
}

/// Decodes a record that is not the WAL's header; errors name `path` and `offset`.
fn decode(path: &Path, offset: u64, record: &[u8]) -> Result<Record> {
    let at = |e: Error| match e {
        Error::Corruption { reason, .. } => Error::corruption(path, offset, reason),
        other => other,
    };
    let batch = match decode_txn_record(record).transpose().map_err(at)? {
        Some(TxnRecord::Commit { batch, .. }) => batch,
        Some(TxnRecord::Prepare { .. } | TxnRecord::Rollback { .. }) => return Ok(Record::Other),
        None => match decode_wal_event(record) {
            Some(event) => {
                event.map_err(at)?;
                return Ok(Record::Other);
            }
            None => record,
        },
    };
    let batch = WriteBatch::from_wal(batch.to_vec()).map_err(|e| match e {
        Error::Corruption { reason, .. } => {
            Error::corruption(path, offset, format!("bad write batch: {reason}"))
        }
        other => other,
    })?;
    Ok(Record::Batch(batch))
}

/// A WAL's first batch: its sequence number, `None` when it holds none, or the error reading
/// it gave.
fn first_sequence(fs: &dyn FileSystem, number: FileNumber, path: &Path) -> Result<Option<u64>> {
    let file = fs.open(path)?;
    let mut reader = LogReader::for_wal(file, WalRecoveryMode::PointInTime, number.0);
    let mut header = true;
    while let Some((offset, record)) = reader.read_record()? {
        if std::mem::take(&mut header) {
            continue;
        }
        if let Record::Batch(b) = decode(path, offset, record)? {
            if b.count() > 0 {
                return Ok(Some(b.sequence().0));
            }
        }
    }
    Ok(None)
}

/// What the scan at creation knows of a WAL's first batch.
enum First {
    Seq(u64),
    /// Reading up to its first batch failed: the iterator reports it if it gets there.
    Unknown,
}

impl DBWALIterator {
    fn new(inner: &DbInner, after: u64) -> Result<Self> {
        if inner.opts.manual_wal_flush && !inner.read_only {
            // The active WAL's buffered records are written: the run reaches the last
            // sequence number. A failure leaves the run short, which the iterator reports.
            let _ = super::write::wal::flush_wal(inner, false);
        }
        // Read before the files are listed: every batch up to it is in a listed file.
        let bound = inner.visible_sequence.load(Ordering::Acquire);
        if after > bound {
            return Err(Error::NotFound(format!(
                "requested sequence {after} is not yet written (the last sequence number is \
                 {bound})"
            )));
        }
        let fs = inner.fs.as_ref();
        // The archive is listed first: a WAL archived between the two listings is then seen
        // there, never missed.
        let archive = archive_dir(&inner.wal_dir);
        let mut paths: BTreeMap<FileNumber, (PathBuf, Option<PathBuf>)> = BTreeMap::new();
        if fs.is_dir(&archive) {
            for name in fs.list(&archive)? {
                if let Some(FileKind::Wal(n)) = parse_file_name(&name) {
                    paths.insert(n, (wal_path(&archive, n), None));
                }
            }
        }
        let live = super::files::find_wals(fs, &inner.dir, &inner.wal_dir)?;
        // Read after the listing: a WAL retired since is skipped too.
        let retired_below = inner.blob_logs.wal_refs.oldest_live();
        for (n, path) in live.into_iter().filter(|(n, _)| *n >= retired_below) {
            paths.entry(n).or_insert((path, Some(wal_path(&archive, n))));
        }
        let newest = paths.keys().next_back().copied();
        let mut scanned: Vec<(Source, First)> = Vec::new();
        for (number, (path, archived)) in paths {
            let first = match first_sequence(fs, number, &path) {
                Ok(Some(seq)) => First::Seq(seq),
                Ok(None) => continue, // no batch in it
                Err(_) if archived.as_ref().is_some_and(|a| fs.exists(a)) => {
                    // Archived since the listing: read it there.
                    match first_sequence(fs, number, archived.as_ref().unwrap_or(&path)) {
                        Ok(Some(seq)) => First::Seq(seq),
                        Ok(None) => continue,
                        Err(_) => First::Unknown,
                    }
                }
                Err(_) => First::Unknown,
            };
            let newest = Some(number) == newest;
            scanned.push((Source { number, path, archived, cutoff: 0, newest }, first));
        }
        // Cutoffs, newest first; a WAL whose first batch is at or past its cutoff holds no
        // batch of this DB's run (see the module documentation) and is dropped.
        let mut cutoff = bound.saturating_add(1);
        let mut kept: Vec<(Source, First)> = Vec::new();
        for (mut source, first) in scanned.into_iter().rev() {
            source.cutoff = cutoff;
            match first {
                First::Seq(seq) if seq >= cutoff => continue,
                First::Seq(seq) => cutoff = seq,
                First::Unknown => {}
            }
            kept.push((source, first));
        }
        kept.reverse();
        // Start at the newest WAL whose first batch is at or before the one after `after`.
        let start = kept.iter().rposition(|(_, f)| matches!(f, First::Seq(s) if *s <= after + 1));
        let start = match start {
            Some(i) => i,
            None if after == bound => kept.len(), // nothing to yield
            None if matches!(kept.first(), Some((_, First::Unknown))) => 0, // reports it
            None => {
                let oldest = kept.iter().find_map(|(_, f)| match f {
                    First::Seq(s) => Some(*s),
                    First::Unknown => None,
                });
                let kept_from = match oldest {
                    Some(s) => format!("the oldest batch the WAL files hold starts at {s}"),
                    None => "the WAL files hold no batch".to_string(),
                };
                return Err(Error::NotFound(format!(
                    "the updates after sequence {after} are no longer in the WAL files: \
                     {kept_from}, the last sequence number is {bound} (obsolete WALs are \
                     deleted unless wal_ttl_seconds or wal_size_limit_mb archives them)"
                )));
            }
        };
        let files: Vec<Source> = kept.into_iter().skip(start).map(|(s, _)| s).collect();
        let mut it = DBWALIterator {
            fs: inner.fs.clone(),
            blobs: inner.blobs.clone(),
            files: files.into_iter(),
            cur: None,
            after,
            bound,
            last_seen: None,
            ahead: None,
            error: None,
        };
        it.ahead = it.read_ahead();
        Ok(it)
    }

    /// Whether the iterator has a batch to yield (`next` returns it). False at the end and
    /// after an error ([`status`](Self::status) tells which).
    pub fn valid(&self) -> bool {
        matches!(self.ahead, Some(Ok(_)))
    }

    /// The error that ended the iteration, if one did (also yielded once by `next`).
    pub fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }

    /// The next item, recording an error as the end.
    fn read_ahead(&mut self) -> Option<Result<(u64, WriteBatch)>> {
        if self.error.is_some() {
            return None;
        }
        match self.next_batch() {
            Ok(item) => item.map(Ok),
            Err(e) => {
                self.error = Some(e.duplicate());
                self.cur = None;
                self.files = Vec::new().into_iter();
                Some(Err(e))
            }
        }
    }

    /// Opens the next WAL to read; `false` when none is left.
    fn open_next(&mut self) -> Result<bool> {
        let Some(source) = self.files.next() else { return Ok(false) };
        let (file, path) = match self.fs.open(&source.path) {
            Ok(f) => (f, source.path),
            Err(e) => match &source.archived {
                // A live WAL archived since the listing.
                Some(a) if self.fs.exists(a) => (self.fs.open(a)?, a.clone()),
                _ => return Err(e),
            },
        };
        let reader = LogReader::for_wal(file, WalRecoveryMode::PointInTime, source.number.0);
        let reader = if source.newest { reader.beside_live_writer() } else { reader };
        self.cur = Some(Current { reader, path, cutoff: source.cutoff, header_read: false });
        Ok(true)
    }

    fn next_batch(&mut self) -> Result<Option<(u64, WriteBatch)>> {
        loop {
            let Some(cur) = self.cur.as_mut() else {
                if self.open_next()? {
                    continue;
                }
                return self.at_end();
            };
            let Some((offset, record)) = cur.reader.read_record()? else {
                self.cur = None;
                continue;
            };
            if !cur.header_read {
                cur.header_read = true;
                decode_wal_header(record).map_err(|e| e.with_file(&cur.path))?;
                continue;
            }
            let Record::Batch(batch) = decode(&cur.path, offset, record)? else { continue };
            let count = u64::from(batch.count());
            if count == 0 {
                continue;
            }
            let first = batch.sequence().0;
            if first >= cur.cutoff {
                // Past the run's end, or batches recovery dropped (module documentation).
                self.cur = None;
                continue;
            }
            if let Some(l) = self.last_seen.filter(|&l| first <= l) {
                return Err(Error::corruption(
                    &cur.path,
                    offset,
                    format!(
                        "batch at sequence {first} does not follow the batch before it, which \
                         ended at sequence {l}"
                    ),
                ));
            }
            // Gaps matter from the sequence asked for on.
            let reached = self.last_seen.map_or(self.after, |l| l.max(self.after));
            if first > reached + 1 {
                return Err(Error::NotFound(format!(
                    "gap in sequence numbers: the batch after sequence {reached} is missing, the \
                     next batch in the WAL files starts at {first} ({} offset {offset}); writes \
                     made with disable_wal or ingested files leave such gaps",
                    cur.path.display()
                )));
            }
            self.last_seen = Some(first + count - 1);
            if first <= self.after {
                continue; // at or before the sequence asked for
            }
            // Handed out with its values (`db/blob_log.rs`): their blob files stay while a kept
            // WAL refers to them (`db/wal_blob_refs.rs`), so only a file lost or damaged fails.
            let reads = crate::blob::BlobReads { source: &*self.blobs, fill: false };
            let fetch = |_: u32, key: &[u8], index: &[u8]| {
                crate::iterator::BlobFetch::fetch(&reads, key, index).map(Some)
            };
            let batch = super::blob_log::resolve(batch, &mut { fetch }).map_err(|e| {
                Error::NotFound(format!(
                    "the batch at sequence {first} ({} offset {offset}) holds a value written at \
                     commit that can no longer be read: {e}",
                    cur.path.display()
                ))
            })?;
            return Ok(Some((first, batch)));
        }
    }

    /// The run ends: whole when it reached the last sequence number at creation.
    fn at_end(&mut self) -> Result<Option<(u64, WriteBatch)>> {
        let reached = self.last_seen.unwrap_or(self.after).max(self.after);
        if reached < self.bound {
            return Err(Error::NotFound(format!(
                "the WAL files hold batches through sequence {reached}, but the last sequence \
                 number was {} when the iterator was made: writes made with disable_wal or \
                 ingested files after that, or a WAL lost",
                self.bound
            )));
        }
        Ok(None)
    }
}

impl Iterator for DBWALIterator {
    type Item = Result<(u64, WriteBatch)>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.ahead.take()?;
        if item.is_ok() {
            self.ahead = self.read_ahead();
        }
        Some(item)
    }
}

impl std::fmt::Debug for DBWALIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DBWALIterator")
            .field("after", &self.after)
            .field("bound", &self.bound)
            .field("last_seen", &self.last_seen)
            .field("valid", &self.valid())
            .finish_non_exhaustive()
    }
}
