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

/// Up to `count` records of `slot` in `view` (a partition's) from `cursor` on, in family
/// then key order, as the engine holds them now.
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
            if records.len() == count {
                // The cursor names the first record not sent.
                let mut next = vec![family];
                next.extend_from_slice(&k[2..]);
                return Ok(Page { next, records });
            }
            records.push((family, k[2..].to_vec(), v.to_vec()));
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
