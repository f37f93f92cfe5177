//! A replica leaves its node ([`RaftNode::leave_group`]) only once its group's leader no
//! longer lists the node as a member.
//!
//! A leader keeps how far each member's log matches its own (openraft's progress) for as long
//! as its membership lists the member, and takes a new member's from nothing. A replica
//! deleted while the leader still listed its node as a learner, and opened again on empty
//! storage (the cluster map gave the partition back), would be taken by that leader as being
//! where the deleted one was: promoted to voter on that stale match, it could acknowledge
//! nothing until it had caught up, and the group would have one voter fewer than it counts.
//!
//! So a replica about to be deleted asks the group's leader whether it lists the node
//! ([`Request::Membership`]), and is deleted only on a "no". While it asks, its node refuses
//! every other request for the group, so nothing the replica answers can raise the leader's
//! match after the answer. A leader that adds the node back later gives it a new progress,
//! and a newly elected leader starts every member's progress afresh.
//!
//! The one asked first is the leader the replica knows, then any node an answer names as the
//! leader, then the voters of the replica's membership, then the caller's hints (for a
//! replica that never heard of its group, the nodes that should hold it); the answer of a
//! replica that believes it leads is taken (a deposed leader's "no" is safe: every later
//! leader starts the progress afresh). Without an answer the replica stays, and the caller
//! asks again later: a leader may have added the node a moment ago, its first entries on
//! their way, however empty the replica looks.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::node::{RaftNode, Replica};
use crate::error::Result;
use crate::rpc::{self, MembershipReply, Request, Response};
use crate::types::{GroupId, NodeId, Peer};

/// What [`RaftNode::leave_group`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Left {
    /// The replica is deleted (or was not open).
    Removed,
    /// The replica is kept: it votes, or the leader still lists this node.
    Member,
    /// The replica is kept: no leader answered (what the last node asked said).
    Unknown(String),
}

/// How many nodes one leave asks at most (the known leader, those named, the voters).
const MAX_ASKED: usize = 8;

impl RaftNode {
    /// Deletes this node's replica of `group` ([`RaftNode::remove_group`]) unless it votes in
    /// its own membership or the group's leader still lists this node (the module's text).
    /// `hints` are more nodes to ask, with their addresses (the cluster map's replicas of the
    /// group), for a replica that knows no leader or voter: one that never heard of its group.
    pub async fn leave_group(&self, group: GroupId, hints: &[(NodeId, Peer)]) -> Result<Left> {
        let Some(replica) = self.replica(group) else { return Ok(Left::Removed) };
        let st = replica.status();
        let me = self.id();
        let membership = &st.membership.membership;
        if membership.voters().contains(&me) {
            return Ok(Left::Member);
        }
        let known = membership.nodes.iter().map(|(id, p)| (*id, p));
        for (id, peer) in known.chain(hints.iter().map(|(id, p)| (*id, p))) {
            if id != me && !peer.addr.is_empty() {
                self.transport().learn_addr(id, &peer.addr);
            }
        }
        let mut ask: Vec<NodeId> = st.leader.into_iter().collect();
        ask.extend(membership.voters());
        ask.extend(hints.iter().map(|(id, _)| *id));
        let _refusing = Refusing::start(&replica);
        let mut asked = BTreeSet::new();
        let mut last = String::from("no leader known and no node to ask");
        let mut i = 0;
        while i < ask.len() && asked.len() < MAX_ASKED {
            let node = ask[i];
            i += 1;
            if node == me || !asked.insert(node) {
                continue;
            }
            match self.ask_membership(group, node).await {
                Ok(MembershipReply::NotMember) => {
                    self.remove_group(group).await?;
                    return Ok(Left::Removed);
                }
                Ok(MembershipReply::Member) => return Ok(Left::Member),
                Ok(MembershipReply::NotLeader(named)) => {
                    last = format!("node {node} does not lead {group}");
                    // Asked next: the leader it names goes before the others.
                    if let Some(l) = named.filter(|l| !asked.contains(l)) {
                        ask.insert(i, l);
                    }
                }
                Err(e) => last = format!("node {node}: {e}"),
            }
        }
        Ok(Left::Unknown(last))
    }

    /// Asks `node` whether it leads `group` and lists this node.
    async fn ask_membership(
        &self,
        group: GroupId,
        node: NodeId,
    ) -> std::result::Result<MembershipReply, String> {
        let frame = rpc::encode_request(group, &Request::Membership(self.id()));
        let timeout = Duration::from_millis(self.election_timeout_ms());
        let reply = self.transport().call(node, frame, timeout).await.map_err(|e| e.to_string())?;
        match rpc::decode_response(&reply) {
            Ok(Response::Membership(m)) => Ok(m),
            Ok(Response::Error(e)) => Err(e),
            Ok(other) => Err(format!("an unexpected response {other:?}")),
            Err(e) => Err(format!("a bad response: {e}")),
        }
    }
}

/// The answer of `replica` to whether it leads and lists `node`: from its membership as
/// its log last changed it (the one its replication progress follows).
pub(super) fn membership_reply(replica: &Replica, node: NodeId) -> MembershipReply {
    let st = replica.status();
    if st.role != super::Role::Leader {
        return MembershipReply::NotLeader(st.leader);
    }
    if st.membership.membership.nodes.contains_key(&node) {
        MembershipReply::Member
    } else {
        MembershipReply::NotMember
    }
}

/// While alive, the node refuses every request for the replica's group.
struct Refusing<'a>(&'a Replica);

impl<'a> Refusing<'a> {
    fn start(replica: &'a Replica) -> Refusing<'a> {
        replica.leaving().store(true, Ordering::SeqCst);
        Refusing(replica)
    }
}

impl Drop for Refusing<'_> {
    fn drop(&mut self) {
        self.0.leaving().store(false, Ordering::SeqCst);
    }
}
