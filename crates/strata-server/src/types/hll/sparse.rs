//! The sparse encoding of a HyperLogLog's registers: runs of equal registers as opcodes
//! (drawn in `super`'s module doc and `docs/format/hll.md`).
//!
//! Reading ([`runs`], [`decode`]) accepts any sequence of opcodes that covers exactly the
//! 16,384 registers, as redis-server writes them (its in-place edits may leave two runs a
//! longer one could join). A change works on the runs ([`raise`] splits the run holding the
//! register), not on 16,384 registers. Writing ([`encode`]) gives the shortest form: maximal
//! runs, `ZERO` for up to 64 zero registers, `XZERO` for more, `VAL` runs of at most 4.

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

/// Runs of equal registers, in register order: (how many, value). They cover all 16,384
/// registers; neighbours may hold the same value (a raise splits a run, [`encode`] joins).
pub type Runs = Vec<(usize, u8)>;

/// The runs the opcodes `ops` describe.
pub fn decode(ops: &[u8]) -> Result<Runs, BadOpcodes> {
    let mut out = Runs::new();
    runs(ops, |_, len, value| out.push((len, value)))?;
    Ok(out)
}

/// The runs of `regs` (one value per register).
pub fn runs_of(regs: &[u8]) -> Runs {
    let mut out = Runs::new();
    for &r in regs {
        match out.last_mut() {
            Some((len, value)) if *value == r => *len += 1,
            _ => out.push((1, r)),
        }
    }
    out
}

/// Raises register `index` of `runs` to `value` if it is lower; whether it did. The run
/// holding it splits into at most three.
pub fn raise(runs: &mut Runs, index: usize, value: u8) -> bool {
    let mut first = 0;
    for k in 0..runs.len() {
        let (len, old) = runs[k];
        if index >= first + len {
            first += len;
            continue;
        }
        if old >= value {
            return false;
        }
        let (before, after) = (index - first, first + len - 1 - index);
        let mut with: Vec<(usize, u8)> = Vec::with_capacity(3);
        if before > 0 {
            with.push((before, old));
        }
        with.push((1, value));
        if after > 0 {
            with.push((after, old));
        }
        runs.splice(k..=k, with);
        return true;
    }
    false
}

/// Appends the shortest opcodes for `runs` to `out` (neighbouring runs of one value joined);
/// false, with `out` as it was, when a run's value is above [`VAL_MAX_VALUE`] (only dense
/// holds it).
pub fn encode(runs: &[(usize, u8)], out: &mut Vec<u8>) -> bool {
    let start = out.len();
    let mut k = 0;
    while k < runs.len() {
        let value = runs[k].1;
        if value > VAL_MAX_VALUE {
            out.truncate(start);
            return false;
        }
        let mut len = 0;
        while k < runs.len() && runs[k].1 == value {
            len += runs[k].0;
            k += 1;
        }
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

    fn registers(ops: &[u8]) -> Result<Vec<u8>, BadOpcodes> {
        let mut regs = vec![0u8; REGISTERS];
        runs(ops, |first, len, value| regs[first..first + len].fill(value))?;
        Ok(regs)
    }

    #[test]
    fn an_empty_set_is_one_xzero() {
        let mut out = Vec::new();
        assert!(encode(&runs_of(&[0; REGISTERS]), &mut out));
        assert_eq!(out, [0x7f, 0xff]);
        assert_eq!(describe(&out), "Z:16384");
        assert_eq!(registers(&out).unwrap(), vec![0; REGISTERS]);
    }

    #[test]
    fn runs_split_at_each_opcode_limit() {
        let mut regs = vec![0u8; REGISTERS];
        regs[64] = 3; // z:64 before it
        regs[65..71].fill(32); // v:32,4 v:32,2
        regs[200] = 1; // z:129 (XZERO) before it
        let mut out = Vec::new();
        assert!(encode(&runs_of(&regs), &mut out));
        assert_eq!(describe(&out), "z:64 v:3,1 v:32,4 v:32,2 Z:129 v:1,1 Z:16183");
        assert_eq!(registers(&out).unwrap(), regs);
        regs[5] = 33;
        let before = out.clone();
        assert!(!encode(&runs_of(&regs), &mut out), "33 needs the dense encoding");
        assert_eq!(out, before);
    }

    #[test]
    fn redis_style_unjoined_runs_read_the_same() {
        // v:2,1 v:2,1 where a shorter form would join them; z:1 z:1 likewise.
        let mut ops = vec![0x80 | 1 << 2, 0x80 | 1 << 2, 0x00, 0x00];
        let rest = REGISTERS - 4;
        ops.extend_from_slice(&[0x40 | ((rest - 1) >> 8) as u8, (rest - 1) as u8]);
        let regs = registers(&ops).unwrap();
        assert_eq!(&regs[..4], &[2, 2, 0, 0]);
        // Written again, the neighbours join.
        let mut out = Vec::new();
        assert!(encode(&decode(&ops).unwrap(), &mut out));
        assert_eq!(describe(&out), format!("v:2,2 Z:{}", REGISTERS - 2));
    }

    #[test]
    fn raises_split_runs_and_match_the_registers() {
        let mut regs = vec![0u8; REGISTERS];
        let mut runs = runs_of(&regs);
        let mut x = 12_345u64;
        for _ in 0..3000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let (i, v) = ((x >> 20) as usize % REGISTERS, (x >> 50) as u8 % 33);
            assert_eq!(raise(&mut runs, i, v), regs[i] < v, "register {i} to {v}");
            regs[i] = regs[i].max(v);
        }
        let mut out = Vec::new();
        assert!(encode(&runs, &mut out));
        assert_eq!(registers(&out).unwrap(), regs);
        let mut shortest = Vec::new();
        assert!(encode(&runs_of(&regs), &mut shortest));
        assert_eq!(out, shortest, "joined as the registers' own runs are");
    }

    #[test]
    fn damaged_opcodes_are_refused_with_their_offset() {
        assert_eq!(
            registers(&[0x7f, 0xff, 0x00]).unwrap_err(),
            BadOpcodes { offset: 2, why: "runs past the last register" }
        );
        assert_eq!(
            registers(&[0x7f]).unwrap_err(),
            BadOpcodes { offset: 0, why: "an XZERO opcode cut short" }
        );
        assert_eq!(
            registers(&[0x00]).unwrap_err(),
            BadOpcodes { offset: 1, why: "ends before the last register" }
        );
        assert!(registers(&[]).is_err());
    }
}
