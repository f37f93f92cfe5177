//! openraft's network traits over a [`Transport`]: each call is encoded as a `rpc` frame
//! naming its group and sent with the deadline openraft gives it (every call times out).
//! Snapshots go as a sequence of pieces, one chunk each.
//!
//! **A stale replication stream is ended here.** openraft (0.10.0-alpha.37) resets a
//! follower's progress when a heartbeat finds its log gone back (a lost disk, with
//! `allow_log_reversion`), without ending the stream session already running to it; it then
//! purges the log the session still reads. A session whose read comes back empty sends an
//! entry-less request from the same `prev` and reads again every 10 ms, never looking for the
//! new payload (a snapshot, then the log after it): the follower stays at its snapshot. A
//! live session never reads what the log has purged (openraft postpones purging the entries a
//! session is sending), so the log store notes such a read ([`super::PurgedRead`]), and the
//! entry-less append that follows it, starting right before the read, fails here without
//! being sent: that ends the session, and openraft's next one carries the current payload.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use openraft::error::{
    NetworkError, RPCError, ReplicationClosed, StreamingError, Timeout, Unreachable,
};
use openraft::network::{RPCOption, RPCTypes, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, TransferLeaderError,
    TransferLeaderRequest, TransferLeaderResponse, VoteRequest, VoteResponse,
};
use openraft::type_config::alias::{SnapshotOf, VoteOf};
use openraft::{OptionalSend, RaftNetworkV2};

use super::convert::{
    entry_in, log_id_out, opt_log_id_in, opt_log_id_out, snapshot_meta_in, vote_in, vote_out,
};
use super::{blocking, PurgedRead, TypeConfig};
use crate::error::Error;
use crate::rpc::{self, Request, Response, SnapshotPiece, SnapshotReply};
use crate::snapshot::transfer::ChunkReader;
use crate::snapshot::SnapshotFiles;
use crate::transport::{Transport, TransportError};
use crate::types::{GroupId, NodeId, Peer};

type C = TypeConfig;

/// Makes the clients of one group on one node.
pub struct NetworkFactory {
    group: GroupId,
    from: NodeId,
    transport: Arc<dyn Transport>,
    chunk_bytes: usize,
    purged_reads: PurgedRead,
}

impl NetworkFactory {
    /// Clients of `group` on node `from`, sending through `transport`; `purged_reads` is
    /// shared with the group's log store (a stale replication stream, above).
    pub fn new(
        group: GroupId,
        from: NodeId,
        transport: Arc<dyn Transport>,
        chunk_bytes: usize,
        purged_reads: PurgedRead,
    ) -> Self {
        NetworkFactory { group, from, transport, chunk_bytes, purged_reads }
    }
}

impl RaftNetworkFactory<C> for NetworkFactory {
    type Network = GroupClient;

    async fn new_client(&mut self, target: NodeId, node: &Peer) -> GroupClient {
        self.transport.learn_addr(target, &node.addr);
        GroupClient {
            group: self.group,
            from: self.from,
            target,
            transport: self.transport.clone(),
            chunk_bytes: self.chunk_bytes,
            purged_reads: self.purged_reads.clone(),
        }
    }
}

/// Sends one group's messages to one node.
pub struct GroupClient {
    group: GroupId,
    from: NodeId,
    target: NodeId,
    transport: Arc<dyn Transport>,
    chunk_bytes: usize,
    purged_reads: PurgedRead,
}

/// Why a call failed, before it is shaped into openraft's error of the call's kind.
enum CallError {
    Unreachable(Error),
    Timeout(Duration),
    Bad(Error),
}

impl GroupClient {
    async fn call(&self, req: &Request, timeout: Duration) -> Result<Response, CallError> {
        let frame = rpc::encode_request(self.group, req);
        let target = self.target;
        let reply = self.transport.call(target, frame, timeout).await.map_err(|e| match e {
            TransportError::Timeout(d) => CallError::Timeout(d),
            TransportError::Unreachable(reason) => {
                CallError::Unreachable(Error::Unreachable { target, reason })
            }
        })?;
        match rpc::decode_response(&reply) {
            Ok(Response::Error(reason)) => {
                Err(CallError::Unreachable(Error::Unreachable { target, reason }))
            }
            Ok(r) => Ok(r),
            Err(e) => Err(CallError::Bad(Error::Unreachable {
                target,
                reason: format!("bad response: {e}"),
            })),
        }
    }

    fn unexpected(&self, what: &str, got: &Response) -> CallError {
        CallError::Bad(Error::Unreachable {
            target: self.target,
            reason: format!("{}: expected a {what} response, got {got:?}", self.group),
        })
    }

    fn rpc_error(&self, e: CallError, action: RPCTypes) -> RPCError<C> {
        match e {
            CallError::Unreachable(e) => RPCError::Unreachable(Unreachable::new(&e)),
            CallError::Timeout(timeout) => {
                RPCError::Timeout(Timeout { action, id: self.from, target: self.target, timeout })
            }
            CallError::Bad(e) => RPCError::Network(NetworkError::new(&e)),
        }
    }

    fn streaming_error(&self, e: CallError) -> StreamingError<C> {
        match e {
            CallError::Unreachable(e) => StreamingError::Unreachable(Unreachable::new(&e)),
            CallError::Timeout(timeout) => StreamingError::Timeout(Timeout {
                action: RPCTypes::InstallSnapshot,
                id: self.from,
                target: self.target,
                timeout,
            }),
            CallError::Bad(e) => StreamingError::Network(NetworkError::new(&e)),
        }
    }

    async fn vote_call(
        &self,
        rpc: VoteRequest<C>,
        pre: bool,
        option: RPCOption,
    ) -> Result<VoteResponse<C>, RPCError<C>> {
        let v = rpc::VoteRequest {
            vote: vote_in(&rpc.vote),
            last_log_id: opt_log_id_in(rpc.last_log_id.as_ref()),
            leadership_transfer: rpc.leadership_transfer,
        };
        let req = if pre { Request::PreVote(v) } else { Request::Vote(v) };
        match self
            .call(&req, option.hard_ttl())
            .await
            .map_err(|e| self.rpc_error(e, RPCTypes::Vote))?
        {
            Response::Vote(r) => Ok(VoteResponse {
                vote: vote_out(&r.vote),
                vote_granted: r.granted,
                last_log_id: opt_log_id_out(r.last_log_id.as_ref()),
            }),
            other => Err(self.rpc_error(self.unexpected("vote", &other), RPCTypes::Vote)),
        }
    }

    /// Sends the snapshot piece by piece; the last piece makes the receiver install it.
    async fn send_snapshot(
        &self,
        vote: VoteOf<C>,
        snapshot: SnapshotOf<C, SnapshotFiles>,
        option: &RPCOption,
    ) -> Result<SnapshotResponse<C>, StreamingError<C>> {
        static TRANSFERS: AtomicU64 = AtomicU64::new(1);
        let transfer = TRANSFERS.fetch_add(1, Ordering::Relaxed);
        let meta = snapshot_meta_in(&snapshot.meta);
        let files = snapshot.snapshot.files().to_vec();
        let mut reader = Some(ChunkReader::new(snapshot.snapshot.clone(), self.chunk_bytes));
        loop {
            let Some(mut r) = reader.take() else {
                return Err(self.streaming_error(CallError::Bad(Error::Unreachable {
                    target: self.target,
                    reason: "snapshot reader lost".into(),
                })));
            };
            let (r, chunk) = blocking(move || {
                let c = r.next_chunk();
                Ok((r, c))
            })
            .await
            .map_err(|e| StreamingError::Network(NetworkError::new(&e)))?;
            reader = Some(r);
            let chunk = chunk.map_err(|e| StreamingError::Network(NetworkError::new(&e)))?;
            let done = chunk.is_none();
            let piece = SnapshotPiece {
                from: self.from,
                transfer,
                vote: vote_in(&vote),
                meta: meta.clone(),
                files: files.clone(),
                chunk,
                done,
            };
            let resp = self
                .call(&Request::Snapshot(piece), option.hard_ttl())
                .await
                .map_err(|e| self.streaming_error(e))?;
            match resp {
                Response::Snapshot(SnapshotReply::Received) if !done => {}
                Response::Snapshot(SnapshotReply::Installed(v)) if done => {
                    return Ok(SnapshotResponse::new(vote_out(&v)));
                }
                other => return Err(self.streaming_error(self.unexpected("snapshot", &other))),
            }
        }
    }
}

impl RaftNetworkV2<C> for GroupClient {
    type SnapshotData = SnapshotFiles;

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<C>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<C>, RPCError<C>> {
        if rpc.entries.is_empty() {
            let start = rpc.prev_log_id.as_ref().map_or(0, |p| p.index() + 1);
            if self.purged_reads.take(start) {
                let reason =
                    format!("a stale replication stream: its entries from {start} on are purged");
                let e = Error::Unreachable { target: self.target, reason };
                return Err(RPCError::Network(NetworkError::new(&e)));
            }
        }
        let req = Request::Append(rpc::AppendRequest {
            vote: vote_in(&rpc.vote),
            prev_log_id: opt_log_id_in(rpc.prev_log_id.as_ref()),
            entries: rpc.entries.into_iter().map(entry_in).collect(),
            leader_commit: opt_log_id_in(rpc.leader_commit.as_ref()),
        });
        let resp = self
            .call(&req, option.hard_ttl())
            .await
            .map_err(|e| self.rpc_error(e, RPCTypes::AppendEntries))?;
        match resp {
            Response::Append(a) => Ok(match a {
                rpc::AppendResponse::Success => AppendEntriesResponse::Success,
                rpc::AppendResponse::PartialSuccess(id) => {
                    AppendEntriesResponse::PartialSuccess(id.as_ref().map(log_id_out))
                }
                rpc::AppendResponse::Conflict => AppendEntriesResponse::Conflict,
                rpc::AppendResponse::HigherVote(v) => {
                    AppendEntriesResponse::HigherVote(vote_out(&v))
                }
            }),
            other => {
                Err(self.rpc_error(self.unexpected("append", &other), RPCTypes::AppendEntries))
            }
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<C>,
        option: RPCOption,
    ) -> Result<VoteResponse<C>, RPCError<C>> {
        self.vote_call(rpc, false, option).await
    }

    async fn pre_vote(
        &mut self,
        rpc: VoteRequest<C>,
        option: RPCOption,
    ) -> Result<VoteResponse<C>, RPCError<C>> {
        self.vote_call(rpc, true, option).await
    }

    async fn full_snapshot(
        &mut self,
        vote: VoteOf<C>,
        snapshot: SnapshotOf<C, SnapshotFiles>,
        cancel: impl Future<Output = ReplicationClosed> + OptionalSend + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<C>, StreamingError<C>> {
        tokio::select! {
            r = self.send_snapshot(vote, snapshot, &option) => r,
            closed = cancel => Err(StreamingError::Closed(closed)),
        }
    }

    async fn transfer_leader(
        &mut self,
        req: TransferLeaderRequest<C>,
        option: RPCOption,
    ) -> Result<TransferLeaderResponse<C>, RPCError<C>> {
        let r = Request::TransferLeader(rpc::TransferLeaderRequest {
            from_leader: vote_in(req.from_leader()),
            to: *req.to_node_id(),
            last_log_id: opt_log_id_in(req.last_log_id()),
        });
        let resp = self
            .call(&r, option.hard_ttl())
            .await
            .map_err(|e| self.rpc_error(e, RPCTypes::TransferLeader))?;
        match resp {
            Response::TransferLeader(t) => Ok(match t {
                rpc::TransferLeaderResponse::Ok => Ok(()),
                rpc::TransferLeaderResponse::VoteChanged { expected, actual } => {
                    Err(TransferLeaderError::VoteChanged {
                        expected: vote_out(&expected),
                        actual: vote_out(&actual),
                    })
                }
                rpc::TransferLeaderResponse::LogNotFlushed { expected, actual } => {
                    Err(TransferLeaderError::LogNotFlushed {
                        expected: opt_log_id_out(expected.as_ref()),
                        actual: opt_log_id_out(actual.as_ref()),
                    })
                }
            }),
            other => Err(self
                .rpc_error(self.unexpected("transfer-leader", &other), RPCTypes::TransferLeader)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use openraft::Vote as RaftVote;

    use super::*;
    use crate::transport::BoxFuture;

    /// Counts the calls it is given and answers none (every call is unreachable).
    #[derive(Default)]
    struct Counting(AtomicUsize);

    impl Transport for Counting {
        fn call(
            &self,
            _target: NodeId,
            _frame: Vec<u8>,
            _timeout: Duration,
        ) -> BoxFuture<Result<Vec<u8>, TransportError>> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Box::pin(async { Err(TransportError::Unreachable("test".into())) })
        }
    }

    fn append_after(prev: Option<u64>) -> AppendEntriesRequest<C> {
        AppendEntriesRequest {
            vote: RaftVote::new_committed(1, 1),
            prev_log_id: prev
                .map(|i| log_id_out(&crate::types::LogId { term: 1, leader: 1, index: i })),
            leader_commit: None,
            entries: Vec::new(),
        }
    }

    /// The entry-less append that follows a read of purged entries (a stale replication
    /// stream's) fails without being sent, once; other appends go out.
    #[tokio::test]
    async fn the_append_after_a_purged_read_is_not_sent() {
        let transport = Arc::new(Counting::default());
        let purged = PurgedRead::new();
        let mut factory =
            NetworkFactory::new(GroupId(1), 1, transport.clone(), 1024, purged.clone());
        let mut client = factory.new_client(2, &Peer::default()).await;
        let option = RPCOption::new(Duration::from_millis(50));
        purged.note(1416);
        let stale = client.append_entries(append_after(Some(1415)), option.clone()).await;
        match stale {
            Err(RPCError::Network(e)) => {
                assert!(e.to_string().contains("stale replication stream"));
            }
            other => panic!("expected a network error, got {other:?}"),
        }
        assert_eq!(transport.0.load(Ordering::SeqCst), 0, "nothing was sent");
        // Taken: the next one, and a heartbeat, go out.
        let _ = client.append_entries(append_after(Some(1415)), option.clone()).await;
        let _ = client.append_entries(append_after(None), option).await;
        assert_eq!(transport.0.load(Ordering::SeqCst), 2);
    }
}
