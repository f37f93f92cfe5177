//! Reading a DB's files for tools (the `strata` CLI): a table's properties, index, data
//! blocks and entries; a WAL's records; a MANIFEST's edits; and a check of every checksum of
//! a DB's live files ([`verify_db`]).
//!
//! Contract: everything here only reads, through the given [`FileSystem`]; results are data
//! (keys and values as bytes), formatting is the tool's. Damage is an `Err` naming the file
//! and offset, never a panic; where a file is read record by record, what decoded before the
//! damage is returned with it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::env::FileSystem;
use crate::error::{Error, Result};
use crate::filename::{current_path, parse_file_name, table_path, FileKind};
use crate::key::parse_internal_key;
use crate::options::Options;
use crate::sstable::{BlockHandle, TableReader};
use crate::types::{FileNumber, ValueType};
use crate::version::edit::{FileMetaData, VersionEdit};
use crate::version::set::{FamilyLayout, VersionSet};
use crate::wal::reader::LogReader;
use crate::wal::{
    decode_txn_record, decode_wal_event, decode_wal_header, tail_is_interrupted_append, TailRule,
    TxnRecord, WalEvent, WalRecoveryMode,
};
use crate::write_batch::WriteBatch;

/// One entry: a user key with its sequence number and kind, and its value (for a range
/// deletion, the exclusive end of the range; empty for deletions).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The user key (for a range deletion, its inclusive start).
    pub key: Vec<u8>,
    /// The sequence number.
    pub seq: u64,
    /// `PUT`, `DEL`, `SDEL` (single delete), `MERGE`, `RDEL` (range delete), `BLOB` (a blob
    /// index) or `ENTITY` (a wide-column entity's encoding); for an index
    /// separator that is a user key (format version 3 tables), `KEY` with sequence 0.
    pub kind: &'static str,
    /// The value, merge operand or range end.
    pub value: Vec<u8>,
}

fn kind_name(t: ValueType) -> &'static str {
    match t {
        ValueType::Value => "PUT",
        ValueType::Deletion => "DEL",
        ValueType::SingleDeletion => "SDEL",
        ValueType::Merge => "MERGE",
        ValueType::RangeDeletion => "RDEL",
        ValueType::BlobIndex => "BLOB",
        ValueType::Entity => "ENTITY",
    }
}

fn entry(path: &Path, offset: u64, ikey: &[u8], value: Vec<u8>) -> Result<Entry> {
    let p = parse_internal_key(ikey).ok_or_else(|| {
        Error::corruption(path, offset, "bad internal key (short or unknown type)")
    })?;
    Ok(Entry { key: p.user_key.to_vec(), seq: p.seq.0, kind: kind_name(p.value_type), value })
}

/// A data block as the index lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataBlock {
    /// File offset of the block.
    pub offset: u64,
    /// Stored size, without the 5-byte trailer.
    pub size: u64,
}

/// An open table file.
pub struct Table {
    reader: std::sync::Arc<TableReader>,
    path: PathBuf,
}

impl Table {
    /// Opens the table at `path`, reading and verifying its footer, metaindex, index, filter,
    /// range deletions and properties.
    /// A table in a key order other than bytewise is `InvalidArgument` ([`Table::open_in`]).
    pub fn open(fs: &dyn FileSystem, path: &Path) -> Result<Table> {
        Self::open_in(fs, path, &crate::comparator::KeyOrder::Bytewise)
    }

    /// [`Table::open`] of a table in bytewise order or in `order`.
    pub fn open_in(
        fs: &dyn FileSystem,
        path: &Path,
        order: &crate::comparator::KeyOrder,
    ) -> Result<Table> {
        let file = fs.open(path)?;
        let orders = crate::comparator::KnownOrders::of(order);
        Ok(Table {
            reader: std::sync::Arc::new(TableReader::open_in(file, 0, None, &orders)?),
            path: path.to_path_buf(),
        })
    }

    /// The file's size in bytes.
    pub fn file_size(&self) -> u64 {
        self.reader.file_size()
    }

    /// Whether the index is keyed by user keys (table format version 3).
    pub fn has_user_key_index(&self) -> bool {
        self.reader.has_user_key_index()
    }

    /// The properties block, as `(name, value)` in a fixed order.
    pub fn properties(&self) -> Vec<(&'static str, String)> {
        let p = self.reader.properties();
        let mut out = vec![
            ("num_entries", p.num_entries.to_string()),
            ("num_deletions", p.num_deletions.to_string()),
            ("num_merge_operands", p.num_merge_operands.to_string()),
            ("num_range_deletions", p.num_range_deletions.to_string()),
            ("raw_key_size", p.raw_key_size.to_string()),
            ("raw_value_size", p.raw_value_size.to_string()),
            ("data_size", p.data_size.to_string()),
            ("index_size", p.index_size.to_string()),
            ("filter_size", p.filter_size.to_string()),
            ("num_data_blocks", p.num_data_blocks.to_string()),
            ("smallest_seqno", p.smallest_seqno.0.to_string()),
            ("largest_seqno", p.largest_seqno.0.to_string()),
            ("compression", format!("{:?}", p.compression)),
            ("creation_time", p.creation_time.to_string()),
        ];
        // Only external files (SstFileWriter's) carry it.
        if p.external_file_version != 0 {
            out.push(("external_file_version", p.external_file_version.to_string()));
        }
        out
    }

    /// The index: each data block with its separator (an entry at or after its last key).
    pub fn index(&self) -> Result<Vec<(Entry, DataBlock)>> {
        self.reader
            .data_blocks()?
            .into_iter()
            .map(|(k, h)| {
                let mut e = entry(&self.path, h.offset, &k, Vec::new())?;
                if self.reader.has_user_key_index() {
                    e.kind = "KEY";
                }
                Ok((e, DataBlock { offset: h.offset, size: h.size }))
            })
            .collect()
    }

    /// The entries of one data block, its checksum verified.
    pub fn block_entries(&self, block: DataBlock) -> Result<Vec<Entry>> {
        let h = BlockHandle::new(block.offset, block.size);
        self.reader
            .data_block_entries(h)?
            .into_iter()
            .map(|(k, v)| entry(&self.path, block.offset, &k, v))
            .collect()
    }

    /// The range deletions of the table's range-deletion block.
    pub fn range_deletions(&self) -> Vec<Entry> {
        self.reader
            .range_tombstones()
            .iter()
            .map(|t| Entry {
                key: t.start.clone(),
                seq: t.seq.0,
                kind: "RDEL",
                value: t.end.clone(),
            })
            .collect()
    }

    /// Reads every data block, verifying its checksum, and checks that each block's entries
    /// are in order and end at or before the block's separator; returns the blocks read.
    pub fn verify(&self) -> Result<u64> {
        self.reader.verify_blocks()
    }
}

/// One record of a WAL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WalRecord {
    /// The header every WAL starts with.
    Header {
        /// File offset of the record.
        offset: u64,
        /// The WAL that was active before this one.
        prev: u64,
        /// The WAL format version.
        version: u32,
        /// The file was zero-filled ahead of its records (version 4).
        zeros_ahead: bool,
    },
    /// An event record (holds no writes).
    Event {
        /// File offset of the record.
        offset: u64,
        /// `synced-through N` or `closed N`.
        text: String,
    },
    /// A write batch; entry `i` has sequence number `sequence + i`.
    Batch {
        /// File offset of the record.
        offset: u64,
        /// The batch's first sequence number.
        sequence: u64,
        /// Its operations in order.
        entries: Vec<Entry>,
    },
    /// A two-phase-commit record (`TransactionDb`): `prepare` and `commit` carry the
    /// transaction's writes (a prepare's sequence number is 0: none is assigned yet).
    Transaction {
        /// File offset of the record.
        offset: u64,
        /// `prepare`, `commit` or `rollback`.
        kind: &'static str,
        /// The transaction's name.
        xid: Vec<u8>,
        /// The writes' first sequence number.
        sequence: u64,
        /// Its operations in order (none for a rollback).
        entries: Vec<Entry>,
    },
}

/// What [`read_wal`] found.
#[derive(Debug)]
pub struct WalDump {
    /// The records before the end or the first damage.
    pub records: Vec<WalRecord>,
    /// Bytes after the last record that do not decode: an interrupted write (torn tail), or
    /// for a reused WAL file, the older log it held.
    pub torn_tail_bytes: u64,
    /// Damage that is not a torn tail (the reading stopped there).
    pub damage: Option<Error>,
}

/// Reads the WAL at `path` in point-in-time mode (its number, for reused files, from its
/// name).
pub fn read_wal(fs: &dyn FileSystem, path: &Path) -> Result<WalDump> {
    let file = fs.open(path)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let number = match parse_file_name(name) {
        Some(FileKind::Wal(n)) => n.0,
        _ => 0,
    };
    let mut reader = LogReader::for_wal(file.clone(), WalRecoveryMode::PointInTime, number);
    let mut records = Vec::new();
    let mut damage = None;
    loop {
        match reader.read_record() {
            Ok(Some((offset, data))) => match wal_record(path, offset, data, records.is_empty()) {
                Ok(r) => records.push(r),
                Err(e) => {
                    damage = Some(e);
                    break;
                }
            },
            Ok(None) => break,
            Err(e) => {
                damage = Some(e);
                break;
            }
        }
    }
    let outcome = reader.outcome();
    let mut torn_tail_bytes = 0;
    if damage.is_none() && outcome.torn_tail {
        if !outcome.recyclable
            && !tail_is_interrupted_append(
                &file,
                outcome.last_valid_end,
                TailRule::UnsyncedTailPossible,
            )?
        {
            damage = Some(Error::corruption(
                path,
                outcome.last_valid_end,
                "WAL record is damaged (complete but fails its checksum, and bytes follow it)",
            ));
        } else {
            torn_tail_bytes = file.len().saturating_sub(outcome.last_valid_end);
        }
    }
    Ok(WalDump { records, torn_tail_bytes, damage })
}

fn wal_record(path: &Path, offset: u64, data: &[u8], first: bool) -> Result<WalRecord> {
    let relocate = |e: Error| match e {
        Error::Corruption { reason, .. } => Error::corruption(path, offset, reason),
        other => other,
    };
    if first {
        if let Ok(h) = decode_wal_header(data) {
            return Ok(WalRecord::Header {
                offset,
                prev: h.prev.0,
                version: h.version,
                zeros_ahead: h.zeros_ahead,
            });
        }
    }
    if let Some(txn) = decode_txn_record(data) {
        let (kind, xid, batch) = match txn.map_err(relocate)? {
            TxnRecord::Prepare { xid, batch } => ("prepare", xid, Some(batch)),
            TxnRecord::Commit { xid, batch } => ("commit", xid, Some(batch)),
            TxnRecord::Rollback { xid } => ("rollback", xid, None),
        };
        let (sequence, entries) = match batch {
            Some(b) => batch_entries(&WriteBatch::from_wal(b.to_vec()).map_err(relocate)?),
            None => (0, Vec::new()),
        };
        return Ok(WalRecord::Transaction { offset, kind, xid: xid.to_vec(), sequence, entries });
    }
    if let Some(event) = decode_wal_event(data) {
        let text = match event.map_err(relocate)? {
            WalEvent::SyncedThrough(n) => format!("synced-through {}", n.0),
            WalEvent::Closed(n) => format!("closed {}", n.0),
        };
        return Ok(WalRecord::Event { offset, text });
    }
    let batch = WriteBatch::from_wal(data.to_vec()).map_err(relocate)?;
    let (sequence, entries) = batch_entries(&batch);
    Ok(WalRecord::Batch { offset, sequence, entries })
}

/// A batch's first sequence number and its entries.
fn batch_entries(batch: &WriteBatch) -> (u64, Vec<Entry>) {
    let sequence = batch.sequence().0;
    let entries = batch
        .iter()
        .enumerate()
        .map(|(i, r)| Entry {
            key: r.key.to_vec(),
            seq: sequence + i as u64,
            kind: kind_name(r.value_type),
            value: r.value.to_vec(),
        })
        .collect();
    (sequence, entries)
}

/// A table as a MANIFEST edit adds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableSummary {
    /// The level it is added to.
    pub level: usize,
    /// Its file number.
    pub number: u64,
    /// Its size in bytes.
    pub size: u64,
    /// Its smallest and largest entries (values empty).
    pub smallest: Entry,
    /// See `smallest`.
    pub largest: Entry,
    /// Entries, deletions included.
    pub entries: u64,
    /// Deletions.
    pub deletions: u64,
    /// An ingested external file's global sequence number (0: none).
    pub global_seqno: u64,
    /// Seconds since the Unix epoch when its newest data was written (the `FileTime` tag
    /// FIFO's TTL reads; 0: unknown, the tag is absent).
    pub data_time: u64,
    /// Which of its family's table paths holds it (the `PathId` tag; 0: the first).
    pub path_id: u32,
    /// The blob files it holds indexes into (the `BlobRefs` tag).
    pub blob_refs: Vec<u64>,
    /// The CRC32C of the whole file (the `FileChecksum` tag; `Options::file_checksums`).
    pub file_checksum: Option<u32>,
}

/// One field of a MANIFEST edit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EditItem {
    /// The comparator's name.
    Comparator(String),
    /// WALs numbered below this hold nothing that is not in a table.
    LogNumber(u64),
    /// The next file number.
    NextFile(u64),
    /// The last sequence number.
    LastSequence(u64),
    /// A table removed from a level.
    DeleteFile {
        /// Its level.
        level: usize,
        /// Its number.
        number: u64,
    },
    /// A table added.
    AddFile(TableSummary),
    /// A level's round-robin compaction cursor.
    CompactCursor {
        /// The level.
        level: usize,
        /// The cursor (an entry, value empty).
        key: Entry,
    },
    /// A blob file written (`BlobFileAdd`).
    BlobFile {
        /// Its number.
        number: u64,
        /// Its records.
        records: u64,
        /// Their bytes (headers, keys and values).
        bytes: u64,
        /// The CRC32C of the whole file (the `FileChecksum` tag; `Options::file_checksums`).
        file_checksum: Option<u32>,
    },
    /// Records of a blob file that became garbage (`BlobGarbage`).
    BlobGarbage {
        /// The blob file's number.
        number: u64,
        /// Records that became garbage.
        records: u64,
        /// Their bytes.
        bytes: u64,
    },
}

/// Reads the MANIFEST at `path`: each record's offset and fields, in order. Damage (besides
/// a torn last record) is an `Err`.
pub fn read_manifest(fs: &dyn FileSystem, path: &Path) -> Result<Vec<(u64, Vec<EditItem>)>> {
    let file = fs.open(path)?;
    let mut reader = LogReader::new(file, WalRecoveryMode::PointInTime);
    let mut out = Vec::new();
    while let Some((offset, data)) = reader.read_record()? {
        let edit = VersionEdit::decode_record(data, path, offset)?;
        out.push((offset, edit_items(path, offset, &edit)?));
    }
    Ok(out)
}

fn table_summary(path: &Path, offset: u64, level: usize, f: &FileMetaData) -> Result<TableSummary> {
    Ok(TableSummary {
        level,
        number: f.number.0,
        size: f.file_size,
        smallest: entry(path, offset, &f.smallest, Vec::new())?,
        largest: entry(path, offset, &f.largest, Vec::new())?,
        entries: f.num_entries,
        deletions: f.num_deletions,
        global_seqno: f.global_seqno.0,
        data_time: f.data_time,
        path_id: f.path_id,
        blob_refs: f.blob_refs.iter().map(|b| b.0).collect(),
        file_checksum: f.file_checksum,
    })
}

fn edit_items(path: &Path, offset: u64, e: &VersionEdit) -> Result<Vec<EditItem>> {
    let mut items = Vec::new();
    if let Some(c) = &e.comparator {
        items.push(EditItem::Comparator(c.clone()));
    }
    if let Some(n) = e.log_number {
        items.push(EditItem::LogNumber(n.0));
    }
    if let Some(n) = e.next_file_number {
        items.push(EditItem::NextFile(n.0));
    }
    if let Some(s) = e.last_sequence {
        items.push(EditItem::LastSequence(s.0));
    }
    for b in &e.blob_files_added {
        items.push(EditItem::BlobFile {
            number: b.number.0,
            records: b.records,
            bytes: b.bytes,
            file_checksum: b.file_checksum,
        });
    }
    for g in &e.blob_garbage {
        items.push(EditItem::BlobGarbage {
            number: g.number.0,
            records: g.records,
            bytes: g.bytes,
        });
    }
    for &(level, n) in &e.deleted_files {
        items.push(EditItem::DeleteFile { level, number: n.0 });
    }
    for (level, f) in &e.new_files {
        items.push(EditItem::AddFile(table_summary(path, offset, *level, f)?));
    }
    for (level, k) in &e.compact_cursors {
        items.push(EditItem::CompactCursor {
            level: *level,
            key: entry(path, offset, k, Vec::new())?,
        });
    }
    Ok(items)
}

/// One record of a blob file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlobRecord {
    /// Where the record starts in the file.
    pub offset: u64,
    /// The user key of the entry it was written for.
    pub key: Vec<u8>,
    /// The value, uncompressed.
    pub value: Vec<u8>,
    /// How the value is stored.
    pub compression: crate::sstable::CompressionType,
    /// The stored value's size.
    pub stored_len: usize,
}

/// A blob file's contents (`docs/format/blob.md`).
#[derive(Clone, Debug)]
pub struct BlobFile {
    /// The compression the writer tried on each value.
    pub compression: crate::sstable::CompressionType,
    /// The id of the column family it was written for.
    pub column_family: u32,
    /// Its records, in file order.
    pub records: Vec<BlobRecord>,
    /// The records' bytes (headers, keys and values): the footer's count, which the records
    /// were checked against, in a finished file.
    pub record_bytes: u64,
    /// It has its footer. A file being written at commit has none until its memtable's flush
    /// (`BlobOptions::write_blobs_at_commit`).
    pub finished: bool,
    /// In a file without a footer, the bytes after the last whole record: the tail a crash
    /// left (a record cut short, or zeros), which recovery never reads.
    pub torn_tail_bytes: u64,
}

/// Where the value of an entry of kind `BLOB` is: the blob file number, the offset and size
/// of the stored value, and its compression (`docs/format/blob.md`).
pub fn blob_index(value: &[u8]) -> Result<(u64, u64, u64, crate::sstable::CompressionType)> {
    let i = crate::blob::BlobIndex::decode(value)?;
    Ok((i.file.0, i.offset, i.size, i.compression))
}

/// The columns of an entry of kind `ENTITY` (`docs/format/wide_columns.md`).
pub fn entity_columns(value: &[u8]) -> Result<crate::wide_columns::WideColumns> {
    crate::wide_columns::WideColumns::decode(value)
}

/// Reads the blob file at `path` whole, checking its header, every record's checksum, its
/// footer's counts, and uncompressing every value. Damage is an `Err` naming the file and
/// offset.
pub fn read_blob_file(fs: &dyn FileSystem, path: &Path) -> Result<BlobFile> {
    let data = fs.open(path)?.read_all()?;
    collect_blob_file(path, &data, false)
}

/// [`read_blob_file`] for any blob file, finished or still being written at commit: a file
/// whose last bytes are no footer is read as one without ([`BlobFile::finished`] false),
/// every record checked, the tail a crash may leave after the last whole record reported
/// (not an error).
pub fn read_any_blob_file(fs: &dyn FileSystem, path: &Path) -> Result<BlobFile> {
    let data = fs.open(path)?.read_all()?;
    collect_blob_file(path, &data, !blob_file_has_footer(&data))
}

/// Whether `data`, a whole blob file, ends with its footer (magic and checksum right): a
/// file written at commit has none until its memtable's flush (`docs/format/blob.md`).
pub fn blob_file_has_footer(data: &[u8]) -> bool {
    crate::blob::format::has_footer(data)
}

fn collect_blob_file(path: &Path, data: &[u8], unfinished: bool) -> Result<BlobFile> {
    let mut records = Vec::new();
    let mut each = |r: &crate::blob::format::ScannedRecord<'_>| {
        let value = match r.compression {
            crate::sstable::CompressionType::None => r.value.to_vec(),
            c => crate::sstable::compression::uncompress(c, r.value, r.offset)
                .map_err(|e| e.with_file(path))?,
        };
        records.push(BlobRecord {
            offset: r.offset,
            key: r.key.to_vec(),
            value,
            compression: r.compression,
            stored_len: r.value.len(),
        });
        Ok(())
    };
    let (header, footer, torn_tail_bytes) = if unfinished {
        crate::blob::format::scan_unfinished(path, data, &mut each)?
    } else {
        let (h, f) = crate::blob::format::scan(path, data, &mut each)?;
        (h, f, 0)
    };
    Ok(BlobFile {
        compression: header.compression,
        column_family: header.column_family,
        records,
        record_bytes: footer.record_bytes,
        finished: !unfinished,
        torn_tail_bytes,
    })
}

/// The outcome of checking one file ([`verify_db`]).
#[derive(Debug)]
pub struct FileCheck {
    /// The file's path.
    pub path: PathBuf,
    /// What was found: a short summary when it is intact, the damage otherwise.
    pub result: Result<String>,
}

/// Checks every checksum of the DB in `dir`: CURRENT and the MANIFEST it names (every
/// record), every live table (every block), every live blob file (every record), every WAL
/// the DB still needs (every record; a torn tail, which recovery drops, is reported as
/// intact) and the blob files their indexes point into (values written at commit: no footer
/// yet, and a torn tail reported as intact, as recovery stops at it). When the MANIFEST
/// cannot be read, every table, blob file (with or without a footer) and WAL in the
/// directory is checked instead. Reads only.
///
/// Tables are looked for in their table paths as `opts` gives them: `default`'s `cf_paths`,
/// else `db_paths`, else the DB directory; the other families' in `db_paths` (or the DB
/// directory), so a family with `cf_paths` of its own reports its tables missing. A table
/// whose path id is beyond those paths is reported as such.
pub fn verify_db(opts: &Options, dir: &Path) -> Result<Vec<FileCheck>> {
    let fs = opts.fs.as_ref();
    if !fs.is_dir(dir) {
        return Err(Error::InvalidArgument(format!("{} is not a directory", dir.display())));
    }
    let wal_dir = opts.wal_dir.clone().unwrap_or_else(|| dir.to_path_buf());
    let mut checks = Vec::new();
    let layout = |_: &str| FamilyLayout::levels(crate::version::levels::MAX_NUM_LEVELS);
    let orders = crate::comparator::KnownOrders::of(&opts.comparator);
    let recovered = VersionSet::recover(opts.fs.clone(), dir, &layout, &orders);
    let default_paths = crate::db::paths::family_paths(opts, opts, dir)?;
    let db_paths = crate::db::paths::db_level_paths(opts, dir);
    let mut blobs: Vec<FileNumber> = Vec::new();
    let manifest_read = recovered.is_ok();
    let (tables, oldest_wal): (Vec<Result<PathBuf>>, FileNumber) = match recovered {
        Ok(vs) => {
            let mut tables: Vec<(FileNumber, Result<PathBuf>)> = Vec::new();
            for f in vs.families().values() {
                blobs.extend(f.current.blobs().numbers());
            }
            for f in vs.families().values() {
                let paths = if f.name == crate::column_family::DEFAULT_COLUMN_FAMILY_NAME {
                    &default_paths
                } else {
                    &db_paths
                };
                for (_, t) in f.current.files() {
                    let path = paths
                        .dir_for(t.number, t.path_id)
                        .map(|d| table_path(d.as_deref().unwrap_or(dir), t.number));
                    tables.push((t.number, path));
                }
            }
            tables.sort_by_key(|(n, _)| *n);
            checks.push(FileCheck {
                path: current_manifest(fs, dir)?,
                result: Ok(format!(
                    "named by CURRENT; {} tables, last sequence {}",
                    tables.len(),
                    vs.last_sequence().0
                )),
            });
            (tables.into_iter().map(|(_, p)| p).collect(), vs.log_number())
        }
        Err(e) => {
            let path = match &e {
                Error::Corruption { file, .. } | Error::ChecksumMismatch { file, .. } => {
                    file.clone()
                }
                _ => current_path(dir),
            };
            checks.push(FileCheck { path, result: Err(e) });
            let mut tables: Vec<FileNumber> = fs
                .list(dir)?
                .iter()
                .filter_map(|n| match parse_file_name(n) {
                    Some(FileKind::Table(t)) => Some(t),
                    _ => None,
                })
                .collect();
            tables.sort_unstable();
            blobs.extend(fs.list(dir)?.iter().filter_map(|n| match parse_file_name(n) {
                Some(FileKind::Blob(b)) => Some(b),
                _ => None,
            }));
            (tables.into_iter().map(|n| Ok(table_path(dir, n))).collect(), FileNumber(0))
        }
    };
    for path in tables {
        match path {
            Ok(path) => {
                let result = Table::open_in(fs, &path, &opts.comparator)
                    .and_then(|t| t.verify())
                    .map(|blocks| format!("{blocks} data blocks"));
                checks.push(FileCheck { path, result });
            }
            Err(e) => checks.push(FileCheck { path: dir.to_path_buf(), result: Err(e) }),
        }
    }
    // The WALs' blob indexes name the blob files written at commit that recovery reads.
    let mut wal_checks = Vec::new();
    let mut from_wals = std::collections::BTreeSet::new();
    let wals = crate::db::files::find_wals(fs, dir, &wal_dir)?;
    for (_, path) in wals.into_iter().filter(|(n, _)| *n >= oldest_wal) {
        let result = read_wal(fs, &path).and_then(|d| {
            from_wals.extend(blob_files_named(&d.records));
            match d.damage {
                Some(e) => Err(e),
                None if d.torn_tail_bytes > 0 => Ok(format!(
                    "{} records; {} bytes of torn tail",
                    d.records.len(),
                    d.torn_tail_bytes
                )),
                None => Ok(format!("{} records", d.records.len())),
            }
        });
        wal_checks.push(FileCheck { path, result });
    }
    // The version's files must be finished; the others may still be written at commit (all
    // of them when the MANIFEST could not be read and nothing says which is which).
    let mut to_check: Vec<(FileNumber, bool)> =
        blobs.iter().map(|&b| (b, !manifest_read)).collect();
    to_check.extend(from_wals.into_iter().filter(|b| !blobs.contains(b)).map(|b| (b, true)));
    to_check.sort_unstable();
    for (b, any) in to_check {
        let path = crate::filename::blob_path(dir, b);
        let read = if any { read_any_blob_file(fs, &path) } else { read_blob_file(fs, &path) };
        let result = read.map(|f| {
            let mut s = format!("{} blob records of {} bytes", f.records.len(), f.record_bytes);
            if !f.finished {
                s.push_str("; no footer yet (written at commit)");
            }
            if f.torn_tail_bytes > 0 {
                let _ = write!(s, "; {} bytes of torn tail", f.torn_tail_bytes);
            }
            s
        });
        checks.push(FileCheck { path, result });
    }
    checks.extend(wal_checks);
    Ok(checks)
}

/// The blob files the blob indexes of `records` point into.
fn blob_files_named(records: &[WalRecord]) -> impl Iterator<Item = FileNumber> + '_ {
    records
        .iter()
        .flat_map(|r| match r {
            WalRecord::Batch { entries, .. } | WalRecord::Transaction { entries, .. } => {
                entries.as_slice()
            }
            _ => &[],
        })
        .filter(|e| e.kind == "BLOB")
        .filter_map(|e| blob_index(&e.value).ok().map(|(file, ..)| FileNumber(file)))
}

/// The path of the MANIFEST CURRENT names (CURRENT was read successfully just before).
fn current_manifest(fs: &dyn FileSystem, dir: &Path) -> Result<PathBuf> {
    let cur = fs.open(&current_path(dir))?.read_all()?;
    let name = String::from_utf8_lossy(&cur);
    Ok(dir.join(name.trim_end()))
}

/// Whether every check found its file intact.
pub fn all_intact(checks: &[FileCheck]) -> bool {
    checks.iter().all(|c| c.result.is_ok())
}
