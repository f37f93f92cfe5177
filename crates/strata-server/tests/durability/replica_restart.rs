//! A replica (its configuration names the master) killed with SIGKILL while it loads its
//! master's dataset: at restart it asks for a full sync again (nothing of a half-loaded
//! dataset is resumed), deletes the transfer file the killed process left, and ends with the
//! new sync's keys and no others.

use std::net::TcpListener;

use crate::common::fake_master::{handshake, send_cmd, until_ack, wait_for, REPLID};
use crate::common::{follow, info_field, key_reaches, replication_reaches, Reply, Server};
use strata_server::types::rdb::file::FileWriter;
use strata_server::types::rdb::{Encodings, Value};

/// An RDB of `keys` strings `<prefix><i>` (100 bytes each) and a hash per 100 of them.
fn rdb(prefix: &str, keys: usize) -> Vec<u8> {
    let enc = Encodings::default();
    let mut w = FileWriter::new(Vec::new(), &[]).unwrap();
    w.select_db(0, keys as u64, 0).unwrap();
    for i in 0..keys {
        let key = format!("{prefix}{i}");
        w.key(key.as_bytes(), &Value::String(vec![b'v'; 100]), None, &enc).unwrap();
        if i % 100 == 0 {
            let fields = (0..20).map(|f| (format!("f{f}").into_bytes(), vec![b'x'; 50])).collect();
            w.key(format!("h{prefix}{i}").as_bytes(), &Value::Hash(fields), None, &enc).unwrap();
        }
    }
    w.finish().unwrap()
}

#[test]
fn a_replica_killed_while_it_loads_syncs_whole_at_restart() {
    let fake = TcpListener::bind("127.0.0.1:0").unwrap();
    let mport = fake.local_addr().unwrap().port();
    let conf_dir = tempfile::tempdir().unwrap();
    let conf = conf_dir.path().join("replica.conf");
    std::fs::write(&conf, format!("replicaof 127.0.0.1 {mport}\n")).unwrap();
    let conf = conf.to_str().unwrap();

    let mut s = Server::start(&[conf]);
    let (mut m, psync) = handshake(&fake, s.port);
    assert_eq!(psync, ["?", "-1"]);
    let first = rdb("a", 60_000);
    m.send_raw(format!("+FULLRESYNC {REPLID} 0\r\n${}\r\n", first.len()).as_bytes());
    m.send_raw(&first);
    // Killed once the load has begun (the dataset is being replaced), or failing that as
    // soon as the file is in (either way mid-sync for the process).
    let mut c = s.raw();
    let mut loading_seen = false;
    wait_for("the load to begin", || {
        loading_seen = info_field(&mut c, "persistence", "loading") == "1";
        loading_seen || info_field(&mut c, "replication", "master_link_status") == "up"
    });
    eprintln!("killed with the load {}", if loading_seen { "running" } else { "done" });
    s.child.kill().unwrap();
    s.child.wait().unwrap();
    drop(m);
    let dir = s.keep_dir();

    let s = Server::start_in(dir.path(), &[conf]);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("temp-replica-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let (mut m, psync) = handshake(&fake, s.port);
    assert_eq!(psync, ["?", "-1"], "a restarted replica syncs in full");
    let second = rdb("b", 2_000);
    m.send_raw(format!("+FULLRESYNC {REPLID} 900\r\n${}\r\n", second.len()).as_bytes());
    m.send_raw(&second);
    let sent = send_cmd(&mut m, &["SET", "after", "1"]);
    send_cmd(&mut m, &["REPLCONF", "GETACK", "*"]);
    until_ack(&mut m, 900 + sent as i64);
    let mut c = s.raw();
    assert_eq!(c.cmd(&["DBSIZE"]), Reply::Int(2_000 + 20 + 1));
    assert_eq!(c.cmd(&["EXISTS", "a0", "a59999", "ha0"]), Reply::Int(0));
    assert_eq!(c.cmd(&["STRLEN", "b1999"]), Reply::Int(100));
    assert_eq!(c.cmd(&["HLEN", "hb1900"]), Reply::Int(20));
    assert_eq!(c.cmd(&["GET", "after"]), Reply::bulk("1"));
}

/// A clean shutdown keeps the stream's id and end (`storage::repl_ids`): a replica restarted
/// so resumes from its master, in the database the stream had selected, and a master
/// restarted so resumes its replica; a replica killed with SIGKILL after such a start has
/// nothing kept (the start deleted it) and syncs in full.
#[test]
fn a_clean_restart_resumes_replication_and_a_killed_replica_syncs_in_full() {
    let mut master = Server::start(&[]);
    let mut m = master.raw();
    m.cmd(&["SET", "a", "1"]);
    let mut replica = Server::start(&[]);
    let mut r = replica.raw();
    follow(&mut r, master.port);
    // The master's stream has database 2 selected from here on.
    m.cmd(&["SELECT", "2"]);
    m.cmd(&["SET", "b", "2"]);
    let end = info_field(&mut m, "replication", "master_repl_offset");
    replication_reaches(&mut r, "master_repl_offset", &end);

    replica.stop();
    let rdir = replica.keep_dir();
    m.cmd(&["SET", "c", "3"]);
    let mut replica = Server::start_in(rdir.path(), &[]);
    let mut r = replica.raw();
    assert_eq!(info_field(&mut r, "replication", "master_repl_offset"), end);
    follow(&mut r, master.port);
    assert_eq!(info_field(&mut r, "replication", "repl_partial_syncs"), "1");
    assert_eq!(info_field(&mut r, "replication", "repl_full_syncs"), "0");
    key_reaches(&mut r, "2", "c", Reply::bulk("3"));
    key_reaches(&mut r, "0", "a", Reply::bulk("1"));

    let (id, end) = (
        info_field(&mut m, "replication", "master_replid"),
        info_field(&mut m, "replication", "master_repl_offset"),
    );
    master.stop();
    let mdir = master.keep_dir();
    let master = Server::start_in(mdir.path(), &[]);
    let mut m = master.raw();
    // A master goes on under a new id, the kept one its second (as redis-server 7.0).
    assert_ne!(info_field(&mut m, "replication", "master_replid"), id);
    assert_eq!(info_field(&mut m, "replication", "master_replid2"), id);
    let second = (end.parse::<u64>().unwrap() + 1).to_string();
    assert_eq!(info_field(&mut m, "replication", "second_repl_offset"), second);
    assert_eq!(info_field(&mut m, "replication", "master_repl_offset"), end);
    follow(&mut r, master.port);
    assert_eq!(info_field(&mut r, "replication", "repl_partial_syncs"), "1");
    assert_eq!(info_field(&mut m, "stats", "sync_full"), "0");
    m.cmd(&["SET", "d", "4"]);
    key_reaches(&mut r, "0", "d", Reply::bulk("4"));

    replica.child.kill().unwrap();
    replica.child.wait().unwrap();
    let replica = Server::start_in(rdir.path(), &[]);
    let mut r = replica.raw();
    follow(&mut r, master.port);
    assert_eq!(info_field(&mut r, "replication", "repl_full_syncs"), "1");
    key_reaches(&mut r, "2", "c", Reply::bulk("3"));
}
