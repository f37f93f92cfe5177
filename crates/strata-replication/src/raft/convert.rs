//! Conversions between openraft's types and the crate's own, at the adapter's edge.

use std::io;

use openraft::impls::leader_id_adv::LeaderId;
use openraft::type_config::alias::{EntryOf, LogIdOf, SnapshotMetaOf, StoredMembershipOf, VoteOf};
use openraft::EntryPayload;

use super::TypeConfig;
use crate::types::{
    Command, Entry, LogId, Membership, Payload, SnapshotMeta, StoredMembership, Vote,
};

type C = TypeConfig;

pub(crate) fn log_id_in(id: &LogIdOf<C>) -> LogId {
    LogId { term: id.leader_id.term, leader: id.leader_id.node_id, index: id.index }
}

pub(crate) fn log_id_out(id: &LogId) -> LogIdOf<C> {
    LogIdOf::<C>::new(LeaderId { term: id.term, node_id: id.leader }, id.index)
}

pub(crate) fn opt_log_id_in(id: Option<&LogIdOf<C>>) -> Option<LogId> {
    id.map(log_id_in)
}

pub(crate) fn opt_log_id_out(id: Option<&LogId>) -> Option<LogIdOf<C>> {
    id.map(log_id_out)
}

pub(crate) fn vote_in(v: &VoteOf<C>) -> Vote {
    Vote { term: v.leader_id.term, node: v.leader_id.node_id, committed: v.committed }
}

pub(crate) fn vote_out(v: &Vote) -> VoteOf<C> {
    openraft::Vote { leader_id: LeaderId { term: v.term, node_id: v.node }, committed: v.committed }
}

pub(crate) fn membership_in(m: &openraft::Membership<u64, crate::types::Peer>) -> Membership {
    Membership {
        configs: m.get_joint_config().clone(),
        nodes: m.nodes().map(|(id, peer)| (*id, peer.clone())).collect(),
    }
}

pub(crate) fn membership_out(
    m: &Membership,
) -> io::Result<openraft::Membership<u64, crate::types::Peer>> {
    openraft::Membership::new(m.configs.clone(), m.nodes.clone()).map_err(|e| {
        io::Error::new(io::ErrorKind::InvalidData, format!("invalid membership {m:?}: {e}"))
    })
}

pub(crate) fn stored_membership_in(m: &StoredMembershipOf<C>) -> StoredMembership {
    StoredMembership {
        log_id: opt_log_id_in(m.log_id().as_ref()),
        membership: membership_in(m.membership()),
    }
}

pub(crate) fn stored_membership_out(m: &StoredMembership) -> io::Result<StoredMembershipOf<C>> {
    Ok(StoredMembershipOf::<C>::new(
        opt_log_id_out(m.log_id.as_ref()),
        membership_out(&m.membership)?,
    ))
}

pub(crate) fn entry_in(e: EntryOf<C>) -> Entry {
    let payload = match e.payload {
        EntryPayload::Blank => Payload::Blank,
        EntryPayload::Normal(cmd) => Payload::Normal(cmd.0),
        EntryPayload::Membership(m) => Payload::Membership(membership_in(&m)),
    };
    Entry { log_id: log_id_in(&e.log_id), payload }
}

pub(crate) fn entry_out(e: Entry) -> io::Result<EntryOf<C>> {
    let payload = match e.payload {
        Payload::Blank => EntryPayload::Blank,
        Payload::Normal(cmd) => EntryPayload::Normal(Command(cmd)),
        Payload::Membership(m) => EntryPayload::Membership(membership_out(&m)?),
    };
    Ok(openraft::Entry { log_id: log_id_out(&e.log_id), payload })
}

pub(crate) fn snapshot_meta_in(m: &SnapshotMetaOf<C>) -> SnapshotMeta {
    SnapshotMeta {
        last_log_id: opt_log_id_in(m.last_log_id.as_ref()),
        membership: stored_membership_in(&m.last_membership),
    }
}

pub(crate) fn snapshot_meta_out(m: &SnapshotMeta) -> io::Result<SnapshotMetaOf<C>> {
    Ok(openraft::SnapshotMeta {
        last_log_id: opt_log_id_out(m.last_log_id.as_ref()),
        last_membership: stored_membership_out(&m.membership)?,
    })
}
