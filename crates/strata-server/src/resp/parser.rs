//! Incremental parser of client requests: RESP arrays of bulk strings (`*N\r\n$L\r\n...`) and
//! inline commands (a line of space-separated words, with `"..."`/`'...'` quoting).
//!
//! [`parse_command`] looks at the bytes buffered so far. It returns `Incomplete` when more bytes
//! are needed (nothing consumed), `Command` with the arguments and the bytes the frame used,
//! or an error. Feeding the same stream split at any point yields the same commands.

use std::fmt;

/// Longest inline request line and longest multibulk header line accepted (Redis: 64 KiB).
pub const MAX_INLINE: usize = 64 * 1024;
/// Most elements one multibulk request may declare.
pub const MAX_MULTIBULK: i64 = 1024 * 1024;

/// A malformed request; its text follows `-ERR Protocol error: `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub String);

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Protocol error: {}", self.0)
    }
}

impl std::error::Error for ProtocolError {}

/// What the buffer holds.
#[derive(Debug, PartialEq, Eq)]
pub enum ParseOutcome {
    /// Not a whole frame yet.
    Incomplete,
    /// A whole frame: its arguments (empty for a blank inline line) and its length in bytes.
    Command(Vec<Vec<u8>>, usize),
}

fn find_crlf(buf: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i < buf.len() {
        match buf[i..].iter().position(|&b| b == b'\r') {
            Some(p) => {
                let at = i + p;
                if at + 1 >= buf.len() {
                    return None;
                }
                if buf[at + 1] == b'\n' {
                    return Some(at);
                }
                i = at + 1;
            }
            None => return None,
        }
    }
    None
}

fn parse_int(digits: &[u8]) -> Option<i64> {
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    let (neg, rest) = match digits[0] {
        b'-' => (true, &digits[1..]),
        _ => (false, digits),
    };
    if rest.is_empty() {
        return None;
    }
    let mut v: i64 = 0;
    for &d in rest {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(i64::from(d - b'0'))?;
    }
    Some(if neg { -v } else { v })
}

/// Parses one request from the front of `buf`. `max_bulk` bounds one argument's length
/// (`proto-max-bulk-len`).
pub fn parse_command(buf: &[u8], max_bulk: usize) -> Result<ParseOutcome, ProtocolError> {
    if buf.is_empty() {
        return Ok(ParseOutcome::Incomplete);
    }
    if buf[0] == b'*' {
        parse_multibulk(buf, max_bulk)
    } else {
        parse_inline(buf)
    }
}

fn parse_multibulk(buf: &[u8], max_bulk: usize) -> Result<ParseOutcome, ProtocolError> {
    let Some(end) = find_crlf(buf, 1) else {
        if buf.len() > MAX_INLINE {
            return Err(ProtocolError("too big mbulk count string".into()));
        }
        return Ok(ParseOutcome::Incomplete);
    };
    let count = parse_int(&buf[1..end])
        .filter(|&n| n <= MAX_MULTIBULK)
        .ok_or_else(|| ProtocolError("invalid multibulk length".into()))?;
    let mut pos = end + 2;
    if count <= 0 {
        return Ok(ParseOutcome::Command(Vec::new(), pos));
    }
    let mut args = Vec::with_capacity(count.min(1024) as usize);
    for _ in 0..count {
        if pos >= buf.len() {
            return Ok(ParseOutcome::Incomplete);
        }
        if buf[pos] != b'$' {
            let got = buf[pos] as char;
            return Err(ProtocolError(format!("expected '$', got '{got}'")));
        }
        let Some(end) = find_crlf(buf, pos + 1) else {
            if buf.len() - pos > MAX_INLINE {
                return Err(ProtocolError("too big bulk count string".into()));
            }
            return Ok(ParseOutcome::Incomplete);
        };
        let len = parse_int(&buf[pos + 1..end])
            .filter(|&n| n >= 0 && (n as u64) <= max_bulk as u64)
            .ok_or_else(|| ProtocolError("invalid bulk length".into()))? as usize;
        let start = end + 2;
        let Some(stop) = start.checked_add(len) else {
            return Err(ProtocolError("invalid bulk length".into()));
        };
        if buf.len() < stop + 2 {
            return Ok(ParseOutcome::Incomplete);
        }
        if &buf[stop..stop + 2] != b"\r\n" {
            return Err(ProtocolError("expected CRLF after bulk string".into()));
        }
        args.push(buf[start..stop].to_vec());
        pos = stop + 2;
    }
    Ok(ParseOutcome::Command(args, pos))
}

fn parse_inline(buf: &[u8]) -> Result<ParseOutcome, ProtocolError> {
    let Some(nl) = buf.iter().position(|&b| b == b'\n') else {
        if buf.len() > MAX_INLINE {
            return Err(ProtocolError("too big inline request".into()));
        }
        return Ok(ParseOutcome::Incomplete);
    };
    let mut line = &buf[..nl];
    if line.last() == Some(&b'\r') {
        line = &line[..line.len() - 1];
    }
    let args = super::args::split_args(line)
        .ok_or_else(|| ProtocolError("unbalanced quotes in request".into()))?;
    Ok(ParseOutcome::Command(args, nl + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse_all(stream: &[u8]) -> Result<Vec<Vec<Vec<u8>>>, ProtocolError> {
        let mut pos = 0;
        let mut out = Vec::new();
        loop {
            match parse_command(&stream[pos..], 512 * 1024 * 1024)? {
                ParseOutcome::Incomplete => return Ok(out),
                ParseOutcome::Command(a, n) => {
                    out.push(a);
                    pos += n;
                }
            }
        }
    }

    /// Feeds `stream` in two pieces split at `at`, as a connection would.
    fn parse_split(stream: &[u8], at: usize) -> Vec<Vec<Vec<u8>>> {
        let mut buf = Vec::new();
        let mut out = Vec::new();
        for piece in [&stream[..at], &stream[at..]] {
            buf.extend_from_slice(piece);
            loop {
                match parse_command(&buf, 1 << 20).unwrap() {
                    ParseOutcome::Incomplete => break,
                    ParseOutcome::Command(a, n) => {
                        out.push(a);
                        buf.drain(..n);
                    }
                }
            }
        }
        out
    }

    const STREAM: &[u8] = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nv\r\nxy\r\nPING\r\n*0\r\nset \"a b\" 'c d' \"\\x41\\n\"\r\n*1\r\n$0\r\n\r\n\n";

    #[test]
    fn every_split_point_parses_identically() {
        let whole = parse_all(STREAM).unwrap();
        assert_eq!(whole.len(), 6);
        assert_eq!(whole[0], vec![b"SET".to_vec(), b"k".to_vec(), b"v\r\nxy".to_vec()]);
        assert_eq!(whole[1], vec![b"PING".to_vec()]);
        assert!(whole[2].is_empty());
        assert_eq!(
            whole[3],
            vec![b"set".to_vec(), b"a b".to_vec(), b"c d".to_vec(), b"A\n".to_vec()]
        );
        assert_eq!(whole[4], vec![Vec::<u8>::new()]);
        assert!(whole[5].is_empty());
        for at in 0..=STREAM.len() {
            assert_eq!(parse_split(STREAM, at), whole, "split at {at}");
        }
    }

    #[test]
    fn malformed_frames_are_errors() {
        for bad in [
            &b"*x\r\n"[..],
            b"*1\r\n+OK\r\n",
            b"*1\r\n$-5\r\n",
            b"*1\r\n$3\r\nabcde\r\n",
            b"set \"abc\r\n",
            b"*99999999999\r\n",
        ] {
            assert!(parse_command(bad, 1 << 20).is_err(), "{bad:?}");
        }
        let err = parse_command(b"*1\r\n$100\r\n", 10).unwrap_err();
        assert_eq!(err.to_string(), "Protocol error: invalid bulk length");
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = parse_all(&bytes);
        }

        #[test]
        fn random_resp_like_bytes_never_panic(parts in proptest::collection::vec(
            prop_oneof![Just(&b"*"[..]), Just(&b"$"[..]), Just(&b"\r\n"[..]), Just(&b"-1"[..]),
                        Just(&b"3"[..]), Just(&b"abc"[..]), Just(&b"\""[..]), Just(&b"'"[..])], 0..40)) {
            let bytes: Vec<u8> = parts.concat();
            let _ = parse_all(&bytes);
        }
    }
}
