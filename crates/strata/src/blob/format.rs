//! The blob file format: the values a flush or compaction moved out of its tables, or the
//! write path wrote at commit (`db/blob_log.rs`: such a file has no footer until its
//! memtable's flush finishes it).
//!
//! ```text
//! blob file := header | record* | footer
//!
//! header := magic: fixed64 | version: u8 (1) | compression: u8 | 0: u8 | 0: u8
//!         | column family: fixed32 | crc: fixed32                        HEADER_LEN = 20
//!           crc = mask_crc(crc32c(the 16 bytes before it))
//!           compression = what the writer tried on each value
//! record := crc: fixed32 | key_len: fixed32 | value_len: fixed32 | compression: u8
//!         | key | value                                             RECORD_HEADER = 13
//!           crc = mask_crc(crc32c(key_len, value_len and compression bytes | key | value))
//!           key = the entry's user key; value = the stored bytes, compressed as the
//!           record's compression says (the header's, or none where that did not shrink
//!           the value by an eighth)
//! footer := magic: fixed64 | records: fixed64 | record bytes: fixed64 | crc: fixed32
//!                                                                      FOOTER_LEN = 28
//!           crc = mask_crc(crc32c(the 24 bytes before it))
//!           record bytes = the sum of the records' sizes (header, key and value)
//!
//!  0          20                                              size-28        size
//!  +----------+-----+-----+-------+-----+-----+-------+--...--+--------------+
//!  |  header  | crc |klen|vlen|c| key |  value      | ...   |    footer    |
//!  +----------+-----+-----+-------+-----+-------------+--...--+--------------+
//!                                       ^ a blob index's offset points here
//! ```
//! Integers are little-endian; `mask_crc` is the WAL's (`docs/format/wal.md`). A table entry
//! of type `BlobIndex` holds an index (`super::index`) with the file number, the offset and
//! size of the stored value, and its compression. A reader reads the whole record (it knows
//! the key's length from the entry), checks the lengths and the key against the entry's and
//! the record's checksum, so a damaged record, or an index pointing at the wrong one, is an
//! error naming the file and offset, never another key's value.
//!
//! on-disk: never change. A new layout takes a new version, which older readers refuse by
//! number. Mirrored in `docs/format/blob.md`.

use std::path::Path;

use crate::error::{Error, Result};
use crate::sstable::CompressionType;
use crate::util::checksum::mask_crc;
use crate::util::coding::{decode_fixed32, decode_fixed64, put_fixed32, put_fixed64};

/// First 8 bytes of the header and of the footer ("strablob" read as little-endian bytes).
pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"strablob");
/// The layout version this build writes and reads.
pub(crate) const VERSION: u8 = 1;
pub(crate) const HEADER_LEN: usize = 20;
pub(crate) const RECORD_HEADER: usize = 13;
/// Where a record's compression byte is.
const COMPRESSION_AT: usize = 12;
pub(crate) const FOOTER_LEN: usize = 28;

/// What a blob file's header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub compression: CompressionType,
    pub column_family: u32,
}

impl Header {
    pub fn encode(self) -> [u8; HEADER_LEN] {
        let mut b = Vec::with_capacity(HEADER_LEN);
        put_fixed64(&mut b, MAGIC);
        b.extend_from_slice(&[VERSION, self.compression as u8, 0, 0]);
        put_fixed32(&mut b, self.column_family);
        let crc = mask_crc(crc32c::crc32c(&b));
        put_fixed32(&mut b, crc);
        let mut out = [0u8; HEADER_LEN];
        out.copy_from_slice(&b);
        out
    }

    /// Decodes the header of `path` (the file's first [`HEADER_LEN`] bytes).
    pub fn decode(path: &Path, b: &[u8]) -> Result<Header> {
        let bad = |offset: u64, reason: String| Err(Error::corruption(path, offset, reason));
        if b.len() < HEADER_LEN {
            return bad(0, format!("blob file header of {} bytes, expected {HEADER_LEN}", b.len()));
        }
        if decode_fixed64(b, 0) != MAGIC {
            return bad(0, "not a blob file (bad magic number in the header)".into());
        }
        let want = mask_crc(crc32c::crc32c(&b[..16]));
        if decode_fixed32(b, 16) != want {
            return bad(16, "blob file header checksum mismatch".into());
        }
        if b[8] != VERSION {
            return bad(
                8,
                format!("blob file version {}, this build reads version {VERSION}", b[8]),
            );
        }
        let Some(compression) = CompressionType::from_u8(b[9]) else {
            return bad(9, format!("unknown compression type {} in the blob file header", b[9]));
        };
        Ok(Header { compression, column_family: decode_fixed32(b, 12) })
    }
}

/// What a blob file's footer says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Footer {
    pub records: u64,
    pub record_bytes: u64,
}

impl Footer {
    pub fn encode(self) -> [u8; FOOTER_LEN] {
        let mut b = Vec::with_capacity(FOOTER_LEN);
        put_fixed64(&mut b, MAGIC);
        put_fixed64(&mut b, self.records);
        put_fixed64(&mut b, self.record_bytes);
        let crc = mask_crc(crc32c::crc32c(&b));
        put_fixed32(&mut b, crc);
        let mut out = [0u8; FOOTER_LEN];
        out.copy_from_slice(&b);
        out
    }

    /// Decodes the footer of `path`, `b` being its last [`FOOTER_LEN`] bytes, read at
    /// `offset`.
    pub fn decode(path: &Path, offset: u64, b: &[u8]) -> Result<Footer> {
        let bad = |at: u64, reason: &str| Err(Error::corruption(path, offset + at, reason));
        if b.len() != FOOTER_LEN || decode_fixed64(b, 0) != MAGIC {
            return bad(0, "blob file footer missing (file truncated or not finished)");
        }
        if decode_fixed32(b, 24) != mask_crc(crc32c::crc32c(&b[..24])) {
            return bad(24, "blob file footer checksum mismatch");
        }
        Ok(Footer { records: decode_fixed64(b, 8), record_bytes: decode_fixed64(b, 16) })
    }
}

/// The checksum of a record: over its lengths, compression, key and stored value.
pub(crate) fn record_crc(key: &[u8], value: &[u8], compression: u8) -> u32 {
    let mut head = [0u8; 9];
    head[..4].copy_from_slice(&(key.len() as u32).to_le_bytes());
    head[4..8].copy_from_slice(&(value.len() as u32).to_le_bytes());
    head[8] = compression;
    let c = crc32c::crc32c(&head);
    let c = crc32c::crc32c_append(c, key);
    mask_crc(crc32c::crc32c_append(c, value))
}

/// Appends the header of a record of `key` and stored `value` (compressed as `compression`
/// says) to `buf`.
pub(crate) fn put_record_header(
    buf: &mut Vec<u8>,
    key: &[u8],
    value: &[u8],
    compression: CompressionType,
) {
    put_fixed32(buf, record_crc(key, value, compression as u8));
    put_fixed32(buf, key.len() as u32);
    put_fixed32(buf, value.len() as u32);
    buf.push(compression as u8);
}

/// The bytes a record of `key_len` and `value_len` takes.
pub(crate) fn record_size(key_len: usize, value_len: u64) -> u64 {
    (RECORD_HEADER + key_len) as u64 + value_len
}

/// Checks the record `rec` (header, key and stored value) read at `offset` of `path` for the
/// entry of `key` whose value is `value_len` bytes stored as `compression`; returns the
/// stored value.
pub(crate) fn check_record<'r>(
    path: &Path,
    offset: u64,
    rec: &'r [u8],
    key: &[u8],
    value_len: usize,
    compression: CompressionType,
) -> Result<&'r [u8]> {
    let bad = |at: usize, reason: String| Err(Error::corruption(path, offset + at as u64, reason));
    debug_assert_eq!(rec.len(), RECORD_HEADER + key.len() + value_len);
    let (klen, vlen) = (decode_fixed32(rec, 4) as usize, decode_fixed32(rec, 8) as usize);
    if klen != key.len() || vlen != value_len {
        return bad(
            4,
            format!(
                "blob record of a {klen}-byte key and {vlen}-byte value where the table's \
                 index expects {} and {value_len}",
                key.len()
            ),
        );
    }
    let (rkey, value) = rec[RECORD_HEADER..].split_at(klen);
    if decode_fixed32(rec, 0) != record_crc(rkey, value, rec[COMPRESSION_AT]) {
        return bad(0, "blob record checksum mismatch".into());
    }
    if rkey != key {
        return bad(RECORD_HEADER, "blob record holds another key than the table entry's".into());
    }
    if rec[COMPRESSION_AT] != compression as u8 {
        return bad(
            COMPRESSION_AT,
            format!(
                "blob record stored with compression {} where the table's index says {}",
                rec[COMPRESSION_AT], compression as u8
            ),
        );
    }
    Ok(value)
}

/// One record as a scan of the whole file finds it (`strata dump-blob`, `verify`).
#[derive(Debug)]
pub(crate) struct ScannedRecord<'a> {
    /// Where the record starts.
    pub offset: u64,
    pub key: &'a [u8],
    /// The stored value, compressed as `compression` says.
    pub value: &'a [u8],
    pub compression: CompressionType,
}

/// Walks the records of a whole blob file held in `data` (header and footer included),
/// calling `f` for each; checks the header, every record's checksum and the footer's counts.
pub(crate) fn scan(
    path: &Path,
    data: &[u8],
    f: impl FnMut(&ScannedRecord<'_>) -> Result<()>,
) -> Result<(Header, Footer)> {
    let header = Header::decode(path, data)?;
    if data.len() < HEADER_LEN + FOOTER_LEN {
        return Err(Error::corruption(path, data.len() as u64, "blob file has no footer"));
    }
    let end = data.len() - FOOTER_LEN;
    let footer = Footer::decode(path, end as u64, &data[end..])?;
    let (records, bytes, _) = walk(path, &mut &data[..], end, false, f)?;
    footer.check_counts(path, end as u64, records, bytes)?;
    Ok((header, footer))
}

impl Footer {
    /// `Corruption` (at `end`, the footer's offset) unless the walk before it found the
    /// records and bytes it counts.
    pub(crate) fn check_counts(
        &self,
        path: &Path,
        end: u64,
        records: u64,
        bytes: u64,
    ) -> Result<()> {
        if records != self.records || bytes != self.record_bytes {
            return Err(Error::corruption(
                path,
                end,
                format!(
                    "blob file footer counts {} records of {} bytes, the file holds {records} \
                     of {bytes}",
                    self.records, self.record_bytes
                ),
            ));
        }
        Ok(())
    }
}

/// The bytes of a blob file a walk reads, by offset: the whole file in memory, or a file
/// read through a window (`blob/file_scan.rs`).
pub(crate) trait RecordSource {
    /// The `len` bytes at `pos`, which the walk has checked lie before its end.
    fn at(&mut self, pos: usize, len: usize) -> Result<&[u8]>;
    /// Whether every byte of `[from, to)` is zero.
    fn zeros(&mut self, from: usize, to: usize) -> Result<bool>;
}

impl RecordSource for &[u8] {
    fn at(&mut self, pos: usize, len: usize) -> Result<&[u8]> {
        Ok(&self[pos..pos + len])
    }

    fn zeros(&mut self, from: usize, to: usize) -> Result<bool> {
        Ok(self[from..to].iter().all(|&b| b == 0))
    }
}

/// Whether `data`, a whole blob file, ends with a footer (magic and checksum right).
pub(crate) fn has_footer(data: &[u8]) -> bool {
    data.len() >= HEADER_LEN + FOOTER_LEN
        && Footer::decode(Path::new(""), 0, &data[data.len() - FOOTER_LEN..]).is_ok()
}

/// [`scan`] for a file being written at commit, which has no footer yet (`db/blob_log.rs`):
/// checks the header and every record's checksum, and lets the tail a crash may leave end the
/// walk (a last record cut short, or one failing its checksum with only zeros after it), as
/// recovery stops replaying at an index into it. Returns the header, the records' count and
/// bytes, and the bytes of that tail.
pub(crate) fn scan_unfinished(
    path: &Path,
    data: &[u8],
    f: impl FnMut(&ScannedRecord<'_>) -> Result<()>,
) -> Result<(Header, Footer, u64)> {
    let header = Header::decode(path, data)?;
    let (records, record_bytes, stop) = walk(path, &mut &data[..], data.len(), true, f)?;
    Ok((header, Footer { records, record_bytes }, (data.len() - stop) as u64))
}

/// Walks the records of `data` from the header to `end`, calling `f` for each; returns their
/// count, their bytes and where the walk stopped: at `end`, or, with `torn_ok`, at the start
/// of a crash's tail ([`scan_unfinished`]). Any other damage is an error at its offset.
pub(crate) fn walk(
    path: &Path,
    data: &mut impl RecordSource,
    end: usize,
    torn_ok: bool,
    mut f: impl FnMut(&ScannedRecord<'_>) -> Result<()>,
) -> Result<(u64, u64, usize)> {
    let (mut pos, mut records, mut bytes) = (HEADER_LEN, 0u64, 0u64);
    while pos < end {
        let bad = |reason: String| Err(Error::corruption(path, pos as u64, reason));
        if end - pos < RECORD_HEADER {
            if torn_ok {
                break;
            }
            return bad(format!("{} stray bytes before the footer", end - pos));
        }
        let head = data.at(pos, RECORD_HEADER)?;
        let (klen, vlen) = (decode_fixed32(head, 4) as usize, decode_fixed32(head, 8));
        let size = record_size(klen, u64::from(vlen));
        if size > (end - pos) as u64 {
            if torn_ok {
                break;
            }
            return bad(format!("record of {size} bytes runs past the footer"));
        }
        let rec = data.at(pos, size as usize)?;
        let (key, value) = rec[RECORD_HEADER..].split_at(klen);
        if decode_fixed32(rec, 0) != record_crc(key, value, rec[COMPRESSION_AT]) {
            if torn_ok && data.zeros(pos + size as usize, end)? {
                break;
            }
            return bad("blob record checksum mismatch".into());
        }
        let rec = data.at(pos, size as usize)?;
        let (key, value) = rec[RECORD_HEADER..].split_at(klen);
        let Some(compression) = CompressionType::from_u8(rec[COMPRESSION_AT]) else {
            return bad(format!(
                "unknown compression type {} in a blob record",
                rec[COMPRESSION_AT]
            ));
        };
        f(&ScannedRecord { offset: pos as u64, key, value, compression })?;
        records += 1;
        bytes += size;
        pos += size as usize;
    }
    Ok((records, bytes, pos))
}
