//! Reply writer: appends RESP2 or RESP3 replies to one output buffer, which the connection
//! writes once per batch of pipelined commands.
//!
//! RESP3 differs where it has richer types: null (`_`), maps (`%`), sets (`~`), doubles (`,`).
//! In RESP2 these become the null bulk (`$-1`), flat arrays and bulk strings.

use std::io::Write as _;

/// The reply buffer of one connection and the protocol version it speaks.
#[derive(Debug, Default)]
pub struct Out {
    /// Encoded replies not yet written to the socket.
    pub buf: Vec<u8>,
    /// RESP3 (after `HELLO 3`).
    pub resp3: bool,
}

impl Out {
    /// `<tag><n>\r\n`: the length line of bulks, arrays, maps and sets.
    pub fn header(&mut self, tag: u8, n: usize) {
        // Lengths under 1000 (nearly all) as one fixed-size copy.
        let d = |x: usize| b'0' + (x % 10) as u8;
        match n {
            0..=9 => self.buf.extend_from_slice(&[tag, d(n), b'\r', b'\n']),
            10..=99 => self.buf.extend_from_slice(&[tag, d(n / 10), d(n), b'\r', b'\n']),
            100..=999 => {
                self.buf.extend_from_slice(&[tag, d(n / 100), d(n / 10), d(n), b'\r', b'\n']);
            }
            _ => {
                self.buf.push(tag);
                push_decimal(&mut self.buf, n as u64);
                self.buf.extend_from_slice(b"\r\n");
            }
        }
    }

    fn header_i(&mut self, tag: u8, n: i64) {
        self.buf.push(tag);
        if n < 0 {
            self.buf.push(b'-');
        }
        push_decimal(&mut self.buf, n.unsigned_abs());
        self.buf.extend_from_slice(b"\r\n");
    }

    /// `+s`
    pub fn simple(&mut self, s: &str) {
        self.buf.push(b'+');
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    /// `+OK`
    pub fn ok(&mut self) {
        self.buf.extend_from_slice(b"+OK\r\n");
    }

    /// `-msg`: `msg` starts with its code (`ERR`, `WRONGTYPE`, ...).
    pub fn error(&mut self, msg: &str) {
        self.buf.push(b'-');
        // A newline inside an error would break the framing.
        self.buf.extend(msg.bytes().map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
        self.buf.extend_from_slice(b"\r\n");
    }

    /// `:n`
    pub fn int(&mut self, n: i64) {
        self.header_i(b':', n);
    }

    /// `$len\r\nbytes`
    pub fn bulk(&mut self, b: &[u8]) {
        self.buf.reserve(b.len() + 16);
        self.header(b'$', b.len());
        self.buf.extend_from_slice(b);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// A bulk string or null.
    pub fn opt_bulk(&mut self, b: Option<&[u8]>) {
        match b {
            Some(b) => self.bulk(b),
            None => self.null(),
        }
    }

    /// Null: `$-1` (RESP2) or `_` (RESP3).
    pub fn null(&mut self) {
        if self.resp3 {
            self.buf.extend_from_slice(b"_\r\n");
        } else {
            self.buf.extend_from_slice(b"$-1\r\n");
        }
    }

    /// Null array: `*-1` (RESP2) or `_` (RESP3).
    pub fn null_array(&mut self) {
        if self.resp3 {
            self.buf.extend_from_slice(b"_\r\n");
        } else {
            self.buf.extend_from_slice(b"*-1\r\n");
        }
    }

    /// Array header of `n` elements.
    pub fn array(&mut self, n: usize) {
        self.header(b'*', n);
    }

    /// Push header of `n` elements (RESP3's out-of-band frames; RESP2 has none).
    pub fn push(&mut self, n: usize) {
        self.header(b'>', n);
    }

    /// Map header of `n` pairs (RESP2: an array of `2n`).
    pub fn map(&mut self, n: usize) {
        if self.resp3 {
            self.header(b'%', n);
        } else {
            self.array(2 * n);
        }
    }

    /// Set header (RESP2: an array).
    pub fn set(&mut self, n: usize) {
        if self.resp3 {
            self.header(b'~', n);
        } else {
            self.array(n);
        }
    }

    /// A double (RESP2: a bulk string).
    pub fn double(&mut self, v: f64) {
        let s = format_double(v);
        if self.resp3 {
            let _ = write!(self.buf, ",{s}\r\n");
        } else {
            self.bulk(s.as_bytes());
        }
    }

    /// A bulk string holding a double, in both protocols (ZSCORE in RESP2...).
    pub fn bulk_double(&mut self, v: f64) {
        self.bulk(format_double(v).as_bytes());
    }

    /// A boolean (`#t`/`#f` in RESP3, the integer 1 or 0 in RESP2).
    pub fn boolean(&mut self, b: bool) {
        if self.resp3 {
            self.buf.extend_from_slice(if b { b"#t\r\n" } else { b"#f\r\n" });
        } else {
            self.int(i64::from(b));
        }
    }

    /// A big number given as its decimal digits (`(digits` in RESP3, bulk in RESP2). A CR
    /// or LF in `digits` (a script's `{big_number=...}` may hold anything) is written as a
    /// space in either protocol, as Redis writes it, so the RESP3 line stays one line.
    pub fn big_number(&mut self, digits: &[u8]) {
        let line: Vec<u8> =
            digits.iter().map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }).collect();
        if self.resp3 {
            self.buf.push(b'(');
            self.buf.extend_from_slice(&line);
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(&line);
        }
    }

    /// A verbatim text string (`=len\r\ntxt:...` in RESP3, bulk in RESP2).
    pub fn verbatim(&mut self, s: &str) {
        self.verbatim_as(b"txt", s.as_bytes());
    }

    /// A verbatim string of `format` (three bytes: `txt`, `mkd`; others are cut or padded
    /// with spaces, as Redis writes them) in RESP3, bulk in RESP2.
    pub fn verbatim_as(&mut self, format: &[u8], s: &[u8]) {
        if self.resp3 {
            let mut f = [b' '; 3];
            for (d, b) in f.iter_mut().zip(format) {
                *d = *b;
            }
            let _ = write!(self.buf, "={}\r\n", s.len() + 4);
            self.buf.extend_from_slice(&f);
            self.buf.push(b':');
            self.buf.extend_from_slice(s);
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(s);
        }
    }
}

/// Appends `n` in decimal (what `write!(buf, "{n}")` gives, without the formatting machinery:
/// reply headers are on every request's path).
fn push_decimal(buf: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.extend_from_slice(&digits[i..]);
}

/// Formats a double the way Redis 7.0 replies with one (C's `%.17g`): `inf`/`-inf`, `-0`,
/// otherwise 17 significant digits with trailing zeros dropped, in exponent form when the
/// exponent is below -4 or above 16.
pub fn format_double(v: f64) -> String {
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if v.is_nan() {
        return "nan".into();
    }
    format_g(v, 17)
}

/// C's `printf("%.<precision>g", v)` for a finite `v` (precision 1 to 17): `precision`
/// significant digits, trailing zeros dropped, in exponent form when the exponent is below
/// -4 or not below the precision.
pub fn format_g(v: f64, precision: usize) -> String {
    use std::fmt::Write as _;
    if v == 0.0 {
        return if v.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let p = precision.clamp(1, 17);
    // `p` significant digits, rounded as printf rounds: d.ddde<exp>.
    let sci = format!("{v:.*e}", p - 1);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (neg, digits) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = digits.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::with_capacity(24);
    if neg {
        out.push('-');
    }
    if exp < -4 || exp >= p as i32 {
        let trimmed = digits.trim_end_matches('0');
        out.push_str(&trimmed[..1]);
        if trimmed.len() > 1 {
            out.push('.');
            out.push_str(&trimmed[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.unsigned_abs());
        return out;
    }
    if exp < 0 {
        out.push_str("0.");
        for _ in 0..(-exp - 1) {
            out.push('0');
        }
        out.push_str(digits.trim_end_matches('0'));
        return out;
    }
    let int_len = exp as usize + 1;
    out.push_str(&digits[..int_len]);
    let frac = digits[int_len..].trim_end_matches('0');
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resp2_and_resp3_nulls_and_maps() {
        let mut o = Out::default();
        o.null();
        o.map(1);
        o.double(1.5);
        assert_eq!(o.buf, b"$-1\r\n*2\r\n$3\r\n1.5\r\n");
        let mut o = Out { resp3: true, ..Out::default() };
        o.null();
        o.map(1);
        o.double(1.5);
        assert_eq!(o.buf, b"_\r\n%1\r\n,1.5\r\n");
        assert_eq!(format_double(-0.0), "-0");
        assert_eq!(format_double(0.0), "0");
    }

    #[test]
    fn headers_and_integers_match_formatting() {
        for n in [0i64, 1, 9, 10, 99, 100, 12345, -1, -10, i64::MAX, i64::MIN] {
            let mut o = Out::default();
            o.int(n);
            assert_eq!(o.buf, format!(":{n}\r\n").into_bytes());
        }
        for n in [0usize, 5, 9, 10, 42, 99, 100, 512, 999, 1000, 65536] {
            let mut o = Out::default();
            o.header(b'$', n);
            assert_eq!(o.buf, format!("${n}\r\n").into_bytes());
        }
        let mut o = Out::default();
        o.array(0);
        o.header(b'%', 1_000_000);
        o.bulk(b"ab");
        o.bulk(b"");
        assert_eq!(o.buf, b"*0\r\n%1000000\r\n$2\r\nab\r\n$0\r\n\r\n");
    }

    #[test]
    fn doubles_format_like_redis() {
        assert_eq!(format_double(3.0), "3");
        assert_eq!(format_double(-0.5), "-0.5");
        assert_eq!(format_double(f64::INFINITY), "inf");
        assert_eq!(format_double(f64::NEG_INFINITY), "-inf");
        // C's printf("%.17g"), as Redis 7.0 replies.
        for (v, want) in [
            (0.1, "0.10000000000000001"),
            (1.5, "1.5"),
            (0.004877936097270779, "0.0048779360972707794"),
            (123456.0, "123456"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (1e-5, "1.0000000000000001e-05"),
            (0.0001, "0.0001"),
            (-2.5e-10, "-2.5000000000000002e-10"),
            (1e300, "1.0000000000000001e+300"),
            (f64::MAX, "1.7976931348623157e+308"),
            (5e-324, "4.9406564584124654e-324"),
            (2.5e-3, "0.0025000000000000001"),
            (0.3, "0.29999999999999999"),
        ] {
            assert_eq!(format_double(v), want, "{v:e}");
        }
    }
}
