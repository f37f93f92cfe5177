//! A blob index: what a table entry of type `BlobIndex` stores in place of its value.
//!
//! ```text
//! blob index := kind: u8 (1) | file: varint64 | offset: varint64 | size: varint64
//!             | compression: u8
//!   file   = the blob file's number (`NNNNNN.blob`)
//!   offset = where the stored value starts in the file (after its record's header and key)
//!   size   = the stored value's length; compression = how it is stored
//! ```
//! on-disk: never change; a new layout takes a new kind. Mirrored in `docs/format/blob.md`.

use crate::error::{Error, Result};
use crate::sstable::CompressionType;
use crate::types::FileNumber;
use crate::util::coding::{put_varint64, Reader};

/// The only kind this build writes and reads.
const KIND_BLOB: u8 = 1;

/// Where a value kept in a blob file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BlobIndex {
    pub file: FileNumber,
    pub offset: u64,
    pub size: u64,
    pub compression: CompressionType,
}

impl BlobIndex {
    /// Appends the encoding to `buf`.
    pub fn encode_to(&self, buf: &mut Vec<u8>) {
        buf.push(KIND_BLOB);
        put_varint64(buf, self.file.0);
        put_varint64(buf, self.offset);
        put_varint64(buf, self.size);
        buf.push(self.compression as u8);
    }

    /// Decodes an index; damage is `Corruption` with no file (the caller knows the table).
    pub fn decode(b: &[u8]) -> Result<BlobIndex> {
        let bad = |what: &str| {
            Err(Error::corruption("", 0, format!("bad blob index ({what}): {}", hex(b))))
        };
        let mut r = Reader::new(b);
        match r.u8() {
            Some(KIND_BLOB) => {}
            Some(k) => return bad(&format!("unknown kind {k}")),
            None => return bad("empty"),
        }
        let (Some(file), Some(offset), Some(size), Some(c)) =
            (r.varint64(), r.varint64(), r.varint64(), r.u8())
        else {
            return bad("truncated");
        };
        if !r.is_empty() {
            return bad("trailing bytes");
        }
        let Some(compression) = CompressionType::from_u8(c) else {
            return bad(&format!("unknown compression {c}"));
        };
        Ok(BlobIndex { file: FileNumber(file), offset, size, compression })
    }

    /// The bytes of the record this index points into, for a key of `key_len` bytes: what
    /// garbage is counted in.
    pub fn record_bytes(&self, key_len: usize) -> u64 {
        super::format::record_size(key_len, self.size)
    }
}

fn hex(b: &[u8]) -> String {
    use std::fmt::Write as _;
    b.iter().take(32).fold(String::new(), |mut s, x| {
        let _ = write!(s, "{x:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_damage() {
        let i = BlobIndex {
            file: FileNumber(77),
            offset: 1 << 33,
            size: 4096,
            compression: CompressionType::Zstd,
        };
        let mut b = Vec::new();
        i.encode_to(&mut b);
        assert_eq!(BlobIndex::decode(&b).unwrap(), i);
        for n in 0..b.len() {
            assert!(BlobIndex::decode(&b[..n]).is_err(), "truncated at {n}");
        }
        let mut extra = b.clone();
        extra.push(0);
        assert!(BlobIndex::decode(&extra).is_err());
        let mut kind = b.clone();
        kind[0] = 9;
        let e = BlobIndex::decode(&kind).unwrap_err().to_string();
        assert!(e.contains("unknown kind 9"), "{e}");
    }
}
