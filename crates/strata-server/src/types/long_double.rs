//! The arithmetic of INCRBYFLOAT as redis-server does it on x86-64 Linux: the C `long double`
//! there is the x87 80-bit extended format (64-bit significand with an explicit integer bit,
//! exponents down to 2^-16382 and subnormals below), read with `strtold`, added in that
//! precision and printed with `%.17Lf` before trailing zeros are cut (Redis's "human" form).
//! An `f64` gives other digits (10.5 + 0.1 prints 10.59999999999999964 from a double but 10.6
//! from a long double), so values are kept exact here: a 64-bit significand times a power of
//! two, with every rounding (parsing, adding, printing) done on exact big integers, to
//! nearest with ties to even, as the x87 unit and glibc do.

use num_bigint::{BigInt, BigUint, Sign};

/// The exponent of the last significand bit of the smallest subnormal: 2^-16445.
const MIN_Q: i64 = -16445;
/// The exponent of the last significand bit of the largest finite values: (2^64-1)·2^16320.
const MAX_Q: i64 = 16320;
/// Strings Redis reads as numbers are shorter than this (`MAX_LONG_DOUBLE_CHARS`).
pub const MAX_CHARS: usize = 5 * 1024;

/// An x87 extended value: finite `mant · 2^exp` or an infinity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LongDouble {
    /// A finite value (zero: `mant` 0).
    Finite {
        /// The sign.
        neg: bool,
        /// The significand.
        mant: u64,
        /// The power of two of its last bit.
        exp: i64,
    },
    /// An infinity.
    Inf {
        /// The sign.
        neg: bool,
    },
}

/// What rounding an exact value gave.
enum Rounded {
    Value(LongDouble),
    Overflow,
    /// A non-zero value below half the smallest subnormal.
    Underflow,
}

fn pow2(n: u64) -> BigUint {
    BigUint::from(1u8) << n
}

/// Rounds `num / den` (both non-zero) to the extended format, to nearest, ties to even.
fn round(neg: bool, num: &BigUint, den: &BigUint) -> Rounded {
    // floor(log2(num/den)) is lb or lb - 1.
    let lb = num.bits() as i64 - den.bits() as i64;
    let at_least = if lb >= 0 { *num >= den << (lb as u64) } else { num << ((-lb) as u64) >= *den };
    let e = if at_least { lb } else { lb - 1 };
    let mut q = (e - 63).max(MIN_Q);
    let (n, d) =
        if q < 0 { (num << ((-q) as u64), den.clone()) } else { (num.clone(), den << (q as u64)) };
    let mut m = &n / &d;
    let twice_r = (&n - &m * &d) << 1u8;
    if twice_r > d || (twice_r == d && m.bit(0)) {
        m += 1u8;
    }
    if m.bits() > 64 {
        m >>= 1u8;
        q += 1;
    }
    if q > MAX_Q {
        return Rounded::Overflow;
    }
    let mant = m.iter_u64_digits().next().unwrap_or(0);
    if mant == 0 {
        return Rounded::Underflow;
    }
    Rounded::Value(LongDouble::Finite { neg, mant, exp: q })
}

/// Reads `b` as redis-server's `string2ld` does: the whole string is a number for `strtold`
/// (decimal or hexadecimal, `inf`/`infinity`), no leading space, not NaN, and not one that
/// overflows or underflows to zero. `None` otherwise.
pub fn parse(b: &[u8]) -> Option<LongDouble> {
    if b.is_empty() || b.len() >= MAX_CHARS {
        return None;
    }
    let (neg, rest) = match b[0] {
        b'-' => (true, &b[1..]),
        b'+' => (false, &b[1..]),
        _ => (false, b),
    };
    let lower = rest.to_ascii_lowercase();
    if lower == b"inf" || lower == b"infinity" {
        return Some(LongDouble::Inf { neg });
    }
    let hex = lower.len() > 2 && lower.starts_with(b"0x");
    let body = if hex { &lower[2..] } else { &lower[..] };
    let radix: u32 = if hex { 16 } else { 10 };
    let exp_mark = if hex { b'p' } else { b'e' };
    let (mant_part, exp_part) = match body.iter().position(|&c| c == exp_mark) {
        Some(p) => (&body[..p], Some(&body[p + 1..])),
        None => (body, None),
    };
    let mut digits = BigUint::from(0u8);
    let (mut any, mut frac_digits, mut seen_dot, mut sig) = (false, 0i64, false, 0i64);
    for &c in mant_part {
        if c == b'.' && !seen_dot {
            seen_dot = true;
            continue;
        }
        let d = (c as char).to_digit(radix)?;
        digits = digits * radix + d;
        any = true;
        if d != 0 || sig > 0 {
            sig += 1;
        }
        if seen_dot {
            frac_digits += 1;
        }
    }
    if !any {
        return None;
    }
    let exp: i64 = match exp_part {
        None => 0,
        Some(e) => {
            let (eneg, ed) = match e.first() {
                Some(b'-') => (true, &e[1..]),
                Some(b'+') => (false, &e[1..]),
                _ => (false, e),
            };
            if ed.is_empty() || !ed.iter().all(u8::is_ascii_digit) {
                return None;
            }
            // Saturate: anything this large over- or underflows anyway.
            let v = ed.iter().fold(0i64, |a, &c| (a * 10 + i64::from(c - b'0')).min(1 << 40));
            if eneg {
                -v
            } else {
                v
            }
        }
    };
    if digits.bits() == 0 {
        return Some(LongDouble::Finite { neg, mant: 0, exp: 0 });
    }
    let one = BigUint::from(1u8);
    let (num, den) = if hex {
        // value = digits · 2^(exp - 4·frac_digits)
        let p = exp - 4 * frac_digits;
        if p > 20_000 {
            return None;
        }
        if p < -20_000 - digits.bits() as i64 {
            return None;
        }
        if p >= 0 {
            (digits << (p as u64), one)
        } else {
            (digits, pow2((-p) as u64))
        }
    } else {
        let p = exp - frac_digits;
        // The value is below 10^(p + sig): past these bounds it over- or underflows.
        if p + sig > 4_934 || p + sig < -4_955 {
            return None;
        }
        let ten = BigUint::from(10u8);
        if p >= 0 {
            (digits * ten.pow(p as u32), one)
        } else {
            (digits, ten.pow((-p) as u32))
        }
    };
    match round(neg, &num, &den) {
        Rounded::Value(v) => Some(v),
        Rounded::Overflow | Rounded::Underflow => None,
    }
}

fn signed(neg: bool, mant: u64, shift: i64) -> BigInt {
    let m = BigInt::from(mant) << (shift as u64);
    if neg {
        -m
    } else {
        m
    }
}

/// `a + b` rounded to the extended format; `None` when the sum is NaN or infinite.
pub fn add(a: LongDouble, b: LongDouble) -> Option<LongDouble> {
    let (
        LongDouble::Finite { neg: an, mant: am, exp: ae },
        LongDouble::Finite { neg: bn, mant: bm, exp: be },
    ) = (a, b)
    else {
        return None;
    };
    let e = ae.min(be);
    let sum = signed(an, am, ae - e) + signed(bn, bm, be - e);
    let (sign, mag) = sum.into_parts();
    if sign == Sign::NoSign {
        // An exact zero sum is +0 when rounding to nearest (and -0 + -0 is -0, printed alike).
        return Some(LongDouble::Finite { neg: an && bn, mant: 0, exp: 0 });
    }
    let one = BigUint::from(1u8);
    let (num, den) = if e >= 0 { (mag << (e as u64), one) } else { (mag, pow2((-e) as u64)) };
    match round(sign == Sign::Minus, &num, &den) {
        Rounded::Value(v) => Some(v),
        Rounded::Overflow => None,
        // Sums of values on the format's grid are on the grid: no underflow to zero.
        Rounded::Underflow => Some(LongDouble::Finite { neg: false, mant: 0, exp: 0 }),
    }
}

/// `x` exactly (every finite double is a long double); NaN has no value here and gives 0.
pub fn from_f64(x: f64) -> LongDouble {
    if x.is_infinite() {
        return LongDouble::Inf { neg: x < 0.0 };
    }
    if x.is_nan() {
        return LongDouble::Finite { neg: false, mant: 0, exp: 0 };
    }
    let bits = x.to_bits();
    let neg = bits >> 63 == 1;
    let field = ((bits >> 52) & 0x7ff) as i64;
    let frac = bits & ((1 << 52) - 1);
    let (mant, exp) = if field == 0 { (frac, -1074) } else { (frac | (1 << 52), field - 1075) };
    LongDouble::Finite { neg, mant, exp }
}

/// `v` as Redis's human form prints it: `%.17Lf` with the trailing zeros (and a trailing
/// dot) cut, and `-0` printed as `0`.
pub fn format_human(v: LongDouble) -> String {
    let (neg, mant, exp) = match v {
        LongDouble::Inf { neg } => return if neg { "-inf".into() } else { "inf".into() },
        LongDouble::Finite { neg, mant, exp } => (neg, mant, exp),
    };
    let scale = BigUint::from(10u8).pow(17);
    let n = if exp >= 0 {
        (BigUint::from(mant) << (exp as u64)) * scale
    } else {
        let num = BigUint::from(mant) * scale;
        let den = pow2((-exp) as u64);
        let mut q = &num / &den;
        let twice_r = (&num - &q * &den) << 1u8;
        if twice_r > den || (twice_r == den && q.bit(0)) {
            q += 1u8;
        }
        q
    };
    let mut digits = n.to_string();
    if digits.len() < 18 {
        digits = format!("{}{digits}", "0".repeat(18 - digits.len()));
    }
    let point = digits.len() - 17;
    let mut s = String::with_capacity(digits.len() + 2);
    if neg {
        s.push('-');
    }
    s.push_str(&digits[..point]);
    s.push('.');
    s.push_str(&digits[point..]);
    let trimmed = s.trim_end_matches('0').trim_end_matches('.');
    if trimmed == "-0" {
        "0".into()
    } else {
        trimmed.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn incr(a: &str, b: &str) -> Option<String> {
        add(parse(a.as_bytes())?, parse(b.as_bytes())?).map(format_human)
    }

    #[test]
    fn sums_print_as_redis_prints_them_on_x86_64() {
        assert_eq!(incr("10.5", "0.1").as_deref(), Some("10.6"));
        assert_eq!(incr("0", "1").as_deref(), Some("1"));
        assert_eq!(incr("1", "0.25").as_deref(), Some("1.25"));
        assert_eq!(incr("5.0e3", "2.0e2").as_deref(), Some("5200"));
        assert_eq!(incr("0", "-1.5").as_deref(), Some("-1.5"));
        assert_eq!(incr("1", "-1").as_deref(), Some("0"));
        assert_eq!(incr("-0.000000000000000001", "0").as_deref(), Some("0"));
        // 17 decimals: a third is cut there (the long double's own digits run on).
        assert_eq!(incr("0", "0.3333333333333333333333").as_deref(), Some("0.33333333333333333"));
        // Hexadecimal input, as strtold reads it.
        assert_eq!(incr("0x1.8p1", "0").as_deref(), Some("3"));
        // 2^-18 ends in a 5 at the 18th decimal: a tie, to even.
        assert_eq!(incr("0x1p-18", "0").as_deref(), Some("0.00000381469726562"));
        // The largest exact integers of the format are kept whole.
        assert_eq!(incr("18446744073709551615", "0").as_deref(), Some("18446744073709551615"));
        assert_eq!(incr("18446744073709551617", "0").as_deref(), Some("18446744073709551616"));
    }

    /// Vectors made by `testdata/incrbyfloat_x87_gen.c` (glibc's `strtold` and `printf` on
    /// x86-64, with Redis's `string2ld` checks and trimming): `a`, `b`, and what
    /// `SET k a` + `INCRBYFLOAT k b` gives (BADA/BADB: a or b is not a valid float; NANINF:
    /// the sum is not finite). Edge values crossed with each other, then random ones.
    #[test]
    fn sums_match_glibc_on_x86_64() {
        let data = include_str!("testdata/incrbyfloat_x87.tsv");
        let mut n = 0;
        for line in data.lines() {
            let f: Vec<&str> = line.split('\t').collect();
            let (a, b, want) = (f[0], f[1], f[2]);
            let got = match (parse(a.as_bytes()), parse(b.as_bytes())) {
                (None, _) => "BADA".to_string(),
                (_, None) => "BADB".to_string(),
                (Some(x), Some(y)) => add(x, y).map_or("NANINF".to_string(), format_human),
            };
            assert_eq!(got, want, "{a:?} + {b:?}");
            n += 1;
        }
        assert!(n > 1000, "{n} vectors");
    }

    #[test]
    fn bad_numbers_and_non_finite_sums_are_refused() {
        for bad in
            ["", " 1", "1 ", "abc", "nan", "-nan", "1e", "1e+", ".", "0x", "1e5000", "1e-5000"]
        {
            assert_eq!(parse(bad.as_bytes()), None, "{bad:?}");
        }
        assert_eq!(parse(b"1\x002"), None);
        assert_eq!(parse("1".repeat(MAX_CHARS).as_bytes()), None);
        assert_eq!(parse(b"inf"), Some(LongDouble::Inf { neg: false }));
        assert_eq!(parse(b"-Infinity"), Some(LongDouble::Inf { neg: true }));
        assert_eq!(incr("0", "inf"), None);
        assert_eq!(incr("1e4932", "1e4932"), None);
        assert_eq!(
            parse(b"0e999999999999"),
            Some(LongDouble::Finite { neg: false, mant: 0, exp: 0 })
        );
        // A subnormal is accepted.
        assert!(parse(b"1e-4945").is_some());
    }
}
