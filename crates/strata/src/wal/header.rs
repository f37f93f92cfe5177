//! The first record of every WAL file names the WAL that came before it, so recovery can tell
//! a WAL that is missing (deleted or lost with a damaged MANIFEST) from a gap in file numbers.
//!
//! ```text
//! header record = magic "STRATAWL" (8) | format version fixed32 (4) | previous WAL number fixed64 (8)
//! ```
//! on-disk: never change. Version 1. "Previous" is the WAL whose memtable was active just before
//! this one, or 0 for the first WAL of a new DB.

use crate::error::{Error, Result};
use crate::types::FileNumber;
use crate::util::coding::{put_fixed32, put_fixed64, Reader};

const MAGIC: &[u8; 8] = b"STRATAWL";
const VERSION: u32 = 1;
/// Length of the encoded header record.
pub(crate) const WAL_HEADER_LEN: usize = 20;

/// Encodes the header record of a WAL whose predecessor is `prev`.
pub(crate) fn encode_wal_header(prev: FileNumber) -> Vec<u8> {
    let mut b = Vec::with_capacity(WAL_HEADER_LEN);
    b.extend_from_slice(MAGIC);
    put_fixed32(&mut b, VERSION);
    put_fixed64(&mut b, prev.0);
    b
}

/// Decodes a header record; the error names no file (the caller adds it).
pub(crate) fn decode_wal_header(record: &[u8]) -> Result<FileNumber> {
    let bad = |why: &str| Err(Error::corruption("", 0, format!("bad WAL header: {why}")));
    if record.len() != WAL_HEADER_LEN {
        return bad(&format!("{} bytes, expected {WAL_HEADER_LEN}", record.len()));
    }
    let mut r = Reader::new(record);
    if r.bytes(8) != Some(&MAGIC[..]) {
        return bad("magic number does not match (not a Strata WAL?)");
    }
    match r.fixed32() {
        Some(VERSION) => {}
        Some(v) => return bad(&format!("format version {v}, this build reads {VERSION}")),
        None => return bad("truncated"),
    }
    match r.fixed64() {
        Some(prev) => Ok(FileNumber(prev)),
        None => bad("truncated"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_rejects() {
        let h = encode_wal_header(FileNumber(42));
        assert_eq!(h.len(), WAL_HEADER_LEN);
        assert_eq!(decode_wal_header(&h).unwrap(), FileNumber(42));
        for i in 0..h.len() {
            let mut d = h.clone();
            d[i] ^= 0x10;
            if i < 12 {
                assert!(decode_wal_header(&d).unwrap_err().is_corruption());
            }
        }
        assert!(decode_wal_header(&h[..19]).is_err());
    }
}
