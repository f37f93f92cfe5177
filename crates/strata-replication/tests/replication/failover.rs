//! Leaders lost: killed mid-write, or cut off by a network partition.

use crate::harness::{check_exactly_once, Cluster, Writers, WAIT};
use strata_replication::Role;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_killed_mid_write_is_replaced_and_no_acknowledged_write_is_lost() {
    let mut c = Cluster::start(&[1, 2, 3], &[0, 1]).await;
    let writers = Writers::start(&c, 2);
    writers.wait_acked(40).await;
    let g = c.groups[0];
    let old = c.leader(g).await;
    c.kill(old).await;
    let new = c.leader(g).await;
    assert_ne!(new, old);
    writers.wait_acked(40).await;
    let history = writers.stop().await;
    let survivors: Vec<_> = [1, 2, 3].into_iter().filter(|n| *n != old).collect();
    for g in c.groups.clone() {
        let data = c.converged(g, &survivors).await;
        assert!(check_exactly_once(g, &data, &history) > 0);
    }
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_leader_is_replaced_and_rejoins_after_the_heal() {
    let c = Cluster::start(&[1, 2, 3], &[0, 1]).await;
    let writers = Writers::start(&c, 2);
    writers.wait_acked(30).await;
    let g = c.groups[0];
    let old = c.leader(g).await;
    let old_term = c.node(old).replica(g).unwrap().status().term;
    c.net.isolate(old, [1, 2, 3]);
    // The majority side elects a leader of a higher term and takes writes.
    let deadline = std::time::Instant::now() + WAIT;
    let new = loop {
        let l = c.leader(g).await;
        if l != old && c.node(l).replica(g).unwrap().status().term > old_term {
            break l;
        }
        assert!(std::time::Instant::now() < deadline, "no new leader on the majority side");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    writers.wait_acked(30).await;
    c.net.heal_all();
    let r = c.node(old).replica(g).unwrap();
    let s = r
        .wait_for("follow again", WAIT, move |s| s.role == Role::Follower && s.leader.is_some())
        .await
        .unwrap();
    assert!(s.term > old_term, "the old leader took the new term");
    writers.wait_acked(20).await;
    let history = writers.stop().await;
    let _ = new;
    for g in c.groups.clone() {
        let data = c.converged(g, &[1, 2, 3]).await;
        assert!(check_exactly_once(g, &data, &history) > 0);
    }
    c.shutdown().await;
}
