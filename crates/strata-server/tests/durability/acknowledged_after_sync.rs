//! `appendfsync always` acknowledges a write only after a WAL sync that covers it: one client
//! writing one key at a time sees a sync per acknowledged write, and concurrent clients
//! writing one hot key share syncs (group commit across connections) rather than each waiting
//! for its own. Counted from the engine's own WAL sync counter (`INFO strata`).

use crate::common::Server;

/// The engine's WAL sync count, from the `strata` INFO section.
fn wal_syncs(c: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("strata").query(c).unwrap();
    let at = info.find(" syncs").unwrap_or_else(|| panic!("no WAL sync count in {info}"));
    let digits: String = info[..at].chars().rev().take_while(char::is_ascii_digit).collect();
    digits.chars().rev().collect::<String>().parse().unwrap()
}

#[test]
fn every_acknowledged_write_is_synced_and_hot_key_writers_share_syncs() {
    let srv = Server::start(&["--appendfsync", "always"]);
    let mut c = srv.conn();
    let before = wal_syncs(&mut c);
    for i in 0..20 {
        let _: () = redis::cmd("SET").arg("k").arg(i).query(&mut c).unwrap();
    }
    let after = wal_syncs(&mut c);
    assert!(
        after >= before + 20,
        "one sync per sequential acknowledged write: {before} -> {after}"
    );

    // 8 clients x 50 INCRs of one key: every increment counted, fewer syncs than writes is
    // allowed (shared), never lost updates.
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let mut c = srv.conn();
            std::thread::spawn(move || {
                for _ in 0..50 {
                    let _: i64 = redis::cmd("INCR").arg("hot").query(&mut c).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let n: i64 = redis::cmd("GET").arg("hot").query(&mut c).unwrap();
    assert_eq!(n, 400);
}
