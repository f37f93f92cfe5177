//! The messages nodes exchange, in the crate's own types, and their wire encoding. A request
//! names its group, so the messages of every group between two nodes share one connection.
//!
//! ```text
//! request  = version u8 (1) | group u32 | kind u8 | body
//!   kind 1 append          vote | option<log id> prev | option<log id> commit
//!                          | count u32 | per entry: index u64, entry (u32 len; raft_log value)
//!   kind 2 vote, 3 pre-vote  vote | option<log id> last | leadership transfer u8
//!   kind 4 snapshot piece  from u64 | transfer u64 | vote | snapshot meta | files
//!                          | option<chunk: file u32, offset u64, data (u32 len), crc32c u32>
//!                          | done u8
//!   kind 5 transfer leader vote | to u64 | option<log id>
//!   kind 6 membership      node u64 (is it a member, asked of the group's leader)
//! response = version u8 (1) | kind u8 | body
//!   kind 0 error           message (u32 len, UTF-8)
//!   kind 1 append          0 success | 1 partial, option<log id> | 2 conflict | 3 higher, vote
//!   kind 2 vote            vote | granted u8 | option<log id>
//!   kind 4 snapshot        0 chunk taken | 1 installed, vote
//!   kind 5 transfer leader 0 ok | 1 vote changed, vote, vote | 2 log behind, 2 × option<log id>
//!   kind 6 membership      0 not the leader, option<u64> leader known | 1 a member | 2 not one
//! vote = term u64 | node u64 | committed u8; log id, snapshot meta: as in `log_format.rs`
//! files = count u32 | per file: name, cf (u32 len, UTF-8 each), size u64, crc32c u32
//! ```
//!
//! Little-endian integers; kinds and tags never change meaning (a new one takes a new number).

use crate::codec::{put_bool, put_bytes, put_u32, put_u64, put_u8, DecodeError, Reader};
use crate::log_format::{
    decode_entry, encode_entry, put_opt_log_id, put_snapshot_meta, read_opt_log_id,
    read_snapshot_meta,
};
use crate::snapshot::transfer::Chunk;
use crate::snapshot::SnapshotFile;
use crate::types::{Entry, GroupId, LogId, NodeId, SnapshotMeta, Vote};

const VERSION: u8 = 1;

/// Replicates entries (and carries the commit point and heartbeats).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppendRequest {
    /// The leader's vote.
    pub vote: Vote,
    /// The entry before `entries`.
    pub prev_log_id: Option<LogId>,
    /// The entries.
    pub entries: Vec<Entry>,
    /// The leader's commit point.
    pub leader_commit: Option<LogId>,
}

/// The follower's answer to an append.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AppendResponse {
    /// Every entry is in the follower's log.
    Success,
    /// Entries up to the given one are.
    PartialSuccess(Option<LogId>),
    /// `prev_log_id` does not match the follower's log.
    Conflict,
    /// The follower has seen a higher vote.
    HigherVote(Vote),
}

/// A (pre-)vote request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VoteRequest {
    /// The candidate's vote.
    pub vote: Vote,
    /// The candidate's last log id.
    pub last_log_id: Option<LogId>,
    /// Whether the candidate was handed the leadership.
    pub leadership_transfer: bool,
}

/// The answer to a (pre-)vote request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VoteResponse {
    /// The responder's vote.
    pub vote: Vote,
    /// Whether it was granted.
    pub granted: bool,
    /// The responder's last log id.
    pub last_log_id: Option<LogId>,
}

/// One request of a snapshot transfer: the snapshot's description and at most one chunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotPiece {
    /// The sending node.
    pub from: NodeId,
    /// Identifies the transfer among the sender's.
    pub transfer: u64,
    /// The leader's vote.
    pub vote: Vote,
    /// What the snapshot holds.
    pub meta: SnapshotMeta,
    /// Its files.
    pub files: Vec<SnapshotFile>,
    /// The next chunk, if any is left.
    pub chunk: Option<Chunk>,
    /// Whether this is the last request of the transfer.
    pub done: bool,
}

/// The answer to a snapshot piece.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SnapshotReply {
    /// The chunk was taken.
    Received,
    /// The transfer is complete and Raft took the snapshot; the receiver's vote.
    Installed(Vote),
}

/// The leader hands its leadership to `to`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransferLeaderRequest {
    /// The leader's vote.
    pub from_leader: Vote,
    /// The node to take over.
    pub to: NodeId,
    /// The leader's last log id.
    pub last_log_id: Option<LogId>,
}

/// The answer to a leadership transfer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransferLeaderResponse {
    /// The target starts an election.
    Ok,
    /// The target's vote changed since the request was made.
    VoteChanged {
        /// The vote the request carried.
        expected: Vote,
        /// The target's vote.
        actual: Vote,
    },
    /// The target's log is behind the leader's.
    LogNotFlushed {
        /// The leader's last log id.
        expected: Option<LogId>,
        /// The target's.
        actual: Option<LogId>,
    },
}

/// A request to one group on another node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Append entries.
    Append(AppendRequest),
    /// Vote.
    Vote(VoteRequest),
    /// Pre-vote (asks whether a vote would be granted, changing nothing).
    PreVote(VoteRequest),
    /// A piece of a snapshot transfer.
    Snapshot(SnapshotPiece),
    /// Leadership transfer.
    TransferLeader(TransferLeaderRequest),
    /// Whether the given node is a member (voter or learner) of the group, asked of its
    /// leader by a replica about to delete itself ([`crate::RaftNode::leave_group`]).
    Membership(NodeId),
}

/// The answer to [`Request::Membership`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MembershipReply {
    /// The asked replica does not lead; the leader it knows of.
    NotLeader(Option<NodeId>),
    /// The leader's membership (the last one in its log) lists the node.
    Member,
    /// It does not.
    NotMember,
}

/// The answer to a [`Request`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response {
    /// The request failed on the receiver (no such group, Raft stopped, ...).
    Error(String),
    /// To an append.
    Append(AppendResponse),
    /// To a vote or pre-vote.
    Vote(VoteResponse),
    /// To a snapshot piece.
    Snapshot(SnapshotReply),
    /// To a leadership transfer.
    TransferLeader(TransferLeaderResponse),
    /// To a membership question.
    Membership(MembershipReply),
}

fn put_vote(out: &mut Vec<u8>, v: &Vote) {
    put_u64(out, v.term);
    put_u64(out, v.node);
    put_bool(out, v.committed);
}

fn read_vote(r: &mut Reader<'_>) -> Result<Vote, DecodeError> {
    Ok(Vote {
        term: r.u64("vote term")?,
        node: r.u64("vote node")?,
        committed: r.bool("vote committed")?,
    })
}

/// Encodes a request to `group`.
pub fn encode_request(group: GroupId, req: &Request) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    put_u8(&mut out, VERSION);
    put_u32(&mut out, group.0);
    match req {
        Request::Append(a) => {
            put_u8(&mut out, 1);
            put_vote(&mut out, &a.vote);
            put_opt_log_id(&mut out, a.prev_log_id.as_ref());
            put_opt_log_id(&mut out, a.leader_commit.as_ref());
            put_u32(&mut out, a.entries.len() as u32);
            let mut value = Vec::new();
            for e in &a.entries {
                put_u64(&mut out, e.log_id.index);
                value.clear();
                encode_entry(e, &mut value);
                put_bytes(&mut out, &value);
            }
        }
        Request::Vote(v) | Request::PreVote(v) => {
            put_u8(&mut out, if matches!(req, Request::Vote(_)) { 2 } else { 3 });
            put_vote(&mut out, &v.vote);
            put_opt_log_id(&mut out, v.last_log_id.as_ref());
            put_bool(&mut out, v.leadership_transfer);
        }
        Request::Snapshot(p) => {
            put_u8(&mut out, 4);
            put_u64(&mut out, p.from);
            put_u64(&mut out, p.transfer);
            put_vote(&mut out, &p.vote);
            put_snapshot_meta(&mut out, &p.meta);
            put_u32(&mut out, p.files.len() as u32);
            for f in &p.files {
                put_bytes(&mut out, f.name.as_bytes());
                put_bytes(&mut out, f.cf.as_bytes());
                put_u64(&mut out, f.size);
                put_u32(&mut out, f.crc32c);
            }
            match &p.chunk {
                None => put_u8(&mut out, 0),
                Some(c) => {
                    put_u8(&mut out, 1);
                    put_u32(&mut out, c.file);
                    put_u64(&mut out, c.offset);
                    put_bytes(&mut out, &c.data);
                    put_u32(&mut out, c.crc32c);
                }
            }
            put_bool(&mut out, p.done);
        }
        Request::TransferLeader(t) => {
            put_u8(&mut out, 5);
            put_vote(&mut out, &t.from_leader);
            put_u64(&mut out, t.to);
            put_opt_log_id(&mut out, t.last_log_id.as_ref());
        }
        Request::Membership(node) => {
            put_u8(&mut out, 6);
            put_u64(&mut out, *node);
        }
    }
    out
}

/// Decodes a request and the group it is for.
pub fn decode_request(frame: &[u8]) -> Result<(GroupId, Request), DecodeError> {
    let mut r = Reader::new(frame);
    let v = r.u8("message version")?;
    if v != VERSION {
        return Err(DecodeError {
            what: format!("message version {VERSION} (found {v})"),
            offset: 0,
        });
    }
    let group = GroupId(r.u32("group")?);
    let req = match r.u8("request kind")? {
        1 => {
            let vote = read_vote(&mut r)?;
            let prev_log_id = read_opt_log_id(&mut r)?;
            let leader_commit = read_opt_log_id(&mut r)?;
            let n = r.count("entry count", 12)?;
            let mut entries = Vec::with_capacity(n);
            for _ in 0..n {
                let index = r.u64("entry index")?;
                let value = r.bytes("entry")?;
                entries.push(decode_entry(index, value)?);
            }
            Request::Append(AppendRequest { vote, prev_log_id, entries, leader_commit })
        }
        k @ (2 | 3) => {
            let v = VoteRequest {
                vote: read_vote(&mut r)?,
                last_log_id: read_opt_log_id(&mut r)?,
                leadership_transfer: r.bool("leadership transfer")?,
            };
            if k == 2 {
                Request::Vote(v)
            } else {
                Request::PreVote(v)
            }
        }
        4 => {
            let from = r.u64("sender")?;
            let transfer = r.u64("transfer id")?;
            let vote = read_vote(&mut r)?;
            let meta = read_snapshot_meta(&mut r)?;
            let n = r.count("file count", 24)?;
            let mut files = Vec::with_capacity(n);
            for _ in 0..n {
                files.push(SnapshotFile {
                    name: r.string("file name")?,
                    cf: r.string("file column family")?,
                    size: r.u64("file size")?,
                    crc32c: r.u32("file crc32c")?,
                });
            }
            let chunk = if r.bool("chunk presence")? {
                Some(Chunk {
                    file: r.u32("chunk file")?,
                    offset: r.u64("chunk offset")?,
                    data: r.bytes("chunk data")?.to_vec(),
                    crc32c: r.u32("chunk crc32c")?,
                })
            } else {
                None
            };
            let done = r.bool("last piece")?;
            Request::Snapshot(SnapshotPiece { from, transfer, vote, meta, files, chunk, done })
        }
        5 => Request::TransferLeader(TransferLeaderRequest {
            from_leader: read_vote(&mut r)?,
            to: r.u64("target node")?,
            last_log_id: read_opt_log_id(&mut r)?,
        }),
        6 => Request::Membership(r.u64("asked node")?),
        k => return Err(DecodeError { what: format!("a request kind (found {k})"), offset: 5 }),
    };
    r.finish("the request")?;
    Ok((group, req))
}

/// Encodes a response.
pub fn encode_response(resp: &Response) -> Vec<u8> {
    let mut out = Vec::with_capacity(32);
    put_u8(&mut out, VERSION);
    match resp {
        Response::Error(msg) => {
            put_u8(&mut out, 0);
            put_bytes(&mut out, msg.as_bytes());
        }
        Response::Append(a) => {
            put_u8(&mut out, 1);
            match a {
                AppendResponse::Success => put_u8(&mut out, 0),
                AppendResponse::PartialSuccess(id) => {
                    put_u8(&mut out, 1);
                    put_opt_log_id(&mut out, id.as_ref());
                }
                AppendResponse::Conflict => put_u8(&mut out, 2),
                AppendResponse::HigherVote(v) => {
                    put_u8(&mut out, 3);
                    put_vote(&mut out, v);
                }
            }
        }
        Response::Vote(v) => {
            put_u8(&mut out, 2);
            put_vote(&mut out, &v.vote);
            put_bool(&mut out, v.granted);
            put_opt_log_id(&mut out, v.last_log_id.as_ref());
        }
        Response::Snapshot(s) => {
            put_u8(&mut out, 4);
            match s {
                SnapshotReply::Received => put_u8(&mut out, 0),
                SnapshotReply::Installed(v) => {
                    put_u8(&mut out, 1);
                    put_vote(&mut out, v);
                }
            }
        }
        Response::TransferLeader(t) => {
            put_u8(&mut out, 5);
            match t {
                TransferLeaderResponse::Ok => put_u8(&mut out, 0),
                TransferLeaderResponse::VoteChanged { expected, actual } => {
                    put_u8(&mut out, 1);
                    put_vote(&mut out, expected);
                    put_vote(&mut out, actual);
                }
                TransferLeaderResponse::LogNotFlushed { expected, actual } => {
                    put_u8(&mut out, 2);
                    put_opt_log_id(&mut out, expected.as_ref());
                    put_opt_log_id(&mut out, actual.as_ref());
                }
            }
        }
        Response::Membership(m) => {
            put_u8(&mut out, 6);
            match m {
                MembershipReply::NotLeader(leader) => {
                    put_u8(&mut out, 0);
                    put_bool(&mut out, leader.is_some());
                    if let Some(l) = leader {
                        put_u64(&mut out, *l);
                    }
                }
                MembershipReply::Member => put_u8(&mut out, 1),
                MembershipReply::NotMember => put_u8(&mut out, 2),
            }
        }
    }
    out
}

/// Decodes a response.
pub fn decode_response(frame: &[u8]) -> Result<Response, DecodeError> {
    let mut r = Reader::new(frame);
    let v = r.u8("message version")?;
    if v != VERSION {
        return Err(DecodeError {
            what: format!("message version {VERSION} (found {v})"),
            offset: 0,
        });
    }
    let bad_tag = |t: u8| DecodeError { what: format!("a response tag (found {t})"), offset: 2 };
    let resp = match r.u8("response kind")? {
        0 => Response::Error(r.string("error message")?),
        1 => Response::Append(match r.u8("append result")? {
            0 => AppendResponse::Success,
            1 => AppendResponse::PartialSuccess(read_opt_log_id(&mut r)?),
            2 => AppendResponse::Conflict,
            3 => AppendResponse::HigherVote(read_vote(&mut r)?),
            t => return Err(bad_tag(t)),
        }),
        2 => Response::Vote(VoteResponse {
            vote: read_vote(&mut r)?,
            granted: r.bool("granted")?,
            last_log_id: read_opt_log_id(&mut r)?,
        }),
        4 => Response::Snapshot(match r.u8("snapshot result")? {
            0 => SnapshotReply::Received,
            1 => SnapshotReply::Installed(read_vote(&mut r)?),
            t => return Err(bad_tag(t)),
        }),
        5 => Response::TransferLeader(match r.u8("transfer result")? {
            0 => TransferLeaderResponse::Ok,
            1 => TransferLeaderResponse::VoteChanged {
                expected: read_vote(&mut r)?,
                actual: read_vote(&mut r)?,
            },
            2 => TransferLeaderResponse::LogNotFlushed {
                expected: read_opt_log_id(&mut r)?,
                actual: read_opt_log_id(&mut r)?,
            },
            t => return Err(bad_tag(t)),
        }),
        6 => Response::Membership(match r.u8("membership result")? {
            0 => MembershipReply::NotLeader(if r.bool("leader presence")? {
                Some(r.u64("leader")?)
            } else {
                None
            }),
            1 => MembershipReply::Member,
            2 => MembershipReply::NotMember,
            t => return Err(bad_tag(t)),
        }),
        k => return Err(DecodeError { what: format!("a response kind (found {k})"), offset: 1 }),
    };
    r.finish("the response")?;
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Membership, Payload, Peer, StoredMembership};

    fn id(i: u64) -> LogId {
        LogId { term: 3, leader: 2, index: i }
    }

    #[test]
    fn every_message_round_trips() {
        let vote = Vote { term: 4, node: 1, committed: true };
        let membership = Membership {
            configs: vec![[1, 2].into()],
            nodes: [(1, Peer { addr: "a".into() }), (2, Peer::default())].into_iter().collect(),
        };
        let meta = SnapshotMeta {
            last_log_id: Some(id(9)),
            membership: StoredMembership { log_id: Some(id(2)), membership: membership.clone() },
        };
        let requests = [
            Request::Append(AppendRequest {
                vote,
                prev_log_id: Some(id(4)),
                entries: vec![
                    Entry { log_id: id(5), payload: Payload::Normal(b"x".to_vec()) },
                    Entry { log_id: id(6), payload: Payload::Membership(membership) },
                    Entry { log_id: id(7), payload: Payload::Blank },
                ],
                leader_commit: None,
            }),
            Request::Vote(VoteRequest { vote, last_log_id: None, leadership_transfer: true }),
            Request::PreVote(VoteRequest {
                vote,
                last_log_id: Some(id(1)),
                leadership_transfer: false,
            }),
            Request::Snapshot(SnapshotPiece {
                from: 3,
                transfer: 77,
                vote,
                meta,
                files: vec![SnapshotFile {
                    name: "0.sst".into(),
                    cf: "default".into(),
                    size: 5,
                    crc32c: 9,
                }],
                chunk: Some(Chunk { file: 0, offset: 0, data: b"hello".to_vec(), crc32c: 1 }),
                done: true,
            }),
            Request::TransferLeader(TransferLeaderRequest {
                from_leader: vote,
                to: 2,
                last_log_id: Some(id(8)),
            }),
            Request::Membership(4),
        ];
        for req in requests {
            let frame = encode_request(GroupId(12), &req);
            assert_eq!(decode_request(&frame).unwrap(), (GroupId(12), req.clone()));
            for cut in 0..frame.len() {
                assert!(decode_request(&frame[..cut]).is_err(), "{req:?} cut at {cut}");
            }
        }
        let responses = [
            Response::Error("no such group".into()),
            Response::Append(AppendResponse::Success),
            Response::Append(AppendResponse::PartialSuccess(Some(id(3)))),
            Response::Append(AppendResponse::Conflict),
            Response::Append(AppendResponse::HigherVote(vote)),
            Response::Vote(VoteResponse { vote, granted: true, last_log_id: None }),
            Response::Snapshot(SnapshotReply::Received),
            Response::Snapshot(SnapshotReply::Installed(vote)),
            Response::TransferLeader(TransferLeaderResponse::Ok),
            Response::TransferLeader(TransferLeaderResponse::VoteChanged {
                expected: vote,
                actual: vote,
            }),
            Response::TransferLeader(TransferLeaderResponse::LogNotFlushed {
                expected: Some(id(1)),
                actual: None,
            }),
            Response::Membership(MembershipReply::NotLeader(Some(3))),
            Response::Membership(MembershipReply::NotLeader(None)),
            Response::Membership(MembershipReply::Member),
            Response::Membership(MembershipReply::NotMember),
        ];
        for resp in responses {
            let frame = encode_response(&resp);
            assert_eq!(decode_response(&frame).unwrap(), resp);
            for cut in 0..frame.len() {
                assert!(decode_response(&frame[..cut]).is_err(), "{resp:?} cut at {cut}");
            }
        }
    }
}
