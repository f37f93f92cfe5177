//! The log format shared by the write-ahead log and the MANIFEST.
//!
//! ```text
//! file     := block* (the last block may be short)
//! block    := fragment* trailer?                         BLOCK_SIZE = 32768 bytes
//! fragment := header payload
//! header   := crc: fixed32 | length: fixed16 | type: u8  HEADER_SIZE = 7 bytes
//!             crc    = mask_crc(crc32c(type byte | payload))
//!             length = payload bytes (0 ..= BLOCK_SIZE - HEADER_SIZE)
//! trailer  := 0..=6 zero bytes, written when fewer than HEADER_SIZE bytes remain in a block
//!
//!  0                           32768                         65536
//!  +------+---------+------+----+------+------------------+---+------+----
//!  | hdr  | payload | hdr  | .. | hdr  | payload          |000| hdr  | ..
//!  +------+---------+------+----+------+------------------+---+------+----
//!   Full record      First ...   Middle (fills block)  trailer  Last
//! ```
//!
//! A record (one caller-supplied byte string, possibly empty) is stored as one `Full` fragment
//! when it fits in the rest of the current block, otherwise as `First`, zero or more `Middle`,
//! and `Last`. A fragment never crosses a block boundary, so a reader can resynchronise at any
//! block start and a damaged length can never make it read outside one block. Integers are
//! little-endian. When exactly `HEADER_SIZE` bytes remain, the writer emits a `First` fragment
//! with an empty payload there rather than padding.
//!
//! There is no version field: new kinds of fragments get new type values, which older readers
//! reject as corruption instead of misreading them.

use crate::util::checksum::mask_crc;

/// Size of a block; fragments never cross a multiple of it. on-disk: never change.
pub const BLOCK_SIZE: usize = 32 * 1024;

/// Size of a fragment header: crc (4) + length (2) + type (1). on-disk: never change.
pub const HEADER_SIZE: usize = 7;

/// Largest payload a single fragment can carry.
pub const MAX_FRAGMENT_PAYLOAD: usize = BLOCK_SIZE - HEADER_SIZE;

/// The type byte of a fragment header. on-disk: never change the tag values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum FragmentType {
    /// Reserved: zero bytes (block trailers, preallocated or never-written space). Never
    /// written as a fragment type; listed so the value is never reused.
    #[allow(dead_code)]
    Zero = 0,
    /// A whole record.
    Full = 1,
    /// The first fragment of a record that continues in the next block(s).
    First = 2,
    /// An inner fragment of a record spanning more than two blocks.
    Middle = 3,
    /// The final fragment of a multi-fragment record.
    Last = 4,
}

impl FragmentType {
    /// Largest valid type value.
    #[cfg(test)]
    pub const MAX: u8 = FragmentType::Last as u8;

    /// Decodes a type byte; `None` for reserved or unknown values (including `Zero`).
    #[inline]
    pub fn from_u8(b: u8) -> Option<FragmentType> {
        match b {
            1 => Some(FragmentType::Full),
            2 => Some(FragmentType::First),
            3 => Some(FragmentType::Middle),
            4 => Some(FragmentType::Last),
            _ => None,
        }
    }
}

/// The masked checksum stored in a fragment header: CRC32C over the type byte, then the payload.
#[inline]
pub fn fragment_checksum(type_byte: u8, payload: &[u8]) -> u32 {
    mask_crc(crc32c::crc32c_append(crc32c::crc32c(&[type_byte]), payload))
}

/// Encodes a fragment header.
#[inline]
pub fn encode_header(t: FragmentType, payload: &[u8]) -> [u8; HEADER_SIZE] {
    debug_assert!(payload.len() <= MAX_FRAGMENT_PAYLOAD);
    let crc = fragment_checksum(t as u8, payload);
    let len = payload.len() as u16;
    let mut h = [0u8; HEADER_SIZE];
    h[..4].copy_from_slice(&crc.to_le_bytes());
    h[4..6].copy_from_slice(&len.to_le_bytes());
    h[6] = t as u8;
    h
}

/// A fragment header as read from disk, not yet validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawHeader {
    pub masked_crc: u32,
    pub length: usize,
    pub type_byte: u8,
}

/// Decodes the first `HEADER_SIZE` bytes of `h`; the caller guarantees `h.len() >= HEADER_SIZE`.
#[inline]
pub fn decode_header(h: &[u8]) -> RawHeader {
    RawHeader {
        masked_crc: u32::from_le_bytes([h[0], h[1], h[2], h[3]]),
        length: usize::from(u16::from_le_bytes([h[4], h[5]])),
        type_byte: h[6],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::checksum::unmask_crc;

    #[test]
    fn header_roundtrip() {
        let h = encode_header(FragmentType::Middle, b"payload");
        let d = decode_header(&h);
        assert_eq!(d.length, 7);
        assert_eq!(d.type_byte, 3);
        assert_eq!(d.masked_crc, fragment_checksum(3, b"payload"));
        assert_eq!(unmask_crc(d.masked_crc), crc32c::crc32c(b"\x03payload"));
    }

    #[test]
    fn type_values_are_fixed() {
        assert_eq!(FragmentType::Zero as u8, 0);
        assert_eq!(FragmentType::Full as u8, 1);
        assert_eq!(FragmentType::First as u8, 2);
        assert_eq!(FragmentType::Middle as u8, 3);
        assert_eq!(FragmentType::Last as u8, 4);
        for b in 0..=255u8 {
            match FragmentType::from_u8(b) {
                Some(t) => assert_eq!(t as u8, b),
                None => assert!(b == 0 || b > FragmentType::MAX),
            }
        }
        assert_eq!(BLOCK_SIZE, 32768);
        assert_eq!(HEADER_SIZE, 7);
    }
}
