//! GETRANGE/SUBSTR, SETRANGE, INCRBYFLOAT, LCS and MSETNX against Redis 7.0's replies and
//! errors; LCS also against a model of the subsequence on random strings.

use crate::common::{Raw, Reply, Rng, Server};

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const NOT_INT: &str = "ERR value is not an integer or out of range";
const NOT_FLOAT: &str = "ERR value is not a valid float";

fn bulk(s: &str) -> Reply {
    Reply::bulk(s)
}

fn err(s: &str) -> Reply {
    Reply::Error(s.into())
}

fn ints(v: &[i64]) -> Reply {
    Reply::Array(v.iter().map(|&n| Reply::Int(n)).collect())
}

#[test]
fn getrange_clamps_like_redis() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmd(&["SET", "k", "Hello World"]);
    for (s, e, want) in [
        ("0", "4", "Hello"),
        ("0", "-1", "Hello World"),
        ("-5", "-1", "World"),
        ("5", "3", ""),
        ("-1", "-5", ""),
        ("0", "100", "Hello World"),
        ("100", "200", ""),
        ("-100", "-50", "H"),
        ("-100", "2", "Hel"),
        ("10", "10", "d"),
    ] {
        assert_eq!(c.cmd(&["GETRANGE", "k", s, e]), bulk(want), "GETRANGE {s} {e}");
        assert_eq!(c.cmd(&["SUBSTR", "k", s, e]), bulk(want), "SUBSTR {s} {e}");
    }
    c.cmd(&["SET", "n", "1234"]);
    assert_eq!(c.cmd(&["GETRANGE", "n", "0", "2"]), bulk("123"));
    assert_eq!(c.cmd(&["GETRANGE", "absent", "0", "-1"]), bulk(""));
    c.cmd(&["SET", "e", ""]);
    assert_eq!(c.cmd(&["GETRANGE", "e", "0", "-1"]), bulk(""));
    assert_eq!(c.cmd(&["GETRANGE", "k", "a", "1"]), err(NOT_INT));
    c.cmd(&["RPUSH", "l", "a"]);
    assert_eq!(c.cmd(&["GETRANGE", "l", "0", "1"]), err(WRONGTYPE));
    assert_eq!(
        c.cmd(&["GETRANGE", "k", "0"]),
        err("ERR wrong number of arguments for 'getrange' command")
    );
}

#[test]
fn setrange_pads_with_zeros_and_keeps_the_expiry() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["SETRANGE", "k", "5", "x"]), Reply::Int(6));
    assert_eq!(c.cmd(&["GET", "k"]), Reply::Bulk(b"\0\0\0\0\0x".to_vec()));
    assert_eq!(c.cmd(&["SETRANGE", "absent", "3", ""]), Reply::Int(0));
    assert_eq!(c.cmd(&["EXISTS", "absent"]), Reply::Int(0));
    c.cmd(&["SET", "h", "hello"]);
    c.cmd(&["EXPIRE", "h", "100"]);
    assert_eq!(c.cmd(&["SETRANGE", "h", "1", "ip"]), Reply::Int(5));
    assert_eq!(c.cmd(&["GET", "h"]), bulk("hiplo"));
    assert_eq!(c.cmd(&["SETRANGE", "h", "4", "world"]), Reply::Int(9));
    assert_eq!(c.cmd(&["GET", "h"]), bulk("hiplworld"));
    assert_eq!(c.cmd(&["SETRANGE", "h", "0", ""]), Reply::Int(9));
    assert!(matches!(c.cmd(&["TTL", "h"]), Reply::Int(98..=100)));
    c.cmd(&["SET", "n", "1234"]);
    assert_eq!(c.cmd(&["SETRANGE", "n", "1", "x"]), Reply::Int(4));
    assert_eq!(c.cmd(&["GET", "n"]), bulk("1x34"));
    assert_eq!(c.cmd(&["SETRANGE", "h", "-1", "x"]), err("ERR offset is out of range"));
    assert_eq!(c.cmd(&["SETRANGE", "h", "x", "x"]), err(NOT_INT));
    // proto-max-bulk-len (512 MiB by default) bounds the result.
    let too_long = err("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
    assert_eq!(c.cmd(&["SETRANGE", "h", "536870912", "x"]), too_long);
    assert_eq!(c.cmd(&["SETRANGE", "big", "536870910", "xyz"]), too_long);
    assert_eq!(c.cmd(&["SETRANGE", "big", "9223372036854775807", "x"]), too_long);
    assert_eq!(c.cmd(&["EXISTS", "big"]), Reply::Int(0));
    // An empty value on an absent key is never too long.
    assert_eq!(c.cmd(&["SETRANGE", "big", "9223372036854775807", ""]), Reply::Int(0));
    c.cmd(&["RPUSH", "l", "a"]);
    assert_eq!(c.cmd(&["SETRANGE", "l", "0", ""]), err(WRONGTYPE));
    assert_eq!(c.cmd(&["SETRANGE", "l", "0", "x"]), err(WRONGTYPE));
}

#[test]
fn setrange_and_append_limit_follows_proto_max_bulk_len() {
    let srv = Server::start(&["--proto-max-bulk-len", "1024"]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["SETRANGE", "k", "1020", "abcd"]), Reply::Int(1024));
    assert_eq!(
        c.cmd(&["SETRANGE", "k", "1020", "abcde"]),
        err("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
    );
    // APPEND has the same bound, on an existing string only (as Redis).
    let long = "x".repeat(1000);
    assert_eq!(
        c.cmd(&["APPEND", "k", "x"]),
        err("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
    );
    assert_eq!(c.cmd(&["APPEND", "new", &long]), Reply::Int(1000));
    assert_eq!(c.cmd(&["APPEND", "new", &"y".repeat(24)]), Reply::Int(1024));
    assert_eq!(
        c.cmd(&["APPEND", "new", "z"]),
        err("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
    );
    assert_eq!(c.cmd(&["STRLEN", "new"]), Reply::Int(1024));
}

#[test]
fn incrbyfloat_adds_in_long_double_and_prints_as_redis() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["INCRBYFLOAT", "n", "1"]), bulk("1"));
    assert_eq!(c.cmd(&["INCRBYFLOAT", "n", "0.25"]), bulk("1.25"));
    assert_eq!(c.cmd(&["GET", "n"]), bulk("1.25"));
    c.cmd(&["SET", "f", "10.5"]);
    assert_eq!(c.cmd(&["INCRBYFLOAT", "f", "0.1"]), bulk("10.6"));
    assert_eq!(c.cmd(&["INCRBYFLOAT", "f", "-5"]), bulk("5.6"));
    c.cmd(&["SET", "e", "5.0e3"]);
    assert_eq!(c.cmd(&["INCRBYFLOAT", "e", "2.0e2"]), bulk("5200"));
    c.cmd(&["SET", "i", "17179869184"]);
    assert_eq!(c.cmd(&["INCRBYFLOAT", "i", "1.5"]), bulk("17179869185.5"));
    assert_eq!(c.cmd(&["INCRBYFLOAT", "i", "-17179869185.5"]), bulk("0"));
    // No negative zero (Redis's own test).
    c.cmd(&["SET", "z", "0"]);
    c.cmd(&["INCRBYFLOAT", "z", "0.024390243902439025"]);
    assert_eq!(c.cmd(&["INCRBYFLOAT", "z", "-0.024390243902439025"]), bulk("0"));
    // The expiry stays.
    c.cmd(&["SET", "t", "1", "EX", "100"]);
    assert_eq!(c.cmd(&["INCRBYFLOAT", "t", "1"]), bulk("2"));
    assert!(matches!(c.cmd(&["TTL", "t"]), Reply::Int(98..=100)));

    let nan_inf = err("ERR increment would produce NaN or Infinity");
    assert_eq!(c.cmd(&["INCRBYFLOAT", "f", "+inf"]), nan_inf);
    assert_eq!(c.cmd(&["INCRBYFLOAT", "f", "-inf"]), nan_inf);
    c.cmd(&["SET", "big", "1e4932"]);
    assert_eq!(c.cmd(&["INCRBYFLOAT", "big", "1e4932"]), nan_inf);
    assert_eq!(c.cmd(&["GET", "f"]), bulk("5.6"));
    for bad in ["abc", "nan", " 1", "1 ", "1e", "", "1e5000", "0x"] {
        assert_eq!(c.cmd(&["INCRBYFLOAT", "f", bad]), err(NOT_FLOAT), "{bad:?}");
    }
    c.cmd(&["SET", "s", "abc"]);
    assert_eq!(c.cmd(&["INCRBYFLOAT", "s", "1"]), err(NOT_FLOAT));
    // A value with a zero byte inside is not a number (Redis's own test).
    c.cmd(&["SET", "nul", "1"]);
    c.cmd(&["SETRANGE", "nul", "2", "2"]);
    assert_eq!(c.cmd(&["INCRBYFLOAT", "nul", "1"]), err(NOT_FLOAT));
    c.cmd(&["RPUSH", "l", "a"]);
    assert_eq!(c.cmd(&["INCRBYFLOAT", "l", "abc"]), err(WRONGTYPE));
}

#[test]
fn lcs_replies_as_redis_documents() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmd(&["MSET", "key1", "ohmytext", "key2", "mynewtext"]);
    assert_eq!(c.cmd(&["LCS", "key1", "key2"]), bulk("mytext"));
    assert_eq!(c.cmd(&["LCS", "key1", "key2", "LEN"]), Reply::Int(6));
    let m = |a: [i64; 2], b: [i64; 2], len: Option<i64>| {
        let mut v = vec![ints(&a), ints(&b)];
        v.extend(len.map(Reply::Int));
        Reply::Array(v)
    };
    let idx = |matches: Vec<Reply>| {
        Reply::Array(vec![bulk("matches"), Reply::Array(matches), bulk("len"), Reply::Int(6)])
    };
    assert_eq!(
        c.cmd(&["LCS", "key1", "key2", "IDX"]),
        idx(vec![m([4, 7], [5, 8], None), m([2, 3], [0, 1], None)])
    );
    assert_eq!(
        c.cmd(&["LCS", "key1", "key2", "IDX", "MINMATCHLEN", "4"]),
        idx(vec![m([4, 7], [5, 8], None)])
    );
    assert_eq!(
        c.cmd(&["lcs", "key1", "key2", "idx", "minmatchlen", "4", "withmatchlen"]),
        idx(vec![m([4, 7], [5, 8], Some(4))])
    );
    assert_eq!(
        c.cmd(&["LCS", "key1", "key2", "IDX", "WITHMATCHLEN", "MINMATCHLEN", "-3"]),
        idx(vec![m([4, 7], [5, 8], Some(4)), m([2, 3], [0, 1], Some(2))])
    );
    assert_eq!(c.cmd(&["LCS", "absent", "key2"]), bulk(""));
    assert_eq!(c.cmd(&["LCS", "absent", "other", "LEN"]), Reply::Int(0));
    assert_eq!(
        c.cmd(&["LCS", "key1", "key2", "LEN", "IDX"]),
        err("ERR If you want both the length and indexes, please just use IDX.")
    );
    assert_eq!(c.cmd(&["LCS", "key1", "key2", "FOO"]), err("ERR syntax error"));
    assert_eq!(c.cmd(&["LCS", "key1", "key2", "MINMATCHLEN"]), err("ERR syntax error"));
    assert_eq!(c.cmd(&["LCS", "key1", "key2", "MINMATCHLEN", "x"]), err(NOT_INT));
    c.cmd(&["RPUSH", "l", "a"]);
    // The keys' types are checked before the options.
    assert_eq!(
        c.cmd(&["LCS", "key1", "l", "FOO"]),
        err("ERR The specified keys must contain string values")
    );
    // RESP3: IDX is a map.
    c.cmd(&["HELLO", "3"]);
    assert_eq!(
        c.cmd(&["LCS", "key1", "key2", "IDX", "MINMATCHLEN", "4"]),
        Reply::Map(vec![
            (bulk("matches"), Reply::Array(vec![m([4, 7], [5, 8], None)])),
            (bulk("len"), Reply::Int(6)),
        ])
    );
}

/// The length of the longest common subsequence, by the textbook table.
fn lcs_len(a: &[u8], b: &[u8]) -> usize {
    let mut t = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            t[i][j] = if a[i - 1] == b[j - 1] {
                t[i - 1][j - 1] + 1
            } else {
                t[i - 1][j].max(t[i][j - 1])
            };
        }
    }
    t[a.len()][b.len()]
}

fn is_subsequence(s: &[u8], of: &[u8]) -> bool {
    let mut it = of.iter();
    s.iter().all(|c| it.any(|d| d == c))
}

#[test]
fn lcs_matches_a_model_on_random_strings() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let mut rng = Rng::new(7);
    for _ in 0..60 {
        let gen = |rng: &mut Rng| -> String {
            (0..rng.below(30)).map(|_| (b'a' + rng.below(4) as u8) as char).collect()
        };
        let (a, b) = (gen(&mut rng), gen(&mut rng));
        c.cmd(&["MSET", "a", &a, "b", &b]);
        let want = lcs_len(a.as_bytes(), b.as_bytes());
        let Reply::Bulk(seq) = c.cmd(&["LCS", "a", "b"]) else { panic!() };
        assert_eq!(seq.len(), want, "{a} {b}");
        assert!(is_subsequence(&seq, a.as_bytes()) && is_subsequence(&seq, b.as_bytes()));
        assert_eq!(c.cmd(&["LCS", "a", "b", "LEN"]), Reply::Int(want as i64));
        // IDX's runs are equal slices of both strings, in descending order, and add up to the
        // subsequence's length.
        let Reply::Array(v) = c.cmd(&["LCS", "a", "b", "IDX", "WITHMATCHLEN"]) else { panic!() };
        assert_eq!(v[3], Reply::Int(want as i64));
        let Reply::Array(runs) = &v[1] else { panic!() };
        let mut total = 0;
        let mut prev = usize::MAX;
        for r in runs {
            let Reply::Array(r) = r else { panic!() };
            let range = |x: &Reply| match x {
                Reply::Array(p) => match (&p[0], &p[1]) {
                    (Reply::Int(s), Reply::Int(e)) => (*s as usize, *e as usize),
                    _ => panic!(),
                },
                _ => panic!(),
            };
            let ((a0, a1), (b0, b1)) = (range(&r[0]), range(&r[1]));
            assert_eq!(a[a0..=a1], b[b0..=b1]);
            assert_eq!(r[2], Reply::Int((a1 - a0 + 1) as i64));
            assert!(a1 < prev);
            prev = a0;
            total += a1 - a0 + 1;
        }
        assert_eq!(total, want, "{a} {b}");
    }
}

#[test]
fn msetnx_writes_all_or_nothing() {
    let srv = Server::start(&[]);
    let mut c: Raw = srv.raw();
    assert_eq!(c.cmd(&["MSETNX", "a", "1", "b", "2"]), Reply::Int(1));
    assert_eq!(c.cmd(&["MSETNX", "a", "x", "c", "3"]), Reply::Int(0));
    assert_eq!(
        c.cmd(&["MGET", "a", "b", "c"]),
        Reply::Array(vec![bulk("1"), bulk("2"), Reply::Null])
    );
    // A key of any type counts as existing; an expired one does not.
    c.cmd(&["RPUSH", "l", "x"]);
    assert_eq!(c.cmd(&["MSETNX", "l", "1", "d", "4"]), Reply::Int(0));
    c.cmd(&["SET", "e", "v", "PX", "1"]);
    std::thread::sleep(std::time::Duration::from_millis(10));
    assert_eq!(c.cmd(&["MSETNX", "e", "1", "d", "4"]), Reply::Int(1));
    assert_eq!(c.cmd(&["GET", "e"]), bulk("1"));
    let arity = err("ERR wrong number of arguments for 'msetnx' command");
    assert_eq!(c.cmd(&["MSETNX", "a"]), arity);
    assert_eq!(c.cmd(&["MSETNX", "a", "1", "b"]), arity);
}

/// Extreme numbers and times, with the replies redis-server 7.0.15 gives.
#[test]
fn extreme_numbers_reply_as_redis_does() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmd(&["SET", "n", "9223372036854775807"]);
    assert_eq!(c.cmd(&["INCRBYFLOAT", "n", "1"]), bulk("9223372036854775808"));
    // Below the long double's precision at that size: no change.
    assert_eq!(
        c.cmd(&["INCRBYFLOAT", "n", "0.000000000000000000001"]),
        bulk("9223372036854775808")
    );
    c.cmd(&["SET", "d", "1e-17"]);
    assert_eq!(c.cmd(&["INCRBYFLOAT", "d", "0"]), bulk("0.00000000000000001"));
    c.cmd(&["SET", "e", "123456789012345678901234567890"]);
    assert_eq!(c.cmd(&["INCRBYFLOAT", "e", "1"]), bulk("123456789012345678899921813504"));
    assert_eq!(c.cmd(&["GETEX", "n", "PXAT", "9223372036854775807"]), bulk("9223372036854775808"));
    let getex = err("ERR invalid expire time in 'getex' command");
    assert_eq!(c.cmd(&["GETEX", "n", "EX", "9223372036854775"]), getex);
    assert_eq!(c.cmd(&["SET", "k", "v", "EXAT", "9223372036854775"]), Reply::Simple("OK".into()));
    assert_eq!(
        c.cmd(&["SET", "k", "v", "EXAT", "9223372036854776"]),
        err("ERR invalid expire time in 'set' command")
    );
    assert_eq!(c.cmd(&["SETRANGE", "s", "4294967295", ""]), Reply::Int(0));
}
