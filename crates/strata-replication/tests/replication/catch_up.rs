//! A follower that was down catches up: from the leader's log, or from a snapshot when the
//! leader has purged the entries it missed.

use crate::harness::{check_exactly_once, snapshot_and_purge, Cluster, Writers, WAIT};

/// A follower of every group (not the leader of the first).
async fn a_follower(c: &Cluster) -> u64 {
    let mut leaders = Vec::new();
    for g in &c.groups {
        leaders.push(c.leader(*g).await);
    }
    [1, 2, 3]
        .into_iter()
        .find(|n| !leaders.contains(n))
        .unwrap_or_else(|| [1, 2, 3].into_iter().find(|n| *n != leaders[0]).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_follower_catches_up_from_the_log() {
    let mut c = Cluster::start(&[1, 2, 3], &[0, 1]).await;
    let writers = Writers::start(&c, 2);
    writers.wait_acked(20).await;
    let f = a_follower(&c).await;
    c.kill(f).await;
    writers.wait_acked(60).await;
    c.start_node(f).await;
    writers.wait_acked(20).await;
    let history = writers.stop().await;
    for g in c.groups.clone() {
        let data = c.converged(g, &[1, 2, 3]).await;
        assert!(check_exactly_once(g, &data, &history) > 0);
        let s = c.node(f).replica(g).unwrap().status();
        assert_eq!(s.snapshot, None, "{g}: node {f} caught up from the log, without a snapshot");
    }
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_follower_catches_up_from_a_snapshot_once_the_log_is_purged() {
    let mut c = Cluster::start(&[1, 2, 3], &[0, 1]).await;
    let writers = Writers::start(&c, 2);
    writers.wait_acked(20).await;
    let f = a_follower(&c).await;
    c.kill(f).await;
    writers.wait_acked(60).await;
    let history = writers.stop().await;
    // Every live replica snapshots and purges its log: what the follower missed is gone.
    snapshot_and_purge(&c).await;
    c.start_node(f).await;
    for g in c.groups.clone() {
        let r = c.node(f).replica(g).unwrap();
        let s =
            r.wait_for("install a snapshot", WAIT, move |s| s.snapshot.is_some()).await.unwrap();
        assert!(s.snapshot.is_some());
        let data = c.converged(g, &[1, 2, 3]).await;
        assert!(check_exactly_once(g, &data, &history) > 0);
    }
    // The group goes on from the snapshot: new writes reach the restarted node too.
    let writers = Writers::start_named(&c, 1, "after-");
    writers.wait_acked(10).await;
    let more = writers.stop().await;
    for g in c.groups.clone() {
        let data = c.converged(g, &[1, 2, 3]).await;
        assert!(check_exactly_once(g, &data, &more) > 0);
    }
    c.shutdown().await;
}

/// A restarted node asked to create a group it already belongs to is told so by its own
/// storage, even before openraft has published what it recovered (a clustered server's
/// preferred leader asks at every start).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initializing_a_restarted_member_again_is_refused_as_already_initialized() {
    let mut c = Cluster::start(&[1, 2, 3], &[0]).await;
    let writers = Writers::start(&c, 1);
    writers.wait_acked(5).await;
    writers.stop().await;
    for n in [1, 2, 3] {
        c.kill(n).await;
        c.start_node(n).await;
        let members =
            [1, 2, 3].into_iter().map(|m| (m, strata_replication::Peer::default())).collect();
        let replica = c.node(n).replica(strata_replication::GroupId(0)).unwrap();
        match replica.initialize(members).await {
            Err(strata_replication::Error::AlreadyInitialized { .. }) => {}
            other => panic!("node {n}: initialize again gave {other:?}"),
        }
    }
    c.shutdown().await;
}
