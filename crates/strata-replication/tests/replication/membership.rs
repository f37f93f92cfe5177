//! Membership under writes: a learner added and promoted, a replica removed, leadership
//! handed over.

use std::collections::BTreeSet;

use crate::harness::{check_exactly_once, Cluster, Writers, WAIT};
use strata_replication::rpc::{self, MembershipReply, Request, Response};
use strata_replication::transport::RpcHandler;
use strata_replication::{GroupId, Left, NodeId, OnEmpty, Peer, Role};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_learner_is_added_and_promoted_and_a_replica_removed_while_writes_go_on() {
    let mut c = Cluster::start(&[1, 2, 3], &[0, 1]).await;
    c.start_node(4).await;
    let writers = Writers::start(&c, 2);
    writers.wait_acked(20).await;
    for g in c.groups.clone() {
        let leader = c.node(c.leader(g).await).replica(g).unwrap();
        leader.add_learner(4, Peer::default()).await.unwrap();
        let s = c.node(4).replica(g).unwrap().status();
        assert_eq!(s.role, Role::Learner);
        leader.change_voters(BTreeSet::from([1, 2, 3, 4])).await.unwrap();
        writers.wait_acked(10).await;
        let leader = c.node(c.leader(g).await).replica(g).unwrap();
        leader.change_voters(BTreeSet::from([2, 3, 4])).await.unwrap();
        // A removed leader hands its leadership over and steps down by itself.
        let removed = c.node(1).replica(g).unwrap();
        removed.wait_for("step down", WAIT, move |s| s.role != Role::Leader).await.unwrap();
    }
    writers.wait_acked(20).await;
    let history = writers.stop().await;
    for g in c.groups.clone() {
        let data = c.converged(g, &[2, 3, 4]).await;
        assert!(check_exactly_once(g, &data, &history) > 0);
        for n in [2, 3, 4] {
            let r = c.node(n).replica(g).unwrap();
            r.wait_for("the final membership", WAIT, move |s| {
                s.membership.membership.voters() == BTreeSet::from([2, 3, 4])
                    && s.membership.membership.configs.len() == 1
            })
            .await
            .unwrap();
        }
        assert_ne!(c.leader(g).await, 1, "{g}: the removed node does not lead");
    }
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leadership_is_transferred_while_writes_go_on() {
    let c = Cluster::start(&[1, 2, 3], &[0, 1]).await;
    let writers = Writers::start(&c, 2);
    writers.wait_acked(20).await;
    for g in c.groups.clone() {
        let old = c.leader(g).await;
        let to = [1, 2, 3].into_iter().find(|n| *n != old).unwrap();
        c.node(old).replica(g).unwrap().transfer_leader(to).await.unwrap();
        let s = c
            .node(to)
            .replica(g)
            .unwrap()
            .wait_for("lead", WAIT, move |s| s.role == Role::Leader)
            .await
            .unwrap();
        assert_eq!(s.leader, Some(to));
        writers.wait_acked(15).await;
    }
    let history = writers.stop().await;
    for g in c.groups.clone() {
        let data = c.converged(g, &[1, 2, 3]).await;
        assert!(check_exactly_once(g, &data, &history) > 0);
    }
    c.shutdown().await;
}

/// A leader's lease proves nothing once it has started handing its leadership over: voters
/// grant the transfer's election within the lease. From the transfer on, the old leader's
/// `leased_term` says no, while the new leader's lease, once acknowledged, says yes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_handing_over_its_leadership_claims_no_lease() {
    let c = Cluster::start(&[1, 2, 3], &[0]).await;
    let g = c.groups[0];
    let (old, replica) = leased_leader(&c, g).await;
    let to = [1, 2, 3].into_iter().find(|n| *n != old).unwrap();
    replica.transfer_leader(to).await.unwrap();
    assert_eq!(replica.leased_term(), None, "node {old} handed over {g}: no lease");
    let new = c.node(to).replica(g).unwrap();
    new.wait_for("lead", WAIT, move |s| s.role == Role::Leader).await.unwrap();
    wait_leased(&new).await;
    assert_eq!(replica.leased_term(), None);
    c.shutdown().await;
}

/// A group whose only voter leads holds the lease from its election on and all the while it
/// leads: a quorum of one needs no acknowledgement (and openraft records none), so its writes
/// take no read barrier each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_only_voter_holds_its_lease_while_it_leads() {
    let c = Cluster::start(&[1], &[0]).await;
    let g = c.groups[0];
    assert_eq!(c.leader(g).await, 1);
    let replica = c.node(1).replica(g).unwrap();
    let term = replica.leadership().term;
    assert_eq!(replica.leased_term(), Some(term));
    tokio::time::sleep(replica.election_timeout() * 2).await;
    assert_eq!(replica.leased_term(), Some(term), "a lease later, no message sent");
    c.shutdown().await;
}

/// A leader of three voters cut off from the other two loses its lease within a lease: only
/// a group whose single voter it is keeps one without acknowledgements.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_cut_off_from_its_voters_loses_its_lease() {
    let c = Cluster::start(&[1, 2, 3], &[0]).await;
    let g = c.groups[0];
    let (leader, replica) = leased_leader(&c, g).await;
    c.net.isolate(leader, [1, 2, 3]);
    tokio::time::sleep(replica.election_timeout() * 2).await;
    assert_eq!(replica.leased_term(), None, "no acknowledgement for two leases");
    c.net.heal_all();
    c.shutdown().await;
}

/// Group `g`'s leader and its replica there, once its lease holds.
async fn leased_leader(
    c: &Cluster,
    g: strata_replication::GroupId,
) -> (strata_replication::NodeId, strata_replication::Replica) {
    let leader = c.leader(g).await;
    let replica = c.node(leader).replica(g).unwrap();
    wait_leased(&replica).await;
    (leader, replica)
}

/// Waits, at most `WAIT`, until `replica`'s leader lease holds.
async fn wait_leased(replica: &strata_replication::Replica) {
    let deadline = std::time::Instant::now() + WAIT;
    while replica.leased_term().is_none() {
        assert!(std::time::Instant::now() < deadline, "the leader's lease never held");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// Asks node `asked` whether it leads `g` and lists `node`, as `RaftNode::leave_group` does.
async fn membership(c: &Cluster, asked: NodeId, g: GroupId, node: NodeId) -> MembershipReply {
    let frame = rpc::encode_request(g, &Request::Membership(node));
    let answer = c.node(asked).handle(frame).await;
    match rpc::decode_response(&answer).unwrap() {
        Response::Membership(m) => m,
        other => panic!("{g}: node {asked} answered {other:?}"),
    }
}

/// Regression: a node dropped its replica of a group as soon as it stopped voting, while the
/// leader still listed it as a learner; the leader then took a replica opened there again
/// on empty storage for the dropped one, as far along as it had been, and the cluster's
/// reconcile could promote it to voter on that. Now the replica stays until the leader no
/// longer lists the node, and a node added back is matched from nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_leaves_its_node_only_once_the_leader_no_longer_lists_it() {
    let mut c = Cluster::start(&[1, 2, 3], &[0]).await;
    let g = c.groups[0];
    c.start_node(4).await;
    let writers = Writers::start(&c, 2);
    writers.wait_acked(20).await;
    let l = c.leader(g).await;
    let follower = [1, 2, 3].into_iter().find(|n| *n != l).unwrap();
    let hints = [(1, Peer::default()), (2, Peer::default()), (3, Peer::default())];
    c.node(l).replica(g).unwrap().add_learner(4, Peer::default()).await.unwrap();
    // A replica that never heard of its group stays while no one answers for it, and leaves
    // once a node it is told of (the cluster map's) answers that the leader does not list it.
    c.start_node(5).await;
    assert!(matches!(c.node(5).leave_group(g, &[]).await.unwrap(), Left::Unknown(_)));
    assert!(c.node(5).replica(g).is_some());
    assert_eq!(c.node(5).leave_group(g, &hints).await.unwrap(), Left::Removed);
    assert!(c.node(5).replica(g).is_none());
    // Added (its first entries arrived or not): asked by its hints, the leader lists it.
    assert_eq!(c.node(4).leave_group(g, &hints).await.unwrap(), Left::Member);
    c.node(4)
        .replica(g)
        .unwrap()
        .wait_for("node 4 hears of its group", WAIT, |s| s.membership.membership.nodes.len() == 4)
        .await
        .unwrap();

    // The leader answers from its membership; a follower names the leader.
    assert_eq!(membership(&c, l, g, 4).await, MembershipReply::Member);
    assert_eq!(membership(&c, l, g, 5).await, MembershipReply::NotMember);
    assert_eq!(membership(&c, follower, g, 4).await, MembershipReply::NotLeader(Some(l)));

    // A voter, and a learner its leader lists, stay.
    assert_eq!(c.node(follower).leave_group(g, &[]).await.unwrap(), Left::Member);
    assert_eq!(c.node(4).leave_group(g, &[]).await.unwrap(), Left::Member);
    assert!(c.node(4).replica(g).is_some());
    writers.wait_acked(10).await;
    let matched = c.node(l).replica(g).unwrap().status().replication[&4];
    assert!(matched.is_some_and(|m| m > 0), "{g}: node 4 matched {matched:?}");

    // Removed by the leader: it leaves, and the leader, adding it back before the node opens
    // the group again, matches it from nothing (the old replica's match is gone with it).
    let leader = c.node(l).replica(g).unwrap();
    leader.remove_learners(BTreeSet::from([4])).await.unwrap();
    assert_eq!(c.node(4).leave_group(g, &[]).await.unwrap(), Left::Removed);
    assert!(c.node(4).replica(g).is_none());
    leader.begin_add_learner(4, Peer::default()).await.unwrap();
    writers.wait_acked(10).await;
    assert_eq!(leader.status().replication.get(&4), Some(&None), "{g}: node 4 has no replica");

    // Opened again on empty storage, it catches up from the log and can then vote.
    c.node(4).open_group(g, OnEmpty::CatchUp).await.unwrap();
    leader
        .wait_for("node 4 caught up", WAIT, |s| {
            let last = s.last_log_index.unwrap_or(0);
            s.replication.get(&4).copied().flatten().is_some_and(|m| m + 8 >= last)
        })
        .await
        .unwrap();
    leader.change_voters(BTreeSet::from([1, 2, 3, 4])).await.unwrap();
    writers.wait_acked(10).await;
    let history = writers.stop().await;
    let data = c.converged(g, &[1, 2, 3, 4]).await;
    assert!(check_exactly_once(g, &data, &history) > 0);
    c.shutdown().await;
}
