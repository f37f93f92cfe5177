//! A HyperLogLog value: the bytes of the string that holds it (the layout is drawn in
//! `super`'s module doc), checked, read and changed.

use super::estimate::{self, Histogram, REGISTERS};
use super::sparse;

/// Bytes before the registers.
pub const HEADER: usize = 16;
/// A dense value's length: the header and 16,384 registers of 6 bits.
pub const DENSE_LEN: usize = HEADER + REGISTERS * 6 / 8;
/// The encoding byte of each encoding.
const DENSE: u8 = 0;
const SPARSE: u8 = 1;
/// The bit of the cached count's last byte that marks it stale.
const STALE: u8 = 0x80;

/// Why a value is not a HyperLogLog one can use.
#[derive(Debug, PartialEq, Eq)]
pub enum HllError {
    /// The string is not a HyperLogLog: too short, no magic, an unknown encoding, a dense
    /// value of the wrong length (Redis's WRONGTYPE "not a valid HyperLogLog string value").
    NotHll,
    /// A sparse value whose opcodes do not describe the registers (Redis's INVALIDOBJ).
    Corrupt(sparse::BadOpcodes),
}

/// The value's encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Dense,
    Sparse,
}

/// One value per register.
pub type Registers = Vec<u8>;

/// A HyperLogLog value whose header was checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hll {
    bytes: Vec<u8>,
}

impl Hll {
    /// An empty one, sparse, its cached count 0 and valid (what PFADD creates).
    pub fn empty() -> Hll {
        let mut bytes = b"HYLL".to_vec();
        bytes.push(SPARSE);
        bytes.resize(HEADER, 0);
        sparse::encode(&[(REGISTERS, 0)], &mut bytes);
        Hll { bytes }
    }

    /// Checks the header of `bytes` (a string's value), as Redis does before every use.
    pub fn parse(bytes: Vec<u8>) -> Result<Hll, HllError> {
        if bytes.len() < HEADER || &bytes[..4] != b"HYLL" {
            return Err(HllError::NotHll);
        }
        match bytes[4] {
            DENSE if bytes.len() != DENSE_LEN => Err(HllError::NotHll),
            DENSE | SPARSE => Ok(Hll { bytes }),
            _ => Err(HllError::NotHll),
        }
    }

    /// The bytes, to store.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    pub fn encoding(&self) -> Encoding {
        if self.bytes[4] == DENSE {
            Encoding::Dense
        } else {
            Encoding::Sparse
        }
    }

    /// The cached count, when it is not stale.
    pub fn cached_count(&self) -> Option<u64> {
        let card = u64::from_le_bytes(self.bytes[8..16].try_into().unwrap_or([0xff; 8]));
        (self.bytes[15] & STALE == 0).then_some(card)
    }

    /// Records `count` as the cached count (valid).
    pub fn set_cached_count(&mut self, count: u64) {
        self.bytes[8..16].copy_from_slice(&count.to_le_bytes());
    }

    /// Marks the cached count stale (after the registers changed).
    pub fn mark_stale(&mut self) {
        self.bytes[15] |= STALE;
    }

    /// Raises `max[i]` to register i where it is higher.
    pub fn merge_into(&self, max: &mut [u8]) -> Result<(), HllError> {
        match self.encoding() {
            Encoding::Dense => {
                for (i, m) in max.iter_mut().enumerate().take(REGISTERS) {
                    *m = (*m).max(dense_get(&self.bytes[HEADER..], i));
                }
                Ok(())
            }
            Encoding::Sparse => sparse::runs(&self.bytes[HEADER..], |first, len, value| {
                for m in &mut max[first..first + len] {
                    *m = (*m).max(value);
                }
            })
            .map_err(HllError::Corrupt),
        }
    }

    /// One value per register.
    pub fn registers(&self) -> Result<Registers, HllError> {
        let mut regs = vec![0u8; REGISTERS];
        self.merge_into(&mut regs)?;
        Ok(regs)
    }

    /// The estimated cardinality of the registers (not the cache).
    pub fn count(&self) -> Result<u64, HllError> {
        let mut histogram: Histogram = [0; 64];
        match self.encoding() {
            Encoding::Dense => {
                for i in 0..REGISTERS {
                    histogram[usize::from(dense_get(&self.bytes[HEADER..], i))] += 1;
                }
            }
            Encoding::Sparse => sparse::runs(&self.bytes[HEADER..], |_, len, value| {
                histogram[usize::from(value)] += len as u32;
            })
            .map_err(HllError::Corrupt)?,
        }
        Ok(estimate::cardinality(&histogram))
    }

    /// Adds `elements`: the registers raised, in order, each with its new value (none: no
    /// change; else the cached count is stale). A sparse value stays sparse while every
    /// register fits a `VAL` opcode and the whole value fits `sparse_max` bytes, and turns
    /// dense otherwise, as Redis promotes it: at the end, or as soon as a register passes 32
    /// or the runs are surely too many (twice `sparse_max`: two neighbours of one value are
    /// written as one run), the elements left then added to the dense registers.
    pub fn add(
        &mut self,
        elements: &[Vec<u8>],
        sparse_max: usize,
    ) -> Result<Vec<(usize, u8)>, HllError> {
        let mut raised = Vec::new();
        let mut rest = elements;
        if self.encoding() == Encoding::Sparse {
            let mut runs = sparse::decode(&self.bytes[HEADER..]).map_err(HllError::Corrupt)?;
            let mut promote = false;
            while let Some((e, tail)) = rest.split_first() {
                rest = tail;
                let (i, value) = estimate::place(e);
                if sparse::raise(&mut runs, i, value) {
                    raised.push((i, value));
                    promote = value > sparse::VAL_MAX_VALUE || runs.len() > 2 * sparse_max;
                    if promote {
                        break;
                    }
                }
            }
            if !raised.is_empty() {
                self.store_runs(&runs, promote, sparse_max);
            }
        }
        if self.encoding() == Encoding::Dense {
            for e in rest {
                let (i, value) = estimate::place(e);
                if dense_raise(&mut self.bytes[HEADER..], i, value) {
                    raised.push((i, value));
                }
            }
        }
        if !raised.is_empty() {
            self.mark_stale();
        }
        Ok(raised)
    }

    /// The dense registers, to change in place (`delta`); a sparse value's opcodes.
    pub fn registers_mut(&mut self) -> &mut [u8] {
        &mut self.bytes[HEADER..]
    }

    /// Replaces the registers with `regs` and marks the cached count stale: dense if
    /// `dense`, else sparse where it fits (as [`Hll::add`] decides).
    pub fn set_registers(&mut self, regs: &[u8], dense: bool, sparse_max: usize) {
        self.store(regs, dense, sparse_max);
        self.mark_stale();
    }

    /// Turns a sparse value dense (PFDEBUG TODENSE); whether it was sparse.
    pub fn make_dense(&mut self, sparse_max: usize) -> Result<bool, HllError> {
        if self.encoding() == Encoding::Dense {
            return Ok(false);
        }
        let runs = sparse::decode(&self.bytes[HEADER..]).map_err(HllError::Corrupt)?;
        self.store_runs(&runs, true, sparse_max);
        Ok(true)
    }

    /// Writes `regs` after the header (kept, but for its encoding byte).
    fn store(&mut self, regs: &[u8], dense: bool, sparse_max: usize) {
        self.store_runs(&sparse::runs_of(regs), dense, sparse_max);
    }

    /// Writes the registers of `runs` after the header (kept, but for its encoding byte):
    /// dense if `dense`, else sparse where it fits (as [`Hll::add`] decides).
    fn store_runs(&mut self, runs: &[(usize, u8)], dense: bool, sparse_max: usize) {
        self.bytes.truncate(HEADER);
        if !dense && sparse::encode(runs, &mut self.bytes) && self.bytes.len() <= sparse_max {
            self.bytes[4] = SPARSE;
            return;
        }
        self.bytes.truncate(HEADER);
        self.bytes.resize(DENSE_LEN, 0);
        let mut i = 0;
        for &(len, value) in runs {
            if value > 0 {
                for r in i..i + len {
                    dense_set(&mut self.bytes[HEADER..], r, value);
                }
            }
            i += len;
        }
        self.bytes[4] = DENSE;
    }

    /// The sparse opcodes (empty for a dense value).
    pub fn sparse_opcodes(&self) -> &[u8] {
        match self.encoding() {
            Encoding::Sparse => &self.bytes[HEADER..],
            Encoding::Dense => &[],
        }
    }
}

/// Register `i` of dense registers `d`: 6 bits from bit 6i on, bytes read low bit first.
pub fn dense_get(d: &[u8], i: usize) -> u8 {
    let (byte, shift) = (i * 6 / 8, i * 6 % 8);
    let low = u16::from(d[byte]);
    let high = u16::from(d.get(byte + 1).copied().unwrap_or(0));
    ((low | high << 8) >> shift) as u8 & 0x3f
}

/// Raises register `i` of dense registers `d` to `value` (at most 63) if it is lower;
/// whether it did.
pub fn dense_raise(d: &mut [u8], i: usize, value: u8) -> bool {
    if dense_get(d, i) >= value {
        return false;
    }
    dense_set(d, i, value);
    true
}

/// Sets register `i` of dense registers `d` to `value` (at most 63).
pub fn dense_set(d: &mut [u8], i: usize, value: u8) {
    let (byte, shift) = (i * 6 / 8, i * 6 % 8);
    let mask = 0x3fu16 << shift;
    let v = u16::from(value & 0x3f) << shift;
    d[byte] = (d[byte] & !(mask as u8)) | v as u8;
    if shift > 2 {
        let hi = (mask >> 8) as u8;
        d[byte + 1] = (d[byte + 1] & !hi) | (v >> 8) as u8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_registers_keep_their_neighbours() {
        let mut d = vec![0u8; REGISTERS * 6 / 8];
        let mut want = vec![0u8; REGISTERS];
        let mut x = 0x9e37_79b9_u32;
        for round in 0..3 {
            for (i, w) in want.iter_mut().enumerate() {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                *w = ((x >> 24) as u8 ^ i as u8 ^ round) & 0x3f;
                dense_set(&mut d, i, *w);
            }
            for (i, &w) in want.iter().enumerate() {
                assert_eq!(dense_get(&d, i), w, "register {i}");
            }
        }
        // The layout: register 0 in byte 0's low 6 bits, register 1 across bytes 0 and 1.
        let mut d = vec![0u8; 3];
        dense_set(&mut d, 1, 0x3f);
        assert_eq!(d, [0xc0, 0x0f, 0x00]);
        dense_set(&mut d, 2, 0x21);
        assert_eq!(d, [0xc0, 0x1f, 0x02]);
    }

    #[test]
    fn headers_are_checked_as_redis_does() {
        assert_eq!(Hll::parse(b"HYLL".to_vec()), Err(HllError::NotHll));
        let good = Hll::empty().into_bytes();
        assert_eq!(good.len(), HEADER + 2);
        assert!(Hll::parse(good.clone()).is_ok());
        let mut magic = good.clone();
        magic[0] = b'0';
        assert_eq!(Hll::parse(magic), Err(HllError::NotHll));
        let mut encoding = good.clone();
        encoding[4] = 2;
        assert_eq!(Hll::parse(encoding), Err(HllError::NotHll));
        let mut short_dense = good;
        short_dense[4] = DENSE;
        assert_eq!(Hll::parse(short_dense), Err(HllError::NotHll));
    }

    #[test]
    fn sparse_and_dense_count_alike_and_promotion_keeps_the_registers() {
        let mut sparse = Hll::empty();
        let mut dense = Hll::empty();
        assert!(dense.make_dense(3000).unwrap());
        assert_eq!(dense.encoding(), Encoding::Dense);
        for n in 0..2_000u32 {
            let e = vec![format!("e{n}").into_bytes()];
            assert_eq!(sparse.add(&e, 3000).unwrap(), dense.add(&e, 3000).unwrap(), "{n}");
            if n % 97 == 0 {
                assert_eq!(sparse.count().unwrap(), dense.count().unwrap(), "after {n}");
                assert_eq!(sparse.registers().unwrap(), dense.registers().unwrap());
            }
        }
        assert_eq!(sparse.encoding(), Encoding::Dense, "2,000 elements pass 3,000 bytes");
        let count = dense.count().unwrap();
        assert!((1_900..=2_100).contains(&count), "{count}");
    }

    #[test]
    fn a_large_add_turns_dense_on_the_way_and_matches_single_adds() {
        let elements: Vec<Vec<u8>> = (0..20_000u32).map(|n| n.to_le_bytes().to_vec()).collect();
        let (mut once, mut each) = (Hll::empty(), Hll::empty());
        let raised = once.add(&elements, 3000).unwrap();
        for e in &elements {
            each.add(std::slice::from_ref(e), 3000).unwrap();
        }
        assert_eq!(once.encoding(), Encoding::Dense);
        assert_eq!(once.registers().unwrap(), each.registers().unwrap());
        // Every raise reported, in order: replayed on an empty dense value, the same.
        let mut replay = Hll::empty();
        replay.make_dense(3000).unwrap();
        for (i, v) in raised {
            dense_raise(replay.registers_mut(), i, v);
        }
        assert_eq!(replay.registers().unwrap(), once.registers().unwrap());
    }

    #[test]
    fn the_cached_count_is_marked_stale_by_a_change_only() {
        let mut h = Hll::empty();
        assert_eq!(h.cached_count(), Some(0));
        assert_eq!(h.add(&[b"a".to_vec()], 3000).unwrap().len(), 1);
        assert_eq!(h.cached_count(), None);
        h.set_cached_count(1);
        assert_eq!(h.cached_count(), Some(1));
        assert!(h.add(&[b"a".to_vec()], 3000).unwrap().is_empty());
        assert_eq!(h.cached_count(), Some(1));
    }
}
