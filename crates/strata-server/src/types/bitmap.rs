//! Bitmaps: the bit operations on string values (BITCOUNT, BITPOS, BITOP, BITFIELD), with
//! Redis's numbering (bit 0 is the most significant bit of the first byte). The arithmetic
//! is pure ([`count_bits`], [`first_bit`], [`combine`], [`get_field`], [`set_field`],
//! [`add_to_field`]); the store operations read a string and write it back as one batch
//! under the key locks, through [`super::string::put`], keeping its expiry.

use super::error::{Result, TypeError};
use super::keyspace::Keyspace;
use super::metadata::{Kind, Payload};
use super::notify;
use super::string::put;
use strata::WriteBatch;

/// The unit of a BITCOUNT/BITPOS range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Indexes count bytes (the default).
    Byte,
    /// Indexes count bits.
    Bit,
}

/// The bits `start..=end` (inclusive, in `unit`s; negative: from the end) of a string of
/// `len` bytes cover, clamped to the string as Redis clamps them: the first and last bit,
/// or `None` for an empty range.
pub fn resolve_range(len: usize, start: i64, end: i64, unit: Unit) -> Option<(u64, u64)> {
    let bytes = len as i64;
    let total = if unit == Unit::Bit { bytes.saturating_mul(8) } else { bytes };
    // `total` is at most 2^35 and the indexes are at least i64::MIN: no overflow.
    let start = if start < 0 { total + start } else { start }.max(0);
    let end = if end < 0 { total + end } else { end }.max(0).min(total - 1);
    if start > end {
        return None;
    }
    let (start, end) = (start as u64, end as u64);
    Some(match unit {
        Unit::Bit => (start, end),
        Unit::Byte => (start * 8, end * 8 + 7),
    })
}

/// The bit at `pos` of `v` (0 past its end).
fn bit_at(v: &[u8], pos: u64) -> bool {
    let byte = usize::try_from(pos / 8).ok().and_then(|i| v.get(i).copied()).unwrap_or(0);
    byte & (0x80 >> (pos % 8)) != 0
}

/// The number of bits set in `v` from bit `first` to bit `last` (inclusive, within `v`).
pub fn count_bits(v: &[u8], first: u64, last: u64) -> u64 {
    if first > last {
        return 0;
    }
    let (fb, lb) = ((first / 8) as usize, (last / 8) as usize);
    let Some(bytes) = v.get(fb..=lb) else { return 0 };
    let mut n: u64 = bytes.iter().map(|b| u64::from(b.count_ones())).sum();
    // Take off the bits of the edge bytes outside the range.
    let head = first % 8;
    if head != 0 {
        n -= u64::from((bytes[0] & !(0xffu8 >> head)).count_ones());
    }
    let tail = 7 - last % 8;
    if tail != 0 {
        let mask = (1u8 << tail) - 1;
        n -= u64::from((bytes[bytes.len() - 1] & mask).count_ones());
    }
    n
}

/// The first bit equal to `bit` in `v` from bit `first` to bit `last` (inclusive, within
/// `v`), or `None`.
pub fn first_bit(v: &[u8], bit: bool, first: u64, last: u64) -> Option<u64> {
    let skip = if bit { 0x00u8 } else { 0xff };
    let mut pos = first;
    while pos <= last {
        if pos.is_multiple_of(8) && pos + 7 <= last {
            // Whole bytes: skip the run of bytes without the bit at once.
            let from = (pos / 8) as usize;
            let to = ((last + 1) / 8) as usize;
            match v.get(from..to)?.iter().position(|&b| b != skip) {
                Some(i) => {
                    let b = v[from + i];
                    let lead = if bit { b.leading_zeros() } else { b.leading_ones() };
                    return Some((from + i) as u64 * 8 + u64::from(lead));
                }
                None => {
                    pos = to as u64 * 8;
                    continue;
                }
            }
        }
        if bit_at(v, pos) == bit {
            return Some(pos);
        }
        pos += 1;
    }
    None
}

/// The value of the string at `key` for a bit read (`None`: absent);
/// [`TypeError::WrongType`] when it holds another type.
pub fn read(ks: &Keyspace, key: &[u8]) -> Result<Option<Payload>> {
    Ok(ks.typed(key, Kind::String)?.map(|m| m.value))
}

/// BITCOUNT over a string already read: the bits set from `start` to `end` (in `unit`s;
/// `None`: the whole string), with Redis's rule that two negative indexes in the wrong
/// order count nothing.
pub fn bit_count(v: &[u8], range: Option<(i64, i64, Unit)>) -> u64 {
    let (first, last) = match range {
        None if v.is_empty() => return 0,
        None => (0, v.len() as u64 * 8 - 1),
        Some((start, end, _)) if start < 0 && end < 0 && start > end => return 0,
        Some((start, end, unit)) => match resolve_range(v.len(), start, end, unit) {
            Some(r) => r,
            None => return 0,
        },
    };
    count_bits(v, first, last)
}

/// BITPOS over a string already read: the first bit equal to `bit` from `start` (default
/// 0) to `end` (`None`: the end of the string) in `unit`s, or -1. Looking for a clear bit
/// with no `end` given, the string counts as followed by clear bits: the bit after its end.
pub fn bit_pos(v: &[u8], bit: bool, start: i64, end: Option<i64>, unit: Unit) -> i64 {
    let end_given = end.is_some();
    let end = end.unwrap_or(-1);
    let Some((first, last)) = resolve_range(v.len(), start, end, unit) else {
        return -1;
    };
    match first_bit(v, bit, first, last) {
        Some(p) => p as i64,
        None if !bit && !end_given => (last + 1) as i64,
        None => -1,
    }
}

/// A BITOP operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

/// The result of `op` over `sources` (missing bytes of a shorter one read as zero): as long
/// as the longest source, empty when all are. NOT takes the first source only.
pub fn combine(op: BitOp, sources: &[&[u8]]) -> Vec<u8> {
    let len = sources.iter().map(|s| s.len()).max().unwrap_or(0);
    let byte = |s: &[u8], i: usize| s.get(i).copied().unwrap_or(0);
    let Some((first, rest)) = sources.split_first() else { return Vec::new() };
    (0..len)
        .map(|i| {
            let mut out = byte(first, i);
            match op {
                BitOp::Not => out = !out,
                BitOp::And => rest.iter().for_each(|s| out &= byte(s, i)),
                BitOp::Or => rest.iter().for_each(|s| out |= byte(s, i)),
                BitOp::Xor => rest.iter().for_each(|s| out ^= byte(s, i)),
            }
            out
        })
        .collect()
}

/// BITOP: stores `op` over the strings at `sources` (absent: empty) at `dest` as a string
/// without expiry, or deletes `dest` when the result is empty; the result's length. Every
/// key is locked; a source of another type is [`TypeError::WrongType`] and writes nothing.
pub fn bit_op(ks: &Keyspace, op: BitOp, dest: &[u8], sources: &[&[u8]]) -> Result<usize> {
    let mut keys: Vec<&[u8]> = vec![dest];
    keys.extend_from_slice(sources);
    let _g = ks.store.locks.lock(&keys);
    let mut values = Vec::with_capacity(sources.len());
    for k in sources {
        values.push(read(ks, k)?.unwrap_or_default());
    }
    let refs: Vec<&[u8]> = values.iter().map(|v| &v[..]).collect();
    let out = combine(op, &refs);
    let len = out.len();
    if len > 0 {
        let created = ks.would_create(dest)?;
        put(ks, dest, out, 0)?;
        ks.notify_new(created, dest);
        ks.notify(notify::STRING, "set", dest);
    } else if ks.meta(dest)?.is_some() {
        let mut b = WriteBatch::new();
        ks.delete_meta(&mut b, dest);
        ks.write(b)?;
        ks.notify(notify::GENERIC, "del", dest);
    }
    Ok(len)
}

/// A BITFIELD integer type: signed i1..i64 or unsigned u1..u63.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldType {
    /// Whether it is signed (two's complement).
    pub signed: bool,
    /// Its width, 1 to 64 (63 unsigned).
    pub bits: u32,
}

impl FieldType {
    /// The type `bits` wide, or `None` outside i1..i64 / u1..u63.
    pub fn new(signed: bool, bits: u32) -> Option<FieldType> {
        let max = if signed { 64 } else { 63 };
        (1..=max).contains(&bits).then_some(FieldType { signed, bits })
    }

    /// The smallest and largest value of the type.
    fn limits(self) -> (i128, i128) {
        if self.signed {
            (-(1i128 << (self.bits - 1)), (1i128 << (self.bits - 1)) - 1)
        } else {
            (0, (1i128 << self.bits) - 1)
        }
    }

    /// `v` reduced modulo 2^bits into the type's range (two's complement wrap-around).
    fn wrap(self, v: i128) -> i128 {
        let m = 1i128 << self.bits;
        let r = v.rem_euclid(m);
        if self.signed && r >= m / 2 {
            r - m
        } else {
            r
        }
    }
}

/// What BITFIELD does when a SET or INCRBY leaves the type's range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// Wrap around (the default).
    Wrap,
    /// Saturate at the smallest or largest value.
    Sat,
    /// Write nothing and reply nil.
    Fail,
}

/// `value + incr` in a field of type `t` under `ow`: the value to store, or `None` when it
/// overflows under [`Overflow::Fail`]. An unsigned SET's value is first read as Redis reads
/// it, as a 64-bit unsigned integer (so -1 is 2^64 - 1): the caller passes it so.
pub fn add_to_field(t: FieldType, value: i128, incr: i64, ow: Overflow) -> Option<i64> {
    let (min, max) = t.limits();
    let sum = value + i128::from(incr);
    let out = if (min..=max).contains(&sum) {
        sum
    } else {
        match ow {
            Overflow::Fail => return None,
            Overflow::Sat if sum > max => max,
            Overflow::Sat => min,
            Overflow::Wrap => t.wrap(sum),
        }
    };
    // In range of the type, which fits an i64 (unsigned types have at most 63 bits).
    Some(out as i64)
}

/// The field of type `t` at bit `offset` of `v` (bits past its end read as 0).
pub fn get_field(v: &[u8], offset: u64, t: FieldType) -> i64 {
    let mut u: u64 = 0;
    for j in 0..u64::from(t.bits) {
        u = (u << 1) | u64::from(bit_at(v, offset.saturating_add(j)));
    }
    if t.signed && t.bits < 64 && u & (1 << (t.bits - 1)) != 0 {
        u |= u64::MAX << t.bits;
    }
    u as i64
}

/// Writes the low `t.bits` bits of `value` as the field at bit `offset` of `v`, which the
/// caller has made long enough.
pub fn set_field(v: &mut [u8], offset: u64, t: FieldType, value: i64) {
    let u = value as u64;
    for j in 0..u64::from(t.bits) {
        let on = (u >> (u64::from(t.bits) - 1 - j)) & 1 != 0;
        let pos = offset + j;
        let mask = 0x80u8 >> (pos % 8);
        let byte = &mut v[(pos / 8) as usize];
        if on {
            *byte |= mask;
        } else {
            *byte &= !mask;
        }
    }
}

/// One BITFIELD operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldAction {
    /// GET: the field's value.
    Get,
    /// SET: stores the value, replies the old one.
    Set(i64),
    /// INCRBY: adds the increment, replies the new value.
    IncrBy(i64),
}

/// One BITFIELD operation on a field: its type, bit offset, action and overflow rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldOp {
    pub ty: FieldType,
    pub offset: u64,
    pub action: FieldAction,
    pub overflow: Overflow,
}

impl FieldOp {
    fn writes(&self) -> bool {
        !matches!(self.action, FieldAction::Get)
    }
}

/// Runs `ops` in order on the string `v`, which the caller has grown to hold every written
/// field: each one's reply (`None`: an overflow under FAIL, nothing written).
pub fn apply_fields(v: &mut [u8], ops: &[FieldOp]) -> Vec<Option<i64>> {
    ops.iter()
        .map(|op| {
            let old = get_field(v, op.offset, op.ty);
            let (value, incr, reply_old) = match op.action {
                FieldAction::Get => return Some(old),
                // An unsigned type reads the SET value as Redis does: as a u64.
                FieldAction::Set(x) if op.ty.signed => (i128::from(x), 0, true),
                FieldAction::Set(x) => (i128::from(x as u64), 0, true),
                FieldAction::IncrBy(by) => (i128::from(old), by, false),
            };
            let new = add_to_field(op.ty, value, incr, op.overflow)?;
            set_field(v, op.offset, op.ty, new);
            Some(if reply_old { old } else { new })
        })
        .collect()
}

/// BITFIELD (and BITFIELD_RO, whose `ops` only read): runs `ops` on the string at `key`.
/// With a write among them the key is locked, the string created or grown with zero bytes
/// to hold every written field, and written back (keeping its expiry) if it changed; a
/// key of another type is [`TypeError::WrongType`]. The caller has bounded the offsets.
pub fn bit_field(ks: &Keyspace, key: &[u8], ops: &[FieldOp]) -> Result<Vec<Option<i64>>> {
    if !ops.iter().any(FieldOp::writes) {
        // Read-only fields: the payload is copied only if it is shared (`Payload::make_mut`).
        let mut v = read(ks, key)?.unwrap_or_default();
        return Ok(apply_fields(v.make_mut(), ops));
    }
    let _g = ks.store.locks.lock(&[key]);
    let old = ks.typed(key, Kind::String)?;
    let highest = ops
        .iter()
        .filter(|op| op.writes())
        .map(|op| op.offset.saturating_add(u64::from(op.ty.bits) - 1))
        .max()
        .unwrap_or(0);
    let need = usize::try_from(highest / 8 + 1).map_err(|_| TypeError::StringTooLong)?;
    let existed = old.is_some();
    let (orig, expire_ms) = old.map_or((Vec::new(), 0), |m| (m.value.into_vec(), m.expire_ms));
    let mut v = orig.clone();
    if v.len() < need {
        v.resize(need, 0);
    }
    let replies = apply_fields(&mut v, ops);
    let changed = !existed || v != orig;
    if changed {
        put(ks, key, v, expire_ms)?;
    }
    ks.notify_new(!existed, key);
    // As Redis: when a write op ran (not failed by its overflow rule) and the string was
    // created, grown or changed.
    let wrote = ops.iter().zip(&replies).any(|(op, r)| op.writes() && r.is_some());
    if wrote && changed {
        ks.notify(notify::STRING, "setbit", key);
    }
    Ok(replies)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(signed: bool, bits: u32) -> FieldType {
        FieldType::new(signed, bits).unwrap()
    }

    #[test]
    fn field_types_are_i1_to_i64_and_u1_to_u63() {
        assert!(FieldType::new(true, 64).is_some());
        assert!(FieldType::new(false, 64).is_none());
        assert!(FieldType::new(false, 63).is_some());
        assert!(FieldType::new(true, 0).is_none());
        assert!(FieldType::new(true, 65).is_none());
    }

    #[test]
    fn fields_read_and_write_at_unaligned_offsets() {
        let mut v = vec![0u8; 10];
        set_field(&mut v, 5, t(false, 7), 0b1010011);
        assert_eq!(v[..2], [0b0000_0101, 0b0011_0000]);
        assert_eq!(get_field(&v, 5, t(false, 7)), 0b1010011);
        assert_eq!(get_field(&v, 5, t(true, 7)), 0b1010011 - 128);
        set_field(&mut v, 3, t(true, 64), i64::MIN);
        assert_eq!(get_field(&v, 3, t(true, 64)), i64::MIN);
        assert_eq!(get_field(&v, 3, t(false, 63)), 1 << 62);
        set_field(&mut v, 13, t(true, 13), -1);
        assert_eq!(get_field(&v, 13, t(true, 13)), -1);
        assert_eq!(get_field(&v, 13, t(false, 13)), 8191);
        // Past the end reads as zeros, even at the largest offsets.
        assert_eq!(get_field(&[0xff], 4, t(false, 8)), 0xf0);
        assert_eq!(get_field(&[0xff], u64::MAX - 3, t(true, 64)), 0);
        // i1 is 0 or -1.
        assert_eq!(get_field(&[0x80], 0, t(true, 1)), -1);
        assert_eq!(get_field(&[0x80], 0, t(false, 1)), 1);
    }

    #[test]
    fn overflow_wraps_saturates_or_fails() {
        use Overflow::{Fail, Sat, Wrap};
        let (u8t, i8t, i64t, u63) = (t(false, 8), t(true, 8), t(true, 64), t(false, 63));
        assert_eq!(add_to_field(u8t, 250, 10, Wrap), Some(4));
        assert_eq!(add_to_field(u8t, 250, 10, Sat), Some(255));
        assert_eq!(add_to_field(u8t, 250, 10, Fail), None);
        assert_eq!(add_to_field(u8t, 5, -10, Wrap), Some(251));
        assert_eq!(add_to_field(u8t, 5, -10, Sat), Some(0));
        assert_eq!(add_to_field(u8t, 5, -5, Fail), Some(0));
        assert_eq!(add_to_field(i8t, 127, 1, Wrap), Some(-128));
        assert_eq!(add_to_field(i8t, 127, 1, Sat), Some(127));
        assert_eq!(add_to_field(i8t, -128, -1, Wrap), Some(127));
        assert_eq!(add_to_field(i8t, -128, -1, Sat), Some(-128));
        assert_eq!(add_to_field(i8t, -128, -1, Fail), None);
        assert_eq!(add_to_field(i8t, 100, i64::MIN, Sat), Some(-128));
        assert_eq!(add_to_field(i64t, i128::from(i64::MAX), 1, Wrap), Some(i64::MIN));
        assert_eq!(add_to_field(i64t, i128::from(i64::MAX), i64::MAX, Sat), Some(i64::MAX));
        assert_eq!(add_to_field(i64t, i128::from(i64::MIN), -1, Sat), Some(i64::MIN));
        assert_eq!(add_to_field(i64t, i128::from(i64::MIN), i64::MIN, Wrap), Some(0));
        assert_eq!(add_to_field(i64t, -1, i64::MIN, Fail), None);
        assert_eq!(add_to_field(u63, 0, i64::MAX, Fail), Some(i64::MAX));
        assert_eq!(add_to_field(u63, 1, i64::MAX, Fail), None);
        assert_eq!(add_to_field(u63, 1, i64::MAX, Wrap), Some(0));
        assert_eq!(add_to_field(u63, 0, i64::MIN, Wrap), Some(0));
        // An unsigned SET of -1 is 2^64 - 1: above the maximum.
        assert_eq!(add_to_field(u8t, i128::from(u64::MAX), 0, Sat), Some(255));
        assert_eq!(add_to_field(u8t, i128::from(u64::MAX), 0, Wrap), Some(255));
        assert_eq!(add_to_field(u8t, 256, 0, Wrap), Some(0));
    }

    #[test]
    fn fields_apply_in_order_with_replies() {
        let mut v = vec![0u8; 2];
        let op = |action, ty, overflow| FieldOp { ty, offset: 3, action, overflow };
        let ops = [
            op(FieldAction::Set(-1), t(false, 4), Overflow::Wrap),
            op(FieldAction::Get, t(false, 4), Overflow::Wrap),
            op(FieldAction::IncrBy(1), t(false, 4), Overflow::Fail),
            op(FieldAction::IncrBy(1), t(false, 4), Overflow::Wrap),
            op(FieldAction::Set(9), t(true, 4), Overflow::Sat),
        ];
        assert_eq!(apply_fields(&mut v, &ops), [Some(0), Some(15), None, Some(0), Some(0)]);
        assert_eq!(get_field(&v, 3, t(true, 4)), 7);
    }

    #[test]
    fn popcount_ranges_in_bytes_and_bits() {
        let v = b"foobar";
        assert_eq!(bit_count(v, None), 26);
        assert_eq!(bit_count(v, Some((1, 1, Unit::Byte))), 6);
        assert_eq!(bit_count(v, Some((0, 0, Unit::Byte))), 4);
        assert_eq!(bit_count(v, Some((-2, -1, Unit::Byte))), 7);
        assert_eq!(bit_count(v, Some((-1, -2, Unit::Byte))), 0);
        assert_eq!(bit_count(v, Some((5, 30, Unit::Bit))), 17);
        assert_eq!(bit_count(v, Some((1, 5, Unit::Bit))), 3); // b"f" is 0110_0110
        assert_eq!(bit_count(v, Some((0, i64::MAX, Unit::Bit))), 26);
        assert_eq!(bit_count(v, Some((i64::MIN, i64::MAX, Unit::Byte))), 26);
        assert_eq!(bit_count(v, Some((100, 200, Unit::Byte))), 0);
        assert_eq!(bit_count(b"", Some((0, -1, Unit::Bit))), 0);
        // Against a bit-by-bit count.
        let w: Vec<u8> = (0u32..40).map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8).collect();
        for first in 0..w.len() as u64 * 8 {
            for last in first..(first + 70).min(w.len() as u64 * 8) {
                let slow = (first..=last).filter(|&p| bit_at(&w, p)).count() as u64;
                assert_eq!(count_bits(&w, first, last), slow, "{first}..={last}");
            }
        }
    }

    #[test]
    fn bitpos_ranges_and_negative_indexes() {
        let v = [0xff, 0xf0, 0x00];
        assert_eq!(bit_pos(&v, false, 0, None, Unit::Byte), 12);
        assert_eq!(bit_pos(&v, true, 2, None, Unit::Byte), -1);
        assert_eq!(bit_pos(&v, true, 1, None, Unit::Byte), 8);
        assert_eq!(bit_pos(&v, false, 0, Some(0), Unit::Byte), -1);
        // No end given: the string continues with clear bits.
        assert_eq!(bit_pos(&[0xff], false, 0, None, Unit::Byte), 8);
        assert_eq!(bit_pos(&[0xff], false, 0, Some(-1), Unit::Byte), -1);
        assert_eq!(bit_pos(&[0xff, 0xff], false, 3, None, Unit::Bit), 16);
        assert_eq!(bit_pos(&v, true, 13, None, Unit::Bit), -1);
        assert_eq!(bit_pos(&v, true, 10, Some(12), Unit::Bit), 10);
        assert_eq!(bit_pos(&v, false, 8, Some(11), Unit::Bit), -1);
        assert_eq!(bit_pos(&v, false, -12, Some(-1), Unit::Bit), 12);
        assert_eq!(bit_pos(&v, true, -3, Some(-2), Unit::Byte), 0);
        assert_eq!(bit_pos(&v, true, 5, Some(3), Unit::Bit), -1);
        assert_eq!(bit_pos(b"", false, 0, None, Unit::Byte), -1);
        assert_eq!(bit_pos(&v, false, i64::MIN, Some(i64::MAX), Unit::Bit), 12);
        // Against a bit-by-bit search.
        let w: Vec<u8> = (0u32..24).map(|i| if i % 5 == 0 { 0x10 } else { 0xff }).collect();
        for bit in [false, true] {
            for first in 0..w.len() as u64 * 8 {
                for last in first..w.len() as u64 * 8 {
                    let slow = (first..=last).find(|&p| bit_at(&w, p) == bit);
                    assert_eq!(first_bit(&w, bit, first, last), slow, "{first}..={last}");
                }
            }
        }
    }

    #[test]
    fn bitop_combines_padding_with_zeros() {
        assert_eq!(combine(BitOp::And, &[b"\xff\x0f", b"\x0f"]), b"\x0f\x00");
        assert_eq!(combine(BitOp::Or, &[b"\xf0", b"\x0f\x01"]), b"\xff\x01");
        assert_eq!(combine(BitOp::Xor, &[b"\xff", b"\x0f", b"\x01"]), b"\xf1");
        assert_eq!(combine(BitOp::Not, &[b"\x0f\xff"]), b"\xf0\x00");
        assert!(combine(BitOp::Or, &[b"", b""]).is_empty());
    }
}
