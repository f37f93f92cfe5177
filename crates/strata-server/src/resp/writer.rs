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

    /// A verbatim string (`=len\r\ntxt:...` in RESP3, bulk in RESP2).
    pub fn verbatim(&mut self, s: &str) {
        if self.resp3 {
            let _ = write!(self.buf, "={}\r\ntxt:", s.len() + 4);
            self.buf.extend_from_slice(s.as_bytes());
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(s.as_bytes());
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

/// Formats a double the way Redis replies with one: integers without a fraction, `inf`/`-inf`,
/// otherwise the shortest form that reads back the same.
pub fn format_double(v: f64) -> String {
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if v == 0.0 && v.is_sign_negative() {
        return "-0".into(); // as Redis's %.17g prints it
    }
    if v.fract() == 0.0 && v.abs() < 1e17 {
        return format!("{}", v as i64);
    }
    format!("{v}")
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
    }
}
