//! Argument parsing shared by the commands, with Redis's error for each bad argument.

use super::errors::{CmdError, NOT_FLOAT, NOT_INT, NOT_POSITIVE, SYNTAX};
use crate::types::number::{parse_float, parse_int_strict};

/// Case-insensitive comparison of an argument with an ASCII word.
pub fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// An integer argument, or `ERR value is not an integer or out of range`.
pub fn int_arg(b: &[u8]) -> Result<i64, CmdError> {
    parse_int_strict(b).ok_or(NOT_INT.into())
}

/// A float argument, or `ERR value is not a valid float`.
pub fn float_arg(b: &[u8]) -> Result<f64, CmdError> {
    parse_float(b).ok_or(NOT_FLOAT.into())
}

/// The optional count of LPOP/RPOP/SPOP (`key [count]`): any count that is not a
/// non-negative integer gets Redis's `ERR value is out of range, must be positive`.
pub fn pop_count(a: &[Vec<u8>]) -> Result<Option<u64>, CmdError> {
    if a.len() > 3 {
        return Err(SYNTAX.into());
    }
    a.get(2)
        .map(|c| match parse_int_strict(c) {
            Some(n) if n >= 0 => Ok(n as u64),
            _ => Err(NOT_POSITIVE.into()),
        })
        .transpose()
}

/// The arguments of SCAN (`cursor [MATCH pattern] [COUNT count] [TYPE type]`) and of
/// HSCAN/SSCAN/ZSCAN (`key cursor [MATCH pattern] [COUNT count]`).
pub struct ScanArgs {
    /// The cursor (0: from the start).
    pub cursor: u64,
    /// The MATCH pattern.
    pub pattern: Option<Vec<u8>>,
    /// How many entries a step visits.
    pub count: usize,
    /// SCAN's TYPE.
    pub type_name: Option<Vec<u8>>,
}

/// Parses scan arguments with the cursor at `cursor_at` (1 for SCAN, 2 for the others);
/// TYPE only `with_type` (SCAN). Redis's errors.
pub fn scan_args(a: &[Vec<u8>], cursor_at: usize, with_type: bool) -> Result<ScanArgs, CmdError> {
    let cursor = std::str::from_utf8(&a[cursor_at]).ok().and_then(|s| s.parse::<u64>().ok());
    let cursor = cursor.ok_or("ERR invalid cursor")?;
    let mut args = ScanArgs { cursor, pattern: None, count: 10, type_name: None };
    let mut i = cursor_at + 1;
    while i < a.len() {
        let val = a.get(i + 1).ok_or(SYNTAX)?;
        if is(&a[i], "match") {
            args.pattern = Some(val.clone());
        } else if is(&a[i], "count") {
            let c = int_arg(val)?;
            if c < 1 {
                return Err(SYNTAX.into());
            }
            args.count = c as usize;
        } else if with_type && is(&a[i], "type") {
            args.type_name = Some(val.clone());
        } else {
            return Err(SYNTAX.into());
        }
        i += 2;
    }
    Ok(args)
}

/// The `count [WITH...]` of ZRANDMEMBER and HRANDFIELD (from index 2): the count and whether
/// `with` (WITHSCORES, WITHVALUES) was given, with Redis 7.0's errors; a count drawn with
/// repeats past [`super::errors::MAX_DRAWS`] is refused.
pub fn random_count(a: &[Vec<u8>], with: &str) -> Result<(i64, bool), CmdError> {
    let n = parse_int_strict(&a[2]).ok_or(CmdError::from(super::errors::NOT_INT))?;
    if n == i64::MIN {
        return Err("ERR value is out of range, value must between -9223372036854775807 and \
                    9223372036854775807"
            .into());
    }
    let with = match a.get(3) {
        None => false,
        Some(w) if a.len() == 4 && is(w, with) => true,
        Some(_) => return Err(SYNTAX.into()),
    };
    if with && !(-i64::MAX / 2..=i64::MAX / 2).contains(&n) {
        return Err("ERR value is out of range".into());
    }
    if n < 0 && n.unsigned_abs() > super::errors::MAX_DRAWS {
        return Err(super::errors::TOO_MANY_DRAWS.into());
    }
    Ok((n, with))
}

/// Replies a HELP subcommand's lines, as simple strings.
pub fn reply_help(out: &mut crate::resp::Out, lines: &[&str]) {
    out.array(lines.len());
    for l in lines {
        out.simple(l);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<Vec<u8>> {
        v.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    fn pop_count_text(v: &[&str]) -> Result<Option<u64>, String> {
        pop_count(&args(v)).map_err(|e| e.reply_text().into_owned())
    }

    #[test]
    fn pop_counts_are_non_negative_integers_with_redis_errors() {
        assert_eq!(pop_count_text(&["lpop", "k"]), Ok(None));
        assert_eq!(pop_count_text(&["lpop", "k", "0"]), Ok(Some(0)));
        assert_eq!(pop_count_text(&["lpop", "k", "7"]), Ok(Some(7)));
        let positive = Err("ERR value is out of range, must be positive".to_string());
        assert_eq!(pop_count_text(&["lpop", "k", "-1"]), positive);
        assert_eq!(pop_count_text(&["lpop", "k", "x"]), positive);
        assert_eq!(pop_count_text(&["lpop", "k", "1", "2"]), Err(SYNTAX.to_string()));
    }
}
