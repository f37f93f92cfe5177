//! A slot's records as a move copies them (`crate::cluster::ownership`): read a page at a
//! time from the source partition's view, and written into the target partition's view with
//! its lead, through the target's group like any write.
//!
//! ```text
//!  record:  family u8 (0 metadata, 1 subkey, 2 zscore) | key | value
//!           key = the stored key after its partition: slot u16BE | the rest
//!  cursor:  empty (the first record), else family u8 | key of the first record not sent
//! ```

use std::fmt;

use strata::{ReadOptions, WriteBatch};

use super::{Store, WriteError};
use crate::filing::Filing;

/// Why a page could not be read or written.
#[derive(Debug)]
pub enum MoveError {
    /// The engine failed.
    Engine(strata::Error),
    /// The write did not commit.
    Write(WriteError),
    /// A cursor or record that is not one of this slot's, and why.
    Invalid(String),
}

impl fmt::Display for MoveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MoveError::Engine(e) => write!(f, "{e}"),
            MoveError::Write(e) => write!(f, "{e}"),
            MoveError::Invalid(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for MoveError {}

/// One page of a slot's records, and the cursor of the next (empty: none left).
pub struct Page {
    /// Where the next page starts; empty when this one ends the slot.
    pub next: Vec<u8>,
    /// (family, key after the partition, value).
    pub records: Vec<(u8, Vec<u8>, Vec<u8>)>,
}

/// The partition of a view that files keys under one.
fn partition_of(view: &Store) -> Result<u16, MoveError> {
    match view.filing {
        Filing::Partition(p) => Ok(p),
        other => Err(MoveError::Invalid(format!("a {other:?} store has no partition to move"))),
    }
}

/// Bytes of keys and values a page holds at most, unless its first record alone is larger:
/// a page becomes one entry of the target's log (`strata_replication::MAX_COMMAND_BYTES`).
pub const PAGE_BYTES: usize = 8 << 20;

/// Up to `count` records of `slot` in `view` (a partition's) from `cursor` on, in family
/// then key order, as the engine holds them now; fewer when the next would take the page
/// past [`PAGE_BYTES`].
pub fn export(view: &Store, slot: u16, cursor: &[u8], count: usize) -> Result<Page, MoveError> {
    partition_of(view)?;
    let (start, end) = view.filing.slot_span(slot, slot);
    let (first_family, from) = match cursor.split_first() {
        None => (0u8, None),
        Some((&f, key)) if f <= 2 && key.starts_with(&slot.to_be_bytes()) => (f, Some(key)),
        Some(_) => {
            return Err(MoveError::Invalid(format!("cursor {cursor:?} is not one of slot {slot}")))
        }
    };
    let mut records = Vec::new();
    let mut bytes = 0usize;
    for (family, cf) in view.families().into_iter().enumerate().skip(usize::from(first_family)) {
        let family = family as u8;
        let ro = ReadOptions { iterate_upper_bound: Some(end.clone()), ..ReadOptions::default() };
        let mut it = view.db.raw_iterator_cf_opt(&**cf, &ro);
        match from.filter(|_| family == first_family) {
            Some(key) => it.seek([&start[..2], key].concat()),
            None => it.seek(&start),
        }
        while let Some((k, v)) = it.item() {
            if k >= &end[..] {
                break;
            }
            let size = k.len() + v.len();
            if records.len() == count || (!records.is_empty() && bytes + size > PAGE_BYTES) {
                // The cursor names the first record not sent.
                let mut next = vec![family];
                next.extend_from_slice(&k[2..]);
                return Ok(Page { next, records });
            }
            records.push((family, k[2..].to_vec(), v.to_vec()));
            bytes += size;
            it.next();
        }
        it.status().map_err(MoveError::Engine)?;
    }
    Ok(Page { next: Vec::new(), records })
}

/// Writes `records` (as [`export`] gave them) of `slot` into `view` (the target partition's),
/// in one batch through its group; returns how many.
pub fn import(view: &Store, slot: u16, records: &[(u8, &[u8], &[u8])]) -> Result<usize, MoveError> {
    let partition = partition_of(view)?;
    let families = view.families();
    let mut b = WriteBatch::new();
    for (family, key, value) in records {
        let cf = families
            .get(usize::from(*family))
            .ok_or_else(|| MoveError::Invalid(format!("family {family} is not 0, 1 or 2")))?;
        if key.len() <= 2 || !key.starts_with(&slot.to_be_bytes()) {
            return Err(MoveError::Invalid(format!(
                "record key {:?} is not one of slot {slot}",
                String::from_utf8_lossy(key)
            )));
        }
        let mut stored = partition.to_be_bytes().to_vec();
        stored.extend_from_slice(key);
        b.put_cf(&***cf, stored, value);
    }
    view.write(b).map_err(MoveError::Write)?;
    Ok(records.len())
}

/// One write to a moving slot made after its copy began (`crate::cluster::outbox` keeps
/// them in the source's commit order; the target replays them in that order after the bulk
/// copy). Keys are as [`export`] gives them: after the partition, `slot u16BE | the rest`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// `key` in `family` set to `value`.
    Put { family: u8, key: Vec<u8>, value: Vec<u8> },
    /// `key` in `family` deleted.
    Delete { family: u8, key: Vec<u8> },
    /// `[start, end)` in `family` deleted, both bounds inside the slot's span.
    DeleteRange { family: u8, start: Vec<u8>, end: Vec<u8> },
}

impl Change {
    /// The kind's code on the wire and in the outbox (module text of `cluster::outbox`).
    pub fn kind(&self) -> u8 {
        match self {
            Change::Put { .. } => 1,
            Change::Delete { .. } => 2,
            Change::DeleteRange { .. } => 3,
        }
    }

    /// The change of kind `kind` (1 put, 2 delete, 3 delete range) with its parts; `value` is
    /// the put's value, empty for a delete, and a range deletion's end.
    pub fn of(kind: u8, family: u8, key: Vec<u8>, value: Vec<u8>) -> Result<Change, MoveError> {
        if family > 2 {
            return Err(MoveError::Invalid(format!("family {family} is not 0, 1 or 2")));
        }
        Ok(match kind {
            1 => Change::Put { family, key, value },
            2 if value.is_empty() => Change::Delete { family, key },
            2 => return Err(MoveError::Invalid("a delete with a value".into())),
            3 => Change::DeleteRange { family, start: key, end: value },
            other => {
                return Err(MoveError::Invalid(format!(
                    "change kind {other} is not 1 (put), 2 (delete) or 3 (delete range)"
                )))
            }
        })
    }

    /// Its parts: (kind, family, key or range start, value or range end).
    pub fn parts(&self) -> (u8, u8, &[u8], &[u8]) {
        match self {
            Change::Put { family, key, value } => (1, *family, key, value),
            Change::Delete { family, key } => (2, *family, key, &[]),
            Change::DeleteRange { family, start, end } => (3, *family, start, end),
        }
    }
}

/// `changes` as the outbox stores them: per change, `kind u8 | family u8 | key len u32LE |
/// key | value len u32LE | value`.
pub fn encode_changes(changes: &[Change]) -> Vec<u8> {
    let mut out = Vec::new();
    for c in changes {
        let (kind, family, key, value) = c.parts();
        push_change(&mut out, kind, family, key, value);
    }
    out
}

/// Appends one change's encoding ([`encode_changes`]) to `out`.
pub fn push_change(out: &mut Vec<u8>, kind: u8, family: u8, key: &[u8], value: &[u8]) {
    out.push(kind);
    out.push(family);
    for part in [key, value] {
        out.extend_from_slice(&(part.len() as u32).to_le_bytes());
        out.extend_from_slice(part);
    }
}

/// The changes [`encode_changes`] wrote; a damaged buffer is an error naming the offset.
pub fn decode_changes(mut buf: &[u8]) -> Result<Vec<Change>, MoveError> {
    let total = buf.len();
    let mut out = Vec::new();
    while !buf.is_empty() {
        let at = total - buf.len();
        let damaged = |what: &str| {
            MoveError::Invalid(format!(
                "an outbox record is damaged in its change at byte {at}: {what}"
            ))
        };
        let [kind, family, rest @ ..] = buf else { return Err(damaged("no kind and family")) };
        buf = rest;
        let mut part = || -> Result<Vec<u8>, MoveError> {
            let (len, rest) = buf.split_first_chunk::<4>().ok_or_else(|| damaged("no length"))?;
            let len = u32::from_le_bytes(*len) as usize;
            let bytes = rest.get(..len).ok_or_else(|| damaged("a part longer than the record"))?;
            buf = &rest[len..];
            Ok(bytes.to_vec())
        };
        let (key, value) = (part()?, part()?);
        out.push(Change::of(*kind, *family, key, value).map_err(|e| damaged(&e.to_string()))?);
    }
    Ok(out)
}

/// Writes `changes` (a tail of [`Change`]s, in the source's order) of `slot` into `view`
/// (the target partition's), in one batch through its group; returns how many.
pub fn apply_changes(view: &Store, slot: u16, changes: &[Change]) -> Result<usize, MoveError> {
    let partition = partition_of(view)?;
    let families = view.families();
    let lead = partition.to_be_bytes();
    let stored = |key: &[u8]| [&lead[..], key].concat();
    // Keys of the slot: after the partition, the slot's two bytes and more; a range ends at
    // the next slot's lead at most.
    let of_slot = |key: &[u8]| key.len() > 2 && key.starts_with(&slot.to_be_bytes());
    let next_slot = (slot + 1).to_be_bytes();
    let mut b = WriteBatch::new();
    for c in changes {
        let (_, family, key, value) = c.parts();
        let cf = families
            .get(usize::from(family))
            .ok_or_else(|| MoveError::Invalid(format!("family {family} is not 0, 1 or 2")))?;
        let fits = match c {
            Change::DeleteRange { start, end, .. } => {
                (of_slot(start) || start[..] == slot.to_be_bytes())
                    && (of_slot(end) || end[..] == next_slot)
                    && start < end
            }
            _ => of_slot(key),
        };
        if !fits {
            return Err(MoveError::Invalid(format!(
                "change of key {:?} is not one of slot {slot}",
                String::from_utf8_lossy(key)
            )));
        }
        match c {
            Change::Put { .. } => b.put_cf(&***cf, stored(key), value),
            Change::Delete { .. } => b.delete_cf(&***cf, stored(key)),
            Change::DeleteRange { .. } => b.delete_range_cf(&***cf, stored(key), stored(value)),
        }
    }
    view.write(b).map_err(MoveError::Write)?;
    Ok(changes.len())
}
