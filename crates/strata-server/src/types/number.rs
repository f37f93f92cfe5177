//! How Redis reads numbers from text: the strict integers of string values and arguments
//! (`string2ll`) and the floats of scores.

/// Parses a strict integer (no spaces, no `+`, no leading zeros), as Redis's string2ll.
pub fn parse_int_strict(b: &[u8]) -> Option<i64> {
    if b.is_empty() || b.len() > 20 {
        return None;
    }
    let s = std::str::from_utf8(b).ok()?;
    let v: i64 = s.parse().ok()?;
    (v.to_string() == s).then_some(v)
}

/// Parses a float the way Redis reads scores: `inf`, `+inf`, `-inf` and decimal/exponent
/// forms; NaN and trailing garbage rejected.
pub fn parse_float(b: &[u8]) -> Option<f64> {
    // The common case, a plain decimal, parses as it is: the checks below are for the words
    // Rust's parser also takes (`inf`, `nan`, any case) and for whitespace, neither of which
    // such a number has.
    if !b.is_empty()
        && b.iter().all(|&c| c.is_ascii_digit() || matches!(c, b'.' | b'-' | b'+' | b'e' | b'E'))
    {
        // ASCII, so valid UTF-8; a plain number never parses as NaN.
        return std::str::from_utf8(b).ok()?.parse().ok();
    }
    let s = std::str::from_utf8(b).ok()?;
    if s.is_empty() || s.trim() != s {
        return None;
    }
    let v: f64 = match s.to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        l if l.contains("inf") || l.contains("nan") => return None,
        _ => s.parse().ok()?,
    };
    (!v.is_nan()).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_strict() {
        for (text, want) in [("0", 0), ("-5", -5), ("9223372036854775807", i64::MAX)] {
            assert_eq!(parse_int_strict(text.as_bytes()), Some(want), "{text}");
        }
        for text in ["", " 1", "1 ", "01", "+1", "1a", "9223372036854775808", "1.0"] {
            assert_eq!(parse_int_strict(text.as_bytes()), None, "{text}");
        }
    }

    #[test]
    fn floats_read_as_scores() {
        let inf = f64::INFINITY;
        for (text, want) in [("1.5", 1.5), ("1e3", 1000.0), ("+inf", inf), ("-inf", -inf)] {
            assert_eq!(parse_float(text.as_bytes()), Some(want), "{text}");
        }
        for text in ["", "nan", " 1", "1x", "infx", "-nan", "1e", "--1", ".", "+-1"] {
            assert_eq!(parse_float(text.as_bytes()), None, "{text}");
        }
    }
}
