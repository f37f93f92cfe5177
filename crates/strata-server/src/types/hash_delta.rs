//! Field deltas: a write to a compact hash stored as what it changes (a merge operand of the
//! hash's metadata entry) instead of the whole rewritten entry, and the merge operator that
//! applies them (`docs/format/server-encoding.md`, "Field deltas"). The same operator hands
//! operands of format 2, a dense HyperLogLog's register deltas, to `hll::delta`.
//!
//! ```text
//!  +--------+-------------+--------+--------+-----+----------------+
//!  | format | count u32LE | edit 0 | edit 1 | ... | edit count-1   |
//!  +--------+-------------+--------+--------+-----+----------------+
//!  format: 1
//!  edit:   op u8 (1 put, 2 delete) | field_len u32LE | field | put only: value_len u32LE | value
//! ```
//!
//! An operand holds the edits of one write in its order (a later edit of a field wins), and
//! two operands combined are one operand with the edits of both, older first. Applying
//! operands to an entry is [`compact_hash::apply_unlimited`] of all their edits: the
//! writer already checked that the result fits and is not empty, else it wrote the whole
//! entry. The entry keeps its expiry.
//!
//! Contract: the merge fails (the read or compaction reports corruption, nothing is made up)
//! when an operand does not decode, when there is no entry under the operands, when the entry
//! is not a valid compact hash, or when the edits would empty it. A writer puts a delta only
//! on an existing compact hash it read under the key's lock (`Store::merge_meta`), and every
//! deletion or type change of the key is a whole write, so none of these happens to data the
//! server wrote.
//!
//! The writer (`hash::commit`) puts a delta only when it is at most half the size of the
//! entry it changes: a write that replaces most of a hash is cheaper whole, for every read
//! after it.
//!
//! Why: a one-field HSET on a hash of YCSB's shape (10 fields of 100 bytes) wrote 1.1 KB to
//! the WAL and the memtable, and as much again to every flush and compaction, for 100 bytes of
//! change.

use super::compact_hash::{self, take_chunk, Edit};
use super::metadata::{Kind, Meta};
use std::sync::Arc;

/// The format byte of an operand.
const FORMAT: u8 = 1;
/// Edit ops.
const PUT: u8 = 1;
const DELETE: u8 = 2;

/// The name the merge operator is stored under.
pub const OPERATOR_NAME: &str = "strata-server.hash-delta";

/// The size of the operand of `edits`.
pub fn encoded_len(edits: &[Edit]) -> usize {
    let edits: usize = edits
        .iter()
        .map(|e| match e {
            Edit::Put(f, v) => 9 + f.len() + v.len(),
            Edit::Del(f) => 5 + f.len(),
        })
        .sum();
    5 + edits
}

/// An operand's header (`format u8 | count u32LE`, shared by every operand format this
/// operator applies), in a buffer of `len` bytes' capacity for the whole operand.
pub(crate) fn operand_start(format: u8, count: usize, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    out.push(format);
    out.extend_from_slice(&(count as u32).to_le_bytes());
    out
}

/// The operand of `edits`.
pub fn encode(edits: &[Edit]) -> Vec<u8> {
    let mut out = operand_start(FORMAT, edits.len(), encoded_len(edits));
    for e in edits {
        match *e {
            Edit::Put(f, v) => {
                out.push(PUT);
                compact_hash::push_pair(&mut out, f, v);
            }
            Edit::Del(f) => {
                out.push(DELETE);
                compact_hash::push_chunk(&mut out, f);
            }
        }
    }
    out
}

/// The count of edits of operand `b` after checking its header (`format u8 | count u32LE`,
/// shared by every operand format this operator applies); `what` names the operand kind in
/// the error.
pub(crate) fn operand_count(b: &[u8], format: u8, what: &str) -> Result<usize, String> {
    match b.first() {
        Some(&f) if f == format => {}
        Some(f) => return Err(format!("{what} format {f} unknown (expected {format})")),
        None => return Err(format!("an empty {what}")),
    }
    b.get(1..5)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as usize)
        .ok_or_else(|| format!("a {what} of {} bytes, expected at least 5", b.len()))
}

/// Appends the edits of operand `b` to `edits`; `Err` says what is wrong and at which byte.
pub fn decode_into<'a>(b: &'a [u8], edits: &mut Vec<Edit<'a>>) -> Result<(), String> {
    let count = operand_count(b, FORMAT, "field delta")?;
    // Offsets in errors count from the operand's start.
    let at = |rest: &[u8]| b.len() - rest.len();
    let past = |what: &str, i: usize, from: &[u8]| {
        format!("edit {i}'s {what} at byte {} runs past the operand's {} bytes", at(from), b.len())
    };
    let mut rest = &b[5..];
    for i in 0..count {
        let Some((&op, after)) = rest.split_first() else {
            return Err(format!(
                "edit {i} of {count} missing: the operand ends at byte {}",
                b.len()
            ));
        };
        if op != PUT && op != DELETE {
            let at = at(rest);
            return Err(format!(
                "edit {i} has op {op} at byte {at}, expected 1 (put) or 2 (delete)"
            ));
        }
        let (field, after_field) = take_chunk(after).ok_or_else(|| past("field", i, after))?;
        rest = after_field;
        edits.push(if op == PUT {
            let (value, after_value) = take_chunk(rest).ok_or_else(|| past("value", i, rest))?;
            rest = after_value;
            Edit::Put(field, value)
        } else {
            Edit::Del(field)
        });
    }
    if !rest.is_empty() {
        return Err(format!("{} bytes after the last edit, at byte {}", rest.len(), at(rest)));
    }
    Ok(())
}

/// The metadata entry after `operands` (oldest first) are applied to `entry`; `Err` says
/// why they cannot be (the module's contract).
pub fn apply(entry: Option<&[u8]>, operands: &[&[u8]]) -> Result<Vec<u8>, String> {
    let entry = entry.ok_or("field deltas with no hash entry under them")?;
    let mut m = Meta::decode(entry).map_err(|e| format!("the entry under field deltas: {e}"))?;
    if m.kind != Kind::Hash || !m.compact {
        return Err(format!("field deltas over a {} entry, not a compact hash", m.kind.name()));
    }
    let mut edits = Vec::new();
    for (i, op) in operands.iter().enumerate() {
        decode_into(op, &mut edits).map_err(|e| format!("field delta {i}: {e}"))?;
    }
    let (payload, n) = compact_hash::apply_unlimited(&m.value, &edits);
    if n == 0 {
        return Err("field deltas that empty the hash".into());
    }
    m.value = payload.into();
    m.size = n;
    Ok(m.encode())
}

/// The operand equivalent to `operands` (oldest first): all their edits in order.
pub fn combine(operands: &[&[u8]]) -> Result<Vec<u8>, String> {
    let mut edits = Vec::new();
    for (i, op) in operands.iter().enumerate() {
        decode_into(op, &mut edits).map_err(|e| format!("field delta {i}: {e}"))?;
    }
    Ok(encode(&edits))
}

/// Whether `operands` are a HyperLogLog's register deltas (`hll::delta`, format 2) rather
/// than field deltas: by the first one's format byte (a key's operands are all of one kind:
/// each kind goes only onto its own type of entry, and a type change is a whole write; a
/// mixed chain fails in the decoding of the odd one).
fn registers(operands: &[&[u8]]) -> bool {
    operands.first().and_then(|o| o.first()) == Some(&super::hll::delta::FORMAT)
}

/// The metadata families' merge operator: field deltas of compact hashes, and register
/// deltas of dense HyperLogLogs (`hll::delta`).
struct DeltaMerge;

impl strata::MergeOperator for DeltaMerge {
    fn name(&self) -> &str {
        OPERATOR_NAME
    }

    fn full_merge(&self, key: &[u8], entry: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>> {
        let merged = if registers(operands) {
            super::hll::delta::apply(entry, operands)
        } else {
            apply(entry, operands)
        };
        merged
            .map_err(|e| {
                // The engine's error names only the operator; the log says which key and why.
                eprintln!("strata-server: metadata record {:?}: {e}", String::from_utf8_lossy(key));
            })
            .ok()
    }

    fn partial_merge(&self, _key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        if registers(operands) {
            super::hll::delta::combine(operands).ok()
        } else {
            combine(operands).ok()
        }
    }
}

/// The merge operator of the metadata families.
pub fn operator() -> Arc<dyn strata::MergeOperator> {
    Arc::new(DeltaMerge)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(pairs: &[(&[u8], &[u8])], expire_ms: u64) -> Vec<u8> {
        let mut m = Meta::compact_hash();
        m.expire_ms = expire_ms;
        m.value = compact_hash::encode(pairs.iter().copied()).into();
        m.size = pairs.len() as u64;
        m.encode()
    }

    #[test]
    fn operands_apply_in_order_and_keep_the_expiry() {
        let base = hash(&[(b"a", b"1"), (b"b", b"2")], 77);
        let d1 = encode(&[Edit::Put(b"a", b"10"), Edit::Put(b"c", b"3")]);
        let d2 = encode(&[Edit::Del(b"b"), Edit::Put(b"a", b"11")]);
        assert_eq!(encoded_len(&[Edit::Put(b"a", b"10"), Edit::Put(b"c", b"3")]), d1.len());
        let merged = apply(Some(&base), &[&d1, &d2]).unwrap();
        assert_eq!(merged, hash(&[(b"a", b"11"), (b"c", b"3")], 77));
        // Combined operands give the same result.
        let both = combine(&[&d1, &d2]).unwrap();
        assert_eq!(apply(Some(&base), &[&both]).unwrap(), merged);
        // And the whole rewrite the writer would have made.
        let m = Meta::decode(&merged).unwrap();
        assert_eq!((m.size, m.expire_ms), (2, 77));
    }

    /// The first delta marks the store's layout `slot-prefixed 3` (synced, before the delta
    /// is written), which a version without the merge operator refuses at open; a later
    /// second database keeps the marker, and the store reopens with its deltas merged.
    #[test]
    fn the_first_delta_marks_a_layout_older_versions_refuse() {
        use crate::storage::{LAYOUT, LAYOUT_DELTAS};
        use crate::types::compact_hash::Limits;
        use crate::types::{hash, open_test_databases, Keyspace};
        let dir = tempfile::tempdir().unwrap();
        let open = || open_test_databases(dir.path());
        let limits = Limits::default();
        let big = [b'v'; 100];
        {
            let dbs = open();
            let ks = Keyspace::new(dbs.store(0), &limits, 0);
            hash::set_fields(&ks, b"h", &[(b"a", &big), (b"b", &big)]).unwrap();
            assert_eq!(dbs.layout_marker().as_deref(), Some(LAYOUT), "a whole write marks nothing");
            hash::set_fields(&ks, b"h", &[(b"a", b"1")]).unwrap();
            assert_eq!(dbs.engine().field_deltas.load(std::sync::atomic::Ordering::Relaxed), 1);
            assert_eq!(dbs.layout_marker().as_deref(), Some(LAYOUT_DELTAS));
            dbs.ensure(2).unwrap();
            assert_eq!(
                dbs.layout_marker().as_deref(),
                Some(LAYOUT_DELTAS),
                "a second set keeps it"
            );
            dbs.close().unwrap();
        }
        let dbs = open();
        let ks = Keyspace::new(dbs.store(0), &limits, 0);
        assert_eq!(hash::get(&ks, b"h", b"a").unwrap().as_deref(), Some(&b"1"[..]));
        // The first write after the open is whole (the chain under it is not known), the
        // next a delta again, under the marker the open found.
        hash::set_fields(&ks, b"h", &[(b"b", b"2")]).unwrap();
        hash::set_fields(&ks, b"h", &[(b"b", b"3")]).unwrap();
        assert_eq!(dbs.engine().field_deltas.load(std::sync::atomic::Ordering::Relaxed), 1);
        assert_eq!(dbs.layout_marker().as_deref(), Some(LAYOUT_DELTAS));
        assert_eq!(hash::get(&ks, b"h", b"b").unwrap().as_deref(), Some(&b"3"[..]));
        dbs.close().unwrap();
    }

    #[test]
    fn what_cannot_apply_is_an_error_never_a_made_up_hash() {
        let base = hash(&[(b"a", b"1")], 0);
        let d = encode(&[Edit::Put(b"b", b"2")]);
        assert!(apply(None, &[&d]).unwrap_err().contains("no hash entry"));
        let string = Meta::string(b"v".to_vec(), 0).encode();
        assert!(apply(Some(&string), &[&d]).unwrap_err().contains("not a compact hash"));
        let emptying = encode(&[Edit::Del(b"a")]);
        assert!(apply(Some(&base), &[&emptying]).unwrap_err().contains("empty"));
        // Every truncation of a good operand, and bad format and op bytes, are errors.
        for cut in 0..d.len() {
            let e = apply(Some(&base), &[&d[..cut]]).unwrap_err();
            assert!(e.starts_with("field delta 0: "), "{e}");
        }
        let mut bad = d.clone();
        bad[0] = 9;
        assert!(apply(Some(&base), &[&bad]).unwrap_err().contains("format 9 unknown"));
        let mut bad = d.clone();
        bad[5] = 7;
        assert!(apply(Some(&base), &[&bad]).unwrap_err().contains("op 7"));
        let mut long = d.clone();
        long.push(0);
        assert!(apply(Some(&base), &[&long]).unwrap_err().contains("after the last edit"));
        assert!(combine(&[&d, &long]).unwrap_err().starts_with("field delta 1: "));
    }
}
