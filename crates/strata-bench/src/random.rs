//! The random number generators whose exact sequences db_bench compatibility depends on.
//!
//! - [`Lehmer`]: the Park–Miller "minimal standard" generator (multiplier 16807 modulo
//!   2^31-1); seeded with 301 it produces db_bench's value bytes.
//! - [`Mt64`]: the 64-bit Mersenne Twister (MT19937-64) as standardised by C++ `std::mt19937_64`;
//!   each worker thread draws its keys from one.
//! - [`Mt32`]: the 32-bit Mersenne Twister (`std::mt19937`), used to shuffle unique keys.

/// Park–Miller minimal standard generator.
#[derive(Clone, Debug)]
pub struct Lehmer {
    state: u32,
}

impl Lehmer {
    const MODULUS: u32 = 0x7fff_ffff;
    const MULTIPLIER: u64 = 16807;

    pub fn new(seed: u32) -> Self {
        let mut state = seed & Self::MODULUS;
        // 0 and 2^31-1 are fixed points of the recurrence.
        if state == 0 || state == Self::MODULUS {
            state = 1;
        }
        Lehmer { state }
    }

    /// The next value, in `[1, 2^31-2]`.
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        let product = u64::from(self.state) * Self::MULTIPLIER;
        // product mod (2^31-1) without a division: 2^31 == 1 (mod 2^31-1).
        let mut s = ((product >> 31) + (product & u64::from(Self::MODULUS))) as u32;
        if s > Self::MODULUS {
            s -= Self::MODULUS;
        }
        self.state = s;
        s
    }

    /// Uniform in `[0, n)` (by modulo, as db_bench).
    #[inline]
    pub fn uniform(&mut self, n: u32) -> u32 {
        self.next_u32() % n
    }

    /// True with probability `percent`/100.
    #[inline]
    pub fn percent_true(&mut self, percent: u32) -> bool {
        self.uniform(100) < percent
    }
}

const MT64_N: usize = 312;
const MT64_M: usize = 156;

/// MT19937-64, bit-identical to C++ `std::mt19937_64`.
#[derive(Clone)]
pub struct Mt64 {
    state: Box<[u64; MT64_N]>,
    index: usize,
}

impl std::fmt::Debug for Mt64 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mt64").field("index", &self.index).finish_non_exhaustive()
    }
}

impl Mt64 {
    pub fn new(seed: u64) -> Self {
        let mut state = Box::new([0u64; MT64_N]);
        state[0] = seed;
        for i in 1..MT64_N {
            let prev = state[i - 1];
            state[i] =
                6364136223846793005u64.wrapping_mul(prev ^ (prev >> 62)).wrapping_add(i as u64);
        }
        Mt64 { state, index: MT64_N }
    }

    fn refill(&mut self) {
        twist(
            &mut self.state[..],
            MT64_M,
            0xFFFF_FFFF_8000_0000,
            0x7FFF_FFFF,
            0xB502_6F5A_A966_19E9,
        );
        self.index = 0;
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        if self.index >= MT64_N {
            self.refill();
        }
        let mut x = self.state[self.index];
        self.index += 1;
        x ^= (x >> 29) & 0x5555_5555_5555_5555;
        x ^= (x << 17) & 0x71D6_7FFF_EDA6_0000;
        x ^= (x << 37) & 0xFFF7_EEE0_0000_0000;
        x ^= x >> 43;
        x
    }
}

/// The Mersenne Twister's state transition (the same for the 32- and 64-bit generators but for
/// the word type, the middle offset `m` and the masks).
fn twist<T>(s: &mut [T], m: usize, upper: T, lower: T, matrix: T)
where
    T: Copy
        + PartialEq
        + From<u8>
        + std::ops::BitAnd<Output = T>
        + std::ops::BitOr<Output = T>
        + std::ops::BitXor<Output = T>
        + std::ops::Shr<u32, Output = T>,
{
    let n = s.len();
    for i in 0..n {
        let x = (s[i] & upper) | (s[(i + 1) % n] & lower);
        let mut y = x >> 1;
        if x & T::from(1) != T::from(0) {
            y = y ^ matrix;
        }
        s[i] = s[(i + m) % n] ^ y;
    }
}

const MT32_N: usize = 624;
const MT32_M: usize = 397;

/// MT19937, bit-identical to C++ `std::mt19937`.
#[derive(Clone)]
pub struct Mt32 {
    state: Box<[u32; MT32_N]>,
    index: usize,
}

impl Mt32 {
    pub fn new(seed: u32) -> Self {
        let mut state = Box::new([0u32; MT32_N]);
        state[0] = seed;
        for i in 1..MT32_N {
            let prev = state[i - 1];
            state[i] = 1812433253u32.wrapping_mul(prev ^ (prev >> 30)).wrapping_add(i as u32);
        }
        Mt32 { state, index: MT32_N }
    }

    fn refill(&mut self) {
        twist(&mut self.state[..], MT32_M, 0x8000_0000, 0x7FFF_FFFF, 0x9908_B0DF);
        self.index = 0;
    }

    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= MT32_N {
            self.refill();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9D2C_5680;
        y ^= (y << 15) & 0xEFC6_0000;
        y ^= y >> 18;
        y
    }

    /// Uniform in `[0, n)` without modulo bias (rejection sampling over 64-bit draws).
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        let draw = |r: &mut Self| (u64::from(r.next_u32()) << 32) | u64::from(r.next_u32());
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let v = draw(self);
            if v < zone {
                return v % n;
            }
        }
    }
}

/// `std::minstd_rand0`, libstdc++'s `std::default_random_engine`: `x = 16807 x mod (2^31 - 1)`,
/// seeded with 1 by default, drawing in `1..2^31 - 1`.
#[derive(Clone, Debug)]
pub struct MinStdRand0 {
    x: u64,
}

impl Default for MinStdRand0 {
    fn default() -> Self {
        MinStdRand0 { x: 1 }
    }
}

impl MinStdRand0 {
    const M: u64 = 2_147_483_647;

    /// Seeded as libstdc++ seeds it: `seed mod (2^31 - 1)`, 0 taken as 1.
    pub fn with_seed(seed: u32) -> Self {
        let x = u64::from(seed) % Self::M;
        MinStdRand0 { x: if x == 0 { 1 } else { x } }
    }

    /// libstdc++'s `bernoulli_distribution(p)`: one canonical draw below `p`.
    pub fn bernoulli(&mut self, p: f64) -> bool {
        self.canonical() < p
    }

    pub fn next_u32(&mut self) -> u32 {
        self.x = self.x * 16807 % Self::M;
        self.x as u32
    }

    /// libstdc++'s `generate_canonical<double, 53>` over this engine: two draws, the first
    /// the low digit, in base `2^31 - 2`.
    fn canonical(&mut self) -> f64 {
        let r = (Self::M - 1) as f64;
        let lo = f64::from(self.next_u32() - 1);
        let hi = f64::from(self.next_u32() - 1);
        let v = (lo + hi * r) / (r * r);
        if v >= 1.0 {
            1.0f64.next_down()
        } else {
            v
        }
    }
}

/// libstdc++'s `std::normal_distribution<double>` (the Marsaglia polar method, the second
/// value of each pair kept for the next call), so a run draws what db_bench draws.
#[derive(Clone, Debug)]
pub struct Normal {
    mean: f64,
    stddev: f64,
    saved: Option<f64>,
}

impl Normal {
    pub fn new(mean: f64, stddev: f64) -> Normal {
        Normal { mean, stddev, saved: None }
    }

    pub fn sample(&mut self, rng: &mut MinStdRand0) -> f64 {
        let v = match self.saved.take() {
            Some(v) => v,
            None => loop {
                let x = 2.0 * rng.canonical() - 1.0;
                let y = 2.0 * rng.canonical() - 1.0;
                let r2 = x * x + y * y;
                if r2 <= 1.0 && r2 != 0.0 {
                    let mult = (-2.0 * r2.ln() / r2).sqrt();
                    self.saved = Some(x * mult);
                    break y * mult;
                }
            },
        };
        v * self.stddev + self.mean
    }
}

/// Shuffles `v` (Fisher–Yates) with `std::mt19937(seed)`. Every element appears once; the order
/// is not bit-identical to libstdc++'s `std::shuffle`, whose index draws are an implementation
/// detail.
pub fn shuffle<T>(v: &mut [T], seed: u32) {
    let mut rng = Mt32::new(seed);
    for i in (1..v.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 10000th value of `next`.
    fn ten_thousandth<T: Default>(mut next: impl FnMut() -> T) -> T {
        let mut v = T::default();
        for _ in 0..10000 {
            v = next();
        }
        v
    }

    #[test]
    fn mt64_matches_the_cpp_standard() {
        // [rand.predef]: the 10000th output of a default-constructed mt19937_64 (seed 5489).
        let mut r = Mt64::new(5489);
        assert_eq!(ten_thousandth(|| r.next_u64()), 9981545732273789042);
    }

    #[test]
    fn mt32_matches_the_cpp_standard() {
        // [rand.predef]: the 10000th output of a default-constructed mt19937 (seed 5489).
        let mut r = Mt32::new(5489);
        assert_eq!(ten_thousandth(|| r.next_u32()), 4123659995);
    }

    #[test]
    fn minstd_rand0_and_the_normal_distribution_match_libstdcxx() {
        // [rand.predef]: the 10000th output of a default-constructed minstd_rand0.
        let mut r = MinStdRand0::default();
        assert_eq!(ten_thousandth(|| r.next_u32()), 1043618065);
        // std::normal_distribution<double>(500, 2000) over std::default_random_engine, as
        // libstdc++ (GCC 12) draws them.
        let (mut g, mut d) = (MinStdRand0::default(), Normal::new(500.0, 2000.0));
        let got: Vec<f64> = (0..6).map(|_| d.sample(&mut g)).collect();
        let want = [
            256.068_431_716_806_2,
            -1673.6360885227145,
            1868.5798875931096,
            -1650.3782990360583,
            566.538_952_840_984_7,
            1989.6711954455648,
        ];
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-9, "{got:?}");
        }
    }

    #[test]
    fn lehmer_minimal_standard() {
        // Park & Miller's check: from seed 1, the 10000th value is 1043618065.
        let mut r = Lehmer::new(1);
        assert_eq!(ten_thousandth(|| r.next_u32()), 1043618065);
        assert_eq!(Lehmer::new(301).next_u32(), 301 * 16807);
    }

    #[test]
    fn shuffle_is_a_permutation() {
        let mut v: Vec<u32> = (0..1000).collect();
        shuffle(&mut v, 42);
        let mut s = v.clone();
        s.sort_unstable();
        assert_eq!(s, (0..1000).collect::<Vec<_>>());
        assert_ne!(v, s);
    }
}
