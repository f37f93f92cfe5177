//! `Db::repair`: rebuilding a DB's MANIFEST from its files, after the MANIFEST or CURRENT
//! was lost or damaged.
//!
//! Procedure, under the DB's lock:
//! 1. every WAL (DB and WAL directories) is read in salvage mode (every intact record kept,
//!    damaged stretches skipped) into memtables written as new tables;
//! 2. every table is read whole, every block's checksum verified; an intact table is kept
//!    with the key and sequence ranges read from it, a damaged or empty one is moved to
//!    `lost/` in its directory; tables are looked for in the default family's table paths
//!    (`cf_paths`, else `db_paths`, else the DB directory: `db/paths.rs`), each kept at its
//!    path (those written from the WALs go to the first; one in the DB directory when that
//!    is not a path is moved to `lost/`, no path id could name it); an ingested table keeps
//!    the global sequence number an old MANIFEST's intact records still give it (where none
//!    survives, its entries read at 0, older than the rest: the limit of a file that does
//!    not carry its own number);
//! 3. a new MANIFEST naming every kept table at L0, with no WAL needed and the last sequence
//!    number the largest found, is written and synced, then CURRENT (the commit point);
//! 4. the WALs and the old MANIFESTs are moved to `lost/` (their contents are now in tables
//!    or superseded);
//! 5. L0 is searched newest table first, which is right only when tables whose keys overlap
//!    have disjoint sequence ranges; when they do not (tables that came from different
//!    levels), the DB is opened and compacted whole, which merges by sequence number.
//!
//! A crash before step 3 leaves the old state plus new tables; running repair again is safe
//! (a table holding the same entries as another only repeats them). Data lost to damage is
//! reported, never invented: the report lists what was kept and what was dropped.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::comparator::{KeyOrder, KnownOrders};
use crate::db::files::find_wals;
use crate::db::flush::{write_level0_table, FlushEnv};
use crate::db::paths::{create_dirs, family_paths, tables_in};
use crate::db::Db;
use crate::env::FileSystem;
use crate::error::{Error, Result};
use crate::filename::{lock_path, manifest_path, parse_file_name, table_path, FileKind};
use crate::key::{make_internal_key, range_end_bound, user_key};
use crate::memtable::MemTable;
use crate::options::Options;
use crate::sstable::TableReader;
use crate::types::{FileNumber, SeqNo, ValueType};
use crate::version::edit::{BlobFileAddition, FileMetaData, VersionEdit};
use crate::version::levels::Version;
use crate::version::set::{write_manifest_for, Counters, FamilySnapshot};
use crate::wal::reader::LogReader;
use crate::wal::{
    decode_txn_record, decode_wal_event, decode_wal_header, TxnRecord, WalRecoveryMode,
};
use crate::write_batch::WriteBatch;

/// Where repair moves the files it does not keep, inside the DB directory.
pub(crate) const LOST_DIR: &str = "lost";

/// What [`crate::Db::repair`] kept and dropped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// Tables in the rebuilt MANIFEST (names), those written from WALs included.
    pub tables_kept: Vec<String>,
    /// Tables moved to `lost/`, each with the reason.
    pub tables_dropped: Vec<(String, String)>,
    /// WALs read (then moved to `lost/`), with the records salvaged from each.
    pub wals: Vec<(String, u64)>,
    /// Bytes of WALs that were damaged and skipped.
    pub wal_bytes_dropped: u64,
    /// Tables written from the WALs' records.
    pub tables_from_wals: Vec<String>,
    /// The rebuilt DB's last sequence number.
    pub last_sequence: u64,
    /// Whether the tables had to be compacted together (see the module documentation).
    pub compacted: bool,
}

impl fmt::Display for RepairReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, records) in &self.wals {
            writeln!(f, "wal {name}: {records} records salvaged")?;
        }
        writeln!(f, "wal bytes dropped: {}", self.wal_bytes_dropped)?;
        for name in &self.tables_from_wals {
            writeln!(f, "table {name}: written from the WALs")?;
        }
        for name in &self.tables_kept {
            writeln!(f, "kept {name}")?;
        }
        for (name, why) in &self.tables_dropped {
            writeln!(f, "dropped {name}: {why}")?;
        }
        writeln!(f, "last sequence: {}", self.last_sequence)?;
        writeln!(f, "compacted: {}", if self.compacted { "yes" } else { "no" })
    }
}

impl Db {
    /// Rebuilds the MANIFEST of the DB in `path` from its table files and WALs, after the
    /// MANIFEST or CURRENT was lost or damaged (`utilities/repair.rs` has the procedure).
    /// Tables that fail their checksums and the WALs (once their intact records are in new
    /// tables) are moved to `path/lost/`. Fails with `Locked` while a `Db` has the DB open.
    pub fn repair(opts: &Options, path: impl AsRef<Path>) -> Result<RepairReport> {
        repair(opts, path.as_ref())
    }
}

fn repair(opts: &Options, dir: &Path) -> Result<RepairReport> {
    opts.validate()?;
    let opts = opts.sanitized();
    let fs = opts.fs.clone();
    if !fs.is_dir(dir) {
        return Err(Error::InvalidArgument(format!("{} is not a directory", dir.display())));
    }
    let report = {
        let _lock = fs.lock(&lock_path(dir))?;
        rebuild(&opts, &fs, dir)?
    };
    if report.compacted {
        let db = Db::open(&opts, dir)?;
        db.compact_range(None::<&[u8]>, None::<&[u8]>)?;
    }
    Ok(report)
}

fn rebuild(opts: &Options, fs: &Arc<dyn FileSystem>, dir: &Path) -> Result<RepairReport> {
    let wal_dir = opts.wal_dir.clone().unwrap_or_else(|| dir.to_path_buf());
    let wal_files = find_wals(fs.as_ref(), dir, &wal_dir)?;
    let kinds: Vec<FileKind> = fs.list(dir)?.iter().filter_map(|n| parse_file_name(n)).collect();
    // The default family's table paths, and the tables in each (a directory listed twice is
    // searched once, as its first path).
    let paths = family_paths(opts, opts, dir)?;
    create_dirs(fs.as_ref(), &paths)?;
    let mut found: Vec<(FileNumber, u32)> = Vec::new();
    let mut searched: Vec<&Path> = Vec::new();
    for (id, p) in paths.iter().enumerate() {
        if searched.contains(&&*p.dir) {
            continue;
        }
        searched.push(&p.dir);
        found.extend(tables_in(fs.as_ref(), &p.dir)?.into_iter().map(|n| (n, id as u32)));
    }
    let mut next = kinds
        .iter()
        .filter_map(|k| match *k {
            FileKind::Wal(n)
            | FileKind::Table(n)
            | FileKind::Blob(n)
            | FileKind::Manifest(n)
            | FileKind::Temp(n)
            | FileKind::Options(n)
            | FileKind::OptionsTemp(n) => Some(n.0),
            FileKind::Current | FileKind::Identity | FileKind::Lock => None,
        })
        .chain(wal_files.keys().map(|n| n.0))
        .chain(found.iter().map(|(n, _)| n.0))
        .max()
        .unwrap_or(0)
        + 1;
    let mut new_number = || {
        let n = FileNumber(next);
        next += 1;
        n
    };
    let mut report = RepairReport::default();
    let lost = dir.join(LOST_DIR);
    let path_dir = |id: u32| paths.iter().nth(id as usize).map_or(dir, |p| &*p.dir);

    // 1. WALs into tables, at path 0.
    let table_options = opts.table_options_for_level(0);
    let env = FlushEnv {
        fs: fs.as_ref(),
        dir: path_dir(0),
        table_options: &table_options,
        snapshots: &[],
        merge_operator: opts.merge_operator.as_deref(),
        // Repair salvages what is there; it does not run user filters.
        filter: None,
        // Values stay in the tables: repair writes no blob files (and resolves the blob
        // indexes of values written at commit as it reads the WALs).
        blobs: None,
        blob_fetch: None,
    };
    let mut tables = found;
    let mut write_table = |mem: &Arc<MemTable>, report: &mut RepairReport| -> Result<()> {
        if let Some((meta, _, _, _)) =
            write_level0_table(&env, std::slice::from_ref(mem), new_number())?
        {
            report.tables_from_wals.push(crate::filename::table_file_name(meta.number));
            tables.push((meta.number, 0));
        }
        Ok(())
    };
    let mut blob_reader = crate::db::blob_log::LogReader::new(fs.as_ref(), dir);
    for (&n, path) in &wal_files {
        let mut mem = Arc::new(MemTable::with_budget(None, 0, opts.comparator.clone()));
        let file = fs.open(path)?;
        let mut reader = LogReader::for_wal(file, WalRecoveryMode::SkipAnyCorruptedRecords, n.0);
        let mut records = 0u64;
        let mut first = true;
        while let Some((_, record)) = reader.read_record()? {
            if std::mem::take(&mut first) && decode_wal_header(record).is_ok() {
                continue;
            }
            // A committed transaction's writes are kept; a prepared one, not yet committed,
            // is dropped (repair keeps what was committed), as is a rollback's marker.
            let record = match decode_txn_record(record) {
                None => record,
                Some(Ok(TxnRecord::Commit { batch, .. })) => batch,
                Some(_) => continue,
            };
            if decode_wal_event(record).is_some() {
                continue;
            }
            // A record that is not a batch is damage the checksum did not catch: skipped; so
            // is one whose values written at commit cannot be read back (`db/blob_log.rs`).
            let Ok(batch) = WriteBatch::from_wal(record.to_vec()) else { continue };
            let read =
                &mut |_: u32, key: &[u8], index: &[u8]| blob_reader.read(key, index).map(Some);
            let Ok(batch) = crate::db::blob_log::resolve(batch, read) else { continue };
            if batch.has_cf() {
                // Tables do not record their family, so repair rebuilds `default` alone; it
                // must not fold another family's writes into it.
                return Err(Error::NotSupported(format!(
                    "repair: {} holds writes of column families other than default; repair \
                     rebuilds a DB of the default family only",
                    path.display()
                )));
            }
            mem.add_batch(batch.sequence(), batch.iter().map(|r| (r.value_type, r.key, r.value)));
            records += 1;
            if mem.approximate_memory_usage() >= opts.write_buffer_size {
                write_table(&mem, &mut report)?;
                mem = Arc::new(MemTable::with_budget(None, 0, opts.comparator.clone()));
            }
        }
        report.wal_bytes_dropped += reader.outcome().dropped_bytes;
        report.wals.push((file_name(path), records));
        write_table(&mem, &mut report)?;
    }

    // 2. Every table read whole; an ingested table takes the global sequence number any old
    // MANIFEST still records for it.
    let global_seqnos = salvage_global_seqnos(fs.as_ref(), &kinds, dir);
    tables.sort_unstable();
    let mut edit = VersionEdit::default();
    let mut last_sequence = SeqNo::ZERO;
    // The blob files tables refer to, each opened once: its counts, or why it is unusable.
    let mut blobs: std::collections::BTreeMap<
        FileNumber,
        std::result::Result<BlobFileAddition, String>,
    > = std::collections::BTreeMap::new();
    for (n, path_id) in tables {
        let path = table_path(path_dir(path_id), n);
        let lost = path_dir(path_id).join(LOST_DIR);
        match scan_table(fs.as_ref(), &path, n, &opts.comparator) {
            Ok(Some(mut meta)) => {
                let unusable = meta.blob_refs.iter().find_map(|&b| {
                    let got = blobs.entry(b).or_insert_with(|| {
                        let p = crate::filename::blob_path(dir, b);
                        crate::blob::reader::BlobFileReader::open(fs.as_ref(), &p)
                            .map(|r| BlobFileAddition {
                                number: b,
                                records: r.footer().map_or(0, |f| f.records),
                                bytes: r.footer().map_or(0, |f| f.record_bytes),
                                file_checksum: None,
                            })
                            .map_err(|e| e.to_string())
                    });
                    got.as_ref().err().map(|e| format!("refers to blob file {b}: {e}"))
                });
                if let Some(reason) = unusable {
                    // Its blob values cannot be read: kept aside whole, never served wrong.
                    move_to_lost(fs.as_ref(), &lost, &path)?;
                    report.tables_dropped.push((file_name(&path), reason));
                    continue;
                }
                meta.path_id = path_id;
                if let Some(&g) = global_seqnos.get(&n) {
                    // The bounds as ingestion recorded them: every entry at `g`.
                    let remap = |k: &[u8]| match crate::key::parse_internal_key(k) {
                        Some(pk) if !crate::key::is_exclusive_bound(k) => {
                            make_internal_key(pk.user_key, g, pk.value_type)
                        }
                        _ => k.to_vec(),
                    };
                    meta.smallest = remap(&meta.smallest);
                    meta.largest = remap(&meta.largest);
                    meta.global_seqno = g;
                    meta.smallest_seqno = g;
                    meta.largest_seqno = g;
                }
                last_sequence = last_sequence.max(meta.largest_seqno);
                report.tables_kept.push(crate::filename::table_file_name(n));
                edit.new_files.push((0, meta));
            }
            Ok(None) => {
                move_to_lost(fs.as_ref(), &lost, &path)?;
                report.tables_dropped.push((file_name(&path), "holds no entries".to_string()));
            }
            Err(e) => {
                move_to_lost(fs.as_ref(), &lost, &path)?;
                report.tables_dropped.push((file_name(&path), e.to_string()));
            }
        }
    }
    // Tables in the DB directory when it is not a table path: no path id can name them, and
    // the next open would delete them; they are kept aside.
    if !searched.contains(&dir) {
        for k in &kinds {
            if let FileKind::Table(n) = *k {
                let path = table_path(dir, n);
                move_to_lost(fs.as_ref(), &lost, &path)?;
                report.tables_dropped.push((
                    file_name(&path),
                    "in the DB directory, which is not one of the table paths (db_paths, \
                     cf_paths)"
                        .to_string(),
                ));
            }
        }
    }
    let referenced: std::collections::BTreeSet<FileNumber> =
        edit.new_files.iter().flat_map(|(_, f)| f.blob_refs.iter().copied()).collect();
    edit.blob_files_added = blobs
        .into_iter()
        .filter(|(b, _)| referenced.contains(b))
        .filter_map(|(_, a)| a.ok())
        .collect();
    report.compacted = !l0_order_is_safe(&edit.new_files, &opts.comparator);

    // 3. The new MANIFEST, then CURRENT.
    let version = Version::new(opts.num_levels, opts.comparator.clone())
        .with_paths(paths.clone())
        .apply(&edit)?;
    let manifest = new_number();
    let counters = Counters {
        log_number: FileNumber(0),
        next_file: FileNumber(manifest.0 + 1),
        last_sequence,
        max_column_family: 0,
    };
    let family = FamilySnapshot {
        id: 0,
        name: crate::column_family::DEFAULT_COLUMN_FAMILY_NAME.to_string(),
        version: Arc::new(version),
        log_number: FileNumber(0),
        full_history_ts_low: None,
    };
    write_manifest_for(fs.as_ref(), dir, manifest, &[family], &counters)?;
    report.last_sequence = last_sequence.0;

    // 4. Superseded files out of the way.
    for path in wal_files.values() {
        move_to_lost(fs.as_ref(), &lost, path)?;
    }
    for k in &kinds {
        if let FileKind::Manifest(m) = *k {
            move_to_lost(fs.as_ref(), &lost, &manifest_path(dir, m))?;
        }
    }
    fs.sync_dir(dir)?;
    if wal_dir != dir {
        fs.sync_dir(&wal_dir)?;
    }
    Ok(report)
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// Moves `path` into `lost` (created if needed), keeping its name.
fn move_to_lost(fs: &dyn FileSystem, lost: &Path, path: &Path) -> Result<()> {
    fs.create_dir_all(lost)?;
    let to: PathBuf = lost.join(file_name(path));
    fs.rename(path, &to)?;
    fs.sync_dir(lost)
}

/// The global sequence numbers of ingested tables that the DB's MANIFESTs still record, read
/// record by record in salvage mode (damaged records are skipped; a later record wins).
fn salvage_global_seqnos(
    fs: &dyn FileSystem,
    kinds: &[FileKind],
    dir: &Path,
) -> std::collections::HashMap<FileNumber, SeqNo> {
    let mut manifests: Vec<FileNumber> = kinds
        .iter()
        .filter_map(|k| match *k {
            FileKind::Manifest(n) => Some(n),
            _ => None,
        })
        .collect();
    manifests.sort_unstable();
    let mut out = std::collections::HashMap::new();
    for m in manifests {
        let path = manifest_path(dir, m);
        let Ok(file) = fs.open(&path) else { continue };
        let mut r = LogReader::new(file, WalRecoveryMode::SkipAnyCorruptedRecords);
        while let Ok(Some((offset, rec))) = r.read_record() {
            if let Ok(e) = VersionEdit::decode_record(rec, &path, offset) {
                for (_, f) in &e.new_files {
                    if f.global_seqno != SeqNo::ZERO {
                        out.insert(f.number, f.global_seqno);
                    }
                }
            }
        }
    }
    out
}

/// Reads table `n` whole (every block's checksum verified) and returns its MANIFEST record,
/// `None` when it holds nothing. A table in another key order than `order` is refused.
fn scan_table(
    fs: &dyn FileSystem,
    path: &Path,
    n: FileNumber,
    order: &KeyOrder,
) -> Result<Option<FileMetaData>> {
    let file = fs.open(path)?;
    let file_size = file.len();
    let reader = TableReader::open_in(file, n.0, None, &KnownOrders::of(order))?;
    if reader.order() != order {
        return Err(Error::InvalidArgument(format!(
            "its keys are in comparator {:?}'s order, the options give {:?}",
            reader.order().name(),
            order.name()
        )));
    }
    let reader = std::sync::Arc::new(reader);
    let mut smallest: Option<Vec<u8>> = None;
    let mut largest: Option<Vec<u8>> = None;
    let mut widen = |k: Vec<u8>| {
        if smallest.as_ref().is_none_or(|s| order.compare_internal(&k, s).is_lt()) {
            smallest = Some(k.clone());
        }
        if largest.as_ref().is_none_or(|l| order.compare_internal(&k, l).is_gt()) {
            largest = Some(k);
        }
    };
    let mut blob_refs = std::collections::BTreeSet::new();
    for (_, h) in reader.data_blocks()? {
        for (k, v) in reader.data_block_entries(h)? {
            if crate::key::parse_internal_key(&k)
                .is_some_and(|p| p.value_type == ValueType::BlobIndex)
            {
                let i = crate::blob::BlobIndex::decode(&v).map_err(|e| e.with_file(path))?;
                blob_refs.insert(i.file);
            }
            widen(k);
        }
    }
    for t in reader.range_tombstones() {
        widen(make_internal_key(&t.start, t.seq, ValueType::RangeDeletion));
        widen(range_end_bound(&t.end));
    }
    let (Some(smallest), Some(largest)) = (smallest, largest) else { return Ok(None) };
    let p = reader.properties();
    Ok(Some(FileMetaData {
        number: n,
        file_size,
        smallest,
        largest,
        smallest_seqno: p.smallest_seqno,
        largest_seqno: p.largest_seqno,
        num_entries: p.num_entries,
        num_deletions: p.num_deletions,
        data_time: 0,
        global_seqno: crate::types::SeqNo::ZERO,
        path_id: 0,
        blob_refs: blob_refs.into_iter().collect(),
        file_checksum: None,
    }))
}

/// Whether searching these tables as L0 (largest sequence number first, stopping at the
/// first table holding the key) finds the newest version of every key: true when any two
/// tables whose key ranges overlap have disjoint sequence ranges.
fn l0_order_is_safe(files: &[(usize, FileMetaData)], order: &KeyOrder) -> bool {
    for (i, (_, a)) in files.iter().enumerate() {
        for (_, b) in &files[i + 1..] {
            let keys_overlap = order.le(user_key(&a.smallest), user_key(&b.largest))
                && order.le(user_key(&b.smallest), user_key(&a.largest));
            let seqs_overlap =
                a.smallest_seqno <= b.largest_seqno && b.smallest_seqno <= a.largest_seqno;
            if keys_overlap && seqs_overlap {
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(smallest: &str, largest: &str, seqs: (u64, u64)) -> (usize, FileMetaData) {
        let k = |s: &str| make_internal_key(s.as_bytes(), SeqNo(seqs.0), ValueType::Value);
        let m = FileMetaData {
            smallest: k(smallest),
            largest: k(largest),
            smallest_seqno: SeqNo(seqs.0),
            largest_seqno: SeqNo(seqs.1),
            ..FileMetaData::default()
        };
        (0, m)
    }

    #[test]
    fn l0_order_is_unsafe_only_for_overlapping_keys_and_sequences() {
        // Flushes: overlapping keys, disjoint sequence ranges.
        assert!(l0_order_is_safe(
            &[meta("a", "z", (1, 10)), meta("c", "d", (11, 20))],
            &KeyOrder::Bytewise
        ));
        // Overlapping sequences, disjoint keys.
        assert!(l0_order_is_safe(
            &[meta("a", "b", (1, 30)), meta("c", "d", (11, 20))],
            &KeyOrder::Bytewise
        ));
        // A deeper table with newer entries around a shallower table's older ones.
        assert!(!l0_order_is_safe(
            &[meta("a", "z", (1, 30)), meta("c", "d", (11, 20))],
            &KeyOrder::Bytewise
        ));
    }
}
