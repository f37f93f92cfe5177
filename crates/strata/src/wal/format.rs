//! The log format shared by the write-ahead log and the MANIFEST.
//!
//! ```text
//! file     := block* (the last block may be short)
//! block    := fragment* trailer?                         BLOCK_SIZE = 32768 bytes
//! fragment := header payload
//! header   := crc: fixed32 | length: fixed16 | type: u8                      7 bytes (types 1-4)
//!           | crc: fixed32 | length: fixed16 | type: u8 | log: fixed32      11 bytes (types 5-8)
//!             crc    = mask_crc(crc32c(type byte | log bytes, if any | payload))
//!             length = payload bytes (0 ..= BLOCK_SIZE - header size)
//!             log    = low 32 bits of the WAL's file number (recyclable fragments)
//! trailer  := zero bytes, written when fewer bytes than a header remain in a block
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
//! little-endian. When exactly a header's size remains, the writer emits a `First` fragment
//! with an empty payload there rather than padding.
//!
//! **Recyclable fragments** (types 5-8, the same four roles) carry the number of the log they
//! were written for. A WAL file may be reused for a later WAL without being truncated (so a
//! sync overwrites allocated blocks and writes no file-size metadata); past the new log's last
//! record it still holds the old log's records, whose number differs: a reader stops there. A
//! log is written in one kind of fragment; the MANIFEST only in types 1-4.
//!
//! There is no version field: new kinds of fragments get new type values, which older readers
//! reject as corruption instead of misreading them.

use crate::util::checksum::mask_crc;

/// Size of a block; fragments never cross a multiple of it. on-disk: never change.
pub const BLOCK_SIZE: usize = 32 * 1024;

/// Size of a fragment header: crc (4) + length (2) + type (1). on-disk: never change.
pub const HEADER_SIZE: usize = 7;

/// Size of a recyclable fragment's header: the legacy header and the log number (4).
/// on-disk: never change.
pub const RECYCLABLE_HEADER_SIZE: usize = HEADER_SIZE + 4;

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
    /// `Full`, carrying its log's number.
    RecyclableFull = 5,
    /// `First`, carrying its log's number.
    RecyclableFirst = 6,
    /// `Middle`, carrying its log's number.
    RecyclableMiddle = 7,
    /// `Last`, carrying its log's number.
    RecyclableLast = 8,
}

impl FragmentType {
    /// Largest valid type value.
    #[cfg(test)]
    pub const MAX: u8 = FragmentType::RecyclableLast as u8;

    /// Decodes a type byte; `None` for reserved or unknown values (including `Zero`).
    #[inline]
    pub fn from_u8(b: u8) -> Option<FragmentType> {
        match b {
            1 => Some(FragmentType::Full),
            2 => Some(FragmentType::First),
            3 => Some(FragmentType::Middle),
            4 => Some(FragmentType::Last),
            5 => Some(FragmentType::RecyclableFull),
            6 => Some(FragmentType::RecyclableFirst),
            7 => Some(FragmentType::RecyclableMiddle),
            8 => Some(FragmentType::RecyclableLast),
            _ => None,
        }
    }

    /// Whether the header carries a log number.
    #[inline]
    pub fn is_recyclable(self) -> bool {
        self as u8 >= FragmentType::RecyclableFull as u8
    }

    /// The fragment's role in its record, as one of `Full`, `First`, `Middle`, `Last`.
    #[inline]
    pub fn role(self) -> FragmentType {
        match self {
            FragmentType::RecyclableFull => FragmentType::Full,
            FragmentType::RecyclableFirst => FragmentType::First,
            FragmentType::RecyclableMiddle => FragmentType::Middle,
            FragmentType::RecyclableLast => FragmentType::Last,
            t => t,
        }
    }

    /// The recyclable type with this fragment's role.
    #[inline]
    pub fn recyclable(self) -> FragmentType {
        match self.role() {
            FragmentType::Full => FragmentType::RecyclableFull,
            FragmentType::First => FragmentType::RecyclableFirst,
            FragmentType::Middle => FragmentType::RecyclableMiddle,
            FragmentType::Last => FragmentType::RecyclableLast,
            t => t,
        }
    }
}

/// Header size of a fragment whose type byte is `type_byte` (recyclable or not; unknown types
/// count as the 7-byte header).
#[inline]
pub fn header_size_of(type_byte: u8) -> usize {
    match FragmentType::from_u8(type_byte) {
        Some(t) if t.is_recyclable() => RECYCLABLE_HEADER_SIZE,
        _ => HEADER_SIZE,
    }
}

/// The masked checksum stored in a fragment header: CRC32C over the type byte, then the payload.
#[inline]
pub fn fragment_checksum(type_byte: u8, payload: &[u8]) -> u32 {
    mask_crc(crc32c::crc32c_append(crc32c::crc32c(&[type_byte]), payload))
}

/// The masked checksum of a recyclable fragment: CRC32C over the type byte, the log number
/// (fixed32), then the payload.
#[inline]
pub fn recyclable_checksum(type_byte: u8, log: u32, payload: &[u8]) -> u32 {
    let crc = crc32c::crc32c_append(crc32c::crc32c(&[type_byte]), &log.to_le_bytes());
    mask_crc(crc32c::crc32c_append(crc, payload))
}

/// Encodes a recyclable fragment header (`t` is given its recyclable type).
#[inline]
pub fn encode_recyclable_header(
    t: FragmentType,
    log: u32,
    payload: &[u8],
) -> [u8; RECYCLABLE_HEADER_SIZE] {
    debug_assert!(payload.len() <= BLOCK_SIZE - RECYCLABLE_HEADER_SIZE);
    let t = t.recyclable();
    let crc = recyclable_checksum(t as u8, log, payload);
    let mut h = [0u8; RECYCLABLE_HEADER_SIZE];
    h[..4].copy_from_slice(&crc.to_le_bytes());
    h[4..6].copy_from_slice(&(payload.len() as u16).to_le_bytes());
    h[6] = t as u8;
    h[7..].copy_from_slice(&log.to_le_bytes());
    h
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
    fn recyclable_header_layout() {
        let h = encode_recyclable_header(FragmentType::Last, 0x0102_0304, b"xy");
        assert_eq!(h[4..6], [2, 0]);
        assert_eq!(h[6], 8);
        assert_eq!(h[7..], [4, 3, 2, 1]);
        let crc = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        assert_eq!(unmask_crc(crc), crc32c::crc32c(b"\x08\x04\x03\x02\x01xy"));
        assert_eq!(header_size_of(8), 11);
        assert_eq!(header_size_of(1), 7);
        assert_eq!(header_size_of(0), 7);
    }

    #[test]
    fn type_values_are_fixed() {
        assert_eq!(FragmentType::Zero as u8, 0);
        assert_eq!(FragmentType::Full as u8, 1);
        assert_eq!(FragmentType::First as u8, 2);
        assert_eq!(FragmentType::Middle as u8, 3);
        assert_eq!(FragmentType::Last as u8, 4);
        assert_eq!(FragmentType::RecyclableFull as u8, 5);
        assert_eq!(FragmentType::RecyclableFirst as u8, 6);
        assert_eq!(FragmentType::RecyclableMiddle as u8, 7);
        assert_eq!(FragmentType::RecyclableLast as u8, 8);
        assert_eq!(RECYCLABLE_HEADER_SIZE, 11);
        for b in 0..=255u8 {
            match FragmentType::from_u8(b) {
                Some(t) => assert_eq!(t as u8, b),
                None => assert!(b == 0 || b > FragmentType::MAX),
            }
        }
        for t in [FragmentType::Full, FragmentType::First, FragmentType::Middle, FragmentType::Last]
        {
            assert_eq!(t.recyclable().role(), t);
            assert!(t.recyclable().is_recyclable() && !t.is_recyclable());
        }
        assert_eq!(BLOCK_SIZE, 32768);
        assert_eq!(HEADER_SIZE, 7);
    }
}
