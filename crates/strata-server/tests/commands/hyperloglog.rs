//! HyperLogLogs through a running server: counts, bytes and errors as redis-server 7.0.15
//! gives them (the expected values are its replies), its HLLs read here, the cached count,
//! and PFADD, PFMERGE and PFCOUNT against a model of each key's registers (dense keys'
//! changes stored as register deltas, some flushed to tables above their base).

use crate::common::{field_deltas, Raw, Reply, Rng, Server};
use strata_server::types::hll::estimate::{count_registers, place, REGISTERS};

fn cmd_bytes(c: &mut Raw, args: &[&[u8]]) -> Reply {
    c.send_raw(&Raw::encode(args));
    c.try_read().expect("a reply")
}

fn registers(c: &mut Raw, key: &str) -> Vec<u8> {
    match c.cmd(&["PFDEBUG", "GETREG", key]) {
        Reply::Array(v) => v
            .into_iter()
            .map(|r| match r {
                Reply::Int(n) => u8::try_from(n).unwrap(),
                other => panic!("{other:?}"),
            })
            .collect(),
        other => panic!("{other:?}"),
    }
}

/// redis-server's value after `PFADD k a b c`: sparse, its count stale.
const ABC: &[u8] = b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\
                    \x60\xf3\x80\x50\xb1\x84\x4b\xfb\x80\x42\x5a";

/// redis-server's value after `PFADD r r0 ... r19` (sparse; it counts 20).
const R20: &str = "48594c4c010000000000000000000080459180435a8041bf8040c380468d8442f4801c8048e9\
                   8040ec80414e84208442aa8047cc8c43b28042da80438e80406f80420d88418b84456680418d";

#[test]
fn counts_and_bytes_are_redis_s() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["PFADD", "k", "a", "b", "c"]), Reply::Int(1));
    assert_eq!(c.cmd(&["GET", "k"]), Reply::Bulk(ABC.to_vec()));
    assert_eq!(c.cmd(&["PFCOUNT", "k"]), Reply::Int(3));
    // Counts redis-server gives for the same elements, sparse (200) and dense (10,000).
    for (n, want) in [(200, 199), (1000, 1006), (5000, 5044)] {
        let key = format!("x{n}");
        let elements: Vec<String> = (0..n).map(|i| format!("x{n}-{i}")).collect();
        let mut line = vec!["PFADD", key.as_str()];
        line.extend(elements.iter().map(String::as_str));
        c.cmd(&line);
        assert_eq!(c.cmd(&["PFCOUNT", &key]), Reply::Int(want), "{n} elements");
    }
    for batch in 0..100 {
        let elements: Vec<String> = (0..100).map(|i| format!("x{}", batch * 100 + i)).collect();
        let mut line = vec!["PFADD", "u"];
        line.extend(elements.iter().map(String::as_str));
        c.cmd(&line);
    }
    assert_eq!(c.cmd(&["PFCOUNT", "u"]), Reply::Int(10066));
    assert_eq!(c.cmd(&["PFDEBUG", "ENCODING", "u"]), Reply::Simple("dense".into()));
    assert_eq!(c.cmd(&["STRLEN", "u"]), Reply::Int(12304));
    // A sparse value redis-server wrote, read here: its count, its opcodes, no change.
    let r20: Vec<u8> = (0..R20.len() / 2)
        .map(|i| u8::from_str_radix(&R20[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    assert_eq!(cmd_bytes(&mut c, &[b"SET", b"r", &r20]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["PFCOUNT", "r"]), Reply::Int(20));
    match c.cmd(&["PFDEBUG", "DECODE", "r"]) {
        Reply::Bulk(b) => assert!(b.starts_with(b"Z:1426 v:1,1 Z:859 v:1,1"), "{b:?}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(c.cmd(&["PFADD", "r", "r0", "r19"]), Reply::Int(0));
    assert_eq!(c.cmd(&["PFCOUNT", "r", "k"]), Reply::Int(23));
}

#[test]
fn the_cached_count_and_the_expiry_are_kept_as_redis_keeps_them() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["PFADD", "h"]), Reply::Int(1), "a new key is a change");
    assert_eq!(c.cmd(&["PFADD", "h"]), Reply::Int(0));
    assert_eq!(c.cmd(&["PFADD", "h", "a"]), Reply::Int(1));
    assert_eq!(c.cmd(&["GETRANGE", "h", "15", "15"]), Reply::Bulk(vec![0x80]));
    assert_eq!(c.cmd(&["PFCOUNT", "h"]), Reply::Int(1));
    assert_eq!(c.cmd(&["GETRANGE", "h", "15", "15"]), Reply::Bulk(vec![0x00]));
    assert_eq!(c.cmd(&["GETRANGE", "h", "8", "8"]), Reply::Bulk(vec![0x01]));
    assert_eq!(c.cmd(&["PFADD", "h", "a"]), Reply::Int(0));
    assert_eq!(c.cmd(&["GETRANGE", "h", "15", "15"]), Reply::Bulk(vec![0x00]));
    assert_eq!(c.cmd(&["EXPIRE", "h", "100"]), Reply::Int(1));
    assert_eq!(c.cmd(&["PFADD", "h", "b"]), Reply::Int(1));
    assert_eq!(c.cmd(&["PFMERGE", "h", "h"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["PFCOUNT", "h"]), Reply::Int(2));
    assert!(matches!(c.cmd(&["TTL", "h"]), Reply::Int(t) if t > 90), "the expiry stays");
    // PFMERGE of nothing but an absent key makes an empty HLL; TODENSE once.
    assert_eq!(c.cmd(&["PFMERGE", "e"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["PFCOUNT", "e"]), Reply::Int(0));
    assert_eq!(c.cmd(&["PFDEBUG", "TODENSE", "e"]), Reply::Int(1));
    assert_eq!(c.cmd(&["PFDEBUG", "TODENSE", "e"]), Reply::Int(0));
    assert_eq!(c.cmd(&["PFSELFTEST"]), Reply::Simple("OK".into()));
    // Inside EXEC and a script, a count sees the adds before it.
    c.cmd(&["MULTI"]);
    for line in
        [&["PFADD", "t", "a"][..], &["PFCOUNT", "t"], &["PFADD", "t", "b"], &["PFCOUNT", "t"]]
    {
        assert_eq!(c.cmd(line), Reply::Simple("QUEUED".into()));
    }
    let counts = [Reply::Int(1), Reply::Int(1), Reply::Int(1), Reply::Int(2)];
    assert_eq!(c.cmd(&["EXEC"]), Reply::Array(counts.to_vec()));
    let script = "redis.call('pfadd', KEYS[1], 'x', 'y') return redis.call('pfcount', KEYS[1])";
    assert_eq!(c.cmd(&["EVAL", script, "1", "t"]), Reply::Int(4));
}

#[test]
fn errors_are_redis_s() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let err = |c: &mut Raw, line: &[&str]| match c.cmd(line) {
        Reply::Error(e) => e,
        other => panic!("{line:?}: {other:?}"),
    };
    const WRONG: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
    const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
    const CORRUPT: &str = "INVALIDOBJ Corrupted HLL object detected";
    c.cmd(&["RPUSH", "l", "a"]);
    assert_eq!(err(&mut c, &["PFADD", "l", "x"]), WRONG);
    assert_eq!(err(&mut c, &["PFCOUNT", "l"]), WRONG);
    assert_eq!(err(&mut c, &["PFMERGE", "x", "l"]), WRONG);
    c.cmd(&["SET", "s", "hello"]);
    assert_eq!(err(&mut c, &["PFADD", "s", "x"]), NOT_HLL);
    assert_eq!(err(&mut c, &["PFCOUNT", "s", "t"]), NOT_HLL);
    assert_eq!(err(&mut c, &["PFMERGE", "s", "t"]), NOT_HLL);
    // Damaged headers and opcodes (unit/hyperloglog's cases).
    c.cmd(&["PFADD", "c", "a", "b", "c"]);
    c.cmd(&["APPEND", "c", "hello"]);
    assert_eq!(err(&mut c, &["PFCOUNT", "c"]), CORRUPT);
    c.cmd(&["DEL", "c"]);
    c.cmd(&["PFADD", "c", "a", "b", "c"]);
    c.cmd(&["SETRANGE", "c", "4", "x"]);
    assert_eq!(err(&mut c, &["PFCOUNT", "c"]), NOT_HLL);
    c.cmd(&["SETRANGE", "c", "4", "\x00"]);
    assert_eq!(err(&mut c, &["PFCOUNT", "c"]), NOT_HLL, "dense of the wrong length");
    // PFDEBUG.
    assert_eq!(
        err(&mut c, &["PFDEBUG", "GETREG", "nokey"]),
        "ERR The specified key does not exist"
    );
    assert_eq!(err(&mut c, &["PFDEBUG", "NOPE", "nokey"]), "ERR The specified key does not exist");
    c.cmd(&["PFADD", "h", "a"]);
    assert_eq!(err(&mut c, &["PFDEBUG", "NOPE", "h"]), "ERR Unknown PFDEBUG subcommand 'NOPE'");
    c.cmd(&["PFDEBUG", "TODENSE", "h"]);
    assert_eq!(err(&mut c, &["PFDEBUG", "DECODE", "h"]), "ERR HLL encoding is not sparse");
    assert_eq!(err(&mut c, &["PFADD"]), "ERR wrong number of arguments for 'pfadd' command");
}

#[test]
fn hll_writes_match_a_model() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    for seed in 1..=3u64 {
        c.cmd(&["FLUSHALL"]);
        // A small sparse limit so that keys turn dense within the run.
        c.cmd(&["CONFIG", "SET", "hll-sparse-max-bytes", if seed == 2 { "0" } else { "400" }]);
        let mut rng = Rng::new(seed);
        let keys = ["p0", "p1", "p2"];
        let mut model: Vec<Option<Vec<u8>>> = vec![None; keys.len()];
        for step in 0..300 {
            let k = rng.below(3) as usize;
            let (got, want) = match rng.below(5) {
                0 | 1 => {
                    let n = [0, 1, 3, 40][rng.below(4) as usize];
                    let elements: Vec<String> =
                        (0..n).map(|_| format!("e{}", rng.below(3000))).collect();
                    let regs = &mut model[k];
                    let created = regs.is_none();
                    let r = regs.get_or_insert_with(|| vec![0; REGISTERS]);
                    let mut changed = created;
                    for e in &elements {
                        let (i, v) = place(e.as_bytes());
                        if r[i] < v {
                            r[i] = v;
                            changed = true;
                        }
                    }
                    let mut line = vec!["PFADD", keys[k]];
                    line.extend(elements.iter().map(String::as_str));
                    (c.cmd(&line), Reply::Int(i64::from(changed)))
                }
                2 => {
                    let src = rng.below(3) as usize;
                    let mut merged = model[k].clone().unwrap_or_else(|| vec![0; REGISTERS]);
                    for (m, s) in merged.iter_mut().zip(model[src].iter().flatten()) {
                        *m = (*m).max(*s);
                    }
                    model[k] = Some(merged);
                    (c.cmd(&["PFMERGE", keys[k], keys[src]]), Reply::Simple("OK".into()))
                }
                3 => {
                    let want = model[k].as_deref().map_or(0, count_registers);
                    (c.cmd(&["PFCOUNT", keys[k]]), Reply::Int(want as i64))
                }
                _ => {
                    let mut union = vec![0; REGISTERS];
                    for regs in model.iter().flatten() {
                        for (u, r) in union.iter_mut().zip(regs) {
                            *u = (*u).max(*r);
                        }
                    }
                    let want = count_registers(&union) as i64;
                    (c.cmd(&["PFCOUNT", "p0", "p1", "p2"]), Reply::Int(want))
                }
            };
            assert_eq!(got, want, "seed {seed} step {step}");
            if step % 100 == 99 {
                // A flush: register deltas in tables above their base, merged by reads.
                assert_eq!(c.cmd(&["SAVE"]), Reply::Simple("OK".into()));
            }
        }
        for (k, regs) in keys.iter().zip(&model) {
            match regs {
                None => assert_eq!(c.cmd(&["EXISTS", k]), Reply::Int(0)),
                Some(r) => assert_eq!(&registers(&mut c, k), r, "seed {seed}: {k}"),
            }
        }
    }
    assert!(field_deltas(&mut c) > 0, "no PFADD was stored as a register delta");
}
