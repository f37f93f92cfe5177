//! C's `printf` conversions that db_bench's messages use, for the messages strata-bench
//! prints in their place: glibc's output, `-nan` for the NaN an average of nothing gives.

/// `x` as `%.1f` prints it.
pub fn fixed1(x: f64) -> String {
    if x.is_nan() {
        "-nan".to_string()
    } else {
        format!("{x:.1}")
    }
}

/// `x` as `%g` prints it: six significant digits, trailing zeros dropped, in exponent form
/// below 1e-4 or from 1e6.
pub fn g(x: f64) -> String {
    if x.is_nan() {
        return "-nan".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if x == 0.0 {
        return "0".to_string();
    }
    let sci = format!("{x:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.unsigned_abs())
    } else {
        trim(&format!("{x:.*}", (5 - exp) as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::{fixed1, g};

    #[test]
    fn conversions_print_as_glibc_does() {
        // printf("%g") of each, by glibc.
        let cases = [
            (0.0, "0"),
            (1.0, "1"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (0.0001, "0.0001"),
            (0.00001234, "1.234e-05"),
            (2.5, "2.5"),
            (999999.5, "1e+06"),
            (15.0 / 7.0, "2.14286"),
            (f64::NAN, "-nan"),
        ];
        for (x, want) in cases {
            assert_eq!(g(x), want, "{x}");
        }
        assert_eq!((fixed1(36.04), fixed1(f64::NAN)), ("36.0".to_string(), "-nan".to_string()));
    }
}
