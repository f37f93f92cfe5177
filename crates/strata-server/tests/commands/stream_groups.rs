//! Consumer groups and reads: XGROUP's subcommands, XREADGROUP (`>`, history, NOACK),
//! XACK, XPENDING, XCLAIM, XAUTOCLAIM, XINFO GROUPS/CONSUMERS/STREAM FULL with Redis 7.0's
//! read counters and lag; XREAD and XREADGROUP with BLOCK (served by a later XADD, `$`,
//! a deleted stream or group); and streams under the key commands (RENAME, COPY, SCAN
//! TYPE, EXPIRE) and across a restart. Replies checked against redis-server 7.0.15.

use crate::common::{blocked_clients, wait_blocked, Raw, Reply, Server};
use std::time::Duration;

fn b(s: &str) -> Reply {
    Reply::bulk(s)
}

fn arr(v: Vec<Reply>) -> Reply {
    Reply::Array(v)
}

fn entry(id: &str, kv: &[&str]) -> Reply {
    arr(vec![b(id), arr(kv.iter().map(|s| b(s)).collect())])
}

/// `[[key, entries]]`, XREAD's reply for one stream.
fn read_reply(key: &str, entries: Vec<Reply>) -> Reply {
    arr(vec![arr(vec![b(key), arr(entries)])])
}

fn err(c: &mut Raw, args: &[&str]) -> String {
    match c.cmd(args) {
        Reply::Error(e) => e,
        other => panic!("{args:?} replied {other:?}"),
    }
}

fn ok(c: &mut Raw, args: &[&str]) {
    assert_eq!(c.cmd(args), Reply::Simple("OK".into()), "{args:?}");
}

/// A field of a flat map reply.
fn field(r: &Reply, name: &str) -> Reply {
    let Reply::Array(v) = r else { panic!("not a map: {r:?}") };
    let i = v.iter().position(|x| *x == b(name)).unwrap_or_else(|| panic!("no {name} in {r:?}"));
    v[i + 1].clone()
}

/// The first group of XINFO STREAM key FULL.
fn full_group(c: &mut Raw, key: &str, i: usize) -> Reply {
    let Reply::Array(groups) = field(&c.cmd(&["XINFO", "STREAM", key, "FULL"]), "groups") else {
        panic!("groups")
    };
    groups[i].clone()
}

#[test]
fn groups_read_ack_pending_and_errors() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(
        err(&mut c, &["XGROUP", "CREATE", "s", "g", "$"]),
        "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may \
         want to use the MKSTREAM option to create an empty stream automatically."
    );
    ok(&mut c, &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    assert_eq!(
        err(&mut c, &["XGROUP", "CREATE", "s", "g", "$"]),
        "BUSYGROUP Consumer Group name already exists"
    );
    assert_eq!(err(&mut c, &["XGROUP", "FOO"]), "ERR unknown subcommand 'FOO'. Try XGROUP HELP.");
    assert_eq!(
        err(&mut c, &["XGROUP", "help", "x"]),
        "ERR wrong number of arguments for 'xgroup|help' command"
    );
    assert_eq!(
        err(&mut c, &["XGROUP", "SETID", "s", "nog", "0"]),
        "NOGROUP No such consumer group 'nog' for key name 's'"
    );
    assert_eq!(
        err(&mut c, &["XGROUP", "CREATE", "s", "g2", "0", "ENTRIESREAD", "-2"]),
        "ERR value for ENTRIESREAD must be positive or -1"
    );
    assert_eq!(
        err(&mut c, &["XGROUP", "SETID", "s", "g", "0", "MKSTREAM"]),
        "ERR unknown subcommand or wrong number of arguments for 'SETID'. Try XGROUP HELP."
    );
    for i in 1..=5 {
        c.cmd(&["XADD", "s", &format!("{i}-0"), "f", &i.to_string()]);
    }
    let got = c.cmd(&["XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">"]);
    assert_eq!(got, read_reply("s", vec![entry("1-0", &["f", "1"]), entry("2-0", &["f", "2"])]));
    c.cmd(&["XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "STREAMS", "s", ">"]);
    c.cmd(&["XREADGROUP", "GROUP", "g", "bob", "NOACK", "COUNT", "1", "STREAMS", "s", ">"]);
    let Reply::Array(summary) = c.cmd(&["XPENDING", "s", "g"]) else { panic!("XPENDING") };
    assert_eq!(summary[0], Reply::Int(3));
    assert_eq!(&summary[1..3], &[b("1-0"), b("3-0")]);
    assert_eq!(summary[3], arr(vec![arr(vec![b("alice"), b("2")]), arr(vec![b("bob"), b("1")])]));
    // History: the consumer's own pending entries; a deleted one as [id, nil].
    c.cmd(&["XDEL", "s", "2-0"]);
    let got = c.cmd(&["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0"]);
    assert_eq!(
        got,
        read_reply("s", vec![entry("1-0", &["f", "1"]), arr(vec![b("2-0"), Reply::Null])])
    );
    let Reply::Array(p) = c.cmd(&["XPENDING", "s", "g", "-", "+", "10", "alice"]) else {
        panic!("XPENDING range")
    };
    assert_eq!(p.len(), 2);
    let Reply::Array(first) = &p[0] else { panic!() };
    assert_eq!((&first[0], &first[1], &first[3]), (&b("1-0"), &b("alice"), &Reply::Int(2)));
    assert_eq!(c.cmd(&["XACK", "s", "g", "1-0", "1-0", "9-0"]), Reply::Int(1));
    assert_eq!(
        err(&mut c, &["XACK", "s", "g", "3-0", "bad"]),
        "ERR Invalid stream ID specified as stream command argument"
    );
    assert_eq!(c.cmd(&["XACK", "s", "nog", "bad"]), Reply::Int(0));
    assert_eq!(
        err(&mut c, &["XPENDING", "s", "nog"]),
        "NOGROUP No such key 's' or consumer group 'nog'"
    );
    assert_eq!(err(&mut c, &["XPENDING", "s", "g", "-", "+"]), "ERR syntax error");
    assert_eq!(
        err(&mut c, &["XREADGROUP", "GROUP", "nog", "a", "STREAMS", "s", ">"]),
        "NOGROUP No such key 's' or consumer group 'nog' in XREADGROUP with GROUP option"
    );
    assert_eq!(
        err(&mut c, &["XREAD", "STREAMS", "s", ">"]),
        "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> \
         <consumer> option."
    );
    assert_eq!(
        err(&mut c, &["XREAD", "STREAMS", "s", "x", "0"]),
        "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be \
         specified."
    );
    // Consumers: created by reads and CREATECONSUMER, deleted with their entries.
    assert_eq!(c.cmd(&["XGROUP", "CREATECONSUMER", "s", "g", "carol"]), Reply::Int(1));
    assert_eq!(c.cmd(&["XGROUP", "CREATECONSUMER", "s", "g", "carol"]), Reply::Int(0));
    let Reply::Array(cs) = c.cmd(&["XINFO", "CONSUMERS", "s", "g"]) else { panic!() };
    let names: Vec<Reply> = cs.iter().map(|x| field(x, "name")).collect();
    assert_eq!(names, [b("alice"), b("bob"), b("carol")]);
    assert_eq!(c.cmd(&["XGROUP", "DELCONSUMER", "s", "g", "alice"]), Reply::Int(1));
    let bob = arr(vec![arr(vec![b("bob"), b("1")])]);
    assert_eq!(c.cmd(&["XPENDING", "s", "g"]), arr(vec![Reply::Int(1), b("3-0"), b("3-0"), bob]));
    assert_eq!(c.cmd(&["XGROUP", "DESTROY", "s", "g"]), Reply::Int(1));
    assert_eq!(c.cmd(&["XGROUP", "DESTROY", "s", "g"]), Reply::Int(0));
    assert_eq!(c.cmd(&["XINFO", "GROUPS", "s"]), arr(vec![]));
}

#[test]
fn read_counters_and_lag_follow_redis() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    for i in 1..=5 {
        c.cmd(&["XADD", "x", &format!("{i}-0"), "data", "v"]);
    }
    c.cmd(&["XDEL", "x", "3-0"]);
    ok(&mut c, &["XGROUP", "CREATE", "x", "g1", "0"]);
    ok(&mut c, &["XGROUP", "CREATE", "x", "g2", "0"]);
    let g = full_group(&mut c, "x", 0);
    assert_eq!((field(&g, "entries-read"), field(&g, "lag")), (Reply::Null, Reply::Null));
    for _ in 0..3 {
        c.cmd(&["XREADGROUP", "GROUP", "g1", "c", "COUNT", "1", "STREAMS", "x", ">"]);
        let g = full_group(&mut c, "x", 0);
        assert_eq!((field(&g, "entries-read"), field(&g, "lag")), (Reply::Null, Reply::Null));
    }
    c.cmd(&["XREADGROUP", "GROUP", "g1", "c", "COUNT", "1", "STREAMS", "x", ">"]);
    let g = full_group(&mut c, "x", 0);
    assert_eq!((field(&g, "entries-read"), field(&g, "lag")), (Reply::Int(5), Reply::Int(0)));
    c.cmd(&["XADD", "x", "6-0", "data", "f"]);
    c.cmd(&["XTRIM", "x", "MINID", "=", "3-0"]);
    let g1 = full_group(&mut c, "x", 0);
    assert_eq!((field(&g1, "entries-read"), field(&g1, "lag")), (Reply::Int(5), Reply::Int(1)));
    let g2 = full_group(&mut c, "x", 1);
    assert_eq!((field(&g2, "entries-read"), field(&g2, "lag")), (Reply::Null, Reply::Int(3)));
    c.cmd(&["XTRIM", "x", "MINID", "=", "5-0"]);
    let g2 = full_group(&mut c, "x", 1);
    assert_eq!(field(&g2, "lag"), Reply::Int(2));
    // XINFO GROUPS shows the same counters; FULL's pending lists follow COUNT.
    let Reply::Array(groups) = c.cmd(&["XINFO", "GROUPS", "x"]) else { panic!() };
    assert_eq!(field(&groups[0], "entries-read"), Reply::Int(5));
    assert_eq!(field(&groups[0], "pending"), Reply::Int(4));
    let g1 = {
        let r = c.cmd(&["XINFO", "STREAM", "x", "FULL", "COUNT", "1"]);
        let Reply::Array(gs) = field(&r, "groups") else { panic!() };
        assert_eq!(field(&r, "entries"), arr(vec![entry("5-0", &["data", "v"])]));
        gs[0].clone()
    };
    let Reply::Array(pending) = field(&g1, "pending") else { panic!() };
    assert_eq!(pending.len(), 1);
}

#[test]
fn claims_move_pending_entries() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    for i in 1..=3 {
        c.cmd(&["XADD", "x", &format!("{i}-0"), "f", "v"]);
    }
    ok(&mut c, &["XGROUP", "CREATE", "x", "grp", "0"]);
    c.cmd(&["XREADGROUP", "GROUP", "grp", "Alice", "STREAMS", "x", ">"]);
    c.cmd(&["XDEL", "x", "2-0"]);
    let got = c.cmd(&["XCLAIM", "x", "grp", "Bob", "0", "1-0", "2-0", "3-0"]);
    assert_eq!(got, arr(vec![entry("1-0", &["f", "v"]), entry("3-0", &["f", "v"])]));
    assert_eq!(c.cmd(&["XPENDING", "x", "grp", "-", "+", "10", "Alice"]), arr(vec![]));
    let Reply::Array(p) = c.cmd(&["XPENDING", "x", "grp", "-", "+", "10"]) else { panic!() };
    let Reply::Array(first) = &p[0] else { panic!() };
    assert_eq!((&first[1], &first[3]), (&b("Bob"), &Reply::Int(2)));
    let got = c.cmd(&["XCLAIM", "x", "grp", "Carol", "0", "1-0", "JUSTID", "RETRYCOUNT", "9"]);
    assert_eq!(got, arr(vec![b("1-0")]));
    assert_eq!(
        err(&mut c, &["XCLAIM", "x", "grp", "Carol", "0", "1-0", "BOGUS"]),
        "ERR Unrecognized XCLAIM option 'BOGUS'"
    );
    assert_eq!(
        err(&mut c, &["XCLAIM", "x", "grp", "Carol", "x", "1-0"]),
        "ERR Invalid min-idle-time argument for XCLAIM"
    );
    assert_eq!(
        err(&mut c, &["XCLAIM", "x", "nog", "Carol", "0", "1-0"]),
        "NOGROUP No such key 'x' or consumer group 'nog'"
    );
    // FORCE creates a PEL entry for an entry never delivered.
    c.cmd(&["XADD", "x", "4-0", "f", "v"]);
    assert_eq!(
        c.cmd(&["XCLAIM", "x", "grp", "Dan", "0", "4-0", "FORCE", "JUSTID"]),
        arr(vec![b("4-0")])
    );
    // XAUTOCLAIM: deleted entries go to the third element; the cursor.
    c.cmd(&["XDEL", "x", "1-0"]);
    let got = c.cmd(&["XAUTOCLAIM", "x", "grp", "Eve", "0", "0-0", "COUNT", "1"]);
    assert_eq!(got, arr(vec![b("3-0"), arr(vec![]), arr(vec![b("1-0")])]));
    let got = c.cmd(&["XAUTOCLAIM", "x", "grp", "Eve", "0", "3-0", "COUNT", "1"]);
    assert_eq!(got, arr(vec![b("4-0"), arr(vec![entry("3-0", &["f", "v"])]), arr(vec![])]));
    let got = c.cmd(&["XAUTOCLAIM", "x", "grp", "Eve", "0", "(3-0", "JUSTID"]);
    assert_eq!(got, arr(vec![b("0-0"), arr(vec![b("4-0")]), arr(vec![])]));
    assert_eq!(
        err(&mut c, &["XAUTOCLAIM", "x", "grp", "Eve", "0", "0", "COUNT", "0"]),
        "ERR COUNT must be > 0"
    );
    assert_eq!(
        err(&mut c, &["XAUTOCLAIM", "x", "grp", "Eve", "0", "0", "COUNT", "8070450532247928833"]),
        "ERR COUNT must be > 0"
    );
}

fn send(c: &mut Raw, args: &[&str]) {
    let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
    c.send_raw(&Raw::encode(&a));
}

#[test]
fn blocking_reads_wake_on_entries_and_on_lost_streams() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let mut r = srv.raw();
    c.cmd(&["XADD", "s", "1-0", "old", "x"]);
    // `$`: only what is added after blocking.
    send(&mut r, &["XREAD", "BLOCK", "0", "STREAMS", "other", "s", "$", "$"]);
    wait_blocked(&mut c, 1);
    c.cmd(&["XADD", "other2", "1-0", "a", "b"]);
    c.cmd(&["XADD", "s", "2-0", "new", "y"]);
    assert_eq!(r.read(), read_reply("s", vec![entry("2-0", &["new", "y"])]));
    // A deleted and re-created key: served from the new stream, after the old last id.
    send(&mut r, &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    wait_blocked(&mut c, 1);
    c.cmd(&["DEL", "s"]);
    c.cmd(&["SET", "s", "x"]);
    c.cmd(&["DEL", "s"]);
    assert_eq!(blocked_clients(&mut c), 1, "no stream: still blocked");
    c.cmd(&["XADD", "s", "3-0", "f", "v"]);
    assert_eq!(r.read(), read_reply("s", vec![entry("3-0", &["f", "v"])]));
    // A timeout replies nil.
    assert_eq!(r.cmd(&["XREAD", "BLOCK", "20", "STREAMS", "s", "$"]), Reply::Null);
    // XREADGROUP: woken by a new entry, told when the stream or group goes.
    ok(&mut c, &["XGROUP", "CREATE", "s", "g", "$"]);
    send(&mut r, &["XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">"]);
    wait_blocked(&mut c, 1);
    c.cmd(&["XADD", "s", "4-0", "f", "w"]);
    assert_eq!(r.read(), read_reply("s", vec![entry("4-0", &["f", "w"])]));
    send(&mut r, &["XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">"]);
    wait_blocked(&mut c, 1);
    assert_eq!(c.cmd(&["XGROUP", "DESTROY", "s", "g"]), Reply::Int(1));
    assert_eq!(
        r.read(),
        Reply::Error(
            "NOGROUP the consumer group this client was blocked on no longer exists".into()
        )
    );
    ok(&mut c, &["XGROUP", "CREATE", "s", "g", "$"]);
    send(&mut r, &["XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">"]);
    wait_blocked(&mut c, 1);
    c.cmd(&["DEL", "s"]);
    assert_eq!(r.read(), Reply::Error("UNBLOCKED the stream key no longer exists".into()));
    // Inside MULTI, BLOCK does not block.
    c.cmd(&["MULTI"]);
    c.cmd(&["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    assert_eq!(c.cmd(&["EXEC"]), arr(vec![Reply::Null]));
}

#[test]
fn key_commands_and_a_restart_keep_streams_whole() {
    let mut srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmd(&["XADD", "s", "1-0", "a", "1"]);
    c.cmd(&["XADD", "s", "2-0", "b", "2"]);
    ok(&mut c, &["XGROUP", "CREATE", "s", "g", "0"]);
    c.cmd(&["XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", ">"]);
    assert_eq!(c.cmd(&["COPY", "s", "t"]), Reply::Int(1));
    ok(&mut c, &["RENAME", "s", "u"]);
    assert_eq!(c.cmd(&["EXISTS", "s", "t", "u"]), Reply::Int(2));
    for k in ["t", "u"] {
        assert_eq!(c.cmd(&["XLEN", k]), Reply::Int(2));
        let Reply::Array(gs) = c.cmd(&["XINFO", "GROUPS", k]) else { panic!() };
        assert_eq!(field(&gs[0], "pending"), Reply::Int(1), "{k}");
    }
    assert_eq!(c.cmd(&["XADD", "t", "3-0", "c", "3"]), b("3-0"));
    assert_eq!(c.cmd(&["XLEN", "u"]), Reply::Int(2), "the copy is its own stream");
    let Reply::Array(scan) = c.cmd(&["SCAN", "0", "TYPE", "stream", "COUNT", "100"]) else {
        panic!()
    };
    let Reply::Array(mut keys) = scan[1].clone() else { panic!() };
    keys.sort_by_key(|k| format!("{k:?}"));
    assert_eq!(keys, [b("t"), b("u")]);
    assert_eq!(
        err(&mut c, &["SORT", "t"]),
        "WRONGTYPE Operation against a key holding the wrong kind of value"
    );
    assert_eq!(c.cmd(&["PEXPIRE", "t", "1"]), Reply::Int(1));
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(c.cmd(&["XLEN", "t"]), Reply::Int(0));
    // Across a restart.
    drop(c);
    srv.stop();
    let dir = srv.keep_dir();
    let srv = Server::start_in(dir.path(), &[]);
    let mut c = srv.raw();
    let got = c.cmd(&["XRANGE", "u", "-", "+"]);
    assert_eq!(got, arr(vec![entry("1-0", &["a", "1"]), entry("2-0", &["b", "2"])]));
    let Reply::Array(gs) = c.cmd(&["XINFO", "GROUPS", "u"]) else { panic!() };
    assert_eq!(field(&gs[0], "last-delivered-id"), b("1-0"));
    assert_eq!(field(&gs[0], "entries-read"), Reply::Int(1));
}
