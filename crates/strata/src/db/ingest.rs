//! Ingesting external table files ([`crate::SstFileWriter`]'s) into a column family.
//!
//! Steps, and what each guarantees:
//! 1. **Validate** every file outside any lock: it opens as a table (footer, metaindex,
//!    properties, index, filter verified), says `external_file_version = 1`, and a full scan
//!    with checksums finds every entry at sequence number 0 with strictly increasing user
//!    keys. The files, in the order given, are cut into batches as RocksDB cuts them: a
//!    file that overlaps a file of the current batch starts the next one, so the files of
//!    one batch never overlap each other and a later batch is newer than an earlier one.
//! 2. **Copy** each file under a fresh table number of the DB into the family's first table
//!    path (path 0, as RocksDB places ingested files; `db/paths.rs`) (a hard link with
//!    `move_files`, falling back to a copy when linking fails), sync it, then sync that
//!    directory. Nothing refers to these files yet: a crash here leaves orphan tables, which
//!    the next open deletes (`db/obsolete.rs`).
//! 3. **Install** under the WAL lock (no write is in flight or starts): a file overlapping a
//!    memtable first makes the family flush (`allow_blocking_flush`, else `InvalidArgument`)
//!    and the step starts again. Then, holding the version set and DB state locks (no
//!    compaction is picked or installed meanwhile), each file's level and sequence number are
//!    chosen (below) and one MANIFEST edit adds every file, with `last_sequence` raised to the
//!    global seqno. The edit is the commit point: before it is synced nothing is visible,
//!    after it everything is, and a reopen replays it.
//!
//! Placement. With one batch, a file that overlaps nothing in the family (memtables, every level)
//! and that no snapshot must be kept from seeing (`snapshot_consistency` with live snapshots) keeps
//! sequence number 0 and goes to the last level. Otherwise it gets a global seqno, `last_sequence +
//! 1 + b` for batch `b` (every file of a call of several batches gets one; refused when
//! `allow_global_seqno` is false): newer than everything before, so it goes to the deepest level
//! such that no level from L0 down to it holds an overlapping file and, for a later batch, above
//! the highest level the batch before it went to (L0 when that one is L0), in leveled style; to L0
//! in universal, FIFO and tiered style (whose runs are ordered by age). A key in files of two
//! batches thus reads as the later file has it. A level a running compaction writes its output into
//! is not chosen when the file overlaps the key range of that compaction's inputs (its output files
//! span that range, so they could overlap the file there even where no input does).
//!
//! The global seqno is recorded in the file's MANIFEST record (`GlobalSeqno`,
//! `docs/format/manifest.md`); the file itself is never rewritten. Table readers opened for
//! the file present its entries at that sequence number (`sstable/reader/mod.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Cfd, DbInner};
use crate::comparator::{KeyOrder, KnownOrders};
use crate::env::{copy_file_crc32c, file_crc32c, FileSystem};
use crate::error::{Error, Result};
use crate::filename::table_path;
use crate::iterator::InternalIterator;
use crate::key::{lookup_key, make_internal_key, parse_internal_key, range_end_bound, user_key};
use crate::options::CompactionStyle;
use crate::sstable::properties::EXTERNAL_FILE_VERSION;
use crate::sstable::{ReadBlockOptions, TableReader};
use crate::types::{FileNumber, SeqNo, ValueType};
use crate::version::edit::{FileMetaData, VersionEdit};
use crate::version::levels::Version;

/// How [`crate::Db::ingest_external_file_opts`] ingests (RocksDB's
/// `IngestExternalFileOptions`, with its defaults).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IngestExternalFileOptions {
    /// Hard-link the files into the DB (falling back to a copy when linking fails) and
    /// remove the originals after a successful ingestion, instead of copying them. Default
    /// false: the sources are left untouched.
    pub move_files: bool,
    /// Snapshots taken before the ingestion do not see the ingested data (the files get a
    /// global seqno whenever a snapshot is live). Default true.
    pub snapshot_consistency: bool,
    /// Allow giving files a global sequence number; without it, a file that overlaps
    /// existing data (or needs one for snapshots) is refused. Default true.
    pub allow_global_seqno: bool,
    /// Flush the memtable when a file overlaps it (the ingestion waits for the flush);
    /// without it such an ingestion is refused. Default true.
    pub allow_blocking_flush: bool,
    /// Put the files below all existing data (RocksDB's `ingest_behind`). Not supported:
    /// `true` is refused with `NotSupported`. Default false.
    pub ingest_behind: bool,
    /// Write the global seqno into the ingested file. Strata always keeps it in the
    /// MANIFEST instead (the file is never rewritten); `true` is refused with
    /// `NotSupported`. Default false (as RocksDB's current default).
    pub write_global_seqno: bool,
}

impl Default for IngestExternalFileOptions {
    fn default() -> Self {
        IngestExternalFileOptions {
            move_files: false,
            snapshot_consistency: true,
            allow_global_seqno: true,
            allow_blocking_flush: true,
            ingest_behind: false,
            write_global_seqno: false,
        }
    }
}

/// The `rocksdb` crate's setters (each field documents its meaning).
impl IngestExternalFileOptions {
    /// `move_files`.
    pub fn set_move_files(&mut self, v: bool) {
        self.move_files = v;
    }

    /// `snapshot_consistency`.
    pub fn set_snapshot_consistency(&mut self, v: bool) {
        self.snapshot_consistency = v;
    }

    /// `allow_global_seqno`.
    pub fn set_allow_global_seqno(&mut self, v: bool) {
        self.allow_global_seqno = v;
    }

    /// `allow_blocking_flush`.
    pub fn set_allow_blocking_flush(&mut self, v: bool) {
        self.allow_blocking_flush = v;
    }

    /// `ingest_behind` (an ingestion with it is refused with `NotSupported`).
    pub fn set_ingest_behind(&mut self, v: bool) {
        self.ingest_behind = v;
    }
}

/// One validated external file.
struct Candidate {
    source: PathBuf,
    /// Smallest user key (inclusive).
    lo: Vec<u8>,
    /// Smallest and largest internal keys as stored (the largest may be an exclusive range
    /// end bound).
    smallest: Vec<u8>,
    largest: Vec<u8>,
    file_size: u64,
    num_entries: u64,
    num_deletions: u64,
    /// The order of its keys (the family's).
    order: KeyOrder,
}

impl Candidate {
    fn overlaps(&self, lo: &[u8], hi: &[u8]) -> bool {
        !self.order.after_largest(lo, &self.largest) && !self.order.after_largest(&self.lo, hi)
    }
}

/// Where a copied file is going.
struct Placed {
    number: FileNumber,
    linked: bool,
    /// The CRC32C of the file as placed (`Options::file_checksums`).
    checksum: Option<u32>,
}

/// Ingests `paths` into family `cfd` (see the module doc).
pub(crate) fn ingest(
    inner: &DbInner,
    cfd: &Arc<Cfd>,
    paths: &[PathBuf],
    opts: &IngestExternalFileOptions,
) -> Result<()> {
    if opts.ingest_behind {
        return Err(Error::NotSupported(
            "ingest_external_file: ingest_behind is not supported".to_string(),
        ));
    }
    if opts.write_global_seqno {
        return Err(Error::NotSupported(
            "ingest_external_file: write_global_seqno is not supported (the global sequence \
             number is kept in the MANIFEST)"
                .to_string(),
        ));
    }
    if paths.is_empty() {
        return Err(Error::InvalidArgument("ingest_external_file: no files given".to_string()));
    }
    let fs = inner.fs.as_ref();
    let order = &cfd.opts.comparator;
    let files = paths.iter().map(|p| validate(fs, p, order)).collect::<Result<Vec<_>>>()?;
    let batches = batches(&files);
    if batches.len() > 1 && !opts.allow_global_seqno {
        return Err(Error::InvalidArgument(format!(
            "ingest_external_file: files {} and {} overlap, which needs global sequence numbers, \
             and allow_global_seqno is false",
            files[batches[1] - 1].source.display(),
            files[batches[1]].source.display()
        )));
    }
    let mut placed = Vec::with_capacity(files.len());
    let dir = cfd.table_dir(0, &inner.dir);
    let copied = copy_in(inner, dir, &files, opts.move_files, cfd.opts.file_checksums, &mut placed);
    let installed = copied.and_then(|()| install(inner, cfd, &files, &placed, &batches, opts));
    if let Err(e) = installed {
        for p in &placed {
            let _ = fs.remove(&table_path(dir, p.number));
        }
        return Err(e);
    }
    if opts.move_files {
        for (f, p) in files.iter().zip(&placed) {
            if p.linked {
                let _ = fs.remove(&f.source);
            }
        }
    }
    Ok(())
}

/// Where each batch starts in `files` (their order kept): a file overlapping a file of the
/// current batch starts the next.
fn batches(files: &[Candidate]) -> Vec<usize> {
    let mut starts = vec![0];
    let mut start = 0;
    for (i, f) in files.iter().enumerate().skip(1) {
        if files[start..i].iter().any(|g| f.overlaps(&g.lo, &g.largest)) {
            starts.push(i);
            start = i;
        }
    }
    starts
}

/// Opens and scans one external file (step 1) for a family in `order`.
fn validate(fs: &dyn FileSystem, path: &Path, order: &KeyOrder) -> Result<Candidate> {
    let bad = |reason: String| {
        Error::InvalidArgument(format!("ingest_external_file: {}: {reason}", path.display()))
    };
    let file = fs.open(path)?;
    let file_size = file.len();
    let reader = Arc::new(TableReader::open_in(file, 0, None, &KnownOrders::of(order))?);
    if reader.order() != order {
        return Err(bad(format!(
            "its keys are in comparator {:?}'s order, the column family's in {:?}'s",
            reader.order().name(),
            order.name()
        )));
    }
    let props = reader.properties();
    if props.external_file_version != EXTERNAL_FILE_VERSION {
        return Err(bad(format!(
            "not an external file written by SstFileWriter (external_file_version {}, \
             expected {EXTERNAL_FILE_VERSION})",
            props.external_file_version
        )));
    }
    let ro = ReadBlockOptions { fill_cache: false, ..ReadBlockOptions::default() };
    let mut it = reader.iter(ro);
    it.seek_to_first();
    let (mut smallest, mut largest) = (Vec::new(), Vec::new());
    let (mut num_entries, mut num_deletions) = (0u64, 0u64);
    while it.valid() {
        let k = it.key();
        let Some(p) = parse_internal_key(k) else {
            return Err(Error::corruption(path, 0, format!("entry {num_entries}: bad key {k:?}")));
        };
        if p.seq != SeqNo::ZERO {
            return Err(bad(format!(
                "entry {:?} has sequence number {} (external files hold only 0)",
                p.user_key, p.seq.0
            )));
        }
        if !largest.is_empty() && !order.lt(user_key(&largest), p.user_key) {
            return Err(bad(format!(
                "key {:?} does not sort after the previous key {:?}",
                p.user_key,
                user_key(&largest)
            )));
        }
        if p.value_type == ValueType::BlobIndex {
            return Err(bad(format!(
                "entry {:?} is a blob index (external files hold their values; blob files \
                 belong to the DB that wrote them)",
                p.user_key
            )));
        }
        if p.value_type == ValueType::Entity {
            if let Err(e) = crate::wide_columns::decode(it.value()) {
                return Err(bad(format!("entry {:?}: {e}", p.user_key)));
            }
        }
        if matches!(p.value_type, ValueType::Deletion | ValueType::SingleDeletion) {
            num_deletions += 1;
        }
        if smallest.is_empty() {
            smallest = k.to_vec();
        }
        largest.clear();
        largest.extend_from_slice(k);
        num_entries += 1;
        it.next();
    }
    it.status()?;
    for t in reader.range_tombstones() {
        if t.seq != SeqNo::ZERO {
            return Err(bad(format!(
                "range deletion [{:?}, {:?}) has sequence number {}",
                t.start, t.end, t.seq.0
            )));
        }
        let lo = make_internal_key(&t.start, SeqNo::ZERO, ValueType::RangeDeletion);
        if smallest.is_empty() || order.compare_internal(&lo, &smallest).is_lt() {
            smallest = lo;
        }
        let hi = range_end_bound(&t.end);
        if largest.is_empty() || order.compare_internal(&hi, &largest).is_gt() {
            largest = hi;
        }
    }
    if smallest.is_empty() {
        return Err(bad("the file holds no entries".to_string()));
    }
    Ok(Candidate {
        source: path.to_path_buf(),
        lo: user_key(&smallest).to_vec(),
        smallest,
        largest,
        file_size,
        num_entries,
        num_deletions,
        order: order.clone(),
    })
}

/// Links or copies every file under a new table number into `dir`, syncs them and the
/// directory (step 2). `placed` receives each file made, so the caller can remove them on
/// failure.
fn copy_in(
    inner: &DbInner,
    dir: &Path,
    files: &[Candidate],
    move_files: bool,
    checksum: bool,
    placed: &mut Vec<Placed>,
) -> Result<()> {
    let fs = inner.fs.as_ref();
    for f in files {
        let number = inner.new_file_number();
        let dst = table_path(dir, number);
        let linked = move_files && fs.link(&f.source, &dst).is_ok();
        placed.push(Placed { number, linked, checksum: None });
        let crc = if linked {
            fs.sync_file(&dst)?;
            // A linked file is read only when its checksum is recorded.
            if checksum {
                Some(file_crc32c(fs, &dst)?.1)
            } else {
                None
            }
        } else {
            // A copy's checksum comes with the copy's one read.
            checksum.then_some(copy_file_crc32c(fs, &f.source, &dst)?.1)
        };
        if let Some(p) = placed.last_mut() {
            p.checksum = crc;
        }
        crate::kill_point!("ingest.copy");
    }
    fs.sync_dir(dir)
}

/// Whether a memtable of the family holds a key (or range tombstone) in `f`'s range.
fn overlaps_memtables(sv: &super::SuperVersion, f: &Candidate) -> bool {
    std::iter::once(&sv.mem).chain(&sv.imm).any(|m| {
        if m.is_empty() {
            return false;
        }
        let mut it = m.iter();
        it.seek(&lookup_key(&f.lo, SeqNo::MAX));
        if it.valid() && !f.order.after_largest(user_key(it.key()), &f.largest) {
            return true;
        }
        m.range_tombstones().iter().any(|t| f.overlaps(&t.start, &range_end_bound(&t.end)))
    })
}

fn overlaps_level(version: &Version, level: usize, f: &Candidate) -> bool {
    version.levels[level].iter().any(|t| f.overlaps(user_key(&t.smallest), &t.largest))
}

/// The installing step (3), retried after a flush the files made necessary.
fn install(
    inner: &DbInner,
    cfd: &Arc<Cfd>,
    files: &[Candidate],
    placed: &[Placed],
    batch_starts: &[usize],
    opts: &IngestExternalFileOptions,
) -> Result<()> {
    const MAX_FLUSHES: usize = 8;
    for _ in 0..MAX_FLUSHES {
        let mut wal = inner.wal.lock();
        if let Some(e) = inner.bg_error() {
            return Err(e);
        }
        super::write::drain_pipeline(inner);
        let sv = cfd.current_super_version();
        if let Some(f) = files.iter().find(|f| overlaps_memtables(&sv, f)) {
            if !opts.allow_blocking_flush {
                return Err(Error::InvalidArgument(format!(
                    "ingest_external_file: {} overlaps the memtable and allow_blocking_flush \
                     is false",
                    f.source.display()
                )));
            }
            drop(wal);
            super::flush::flush_and_wait(inner, cfd)?;
            continue;
        }
        let mut versions = inner.versions.lock();
        let st = inner.state.lock();
        if cfd.dropped.load(std::sync::atomic::Ordering::Acquire) {
            return Err(Error::ColumnFamilyDropped(cfd.name.clone()));
        }
        let version = cfd.current_super_version().version.clone();
        let next = SeqNo(wal.last_sequence.0 + 1);
        let snapshots_live = opts.snapshot_consistency && inner.snapshots.count() > 0;
        let writing: Vec<&super::CompactionOutput> =
            st.compaction_outputs.iter().filter(|o| o.cf == cfd.id).collect();
        let mut edit = VersionEdit { column_family: cfd.id, ..VersionEdit::default() };
        let mut global = SeqNo::ZERO;
        let data_time = super::info_log::now_micros() / 1_000_000;
        let several = batch_starts.len() > 1;
        // The highest level (smallest number) the batch before went to.
        let mut above: Option<usize> = None;
        let mut batch_top: Option<usize> = None;
        for (i, (f, p)) in files.iter().zip(placed).enumerate() {
            let b = batch_starts.partition_point(|&s| s <= i) - 1;
            if i > 0 && batch_starts[b] == i {
                above = batch_top.take();
            }
            let next = SeqNo(next.0 + b as u64);
            // A running compaction writes output files anywhere in its inputs' key range at
            // its output level, even where no input file overlaps this file: such a level
            // would end up with overlapping files. L0 allows overlap.
            let free = |level: usize| {
                level == 0
                    || !writing
                        .iter()
                        .any(|o| o.level == level && f.overlaps(user_key(&o.smallest), &o.largest))
            };
            let last = version.levels.len() - 1;
            let overlaps_any = (0..=last).any(|l| overlaps_level(&version, l, f));
            let (level, seq) = if !several && !overlaps_any && !snapshots_live && free(last) {
                (last, SeqNo::ZERO)
            } else {
                if !opts.allow_global_seqno {
                    return Err(Error::InvalidArgument(format!(
                        "ingest_external_file: {} needs a global sequence number ({}) and \
                         allow_global_seqno is false",
                        f.source.display(),
                        if overlaps_any {
                            "it overlaps existing data"
                        } else if snapshots_live {
                            "snapshots are live"
                        } else {
                            "a compaction is writing its key range"
                        }
                    )));
                }
                let mut level = 0;
                if cfd.opts.compaction_style == CompactionStyle::Leveled {
                    // Below nothing newer: above the batch before (which it overlaps).
                    let lowest = above.map_or(last, |a| a.saturating_sub(1));
                    for l in 0..=lowest {
                        if overlaps_level(&version, l, f) {
                            break;
                        }
                        if free(l) {
                            level = l;
                        }
                    }
                }
                (level, next)
            };
            batch_top = Some(batch_top.map_or(level, |t| t.min(level)));
            if seq != SeqNo::ZERO {
                global = seq;
            }
            let remap = |k: &[u8]| match parse_internal_key(k) {
                Some(pk) if seq != SeqNo::ZERO && !crate::key::is_exclusive_bound(k) => {
                    make_internal_key(pk.user_key, seq, pk.value_type)
                }
                _ => k.to_vec(),
            };
            edit.new_files.push((
                level,
                FileMetaData {
                    number: p.number,
                    file_size: f.file_size,
                    smallest: remap(&f.smallest),
                    largest: remap(&f.largest),
                    smallest_seqno: seq,
                    largest_seqno: seq,
                    num_entries: f.num_entries,
                    num_deletions: f.num_deletions,
                    data_time,
                    global_seqno: seq,
                    // Ingested files go to the family's first table path (`copy_in`).
                    path_id: 0,
                    blob_refs: Vec::new(),
                    file_checksum: p.checksum,
                },
            ));
        }
        if global != SeqNo::ZERO {
            edit.last_sequence = Some(global);
        }
        crate::kill_point!("ingest.install");
        let new_version = versions.log_and_apply(&mut edit, &cfd.layout());
        let new_version = match new_version {
            Ok(v) => v,
            Err(e) => {
                drop(st);
                let mut st = inner.state.lock();
                inner.set_bg_error(&mut st, &e);
                return Err(e);
            }
        };
        if let (Some(cs), Some(v)) = (st.cfs.get(&cfd.id), new_version) {
            cfd.install_super_version(cs, v);
        }
        if global != SeqNo::ZERO {
            wal.last_sequence = global;
            inner.visible_sequence.store(global.0, std::sync::atomic::Ordering::Release);
        }
        inner.bg_cv.notify_all();
        inner.info_log.log(&format!(
            "[{}] Ingested {} external file(s): {}",
            cfd.name,
            edit.new_files.len(),
            edit.new_files
                .iter()
                .map(|(l, f)| format!("#{} at L{l} seqno {}", f.number.0, f.global_seqno.0))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        return Ok(());
    }
    Err(Error::InvalidArgument(format!(
        "ingest_external_file: the memtable kept overlapping the files after {MAX_FLUSHES} \
         flushes (concurrent writes into their range); try again"
    )))
}
