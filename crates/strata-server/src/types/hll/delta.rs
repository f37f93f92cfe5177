//! Register deltas: a change to a dense HyperLogLog stored as what it changes (a merge
//! operand of the key's metadata entry) instead of the whole 12,304-byte value, applied by
//! the metadata families' merge operator (`super::super::hash_delta`, which hands it format
//! 2 operands). Mirrored in `docs/format/server-encoding.md` ("Field deltas").
//!
//! ```text
//!  +--------+-------------+--------+--------+-----+----------------+
//!  | format | count u32LE | edit 0 | edit 1 | ... | edit count-1   |
//!  +--------+-------------+--------+--------+-----+----------------+
//!  format: 2
//!  edit:   1 (raise) | register u16LE | value u8   the register becomes at least value (1-63);
//!                                                  the cached count turns stale
//!          2 (count) | count u64LE                  the cached count, valid
//! ```
//!
//! An operand holds one write's edits in order; operands combined are one operand with the
//! edits of both, older first.
//!
//! Contract: the merge fails (the read or compaction reports corruption) when an operand does
//! not decode, when there is no entry under the operands, or when the entry is not a string
//! holding a dense HyperLogLog. A writer puts a delta only on a dense HyperLogLog it read
//! under the key's lock (`super::add`, `super::count`), and every other change of the key
//! (a sparse value, a type change, a deletion, SETRANGE) is a whole write.
//!
//! Why: PFADD to a dense HyperLogLog changes a few registers, and wrote the whole value to the
//! WAL and the memtable, and again to every flush and compaction, each time.

use super::estimate::REGISTERS;
use super::value::{Encoding, Hll};
use crate::types::hash_delta::{operand_count, operand_start};
use crate::types::metadata::{Kind, Meta};

/// The format byte of an operand.
pub const FORMAT: u8 = 2;
const RAISE: u8 = 1;
const COUNT: u8 = 2;

/// One change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edit {
    /// Register `.0` becomes at least `.1`.
    Raise(u16, u8),
    /// The cached count is this, and valid.
    Count(u64),
}

/// The size of the operand of `edits`.
pub fn encoded_len(edits: &[Edit]) -> usize {
    5 + edits.iter().map(|e| if matches!(e, Edit::Raise(..)) { 4 } else { 9 }).sum::<usize>()
}

/// The operand of `edits`.
pub fn encode(edits: &[Edit]) -> Vec<u8> {
    let mut out = operand_start(FORMAT, edits.len(), encoded_len(edits));
    for e in edits {
        match *e {
            Edit::Raise(i, v) => {
                out.push(RAISE);
                out.extend_from_slice(&i.to_le_bytes());
                out.push(v);
            }
            Edit::Count(n) => {
                out.push(COUNT);
                out.extend_from_slice(&n.to_le_bytes());
            }
        }
    }
    out
}

/// Appends the edits of operand `b` to `edits`; `Err` says what is wrong and at which byte.
fn decode_into(b: &[u8], edits: &mut Vec<Edit>) -> Result<(), String> {
    let count = operand_count(b, FORMAT, "register delta")?;
    let mut at = 5;
    for i in 0..count {
        let cut = |what: &str| {
            format!("edit {i}'s {what} at byte {at} runs past the operand's {} bytes", b.len())
        };
        match b.get(at) {
            Some(&RAISE) => {
                let e = b.get(at + 1..at + 4).ok_or_else(|| cut("register"))?;
                let register = u16::from_le_bytes([e[0], e[1]]);
                if usize::from(register) >= REGISTERS || e[2] == 0 || e[2] > 63 {
                    return Err(format!(
                        "edit {i} at byte {at} raises register {register} to {}: expected a \
                         register below {REGISTERS} and a value of 1 to 63",
                        e[2]
                    ));
                }
                edits.push(Edit::Raise(register, e[2]));
                at += 4;
            }
            Some(&COUNT) => {
                let e = b.get(at + 1..at + 9).ok_or_else(|| cut("count"))?;
                edits.push(Edit::Count(u64::from_le_bytes(e.try_into().unwrap_or([0; 8]))));
                at += 9;
            }
            Some(op) => {
                return Err(format!(
                    "edit {i} has op {op} at byte {at}, expected 1 (raise) or 2 (count)"
                ))
            }
            None => return Err(format!("edit {i} of {count} missing: the operand ends at {at}")),
        }
    }
    if at != b.len() {
        return Err(format!("{} bytes after the last edit, at byte {at}", b.len() - at));
    }
    Ok(())
}

/// The metadata entry after `operands` (oldest first) are applied to `entry`; `Err` says why
/// they cannot be (the module's contract).
pub fn apply(entry: Option<&[u8]>, operands: &[&[u8]]) -> Result<Vec<u8>, String> {
    let entry = entry.ok_or("register deltas with no entry under them")?;
    let m = Meta::decode(entry).map_err(|e| format!("the entry under register deltas: {e}"))?;
    if m.kind != Kind::String {
        return Err(format!("register deltas over a {} entry, not a string", m.kind.name()));
    }
    let mut h = Hll::parse(m.value.to_vec())
        .ok()
        .filter(|h| h.encoding() == Encoding::Dense)
        .ok_or("register deltas over a string that is not a dense HyperLogLog")?;
    let mut edits = Vec::new();
    for (i, op) in operands.iter().enumerate() {
        decode_into(op, &mut edits).map_err(|e| format!("register delta {i}: {e}"))?;
    }
    for e in edits {
        match e {
            Edit::Raise(i, v) => {
                if super::value::dense_raise(h.registers_mut(), usize::from(i), v) {
                    h.mark_stale();
                }
            }
            Edit::Count(n) => h.set_cached_count(n),
        }
    }
    Ok(Meta::encode_string(&h.into_bytes(), m.expire_ms))
}

/// The operand equivalent to `operands` (oldest first): all their edits in order.
pub fn combine(operands: &[&[u8]]) -> Result<Vec<u8>, String> {
    let mut edits = Vec::new();
    for (i, op) in operands.iter().enumerate() {
        decode_into(op, &mut edits).map_err(|e| format!("register delta {i}: {e}"))?;
    }
    Ok(encode(&edits))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dense(elements: &[&str], expire_ms: u64) -> (Hll, Vec<u8>) {
        let mut h = Hll::empty();
        h.make_dense(3000).unwrap();
        let e: Vec<Vec<u8>> = elements.iter().map(|e| e.as_bytes().to_vec()).collect();
        h.add(&e, 3000).unwrap();
        let raw = Meta::encode_string(&h.clone().into_bytes(), expire_ms);
        (h, raw)
    }

    #[test]
    fn operands_raise_registers_and_set_the_count_in_order_keeping_the_expiry() {
        let (mut want, raw) = dense(&["a", "b"], 77);
        let d1 = encode(&[Edit::Raise(5, 3), Edit::Count(9)]);
        let d2 = encode(&[Edit::Raise(7, 1), Edit::Raise(5, 2)]);
        let got = apply(Some(&raw), &[&d1, &d2]).unwrap();
        super::super::value::dense_raise(want.registers_mut(), 5, 3);
        super::super::value::dense_raise(want.registers_mut(), 7, 1);
        want.set_cached_count(9);
        want.mark_stale();
        let m = Meta::decode(&got).unwrap();
        assert_eq!(m.expire_ms, 77);
        assert_eq!(Hll::parse(m.value.to_vec()).unwrap(), want);
        // Combined, the same; a count after the raises leaves it valid.
        assert_eq!(apply(Some(&raw), &[&combine(&[&d1, &d2]).unwrap()]).unwrap(), got);
        let d3 = encode(&[Edit::Count(11)]);
        let m = Meta::decode(&apply(Some(&raw), &[&d1, &d2, &d3]).unwrap()).unwrap();
        assert_eq!(Hll::parse(m.value.to_vec()).unwrap().cached_count(), Some(11));
    }

    /// The first register delta raises the store's layout to `slot-prefixed 4` (synced,
    /// before the delta), which a version that applies only field deltas refuses at open; a
    /// field delta and a second database after it keep that marker, never lower it, and the
    /// store reopens with the deltas merged.
    #[test]
    fn the_first_register_delta_raises_the_layout_past_field_deltas() {
        use crate::storage::{LAYOUT_DELTAS, LAYOUT_REGISTER_DELTAS};
        use crate::types::compact_hash::Limits;
        use crate::types::{hash, hll, open_test_databases, Keyspace};
        let dir = tempfile::tempdir().unwrap();
        let open = || open_test_databases(dir.path());
        let limits = Limits::default();
        let elements = |from: u32, n: u32| -> Vec<Vec<u8>> {
            (from..from + n).map(|i| i.to_le_bytes().to_vec()).collect()
        };
        let want = {
            let dbs = open();
            let ks = Keyspace::new(dbs.store(0), &limits, 0);
            let big = [b'v'; 100];
            hash::set_fields(&ks, b"h", &[(b"a", &big), (b"b", &big)]).unwrap();
            hash::set_fields(&ks, b"h", &[(b"a", b"1")]).unwrap();
            assert_eq!(dbs.layout_marker().as_deref(), Some(LAYOUT_DELTAS));
            // Dense at once (a limit of 0), then a few more elements: a register delta.
            assert!(hll::add(&ks, b"p", &elements(0, 100), 0).unwrap());
            assert!(hll::add(&ks, b"p", &elements(100, 5), 0).unwrap());
            assert_eq!(dbs.layout_marker().as_deref(), Some(LAYOUT_REGISTER_DELTAS));
            hash::set_fields(&ks, b"h", &[(b"a", b"2")]).unwrap();
            dbs.ensure(2).unwrap();
            assert_eq!(
                dbs.layout_marker().as_deref(),
                Some(LAYOUT_REGISTER_DELTAS),
                "never lowered"
            );
            let want = hll::count(&ks, b"p", false).unwrap();
            dbs.close().unwrap();
            want
        };
        let dbs = open();
        let ks = Keyspace::new(dbs.store(0), &limits, 0);
        assert_eq!(hll::count(&ks, b"p", false).unwrap(), want);
        assert!((100..=110).contains(&want), "{want}");
        assert_eq!(hash::get(&ks, b"h", b"a").unwrap().as_deref(), Some(&b"2"[..]));
        dbs.close().unwrap();
    }

    #[test]
    fn damaged_operands_and_entries_are_refused_with_the_reason() {
        let (_, raw) = dense(&["a"], 0);
        let good = encode(&[Edit::Raise(1, 1)]);
        assert!(apply(None, &[&good]).unwrap_err().contains("no entry"));
        let sparse = Meta::encode_string(&Hll::empty().into_bytes(), 0);
        assert!(apply(Some(&sparse), &[&good]).unwrap_err().contains("not a dense"));
        let mut cut = good.clone();
        cut.pop();
        assert!(apply(Some(&raw), &[&cut]).unwrap_err().contains("runs past"));
        let big = encode(&[Edit::Raise(16_384, 1)]);
        assert!(apply(Some(&raw), &[&big]).unwrap_err().contains("register 16384"));
        let zero = encode(&[Edit::Raise(3, 0)]);
        assert!(apply(Some(&raw), &[&zero]).unwrap_err().contains("value of 1 to 63"));
        let mut extra = good.clone();
        extra.push(0);
        assert!(apply(Some(&raw), &[&extra]).unwrap_err().contains("after the last edit"));
        let mut op = good;
        op[5] = 9;
        assert!(apply(Some(&raw), &[&op]).unwrap_err().contains("op 9"));
        assert_eq!(encoded_len(&[Edit::Raise(1, 1), Edit::Count(1)]), 18);
    }
}
