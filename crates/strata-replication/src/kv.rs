//! A small key-value [`Apply`] for tests and examples: each group's keys live in the
//! `default` column family under the group id (u32 big-endian) as prefix, so a group owns one
//! contiguous range.
//!
//! ```text
//! command = tag u8 | key (u32 len) | value (u32 len)      (little-endian lengths)
//!           tag 1 put      value replaces the key's
//!           tag 2 append   value is appended to the key's (an empty one if absent)
//!           tag 3 delete   value empty
//! reply   = the key's value after the command (empty after delete)
//! ```
//!
//! Group `u32::MAX` is not supported (its range would have no finite end).
//!
//! `append` makes a double application visible (the suffix shows twice), which the
//! replication tests rely on to check that each acknowledged write is there exactly once.

use strata::{Db, IteratorMode, ReadOptions, WriteBatch};

use crate::codec::{put_bytes, put_u8, Reader};
use crate::state_machine::Apply;
use crate::types::{GroupId, KeyRange};

/// One key-value command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KvCommand {
    /// Sets the key.
    Put {
        /// The key.
        key: Vec<u8>,
        /// Its new value.
        value: Vec<u8>,
    },
    /// Appends to the key's value.
    Append {
        /// The key.
        key: Vec<u8>,
        /// What is appended.
        suffix: Vec<u8>,
    },
    /// Removes the key.
    Delete {
        /// The key.
        key: Vec<u8>,
    },
}

impl KvCommand {
    /// The command's bytes, as replicated.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let (tag, key, value): (u8, &[u8], &[u8]) = match self {
            KvCommand::Put { key, value } => (1, key, value),
            KvCommand::Append { key, suffix } => (2, key, suffix),
            KvCommand::Delete { key } => (3, key, &[]),
        };
        put_u8(&mut out, tag);
        put_bytes(&mut out, key);
        put_bytes(&mut out, value);
        out
    }

    /// Decodes a command.
    pub fn decode(bytes: &[u8]) -> Result<KvCommand, String> {
        let mut r = Reader::new(bytes);
        let e = |e: crate::codec::DecodeError| format!("bad key-value command: {e}");
        let tag = r.u8("tag").map_err(e)?;
        let key = r.bytes("key").map_err(e)?.to_vec();
        let value = r.bytes("value").map_err(e)?.to_vec();
        r.finish("the command").map_err(e)?;
        match tag {
            1 => Ok(KvCommand::Put { key, value }),
            2 => Ok(KvCommand::Append { key, suffix: value }),
            3 => Ok(KvCommand::Delete { key }),
            t => Err(format!("bad key-value command: unknown tag {t}")),
        }
    }
}

/// The engine key of `key` in `group`.
pub fn data_key(group: GroupId, key: &[u8]) -> Vec<u8> {
    let mut k = group.0.to_be_bytes().to_vec();
    k.extend_from_slice(key);
    k
}

/// The key-value application.
#[derive(Clone, Copy, Debug, Default)]
pub struct KvApp;

impl KvApp {
    /// The value of `key` in `group` as this replica has it.
    pub fn get(db: &Db, group: GroupId, key: &[u8]) -> strata::Result<Option<Vec<u8>>> {
        db.get(data_key(group, key))
    }

    /// Every key and value of `group` on this replica, in key order (keys without the prefix).
    pub fn scan(db: &Db, group: GroupId) -> strata::Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let r = &KvApp.ranges(group)[0];
        let opts = ReadOptions {
            iterate_lower_bound: Some(r.start.clone()),
            iterate_upper_bound: Some(r.end.clone()),
            ..ReadOptions::default()
        };
        db.iterator_opt(IteratorMode::Start, opts)
            .map(|item| item.map(|(k, v)| (k[4..].to_vec(), v.to_vec())))
            .collect()
    }
}

impl Apply for KvApp {
    fn apply(
        &self,
        db: &Db,
        group: GroupId,
        _index: u64,
        command: &[u8],
        batch: &mut WriteBatch,
    ) -> Result<Vec<u8>, String> {
        let read = |k: &[u8]| db.get(data_key(group, k)).map_err(|e| format!("read: {e}"));
        match KvCommand::decode(command)? {
            KvCommand::Put { key, value } => {
                batch.put(data_key(group, &key), &value);
                Ok(value)
            }
            KvCommand::Append { key, suffix } => {
                let mut v = read(&key)?.unwrap_or_default();
                v.extend_from_slice(&suffix);
                batch.put(data_key(group, &key), &v);
                Ok(v)
            }
            KvCommand::Delete { key } => {
                batch.delete(data_key(group, &key));
                Ok(Vec::new())
            }
        }
    }

    fn ranges(&self, group: GroupId) -> Vec<KeyRange> {
        let start = group.0.to_be_bytes().to_vec();
        // Group u32::MAX is unsupported (module doc); its range is left empty.
        let end =
            group.0.checked_add(1).map_or_else(|| start.clone(), |n| n.to_be_bytes().to_vec());
        vec![KeyRange { cf: strata::DEFAULT_COLUMN_FAMILY_NAME.to_string(), start, end }]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_round_trip_and_garbage_is_an_error() {
        for c in [
            KvCommand::Put { key: b"k".to_vec(), value: b"v".to_vec() },
            KvCommand::Append { key: vec![], suffix: b"s".to_vec() },
            KvCommand::Delete { key: b"x".to_vec() },
        ] {
            assert_eq!(KvCommand::decode(&c.encode()).unwrap(), c);
        }
        assert!(KvCommand::decode(&[9, 0, 0, 0, 0, 0, 0, 0, 0])
            .unwrap_err()
            .contains("unknown tag 9"));
        assert!(KvCommand::decode(&[1, 5]).is_err());
    }
}
