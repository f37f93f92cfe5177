//! Bitmap commands (`types::bitmap`): BITCOUNT, BITPOS, BITOP, BITFIELD and BITFIELD_RO,
//! with Redis 7.0's argument order and error texts (GETBIT and SETBIT are in `strings`).

use super::args::{int_arg, is};
use super::errors::{CmdError, SYNTAX};
use super::CmdResult;
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::types::bitmap::{self, BitOp, FieldAction, FieldOp, FieldType, Overflow, Unit};
use crate::types::number::parse_int_strict;

/// A BIT/BYTE range unit argument.
fn unit_arg(arg: &[u8]) -> Result<Unit, CmdError> {
    if is(arg, "bit") {
        Ok(Unit::Bit)
    } else if is(arg, "byte") {
        Ok(Unit::Byte)
    } else {
        Err(SYNTAX.into())
    }
}

/// BITCOUNT key [start end [BYTE|BIT]]
pub fn bitcount(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    // Redis looks the key up first: an absent key counts 0 whatever the other arguments.
    let Some(v) = bitmap::read(&sh.keyspace(c.db), &a[1])? else {
        out.int(0);
        return Ok(());
    };
    let range = match a.len() {
        2 => None,
        4 | 5 => {
            let (start, end) = (int_arg(&a[2])?, int_arg(&a[3])?);
            // Two negative indexes in the wrong order count nothing, before the unit is read.
            if start < 0 && end < 0 && start > end {
                out.int(0);
                return Ok(());
            }
            let unit = a.get(4).map_or(Ok(Unit::Byte), |u| unit_arg(u))?;
            Some((start, end, unit))
        }
        _ => return Err(SYNTAX.into()),
    };
    out.int(bitmap::bit_count(&v, range) as i64);
    Ok(())
}

/// BITPOS key bit [start [end [BYTE|BIT]]]
pub fn bitpos(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let bit = match int_arg(&a[2])? {
        0 => false,
        1 => true,
        _ => return Err("ERR The bit argument must be 1 or 0.".into()),
    };
    // An absent key is an endless run of clear bits.
    let Some(v) = bitmap::read(&sh.keyspace(c.db), &a[1])? else {
        out.int(if bit { -1 } else { 0 });
        return Ok(());
    };
    if a.len() > 6 {
        return Err(SYNTAX.into());
    }
    let start = a.get(3).map_or(Ok(0), |s| int_arg(s))?;
    let unit = a.get(5).map_or(Ok(Unit::Byte), |u| unit_arg(u))?;
    let end = a.get(4).map(|e| int_arg(e)).transpose()?;
    out.int(bitmap::bit_pos(&v, bit, start, end, unit));
    Ok(())
}

/// BITOP AND|OR|XOR|NOT destkey key [key ...]
pub fn bitop(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let op = if is(&a[1], "and") {
        BitOp::And
    } else if is(&a[1], "or") {
        BitOp::Or
    } else if is(&a[1], "xor") {
        BitOp::Xor
    } else if is(&a[1], "not") {
        BitOp::Not
    } else {
        return Err(SYNTAX.into());
    };
    if op == BitOp::Not && a.len() != 4 {
        return Err("ERR BITOP NOT must be called with a single source key.".into());
    }
    let sources: Vec<&[u8]> = a[3..].iter().map(Vec::as_slice).collect();
    let len = bitmap::bit_op(&sh.keyspace(c.db), op, &a[2], &sources)?;
    out.int(len as i64);
    Ok(())
}

const BAD_TYPE: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";
const BAD_OFFSET: &str = "ERR bit offset is not an integer or out of range";

/// A BITFIELD type argument: `i1`..`i64` or `u1`..`u63`.
fn field_type(arg: &[u8]) -> Result<FieldType, CmdError> {
    let signed = match arg.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return Err(BAD_TYPE.into()),
    };
    parse_int_strict(&arg[1..])
        .and_then(|n| u32::try_from(n).ok())
        .and_then(|bits| FieldType::new(signed, bits))
        .ok_or_else(|| BAD_TYPE.into())
}

/// A BITFIELD offset argument: a bit offset, or `#n` for the n-th field of `bits` bits; at
/// most the last bit of a `max_len`-byte string.
fn field_offset(arg: &[u8], bits: u32, max_len: u64) -> Result<u64, CmdError> {
    let (digits, times) = match arg.strip_prefix(b"#") {
        Some(rest) => (rest, i64::from(bits)),
        None => (arg, 1),
    };
    parse_int_strict(digits)
        .and_then(|n| n.checked_mul(times))
        .filter(|&n| n >= 0 && (n as u64 >> 3) < max_len)
        .map(|n| n as u64)
        .ok_or_else(|| BAD_OFFSET.into())
}

/// Parses BITFIELD's operations (`a[2..]`) as Redis does, in order, failing at the first
/// bad one.
fn field_ops(a: &[Vec<u8>], max_len: u64) -> Result<Vec<FieldOp>, CmdError> {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut j = 2;
    while j < a.len() {
        let rest = a.len() - j - 1;
        let sub = &a[j];
        let (takes_value, is_set) = if is(sub, "get") && rest >= 2 {
            (false, false)
        } else if is(sub, "set") && rest >= 3 {
            (true, true)
        } else if is(sub, "incrby") && rest >= 3 {
            (true, false)
        } else if is(sub, "overflow") && rest >= 1 {
            let name = &a[j + 1];
            overflow = if is(name, "wrap") {
                Overflow::Wrap
            } else if is(name, "sat") {
                Overflow::Sat
            } else if is(name, "fail") {
                Overflow::Fail
            } else {
                return Err("ERR Invalid OVERFLOW type specified".into());
            };
            j += 2;
            continue;
        } else {
            return Err(SYNTAX.into());
        };
        let ty = field_type(&a[j + 1])?;
        let offset = field_offset(&a[j + 2], ty.bits, max_len)?;
        let action = if !takes_value {
            FieldAction::Get
        } else if is_set {
            FieldAction::Set(int_arg(&a[j + 3])?)
        } else {
            FieldAction::IncrBy(int_arg(&a[j + 3])?)
        };
        ops.push(FieldOp { ty, offset, action, overflow });
        j += if takes_value { 4 } else { 3 };
    }
    Ok(ops)
}

fn bitfield_generic(
    sh: &Shared,
    db: usize,
    a: &[Vec<u8>],
    out: &mut Out,
    read_only: bool,
) -> CmdResult {
    let ops = field_ops(a, sh.config.proto_max_bulk_len as u64)?;
    if read_only && ops.iter().any(|op| op.action != FieldAction::Get) {
        return Err("ERR BITFIELD_RO only supports the GET subcommand".into());
    }
    let replies = bitmap::bit_field(&sh.keyspace(db), &a[1], &ops)?;
    out.array(replies.len());
    for r in replies {
        match r {
            Some(n) => out.int(n),
            None => out.null(),
        }
    }
    Ok(())
}

/// BITFIELD key [GET type offset] [SET type offset value] [INCRBY type offset increment]
/// [OVERFLOW WRAP|SAT|FAIL] ...
pub fn bitfield(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    bitfield_generic(sh, c.db, a, out, false)
}

/// BITFIELD_RO key [GET type offset] ...
pub fn bitfield_ro(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    bitfield_generic(sh, c.db, a, out, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_types_and_offsets_parse_with_redis_errors() {
        assert_eq!(field_type(b"i64").unwrap(), FieldType::new(true, 64).unwrap());
        assert_eq!(field_type(b"u63").unwrap(), FieldType::new(false, 63).unwrap());
        for bad in [&b"u64"[..], b"i0", b"I8", b"i", b"", b"i-1", b"u08", b"i99999999999999999999"]
        {
            assert_eq!(field_type(bad).unwrap_err().reply_text(), BAD_TYPE);
        }
        assert_eq!(field_offset(b"#3", 8, 1 << 29).unwrap(), 24);
        assert_eq!(field_offset(b"100", 8, 1 << 29).unwrap(), 100);
        for bad in [&b"-1"[..], b"#-1", b"#", b"x", b"4294967296", b"#9223372036854775807"] {
            assert_eq!(field_offset(bad, 8, 1 << 29).unwrap_err().reply_text(), BAD_OFFSET);
        }
    }
}
