//! Entry points for fuzz targets (feature `fuzzing`): each takes arbitrary bytes, decodes them
//! as one on-disk structure with the engine's own reader, walks whatever decoded, and returns
//! the reader's verdict. A panic, hang or out-of-bounds read is the bug a fuzzer looks for; an
//! `Err` is the expected answer to damage. Also builders of well-formed inputs, for seed corpora.
//!
//! Not a stable API: it exists so `fuzz/` and the corpus replay test need no engine refactor.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::env::{FileSystem, MemFs, RandomAccessFile};
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::key::make_internal_key;
use crate::sstable::block_builder::BlockBuilder;
use crate::sstable::{Block, ReadBlockOptions, TableBuilder, TableOptions, TableReader};
use crate::types::{FileNumber, SeqNo, ValueType};
use crate::version::edit::{FileMetaData, VersionEdit};
use crate::version::levels::Version;
use crate::version::set::VersionSet;
use crate::wal::reader::LogReader;
use crate::wal::{LogWriter, WalRecoveryMode};
use crate::write_batch::WriteBatch;

/// Upper bound on the steps a walk takes, so a fuzz input cannot make a target slow.
const MAX_STEPS: usize = 100_000;

fn mem_file(name: &str, data: &[u8]) -> (MemFs, Arc<dyn RandomAccessFile>) {
    let fs = MemFs::new();
    let dir = Path::new("/fuzz");
    // MemFs operations on an existing directory cannot fail.
    let _ = fs.create_dir_all(dir);
    let path = dir.join(name);
    fs.write_file(&path, data);
    let file = fs.open(&path).unwrap_or_else(|_| unreachable!("file was just written"));
    (fs, file)
}

/// Reads `data` as a WAL in every recovery mode; returns the records read in the first
/// (point-in-time) mode.
pub fn wal_reader(data: &[u8]) -> Result<u64> {
    let (_fs, file) = mem_file("000001.log", data);
    let mut first = None;
    for mode in [
        WalRecoveryMode::PointInTime,
        WalRecoveryMode::TolerateCorruptedTailRecords,
        WalRecoveryMode::AbsoluteConsistency,
        WalRecoveryMode::SkipAnyCorruptedRecords,
    ] {
        let mut reader = LogReader::new(file.clone(), mode);
        let mut n = 0u64;
        let r = loop {
            match reader.read_record() {
                Ok(Some((offset, rec))) => {
                    assert!(offset < data.len() as u64, "record offset past the end");
                    assert!(rec.len() <= data.len(), "record longer than the file");
                    n += 1;
                }
                Ok(None) => break Ok(n),
                Err(e) => break Err(e),
            }
        };
        if first.is_none() {
            first = Some(r);
        }
    }
    first.unwrap_or(Ok(0))
}

fn walk(it: &mut dyn InternalIterator, data_seed: &[u8]) -> Result<u64> {
    let mut n = 0u64;
    it.seek_to_first();
    while it.valid() && (n as usize) < MAX_STEPS {
        let _ = (it.key().len(), it.value().len());
        n += 1;
        it.next();
    }
    it.status()?;
    it.seek_to_last();
    let mut m = 0usize;
    while it.valid() && m < MAX_STEPS {
        m += 1;
        it.prev();
    }
    it.status()?;
    // Seeks to a few targets taken from the input itself.
    for chunk in data_seed.chunks(16).take(8) {
        let target = make_internal_key(chunk, SeqNo(u64::from(chunk[0])), ValueType::Value);
        it.seek(&target);
        if it.valid() {
            it.next();
        }
        it.seek_for_prev(&target);
        if it.valid() {
            it.prev();
        }
        it.status()?;
    }
    Ok(n)
}

/// Decodes `data` as a data/index block and walks it forward, backward and with seeks.
pub fn block_decoder(data: &[u8]) -> Result<u64> {
    let block = Arc::new(Block::new(data.to_vec(), 0)?);
    let mut it = block.iter();
    walk(&mut it, data)
}

/// Opens `data` as a table file (footer, metaindex, properties, filter, index) and reads every
/// entry, plus point lookups.
pub fn table_open(data: &[u8]) -> Result<u64> {
    let (_fs, file) = mem_file("000001.sst", data);
    let table = Arc::new(TableReader::open(file, 1, None)?);
    let mut it = table.iter(ReadBlockOptions::default());
    let n = walk(&mut it, data)?;
    for chunk in data.chunks(32).take(4) {
        let lookup = make_internal_key(chunk, SeqNo::MAX, ValueType::Value);
        let mut steps = 0;
        table.get(&lookup, &ReadBlockOptions::default(), |_, _| {
            steps += 1;
            steps < 4
        })?;
    }
    Ok(n)
}

/// Decodes `data` as a version edit, applies it to an empty 7-level version, and checks that
/// re-encoding gives an edit that decodes to the same thing.
pub fn version_edit(data: &[u8]) -> Result<()> {
    let edit = VersionEdit::decode(data)?;
    let mut buf = Vec::new();
    edit.encode(&mut buf);
    let again = VersionEdit::decode(&buf)
        .map_err(|e| Error::corruption("", 0, format!("re-encoded edit does not decode: {e}")))?;
    let mut buf2 = Vec::new();
    again.encode(&mut buf2);
    assert_eq!(buf, buf2, "version edit encoding is not stable");
    Version::new(7, crate::comparator::KeyOrder::Bytewise).apply(&edit)?;
    Ok(())
}

/// Recovers a version set from a directory whose CURRENT names `MANIFEST-000001` = `data`.
pub fn manifest(data: &[u8]) -> Result<()> {
    let fs = MemFs::new();
    let dir = PathBuf::from("/fuzz");
    let _ = fs.create_dir_all(&dir);
    fs.write_file(&dir.join("CURRENT"), b"MANIFEST-000001\n");
    fs.write_file(&dir.join("MANIFEST-000001"), data);
    let orders = crate::comparator::KnownOrders::default();
    let layout = |_: &str| crate::version::set::FamilyLayout::levels(7);
    VersionSet::recover(Arc::new(fs), &dir, &layout, &orders).map(|_| ())
}

/// Decodes `data` as a write batch (a WAL record's payload) and iterates its records.
pub fn write_batch(data: &[u8]) -> Result<u64> {
    let batch = WriteBatch::from_vec(data.to_vec())?;
    let mut n = 0u64;
    for rec in batch.iter() {
        let _ = (rec.value_type, rec.key.len(), rec.value.len());
        n += 1;
    }
    assert_eq!(n, u64::from(batch.count()), "record count disagrees with the header");
    Ok(n)
}

/// Reads `data` as a blob file three ways: a scan of a finished file (header, every record,
/// footer counts), a scan of a file still being written (`scan_unfinished`, which lets a
/// crash's tail end the walk), and, for each record a scan found, the reads a table's blob
/// index makes through [`BlobFileReader`] (finished and unfinished), with the record's own
/// index and with indexes whose offset, size, key or compression are off by a little, each of
/// which must be an error or the record's value, never another; and the first bytes as a blob
/// index. Returns the records of the finished scan.
pub fn blob_file(data: &[u8]) -> Result<u64> {
    use crate::blob::format;
    use crate::blob::reader::BlobFileReader;
    use crate::blob::BlobIndex;
    let path = Path::new("/fuzz/000001.blob");
    let (fs, _file) = mem_file("000001.blob", data);
    let finished = format::scan(path, data, |_| Ok(()));
    let mut found = Vec::new();
    let unfinished = format::scan_unfinished(path, data, |r| {
        if found.len() < 64 {
            let at = r.offset + (format::RECORD_HEADER + r.key.len()) as u64;
            found.push((r.key.to_vec(), at, r.value.len() as u64, r.compression));
        }
        Ok(())
    });
    if let (Ok((_, footer)), Ok((_, counted, tail))) = (&finished, &unfinished) {
        // Read as unfinished, a finished file's footer is the tail a crash would leave.
        let expected = (counted.records, format::FOOTER_LEN as u64);
        assert_eq!((footer.records, *tail), expected, "the two scans disagree");
    }
    let readers = [BlobFileReader::open(&fs, path), BlobFileReader::open_unfinished(&fs, path)];
    for reader in readers.iter().flatten() {
        for (key, offset, size, compression) in &found {
            let exact = BlobIndex {
                file: FileNumber(1),
                offset: *offset,
                size: *size,
                compression: *compression,
            };
            let value = reader.read(key, &exact, None);
            let stored = &data[*offset as usize..(*offset + *size) as usize];
            if let (Ok(v), crate::sstable::CompressionType::None) = (&value, compression) {
                assert_eq!(v.as_slice(), stored, "an uncompressed record read back another value");
            }
            let other_compression = match compression {
                crate::sstable::CompressionType::None => crate::sstable::CompressionType::Snappy,
                _ => crate::sstable::CompressionType::None,
            };
            let near = [
                BlobIndex { compression: other_compression, ..exact },
                BlobIndex { offset: offset.wrapping_add(1), ..exact },
                BlobIndex { offset: offset.wrapping_sub(1), ..exact },
                BlobIndex { size: size.wrapping_add(1), ..exact },
                BlobIndex { size: size.saturating_sub(1), ..exact },
                BlobIndex { offset: u64::MAX - 2, ..exact },
                BlobIndex { size: u64::MAX, ..exact },
            ];
            for index in near {
                let _ = reader.read(key, &index, None);
            }
            let mut other = key.clone();
            other.push(0);
            assert!(reader.read(&other, &exact, None).is_err(), "a record read for another key");
        }
    }
    let _ = BlobIndex::decode(&data[..data.len().min(24)]);
    finished.map(|(_, footer)| footer.records)
}

// ---- builders of well-formed inputs (seed corpora) ----

/// A WAL file holding `records`.
pub fn build_wal(records: &[&[u8]]) -> Vec<u8> {
    let fs = MemFs::new();
    let dir = Path::new("/seed");
    let _ = fs.create_dir_all(dir);
    let path = dir.join("000001.log");
    let file = fs.create(&path).unwrap_or_else(|_| unreachable!("MemFs create"));
    let mut w = LogWriter::new(file);
    for r in records {
        let _ = w.add_record(r);
    }
    let _ = w.sync();
    drop(w);
    fs.read_file(&path).unwrap_or_default()
}

/// A write batch with puts, a delete and a merge.
pub fn build_write_batch(seq: u64, n: usize) -> Vec<u8> {
    let mut b = WriteBatch::new();
    for i in 0..n {
        b.put(format!("key{i}"), format!("value{i}"));
    }
    b.delete(b"gone");
    b.merge(b"counter", 1u64.to_le_bytes());
    b.set_sequence(SeqNo(seq));
    b.data().to_vec()
}

fn entries(n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let t = if i % 7 == 3 { ValueType::Deletion } else { ValueType::Value };
            (make_internal_key(format!("k{i:05}").as_bytes(), SeqNo(i as u64 + 1), t), {
                if t == ValueType::Deletion {
                    Vec::new()
                } else {
                    format!("v{i}").into_bytes()
                }
            })
        })
        .collect()
}

/// A data block of `n` entries with the given restart interval.
pub fn build_block(n: usize, restart_interval: usize) -> Vec<u8> {
    let mut b = BlockBuilder::new(restart_interval);
    for (k, v) in entries(n) {
        b.add(&k, &v);
    }
    b.finish().to_vec()
}

/// A new file `name` on a fresh `MemFs`, for a builder to write a seed into.
fn seed_file(name: &str) -> (MemFs, PathBuf, Box<dyn crate::env::WritableFile>) {
    let fs = MemFs::new();
    let dir = Path::new("/seed");
    let _ = fs.create_dir_all(dir);
    let path = dir.join(name);
    let file = fs.create(&path).unwrap_or_else(|_| unreachable!("MemFs create"));
    (fs, path, file)
}

/// A table of `n` entries; `compression` is 0 (none) or 1 (snappy).
pub fn build_table(n: usize, block_size: usize, compression: u8) -> Vec<u8> {
    let (fs, path, file) = seed_file("000001.sst");
    let opts = TableOptions {
        block_size,
        compression: crate::sstable::CompressionType::from_u8(compression)
            .unwrap_or(crate::sstable::CompressionType::None),
        ..TableOptions::default()
    };
    let mut b = TableBuilder::new(&opts, file, path.clone());
    for (k, v) in entries(n) {
        let _ = b.add(&k, &v);
    }
    let _ = b.finish();
    fs.read_file(&path).unwrap_or_default()
}

/// An encoded version edit adding `files` L0 files (with the counters a MANIFEST's first
/// record carries when `first` is set).
pub fn build_version_edit(files: u64, first: bool) -> Vec<u8> {
    build_version_edit_at(files, first, |_| 0)
}

/// [`build_version_edit`] with file `i` (0-based) at table path `path_of(i)`.
pub fn build_version_edit_at(files: u64, first: bool, path_of: impl Fn(u64) -> u32) -> Vec<u8> {
    let mut e = VersionEdit::default();
    if first {
        e.comparator = Some(crate::comparator::BYTEWISE_NAME.to_string());
        e.next_file_number = Some(FileNumber(files + 10));
    }
    e.log_number = Some(FileNumber(files + 2));
    e.last_sequence = Some(SeqNo(files * 10));
    for i in 0..files {
        e.new_files.push((
            0,
            FileMetaData {
                number: FileNumber(i + 3),
                file_size: 1000 + i,
                smallest: make_internal_key(b"a", SeqNo(i * 10 + 1), ValueType::Value),
                largest: make_internal_key(b"z", SeqNo(i * 10 + 5), ValueType::Value),
                smallest_seqno: SeqNo(i * 10 + 1),
                largest_seqno: SeqNo(i * 10 + 5),
                num_entries: 5,
                num_deletions: 0,
                data_time: 0,
                global_seqno: crate::types::SeqNo::ZERO,
                path_id: path_of(i),
                blob_refs: Vec::new(),
                file_checksum: None,
            },
        ));
    }
    let mut buf = Vec::new();
    e.encode(&mut buf);
    buf
}

/// A MANIFEST file: a first record with the counters and `edits` more edits.
pub fn build_manifest(edits: u64) -> Vec<u8> {
    let first = build_version_edit(0, true);
    let mut recs = vec![first];
    for i in 0..edits {
        let mut e = VersionEdit { log_number: Some(FileNumber(i + 2)), ..VersionEdit::default() };
        e.new_files.push((
            0,
            FileMetaData {
                number: FileNumber(100 + i),
                file_size: 4096,
                smallest: make_internal_key(b"a", SeqNo(i + 1), ValueType::Value),
                largest: make_internal_key(b"b", SeqNo(i + 1), ValueType::Value),
                smallest_seqno: SeqNo(i + 1),
                largest_seqno: SeqNo(i + 1),
                num_entries: 2,
                num_deletions: 0,
                data_time: 0,
                global_seqno: crate::types::SeqNo::ZERO,
                path_id: 0,
                blob_refs: Vec::new(),
                file_checksum: None,
            },
        ));
        let mut buf = Vec::new();
        e.encode(&mut buf);
        recs.push(buf);
    }
    let refs: Vec<&[u8]> = recs.iter().map(Vec::as_slice).collect();
    build_wal(&refs)
}

// ---- layout helpers (the corruption matrix labels damage by the structure it hits) ----

/// The regions of a table file: `(name, offset, length)` for "data", "filter", "index",
/// "properties", "metaindex" and "footer" (blocks include their trailers), sorted by offset.
pub fn table_regions(data: &[u8]) -> Result<Vec<(String, u64, u64)>> {
    use crate::sstable::format::{read_block, Footer, BLOCK_TRAILER_LEN, FOOTER_LEN};
    use crate::sstable::metaindex::{MetaIndex, FILTER_BLOCK, PROPERTIES_BLOCK};
    let (_fs, file) = mem_file("000001.sst", data);
    let len = data.len() as u64;
    if len < FOOTER_LEN as u64 {
        return Err(Error::corruption("", 0, "too short for a table"));
    }
    let footer_at = len - FOOTER_LEN as u64;
    let footer = Footer::decode(&data[footer_at as usize..], footer_at)?;
    let meta = MetaIndex::decode(
        &read_block(&*file, footer.metaindex, footer.checksum, true)?,
        footer.metaindex.offset,
    )?;
    let t = BLOCK_TRAILER_LEN as u64;
    let mut out = vec![
        ("footer".to_string(), footer_at, FOOTER_LEN as u64),
        ("index".to_string(), footer.index.offset, footer.index.size + t),
        ("metaindex".to_string(), footer.metaindex.offset, footer.metaindex.size + t),
    ];
    for name in [FILTER_BLOCK, PROPERTIES_BLOCK] {
        if let Some(h) = meta.get(name) {
            let short = name.strip_prefix("strata.").unwrap_or(name).to_string();
            out.push((short, h.offset, h.size + t));
        }
    }
    let data_end = out.iter().map(|r| r.1).min().unwrap_or(0);
    out.push(("data".to_string(), 0, data_end));
    out.sort_by_key(|r| r.1);
    Ok(out)
}

/// The file offset of each record of a log file (WAL or MANIFEST), read in point-in-time mode
/// up to the first damage.
pub fn log_record_offsets(data: &[u8]) -> Vec<u64> {
    let (_fs, file) = mem_file("000001.log", data);
    let mut reader = LogReader::new(file, WalRecoveryMode::PointInTime);
    let mut out = Vec::new();
    while let Ok(Some((offset, _))) = reader.read_record() {
        out.push(offset);
    }
    out
}

/// A finished blob file of `n` records (keys `key000`..., values of 40 to 400 bytes, half
/// of them repetitive) stored with `compression` (a `CompressionType` byte; unknown: none).
pub fn build_blob_file(n: usize, compression: u8) -> Vec<u8> {
    use crate::blob::writer::{BlobFileWriter, BlobWriteConfig};
    let (fs, path, file) = seed_file("000001.blob");
    let cfg = BlobWriteConfig {
        min_blob_size: Some(0),
        file_size: u64::MAX,
        compression: crate::sstable::CompressionType::from_u8(compression)
            .unwrap_or(crate::sstable::CompressionType::None),
        zstd_level: 3,
        column_family: 0,
        relocate_below: None,
        statistics: None,
        file_checksum: false,
    };
    let Ok(mut w) = BlobFileWriter::start(path.clone(), file, FileNumber(1), &cfg) else {
        unreachable!("MemFs append")
    };
    for i in 0..n {
        let value: Vec<u8> = if i % 2 == 0 {
            vec![b'a' + (i % 26) as u8; 40 + i * 37 % 360]
        } else {
            (0..40 + i * 53 % 360).map(|j| (j * 7 + i) as u8).collect()
        };
        let _ = w.add(format!("key{i:03}").as_bytes(), &value);
    }
    let _ = w.finish();
    fs.read_file(&path).unwrap_or_default()
}
