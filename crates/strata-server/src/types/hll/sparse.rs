//! The sparse encoding of a HyperLogLog's registers: runs of equal registers as opcodes
//! (drawn in `super`'s module doc and `docs/format/hll.md`).
//!
//! Reading ([`runs`]) accepts any sequence of opcodes that covers exactly the 16,384
//! registers, as redis-server writes them (its in-place edits may leave two runs a longer
//! one could join). Writing ([`encode`]) gives the shortest form: maximal runs, `ZERO` for
//! up to 64 zero registers, `XZERO` for more, `VAL` runs of at most 4.

use super::estimate::REGISTERS;

/// `00xxxxxx`: 1 to 64 zero registers.
const ZERO_MAX: usize = 64;
/// `01xxxxxx yyyyyyyy`: 1 to 16,384 zero registers (14 bits, big-endian).
const XZERO: u8 = 0x40;
const XZERO_MAX: usize = 16_384;
/// `1vvvvvxx`: 1 to 4 registers of value 1 to 32.
const VAL: u8 = 0x80;
/// The largest register value a `VAL` opcode holds.
pub const VAL_MAX_VALUE: u8 = 32;
const VAL_MAX_LEN: usize = 4;

/// Where opcodes stop making sense: the byte offset (from the first opcode) and why.
#[derive(Debug, PartialEq, Eq)]
pub struct BadOpcodes {
    pub offset: usize,
    pub why: &'static str,
}

/// Calls `run(first, len, value)` for each run the opcodes `ops` describe, in order; the
/// runs cover registers 0 to 16,383 exactly once, or the opcodes are refused.
pub fn runs(ops: &[u8], mut run: impl FnMut(usize, usize, u8)) -> Result<(), BadOpcodes> {
    let (mut at, mut next) = (0, 0);
    while at < ops.len() {
        let op = ops[at];
        let (len, value, width) = if op & VAL != 0 {
            (usize::from(op & 0x3) + 1, ((op >> 2) & 0x1f) + 1, 1)
        } else if op & XZERO != 0 {
            let Some(&low) = ops.get(at + 1) else {
                return Err(BadOpcodes { offset: at, why: "an XZERO opcode cut short" });
            };
            ((usize::from(op & 0x3f) << 8 | usize::from(low)) + 1, 0, 2)
        } else {
            (usize::from(op & 0x3f) + 1, 0, 1)
        };
        if next + len > REGISTERS {
            return Err(BadOpcodes { offset: at, why: "runs past the last register" });
        }
        run(next, len, value);
        next += len;
        at += width;
    }
    if next != REGISTERS {
        return Err(BadOpcodes { offset: at, why: "ends before the last register" });
    }
    Ok(())
}

/// Appends the shortest opcodes for `regs` (one value per register) to `out`; false, with
/// `out` as it was, when a register is above [`VAL_MAX_VALUE`] (only dense holds it).
pub fn encode(regs: &[u8], out: &mut Vec<u8>) -> bool {
    let start = out.len();
    let mut i = 0;
    while i < regs.len() {
        let value = regs[i];
        if value > VAL_MAX_VALUE {
            out.truncate(start);
            return false;
        }
        let mut len = regs[i..].iter().take_while(|&&r| r == value).count();
        i += len;
        if value == 0 {
            while len > 0 {
                let n = len.min(XZERO_MAX);
                if n > ZERO_MAX {
                    out.push(XZERO | ((n - 1) >> 8) as u8);
                    out.push((n - 1) as u8);
                } else {
                    out.push((n - 1) as u8);
                }
                len -= n;
            }
        } else {
            while len > 0 {
                let n = len.min(VAL_MAX_LEN);
                out.push(VAL | (value - 1) << 2 | (n - 1) as u8);
                len -= n;
            }
        }
    }
    true
}

/// The opcodes as PFDEBUG DECODE shows them: `z:LEN`, `Z:LEN`, `v:VALUE,LEN`, by spaces.
pub fn describe(ops: &[u8]) -> String {
    let mut parts = Vec::new();
    let mut at = 0;
    while at < ops.len() {
        let op = ops[at];
        if op & VAL != 0 {
            parts.push(format!("v:{},{}", ((op >> 2) & 0x1f) + 1, (op & 0x3) + 1));
            at += 1;
        } else if op & XZERO != 0 {
            let low = ops.get(at + 1).copied().unwrap_or(0);
            parts.push(format!("Z:{}", (usize::from(op & 0x3f) << 8 | usize::from(low)) + 1));
            at += 2;
        } else {
            parts.push(format!("z:{}", (op & 0x3f) + 1));
            at += 1;
        }
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(ops: &[u8]) -> Result<Vec<u8>, BadOpcodes> {
        let mut regs = vec![0u8; REGISTERS];
        runs(ops, |first, len, value| regs[first..first + len].fill(value))?;
        Ok(regs)
    }

    #[test]
    fn an_empty_set_is_one_xzero() {
        let mut out = Vec::new();
        assert!(encode(&[0; REGISTERS], &mut out));
        assert_eq!(out, [0x7f, 0xff]);
        assert_eq!(describe(&out), "Z:16384");
        assert_eq!(decode(&out).unwrap(), vec![0; REGISTERS]);
    }

    #[test]
    fn runs_split_at_each_opcode_limit() {
        let mut regs = vec![0u8; REGISTERS];
        regs[64] = 3; // z:64 before it
        regs[65..71].fill(32); // v:32,4 v:32,2
        regs[200] = 1; // z:129 (XZERO) before it
        let mut out = Vec::new();
        assert!(encode(&regs, &mut out));
        assert_eq!(describe(&out), "z:64 v:3,1 v:32,4 v:32,2 Z:129 v:1,1 Z:16183");
        assert_eq!(decode(&out).unwrap(), regs);
        regs[5] = 33;
        let before = out.clone();
        assert!(!encode(&regs, &mut out), "33 needs the dense encoding");
        assert_eq!(out, before);
    }

    #[test]
    fn redis_style_unjoined_runs_read_the_same() {
        // v:2,1 v:2,1 where a shorter form would join them; z:1 z:1 likewise.
        let mut ops = vec![0x80 | 1 << 2, 0x80 | 1 << 2, 0x00, 0x00];
        let rest = REGISTERS - 4;
        ops.extend_from_slice(&[0x40 | ((rest - 1) >> 8) as u8, (rest - 1) as u8]);
        let regs = decode(&ops).unwrap();
        assert_eq!(&regs[..4], &[2, 2, 0, 0]);
    }

    #[test]
    fn damaged_opcodes_are_refused_with_their_offset() {
        assert_eq!(
            decode(&[0x7f, 0xff, 0x00]).unwrap_err(),
            BadOpcodes { offset: 2, why: "runs past the last register" }
        );
        assert_eq!(
            decode(&[0x7f]).unwrap_err(),
            BadOpcodes { offset: 0, why: "an XZERO opcode cut short" }
        );
        assert_eq!(
            decode(&[0x00]).unwrap_err(),
            BadOpcodes { offset: 1, why: "ends before the last register" }
        );
        assert!(decode(&[]).is_err());
    }
}
