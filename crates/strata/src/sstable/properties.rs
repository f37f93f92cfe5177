//! The properties block: counts and sizes describing a table.
//!
//! ```text
//! properties block = field*
//! field            = key: varint64 = (tag << 1) | wire
//!                    wire 0: value = varint64
//!                    wire 1: value = varint64 length | bytes
//! ```
//! Fields appear in ascending tag order, each at most once. A reader skips fields whose tag it
//! does not know (either wire kind can be skipped without understanding it), so later versions can
//! add properties without breaking older readers. A missing field reads as 0.
//!
//! Tags (on-disk: never change; never reuse a retired tag):
//! ```text
//!  1 num_entries          8 index_size          (stored bytes incl. trailer)
//!  2 num_deletions        9 filter_size         (stored bytes incl. trailer, 0 without filter)
//!  3 num_merge_operands  10 num_data_blocks
//!  4 num_range_deletions 11 smallest_seqno
//!  5 raw_key_size        12 largest_seqno
//!  6 raw_value_size      13 compression         (CompressionType tag configured for data)
//!  7 data_size           14 creation_time       (caller-provided, seconds; 0 if unknown)
//!                                                (data_size: stored bytes incl. trailers)
//! 15 external_file_version
//! 16 comparator           (wire 1: the name of the key order; absent for bytewise order)
//! ```
//! `num_deletions` counts deletions and single deletions.
//!
//! `external_file_version` marks a table written by `SstFileWriter` for ingestion: 0 (absent)
//! for tables the DB wrote itself; 1 for an external file, whose entries and range tombstones
//! are all stored at sequence number 0 and whose global sequence number, if ingestion assigns
//! one, is kept outside the file (the MANIFEST's `GlobalSeqno` field): the file itself is never
//! rewritten, so a hard-linked source stays unchanged.

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::types::SeqNo;
use crate::util::coding::{put_varint64, Reader};

use super::compression::CompressionType;

const WIRE_VARINT: u64 = 0;
const WIRE_BYTES: u64 = 1;

const TAG_NUM_ENTRIES: u64 = 1;
const TAG_NUM_DELETIONS: u64 = 2;
const TAG_NUM_MERGE_OPERANDS: u64 = 3;
const TAG_NUM_RANGE_DELETIONS: u64 = 4;
const TAG_RAW_KEY_SIZE: u64 = 5;
const TAG_RAW_VALUE_SIZE: u64 = 6;
const TAG_DATA_SIZE: u64 = 7;
const TAG_INDEX_SIZE: u64 = 8;
const TAG_FILTER_SIZE: u64 = 9;
const TAG_NUM_DATA_BLOCKS: u64 = 10;
const TAG_SMALLEST_SEQNO: u64 = 11;
const TAG_LARGEST_SEQNO: u64 = 12;
const TAG_COMPRESSION: u64 = 13;
const TAG_CREATION_TIME: u64 = 14;
const TAG_EXTERNAL_FILE_VERSION: u64 = 15;
const TAG_COMPARATOR: u64 = 16;

/// `external_file_version` of a file written by `SstFileWriter`: entries at sequence number 0,
/// the global seqno kept by the DB (see the module doc).
pub const EXTERNAL_FILE_VERSION: u64 = 1;

/// What a table holds, recorded when it was built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableProperties {
    pub num_entries: u64,
    /// Deletions and single deletions.
    pub num_deletions: u64,
    pub num_merge_operands: u64,
    pub num_range_deletions: u64,
    /// Sum of internal key lengths.
    pub raw_key_size: u64,
    pub raw_value_size: u64,
    /// Bytes of data blocks as stored, trailers included.
    pub data_size: u64,
    /// Bytes of the index block as stored, trailer included.
    pub index_size: u64,
    /// Bytes of the filter block as stored, trailer included (0 without a filter).
    pub filter_size: u64,
    pub num_data_blocks: u64,
    pub smallest_seqno: SeqNo,
    pub largest_seqno: SeqNo,
    /// The compression configured for data blocks (a block may still be stored raw).
    pub compression: CompressionType,
    /// Caller-provided creation time, 0 when unknown.
    pub creation_time: u64,
    /// 0 for a table the DB wrote; [`EXTERNAL_FILE_VERSION`] for an external file.
    pub external_file_version: u64,
    /// The name of the table's key order; `None` for bytewise order (`crate::comparator`).
    pub comparator: Option<String>,
}

impl Default for TableProperties {
    fn default() -> Self {
        TableProperties {
            num_entries: 0,
            num_deletions: 0,
            num_merge_operands: 0,
            num_range_deletions: 0,
            raw_key_size: 0,
            raw_value_size: 0,
            data_size: 0,
            index_size: 0,
            filter_size: 0,
            num_data_blocks: 0,
            smallest_seqno: SeqNo::ZERO,
            largest_seqno: SeqNo::ZERO,
            compression: CompressionType::None,
            creation_time: 0,
            external_file_version: 0,
            comparator: None,
        }
    }
}

impl TableProperties {
    /// The encoded block.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        let fields = [
            (TAG_NUM_ENTRIES, self.num_entries),
            (TAG_NUM_DELETIONS, self.num_deletions),
            (TAG_NUM_MERGE_OPERANDS, self.num_merge_operands),
            (TAG_NUM_RANGE_DELETIONS, self.num_range_deletions),
            (TAG_RAW_KEY_SIZE, self.raw_key_size),
            (TAG_RAW_VALUE_SIZE, self.raw_value_size),
            (TAG_DATA_SIZE, self.data_size),
            (TAG_INDEX_SIZE, self.index_size),
            (TAG_FILTER_SIZE, self.filter_size),
            (TAG_NUM_DATA_BLOCKS, self.num_data_blocks),
            (TAG_SMALLEST_SEQNO, self.smallest_seqno.0),
            (TAG_LARGEST_SEQNO, self.largest_seqno.0),
            (TAG_COMPRESSION, self.compression as u64),
            (TAG_CREATION_TIME, self.creation_time),
            (TAG_EXTERNAL_FILE_VERSION, self.external_file_version),
        ];
        for (tag, v) in fields {
            if tag == TAG_EXTERNAL_FILE_VERSION && v == 0 {
                continue; // tables the DB writes stay byte-identical to before the field
            }
            put_varint64(&mut out, (tag << 1) | WIRE_VARINT);
            put_varint64(&mut out, v);
        }
        if let Some(name) = &self.comparator {
            put_varint64(&mut out, (TAG_COMPARATOR << 1) | WIRE_BYTES);
            crate::util::coding::put_length_prefixed(&mut out, name.as_bytes());
        }
        out
    }

    /// Decodes a properties block read at file `offset` (errors carry an empty path).
    pub fn decode(data: &[u8], offset: u64) -> Result<TableProperties> {
        let bad = |reason: String| Error::corruption(PathBuf::new(), offset, reason);
        let mut p = TableProperties::default();
        let mut r = Reader::new(data);
        let mut last_tag = 0u64;
        while !r.is_empty() {
            let at = r.position();
            let key = r.varint64().ok_or_else(|| bad(format!("bad property key at {at}")))?;
            let (tag, wire) = (key >> 1, key & 1);
            if tag <= last_tag {
                return Err(bad(format!("property tag {tag} out of order at {at}")));
            }
            last_tag = tag;
            if wire == WIRE_BYTES {
                let bytes = r
                    .length_prefixed()
                    .ok_or_else(|| bad(format!("bad property {tag} at {at}")))?;
                if tag == TAG_COMPARATOR {
                    let name = std::str::from_utf8(bytes)
                        .map_err(|_| bad(format!("comparator name at {at} is not UTF-8")))?;
                    p.comparator = Some(name.to_string());
                }
                continue;
            }
            let v = r.varint64().ok_or_else(|| bad(format!("bad property {tag} at {at}")))?;
            match tag {
                TAG_NUM_ENTRIES => p.num_entries = v,
                TAG_NUM_DELETIONS => p.num_deletions = v,
                TAG_NUM_MERGE_OPERANDS => p.num_merge_operands = v,
                TAG_NUM_RANGE_DELETIONS => p.num_range_deletions = v,
                TAG_RAW_KEY_SIZE => p.raw_key_size = v,
                TAG_RAW_VALUE_SIZE => p.raw_value_size = v,
                TAG_DATA_SIZE => p.data_size = v,
                TAG_INDEX_SIZE => p.index_size = v,
                TAG_FILTER_SIZE => p.filter_size = v,
                TAG_NUM_DATA_BLOCKS => p.num_data_blocks = v,
                TAG_SMALLEST_SEQNO => p.smallest_seqno = SeqNo(v),
                TAG_LARGEST_SEQNO => p.largest_seqno = SeqNo(v),
                TAG_COMPRESSION => {
                    p.compression = u8::try_from(v)
                        .ok()
                        .and_then(CompressionType::from_u8)
                        .ok_or_else(|| bad(format!("unknown compression type {v}")))?;
                }
                TAG_CREATION_TIME => p.creation_time = v,
                TAG_EXTERNAL_FILE_VERSION => p.external_file_version = v,
                _ => {} // a property from a newer version
            }
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TableProperties {
        TableProperties {
            num_entries: 1000,
            num_deletions: 12,
            num_merge_operands: 3,
            num_range_deletions: 1,
            raw_key_size: 20_000,
            raw_value_size: 1 << 40,
            data_size: 123_456,
            index_size: 789,
            filter_size: 1290,
            num_data_blocks: 31,
            smallest_seqno: SeqNo(5),
            largest_seqno: SeqNo::MAX,
            compression: CompressionType::Zstd,
            creation_time: 1_700_000_000,
            external_file_version: EXTERNAL_FILE_VERSION,
            comparator: Some("reverse".into()),
        }
    }

    #[test]
    fn roundtrip() {
        let p = sample();
        assert_eq!(TableProperties::decode(&p.encode(), 0).unwrap(), p);
        let d = TableProperties::default();
        assert_eq!(TableProperties::decode(&d.encode(), 0).unwrap(), d);
        assert_eq!(TableProperties::decode(&[], 0).unwrap(), d);
    }

    #[test]
    fn unknown_fields_are_skipped() {
        let p = sample();
        let mut enc = p.encode();
        put_varint64(&mut enc, (40 << 1) | WIRE_VARINT);
        put_varint64(&mut enc, 77);
        put_varint64(&mut enc, (41 << 1) | WIRE_BYTES);
        put_varint64(&mut enc, 3);
        enc.extend_from_slice(b"xyz");
        assert_eq!(TableProperties::decode(&enc, 0).unwrap(), p);
    }

    #[test]
    fn malformed_is_corruption() {
        let enc = sample().encode();
        let mut bad_cases = vec![enc[..enc.len() - 1].to_vec()];
        let mut dup = enc.clone();
        put_varint64(&mut dup, TAG_NUM_ENTRIES << 1);
        put_varint64(&mut dup, 1);
        bad_cases.push(dup);
        let mut comp = Vec::new();
        put_varint64(&mut comp, TAG_COMPRESSION << 1);
        put_varint64(&mut comp, 9);
        bad_cases.push(comp);
        let mut trunc_bytes = Vec::new();
        put_varint64(&mut trunc_bytes, (50 << 1) | WIRE_BYTES);
        put_varint64(&mut trunc_bytes, 10);
        bad_cases.push(trunc_bytes);
        for c in bad_cases {
            let e = TableProperties::decode(&c, 9).unwrap_err();
            assert!(e.is_corruption() && e.to_string().contains("offset 9"), "{e}");
        }
    }
}
