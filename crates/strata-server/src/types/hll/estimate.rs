//! Where an element lands in a HyperLogLog, and the cardinality its registers estimate.
//!
//! Both must be Redis's to the bit: an HLL written by redis-server (RESTORE, replication of
//! its bytes) or by Strata must count the same on either, and PFCOUNT must answer what
//! redis-server answers for the same elements.
//!
//! - The hash is MurmurHash64A (Austin Appleby's 64-bit MurmurHash2) with seed `0xadc83b19`,
//!   its 8-byte blocks read little-endian (Redis's endian-neutral variant).
//! - Its low [`P`] bits pick the register; the register value is the position of the lowest
//!   set bit of the remaining 50 bits, counted from 1, with bit 50 forced on (so at most 51).
//! - The estimate is Otmar Ertl's improved raw estimator ("New cardinality estimation
//!   algorithms for HyperLogLog sketches", arXiv:1702.01284, section 4), computed from the
//!   histogram of register values in `f64` and rounded half away from zero.

/// Bits of the hash that pick the register.
pub const P: u32 = 14;
/// Registers: 16,384.
pub const REGISTERS: usize = 1 << P;
/// Bits of the hash left after the register index.
const Q: usize = 64 - P as usize;

/// MurmurHash64A of `data` with `seed`.
pub fn murmur64a(data: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (data.len() as u64).wrapping_mul(M);
    let mut blocks = data.chunks_exact(8);
    for b in &mut blocks {
        let mut k = u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        for (i, &byte) in tail.iter().enumerate() {
            h ^= u64::from(byte) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register `element` updates and the value it offers it (1 to 51).
pub fn place(element: &[u8]) -> (usize, u8) {
    let h = murmur64a(element, 0xadc8_3b19);
    let index = (h as usize) & (REGISTERS - 1);
    let rest = (h >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

/// How many registers hold each value: `histogram[v]` for v in 0..64 (values above 51 come
/// only from damaged dense bytes, and count for nothing, as in Redis).
pub type Histogram = [u32; 64];

/// The cardinality the registers of `histogram` estimate.
pub fn cardinality(histogram: &Histogram) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - f64::from(histogram[Q + 1])) / m);
    for &count in histogram[1..=Q].iter().rev() {
        z += f64::from(count);
        z *= 0.5;
    }
    z += m * sigma(f64::from(histogram[0]) / m);
    // 1 / (2 ln 2): the estimator's constant for an unbounded number of registers.
    const ALPHA_INF: f64 = 0.721_347_520_444_481_7;
    (ALPHA_INF * m * m / z).round() as u64
}

/// The cardinality registers holding one value each estimate (PFCOUNT's union).
pub fn count_registers(regs: &[u8]) -> u64 {
    let mut histogram: Histogram = [0; 64];
    for &r in regs {
        histogram[usize::from(r & 0x3f)] += 1;
    }
    cardinality(&histogram)
}

/// Ertl's sigma: x + sum over k >= 1 of x^(2^k) * 2^(k-1); infinite at 1. The sum runs
/// until a term no longer changes it: exact comparisons, as Redis makes them, so the estimate
/// is redis-server's to the last bit.
#[allow(clippy::float_cmp)]
fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let (mut y, mut z) = (1.0, x);
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if z == before {
            return z;
        }
    }
}

/// Ertl's tau: (1 - x - sum over k >= 1 of (1 - x^(2^-k))^2 * 2^-k) / 3; 0 at 0 and 1.
/// Summed as [`sigma`] is.
#[allow(clippy::float_cmp)]
fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let (mut y, mut z) = (1.0, 1.0 - x);
    loop {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        z -= (1.0 - x) * (1.0 - x) * y;
        if z == before {
            return z / 3.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur_matches_the_reference_with_redis_seed() {
        // The reference C function's values (every tail length path: 0, 1, 5, 8, 15, 7).
        let cases: [(&[u8], u64); 6] = [
            (b"", 0xd8df_ea65_85bc_9732),
            (b"a", 0x53d2_470a_9b43_b1a7),
            (b"hello", 0x0f65_6f01_eecf_e400),
            (b"abcdefgh", 0xf3a6_5df5_5991_4567),
            (b"abcdefghijklmno", 0x1035_0863_b35a_3059),
            (b"foo-123", 0xeec3_7d5e_6690_c10f),
        ];
        for (data, want) in cases {
            assert_eq!(murmur64a(data, 0xadc8_3b19), want, "{data:?}");
        }
    }

    #[test]
    fn an_empty_histogram_counts_zero_and_one_register_counts_one() {
        let mut h: Histogram = [0; 64];
        h[0] = REGISTERS as u32;
        assert_eq!(cardinality(&h), 0);
        h[0] -= 1;
        h[1] = 1;
        assert_eq!(cardinality(&h), 1);
    }

    #[test]
    fn place_offers_values_from_one_to_fifty_one() {
        for i in 0..10_000u32 {
            let (index, value) = place(&i.to_le_bytes());
            assert!(index < REGISTERS);
            assert!((1..=51).contains(&value), "{value}");
        }
    }
}
