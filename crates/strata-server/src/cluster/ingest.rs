//! The bulk copy of a moving slot as table files: a page of the slot's records goes into the
//! target partition T's log as one ingest entry, and every replica of T, applying it, writes
//! the records into a table file of its own per family and ingests the files into its engine.
//! So the bulk of a slot reaches T's replicas without passing through their write-ahead
//! logs and memtables, and lands as whole files (in the lowest level they fit, as T's range
//! of the slot is empty: `super::ownership`'s import clears it only when something is
//! there).
//!
//! ```text
//!  entry:  0xFFFFFFFE u32LE | slot u16LE | change*  (puts only; storage::moving::encode_changes)
//!          the puts in family order, and within a family in strictly increasing key order;
//!          keys after the partition (slot u16BE | the rest)
//! ```
//!
//! Why records rather than the source's table files: every replica checks every key
//! (filed under the slot, in order) before it writes anything, as it checks a write batch,
//! which a table file made elsewhere would need a reader to do; and a file is built with
//! this node's engine. An entry whose records do not pass is refused with an error reply
//! and changes nothing, the same on every replica.
//!
//! Applying an entry again (after a crash between the ingestion and the applied index's
//! write) ingests the same records again, newer than everything: the slot is imported and
//! not served, and only the copy writes it, in log order, so the result is the same.

use std::path::Path;

use strata::{Db, IngestExternalFileOptions, SstFileWriter};

use crate::storage::moving::{decode_changes, push_change, Change};
use crate::storage::Store;

/// The first four bytes of an ingest entry (no family id is this large; the control
/// entries' are `0xFFFFFFFF`).
pub const INGEST: [u8; 4] = [0xfe, 0xff, 0xff, 0xff];

/// A page whose records' bytes reach this goes to the target as an ingest entry; a smaller
/// one as a write batch (a table file per page of a few records would only make work for
/// compactions).
pub const INGEST_BYTES: usize = 64 << 10;

/// The ingest entry of `records` (family, key after the partition, value) of `slot`, or why
/// they cannot be one (as [`decode`] would refuse them, so a bad page never reaches the log).
pub fn encode(slot: u16, records: &[(u8, &[u8], &[u8])]) -> Result<Vec<u8>, String> {
    check(slot, records.iter().map(|(family, key, _)| (*family, *key)))?;
    let bytes: usize = records.iter().map(|(_, k, v)| 10 + k.len() + v.len()).sum();
    let mut out = Vec::with_capacity(INGEST.len() + 2 + bytes);
    out.extend_from_slice(&INGEST);
    out.extend_from_slice(&slot.to_le_bytes());
    for (family, key, value) in records {
        push_change(&mut out, 1, *family, key, value);
    }
    Ok(out)
}

/// An ingest entry's slot and records: `Ok(None)` for an entry that is not one, `Err` for
/// one that is damaged or whose records are not puts of the slot in order (saying which).
pub fn decode(entry: &[u8]) -> Result<Option<(u16, Vec<Change>)>, String> {
    let Some(rest) = entry.strip_prefix(&INGEST) else { return Ok(None) };
    let Some((slot, rest)) = rest.split_first_chunk::<2>() else {
        return Err(format!("an ingest entry of {} bytes has no slot", entry.len()));
    };
    let slot = u16::from_le_bytes(*slot);
    let records = decode_changes(rest).map_err(|e| format!("an ingest entry: {e}"))?;
    let mut puts = Vec::with_capacity(records.len());
    for (i, c) in records.iter().enumerate() {
        let Change::Put { family, key, .. } = c else {
            return Err(format!("record {i} of the ingest is not a put"));
        };
        puts.push((*family, key.as_slice()));
    }
    check(slot, puts)?;
    Ok(Some((slot, records)))
}

/// Whether the records' (family, key) are of families 0-2 and keys of `slot`, in family
/// order and, within a family, in strictly increasing key order (as a table file needs them).
fn check<'a>(slot: u16, records: impl IntoIterator<Item = (u8, &'a [u8])>) -> Result<(), String> {
    let mut last: Option<(u8, &[u8])> = None;
    for (i, (family, key)) in records.into_iter().enumerate() {
        if family > 2 {
            return Err(format!("record {i} of the ingest names family {family}, not 0, 1 or 2"));
        }
        if key.len() <= 2 || !key.starts_with(&slot.to_be_bytes()) {
            return Err(format!(
                "record {i} of the ingest, key {:?}, is not one of slot {slot}",
                String::from_utf8_lossy(key)
            ));
        }
        if last.is_some_and(|l| l >= (family, key)) {
            return Err(format!("record {i} of the ingest is not after the one before it"));
        }
        last = Some((family, key));
    }
    Ok(())
}

/// Writes `records` (checked by [`decode`]) of `partition`'s view `store` into a table
/// file per family under `scratch` and ingests each into its family of `db`; how many.
pub fn ingest(
    db: &Db,
    store: &Store,
    scratch: &Path,
    partition: u16,
    name: &str,
    records: &[Change],
) -> Result<usize, String> {
    std::fs::create_dir_all(scratch)
        .map_err(|e| format!("ingest: create {}: {e}", scratch.display()))?;
    let families = store.families();
    let lead = partition.to_be_bytes();
    for (f, cf) in families.iter().enumerate() {
        let of_family = records.iter().filter_map(|c| match c {
            Change::Put { family, key, value } if usize::from(*family) == f => Some((key, value)),
            _ => None,
        });
        let mut of_family = of_family.peekable();
        if of_family.peek().is_none() {
            continue;
        }
        let path = scratch.join(format!("{name}-{f}.sst"));
        let what = |step: &str, e: &dyn std::fmt::Display| {
            format!("ingest: table file {}: {step}: {e}", path.display())
        };
        let mut w = SstFileWriter::create(&strata::Options::default());
        w.open(&path).map_err(|e| what("create", &e))?;
        let mut stored = Vec::new();
        for (key, value) in of_family {
            stored.clear();
            stored.extend_from_slice(&lead);
            stored.extend_from_slice(key);
            w.put(&stored, value).map_err(|e| what("add a record", &e))?;
        }
        w.finish().map_err(|e| what("finish", &e))?;
        let opts = IngestExternalFileOptions { move_files: true, ..Default::default() };
        // Linked (or copied) into the DB, and the file here removed.
        db.ingest_external_file_cf_opts(&***cf, &opts, [&path]).map_err(|e| what("ingest", &e))?;
        // Keys with an expiry came in unnoted: the walk looks for them at its full pace.
        store.due.mark_gap();
    }
    Ok(records.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records of a page: (family, key after the partition, value).
    type Records<'a> = [(u8, &'a [u8], &'a [u8])];

    /// An ingest entry of `records` as another proposer could have built it, unchecked.
    fn raw(slot: u16, records: &Records<'_>) -> Vec<u8> {
        let mut out = [&INGEST[..], &slot.to_le_bytes()].concat();
        for (family, key, value) in records {
            push_change(&mut out, 1, *family, key, value);
        }
        out
    }

    #[test]
    fn entries_round_trip_and_records_out_of_slot_or_order_are_refused() {
        let slot = 300u16;
        let k = |rest: &[u8]| [&slot.to_be_bytes()[..], rest].concat();
        let (a, b) = (k(b"a"), k(b"b"));
        let records: Vec<(u8, &[u8], &[u8])> = vec![(0, &a, b"1"), (0, &b, b"2"), (2, &a, b"3")];
        let e = encode(slot, &records).unwrap();
        assert_eq!(e, raw(slot, &records));
        let (s, back) = decode(&e).unwrap().unwrap();
        assert_eq!(s, slot);
        assert_eq!(back.len(), 3);
        assert_eq!(back[2], Change::Put { family: 2, key: a.clone(), value: b"3".to_vec() });
        assert_eq!(decode(b"\x01\0\0\0batch"), Ok(None));
        assert!(decode(&INGEST).unwrap_err().contains("has no slot"));
        // Refused when encoded, and by every replica when another proposer sent them.
        let other = [&(slot + 1).to_be_bytes()[..], b"x"].concat();
        let cases: [(&Records<'_>, &str); 4] = [
            (&[(0, &b, b"2"), (0, &a, b"1")], "record 1 of the ingest is not after"),
            (&[(1, &a, b"2"), (1, &a, b"1")], "not after"),
            (&[(0, &other, b"x")], "is not one of slot 300"),
            (&[(3, &a, b"x")], "family 3"),
        ];
        for (bad, why) in cases {
            let e = encode(slot, bad).unwrap_err();
            assert!(e.contains(why), "{e}");
            let e = decode(&raw(slot, bad)).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
        let mut damaged = raw(slot, &records);
        damaged.truncate(damaged.len() - 1);
        assert!(decode(&damaged).unwrap_err().contains("damaged"));
    }
}
