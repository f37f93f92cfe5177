//! Recovery at open: CURRENT -> MANIFEST -> version set, then WAL replay.
//!
//! **The MANIFEST.** CURRENT names the MANIFEST; its records are replayed into the version
//! set (`version::set`). Without CURRENT, a directory holding tables or WALs is refused, and a
//! lone MANIFEST is deleted only when its bytes are exactly what an interrupted creation writes
//! (`VersionSet::is_interrupted_creation`); anything else makes the open refuse, naming the
//! file. Every table the MANIFEST names must exist.
//!
//! **The WAL header chain.** Every WAL at or after the MANIFEST's log number is replayed in
//! number order. Each WAL's first record names the WAL that was active before it; a WAL whose
//! predecessor is at or after the log number must follow that predecessor directly, else a WAL
//! holding unflushed writes is missing and the open fails with `Corruption`.
//!
//! **Damage rules** (`docs/format/wal.md`):
//! - a torn tail (a record cut short, or zeros to the end) ends the replay in the default
//!   modes; a complete record that fails its checksum with bytes after it is damage, not a
//!   torn write (the tail rule shared with the MANIFEST, `wal/tail.rs`), and fails the open;
//! - once a WAL ended early (a torn tail), a later WAL holding write batches is either a
//!   hole or writes that outran an unsynced WAL. A WAL of format version 1 was synced whole
//!   before the next WAL started, so it is a hole: `Corruption`. A version-2 WAL may be left
//!   unsynced when the next starts; every synced write first syncs the WALs before its own,
//!   and the next write group records that in a "synced" event (`db/write/wal.rs`). So when no
//!   later WAL holds a "synced" event covering the short WAL, its later writes were never
//!   synced: power loss may drop them, and recovery must, to keep the recovered writes a
//!   prefix. With such an event the short WAL was durable whole: damage, `Corruption`;
//! - a version-2 WAL that stopped taking writes ends with its "closed" event. One followed by
//!   later WALs that lacks it, with no "synced" event covering it, may have been cut by power
//!   loss at a record boundary: it counts as ended early (the rule above). A WAL whose header
//!   was lost takes its successor's version;
//! - `SkipAnyCorruptedRecords` salvages every intact record; `AbsoluteConsistency` refuses any
//!   damage.
//!
//! **Where replayed writes go.** Memtables filled by the replay are written as L0 tables,
//! unless `avoid_flush_during_recovery` keeps them in memory (their WALs stay until a
//! background flush); a WAL that ended in damage forces the tables, since keeping it would
//! leave a hole behind the next WAL. A memtable kept in memory ends only where a WAL ends, so
//! that no WAL is ever part in a table and part in memory (the next open replays a WAL whole).

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::flush::{write_level0_table, FlushEnv};
use crate::comparator::KnownOrders;
use crate::env::FileSystem;
use crate::error::{Error, Result};
use crate::filename::{current_path, FileKind};
use crate::memtable::MemTable;
use crate::options::Options;
use crate::sstable::TableOptions;
use crate::types::{FileNumber, SeqNo};
use crate::version::set::{FamilyLayout, VersionSet};
use crate::wal::{
    decode_txn_record, decode_wal_event, decode_wal_header, replay_live_wal, replay_wal,
    tail_is_interrupted_append, TailRule, TxnRecord, WalEvent, WalRecoveryMode,
};
use crate::write_batch::WriteBatch;

/// Reads (or, for a new DB, creates) the MANIFEST and checks that its tables exist, each in
/// its table directory (`layout_of(name)`: the level count and table paths of family `name`;
/// a family the open does not name has no known paths, and its tables are not checked: the
/// open refuses it). `kinds` are the DB files found in `dir`; families' key orders are found
/// in `orders` (a new DB's `default` family gets `opts`' order).
pub(crate) fn recover_version_set(
    opts: &Options,
    layout_of: &dyn Fn(&str) -> FamilyLayout,
    orders: &KnownOrders,
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    kinds: &[FileKind],
) -> Result<VersionSet> {
    let versions = if fs.exists(&current_path(dir)) {
        if opts.error_if_exists {
            return Err(Error::InvalidArgument(format!("{} already exists", dir.display())));
        }
        VersionSet::recover(fs.clone(), dir, layout_of, orders)?
    } else {
        if !opts.create_if_missing {
            return Err(Error::InvalidArgument(format!(
                "{} holds no DB and create_if_missing is false",
                dir.display()
            )));
        }
        // A MANIFEST without CURRENT, WAL or table is a creation that crashed before CURRENT
        // was installed (the first WAL is created after it): it holds no data, start afresh.
        if kinds.iter().any(|k| matches!(k, FileKind::Table(_) | FileKind::Wal(_))) {
            return Err(Error::corruption(
                current_path(dir),
                0,
                "CURRENT is missing but the directory holds DB files",
            ));
        }
        // Deleting a file the engine did not prove it created is never right: a MANIFEST
        // that is not exactly an interrupted creation's makes the open refuse.
        for k in kinds {
            if let FileKind::Manifest(n) = *k {
                if !VersionSet::is_interrupted_creation(fs, dir, n, &opts.comparator)? {
                    return Err(Error::corruption(
                        dir.join(crate::filename::manifest_name(n)),
                        0,
                        "CURRENT is missing and this MANIFEST is not what an interrupted \
                         creation leaves; restore CURRENT (or move the file away) to open",
                    ));
                }
            }
        }
        let layout = FamilyLayout {
            num_levels: opts.num_levels,
            paths: layout_of(crate::column_family::DEFAULT_COLUMN_FAMILY_NAME).paths,
        };
        let mut vs =
            VersionSet::new(fs.clone(), dir, &layout, opts.comparator.clone(), orders.clone());
        vs.write_new_manifest()?;
        vs
    };

    for k in kinds {
        match *k {
            FileKind::Wal(n)
            | FileKind::Table(n)
            | FileKind::Blob(n)
            | FileKind::Manifest(n)
            | FileKind::Temp(n)
            | FileKind::Options(n)
            | FileKind::OptionsTemp(n) => {
                versions.mark_file_number_used(n);
            }
            FileKind::Current | FileKind::Identity | FileKind::Lock => {}
        }
    }

    // Every table the MANIFEST names must exist, in its directory.
    let mut listed: HashMap<PathBuf, HashSet<FileNumber>> = HashMap::new();
    listed.insert(
        dir.to_path_buf(),
        kinds
            .iter()
            .filter_map(|k| match *k {
                FileKind::Table(n) => Some(n),
                _ => None,
            })
            .collect(),
    );
    for f in versions.families().values().flat_map(|fam| fam.current.files()).map(|(_, f)| f) {
        let Some(d) = f.dir() else { continue };
        let present = match listed.entry(d.to_path_buf()) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                e.insert(super::paths::tables_in(fs.as_ref(), d)?.into_iter().collect())
            }
        };
        if !present.contains(&f.number) {
            let reason = match f.path_id {
                0 => "table named by the MANIFEST is missing".to_string(),
                p => format!("table named by the MANIFEST is missing (its table path id is {p})"),
            };
            return Err(Error::corruption(f.path_in(dir), 0, reason));
        }
    }
    // And every blob file, in the DB directory.
    let blobs: HashSet<FileNumber> = kinds
        .iter()
        .filter_map(|k| match *k {
            FileKind::Blob(n) => Some(n),
            _ => None,
        })
        .collect();
    for b in versions.families().values().flat_map(|fam| fam.current.blobs().numbers()) {
        if !blobs.contains(&b) {
            return Err(Error::corruption(
                crate::filename::blob_path(dir, b),
                0,
                "blob file named by the MANIFEST is missing",
            ));
        }
    }

    Ok(versions)
}

/// What the WAL replay produced for one column family.
#[derive(Default)]
pub(crate) struct ReplayedFamily {
    /// Tables written from replayed memtables (L0).
    pub new_files: Vec<crate::version::edit::FileMetaData>,
    /// Blob files those tables refer to.
    pub blob_files: Vec<crate::version::edit::BlobFileAddition>,
    /// With `avoid_flush_during_recovery`: memtables kept in memory, oldest first, each with
    /// the WAL its first record came from (that WAL must outlive its flush).
    pub recovered: Vec<(Arc<MemTable>, FileNumber)>,
}

/// What the WAL replay produced.
pub(crate) struct Replayed {
    /// Per live family (every one has an entry).
    pub families: BTreeMap<u32, ReplayedFamily>,
    /// The last sequence number seen.
    pub last_seq: SeqNo,
    /// For the info LOG: the WALs replayed, the records applied and the damaged bytes dropped.
    pub wals: Vec<FileNumber>,
    pub records: u64,
    pub dropped_bytes: u64,
    /// Write batches of WALs after one that ended early, dropped as never synced.
    pub unsynced_dropped: u64,
    /// The WALs those batches are in: nothing of them was recovered, so they are never
    /// archived (`db/wal_archive.rs`), where `Db::get_updates_since` would read them.
    pub unsynced_wals: Vec<FileNumber>,
    /// Transactions prepared and neither committed nor rolled back: xid -> prepare record.
    pub prepared: BTreeMap<Vec<u8>, Vec<u8>>,
    /// Where the replay ended at a value written at commit it could not read, and why.
    pub blob_cut: Option<String>,
}

/// One family's replay state: its options' table settings, its memtable being filled.
struct FamilyReplay<'a> {
    cf_id: u32,
    opts: &'a Options,
    /// The DB's statistics (the blob files a replayed memtable's flush writes count there).
    statistics: Option<Arc<crate::statistics::Statistics>>,
    /// Where its tables are written: its table path 0.
    table_dir: PathBuf,
    /// The DB directory, where blob files go.
    db_dir: PathBuf,
    /// Hands out file numbers (the version set's counter).
    counter: Arc<std::sync::atomic::AtomicU64>,
    table_options: TableOptions,
    /// WALs below this hold nothing of the family that is not in its tables.
    log_number: FileNumber,
    mem: Arc<MemTable>,
    mem_first_wal: FileNumber,
    out: ReplayedFamily,
}

impl FamilyReplay<'_> {
    /// Writes `mem` as table `number` (and its large values to blob files, as a flush does),
    /// recording what it wrote.
    fn write_table(
        &mut self,
        fs: &dyn FileSystem,
        mem: &Arc<MemTable>,
        number: FileNumber,
    ) -> Result<()> {
        let counter = self.counter.clone();
        let new_number =
            move || FileNumber(counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
        let config =
            super::blob_files::config(self.opts, self.cf_id, None, self.statistics.clone());
        let blobs = config.min_blob_size.is_some().then_some(super::flush::FlushBlobs {
            config,
            dir: &self.db_dir,
            new_file_number: &new_number,
        });
        let env = FlushEnv { blobs, ..self.flush_env(fs) };
        if let Some((meta, _, added, _)) =
            write_level0_table(&env, std::slice::from_ref(mem), number)?
        {
            self.out.new_files.push(meta);
            self.out.blob_files.extend(added);
        }
        Ok(())
    }

    fn flush_env<'b>(&'b self, fs: &'b dyn FileSystem) -> FlushEnv<'b> {
        FlushEnv {
            fs,
            dir: &self.table_dir,
            table_options: &self.table_options,
            snapshots: &[],
            merge_operator: self.opts.merge_operator.as_deref(),
            filter: self.opts.compaction_filter_factory.as_deref().map(|f| {
                (
                    f,
                    super::flush::flush_filter_context(
                        self.cf_id,
                        crate::compaction_filter::TableFileCreationReason::Recovery,
                    ),
                )
            }),
            // Set by `write_table`.
            blobs: None,
            // Replayed memtables hold values: the replay resolves blob indexes
            // (`db/blob_log.rs`).
            blob_fetch: None,
        }
    }
}

/// Replays the WALs at or after the MANIFEST's log number (see the module documentation),
/// each record into its column family's memtable (`family_opts`: the options of every live
/// family; records of a family dropped since, and a family's records in WALs its tables
/// already cover, are skipped). With `read_only`, every replayed memtable is kept in memory
/// and nothing is written.
pub(crate) fn replay_wals(
    opts: &Options,
    family_opts: &BTreeMap<u32, Options>,
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    wal_files: &std::collections::BTreeMap<FileNumber, std::path::PathBuf>,
    versions: &VersionSet,
    read_only: bool,
) -> Result<Replayed> {
    // Replayed memtables count in the DB's write buffer manager like any other; one
    // replaced when full is immutable from then on.
    let new_mem = |o: &Options| super::cf::new_memtable(o, opts, None);
    // A family's memtable taken for a table or to keep, replaced by one whose filter it sizes.
    let take_mem = |f: &mut FamilyReplay<'_>| {
        let next = super::cf::new_memtable(f.opts, opts, Some(&*f.mem));
        std::mem::replace(&mut f.mem, next)
    };
    let mut fams: BTreeMap<u32, FamilyReplay<'_>> = family_opts
        .iter()
        .map(|(&id, o)| {
            let table_dir = versions
                .current(id)
                .and_then(|v| v.paths().first_dir())
                .map_or_else(|| dir.to_path_buf(), |d| d.to_path_buf());
            let f = FamilyReplay {
                cf_id: id,
                opts: o,
                statistics: opts.statistics.clone(),
                table_dir,
                db_dir: dir.to_path_buf(),
                counter: versions.file_counter(),
                table_options: o.table_options_for_level(0),
                log_number: versions.family_log_number(id),
                mem: new_mem(o),
                mem_first_wal: FileNumber(0),
                out: ReplayedFamily::default(),
            };
            (id, f)
        })
        .collect();
    let max_cf = versions.max_column_family();
    let mut last_seq = versions.last_sequence();
    let wals: Vec<FileNumber> =
        wal_files.keys().copied().filter(|&n| n >= versions.log_number()).collect();
    // The WAL the MANIFEST's log number names always exists once a DB has been opened: it is
    // created (and its directory synced) before any edit names it, and only older WALs are
    // deleted. Missing, its writes would be lost silently.
    let needed = versions.log_number();
    if needed.0 > 0 && !wal_files.contains_key(&needed) {
        return Err(Error::corruption(
            crate::filename::wal_path(dir, needed),
            0,
            format!(
                "WAL {needed}, which the MANIFEST says holds unflushed writes, is missing (looked \
                 in the DB directory and the WAL directory); if the DB was last opened with \
                 another wal_dir, open it with that one"
            ),
        ));
    }
    let mut wal_damage_seen = false;
    let (mut records, mut dropped_bytes) = (0u64, 0u64);
    // The WAL that ended early, where, and whether later WALs may have outrun it.
    let mut stop_at: Option<(FileNumber, u64, bool)> = None;
    let mut unsynced_dropped = 0u64;
    let mut unsynced_wals = Vec::new();
    let log_number = versions.log_number();
    let mut previous_wal: Option<FileNumber> = None;
    let mut prepared: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    // Memtables kept in memory (flushed later, one at a time) are cut only where a WAL ends:
    // the flush of one cut inside WAL w would name w as the first WAL still needed, and the
    // next open would replay w whole, over the table holding its first part (a merge operand
    // applied twice). A WAL holds at most one write-time memtable per family, so a kept
    // memtable is no larger than the write-time `write_buffer_size`.
    let keep_split_at_wal_end = opts.avoid_flush_during_recovery || read_only;
    // Values written at commit are read back from their blob files (`db/blob_log.rs`).
    let mut blob_reader = super::blob_log::LogReader::new(fs.as_ref(), dir);
    let mut blob_refs_seen = false;
    let mut blob_cut_reason: Option<String> = None;
    for &n in &wals {
        let path = wal_files[&n].clone();
        let file = fs.open(&path)?;
        if let Some((bad, offset, may_outrun)) = stop_at {
            // An earlier WAL ended early. Its later WALs' writes came after the lost ones.
            let (mut batches, mut synced_event) = (0u64, None);
            let mut is_header = true;
            replay_wal(&file, WalRecoveryMode::SkipAnyCorruptedRecords, n.0, |_, record| {
                if std::mem::take(&mut is_header) {
                    return Ok(());
                }
                if decode_txn_record(record).is_some() {
                    batches += 1; // a transaction's record counts as a write
                    return Ok(());
                }
                match decode_wal_event(record) {
                    Some(Ok(WalEvent::SyncedThrough(m))) if m >= bad => synced_event = Some(m),
                    Some(_) => {}
                    None => batches += 1,
                }
                Ok(())
            })?;
            if batches == 0 {
                continue;
            }
            if !may_outrun {
                // Its writer synced it whole before starting the next WAL: a hole.
                return Err(Error::corruption(
                    wal_files[&bad].clone(),
                    offset,
                    format!("WAL is damaged here but the later WAL {n} holds records"),
                ));
            }
            if let Some(m) = synced_event {
                return Err(Error::corruption(
                    wal_files[&bad].clone(),
                    offset,
                    format!(
                        "WAL ends here, but the later WAL {n} records that every WAL through \
                         {m} was synced whole: damage, not a lost unsynced tail"
                    ),
                ));
            }
            // Never synced (a synced write syncs the WALs before its own, and the next
            // write records that): power loss may drop them, and must, to keep a prefix.
            unsynced_dropped += batches;
            unsynced_wals.push(n);
            continue;
        }
        let mut is_header = true;
        // From the header; for a WAL whose header was lost (it was never synced), from the
        // next WAL's (below).
        let mut may_outrun: Option<bool> = None;
        let mut ends_closed = false;
        // Where a record's value written at commit could not be read: the replay of this
        // WAL ended there (see below).
        let mut blob_cut: Option<u64> = None;
        // A read-only open may run beside a live writer appending to these WALs.
        let live = read_only;
        let outcome =
            replay_live_wal(&file, opts.wal_recovery_mode, n.0, live, |offset, record| {
                if blob_cut.is_some() {
                    return Ok(());
                }
                ends_closed = false;
                if is_header {
                    is_header = false;
                    // The WAL this one follows must be flushed or replayed just before it.
                    let h = decode_wal_header(record).map_err(|e| e.with_file(&path))?;
                    may_outrun = Some(h.successor_may_outrun());
                    let prev = h.prev;
                    if prev >= log_number && Some(prev) != previous_wal {
                        return Err(Error::corruption(
                            &path,
                            offset,
                            format!(
                                "WAL {prev} is missing: this WAL follows it and the MANIFEST's \
                             log number {log_number} says it still holds unflushed writes"
                            ),
                        ));
                    }
                    return Ok(());
                }
                let txn = decode_txn_record(record);
                let event = if txn.is_some() { None } else { decode_wal_event(record) };
                if let Some(event) = event {
                    // Events are for the rules on short WALs; they hold no writes.
                    let event = event.map_err(|e| match e {
                        Error::Corruption { reason, .. } => {
                            Error::corruption(&path, offset, reason)
                        }
                        other => other,
                    })?;
                    ends_closed = event == WalEvent::Closed(n);
                    return Ok(());
                }
                let at = |e: Error| match e {
                    Error::Corruption { reason, .. } => Error::corruption(&path, offset, reason),
                    other => other,
                };
                let bad_batch = |e: Error| match e {
                    Error::Corruption { reason, .. } => {
                        Error::corruption(&path, offset, format!("bad write batch: {reason}"))
                    }
                    other => other,
                };
                let batch = match txn.transpose().map_err(at)? {
                    None => WriteBatch::from_wal(record.to_vec()).map_err(bad_batch)?,
                    Some(TxnRecord::Prepare { xid, batch }) => {
                        // Checked now: a prepared transaction must be readable to resolve.
                        WriteBatch::from_vec(batch.to_vec()).map_err(bad_batch)?;
                        prepared.insert(xid.to_vec(), record.to_vec());
                        return Ok(());
                    }
                    Some(TxnRecord::Rollback { xid }) => {
                        prepared.remove(xid);
                        return Ok(());
                    }
                    Some(TxnRecord::Commit { xid, batch }) => {
                        prepared.remove(xid);
                        WriteBatch::from_wal(batch.to_vec()).map_err(bad_batch)?
                    }
                };
                // Only the records replayed need their values (a family's records that its
                // tables cover may point into blob files collected since).
                let needed = |cf: u32| fams.get(&cf).is_some_and(|f| n >= f.log_number);
                blob_refs_seen |= batch.has_blob_refs();
                let batch = match super::blob_log::resolve(batch, &mut |cf, key, index| {
                    if needed(cf) {
                        blob_reader.read(key, index).map(Some)
                    } else {
                        Ok(None)
                    }
                }) {
                    Ok(b) => b,
                    Err(e) => match opts.wal_recovery_mode {
                        WalRecoveryMode::SkipAnyCorruptedRecords => return Ok(()),
                        WalRecoveryMode::AbsoluteConsistency => {
                            return Err(Error::corruption(
                                &path,
                                offset,
                                format!("a value written at commit cannot be read: {e}"),
                            ))
                        }
                        _ => {
                            // Power loss took unsynced bytes of the blob file and kept the
                            // WAL's: the replay ends here, as at a torn WAL record.
                            blob_cut = Some(offset);
                            blob_cut_reason =
                                Some(format!("{} offset {offset}: {e}", path.display()));
                            return Ok(());
                        }
                    },
                };
                let first = batch.sequence();
                let count = u64::from(batch.count());
                if count > 0 {
                    last_seq = last_seq.max(SeqNo(first.0 + count - 1));
                }
                // Runs of consecutive records of one family go in with one call.
                let mut records = batch.iter().enumerate().peekable();
                while let Some((i, r)) = records.next() {
                    let mut run = vec![(r.value_type, r.key, r.value)];
                    while let Some((_, next)) = records.next_if(|(_, x)| x.cf == r.cf) {
                        run.push((next.value_type, next.key, next.value));
                    }
                    let Some(f) = fams.get_mut(&r.cf) else {
                        if r.cf > max_cf {
                            return Err(Error::corruption(
                                &path,
                                offset,
                                format!(
                                    "write batch names column family {}, which the MANIFEST never \
                                 created (largest id {max_cf})",
                                    r.cf
                                ),
                            ));
                        }
                        continue; // a family dropped since: its writes went with it
                    };
                    if n < f.log_number {
                        continue; // already in the family's tables
                    }
                    if f.mem.is_empty() {
                        f.mem_first_wal = n;
                    }
                    f.mem.add_batch(SeqNo(first.0 + i as u64), run);
                    // Kept in memory, a memtable ends only with a WAL (below).
                    if !keep_split_at_wal_end
                        && f.mem.approximate_memory_usage() >= f.opts.write_buffer_size
                    {
                        let full = take_mem(f);
                        full.mark_immutable();
                        let number = versions.new_file_number();
                        f.write_table(fs.as_ref(), &full, number)?;
                    }
                }
                Ok(())
            })?;
        // A recyclable WAL's file may hold its previous log after the last record, which reads
        // as a torn tail: not damage by itself.
        wal_damage_seen |= (outcome.torn_tail && !outcome.recyclable) || outcome.dropped_bytes > 0;
        wal_damage_seen |= blob_cut.is_some();
        records += outcome.records;
        dropped_bytes += outcome.dropped_bytes;
        previous_wal = Some(n);
        let next = wals.iter().copied().find(|&w| w > n);
        let may_outrun = match (may_outrun, next) {
            (Some(m), _) => m,
            (None, Some(next)) => wal_header_version(fs, &wal_files[&next], next)? >= Some(2),
            (None, None) => false,
        };
        if let Some(offset) = blob_cut {
            // As a torn tail: the later WALs' writes came after the lost one.
            stop_at = Some((n, offset, may_outrun));
        } else if outcome.torn_tail && outcome.recyclable {
            // The bytes after the last record are a torn write or the file's previous log; the
            // two cannot be told apart (nor a damaged last record from them, as in RocksDB's
            // recycled logs). A WAL that ended with its "closed" event is whole; otherwise it
            // is treated as ended early, as a torn WAL is.
            if !ends_closed && opts.wal_recovery_mode != WalRecoveryMode::SkipAnyCorruptedRecords {
                stop_at = Some((n, outcome.last_valid_end, may_outrun));
            }
        } else if outcome.torn_tail
            && opts.wal_recovery_mode != WalRecoveryMode::SkipAnyCorruptedRecords
        {
            // The MANIFEST's rule, for a log whose last records may be unsynced: a complete
            // record failing its checksum with bytes after it (a later write, or the marker
            // a clean close appends) is damage, not a torn write.
            if !tail_is_interrupted_append(
                &file,
                outcome.last_valid_end,
                TailRule::UnsyncedTailPossible,
            )? {
                return Err(Error::corruption(
                    &path,
                    outcome.last_valid_end,
                    "WAL record is damaged (complete but fails its checksum, and bytes follow \
                     it); open with wal_recovery_mode SkipAnyCorruptedRecords to salvage",
                ));
            }
            stop_at = Some((n, outcome.last_valid_end, may_outrun));
        } else if may_outrun
            && !ends_closed
            && next.is_some()
            && opts.wal_recovery_mode != WalRecoveryMode::SkipAnyCorruptedRecords
            && !later_wal_says_synced(fs, wal_files, &wals, n)?
        {
            // A WAL that stopped taking writes ends with its "closed" event. Without it, and
            // with no later record that it was synced whole, power loss may have cut it at a
            // record boundary: the later WALs' writes are treated as behind a short WAL.
            stop_at = Some((n, outcome.last_valid_end, true));
        }
        if keep_split_at_wal_end {
            for f in fams.values_mut() {
                if f.mem.approximate_memory_usage() >= f.opts.write_buffer_size {
                    let full = take_mem(f);
                    full.mark_immutable();
                    f.out.recovered.push((full, f.mem_first_wal));
                }
            }
        }
    }
    // Kept in memory, the replayed writes stay in their WALs until a background flush. A WAL
    // that ended in damage cannot be kept (a later WAL holding records behind it would read
    // as a hole at the next open), so then everything is written to tables as usual.
    // Nor can WALs whose values written at commit were read back: their blob files are
    // obsolete once the replayed memtables are tables.
    let keep_in_memory =
        read_only || (opts.avoid_flush_during_recovery && !wal_damage_seen && !blob_refs_seen);
    let mut families = BTreeMap::new();
    for (id, mut f) in fams {
        if !f.mem.is_empty() {
            let mem = take_mem(&mut f);
            mem.mark_immutable();
            f.out.recovered.push((mem, f.mem_first_wal));
        }
        if !keep_in_memory {
            for (m, _) in std::mem::take(&mut f.out.recovered) {
                let number = versions.new_file_number();
                f.write_table(fs.as_ref(), &m, number)?;
            }
        }
        families.insert(id, f.out);
    }

    Ok(Replayed {
        families,
        last_seq,
        wals,
        records,
        dropped_bytes,
        unsynced_dropped,
        unsynced_wals,
        prepared,
        blob_cut: blob_cut_reason,
    })
}

/// The format version in the header of the WAL at `path`; `None` when it has no header.
fn wal_header_version(
    fs: &Arc<dyn FileSystem>,
    path: &Path,
    number: FileNumber,
) -> Result<Option<u32>> {
    let file = fs.open(path)?;
    let mut version = None;
    let mut first = true;
    replay_wal(&file, WalRecoveryMode::SkipAnyCorruptedRecords, number.0, |_, record| {
        if std::mem::take(&mut first) {
            version = decode_wal_header(record).ok().map(|h| h.version);
        }
        Ok(())
    })?;
    Ok(version)
}

/// Whether a WAL after `n` holds a "synced" event covering `n` (then `n` was synced whole).
fn later_wal_says_synced(
    fs: &Arc<dyn FileSystem>,
    wal_files: &std::collections::BTreeMap<FileNumber, std::path::PathBuf>,
    wals: &[FileNumber],
    n: FileNumber,
) -> Result<bool> {
    let mut found = false;
    for later in wals.iter().filter(|&&w| w > n) {
        let file = fs.open(&wal_files[later])?;
        replay_wal(&file, WalRecoveryMode::SkipAnyCorruptedRecords, later.0, |_, record| {
            if let Some(Ok(WalEvent::SyncedThrough(m))) = decode_wal_event(record) {
                found |= m >= n;
            }
            Ok(())
        })?;
        if found {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    //! The rule for writes behind a WAL that ended early, on WALs written by hand.

    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use crate::db::Db;
    use crate::env::{FileSystem, MemFs};
    use crate::error::Error;
    use crate::filename::wal_path;
    use crate::options::Options;
    use crate::types::{FileNumber, SeqNo};
    use crate::wal::{encode_wal_event, encode_wal_header, LogWriter, WalEvent};
    use crate::write_batch::WriteBatch;

    fn batch(key: &[u8], seq: u64) -> Vec<u8> {
        let mut b = WriteBatch::new();
        b.put(key, b"v");
        b.set_sequence(SeqNo(seq));
        b.data().to_vec()
    }

    /// How the first hand-written WAL ends.
    #[derive(Clone, Copy, PartialEq)]
    enum Tail {
        /// Cut inside the record of `b` (a torn tail).
        Torn,
        /// After `b`, at a record boundary, without the "closed" event.
        Boundary,
        /// After `b` and the "closed" event a memtable switch writes.
        Closed,
        /// Nothing reached the disk, not even the header.
        Lost,
    }

    /// A DB whose MANIFEST names WAL `n` as the oldest needed one, with that WAL and the next
    /// written by hand: WAL `n` (header `version`) holds `a` and `b` and ends as `tail` says;
    /// WAL `n+1` holds `c`, after a "synced through n" event when `event`.
    fn db_with_two_wals(version: u32, tail: Tail, event: bool) -> (MemFs, PathBuf) {
        let fs = MemFs::new();
        let dir = PathBuf::from("/db");
        let opts = Options { fs: Arc::new(fs.clone()), ..Options::default() };
        drop(Db::open(&opts, &dir).expect("create"));
        let wals: Vec<u64> = fs
            .list(&dir)
            .expect("list")
            .iter()
            .filter_map(|name| name.strip_suffix(".log")?.parse().ok())
            .collect();
        let n = FileNumber(*wals.iter().max().expect("a WAL"));
        let write = |path: &Path, records: &[Vec<u8>]| {
            let mut w = LogWriter::new(fs.create(path).expect("create WAL"));
            for r in records {
                w.add_record(r).expect("append");
            }
            w.flush().expect("flush");
        };
        let mut header = encode_wal_header(FileNumber(0), false, false);
        header[8..12].copy_from_slice(&version.to_le_bytes());
        let first = wal_path(&dir, n);
        let mut records = vec![header, batch(b"a", 1), batch(b"b", 2)];
        if tail == Tail::Closed {
            records.push(encode_wal_event(WalEvent::Closed(n)));
        }
        write(&first, &records);
        let bytes = fs.read_file(&first).expect("WAL bytes");
        match tail {
            Tail::Torn => fs.write_file(&first, &bytes[..bytes.len() - 4]), // inside b's record
            Tail::Lost => fs.write_file(&first, &[]),
            Tail::Boundary | Tail::Closed => {}
        }
        let mut second = vec![encode_wal_header(n, false, false)];
        if event {
            second.push(encode_wal_event(WalEvent::SyncedThrough(n)));
        }
        second.push(batch(b"c", 3));
        write(&wal_path(&dir, FileNumber(n.0 + 1)), &second);
        (fs, dir)
    }

    fn keys(fs: &MemFs, dir: &Path) -> Vec<&'static str> {
        let db = open(fs, dir).expect("open");
        ["a", "b", "c"].into_iter().filter(|k| db.get(k).unwrap().is_some()).collect()
    }

    fn open(fs: &MemFs, dir: &Path) -> crate::error::Result<Db> {
        Db::open(&Options { fs: Arc::new(fs.clone()), ..Options::default() }, dir)
    }

    #[test]
    fn writes_behind_an_unsynced_short_wal_are_dropped() {
        let (fs, dir) = db_with_two_wals(2, Tail::Torn, false);
        assert_eq!(keys(&fs, &dir), ["a"], "b is torn; c came after it and was never synced");
        // New writes go on, and the next open sees the same prefix.
        let db = open(&fs, &dir).expect("open");
        db.put(b"d", b"v").unwrap();
        drop(db);
        let db = open(&fs, &dir).expect("reopen");
        assert_eq!(db.get(b"c").unwrap(), None);
        assert_eq!(db.get(b"d").unwrap().as_deref(), Some(&b"v"[..]));
    }

    #[test]
    fn a_wal_cut_at_a_record_boundary_is_short_too() {
        // Without its "closed" event the WAL may have lost whole records.
        let (fs, dir) = db_with_two_wals(2, Tail::Boundary, false);
        assert_eq!(keys(&fs, &dir), ["a", "b"]);
        // Closed, it was complete: everything is replayed.
        let (fs, dir) = db_with_two_wals(2, Tail::Closed, false);
        assert_eq!(keys(&fs, &dir), ["a", "b", "c"]);
        // Recorded as synced whole (WALs kept at open end without the event): complete too.
        let (fs, dir) = db_with_two_wals(2, Tail::Boundary, true);
        assert_eq!(keys(&fs, &dir), ["a", "b", "c"]);
        // Nothing of it reached the disk: the next WAL (version 2) says whether it may have
        // outrun it.
        let (fs, dir) = db_with_two_wals(2, Tail::Lost, false);
        assert_eq!(keys(&fs, &dir), Vec::<&str>::new());
    }

    #[test]
    fn a_short_wal_recorded_as_synced_is_damage() {
        let (fs, dir) = db_with_two_wals(2, Tail::Torn, true);
        let Err(e) = open(&fs, &dir) else { panic!("the open should be refused") };
        assert!(matches!(e, Error::Corruption { .. }), "{e}");
        assert!(e.to_string().contains("synced whole"), "{e}");
    }

    #[test]
    fn a_short_version_1_wal_with_later_writes_is_a_hole() {
        let (fs, dir) = db_with_two_wals(1, Tail::Torn, false);
        let Err(e) = open(&fs, &dir) else { panic!("the open should be refused") };
        assert!(e.to_string().contains("later WAL"), "{e}");
        // A version-1 WAL was synced whole at the switch: no "closed" event is needed.
        let (fs, dir) = db_with_two_wals(1, Tail::Boundary, false);
        assert_eq!(keys(&fs, &dir), ["a", "b", "c"]);
    }
}
