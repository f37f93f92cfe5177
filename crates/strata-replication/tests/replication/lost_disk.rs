//! A node that lost its directory comes back on empty storage in groups that exist: it takes
//! the log again and votes only once it has caught up (`src/rejoin.rs`).

use std::time::{Duration, Instant};

use strata_replication::kv::KvCommand;
use strata_replication::{GroupId, NodeId, OnEmpty};

use crate::harness::{
    check_exactly_once, find_leader, snapshot_and_purge, write, Cluster, Writers, WAIT,
};

/// Waits until node `id`'s replica of `g` has caught up.
async fn caught_up(c: &Cluster, id: NodeId, g: GroupId) {
    let deadline = Instant::now() + WAIT;
    while c.node(id).replica(g).unwrap().catching_up() {
        assert!(Instant::now() < deadline, "{g}: node {id} did not catch up in {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_that_lost_its_disk_takes_the_log_again_under_writes() {
    let mut c = Cluster::start(&[1, 2, 3], &[0, 1]).await;
    let writers = Writers::start(&c, 2);
    writers.wait_acked(30).await;
    let leader = c.leader(c.groups[0]).await;
    let f = [1, 2, 3].into_iter().find(|n| *n != leader).unwrap();
    c.kill(f).await;
    c.wipe(f);
    writers.wait_acked(20).await;
    // The leaders find its log gone back to nothing and send it again from the start.
    c.start_node(f).await;
    for g in c.groups.clone() {
        assert!(c.node(f).replica(g).unwrap().status().last_log_index.is_none_or(|i| i < 5));
    }
    writers.wait_acked(30).await;
    for g in c.groups.clone() {
        caught_up(&c, f, g).await;
    }
    let history = writers.stop().await;
    for g in c.groups.clone() {
        let data = c.converged(g, &[1, 2, 3]).await;
        assert!(check_exactly_once(g, &data, &history) > 0);
    }
    // Caught up, it is a voter again: with its leader gone, it helps elect the next.
    let g = c.groups[0];
    let leader = c.leader(g).await;
    c.kill(leader).await;
    let next = c.leader(g).await;
    assert_ne!(next, leader);
    c.shutdown().await;
}

/// Three replicas; writes committed on the leader L and F1 only (F2 cut off). F1 loses its
/// disk and L goes down: F2, which lacks the writes, must not be elected with the vote of
/// F1's empty log. The group waits for L, and nothing acknowledged is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_disk_does_not_elect_a_replica_missing_committed_writes() {
    let mut c = Cluster::start(&[1, 2, 3], &[0]).await;
    let g = c.groups[0];
    let l = c.leader(g).await;
    let others: Vec<NodeId> = [1, 2, 3].into_iter().filter(|n| *n != l).collect();
    let (f1, f2) = (others[0], others[1]);
    c.net.isolate(f2, [1, 2, 3]);
    let mut acked = Vec::new();
    for i in 0..20 {
        let key = format!("k{i}").into_bytes();
        let cmd = KvCommand::Put { key: key.clone(), value: b"committed".to_vec() };
        write(&c.live, g, &cmd).await.unwrap();
        acked.push(key);
    }
    // F1 has them (it acknowledged them); F2 has none.
    let last = c.node(l).replica(g).unwrap().status().last_log_index;
    c.node(f1)
        .replica(g)
        .unwrap()
        .wait_for("hold the writes", WAIT, move |s| s.last_log_index >= last)
        .await
        .unwrap();
    c.kill(f1).await;
    c.wipe(f1);
    c.kill(l).await;
    c.net.heal_all();
    c.start_node(f1).await;
    // Many election timeouts: F2 campaigns and must not win.
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        assert_eq!(find_leader(&c.live, g), None, "a leader without the committed writes");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(c.node(f1).replica(g).unwrap().catching_up());
    // L comes back: it leads (or hands its log on), F1 catches up, and every write is there.
    c.start_node(l).await;
    c.leader(g).await;
    caught_up(&c, f1, g).await;
    let data = c.converged(g, &[1, 2, 3]).await;
    for key in &acked {
        assert!(
            data.iter().any(|(k, v)| k == key && v == b"committed"),
            "{} acknowledged and lost",
            String::from_utf8_lossy(key)
        );
    }
    c.shutdown().await;
}

/// A catch-up cut short by a crash resumes on restart: the replica does not vote on the
/// partial log it had taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catch_up_cut_short_resumes_after_a_restart() {
    let mut c = Cluster::start(&[1, 2, 3], &[0]).await;
    let g = c.groups[0];
    let l = c.leader(g).await;
    let f = [1, 2, 3].into_iter().find(|n| *n != l).unwrap();
    c.kill(f).await;
    c.wipe(f);
    // Its leader is unreachable: it opens, hears no one, and stops again.
    c.net.isolate(f, [1, 2, 3]);
    c.start_node(f).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(c.node(f).replica(g).unwrap().catching_up());
    c.kill(f).await;
    c.net.heal_all();
    // Even started as if creating the group, the record keeps it catching up.
    c.start_node_as(f, OnEmpty::NewGroup).await;
    assert!(c.node(f).replica(g).unwrap().catching_up(), "the record survived the restart");
    let cmd = KvCommand::Put { key: b"after".to_vec(), value: b"1".to_vec() };
    write(&c.live, g, &cmd).await.unwrap();
    caught_up(&c, f, g).await;
    c.converged(g, &[1, 2, 3]).await;
    c.shutdown().await;
}

/// A replica that lost its disk while its leaders purged their logs comes back through a
/// snapshot, with writes going on all the while, and then takes the log from the snapshot on:
/// it catches up, votes again, and holds every write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_that_lost_its_disk_catches_up_from_a_snapshot_under_writes() {
    let mut c = Cluster::start(&[1, 2, 3], &[0, 1]).await;
    let writers = Writers::start(&c, 2);
    writers.wait_acked(30).await;
    let leader = c.leader(c.groups[0]).await;
    let f = [1, 2, 3].into_iter().find(|n| *n != leader).unwrap();
    c.kill(f).await;
    c.wipe(f);
    // Down long enough for the leaders' streams to it to back off, so that a heartbeat may be
    // what finds its log gone (the case `src/raft/network.rs` ends a stale stream for).
    tokio::time::sleep(Duration::from_secs(2)).await;
    writers.wait_acked(30).await;
    snapshot_and_purge(&c).await;
    c.start_node(f).await;
    for g in c.groups.clone() {
        c.node(f)
            .replica(g)
            .unwrap()
            .wait_for("install a snapshot", WAIT, |s| s.snapshot.is_some())
            .await
            .unwrap();
    }
    writers.wait_acked(60).await;
    for g in c.groups.clone() {
        caught_up(&c, f, g).await;
    }
    let history = writers.stop().await;
    for g in c.groups.clone() {
        let data = c.converged(g, &[1, 2, 3]).await;
        assert!(check_exactly_once(g, &data, &history) > 0);
    }
    c.shutdown().await;
}
