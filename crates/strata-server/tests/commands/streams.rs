//! Stream entries: XADD's ids (`*`, `ms-*`, explicit, the greatest, 0-0 refused), its
//! options and Redis 7.0's exact errors, XRANGE/XREVRANGE with exclusive and incomplete
//! ids and COUNT, XDEL, XTRIM (exact and by whole nodes, with LIMIT, as Redis leaves
//! them), XSETID, XLEN, XINFO STREAM's counters; and a randomized check of XADD, XDEL,
//! XTRIM, XRANGE and XREVRANGE against a model. Replies checked against redis-server 7.0.15.

use crate::common::{Raw, Reply, Rng, Server};
use std::collections::BTreeMap;

fn b(s: &str) -> Reply {
    Reply::bulk(s)
}

fn entry(id: &str, kv: &[&str]) -> Reply {
    Reply::Array(vec![b(id), Reply::Array(kv.iter().map(|s| b(s)).collect())])
}

fn err(c: &mut Raw, args: &[&str]) -> String {
    match c.cmd(args) {
        Reply::Error(e) => e,
        other => panic!("{args:?} replied {other:?}"),
    }
}

fn int(c: &mut Raw, args: &[&str]) -> i64 {
    match c.cmd(args) {
        Reply::Int(n) => n,
        other => panic!("{args:?} replied {other:?}"),
    }
}

/// The ids of an XRANGE reply.
fn ids(r: Reply) -> Vec<String> {
    let Reply::Array(items) = r else { panic!("not an array: {r:?}") };
    items
        .into_iter()
        .map(|e| match e {
            Reply::Array(mut v) => match v.remove(0) {
                Reply::Bulk(id) => String::from_utf8(id).unwrap(),
                other => panic!("id {other:?}"),
            },
            other => panic!("entry {other:?}"),
        })
        .collect()
}

/// A field of XINFO STREAM's reply.
fn info_field(c: &mut Raw, key: &str, field: &str) -> Reply {
    let Reply::Array(v) = c.cmd(&["XINFO", "STREAM", key]) else { panic!("XINFO") };
    let i = v.iter().position(|x| *x == b(field)).unwrap_or_else(|| panic!("no {field}"));
    v[i + 1].clone()
}

#[test]
fn ids_options_and_errors_follow_redis() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["XADD", "s", "1-1", "a", "1", "b", "2"]), b("1-1"));
    assert_eq!(c.cmd(&["XADD", "s", "1-*", "c", "3"]), b("1-2"));
    assert_eq!(c.cmd(&["XADD", "s", "5", "d", "4"]), b("5-0"));
    let top = "ERR The ID specified in XADD is equal or smaller than the target stream top item";
    assert_eq!(err(&mut c, &["XADD", "s", "5-0", "a", "b"]), top);
    assert_eq!(err(&mut c, &["XADD", "s", "4-*", "a", "b"]), top);
    assert_eq!(
        err(&mut c, &["XADD", "s", "0-0", "a", "b"]),
        "ERR The ID specified in XADD must be greater than 0-0"
    );
    let bad_id = "ERR Invalid stream ID specified as stream command argument";
    for id in ["-", "+", "x", "1-x", "18446744073709551616", "(5"] {
        assert_eq!(err(&mut c, &["XADD", "s", id, "a", "b"]), bad_id, "{id}");
    }
    let arity = "ERR wrong number of arguments for 'xadd' command";
    assert_eq!(err(&mut c, &["XADD", "s", "*", "a"]), arity);
    assert_eq!(err(&mut c, &["XADD", "s", "MAXLEN", "5", "a", "b"]), bad_id);
    assert_eq!(err(&mut c, &["XADD", "s", "MAXLEN", "5"]), arity);
    assert_eq!(
        err(&mut c, &["XADD", "s", "MAXLEN", "1", "MINID", "1", "*", "a", "b"]),
        "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"
    );
    assert_eq!(
        err(&mut c, &["XADD", "s", "MAXLEN", "-1", "*", "a", "b"]),
        "ERR The MAXLEN argument must be >= 0."
    );
    assert_eq!(
        err(&mut c, &["XADD", "s", "LIMIT", "5", "*", "a", "b"]),
        "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"
    );
    assert_eq!(
        err(&mut c, &["XADD", "s", "MAXLEN", "9", "LIMIT", "5", "*", "a", "b"]),
        "ERR syntax error, LIMIT cannot be used without the special ~ option"
    );
    assert_eq!(c.cmd(&["XADD", "nos", "NOMKSTREAM", "*", "a", "b"]), Reply::Null);
    assert_eq!(int(&mut c, &["EXISTS", "nos"]), 0);
    // The greatest id, then nothing more; an exhausted sequence.
    let max = "18446744073709551615-18446744073709551615";
    assert_eq!(c.cmd(&["XADD", "m", max, "a", "b"]), b(max));
    assert_eq!(
        err(&mut c, &["XADD", "m", "*", "a", "b"]),
        "ERR The stream has exhausted the last possible ID, unable to add more items"
    );
    assert_eq!(
        c.cmd(&["XADD", "q", "7-18446744073709551615", "a", "b"]),
        b("7-18446744073709551615")
    );
    assert_eq!(
        err(&mut c, &["XADD", "q", "7-*", "a", "b"]),
        "ERR Elements are too large to be stored"
    );
    // `*` after it: the time, which is later.
    let Reply::Bulk(id) = c.cmd(&["XADD", "q", "*", "a", "b"]) else { panic!("XADD *") };
    let id = String::from_utf8(id).unwrap();
    assert!(id.ends_with("-0") && id.len() > 10, "{id}");
    // Wrong types, and streams under the key commands.
    assert_eq!(c.cmd(&["SET", "str", "x"]), Reply::Simple("OK".into()));
    let wrong = "WRONGTYPE Operation against a key holding the wrong kind of value";
    for args in
        [&["XADD", "str", "*", "a", "b"][..], &["XLEN", "str"], &["XRANGE", "str", "-", "+"]]
    {
        assert_eq!(err(&mut c, args), wrong);
    }
    assert_eq!(c.cmd(&["TYPE", "s"]), Reply::Simple("stream".into()));
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "s"]), b("stream"));
}

#[test]
fn ranges_exclusive_and_incomplete_ids() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let all = [
        "0-1",
        "0-18446744073709551615",
        "1-0",
        "42-0",
        "42-42",
        "18446744073709551615-18446744073709551614",
        "18446744073709551615-18446744073709551615",
    ];
    for id in all {
        assert_eq!(c.cmd(&["XADD", "v", id, "f", "v"]), b(id));
    }
    assert_eq!(ids(c.cmd(&["XRANGE", "v", "-", "+"])), all);
    assert_eq!(ids(c.cmd(&["XRANGE", "v", "(0-1", "+"])), &all[1..]);
    assert_eq!(
        ids(c.cmd(&["XRANGE", "v", "-", "(18446744073709551615-18446744073709551615"])),
        &all[..6]
    );
    assert_eq!(ids(c.cmd(&["XRANGE", "v", "(0-1", "(1-0"])), ["0-18446744073709551615"]);
    assert_eq!(ids(c.cmd(&["XRANGE", "v", "42", "42"])), ["42-0", "42-42"]);
    assert_eq!(ids(c.cmd(&["XREVRANGE", "v", "42", "1"])), ["42-42", "42-0", "1-0"]);
    assert_eq!(
        ids(c.cmd(&["XREVRANGE", "v", "+", "-", "COUNT", "2"])),
        &["18446744073709551615-18446744073709551615", "18446744073709551615-18446744073709551614"]
    );
    assert_eq!(ids(c.cmd(&["XRANGE", "v", "2", "1"])), Vec::<String>::new());
    assert_eq!(c.cmd(&["XRANGE", "v", "-", "+", "COUNT", "0"]), Reply::Null);
    assert_eq!(c.cmd(&["XRANGE", "nokey", "-", "+", "COUNT", "0"]), Reply::Array(vec![]));
    assert_eq!(c.cmd(&["XRANGE", "v", "-", "+", "COUNT", "-3"]), Reply::Null);
    let bad_id = "ERR Invalid stream ID specified as stream command argument";
    assert_eq!(err(&mut c, &["XRANGE", "v", "(-", "+"]), bad_id);
    assert_eq!(err(&mut c, &["XRANGE", "v", "-", "(+"]), bad_id);
    assert_eq!(
        err(&mut c, &["XRANGE", "v", "(18446744073709551615-18446744073709551615", "+"]),
        "ERR invalid start ID for the interval"
    );
    assert_eq!(err(&mut c, &["XRANGE", "v", "-", "(0-0"]), "ERR invalid end ID for the interval");
    assert_eq!(err(&mut c, &["XRANGE", "v", "-", "+", "COUNT"]), "ERR syntax error");
    assert_eq!(
        err(&mut c, &["XRANGE", "v", "-", "+", "COUNT", "x"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(c.cmd(&["XADD", "e", "1-0", "a", "1", "a", "2"]), b("1-0"));
    assert_eq!(
        c.cmd(&["XRANGE", "e", "-", "+"]),
        Reply::Array(vec![entry("1-0", &["a", "1", "a", "2"])])
    );
}

#[test]
fn deleting_trimming_and_set_id() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    for i in 1..=5 {
        c.cmd(&["XADD", "x", &format!("{i}-0"), "data", "a"]);
    }
    assert_eq!(int(&mut c, &["XDEL", "x", "2-0", "2-0", "9-0"]), 1);
    assert_eq!(info_field(&mut c, "x", "recorded-first-entry-id"), b("1-0"));
    assert_eq!(int(&mut c, &["XDEL", "x", "1-0"]), 1);
    assert_eq!(info_field(&mut c, "x", "recorded-first-entry-id"), b("3-0"));
    assert_eq!(info_field(&mut c, "x", "max-deleted-entry-id"), b("2-0"));
    assert_eq!(int(&mut c, &["XTRIM", "x", "MAXLEN", "=", "2"]), 1);
    assert_eq!(info_field(&mut c, "x", "recorded-first-entry-id"), b("4-0"));
    assert_eq!(info_field(&mut c, "x", "entries-added"), Reply::Int(5));
    assert_eq!(int(&mut c, &["XDEL", "nokey", "garbage"]), 0);
    assert_eq!(
        err(&mut c, &["XDEL", "x", "garbage"]),
        "ERR Invalid stream ID specified as stream command argument"
    );
    assert_eq!(
        err(&mut c, &["XTRIM", "x", "LIMIT", "0"]),
        "ERR syntax error, XTRIM must be called with a trimming strategy"
    );
    assert_eq!(
        err(&mut c, &["XTRIM", "x", "LIMIT", "1"]),
        "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"
    );
    assert_eq!(int(&mut c, &["XTRIM", "x", "MINID", "5"]), 1);
    assert_eq!(int(&mut c, &["XDEL", "x", "5-0"]), 1);
    assert_eq!(int(&mut c, &["XLEN", "x"]), 0);
    assert_eq!(int(&mut c, &["EXISTS", "x"]), 1, "an emptied stream stays");
    assert_eq!(info_field(&mut c, "x", "recorded-first-entry-id"), b("0-0"));
    // An empty stream made by MAXLEN 0; XSETID and its checks.
    assert_eq!(c.cmd(&["XADD", "e", "MAXLEN", "0", "7-0", "a", "b"]), b("7-0"));
    assert_eq!(info_field(&mut c, "e", "length"), Reply::Int(0));
    assert_eq!(c.cmd(&["XSETID", "e", "200-0"]), Reply::Simple("OK".into()));
    assert_eq!(info_field(&mut c, "e", "last-generated-id"), b("200-0"));
    c.cmd(&["XADD", "e", "300-0", "a", "b"]);
    assert_eq!(
        err(&mut c, &["XSETID", "e", "1-1"]),
        "ERR The ID specified in XSETID is smaller than the target stream top item"
    );
    assert_eq!(
        err(&mut c, &["XSETID", "e", "400-0", "ENTRIESADDED", "0", "MAXDELETEDID", "0-0"]),
        "ERR The entries_added specified in XSETID is smaller than the target stream length"
    );
    assert_eq!(
        err(&mut c, &["XSETID", "e", "400-0", "ENTRIESADDED", "5", "MAXDELETEDID", "500-0"]),
        "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"
    );
    assert_eq!(
        err(&mut c, &["XSETID", "e", "400-0", "ENTRIESADDED", "-1"]),
        "ERR entries_added must be positive"
    );
    assert_eq!(err(&mut c, &["XSETID", "nokey", "1-1"]), "ERR no such key");
    assert_eq!(err(&mut c, &["XSETID", "e", "1-1", "0"]), "ERR syntax error");
    let ok = c.cmd(&["XSETID", "e", "400-0", "ENTRIESADDED", "9", "MAXDELETEDID", "350-0"]);
    assert_eq!(ok, Reply::Simple("OK".into()));
    assert_eq!(info_field(&mut c, "e", "entries-added"), Reply::Int(9));
    assert_eq!(info_field(&mut c, "e", "max-deleted-entry-id"), b("350-0"));
}

#[test]
fn approximate_trims_remove_the_nodes_redis_removes() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    for j in 0..1000 {
        c.cmd(&["XADD", "s", "MAXLEN", "~", "555", "*", "xitem", &j.to_string()]);
    }
    assert_eq!(int(&mut c, &["XLEN", "s"]), 600);
    c.cmd(&["DEL", "s"]);
    for j in 0..1000 {
        c.cmd(&["XADD", "s", "*", "xitem", &j.to_string()]);
    }
    assert_eq!(int(&mut c, &["XTRIM", "s", "MAXLEN", "666"]), 334);
    assert_eq!(int(&mut c, &["XTRIM", "s", "MAXLEN", "=", "555"]), 111);
    assert_eq!(int(&mut c, &["XTRIM", "s", "MAXLEN", "~", "444"]), 55);
    assert_eq!(int(&mut c, &["XLEN", "s"]), 500);
    assert_eq!(int(&mut c, &["XTRIM", "s", "MAXLEN", "~", "400"]), 100);
    assert_eq!(info_field(&mut c, "s", "radix-tree-keys"), Reply::Int(4));
    // LIMIT bounds the work; a node size of 10.
    c.cmd(&["CONFIG", "SET", "stream-node-max-entries", "10"]);
    c.cmd(&["DEL", "s"]);
    for _ in 0..100 {
        c.cmd(&["XADD", "s", "*", "xitem", "v"]);
    }
    c.cmd(&["XADD", "s", "MAXLEN", "~", "55", "LIMIT", "30", "*", "xitem", "v"]);
    assert_eq!(int(&mut c, &["XLEN", "s"]), 71);
    c.cmd(&["XADD", "s", "MAXLEN", "~", "55", "LIMIT", "30", "*", "xitem", "v"]);
    assert_eq!(int(&mut c, &["XLEN", "s"]), 62);
    c.cmd(&["CONFIG", "SET", "stream-node-max-entries", "2"]);
    c.cmd(&["DEL", "s"]);
    for _ in 0..3 {
        c.cmd(&["XADD", "s", "*", "xitem", "v"]);
    }
    assert_eq!(int(&mut c, &["XTRIM", "s", "MAXLEN", "~", "0", "LIMIT", "1"]), 0);
    assert_eq!(int(&mut c, &["XTRIM", "s", "MAXLEN", "~", "0", "LIMIT", "2"]), 2);
    // XDEL of a node's every entry removes the node.
    assert_eq!(info_field(&mut c, "s", "radix-tree-keys"), Reply::Int(1));
    let last = ids(c.cmd(&["XRANGE", "s", "-", "+"]));
    assert_eq!(int(&mut c, &["XDEL", "s", &last[0]]), 1);
    assert_eq!(info_field(&mut c, "s", "radix-tree-keys"), Reply::Int(0));
    c.cmd(&["CONFIG", "SET", "stream-node-max-entries", "100"]);
}

/// A model stream: id -> value, and the counters XINFO shows.
#[derive(Default)]
struct Model {
    entries: BTreeMap<(u64, u64), String>,
    last: (u64, u64),
}

fn id_str(id: (u64, u64)) -> String {
    format!("{}-{}", id.0, id.1)
}

fn random_bound(rng: &mut Rng) -> ((u64, u64), String) {
    let ms = rng.below(60);
    match rng.below(4) {
        0 => ((ms, 0), ms.to_string()),
        1 => ((ms, 0), format!("{ms}-0")),
        _ => {
            let seq = rng.below(3);
            ((ms, seq), format!("{ms}-{seq}"))
        }
    }
}

#[test]
fn streams_match_model() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    for seed in 1..=3u64 {
        c.cmd(&["FLUSHALL"]);
        c.cmd(&["CONFIG", "SET", "stream-node-max-entries", &(2 + seed * 3).to_string()]);
        let mut m = Model::default();
        let mut rng = Rng::new(seed);
        for step in 0..600 {
            match rng.below(10) {
                0..=3 => {
                    // An id above the last: a new ms, or the next sequence.
                    let id = if rng.below(2) == 0 {
                        (m.last.0 + 1 + rng.below(2), rng.below(3))
                    } else {
                        (m.last.0, m.last.1 + 1)
                    };
                    let v = format!("v{step}");
                    let got = c.cmd(&["XADD", "s", &id_str(id), "f", &v]);
                    assert_eq!(got, b(&id_str(id)), "seed {seed} step {step}");
                    m.entries.insert(id, v);
                    m.last = id;
                }
                4 => {
                    let n = 1 + rng.below(3);
                    let picks: Vec<(u64, u64)> = (0..n)
                        .map(|_| {
                            let keys: Vec<_> = m.entries.keys().copied().collect();
                            if keys.is_empty() || rng.below(4) == 0 {
                                (rng.below(60), rng.below(3))
                            } else {
                                keys[rng.below(keys.len() as u64) as usize]
                            }
                        })
                        .collect();
                    let mut args = vec!["XDEL".to_string(), "s".to_string()];
                    args.extend(picks.iter().map(|p| id_str(*p)));
                    let a: Vec<&str> = args.iter().map(String::as_str).collect();
                    let want = picks
                        .iter()
                        .collect::<std::collections::BTreeSet<_>>()
                        .into_iter()
                        .filter(|p| m.entries.remove(p).is_some())
                        .count();
                    assert_eq!(int(&mut c, &a), want as i64, "seed {seed} step {step}");
                }
                5 => {
                    // Exact trims remove what the model says; `~` ones whole nodes, so no
                    // more than that, and always the oldest entries.
                    let exact = rng.below(2) == 0;
                    let mode = if exact { "=" } else { "~" };
                    let before: Vec<(u64, u64)> = m.entries.keys().copied().collect();
                    let (removed, most) = if rng.below(2) == 0 {
                        let n = rng.below(before.len() as u64 + 3);
                        let got = int(&mut c, &["XTRIM", "s", "MAXLEN", mode, &n.to_string()]);
                        (got as usize, before.len().saturating_sub(n as usize))
                    } else {
                        let (bound, text) = random_bound(&mut rng);
                        let got = int(&mut c, &["XTRIM", "s", "MINID", mode, &text]);
                        (got as usize, before.iter().filter(|p| **p < bound).count())
                    };
                    if exact {
                        assert_eq!(removed, most, "seed {seed} step {step}: exact trim");
                    } else {
                        assert!(removed <= most, "seed {seed} step {step}: {removed} > {most}");
                    }
                    let want: Vec<String> = before[removed..].iter().map(|p| id_str(*p)).collect();
                    assert_eq!(
                        ids(c.cmd(&["XRANGE", "s", "-", "+"])),
                        want,
                        "seed {seed} step {step}"
                    );
                    for p in &before[..removed] {
                        m.entries.remove(p);
                    }
                }
                6 | 7 => {
                    let (lo, lo_text) = random_bound(&mut rng);
                    let (hi, hi_text) = random_bound(&mut rng);
                    // An incomplete end takes the greatest sequence.
                    let hi = if hi_text.contains('-') { hi } else { (hi.0, u64::MAX) };
                    let count = rng.below(5);
                    let rev = rng.below(2) == 0;
                    let mut args: Vec<&str> = if rev {
                        vec!["XREVRANGE", "s", &hi_text, &lo_text]
                    } else {
                        vec!["XRANGE", "s", &lo_text, &hi_text]
                    };
                    let count_text = count.to_string();
                    if count > 0 {
                        args.extend(["COUNT", &count_text]);
                    }
                    let mut want: Vec<String> = m
                        .entries
                        .range(lo..=hi.max(lo))
                        .filter(|(k, _)| **k <= hi)
                        .map(|(k, _)| id_str(*k))
                        .collect();
                    if rev {
                        want.reverse();
                    }
                    if count > 0 {
                        want.truncate(count as usize);
                    }
                    assert_eq!(ids(c.cmd(&args)), want, "seed {seed} step {step}: {args:?}");
                }
                _ => {
                    assert_eq!(int(&mut c, &["XLEN", "s"]), m.entries.len() as i64);
                    if let Some((first, _)) = m.entries.iter().next() {
                        assert_eq!(
                            info_field(&mut c, "s", "recorded-first-entry-id"),
                            b(&id_str(*first))
                        );
                    }
                }
            }
        }
        let all: Vec<String> = m.entries.keys().map(|k| id_str(*k)).collect();
        assert_eq!(ids(c.cmd(&["XRANGE", "s", "-", "+"])), all, "seed {seed}");
    }
    c.cmd(&["CONFIG", "SET", "stream-node-max-entries", "100"]);
}
