//! Newtypes for the engine's numbers, so a sequence number is never mistaken for a file number.

use std::fmt;

/// A write's position in the DB's total order. Only the low 56 bits are usable: the internal
/// key trailer packs the sequence number with an 8-bit value type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SeqNo(pub u64);

impl SeqNo {
    /// The largest sequence number that fits in an internal key trailer.
    pub const MAX: SeqNo = SeqNo((1 << 56) - 1);
    /// Sequence number zero: older than every write.
    pub const ZERO: SeqNo = SeqNo(0);

    /// The sequence number `n` positions later.
    #[inline]
    pub fn plus(self, n: u64) -> SeqNo {
        SeqNo(self.0 + n)
    }
}

impl fmt::Display for SeqNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Number naming a file in the DB directory (WAL, SST, MANIFEST share one counter).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FileNumber(pub u64);

impl fmt::Display for FileNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:06}", self.0)
    }
}

/// What an internal key records. on-disk: never change the tag values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ValueType {
    /// The key was deleted.
    Deletion = 0,
    /// A full value.
    Value = 1,
    /// A merge operand, resolved with the merge operator.
    Merge = 2,
    /// Deletes exactly one earlier `Value` (RocksDB's SingleDelete).
    SingleDeletion = 3,
    /// A range tombstone: the key is the range start, the value its exclusive end.
    RangeDeletion = 4,
    /// A value kept in a blob file: the entry's value is a blob index (`blob::index`) naming
    /// the file, offset, size and compression of the value. Flushes and compactions write it
    /// into tables; with values written at commit (`db/blob_log.rs`) the DB also writes it
    /// into its WAL and memtables. A batch given to the DB never holds it.
    BlobIndex = 5,
    /// A wide-column entity (RocksDB's `kTypeWideColumnEntity`): the entry's value is the
    /// encoding of its named columns (`wide_columns.rs`).
    Entity = 6,
}

impl ValueType {
    /// The type used when seeking: internal keys of one user key are ordered by descending
    /// (sequence, type), so seeking with the highest type finds every entry at or below `seq`.
    pub const FOR_SEEK: ValueType = ValueType::Entity;

    /// Decodes a tag, `None` for an unknown one.
    #[inline]
    pub fn from_u8(b: u8) -> Option<ValueType> {
        match b {
            0 => Some(ValueType::Deletion),
            1 => Some(ValueType::Value),
            2 => Some(ValueType::Merge),
            3 => Some(ValueType::SingleDeletion),
            4 => Some(ValueType::RangeDeletion),
            5 => Some(ValueType::BlobIndex),
            6 => Some(ValueType::Entity),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_type_roundtrip() {
        for b in 0..=255u8 {
            if let Some(t) = ValueType::from_u8(b) {
                assert_eq!(t as u8, b);
            } else {
                assert!(b > 6);
            }
        }
    }

    #[test]
    fn file_number_display_is_padded() {
        assert_eq!(FileNumber(12).to_string(), "000012");
        assert_eq!(FileNumber(1234567).to_string(), "1234567");
    }
}
