//! Values (`docs/db_bench.md` §4): slices of a pre-generated buffer of 100-byte pieces, each
//! piece a run of `int(100 * compression_ratio)` random bytes repeated, from a Park–Miller
//! generator seeded with 301 — the same bytes in every thread and every run.

use crate::random::{Lehmer, Mt64};

/// Size of one compressible piece.
const PIECE: usize = 100;
/// Minimum size of the value buffer.
const MIN_BUFFER: usize = 1 << 20;

/// Value length distribution (`--value_size_distribution_type`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ValueSize {
    Fixed(usize),
    Uniform { min: usize, max: usize },
    Normal { min: usize, max: usize },
}

impl ValueSize {
    pub fn max_len(&self) -> usize {
        match *self {
            ValueSize::Fixed(n) => n,
            ValueSize::Uniform { max, .. } | ValueSize::Normal { max, .. } => max,
        }
    }

    /// Average length (for the header).
    pub fn average(&self) -> usize {
        match *self {
            ValueSize::Fixed(n) => n,
            ValueSize::Uniform { min, max } | ValueSize::Normal { min, max } => min.midpoint(max),
        }
    }
}

/// Appends one compressible piece of `len` bytes: `max(1, int(len * ratio))` random bytes in
/// `0..=126`, repeated.
pub fn compressible_piece(rnd: &mut Lehmer, ratio: f64, len: usize, out: &mut Vec<u8>) {
    let raw = ((len as f64 * ratio) as usize).max(1);
    let start = out.len();
    for _ in 0..raw {
        out.push(rnd.uniform(127) as u8);
    }
    while out.len() - start < len {
        let n = (len - (out.len() - start)).min(raw);
        out.extend_from_within(start..start + n);
    }
    out.truncate(start + len);
}

/// The per-thread value source.
#[derive(Clone, Debug)]
pub struct ValueGenerator {
    data: Vec<u8>,
    pos: usize,
    rnd: Lehmer,
    size: ValueSize,
    same_value_percentage: u32,
    size_rng: Mt64,
}

impl ValueGenerator {
    pub fn new(compression_ratio: f64, size: ValueSize, same_value_percentage: u32) -> Self {
        let mut rnd = Lehmer::new(301);
        let target = MIN_BUFFER.max(size.max_len());
        let mut data = Vec::with_capacity(target + PIECE);
        while data.len() < target {
            compressible_piece(&mut rnd, compression_ratio, PIECE, &mut data);
        }
        ValueGenerator { data, pos: 0, rnd, size, same_value_percentage, size_rng: Mt64::new(301) }
    }

    /// The whole pre-generated buffer.
    pub fn buffer(&self) -> &[u8] {
        &self.data
    }

    /// The next value of the configured length distribution.
    #[inline]
    pub fn generate(&mut self) -> &[u8] {
        let len = self.next_len();
        self.generate_len(len)
    }

    fn next_len(&mut self) -> usize {
        match self.size {
            ValueSize::Fixed(n) => n,
            ValueSize::Uniform { min, max } => {
                min + (self.size_rng.next_u64() % (max - min + 1) as u64) as usize
            }
            ValueSize::Normal { min, max } => {
                // Box–Muller, mean (min+max)/2, standard deviation (max-min)/6, clamped.
                let u1 = (self.size_rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                let u2 = (self.size_rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                let z = (-2.0 * (1.0 - u1).ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                let mean = (min + max) as f64 / 2.0;
                let sd = (max - min) as f64 / 6.0;
                ((mean + z * sd).round() as i64).clamp(min as i64, max as i64) as usize
            }
        }
    }

    /// The next `len` bytes of the buffer (wrapping to its start when they do not fit).
    #[inline]
    pub fn generate_len(&mut self, len: usize) -> &[u8] {
        let len = len.min(self.data.len());
        if self.same_value_percentage > 0 && self.rnd.percent_true(self.same_value_percentage) {
            return &self.data[..len];
        }
        if self.pos + len > self.data.len() {
            self.pos = 0;
        }
        self.pos += len;
        &self.data[self.pos - len..self.pos]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_layout() {
        let g = ValueGenerator::new(0.5, ValueSize::Fixed(100), 0);
        let b = g.buffer();
        assert_eq!(b.len(), 1_048_600);
        for piece in b.chunks(100).take(50) {
            assert_eq!(piece[..50], piece[50..]);
            assert!(piece.iter().all(|&c| c <= 126));
        }
        // First bytes: Lehmer(301) draws modulo 127.
        let mut r = Lehmer::new(301);
        let first: Vec<u8> = (0..50).map(|_| r.uniform(127) as u8).collect();
        assert_eq!(&b[..50], &first[..]);
    }

    #[test]
    fn values_are_consecutive_slices() {
        let mut g = ValueGenerator::new(0.5, ValueSize::Fixed(100), 0);
        let copy = g.buffer().to_vec();
        assert_eq!(g.generate(), &copy[..100]);
        assert_eq!(g.generate(), &copy[100..200]);
        let mut g = ValueGenerator::new(0.5, ValueSize::Fixed(100_000), 0);
        for _ in 0..10 {
            g.generate();
        }
        // 11th value of 100000 bytes does not fit in 1048600 bytes after 10: wraps.
        let copy = g.buffer().to_vec();
        assert_eq!(g.generate(), &copy[..100_000]);
    }

    #[test]
    fn ratio_one_and_tiny() {
        let mut out = Vec::new();
        compressible_piece(&mut Lehmer::new(301), 0.001, 10, &mut out);
        assert!(out.iter().all(|&c| c == out[0]));
        let mut g = ValueGenerator::new(1.0, ValueSize::Uniform { min: 10, max: 20 }, 0);
        for _ in 0..100 {
            let n = g.generate().len();
            assert!((10..=20).contains(&n));
        }
    }
}
