//! Redis-style glob matching for KEYS, SCAN MATCH and CONFIG GET: `*`, `?`, `[abc]`, `[^a-z]`,
//! and `\x` escapes. Iterative with backtracking on the last `*` (no exponential blow-up).

/// Whether `s` matches `pat`.
pub fn matches(pat: &[u8], s: &[u8]) -> bool {
    let (mut p, mut i) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        if p < pat.len() {
            match pat[p] {
                b'*' => {
                    while p < pat.len() && pat[p] == b'*' {
                        p += 1;
                    }
                    if p == pat.len() {
                        return true;
                    }
                    star = Some((p, i));
                    continue;
                }
                b'?' => {
                    p += 1;
                    i += 1;
                    continue;
                }
                b'[' => {
                    if let Some((ok, next)) = class(pat, p, s[i]) {
                        if ok {
                            p = next;
                            i += 1;
                            continue;
                        }
                    }
                }
                b'\\' if p + 1 < pat.len() => {
                    if pat[p + 1] == s[i] {
                        p += 2;
                        i += 1;
                        continue;
                    }
                }
                c => {
                    if c == s[i] {
                        p += 1;
                        i += 1;
                        continue;
                    }
                }
            }
        }
        match star {
            Some((sp, si)) => {
                p = sp;
                i = si + 1;
                star = Some((sp, si + 1));
            }
            None => return false,
        }
    }
    while p < pat.len() && pat[p] == b'*' {
        p += 1;
    }
    p == pat.len()
}

/// Matches `c` against the class starting at `pat[p] == '['`: (matched, index after `]`).
fn class(pat: &[u8], p: usize, c: u8) -> Option<(bool, usize)> {
    let mut j = p + 1;
    let negate = pat.get(j) == Some(&b'^');
    if negate {
        j += 1;
    }
    let mut hit = false;
    loop {
        let x = *pat.get(j)?;
        if x == b']' {
            break;
        }
        if x == b'\\' && j + 1 < pat.len() {
            hit |= pat[j + 1] == c;
            j += 2;
        } else if pat.get(j + 1) == Some(&b'-') && pat.get(j + 2).is_some_and(|&e| e != b']') {
            let (mut lo, mut hi) = (x, pat[j + 2]);
            if lo > hi {
                std::mem::swap(&mut lo, &mut hi);
            }
            hit |= lo <= c && c <= hi;
            j += 3;
        } else {
            hit |= x == c;
            j += 1;
        }
    }
    Some((hit != negate, j + 1))
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn globs() {
        assert!(matches(b"*", b"anything"));
        assert!(matches(b"h?llo", b"hello"));
        assert!(matches(b"h*llo", b"heeeello"));
        assert!(matches(b"h[ae]llo", b"hallo"));
        assert!(!matches(b"h[^e]llo", b"hello"));
        assert!(matches(b"h[a-c]llo", b"hbllo"));
        assert!(matches(b"user:*:name", b"user:12:name"));
        assert!(!matches(b"user:*:name", b"user:12:age"));
        assert!(matches(b"a\\*b", b"a*b"));
        assert!(!matches(b"abc", b"abcd"));
    }
}
