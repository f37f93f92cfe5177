//! BITCOUNT, BITPOS, BITOP, BITFIELD and BITFIELD_RO against Redis 7.0's replies and errors,
//! and SETBIT/BITFIELD/BITCOUNT/BITPOS/BITOP against a byte-vector model on random commands.

use crate::common::{Raw, Reply, Rng, Server};
use std::collections::HashMap;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const NOT_INT: &str = "ERR value is not an integer or out of range";
const SYNTAX: &str = "ERR syntax error";
const BAD_TYPE: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";
const BAD_OFFSET: &str = "ERR bit offset is not an integer or out of range";

fn err(s: &str) -> Reply {
    Reply::Error(s.into())
}

fn int(n: i64) -> Reply {
    Reply::Int(n)
}

fn ints(v: &[Option<i64>]) -> Reply {
    Reply::Array(v.iter().map(|n| n.map_or(Reply::Null, Reply::Int)).collect())
}

#[test]
fn bitcount_and_bitpos_take_redis_ranges() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmd(&["SET", "s", "foobar"]);
    assert_eq!(c.cmd(&["BITCOUNT", "s"]), int(26));
    assert_eq!(c.cmd(&["BITCOUNT", "s", "1", "1"]), int(6));
    assert_eq!(c.cmd(&["BITCOUNT", "s", "-2", "-1"]), int(7));
    assert_eq!(c.cmd(&["BITCOUNT", "s", "5", "30", "BIT"]), int(17));
    assert_eq!(c.cmd(&["BITCOUNT", "s", "0", "-1", "byte"]), int(26));
    assert_eq!(c.cmd(&["BITCOUNT", "s", "-1", "-2", "nonsense"]), int(0));
    assert_eq!(c.cmd(&["BITCOUNT", "s", "0"]), err(SYNTAX));
    assert_eq!(c.cmd(&["BITCOUNT", "s", "0", "1", "bits"]), err(SYNTAX));
    assert_eq!(c.cmd(&["BITCOUNT", "s", "a", "1"]), err(NOT_INT));
    // An absent key counts 0 before the arguments are read.
    assert_eq!(c.cmd(&["BITCOUNT", "absent", "0"]), int(0));
    assert_eq!(c.cmd(&["BITCOUNT"]), err("ERR wrong number of arguments for 'bitcount' command"));

    c.cmd(&["SET", "p", "\u{7f}"]); // 0111_1111
    c.cmd(&["SETRANGE", "p", "1", "\u{0}\u{7f}"]);
    assert_eq!(c.cmd(&["BITPOS", "p", "0"]), int(0));
    assert_eq!(c.cmd(&["BITPOS", "p", "1"]), int(1));
    assert_eq!(c.cmd(&["BITPOS", "p", "1", "1"]), int(17));
    assert_eq!(c.cmd(&["BITPOS", "p", "1", "2", "-1", "BIT"]), int(2));
    assert_eq!(c.cmd(&["BITPOS", "p", "1", "8", "-1", "BIT"]), int(17));
    assert_eq!(c.cmd(&["BITPOS", "p", "0", "17", "-1", "bit"]), int(-1));
    c.cmd(&["SET", "ff", "\u{7f}"]);
    c.cmd(&["SETBIT", "ff", "0", "1"]);
    assert_eq!(c.cmd(&["BITPOS", "ff", "0"]), int(8));
    assert_eq!(c.cmd(&["BITPOS", "ff", "0", "0"]), int(8));
    assert_eq!(c.cmd(&["BITPOS", "ff", "0", "0", "-1"]), int(-1));
    assert_eq!(c.cmd(&["BITPOS", "ff", "0", "2", "-1", "bit"]), int(-1));
    assert_eq!(c.cmd(&["BITPOS", "absent", "1"]), int(-1));
    assert_eq!(c.cmd(&["BITPOS", "absent", "0", "x"]), int(0));
    assert_eq!(c.cmd(&["BITPOS", "ff", "2"]), err("ERR The bit argument must be 1 or 0."));
    assert_eq!(c.cmd(&["BITPOS", "ff", "x"]), err(NOT_INT));
    assert_eq!(c.cmd(&["BITPOS", "ff", "1", "0", "1", "BIT", "x"]), err(SYNTAX));
    assert_eq!(c.cmd(&["BITPOS", "ff", "1", "0", "1", "bits"]), err(SYNTAX));
    c.cmd(&["SET", "e", ""]);
    assert_eq!(c.cmd(&["BITPOS", "e", "0"]), int(-1));
    assert_eq!(c.cmd(&["BITCOUNT", "e"]), int(0));
    c.cmd(&["RPUSH", "l", "a"]);
    assert_eq!(c.cmd(&["BITCOUNT", "l"]), err(WRONGTYPE));
    assert_eq!(c.cmd(&["BITPOS", "l", "1"]), err(WRONGTYPE));
    // Huge and extreme indexes clamp.
    let (min, max) = (i64::MIN.to_string(), i64::MAX.to_string());
    assert_eq!(c.cmd(&["BITCOUNT", "s", &min, &max, "BIT"]), int(26));
    assert_eq!(c.cmd(&["BITPOS", "p", "1", &min, &max, "BIT"]), int(1));
}

#[test]
fn bitop_combines_and_deletes_an_empty_result() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmd(&["SET", "a", "abc"]);
    c.cmd(&["SET", "b", "\u{7f}"]);
    assert_eq!(c.cmd(&["BITOP", "AND", "d", "a", "b"]), int(3));
    assert_eq!(c.cmd(&["GET", "d"]), Reply::Bulk(b"a\0\0".to_vec()));
    assert_eq!(c.cmd(&["BITOP", "or", "d", "a", "b", "absent"]), int(3));
    assert_eq!(c.cmd(&["GET", "d"]), Reply::bulk("\u{7f}bc"));
    assert_eq!(c.cmd(&["BITOP", "XOR", "d", "a", "a"]), int(3));
    assert_eq!(c.cmd(&["GET", "d"]), Reply::Bulk(vec![0; 3]));
    assert_eq!(c.cmd(&["BITOP", "NOT", "d", "b"]), int(1));
    assert_eq!(c.cmd(&["GET", "d"]), Reply::Bulk(vec![0x80]));
    // The destination loses its expiry and its old type; an empty result deletes it.
    c.cmd(&["EXPIRE", "d", "100"]);
    assert_eq!(c.cmd(&["BITOP", "AND", "d", "a"]), int(3));
    assert_eq!(c.cmd(&["TTL", "d"]), int(-1));
    c.cmd(&["RPUSH", "l", "x"]);
    assert_eq!(c.cmd(&["BITOP", "OR", "l", "a"]), int(3));
    assert_eq!(c.cmd(&["GET", "l"]), Reply::bulk("abc"));
    assert_eq!(c.cmd(&["BITOP", "OR", "d", "absent", "absent2"]), int(0));
    assert_eq!(c.cmd(&["EXISTS", "d"]), int(0));
    c.cmd(&["RPUSH", "list", "x"]);
    assert_eq!(c.cmd(&["BITOP", "OR", "d", "a", "list"]), err(WRONGTYPE));
    assert_eq!(c.cmd(&["EXISTS", "d"]), int(0));
    assert_eq!(c.cmd(&["BITOP", "NAND", "d", "a"]), err(SYNTAX));
    assert_eq!(
        c.cmd(&["BITOP", "NOT", "d", "a", "b"]),
        err("ERR BITOP NOT must be called with a single source key.")
    );
    assert_eq!(
        c.cmd(&["BITOP", "AND", "d"]),
        err("ERR wrong number of arguments for 'bitop' command")
    );
    // COMMAND GETKEYS: the keys start after the operation.
    let keys = c.cmd(&["COMMAND", "GETKEYS", "BITOP", "AND", "d", "a", "b"]);
    assert_eq!(keys, Reply::Array(vec![Reply::bulk("d"), Reply::bulk("a"), Reply::bulk("b")]));
}

#[test]
fn bitfield_gets_sets_and_overflows_like_redis() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let r = c.cmd(&["BITFIELD", "b", "SET", "u8", "0", "255", "GET", "u8", "0", "GET", "i8", "0"]);
    assert_eq!(r, ints(&[Some(0), Some(255), Some(-1)]));
    assert_eq!(
        c.cmd(&[
            "BITFIELD", "b", "INCRBY", "u2", "100", "1", "OVERFLOW", "SAT", "incrby", "u2", "102",
            "1"
        ]),
        ints(&[Some(1), Some(1)])
    );
    assert_eq!(c.cmd(&["STRLEN", "b"]), int(13));
    let r = c.cmd(&[
        "BITFIELD", "w", "SET", "i8", "#1", "127", "INCRBY", "i8", "#1", "1", "OVERFLOW", "SAT",
        "INCRBY", "i8", "#1", "-1000", "OVERFLOW", "FAIL", "INCRBY", "i8", "8", "-1", "GET", "i8",
        "8",
    ]);
    assert_eq!(r, ints(&[Some(0), Some(-128), Some(-128), None, Some(-128)]));
    // An unsigned SET reads its value as a u64: -1 is above the maximum.
    let r = c.cmd(&["BITFIELD", "u", "OVERFLOW", "SAT", "SET", "u8", "0", "-1", "GET", "u8", "0"]);
    assert_eq!(r, ints(&[Some(0), Some(255)]));
    let r = c.cmd(&[
        "BITFIELD",
        "i",
        "SET",
        "i64",
        "3",
        &i64::MIN.to_string(),
        "INCRBY",
        "i64",
        "3",
        "-1",
    ]);
    assert_eq!(r, ints(&[Some(0), Some(i64::MAX)]));
    let r = c.cmd(&["BITFIELD", "i", "OVERFLOW", "FAIL", "INCRBY", "i64", "3", "1"]);
    assert_eq!(r, ints(&[None]));
    let r = c.cmd(&["BITFIELD", "i", "SET", "u63", "3", &i64::MAX.to_string(), "GET", "u63", "3"]);
    assert_eq!(r, ints(&[Some(i64::MAX >> 1), Some(i64::MAX)]));
    // A FAIL overflow still creates the key, as Redis does.
    let r = c.cmd(&["BITFIELD", "f", "OVERFLOW", "FAIL", "SET", "u2", "0", "7"]);
    assert_eq!(r, ints(&[None]));
    assert_eq!(c.cmd(&["GET", "f"]), Reply::Bulk(vec![0]));
    // Reads past the end, of an absent key, and no operations at all.
    assert_eq!(c.cmd(&["BITFIELD", "absent", "GET", "u8", "1000"]), ints(&[Some(0)]));
    assert_eq!(c.cmd(&["BITFIELD", "absent"]), Reply::Array(vec![]));
    assert_eq!(c.cmd(&["EXISTS", "absent"]), int(0));
    assert_eq!(
        c.cmd(&["BITFIELD_RO", "b", "GET", "u8", "0", "GET", "u4", "#2"]),
        ints(&[Some(255), Some(0)])
    );
    // The expiry survives a write.
    c.cmd(&["EXPIRE", "b", "100"]);
    c.cmd(&["BITFIELD", "b", "SET", "u8", "8", "1"]);
    assert!(matches!(c.cmd(&["TTL", "b"]), Reply::Int(98..=100)));
    // Errors, in Redis's order.
    assert_eq!(
        c.cmd(&["BITFIELD_RO", "b", "SET", "u8", "0", "1"]),
        err("ERR BITFIELD_RO only supports the GET subcommand")
    );
    assert_eq!(c.cmd(&["BITFIELD", "b", "GET", "u64", "0"]), err(BAD_TYPE));
    assert_eq!(c.cmd(&["BITFIELD", "b", "GET", "i65", "0"]), err(BAD_TYPE));
    assert_eq!(c.cmd(&["BITFIELD", "b", "GET", "x8", "0"]), err(BAD_TYPE));
    assert_eq!(c.cmd(&["BITFIELD", "b", "GET", "u8", "-1"]), err(BAD_OFFSET));
    assert_eq!(c.cmd(&["BITFIELD", "b", "GET", "u8", "4294967296"]), err(BAD_OFFSET));
    assert_eq!(c.cmd(&["BITFIELD", "b", "SET", "u8", "#536870912", "1"]), err(BAD_OFFSET));
    assert_eq!(
        c.cmd(&["BITFIELD", "b", "SET", "i64", "#9223372036854775807", "1"]),
        err(BAD_OFFSET)
    );
    assert_eq!(c.cmd(&["BITFIELD", "b", "SET", "u8", "0", "x"]), err(NOT_INT));
    assert_eq!(
        c.cmd(&["BITFIELD", "b", "OVERFLOW", "FOO"]),
        err("ERR Invalid OVERFLOW type specified")
    );
    assert_eq!(c.cmd(&["BITFIELD", "b", "GET", "u8"]), err(SYNTAX));
    assert_eq!(c.cmd(&["BITFIELD", "b", "FOO", "u8", "0"]), err(SYNTAX));
    c.cmd(&["RPUSH", "l", "a"]);
    assert_eq!(c.cmd(&["BITFIELD", "l", "GET", "u8", "0"]), err(WRONGTYPE));
    assert_eq!(c.cmd(&["BITFIELD", "l", "SET", "u8", "0", "1"]), err(WRONGTYPE));
    assert_eq!(c.cmd(&["BITFIELD_RO", "l", "GET", "u8", "0"]), err(WRONGTYPE));
}

/// The model's bit at `pos`.
fn bit(v: &[u8], pos: u64) -> bool {
    v.get((pos / 8) as usize).is_some_and(|b| b & (0x80 >> (pos % 8)) != 0)
}

/// The model's (signed, bits) field at `offset`, read bit by bit.
fn field(v: &[u8], offset: u64, signed: bool, bits: u32) -> i64 {
    let mut u: i128 = 0;
    for j in 0..u64::from(bits) {
        u = (u << 1) | i128::from(bit(v, offset + j));
    }
    if signed && u >= 1 << (bits - 1) {
        u -= 1 << bits;
    }
    u as i64
}

fn put_field(v: &mut Vec<u8>, offset: u64, bits: u32, value: i128) {
    let need = ((offset + u64::from(bits) - 1) / 8 + 1) as usize;
    if v.len() < need {
        v.resize(need, 0);
    }
    for j in 0..u64::from(bits) {
        let on = (value >> (u64::from(bits) - 1 - j)) & 1 != 0;
        let pos = offset + j;
        let mask = 0x80u8 >> (pos % 8);
        let b = &mut v[(pos / 8) as usize];
        *b = if on { *b | mask } else { *b & !mask };
    }
}

/// Redis's clamping of an index range over `total` units.
fn clamp(total: i64, start: i64, end: i64) -> Option<(i64, i64)> {
    let s = if start < 0 { total + start } else { start }.max(0);
    let e = if end < 0 { total + end } else { end }.max(0).min(total - 1);
    (s <= e).then_some((s, e))
}

#[test]
fn bit_commands_match_a_byte_model() {
    let srv = Server::start(&[]);
    let mut c: Raw = srv.raw();
    for seed in 1..=3u64 {
        c.cmd(&["FLUSHALL"]);
        let mut model: HashMap<String, Vec<u8>> = HashMap::new();
        let mut rng = Rng::new(seed);
        for step in 0..700 {
            let k = format!("k{}", rng.below(4));
            let v = model.get(&k).cloned();
            let at = format!("seed {seed} step {step} key {k}");
            match rng.below(8) {
                0 => {
                    let off = rng.below(160);
                    let on = rng.below(2);
                    let r = c.cmd(&["SETBIT", &k, &off.to_string(), &on.to_string()]);
                    let m = model.entry(k).or_default();
                    assert_eq!(r, int(i64::from(bit(m, off))), "{at}");
                    put_field(m, off, 1, i128::from(on));
                }
                1 | 2 => {
                    let signed = rng.below(2) == 0;
                    let bits = 1 + rng.below(if signed { 64 } else { 63 }) as u32;
                    let off = rng.below(140);
                    let ow = ["WRAP", "SAT", "FAIL"][rng.below(3) as usize];
                    let incr = rng.below(2) == 0;
                    let x = match rng.below(4) {
                        0 => rng.next() as i64,
                        1 => i64::MAX - rng.below(3) as i64,
                        2 => i64::MIN + rng.below(3) as i64,
                        _ => rng.below(600) as i64 - 300,
                    };
                    let ty = format!("{}{bits}", if signed { 'i' } else { 'u' });
                    let op = if incr { "INCRBY" } else { "SET" };
                    let r = c.cmd(&[
                        "BITFIELD",
                        &k,
                        "OVERFLOW",
                        ow,
                        op,
                        &ty,
                        &off.to_string(),
                        &x.to_string(),
                    ]);
                    let m = model.entry(k).or_default();
                    let old = field(m, off, signed, bits);
                    let (min, max) = if signed {
                        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
                    } else {
                        (0, (1i128 << bits) - 1)
                    };
                    let sum = if incr {
                        i128::from(old) + i128::from(x)
                    } else if signed {
                        i128::from(x)
                    } else {
                        i128::from(x as u64)
                    };
                    let new = if (min..=max).contains(&sum) {
                        Some(sum)
                    } else {
                        match ow {
                            "SAT" => Some(if sum > max { max } else { min }),
                            "FAIL" => None,
                            _ => {
                                let w = sum.rem_euclid(1 << bits);
                                Some(if signed && w > max { w - (1 << bits) } else { w })
                            }
                        }
                    };
                    // The key grows to hold the field even when the write fails.
                    put_field(m, off, bits, i128::from(field(m, off, signed, bits)));
                    let want = new.map(|n| if incr { n as i64 } else { old });
                    assert_eq!(r, ints(&[want]), "{at}: BITFIELD {op} {ty} {off} {x} {ow}");
                    if let Some(n) = new {
                        put_field(m, off, bits, n);
                    }
                }
                3 => {
                    let signed = rng.below(2) == 0;
                    let bits = 1 + rng.below(if signed { 64 } else { 63 }) as u32;
                    let off = rng.below(200);
                    let ty = format!("{}{bits}", if signed { 'i' } else { 'u' });
                    let cmd = if rng.below(2) == 0 { "BITFIELD" } else { "BITFIELD_RO" };
                    let r = c.cmd(&[cmd, &k, "GET", &ty, &off.to_string()]);
                    let want = field(v.as_deref().unwrap_or_default(), off, signed, bits);
                    assert_eq!(r, ints(&[Some(want)]), "{at}: GET {ty} {off}");
                }
                4 | 5 => {
                    let m = v.unwrap_or_default();
                    let (s, e) = (rng.below(60) as i64 - 30, rng.below(60) as i64 - 30);
                    let bitmode = rng.below(2) == 0;
                    let unit = if bitmode { "BIT" } else { "BYTE" };
                    let total = m.len() as i64 * if bitmode { 8 } else { 1 };
                    let range = clamp(total, s, e).map(|(s, e)| {
                        if bitmode {
                            (s as u64, e as u64)
                        } else {
                            (s as u64 * 8, e as u64 * 8 + 7)
                        }
                    });
                    let args = [&k[..], &s.to_string(), &e.to_string(), unit].map(String::from);
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    let exists = model.contains_key(&k);
                    if rng.below(2) == 0 {
                        let r = c.cmd(&[&["BITCOUNT"], &args[..]].concat());
                        let want = match range {
                            _ if s < 0 && e < 0 && s > e => 0,
                            Some((a, b)) => (a..=b).filter(|&p| bit(&m, p)).count() as i64,
                            None => 0,
                        };
                        assert_eq!(r, int(want), "{at}: BITCOUNT {s} {e} {unit}");
                    } else {
                        let b = rng.below(2) == 1;
                        let bs = if b { "1" } else { "0" };
                        let r = c.cmd(&[&["BITPOS", &k, bs], &args[1..]].concat());
                        let want = if !exists {
                            if b {
                                -1
                            } else {
                                0
                            }
                        } else {
                            range
                                .and_then(|(a, z)| (a..=z).find(|&p| bit(&m, p) == b))
                                .map_or(-1, |p| p as i64)
                        };
                        assert_eq!(r, int(want), "{at}: BITPOS {bs} {s} {e} {unit}");
                    }
                }
                6 => {
                    let ops = ["AND", "OR", "XOR", "NOT"];
                    let op = ops[rng.below(4) as usize];
                    let n = if op == "NOT" { 1 } else { 1 + rng.below(3) as usize };
                    let srcs: Vec<String> = (0..n).map(|_| format!("k{}", rng.below(5))).collect();
                    let dest = format!("k{}", rng.below(4));
                    let mut args = vec!["BITOP", op, &dest];
                    args.extend(srcs.iter().map(String::as_str));
                    let r = c.cmd(&args);
                    let vals: Vec<Vec<u8>> =
                        srcs.iter().map(|s| model.get(s).cloned().unwrap_or_default()).collect();
                    let len = vals.iter().map(Vec::len).max().unwrap_or(0);
                    let out: Vec<u8> = (0..len)
                        .map(|i| {
                            let b = |v: &Vec<u8>| v.get(i).copied().unwrap_or(0);
                            match op {
                                "NOT" => !b(&vals[0]),
                                "AND" => vals.iter().fold(0xff, |a, v| a & b(v)),
                                "OR" => vals.iter().fold(0, |a, v| a | b(v)),
                                _ => vals.iter().fold(0, |a, v| a ^ b(v)),
                            }
                        })
                        .collect();
                    assert_eq!(r, int(len as i64), "{at}: BITOP {op} {dest} {srcs:?}");
                    if len == 0 {
                        model.remove(&dest);
                    } else {
                        model.insert(dest, out);
                    }
                }
                _ => {
                    let r = c.cmd(&["GET", &k]);
                    assert_eq!(r, v.map_or(Reply::Null, Reply::Bulk), "{at}: GET");
                }
            }
        }
    }
}

/// INFO's `rdb_changes_since_last_save`: a SETBIT or BITFIELD SET counts when it creates its
/// key or changes a bit, not when the bits stay as they were (bitops' "only increase dirty
/// when the value changed"); SAVE and BGSAVE start the count again.
#[test]
fn changes_since_the_last_save_count_only_writes_that_change_something() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let changes = |c: &mut Raw| -> u64 {
        let Reply::Bulk(info) = c.cmd(&["INFO", "persistence"]) else { panic!("INFO") };
        let info = String::from_utf8(info).unwrap();
        let line = info.lines().find(|l| l.starts_with("rdb_changes_since_last_save:")).unwrap();
        line["rdb_changes_since_last_save:".len()..].trim().parse().unwrap()
    };
    let start = changes(&mut c);
    assert_eq!(c.cmd(&["SETBIT", "foo", "0", "0"]), int(0));
    assert_eq!(c.cmd(&["BITFIELD", "foo2", "SET", "i5", "0", "0"]), ints(&[Some(0)]));
    assert_eq!(changes(&mut c), start + 2, "a created key always counts, once");
    c.cmd(&["SETBIT", "foo", "0", "0"]);
    c.cmd(&["BITFIELD", "foo2", "SET", "i5", "0", "0"]);
    assert_eq!(changes(&mut c), start + 2, "nothing changed");
    for v in ["1", "1", "0", "0"] {
        c.cmd(&["SETBIT", "foo", "0", v]);
        c.cmd(&["BITFIELD", "foo2", "SET", "i5", "0", v]);
    }
    assert_eq!(changes(&mut c), start + 6);
    assert_eq!(c.cmd(&["SAVE"]), Reply::Simple("OK".into()));
    assert_eq!(changes(&mut c), 0);
    c.cmd(&["SET", "k", "v"]);
    c.cmd(&["FLUSHALL"]);
    assert_eq!(changes(&mut c), 2, "SET and FLUSHALL");
    assert_eq!(c.cmd(&["BGSAVE"]), Reply::Simple("Background saving started".into()));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while changes(&mut c) != 0 {
        assert!(std::time::Instant::now() < deadline, "BGSAVE did not start the count again");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
