//! The Raft log and each group's Raft metadata, as stored in the node's one Strata `Db`
//! (`docs/format/raft_log.md` mirrors this).
//!
//! ```text
//! column family `raft_log`: one record per log entry of every group
//!
//!   key   = group u32 BE | index u64 BE                       12 bytes
//!   value = version u8 (1) | term u64 | leader u64 | tag u8 | body
//!           tag 0 blank       body empty
//!           tag 1 normal      body = the command's bytes, to the end of the value
//!           tag 2 membership  body = membership
//!
//! column family `raft_meta`: a few records per group
//!
//!   key   = group u32 BE | kind u8                            5 bytes
//!           kind 1 vote        version u8 (1) | term u64 | node u64 | committed u8
//!           kind 2 purged      version u8 (1) | log id           (last purged entry)
//!           kind 3 applied     version u8 (1) | log id           (last applied entry)
//!           kind 4 membership  version u8 (1) | option<log id> | membership
//!                                                              (last applied membership)
//!           kind 5 installing  version u8 (1) | snapshot meta | dir (u32 len, UTF-8)
//!                                                              (a snapshot install under way)
//!           kind 6 rejoining   version u8 (1)                  (the replica found its storage
//!                                                              empty in an existing group and
//!                                                              has not caught up: rejoin.rs)
//!
//!   log id        = term u64 | leader u64 | index u64
//!   option<x>     = 0 u8 | 1 u8 x
//!   membership    = configs u32 | per config: voters u32, node id u64 each
//!                   nodes u32   | per node: id u64, addr (u32 len, UTF-8)
//!   snapshot meta = option<log id> (last included) | option<log id> | membership
//! ```
//!
//! Keys are big-endian so that the engine's byte order is (group, index) order: a group's log
//! is one contiguous range, truncated and purged with one range deletion. Values are
//! little-endian. Tags, kinds and the version byte are on-disk: never change them; a new
//! layout takes a new version and readers keep reading the old one.
//!
//! `applied` and `membership` are written in the same `WriteBatch` as the data the entry
//! produced, so a crash never separates them (`state_machine.rs`).

use crate::codec::{put_bool, put_bytes, put_u32, put_u64, put_u8, DecodeError, Reader};
use crate::types::{
    Entry, GroupId, LogId, Membership, NodeId, Payload, Peer, SnapshotMeta, StoredMembership, Vote,
};

/// Column family of the log entries.
pub const LOG_CF: &str = "raft_log";
/// Column family of votes, purge marks, applied ids and memberships.
pub const META_CF: &str = "raft_meta";

/// The format version of every value (on-disk: never change).
pub const VERSION: u8 = 1;

/// Payload tags (on-disk: never change).
const TAG_BLANK: u8 = 0;
const TAG_NORMAL: u8 = 1;
const TAG_MEMBERSHIP: u8 = 2;

/// Kinds of `raft_meta` records (on-disk: never change).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum MetaKind {
    /// The group's vote.
    Vote = 1,
    /// The last purged log id.
    Purged = 2,
    /// The last applied log id.
    Applied = 3,
    /// The last applied membership.
    Membership = 4,
    /// A snapshot install under way (its meta and files' directory).
    Installing = 5,
    /// The replica is catching up after finding its storage empty (`rejoin.rs`).
    Rejoining = 6,
}

/// The `raft_log` key of `group`'s entry at `index`.
pub fn log_key(group: GroupId, index: u64) -> [u8; 12] {
    let mut k = [0u8; 12];
    k[..4].copy_from_slice(&group.0.to_be_bytes());
    k[4..].copy_from_slice(&index.to_be_bytes());
    k
}

/// The index a `raft_log` key of `group` names.
pub fn log_key_index(group: GroupId, key: &[u8]) -> Result<u64, DecodeError> {
    if key.len() != 12 || key[..4] != group.0.to_be_bytes() {
        return Err(DecodeError { what: format!("a log key of {group}"), offset: 0 });
    }
    let mut a = [0u8; 8];
    a.copy_from_slice(&key[4..]);
    Ok(u64::from_be_bytes(a))
}

/// The `raft_meta` key of `group`'s record of `kind`.
pub fn meta_key(group: GroupId, kind: MetaKind) -> [u8; 5] {
    let mut k = [0u8; 5];
    k[..4].copy_from_slice(&group.0.to_be_bytes());
    k[4] = kind as u8;
    k
}

/// The group and kind of a `raft_meta` key (`None` for a key of another layout).
pub fn parse_meta_key(key: &[u8]) -> Option<(GroupId, u8)> {
    if key.len() != 5 {
        return None;
    }
    Some((GroupId(u32::from_be_bytes([key[0], key[1], key[2], key[3]])), key[4]))
}

pub(crate) fn put_log_id(out: &mut Vec<u8>, id: &LogId) {
    put_u64(out, id.term);
    put_u64(out, id.leader);
    put_u64(out, id.index);
}

pub(crate) fn put_opt_log_id(out: &mut Vec<u8>, id: Option<&LogId>) {
    match id {
        None => put_u8(out, 0),
        Some(id) => {
            put_u8(out, 1);
            put_log_id(out, id);
        }
    }
}

pub(crate) fn read_log_id(r: &mut Reader<'_>) -> Result<LogId, DecodeError> {
    Ok(LogId {
        term: r.u64("log id term")?,
        leader: r.u64("log id leader")?,
        index: r.u64("log id index")?,
    })
}

pub(crate) fn read_opt_log_id(r: &mut Reader<'_>) -> Result<Option<LogId>, DecodeError> {
    if r.bool("log id presence")? {
        Ok(Some(read_log_id(r)?))
    } else {
        Ok(None)
    }
}

pub(crate) fn put_membership(out: &mut Vec<u8>, m: &Membership) {
    put_u32(out, m.configs.len() as u32);
    for c in &m.configs {
        put_u32(out, c.len() as u32);
        for n in c {
            put_u64(out, *n);
        }
    }
    put_u32(out, m.nodes.len() as u32);
    for (id, peer) in &m.nodes {
        put_u64(out, *id);
        put_bytes(out, peer.addr.as_bytes());
    }
}

pub(crate) fn read_membership(r: &mut Reader<'_>) -> Result<Membership, DecodeError> {
    let mut m = Membership::default();
    let configs = r.count("membership config count", 4)?;
    for _ in 0..configs {
        let n = r.count("voter count", 8)?;
        let mut set = std::collections::BTreeSet::new();
        for _ in 0..n {
            set.insert(r.u64("voter id")? as NodeId);
        }
        m.configs.push(set);
    }
    let nodes = r.count("member count", 12)?;
    for _ in 0..nodes {
        let id = r.u64("member id")?;
        let addr = r.string("member address")?;
        m.nodes.insert(id, Peer { addr });
    }
    Ok(m)
}

pub(crate) fn put_snapshot_meta(out: &mut Vec<u8>, m: &SnapshotMeta) {
    put_opt_log_id(out, m.last_log_id.as_ref());
    put_opt_log_id(out, m.membership.log_id.as_ref());
    put_membership(out, &m.membership.membership);
}

pub(crate) fn read_snapshot_meta(r: &mut Reader<'_>) -> Result<SnapshotMeta, DecodeError> {
    let last_log_id = read_opt_log_id(r)?;
    let log_id = read_opt_log_id(r)?;
    let membership = read_membership(r)?;
    Ok(SnapshotMeta { last_log_id, membership: StoredMembership { log_id, membership } })
}

fn check_version(r: &mut Reader<'_>) -> Result<(), DecodeError> {
    let v = r.u8("format version")?;
    if v != VERSION {
        return Err(DecodeError {
            what: format!("format version {VERSION} (found {v})"),
            offset: 0,
        });
    }
    Ok(())
}

/// Encodes an entry's `raft_log` value (its index is in the key).
pub fn encode_entry(e: &Entry, out: &mut Vec<u8>) {
    put_u8(out, VERSION);
    put_u64(out, e.log_id.term);
    put_u64(out, e.log_id.leader);
    match &e.payload {
        Payload::Blank => put_u8(out, TAG_BLANK),
        Payload::Normal(cmd) => {
            put_u8(out, TAG_NORMAL);
            out.extend_from_slice(cmd);
        }
        Payload::Membership(m) => {
            put_u8(out, TAG_MEMBERSHIP);
            put_membership(out, m);
        }
    }
}

/// Decodes the `raft_log` value of the entry at `index`.
pub fn decode_entry(index: u64, value: &[u8]) -> Result<Entry, DecodeError> {
    let mut r = Reader::new(value);
    check_version(&mut r)?;
    let term = r.u64("term")?;
    let leader = r.u64("leader")?;
    let payload = match r.u8("payload tag")? {
        TAG_BLANK => Payload::Blank,
        TAG_NORMAL => Payload::Normal(r.rest().to_vec()),
        TAG_MEMBERSHIP => Payload::Membership(read_membership(&mut r)?),
        t => return Err(DecodeError { what: format!("a payload tag (found {t})"), offset: 17 }),
    };
    r.finish("the entry")?;
    Ok(Entry { log_id: LogId { term, leader, index }, payload })
}

/// Only the log id of an encoded entry (its payload unread).
pub fn decode_entry_log_id(index: u64, value: &[u8]) -> Result<LogId, DecodeError> {
    let mut r = Reader::new(value);
    check_version(&mut r)?;
    Ok(LogId { term: r.u64("term")?, leader: r.u64("leader")?, index })
}

/// Encodes a vote record.
pub fn encode_vote(v: &Vote) -> Vec<u8> {
    let mut out = Vec::with_capacity(18);
    put_u8(&mut out, VERSION);
    put_u64(&mut out, v.term);
    put_u64(&mut out, v.node);
    put_bool(&mut out, v.committed);
    out
}

/// Decodes a vote record.
pub fn decode_vote(value: &[u8]) -> Result<Vote, DecodeError> {
    let mut r = Reader::new(value);
    check_version(&mut r)?;
    let v = Vote { term: r.u64("term")?, node: r.u64("node")?, committed: r.bool("committed")? };
    r.finish("the vote")?;
    Ok(v)
}

/// Encodes a purged or applied log id record.
pub fn encode_log_id(id: &LogId) -> Vec<u8> {
    let mut out = Vec::with_capacity(25);
    put_u8(&mut out, VERSION);
    put_log_id(&mut out, id);
    out
}

/// Decodes a purged or applied log id record.
pub fn decode_log_id(value: &[u8]) -> Result<LogId, DecodeError> {
    let mut r = Reader::new(value);
    check_version(&mut r)?;
    let id = read_log_id(&mut r)?;
    r.finish("the log id")?;
    Ok(id)
}

/// Encodes a membership record.
pub fn encode_stored_membership(m: &StoredMembership) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    put_u8(&mut out, VERSION);
    put_opt_log_id(&mut out, m.log_id.as_ref());
    put_membership(&mut out, &m.membership);
    out
}

/// Decodes a membership record.
pub fn decode_stored_membership(value: &[u8]) -> Result<StoredMembership, DecodeError> {
    let mut r = Reader::new(value);
    check_version(&mut r)?;
    let log_id = read_opt_log_id(&mut r)?;
    let membership = read_membership(&mut r)?;
    r.finish("the membership")?;
    Ok(StoredMembership { log_id, membership })
}

/// Encodes an install-under-way record.
pub fn encode_installing(meta: &SnapshotMeta, dir: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    put_u8(&mut out, VERSION);
    put_snapshot_meta(&mut out, meta);
    put_bytes(&mut out, dir.as_bytes());
    out
}

/// Decodes an install-under-way record.
pub fn decode_installing(value: &[u8]) -> Result<(SnapshotMeta, String), DecodeError> {
    let mut r = Reader::new(value);
    check_version(&mut r)?;
    let meta = read_snapshot_meta(&mut r)?;
    let dir = r.string("snapshot directory")?;
    r.finish("the install record")?;
    Ok((meta, dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn membership() -> Membership {
        Membership {
            configs: vec![[1, 2, 3].into(), [2, 3, 4].into()],
            nodes: [(1, "a:1"), (2, "b:2"), (3, ""), (4, "d"), (5, "learner")]
                .into_iter()
                .map(|(n, a)| (n, Peer { addr: a.into() }))
                .collect(),
        }
    }

    #[test]
    fn every_record_round_trips() {
        let id = LogId { term: 7, leader: 3, index: 42 };
        for payload in [
            Payload::Blank,
            Payload::Normal(b"SET k v".to_vec()),
            Payload::Normal(vec![]),
            Payload::Membership(membership()),
        ] {
            let e = Entry { log_id: id, payload };
            let mut v = Vec::new();
            encode_entry(&e, &mut v);
            assert_eq!(decode_entry(42, &v).unwrap(), e);
            assert_eq!(decode_entry_log_id(42, &v).unwrap(), id);
        }
        let vote = Vote { term: 9, node: 2, committed: true };
        assert_eq!(decode_vote(&encode_vote(&vote)).unwrap(), vote);
        assert_eq!(decode_log_id(&encode_log_id(&id)).unwrap(), id);
        let sm = StoredMembership { log_id: Some(id), membership: membership() };
        assert_eq!(decode_stored_membership(&encode_stored_membership(&sm)).unwrap(), sm);
        let meta = SnapshotMeta { last_log_id: Some(id), membership: sm };
        assert_eq!(
            decode_installing(&encode_installing(&meta, "/x/y")).unwrap(),
            (meta, "/x/y".into())
        );
    }

    #[test]
    fn keys_sort_by_group_then_index() {
        let keys = [log_key(GroupId(1), 5), log_key(GroupId(1), 256), log_key(GroupId(2), 0)];
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(log_key_index(GroupId(1), &keys[1]).unwrap(), 256);
        assert!(log_key_index(GroupId(2), &keys[1]).is_err());
        assert_eq!(parse_meta_key(&meta_key(GroupId(9), MetaKind::Vote)), Some((GroupId(9), 1)));
    }

    #[test]
    fn damaged_records_are_errors_never_panics() {
        let e = Entry {
            log_id: LogId { term: 1, leader: 1, index: 3 },
            payload: Payload::Membership(membership()),
        };
        let mut v = Vec::new();
        encode_entry(&e, &mut v);
        for cut in 0..v.len() {
            // A cut membership is an error; a cut normal payload would just be shorter.
            assert!(decode_entry(3, &v[..cut]).is_err(), "cut at {cut}");
        }
        for i in 0..v.len() {
            for bit in 0..8 {
                let mut d = v.clone();
                d[i] ^= 1 << bit;
                let _ = decode_entry(3, &d);
            }
        }
        let mut bad = v.clone();
        bad[0] = 2;
        assert!(decode_entry(3, &bad)
            .unwrap_err()
            .to_string()
            .contains("format version 1 (found 2)"));
        assert!(decode_vote(&[1, 0]).is_err());
        assert!(decode_log_id(&[]).is_err());
    }
}
