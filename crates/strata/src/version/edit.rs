//! `VersionEdit`: one change to the set of live files and the DB's counters, and its encoding.
//! The MANIFEST is a log in the WAL format (`crate::wal`) whose records are encoded edits;
//! replaying them in order from an empty state rebuilds the current version.
//!
//! ```text
//! edit  := field*                               (no count, no terminator: the record ends it)
//! field := tag: varint32 | body
//!
//! tag  field               body
//!   1  Comparator          varint len | UTF-8 name          (at most once)
//!   2  LogNumber           varint64 file number             (at most once)
//!   3  NextFileNumber      varint64 file number             (at most once)
//!   4  LastSequence        varint64 sequence number         (at most once)
//!   5  CompactCursor       varint32 level | varint len | internal key
//!   6  DeletedFile         varint32 level | varint64 file number
//!   7  NewFile             varint32 level | varint64 number | varint64 file_size
//!                          | varint len | smallest internal key | varint len | largest internal key
//!                          | varint64 smallest_seqno | varint64 largest_seqno
//!                          | varint64 num_entries | varint64 num_deletions
//!   9  ColumnFamily        varint32 id: the family the edit's files and CfLogNumber are of
//!                          (absent: `default`, id 0)                (at most once)
//!  10  ColumnFamilyAdd     varint len | UTF-8 name: creates family `ColumnFamily` (at most once)
//!  11  ColumnFamilyDrop    (no body): drops family `ColumnFamily`   (at most once)
//!  12  MaxColumnFamily     varint32: the largest family id ever used (at most once)
//!  13  CfLogNumber         varint64: WALs below it hold nothing of family `ColumnFamily`
//!                          that is not in its tables                 (at most once)
//!  tag & 0x4000 != 0       varint len | payload   ("safe to ignore": skipped when unknown)
//! 0x4008 FileTime          varint len | varint64 file number | varint64 seconds
//!                          (the data time of a file added earlier in the same edit;
//!                          written only when known, i.e. nonzero)
//!  14  GlobalSeqno         varint64 file number | varint64 sequence number
//!                          (the global sequence number of an ingested external file added
//!                          earlier in the same edit: every entry the file stores at sequence
//!                          number 0 reads as this one; written only when nonzero. Not safe to
//!                          ignore: a reader without it would read the entries at 0)
//! 0x4009 FullHistoryTsLow  varint len | timestamp bytes
//!                          (family `ColumnFamily`'s `full_history_ts_low`: reads at an older
//!                          user-defined timestamp are refused; at most once. Safe to ignore:
//!                          versions are kept whatever it is)
//!  15  PathId              varint64 file number | varint32 path id
//!                          (the table directory of a file added earlier in the same edit: an
//!                          index into its family's `cf_paths`, else the DB's `db_paths`;
//!                          written only when nonzero, so a DB whose tables are all at path 0
//!                          encodes as before. Not safe to ignore: a reader without it would
//!                          look for the file in the first directory)
//!  16  BlobFileAdd         varint64 blob file number | varint64 records | varint64 record bytes
//!                          (a blob file written by the edit's flush or compaction, or alive
//!                          at the start of a MANIFEST; `docs/format/blob.md`)
//!  17  BlobGarbage         varint64 blob file number | varint64 records | varint64 bytes
//!                          (records of a blob file no table references any more, added to
//!                          its garbage; a blob file added earlier in the same edit may be
//!                          named)
//!  18  BlobRefs            varint64 file number | varint32 count | count x varint64 blob
//!                          file number, ascending (the blob files a table added earlier in
//!                          the same edit holds indexes into; written only when it holds any)
//! 0x400A FileChecksum      varint len | varint64 file number | varint len | function name
//!                          | varint len | checksum bytes
//!                          (the whole-file checksum of a table or blob file added earlier in
//!                          the same edit,
//!                          `Options::file_checksums`; function `FileChecksumCrc32c`, checksum
//!                          the CRC32C as fixed32. Written only when computed; safe to ignore:
//!                          a reader without it has no checksum to verify the file against, and
//!                          one of an unknown function is dropped)
//! ```
//! Blob files belong to the family of the edit (tag 9). A family's version holds a blob file
//! from the edit adding it until no table of the version refers to it (tag 18); then it is
//! gone from the version, with no record saying so, and deleted once no older version still
//! read refers to it. Tags 16-18 are not safe to ignore: an older build would read tables
//! with blob indexes, or delete live blob files.
//!
//! Tag values. on-disk: never change. Compatibility rule: a field an older reader may ignore is
//! given a tag with the `SAFE_TO_IGNORE` bit and a length-prefixed payload, so the reader can
//! step over it; a field an older reader must understand gets a plain new tag, and the older
//! reader refuses the MANIFEST ("unknown tag N, written by a newer version?") rather than build
//! a wrong version. New per-file attributes go in a new tag carrying the file number.
//!
//! Column families: an edit changes one family's files (tag 9 names it; without it, `default`).
//! `LogNumber` is DB-wide: WALs below it hold nothing unflushed of any family, so they are
//! never replayed. A family's own `CfLogNumber` may be higher (it flushed more recently);
//! replay skips its records in WALs below it. Absent, it is the DB's `LogNumber`. A DB with
//! only `default` writes none of tags 9–13, so its MANIFEST reads as before families existed;
//! an older build refuses a MANIFEST with them (an unknown tag).
//!
//! Decoding checks structure, not meaning: levels are below [`LEVEL_LIMIT`], sequence numbers
//! fit in 56 bits, keys are internal keys (at least the 8-byte trailer), singleton fields appear
//! once. Whether the edit applies to the current version is the version set's business.

use std::fmt;
use std::path::Path;

use crate::error::{Error, Result};
use crate::key::TRAILER_LEN;
use crate::types::{FileNumber, SeqNo};
use crate::util::coding::{put_length_prefixed, put_varint32, put_varint64, Reader};

/// Levels stored in an edit are below this.
pub(crate) const LEVEL_LIMIT: usize = 64;

/// Field tags. on-disk: never change.
pub(crate) mod tag {
    pub const COMPARATOR: u32 = 1;
    pub const LOG_NUMBER: u32 = 2;
    pub const NEXT_FILE_NUMBER: u32 = 3;
    pub const LAST_SEQUENCE: u32 = 4;
    pub const COMPACT_CURSOR: u32 = 5;
    pub const DELETED_FILE: u32 = 6;
    pub const NEW_FILE: u32 = 7;
    /// Set in a tag whose field may be skipped by a reader that does not know it; such a
    /// field's body is `varint len | payload`.
    pub const SAFE_TO_IGNORE: u32 = 0x4000;
    /// The data time of a new file (FIFO's TTL); older readers skip it.
    pub const FILE_TIME: u32 = SAFE_TO_IGNORE | 8;
    /// The family's `full_history_ts_low` (see the module doc).
    pub const FULL_HISTORY_TS_LOW: u32 = SAFE_TO_IGNORE | 9;
    /// A new file's whole-file checksum (see the module doc).
    pub const FILE_CHECKSUM: u32 = SAFE_TO_IGNORE | 0xA;
    pub const COLUMN_FAMILY: u32 = 9;
    pub const COLUMN_FAMILY_ADD: u32 = 10;
    pub const COLUMN_FAMILY_DROP: u32 = 11;
    pub const MAX_COLUMN_FAMILY: u32 = 12;
    pub const CF_LOG_NUMBER: u32 = 13;
    /// The global sequence number of an ingested file (see the module doc).
    pub const GLOBAL_SEQNO: u32 = 14;
    /// The table directory of a new file (see the module doc).
    pub const PATH_ID: u32 = 15;
    /// Blob files (see the module doc).
    pub const BLOB_FILE_ADD: u32 = 16;
    pub const BLOB_GARBAGE: u32 = 17;
    pub const BLOB_REFS: u32 = 18;
}

/// A blob file written whole: its number, records and their bytes (`docs/format/blob.md`),
/// and the CRC32C of the whole file when the DB computed one (`Options::file_checksums`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BlobFileAddition {
    pub number: FileNumber,
    pub records: u64,
    pub bytes: u64,
    pub file_checksum: Option<u32>,
}

/// Records of a blob file that became garbage: their count and bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BlobGarbage {
    pub number: FileNumber,
    pub records: u64,
    pub bytes: u64,
}

/// Metadata of one SST file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FileMetaData {
    pub number: FileNumber,
    pub file_size: u64,
    /// Smallest internal key in the file.
    pub smallest: Vec<u8>,
    /// Largest internal key in the file.
    pub largest: Vec<u8>,
    pub smallest_seqno: SeqNo,
    pub largest_seqno: SeqNo,
    pub num_entries: u64,
    pub num_deletions: u64,
    /// Seconds since the Unix epoch at which the file's newest entry was written: the flush
    /// time, or the latest of a compaction's inputs'. 0 = unknown (files written before the
    /// field existed, repaired files); such a file never expires by FIFO's TTL.
    pub data_time: u64,
    /// For an ingested external file: the sequence number its entries (stored at 0) read
    /// as. 0 = none (entries read as stored).
    pub global_seqno: SeqNo,
    /// Which of its family's table directories holds the file (`version::paths`): an index
    /// into the family's `cf_paths`, else the DB's `db_paths`; 0 is the first (the DB
    /// directory when neither is set).
    pub path_id: u32,
    /// The blob files the table holds indexes into, ascending (empty for most tables).
    pub blob_refs: Vec<FileNumber>,
    /// The CRC32C of the whole file as written (RocksDB's file checksum with its crc32c
    /// generator), when the DB computed one (`Options::file_checksums`).
    pub file_checksum: Option<u32>,
}

/// The name RocksDB's crc32c file checksum generator records, which the MANIFEST records with
/// each checksum (`FileChecksumGenCrc32c`'s).
pub(crate) const CRC32C_CHECKSUM_NAME: &str = "FileChecksumCrc32c";

impl FileMetaData {
    /// The record of a finished table written as file `number` (the one place a record is
    /// built from a table: flush, compaction and recovery all use it).
    pub fn from_summary(number: FileNumber, s: crate::sstable::TableSummary) -> FileMetaData {
        FileMetaData {
            number,
            file_size: s.file_size,
            smallest: s.smallest,
            largest: s.largest,
            smallest_seqno: s.smallest_seqno,
            largest_seqno: s.largest_seqno,
            num_entries: s.num_entries,
            num_deletions: s.properties.num_deletions,
            data_time: 0,
            global_seqno: SeqNo::ZERO,
            path_id: 0,
            blob_refs: Vec::new(),
            file_checksum: s.file_checksum,
        }
    }
}

/// One MANIFEST record: fields that are `None`/empty are unchanged by the edit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct VersionEdit {
    /// The comparator name; written in the first edit of a MANIFEST.
    pub comparator: Option<String>,
    /// WALs with a number below this are obsolete (their data is in SSTs).
    pub log_number: Option<FileNumber>,
    /// The next unused file number.
    pub next_file_number: Option<FileNumber>,
    /// The last sequence number used by the DB.
    pub last_sequence: Option<SeqNo>,
    /// Files removed from a level.
    pub deleted_files: Vec<(usize, FileNumber)>,
    /// Files added to a level.
    pub new_files: Vec<(usize, FileMetaData)>,
    /// Per-level round-robin compaction cursors (internal keys).
    pub compact_cursors: Vec<(usize, Vec<u8>)>,
    /// The family the files, cursors and `cf_log_number` are of (0: `default`).
    pub column_family: u32,
    /// Creates family `column_family` with this name.
    pub cf_add: Option<String>,
    /// Drops family `column_family`.
    pub cf_drop: bool,
    /// The largest family id ever handed out.
    pub max_column_family: Option<u32>,
    /// The family's own log number (see the module doc).
    pub cf_log_number: Option<FileNumber>,
    /// The family's `full_history_ts_low` (user-defined timestamps).
    pub full_history_ts_low: Option<Vec<u8>>,
    /// Blob files written by the edit's flush or compaction.
    pub blob_files_added: Vec<BlobFileAddition>,
    /// Records of the family's blob files that became garbage.
    pub blob_garbage: Vec<BlobGarbage>,
}

impl VersionEdit {
    #[cfg(test)]
    pub fn new() -> Self {
        Self::default()
    }

    #[cfg(test)]
    /// Records that `file` was added to `level`.
    pub fn add_file(&mut self, level: usize, file: FileMetaData) {
        self.new_files.push((level, file));
    }

    #[cfg(test)]
    /// Records that file `number` was removed from `level`.
    pub fn delete_file(&mut self, level: usize, number: FileNumber) {
        self.deleted_files.push((level, number));
    }

    /// Appends the encoding of this edit to `buf`.
    pub fn encode(&self, buf: &mut Vec<u8>) {
        if let Some(c) = &self.comparator {
            put_varint32(buf, tag::COMPARATOR);
            put_length_prefixed(buf, c.as_bytes());
        }
        if self.column_family != 0 {
            put_varint32(buf, tag::COLUMN_FAMILY);
            put_varint32(buf, self.column_family);
        }
        if let Some(name) = &self.cf_add {
            put_varint32(buf, tag::COLUMN_FAMILY_ADD);
            put_length_prefixed(buf, name.as_bytes());
        }
        if self.cf_drop {
            put_varint32(buf, tag::COLUMN_FAMILY_DROP);
        }
        if let Some(n) = self.max_column_family {
            put_varint32(buf, tag::MAX_COLUMN_FAMILY);
            put_varint32(buf, n);
        }
        if let Some(n) = self.cf_log_number {
            put_varint32(buf, tag::CF_LOG_NUMBER);
            put_varint64(buf, n.0);
        }
        if let Some(n) = self.log_number {
            put_varint32(buf, tag::LOG_NUMBER);
            put_varint64(buf, n.0);
        }
        if let Some(n) = self.next_file_number {
            put_varint32(buf, tag::NEXT_FILE_NUMBER);
            put_varint64(buf, n.0);
        }
        if let Some(s) = self.last_sequence {
            put_varint32(buf, tag::LAST_SEQUENCE);
            put_varint64(buf, s.0);
        }
        for (level, key) in &self.compact_cursors {
            put_varint32(buf, tag::COMPACT_CURSOR);
            put_level(buf, *level);
            put_length_prefixed(buf, key);
        }
        if let Some(ts) = &self.full_history_ts_low {
            put_varint32(buf, tag::FULL_HISTORY_TS_LOW);
            put_length_prefixed(buf, ts);
        }
        for b in &self.blob_files_added {
            put_varint32(buf, tag::BLOB_FILE_ADD);
            put_varint64(buf, b.number.0);
            put_varint64(buf, b.records);
            put_varint64(buf, b.bytes);
            if let Some(crc) = b.file_checksum {
                put_file_checksum(buf, b.number, crc);
            }
        }
        for g in &self.blob_garbage {
            put_varint32(buf, tag::BLOB_GARBAGE);
            put_varint64(buf, g.number.0);
            put_varint64(buf, g.records);
            put_varint64(buf, g.bytes);
        }
        for (level, number) in &self.deleted_files {
            put_varint32(buf, tag::DELETED_FILE);
            put_level(buf, *level);
            put_varint64(buf, number.0);
        }
        for (level, f) in &self.new_files {
            put_varint32(buf, tag::NEW_FILE);
            put_level(buf, *level);
            put_varint64(buf, f.number.0);
            put_varint64(buf, f.file_size);
            put_length_prefixed(buf, &f.smallest);
            put_length_prefixed(buf, &f.largest);
            put_varint64(buf, f.smallest_seqno.0);
            put_varint64(buf, f.largest_seqno.0);
            put_varint64(buf, f.num_entries);
            put_varint64(buf, f.num_deletions);
            if f.data_time != 0 {
                let mut payload = Vec::new();
                put_varint64(&mut payload, f.number.0);
                put_varint64(&mut payload, f.data_time);
                put_varint32(buf, tag::FILE_TIME);
                put_length_prefixed(buf, &payload);
            }
            if f.global_seqno != SeqNo::ZERO {
                put_varint32(buf, tag::GLOBAL_SEQNO);
                put_varint64(buf, f.number.0);
                put_varint64(buf, f.global_seqno.0);
            }
            if f.path_id != 0 {
                put_varint32(buf, tag::PATH_ID);
                put_varint64(buf, f.number.0);
                put_varint32(buf, f.path_id);
            }
            if !f.blob_refs.is_empty() {
                put_varint32(buf, tag::BLOB_REFS);
                put_varint64(buf, f.number.0);
                put_varint32(buf, f.blob_refs.len() as u32);
                for b in &f.blob_refs {
                    put_varint64(buf, b.0);
                }
            }
            if let Some(crc) = f.file_checksum {
                put_file_checksum(buf, f.number, crc);
            }
        }
    }

    /// Decodes an edit. Errors are `Corruption` with the offset inside `data` and no file;
    /// see [`Self::decode_record`].
    pub fn decode(data: &[u8]) -> Result<VersionEdit> {
        let mut d = Decoder { r: Reader::new(data), field_start: 0 };
        let mut e = VersionEdit::default();
        while !d.r.is_empty() {
            d.field_start = d.r.position();
            let t = d.r.varint32().ok_or_else(|| d.err("truncated or overlong tag"))?;
            match t {
                tag::COMPARATOR => {
                    let name = d.bytes("comparator name")?;
                    let name = std::str::from_utf8(name)
                        .map_err(|_| d.err("comparator name is not UTF-8"))?;
                    d.once(&mut e.comparator, name.to_string(), "comparator")?;
                }
                tag::LOG_NUMBER => {
                    let n = FileNumber(d.u64("log number")?);
                    d.once(&mut e.log_number, n, "log number")?;
                }
                tag::COLUMN_FAMILY => {
                    let id = d.r.varint32().ok_or_else(|| d.err("bad column family id"))?;
                    let mut slot = (e.column_family != 0).then_some(e.column_family);
                    d.once(&mut slot, id, "column family")?;
                    e.column_family = id;
                }
                tag::COLUMN_FAMILY_ADD => {
                    let name = d.bytes("column family name")?;
                    let name = std::str::from_utf8(name)
                        .map_err(|_| d.err("column family name is not UTF-8"))?;
                    d.once(&mut e.cf_add, name.to_string(), "column family add")?;
                }
                tag::COLUMN_FAMILY_DROP => {
                    if e.cf_drop {
                        return Err(d.err("column family drop appears twice"));
                    }
                    e.cf_drop = true;
                }
                tag::MAX_COLUMN_FAMILY => {
                    let n = d.r.varint32().ok_or_else(|| d.err("bad max column family"))?;
                    d.once(&mut e.max_column_family, n, "max column family")?;
                }
                tag::CF_LOG_NUMBER => {
                    let n = FileNumber(d.u64("column family log number")?);
                    d.once(&mut e.cf_log_number, n, "column family log number")?;
                }
                tag::NEXT_FILE_NUMBER => {
                    let n = FileNumber(d.u64("next file number")?);
                    d.once(&mut e.next_file_number, n, "next file number")?;
                }
                tag::LAST_SEQUENCE => {
                    let s = d.seqno("last sequence")?;
                    d.once(&mut e.last_sequence, s, "last sequence")?;
                }
                tag::COMPACT_CURSOR => {
                    let level = d.level()?;
                    let key = d.internal_key("compact cursor")?;
                    e.compact_cursors.push((level, key.to_vec()));
                }
                tag::DELETED_FILE => {
                    let level = d.level()?;
                    let n = FileNumber(d.u64("deleted file number")?);
                    e.deleted_files.push((level, n));
                }
                tag::NEW_FILE => {
                    let level = d.level()?;
                    let f = FileMetaData {
                        number: FileNumber(d.u64("file number")?),
                        file_size: d.u64("file size")?,
                        smallest: d.internal_key("smallest key")?.to_vec(),
                        largest: d.internal_key("largest key")?.to_vec(),
                        smallest_seqno: d.seqno("smallest seqno")?,
                        largest_seqno: d.seqno("largest seqno")?,
                        num_entries: d.u64("entry count")?,
                        num_deletions: d.u64("deletion count")?,
                        data_time: 0,
                        global_seqno: SeqNo::ZERO,
                        path_id: 0,
                        blob_refs: Vec::new(),
                        file_checksum: None,
                    };
                    e.new_files.push((level, f));
                }
                tag::FILE_TIME => {
                    let payload = d.bytes("file time")?;
                    let mut r = Reader::new(payload);
                    let (Some(number), Some(secs)) = (r.varint64(), r.varint64()) else {
                        return Err(d.err("bad file time"));
                    };
                    // Safe to ignore: a time for a file not added by this edit is dropped.
                    if let Some((_, f)) =
                        e.new_files.iter_mut().rev().find(|(_, f)| f.number.0 == number)
                    {
                        f.data_time = secs;
                    }
                }
                tag::GLOBAL_SEQNO => {
                    let number = d.u64("global seqno file number")?;
                    let seq = d.seqno("global seqno")?;
                    let Some((_, f)) =
                        e.new_files.iter_mut().rev().find(|(_, f)| f.number.0 == number)
                    else {
                        return Err(d.err(format_args!(
                            "global seqno for file {number}, which the edit does not add"
                        )));
                    };
                    f.global_seqno = seq;
                }
                tag::PATH_ID => {
                    let number = d.u64("path id file number")?;
                    let id = d.r.varint32().ok_or_else(|| d.err("bad path id"))?;
                    let Some((_, f)) =
                        e.new_files.iter_mut().rev().find(|(_, f)| f.number.0 == number)
                    else {
                        return Err(d.err(format_args!(
                            "path id {id} for file {number}, which the edit does not add"
                        )));
                    };
                    if id == 0 {
                        return Err(d.err(format_args!(
                            "path id 0 for file {number} (never written: 0 is the default)"
                        )));
                    }
                    if f.path_id != 0 {
                        return Err(d.err(format_args!("path id of file {number} appears twice")));
                    }
                    f.path_id = id;
                }
                tag::BLOB_FILE_ADD => {
                    let number = FileNumber(d.u64("blob file number")?);
                    let records = d.u64("blob file records")?;
                    let bytes = d.u64("blob file bytes")?;
                    e.blob_files_added.push(BlobFileAddition {
                        number,
                        records,
                        bytes,
                        file_checksum: None,
                    });
                }
                tag::BLOB_GARBAGE => {
                    let number = FileNumber(d.u64("blob garbage file number")?);
                    let records = d.u64("blob garbage records")?;
                    let bytes = d.u64("blob garbage bytes")?;
                    e.blob_garbage.push(BlobGarbage { number, records, bytes });
                }
                tag::BLOB_REFS => {
                    let number = d.u64("blob refs file number")?;
                    let n = d.r.varint32().ok_or_else(|| d.err("bad blob refs count"))?;
                    let mut refs = Vec::with_capacity((n as usize).min(1024));
                    for _ in 0..n {
                        let b = FileNumber(d.u64("blob refs entry")?);
                        if refs.last().is_some_and(|&l| l >= b) {
                            return Err(
                                d.err(format_args!("blob refs of file {number} not ascending"))
                            );
                        }
                        refs.push(b);
                    }
                    let Some((_, f)) =
                        e.new_files.iter_mut().rev().find(|(_, f)| f.number.0 == number)
                    else {
                        return Err(d.err(format_args!(
                            "blob refs for file {number}, which the edit does not add"
                        )));
                    };
                    if !f.blob_refs.is_empty() {
                        return Err(d.err(format_args!("blob refs of file {number} appear twice")));
                    }
                    f.blob_refs = refs;
                }
                tag::FILE_CHECKSUM => {
                    let payload = d.bytes("file checksum")?;
                    let mut r = Reader::new(payload);
                    let (Some(number), Some(name), Some(sum)) =
                        (r.varint64(), r.length_prefixed(), r.length_prefixed())
                    else {
                        return Err(d.err("bad file checksum"));
                    };
                    // Safe to ignore: another function's checksum, or one for a file the
                    // edit does not add (a table or a blob file), is dropped.
                    let crc = <[u8; 4]>::try_from(sum).ok().map(u32::from_le_bytes);
                    if let (true, Some(crc)) = (name == CRC32C_CHECKSUM_NAME.as_bytes(), crc) {
                        if let Some((_, f)) =
                            e.new_files.iter_mut().rev().find(|(_, f)| f.number.0 == number)
                        {
                            f.file_checksum = Some(crc);
                        } else if let Some(b) =
                            e.blob_files_added.iter_mut().rev().find(|b| b.number.0 == number)
                        {
                            b.file_checksum = Some(crc);
                        }
                    }
                }
                tag::FULL_HISTORY_TS_LOW => {
                    let ts = d.bytes("full_history_ts_low")?.to_vec();
                    d.once(&mut e.full_history_ts_low, ts, "full_history_ts_low")?;
                }
                t if t & tag::SAFE_TO_IGNORE != 0 => {
                    d.bytes("ignorable field")?;
                }
                t => {
                    return Err(d.err(format_args!("unknown tag {t}, written by a newer version?")));
                }
            }
        }
        Ok(e)
    }

    /// [`Self::decode`] for the MANIFEST record at `record_offset` of `file`: a `Corruption`
    /// names the file and the record, and the byte inside the edit in its reason.
    pub fn decode_record(data: &[u8], file: &Path, record_offset: u64) -> Result<VersionEdit> {
        VersionEdit::decode(data).map_err(|e| match e {
            Error::Corruption { offset, reason, .. } => Error::corruption(
                file,
                record_offset,
                format!("{reason} (byte {offset} of the version edit in the record here)"),
            ),
            other => other,
        })
    }
}

/// The `FileChecksum` field of file `number` (a table or a blob file the edit adds).
fn put_file_checksum(buf: &mut Vec<u8>, number: FileNumber, crc: u32) {
    let mut payload = Vec::new();
    put_varint64(&mut payload, number.0);
    put_length_prefixed(&mut payload, CRC32C_CHECKSUM_NAME.as_bytes());
    put_length_prefixed(&mut payload, &crc.to_le_bytes());
    put_varint32(buf, tag::FILE_CHECKSUM);
    put_length_prefixed(buf, &payload);
}

fn put_level(buf: &mut Vec<u8>, level: usize) {
    debug_assert!(level < LEVEL_LIMIT, "level {level} out of range");
    put_varint32(buf, level as u32);
}

struct Decoder<'a> {
    r: Reader<'a>,
    /// Offset of the tag of the field being decoded; errors point at it.
    field_start: usize,
}

impl<'a> Decoder<'a> {
    fn err(&self, reason: impl fmt::Display) -> Error {
        Error::corruption("", self.field_start as u64, format!("version edit: {reason}"))
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        self.r.varint64().ok_or_else(|| self.err(format_args!("bad {what}")))
    }

    fn bytes(&mut self, what: &str) -> Result<&'a [u8]> {
        self.r.length_prefixed().ok_or_else(|| self.err(format_args!("bad {what}")))
    }

    fn seqno(&mut self, what: &str) -> Result<SeqNo> {
        let s = SeqNo(self.u64(what)?);
        if s > SeqNo::MAX {
            return Err(self.err(format_args!("{what} {} exceeds 56 bits", s.0)));
        }
        Ok(s)
    }

    fn level(&mut self) -> Result<usize> {
        let l = self.r.varint32().ok_or_else(|| self.err("bad level"))? as usize;
        if l >= LEVEL_LIMIT {
            return Err(self.err(format_args!("level {l} out of range (limit {LEVEL_LIMIT})")));
        }
        Ok(l)
    }

    fn internal_key(&mut self, what: &str) -> Result<&'a [u8]> {
        let k = self.bytes(what)?;
        if k.len() < TRAILER_LEN {
            return Err(self.err(format_args!(
                "{what} is not an internal key ({} bytes, shorter than the trailer)",
                k.len()
            )));
        }
        Ok(k)
    }

    fn once<T>(&self, slot: &mut Option<T>, v: T, what: &str) -> Result<()> {
        if slot.is_some() {
            return Err(self.err(format_args!("{what} appears twice")));
        }
        *slot = Some(v);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::make_internal_key;
    use crate::types::ValueType;
    use rand::{Rng, SeedableRng};

    fn file(n: u64) -> FileMetaData {
        FileMetaData {
            number: FileNumber(n),
            file_size: 1 << 20 | n,
            smallest: make_internal_key(b"apple", SeqNo(n), ValueType::Value),
            largest: make_internal_key(b"zebra", SeqNo(n + 5), ValueType::Deletion),
            smallest_seqno: SeqNo(n),
            largest_seqno: SeqNo(n + 5),
            num_entries: 1000 + n,
            num_deletions: n,
            data_time: if n.is_multiple_of(2) { 1_700_000_000 + n } else { 0 },
            global_seqno: if n.is_multiple_of(3) { SeqNo(n + 7) } else { SeqNo::ZERO },
            path_id: if n % 4 == 1 { 3 } else { 0 },
            blob_refs: if n % 2 == 1 { vec![FileNumber(2), FileNumber(n + 100)] } else { vec![] },
            file_checksum: (n % 3 == 1).then_some(0xdead_0000 | n as u32),
        }
    }

    fn full_edit() -> VersionEdit {
        let mut e = VersionEdit::new();
        e.comparator = Some(crate::comparator::BYTEWISE_NAME.to_string());
        e.log_number = Some(FileNumber(12));
        e.next_file_number = Some(FileNumber(300));
        e.last_sequence = Some(SeqNo::MAX);
        e.delete_file(0, FileNumber(4));
        e.delete_file(63, FileNumber(u64::MAX));
        e.add_file(1, file(7));
        e.add_file(6, file(8));
        e.add_file(0, FileMetaData { smallest: vec![0; 8], largest: vec![0xff; 8], ..file(9) });
        e.compact_cursors.push((2, make_internal_key(b"m", SeqNo(3), ValueType::Value)));
        e.full_history_ts_low = Some(7u64.to_le_bytes().to_vec());
        e.blob_files_added.push(BlobFileAddition {
            number: FileNumber(2),
            records: 9,
            bytes: 1 << 40,
            file_checksum: None,
        });
        e.blob_files_added.push(BlobFileAddition {
            number: FileNumber(3),
            records: 1,
            bytes: 10,
            file_checksum: Some(0x0b10_bc4c),
        });
        e.blob_garbage.push(BlobGarbage { number: FileNumber(2), records: 1, bytes: 300 });
        e
    }

    fn encoded(e: &VersionEdit) -> Vec<u8> {
        let mut buf = Vec::new();
        e.encode(&mut buf);
        buf
    }

    #[test]
    fn roundtrip_all_fields_and_empty() {
        let e = full_edit();
        assert_eq!(VersionEdit::decode(&encoded(&e)).unwrap(), e);
        let empty = VersionEdit::new();
        assert!(encoded(&empty).is_empty());
        assert_eq!(VersionEdit::decode(&[]).unwrap(), empty);
        // Encoding appends.
        let mut buf = vec![9];
        e.encode(&mut buf);
        assert_eq!(&buf[1..], &encoded(&e)[..]);
    }

    #[test]
    fn tag_values_are_fixed() {
        assert_eq!(
            [
                tag::COMPARATOR,
                tag::LOG_NUMBER,
                tag::NEXT_FILE_NUMBER,
                tag::LAST_SEQUENCE,
                tag::COMPACT_CURSOR,
                tag::DELETED_FILE,
                tag::NEW_FILE,
                tag::SAFE_TO_IGNORE
            ],
            [1, 2, 3, 4, 5, 6, 7, 0x4000]
        );
        assert_eq!(
            [
                tag::FILE_TIME,
                tag::COLUMN_FAMILY,
                tag::COLUMN_FAMILY_ADD,
                tag::COLUMN_FAMILY_DROP,
                tag::MAX_COLUMN_FAMILY,
                tag::CF_LOG_NUMBER,
                tag::GLOBAL_SEQNO,
                tag::PATH_ID,
                tag::FULL_HISTORY_TS_LOW
            ],
            [0x4008, 9, 10, 11, 12, 13, 14, 15, 0x4009]
        );
        assert_eq!([tag::BLOB_FILE_ADD, tag::BLOB_GARBAGE, tag::BLOB_REFS], [16, 17, 18]);
        assert_eq!(tag::FILE_CHECKSUM, 0x400A);
        let mut e = VersionEdit::new();
        e.log_number = Some(FileNumber(5));
        e.delete_file(2, FileNumber(9));
        assert_eq!(encoded(&e), vec![2, 5, 6, 2, 9]);
    }

    /// A file checksum of another function (a RocksDB generator this build does not have) or
    /// for a file the edit does not add is dropped: the field is safe to ignore.
    #[test]
    fn a_checksum_of_another_function_or_file_is_dropped() {
        let mut e = VersionEdit::new();
        e.add_file(0, FileMetaData { file_checksum: None, ..file(2) });
        let mut data = encoded(&e);
        for (number, name) in [(2u64, &b"FileChecksumSha1"[..]), (7, b"FileChecksumCrc32c")] {
            let mut payload = Vec::new();
            put_varint64(&mut payload, number);
            put_length_prefixed(&mut payload, name);
            put_length_prefixed(&mut payload, &[1, 2, 3, 4]);
            put_varint32(&mut data, tag::FILE_CHECKSUM);
            put_length_prefixed(&mut data, &payload);
        }
        assert_eq!(VersionEdit::decode(&data).unwrap(), e);
        let mut good = encoded(&e);
        let mut payload = Vec::new();
        put_varint64(&mut payload, 2);
        put_length_prefixed(&mut payload, b"FileChecksumCrc32c");
        put_length_prefixed(&mut payload, &7u32.to_le_bytes());
        put_varint32(&mut good, tag::FILE_CHECKSUM);
        put_length_prefixed(&mut good, &payload);
        let decoded = VersionEdit::decode(&good).unwrap();
        assert_eq!(decoded.new_files[0].1.file_checksum, Some(7));
    }

    #[test]
    fn unknown_safe_to_ignore_tag_is_skipped() {
        let e = full_edit();
        let mut buf = Vec::new();
        put_varint32(&mut buf, tag::SAFE_TO_IGNORE | 0x17);
        put_length_prefixed(&mut buf, b"future field payload");
        e.encode(&mut buf);
        put_varint32(&mut buf, tag::SAFE_TO_IGNORE | 1);
        put_length_prefixed(&mut buf, b"");
        assert_eq!(VersionEdit::decode(&buf).unwrap(), e);
        // A truncated ignorable field is still corruption.
        let mut bad = Vec::new();
        put_varint32(&mut bad, tag::SAFE_TO_IGNORE | 2);
        bad.push(10);
        bad.extend_from_slice(b"short");
        assert!(VersionEdit::decode(&bad).unwrap_err().is_corruption());
    }

    #[test]
    fn file_time_follows_its_file_and_is_skipped_for_other_files() {
        let mut e = VersionEdit::new();
        e.add_file(0, file(8));
        let buf = encoded(&e);
        assert!(buf.windows(2).any(|w| w == [0x88, 0x80]), "FILE_TIME tag written");
        assert_eq!(VersionEdit::decode(&buf).unwrap().new_files[0].1.data_time, 1_700_000_008);
        // A time for a file the edit does not add is ignored, like any ignorable field.
        let mut buf = Vec::new();
        let mut payload = Vec::new();
        put_varint64(&mut payload, 99);
        put_varint64(&mut payload, 5);
        put_varint32(&mut buf, tag::FILE_TIME);
        put_length_prefixed(&mut buf, &payload);
        assert_eq!(VersionEdit::decode(&buf).unwrap(), VersionEdit::new());
        // A payload that is not two varints is corruption.
        let mut bad = Vec::new();
        put_varint32(&mut bad, tag::FILE_TIME);
        put_length_prefixed(&mut bad, &[0x80]);
        assert!(VersionEdit::decode(&bad).unwrap_err().is_corruption());
    }

    #[test]
    fn path_id_follows_its_file_and_only_when_nonzero() {
        // At path 0 a file encodes exactly as before the tag existed.
        let mut e = VersionEdit::new();
        e.add_file(0, FileMetaData { path_id: 0, ..file(8) });
        let before = encoded(&e);
        assert_eq!(VersionEdit::decode(&before).unwrap(), e);
        let mut at_two = VersionEdit::new();
        at_two.add_file(0, FileMetaData { path_id: 2, ..file(8) });
        let buf = encoded(&at_two);
        let mut expected = before.clone();
        expected.push(tag::PATH_ID as u8);
        put_varint64(&mut expected, 8);
        expected.push(2);
        // The same bytes plus the field: tag 15 | file number | path id, after the file.
        assert_eq!(buf, expected);
        assert_eq!(VersionEdit::decode(&buf).unwrap(), at_two);
        let corrupt = |data: &[u8], needle: &str| {
            let err = VersionEdit::decode(data).unwrap_err();
            assert!(err.is_corruption(), "{err}");
            assert!(err.to_string().contains(needle), "{err} lacks {needle}");
        };
        // A path id for a file the edit does not add: a reader could not place it.
        let mut stray = Vec::new();
        put_varint32(&mut stray, tag::PATH_ID);
        put_varint64(&mut stray, 99);
        put_varint32(&mut stray, 1);
        corrupt(&stray, "path id 1 for file 99, which the edit does not add");
        // 0 is never written, and a file has one path id.
        let mut zero = before.clone();
        zero.push(tag::PATH_ID as u8);
        put_varint64(&mut zero, 8);
        zero.push(0);
        corrupt(&zero, "path id 0 for file 8");
        let mut twice = buf.clone();
        twice.push(tag::PATH_ID as u8);
        put_varint64(&mut twice, 8);
        twice.push(1);
        corrupt(&twice, "path id of file 8 appears twice");
        // A truncated field.
        corrupt(&buf[..buf.len() - 1], "bad path id");
    }

    #[test]
    fn unknown_required_tag_is_rejected() {
        let mut buf = encoded(&full_edit());
        let at = buf.len();
        put_varint32(&mut buf, 8);
        put_varint64(&mut buf, 1);
        let e = VersionEdit::decode(&buf).unwrap_err();
        match &e {
            Error::Corruption { offset, reason, .. } => {
                assert_eq!(*offset, at as u64);
                assert!(reason.contains("unknown tag 8, written by a newer version?"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        let e = VersionEdit::decode_record(&buf, Path::new("/db/MANIFEST-000003"), 512)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("corruption in /db/MANIFEST-000003 at offset 512:"), "{e}");
    }

    #[test]
    fn structural_checks() {
        let corrupt = |data: &[u8], needle: &str| {
            let e = VersionEdit::decode(data).unwrap_err();
            assert!(e.is_corruption());
            assert!(e.to_string().contains(needle), "{e} lacks {needle}");
        };
        // Level out of range.
        corrupt(&[tag::DELETED_FILE as u8, 64, 1], "level 64 out of range");
        // Smallest key shorter than a trailer.
        let mut f = file(1);
        f.smallest = b"short".to_vec();
        let mut e = VersionEdit::new();
        e.new_files.push((0, f));
        corrupt(&encoded(&e), "smallest key is not an internal key");
        // Compact cursor too short.
        corrupt(&[tag::COMPACT_CURSOR as u8, 1, 2, b'a', b'b'], "not an internal key");
        // Duplicate singleton.
        corrupt(&[2, 1, 2, 1], "log number appears twice");
        // Sequence number beyond 56 bits.
        let mut buf = vec![tag::LAST_SEQUENCE as u8];
        put_varint64(&mut buf, 1 << 56);
        corrupt(&buf, "exceeds 56 bits");
        // Comparator not UTF-8.
        corrupt(&[1, 2, 0xff, 0xfe], "not UTF-8");
    }

    fn check(data: &[u8]) {
        match VersionEdit::decode(data) {
            Ok(e) => {
                // A valid edit re-encodes to something that decodes to the same edit.
                assert_eq!(VersionEdit::decode(&encoded(&e)).unwrap(), e);
                for (l, f) in &e.new_files {
                    assert!(*l < LEVEL_LIMIT);
                    assert!(f.smallest.len() >= TRAILER_LEN && f.largest.len() >= TRAILER_LEN);
                }
            }
            Err(e) => assert!(e.is_corruption(), "{e}"),
        }
    }

    #[test]
    fn every_truncation_and_bit_flip_is_valid_or_corruption() {
        let data = encoded(&full_edit());
        for cut in 0..data.len() {
            check(&data[..cut]);
        }
        for pos in 0..data.len() {
            for bit in 0..8 {
                let mut d = data.clone();
                d[pos] ^= 1 << bit;
                check(&d);
            }
        }
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        for _ in 0..20_000 {
            let mut d = data.clone();
            for _ in 0..rng.gen_range(1..5) {
                let p = rng.gen_range(0..d.len());
                d[p] = rng.gen();
            }
            d.truncate(rng.gen_range(0..=d.len()));
            check(&d);
        }
        for len in 0..64 {
            let junk: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            check(&junk);
        }
    }
}
