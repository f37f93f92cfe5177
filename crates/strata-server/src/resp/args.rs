//! Redis's words of a text line, both ways: [`split_args`] reads a line as redis-server's
//! `sdssplitargs` does (inline commands, configuration and ACL files, a function library's
//! first line), and [`quote_arg`] writes one word so that `split_args` reads it back whole.
//!
//! ```text
//! line   = { space } [ word { space { space } word } ] { space }
//! word   = { plain | "double quoted" | 'single quoted' }   (a quote may start mid-word)
//! double = escapes \n \r \t \b \a \xHH, and \c for any other c (\\, \")
//! single = the escape \' only
//! ```
//!
//! A closing quote must be followed by a space or the end of the line; an unclosed quote
//! makes the line unreadable (`None`), as it does for Redis.

/// The words of `line`, or `None` for an unbalanced quote or a closing quote followed by
/// something other than a space.
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while line.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        if i == line.len() {
            return Some(out);
        }
        let mut word = Vec::new();
        let mut quote: Option<u8> = None;
        loop {
            let Some(&c) = line.get(i) else {
                if quote.is_some() {
                    return None;
                }
                out.push(word);
                return Some(out);
            };
            i += 1;
            match quote {
                None if c.is_ascii_whitespace() => break,
                None if c == b'"' || c == b'\'' => quote = Some(c),
                None => word.push(c),
                Some(q) if c == q => {
                    if line.get(i).is_some_and(|n| !n.is_ascii_whitespace()) {
                        return None;
                    }
                    break;
                }
                Some(b'"') if c == b'\\' && i < line.len() => {
                    let hex = match line.get(i + 1..i + 3) {
                        Some(&[h, l]) => char::from(h)
                            .to_digit(16)
                            .zip(char::from(l).to_digit(16))
                            .map(|(h, l)| (h * 16 + l) as u8),
                        _ => None,
                    };
                    match (line[i], hex) {
                        (b'x', Some(byte)) => {
                            word.push(byte);
                            i += 3;
                            continue;
                        }
                        (b'n', _) => word.push(b'\n'),
                        (b'r', _) => word.push(b'\r'),
                        (b't', _) => word.push(b'\t'),
                        (b'b', _) => word.push(8),
                        (b'a', _) => word.push(7),
                        (other, _) => word.push(other),
                    }
                    i += 1;
                }
                Some(b'\'') if c == b'\\' && line.get(i) == Some(&b'\'') => {
                    word.push(b'\'');
                    i += 1;
                }
                Some(_) => word.push(c),
            }
        }
        out.push(word);
    }
}

/// `arg` as one word of a line: as it is when [`split_args`] reads it back unchanged (not
/// empty, no space, quote, backslash or control character), else as [`push_repr`] quotes it.
pub fn quote_arg(arg: &[u8]) -> Vec<u8> {
    let plain_byte = |c: u8| c >= 0x80 || (c.is_ascii_graphic() && !b"\"'\\".contains(&c));
    if !arg.is_empty() && arg.iter().all(|&c| plain_byte(c)) {
        return arg.to_vec();
    }
    let mut out = Vec::with_capacity(arg.len() + 2);
    push_repr(&mut out, arg);
    out
}

/// Appends `arg` double quoted as redis-server's `sdscatrepr` writes it (MONITOR's lines,
/// quoted config values): `\\`, `\"`, `\n`, `\r`, `\t`, `\a`, `\b`, printable ASCII as it is,
/// any other byte as `\xHH`; [`split_args`] reads it back whole.
pub fn push_repr(out: &mut Vec<u8>, arg: &[u8]) {
    out.push(b'"');
    for &c in arg {
        match c {
            b'\\' | b'"' => out.extend_from_slice(&[b'\\', c]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            7 => out.extend_from_slice(b"\\a"),
            8 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(c),
            c => out.extend_from_slice(format!("\\x{c:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn words(s: &str) -> Option<Vec<String>> {
        split_args(s.as_bytes())
            .map(|w| w.into_iter().map(|w| String::from_utf8(w).unwrap()).collect())
    }

    #[test]
    fn lines_split_as_redis_splits_them() {
        assert_eq!(words("  set a  b "), Some(vec!["set".into(), "a".into(), "b".into()]));
        assert_eq!(words(""), Some(vec![]));
        assert_eq!(words(r#"a "b c" 'd e'"#).unwrap(), ["a", "b c", "d e"]);
        assert_eq!(words(r#""\x41\n\t\"\\\q" '\'x\n'"#).unwrap(), ["A\n\t\"\\q", "'x\\n"]);
        assert_eq!(words(r#"""  ''"#).unwrap(), ["", ""]);
        // A quote may start mid-word, as in sdssplitargs.
        assert_eq!(words(r#"ab"c d" e"#).unwrap(), ["abc d", "e"]);
        assert_eq!(words(r#""\x4""#).unwrap(), ["x4"], "a short \\x is the letter x");
        assert_eq!(words(r#""abc"#), None, "unclosed");
        assert_eq!(words(r"'abc"), None, "unclosed");
        assert_eq!(words(r#""a"b"#), None, "a closing quote followed by a letter");
        assert_eq!(words("\"a\"\tb").unwrap(), ["a", "b"]);
    }

    #[test]
    fn plain_words_stay_plain_and_the_others_are_quoted() {
        assert_eq!(quote_arg(b"yes"), b"yes");
        assert_eq!(quote_arg("élan".as_bytes()), "élan".as_bytes());
        assert_eq!(quote_arg(b""), b"\"\"");
        assert_eq!(quote_arg(b"a b"), b"\"a b\"");
        assert_eq!(quote_arg(b"it's \"x\"\\\n\x01"), b"\"it's \\\"x\\\"\\\\\\n\\x01\"");
        let mut repr = Vec::new();
        push_repr(&mut repr, b"a\"b\\c\n\r\t\x07\x08\x00\xff ~");
        assert_eq!(repr, br#""a\"b\\c\n\r\t\a\b\x00\xff ~""#.to_vec());
    }

    proptest! {
        #[test]
        fn a_quoted_word_reads_back_whole(arg in proptest::collection::vec(any::<u8>(), 0..40)) {
            let mut line = b"key ".to_vec();
            line.extend_from_slice(&quote_arg(&arg));
            prop_assert_eq!(split_args(&line), Some(vec![b"key".to_vec(), arg]));
        }

        #[test]
        fn splitting_never_panics(line in proptest::collection::vec(any::<u8>(), 0..60)) {
            let _ = split_args(&line);
        }
    }
}
