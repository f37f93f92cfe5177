//! What a data operation can fail with. The variants say what went wrong, not how a client is
//! told: `commands` maps each to Redis's reply text in one place (`commands::errors`).

use std::fmt;

/// A failed data operation.
#[derive(Debug)]
pub enum TypeError {
    /// The key holds a value of another type.
    WrongType,
    /// A string value an integer operation (INCR...) reads is not a 64-bit integer.
    NotAnInteger,
    /// A hash field an integer operation (HINCRBY) reads is not a 64-bit integer.
    HashValueNotAnInteger,
    /// An integer increment would leave the 64-bit range.
    Overflow,
    /// A score an operation computes is not a number (`inf + -inf`).
    NanScore,
    /// The key an operation needs (RENAME's source, LSET's list) does not exist.
    NoSuchKey,
    /// A string value or increment a float operation (INCRBYFLOAT) reads is not a number.
    NotAFloat,
    /// A float increment would give NaN or an infinity.
    NanOrInfinity,
    /// An increment that is itself NaN or an infinity (HINCRBYFLOAT).
    IncrNanOrInfinity,
    /// A hash field that is not a float (HINCRBYFLOAT).
    HashValueNotAFloat,
    /// A string would grow past the longest allowed (`proto-max-bulk-len`).
    StringTooLong,
    /// A key LCS reads holds another type than a string.
    LcsNotStrings,
    /// An index (LSET's) is outside the list.
    IndexOutOfRange,
    /// A stored record does not decode; names the record and what is wrong.
    Corrupt(String),
    /// The engine failed.
    Engine(strata::Error),
    /// In cluster mode, the write did not commit through its partition's group: the error
    /// reply the replication layer chose (`storage::Replicate`).
    NotReplicated(String),
    /// In cluster mode, a write whose keys name no slot (FLUSHALL): no group can commit it.
    NoSlot,
    /// A stream operation refused (`super::stream::StreamError`).
    Stream(super::stream::StreamError),
    /// A string that is not a HyperLogLog, or a corrupt one (`super::hll::HllError`).
    Hll(super::hll::HllError),
}

impl fmt::Display for TypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeError::WrongType => f.write_str("the key holds a value of another type"),
            TypeError::NotAnInteger => f.write_str("the value is not a 64-bit integer"),
            TypeError::HashValueNotAnInteger => {
                f.write_str("the hash field's value is not a 64-bit integer")
            }
            TypeError::Overflow => f.write_str("the increment leaves the 64-bit range"),
            TypeError::NanScore => f.write_str("the resulting score is not a number"),
            TypeError::NoSuchKey => f.write_str("no such key"),
            TypeError::NotAFloat => f.write_str("the value is not a valid float"),
            TypeError::NanOrInfinity => f.write_str("the increment gives NaN or an infinity"),
            TypeError::IncrNanOrInfinity => f.write_str("the increment is NaN or an infinity"),
            TypeError::HashValueNotAFloat => f.write_str("the hash value is not a float"),
            TypeError::StringTooLong => f.write_str("the string would exceed the maximum size"),
            TypeError::LcsNotStrings => f.write_str("a key of LCS holds another type"),
            TypeError::IndexOutOfRange => f.write_str("the index is out of range"),
            TypeError::Corrupt(what) => write!(f, "corrupt {what}"),
            TypeError::Engine(e) => write!(f, "storage error: {e}"),
            TypeError::NotReplicated(reply) => write!(f, "not replicated: {reply}"),
            TypeError::NoSlot => f.write_str("a write that names no slot cannot be replicated"),
            TypeError::Stream(e) => write!(f, "stream: {e}"),
            TypeError::Hll(super::hll::HllError::NotHll) => {
                f.write_str("the string is not a HyperLogLog")
            }
            TypeError::Hll(super::hll::HllError::Corrupt(b)) => {
                write!(f, "corrupt HyperLogLog: opcode at byte {}: {}", b.offset, b.why)
            }
        }
    }
}

impl std::error::Error for TypeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TypeError::Engine(e) => Some(e),
            _ => None,
        }
    }
}

impl From<super::hll::HllError> for TypeError {
    fn from(e: super::hll::HllError) -> Self {
        TypeError::Hll(e)
    }
}

impl From<strata::Error> for TypeError {
    fn from(e: strata::Error) -> Self {
        TypeError::Engine(e)
    }
}

impl From<crate::storage::WriteError> for TypeError {
    fn from(e: crate::storage::WriteError) -> Self {
        match e {
            crate::storage::WriteError::Engine(e) => TypeError::Engine(e),
            crate::storage::WriteError::Replication(reply) => TypeError::NotReplicated(reply),
            crate::storage::WriteError::NoSlot => TypeError::NoSlot,
        }
    }
}

/// A data operation's result.
pub type Result<T> = std::result::Result<T, TypeError>;
