//! CLIENT KILL, as redis-server 7.0 answers it: the address form and the filters, the
//! connection's own closing after its reply, and a killed connection gone from CLIENT LIST,
//! its subscriptions and its blocked wait at once.

use crate::common::{blocked_clients, wait_blocked, Raw, Reply, Server};

fn id_of(c: &mut Raw) -> String {
    match c.cmd(&["CLIENT", "ID"]) {
        Reply::Int(id) => id.to_string(),
        other => panic!("CLIENT ID replied {other:?}"),
    }
}

fn list(c: &mut Raw) -> String {
    match c.cmd(&["CLIENT", "LIST"]) {
        Reply::Bulk(b) => String::from_utf8(b).unwrap(),
        Reply::Verbatim(s) => s,
        other => panic!("CLIENT LIST replied {other:?}"),
    }
}

/// The `name=value` field of the CLIENT LIST line of connection `id`.
fn field(list: &str, id: &str, name: &str) -> Option<String> {
    let line = list.lines().find(|l| l.starts_with(&format!("id={id} ")))?;
    let prefix = format!("{name}=");
    line.split(' ').find_map(|f| f.strip_prefix(prefix.as_str())).map(str::to_string)
}

/// Whether the server closed `c` (an end of stream within 5 s; not a timeout, not a reply).
fn closed(c: &mut Raw) -> bool {
    use std::io::Read;
    c.stream.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
    let mut b = [0u8; 64];
    matches!(c.stream.read(&mut b), Ok(0))
}

fn err(r: Reply) -> String {
    match r {
        Reply::Error(e) => e,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn client_kill_by_id_addr_and_laddr_closes_that_connection_at_once() {
    let srv = Server::start(&[]);
    let mut admin = srv.raw();
    let mut a = srv.raw();
    let mut b = srv.raw();
    let (ida, idb) = (id_of(&mut a), id_of(&mut b));
    let l = list(&mut admin);
    let laddr = field(&l, &ida, "laddr").unwrap();
    assert_eq!(laddr, format!("127.0.0.1:{}", srv.port), "laddr is the server's end");

    assert_eq!(admin.cmd(&["CLIENT", "KILL", "ID", &ida]), Reply::Int(1));
    assert!(closed(&mut a), "the killed connection is closed");
    let l = list(&mut admin);
    assert!(field(&l, &ida, "addr").is_none(), "gone from CLIENT LIST at once: {l}");
    assert!(field(&l, &idb, "addr").is_some());

    // The address form: +OK, or an error when no connection has that address.
    let addrb = field(&l, &idb, "addr").unwrap();
    assert_eq!(admin.cmd(&["CLIENT", "KILL", &addrb]), Reply::Simple("OK".into()));
    assert!(closed(&mut b));
    assert_eq!(err(admin.cmd(&["CLIENT", "KILL", &addrb])), "ERR No such client");
    assert_eq!(admin.cmd(&["CLIENT", "KILL", "ADDR", &addrb]), Reply::Int(0));

    // Filters combine: a wrong LADDR spares the connection the ID names.
    let mut c = srv.raw();
    let idc = id_of(&mut c);
    assert_eq!(admin.cmd(&["CLIENT", "KILL", "ID", &idc, "LADDR", "127.0.0.1:1"]), Reply::Int(0));
    assert_eq!(admin.cmd(&["CLIENT", "KILL", "ID", &idc, "LADDR", &laddr]), Reply::Int(1));
    assert!(closed(&mut c));
    assert_eq!(admin.cmd(&["PING"]), Reply::Simple("PONG".into()));
}

#[test]
fn client_kill_spares_itself_unless_told_and_then_replies_first() {
    let srv = Server::start(&[]);
    let mut me = srv.raw();
    let id = id_of(&mut me);
    assert_eq!(me.cmd(&["CLIENT", "KILL", "ID", &id]), Reply::Int(0), "SKIPME yes by default");
    assert_eq!(me.cmd(&["CLIENT", "KILL", "ID", &id, "SKIPME", "no"]), Reply::Int(1));
    assert!(closed(&mut me), "closed after its reply");

    // The address form may name the connection itself.
    let mut me = srv.raw();
    let id = id_of(&mut me);
    let addr = field(&list(&mut me), &id, "addr").unwrap();
    assert_eq!(me.cmd(&["CLIENT", "KILL", &addr]), Reply::Simple("OK".into()));
    assert!(closed(&mut me));
}

#[test]
fn client_kill_by_type_and_user() {
    let srv = Server::start(&[]);
    let mut admin = srv.raw();
    let mut plain = srv.raw();
    let mut sub = srv.raw();
    let mut psub = srv.raw();
    sub.cmd(&["SUBSCRIBE", "news"]);
    psub.cmd(&["PSUBSCRIBE", "n*"]);
    for t in ["master", "slave", "replica", "MASTER"] {
        assert_eq!(admin.cmd(&["CLIENT", "KILL", "TYPE", t]), Reply::Int(0), "{t}");
    }
    assert_eq!(admin.cmd(&["CLIENT", "KILL", "TYPE", "pubsub"]), Reply::Int(2));
    assert!(closed(&mut sub) && closed(&mut psub));
    assert_eq!(admin.cmd(&["PUBLISH", "news", "x"]), Reply::Int(0), "their subscriptions went");
    assert_eq!(admin.cmd(&["PUBSUB", "NUMPAT"]), Reply::Int(0));
    assert_eq!(plain.cmd(&["PING"]), Reply::Simple("PONG".into()));
    // USER default is every connection's; SKIPME yes spares the caller.
    assert_eq!(admin.cmd(&["CLIENT", "KILL", "TYPE", "normal", "USER", "default"]), Reply::Int(1));
    assert!(closed(&mut plain));
    assert_eq!(admin.cmd(&["PING"]), Reply::Simple("PONG".into()));
}

#[test]
fn a_blocked_connection_killed_leaves_no_blocked_wait() {
    let srv = Server::start(&[]);
    let mut admin = srv.raw();
    let mut waiter = srv.raw();
    let id = id_of(&mut waiter);
    waiter.send_raw(&Raw::encode(&[b"BLPOP", b"queue", b"0"]));
    wait_blocked(&mut admin, 1);
    assert_eq!(admin.cmd(&["CLIENT", "KILL", "ID", &id]), Reply::Int(1));
    assert!(closed(&mut waiter));
    assert_eq!(blocked_clients(&mut admin), 0);
    // A push after it is not taken by the killed wait.
    assert_eq!(admin.cmd(&["RPUSH", "queue", "a"]), Reply::Int(1));
    assert_eq!(admin.cmd(&["LLEN", "queue"]), Reply::Int(1));
}

#[test]
fn client_kill_refuses_bad_filters_with_redis_errors() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let cases: &[(&[&str], &str)] = &[
        (&["CLIENT", "KILL"], "ERR wrong number of arguments for 'client|kill' command"),
        (&["CLIENT", "KILL", "ID"], "ERR No such client"),
        (&["CLIENT", "KILL", "ID", "0"], "ERR client-id should be greater than 0"),
        (&["CLIENT", "KILL", "ID", "x"], "ERR client-id should be greater than 0"),
        (&["CLIENT", "KILL", "ID", "1", "SKIPME"], "ERR syntax error"),
        (&["CLIENT", "KILL", "ID", "1", "SKIPME", "maybe"], "ERR syntax error"),
        (&["CLIENT", "KILL", "MAXAGE", "1"], "ERR syntax error"),
        (&["CLIENT", "KILL", "TYPE", "bogus"], "ERR Unknown client type 'bogus'"),
        (&["CLIENT", "KILL", "USER", "nobody"], "ERR No such user 'nobody'"),
    ];
    for (line, want) in cases {
        assert_eq!(err(c.cmd(line)), *want, "{line:?}");
    }
    assert_eq!(c.cmd(&["PING"]), Reply::Simple("PONG".into()), "still connected");
    match c.cmd(&["CLIENT", "HELP"]) {
        Reply::Array(lines) => assert!(lines.contains(&Reply::Simple("KILL <ip:port>".into()))),
        other => panic!("CLIENT HELP replied {other:?}"),
    }
}

/// A replica of this server is of type `replica` (and `slave`), listed with the flag `S`;
/// killed, it connects again and resumes.
#[test]
fn type_replica_ends_a_replicas_connection_and_it_resumes() {
    let master = Server::start(&[]);
    let replica = Server::start(&[]);
    let (mut m, mut r) = (master.raw(), replica.raw());
    crate::common::follow(&mut r, master.port);
    m.cmd(&["SET", "a", "1"]);
    crate::common::key_reaches(&mut r, "0", "a", Reply::bulk("1"));
    let listed = |m: &mut Raw, class: &str| match m.cmd(&["CLIENT", "LIST", "TYPE", class]) {
        Reply::Bulk(b) => String::from_utf8(b).unwrap(),
        other => panic!("CLIENT LIST replied {other:?}"),
    };
    for class in ["replica", "slave"] {
        let lines = listed(&mut m, class);
        assert_eq!(lines.lines().count(), 1, "{lines}");
        assert!(lines.contains(" flags=S "), "{lines}");
    }
    assert!(!listed(&mut m, "normal").contains("flags=S"));
    assert_eq!(m.cmd(&["CLIENT", "KILL", "TYPE", "normal"]), Reply::Int(0), "itself spared");
    assert_eq!(m.cmd(&["CLIENT", "KILL", "TYPE", "replica"]), Reply::Int(1));
    crate::common::replication_reaches(&mut r, "master_link_status", "up");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while crate::common::info_field(&mut m, "stats", "sync_partial_ok") != "1" {
        assert!(std::time::Instant::now() < until, "the replica did not resume");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(crate::common::info_field(&mut m, "stats", "sync_full"), "1");
    m.cmd(&["SET", "b", "2"]);
    crate::common::key_reaches(&mut r, "0", "b", Reply::bulk("2"));
}
