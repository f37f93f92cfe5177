//! openraft's network traits over a [`Transport`]: each call is encoded as a `rpc` frame
//! naming its group and sent with the deadline openraft gives it (every call times out).
//! A replication stream's appends are pipelined ([`Pipeline`]); snapshots go as a sequence of
//! pieces, one chunk each.
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

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use openraft::base::{BoxFuture, BoxStream};
use openraft::error::{
    NetworkError, RPCError, ReplicationClosed, StreamingError, Timeout, Unreachable,
};
use openraft::network::{RPCOption, RPCTypes, RaftNetworkFactory};
use openraft::raft::StreamAppendResult;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, TransferLeaderError,
    TransferLeaderRequest, TransferLeaderResponse, VoteRequest, VoteResponse,
};
use openraft::type_config::alias::LogIdOf;
use openraft::type_config::alias::{SnapshotOf, VoteOf};
use openraft::{OptionalSend, RaftNetworkV2};

use super::convert::{
    entry_in, log_id_out, opt_log_id_in, opt_log_id_out, snapshot_meta_in, vote_in, vote_out,
};
use super::{blocking, PurgedRead, TypeConfig};
use crate::error::Error;
use crate::rpc::{self, Request, Response, SnapshotPiece, SnapshotReply};
use crate::snapshot::transfer::ChunkReader;
use crate::snapshot::SnapshotData;
use crate::transport::{Reply, Transport, TransportError};
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
        let reply = self.send(req, timeout).await?;
        self.answer(reply.await)
    }

    /// Sends `req`; returns the wait for its response (`Transport::send`).
    async fn send(&self, req: &Request, timeout: Duration) -> Result<Reply, CallError> {
        let frame = rpc::encode_request(self.group, req);
        self.transport.send(self.target, frame, timeout).await.map_err(|e| self.lost(e))
    }

    fn lost(&self, e: TransportError) -> CallError {
        match e {
            TransportError::Timeout(d) => CallError::Timeout(d),
            TransportError::Unreachable(reason) => {
                CallError::Unreachable(Error::Unreachable { target: self.target, reason })
            }
        }
    }

    /// The response a reply frame carries.
    fn answer(&self, reply: Result<Vec<u8>, TransportError>) -> Result<Response, CallError> {
        let target = self.target;
        match rpc::decode_response(&reply.map_err(|e| self.lost(e))?) {
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

    /// The request carrying `rpc`; an error instead for the entry-less append after a read of
    /// purged entries (the module doc), which is not sent.
    fn append_request(&self, rpc: AppendEntriesRequest<C>) -> Result<Request, RPCError<C>> {
        if rpc.entries.is_empty() {
            let start = rpc.prev_log_id.as_ref().map_or(0, |p| p.index() + 1);
            if self.purged_reads.take(start) {
                let reason =
                    format!("a stale replication stream: its entries from {start} on are purged");
                let e = Error::Unreachable { target: self.target, reason };
                return Err(RPCError::Network(NetworkError::new(&e)));
            }
        }
        Ok(Request::Append(rpc::AppendRequest {
            vote: vote_in(&rpc.vote),
            prev_log_id: opt_log_id_in(rpc.prev_log_id.as_ref()),
            entries: rpc.entries.into_iter().map(entry_in).collect(),
            leader_commit: opt_log_id_in(rpc.leader_commit.as_ref()),
        }))
    }

    fn append_response(
        &self,
        resp: Result<Response, CallError>,
    ) -> Result<AppendEntriesResponse<C>, RPCError<C>> {
        match resp.map_err(|e| self.rpc_error(e, RPCTypes::AppendEntries))? {
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
        snapshot: SnapshotOf<C, SnapshotData>,
        option: &RPCOption,
    ) -> Result<SnapshotResponse<C>, StreamingError<C>> {
        static TRANSFERS: AtomicU64 = AtomicU64::new(1);
        let transfer = TRANSFERS.fetch_add(1, Ordering::Relaxed);
        let meta = snapshot_meta_in(&snapshot.meta);
        // Cut here when the snapshot was made only to purge the log (`snapshot::build`).
        let data = snapshot.snapshot.clone();
        let cut = blocking(move || data.files())
            .await
            .map_err(|e| StreamingError::Network(NetworkError::new(&e)))?;
        let files = cut.files().to_vec();
        let mut reader = Some(ChunkReader::new(cut, self.chunk_bytes));
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
    type SnapshotData = SnapshotData;

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<C>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<C>, RPCError<C>> {
        let req = self.append_request(rpc)?;
        let resp = self.call(&req, option.hard_ttl()).await;
        self.append_response(resp)
    }

    /// Sends each request as the stream yields it, without waiting for the answers to the
    /// ones before (at most [`PIPELINE_DEPTH`] unanswered), and yields the answers in order;
    /// an entry-less request waits a moment for a request with entries to replace it
    /// ([`COMMIT_HOLD`]). The transport delivers the requests in order and the follower hands
    /// them to its Raft core in that order (`node.rs`, `hand_over`). Like openraft's
    /// sequential default, the stream ends after an error, a conflict or higher vote, or a
    /// partial success.
    fn stream_append<'s, S>(
        &'s mut self,
        input: S,
        option: RPCOption,
    ) -> BoxFuture<'s, Result<BoxStream<'s, Result<StreamAppendResult<C>, RPCError<C>>>, RPCError<C>>>
    where
        S: Stream<Item = AppendEntriesRequest<C>> + OptionalSend + Unpin + 'static,
    {
        let pipeline = Pipeline {
            client: self,
            input,
            input_done: false,
            in_flight: VecDeque::new(),
            held: None,
            hold_until: tokio::time::Instant::now(),
            timeout: option.hard_ttl(),
        };
        let answers = futures_util::stream::unfold(Some(pipeline), |p| async move {
            let mut p = p?;
            let (answer, more) = p.next().await?;
            Some((answer, more.then_some(p)))
        });
        Box::pin(std::future::ready(Ok(Box::pin(answers) as BoxStream<'s, _>)))
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
        snapshot: SnapshotOf<C, SnapshotData>,
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

/// Appends a follower has not answered yet, at most this many per stream.
const PIPELINE_DEPTH: usize = 16;

/// How long an entry-less append (a commit to pass on, no entries) waits for the next append
/// with entries, which carries the same commit or a later one and so replaces it. Each
/// replaced append saves a message and its answer on both sides. Under writes to one group
/// the next entry comes within a round; with writes spread over many groups (a node leading
/// dozens), each group's next entry comes tens of milliseconds later, and without the wait
/// every entry would cost its followers a second message. Only the followers' apply waits
/// for it (by at most this long): clients hear from the leader, and heartbeats carry the
/// commit too.
const COMMIT_HOLD: Duration = Duration::from_millis(50);

/// A request sent and not answered yet: the range it covers (`prev`, `last`) and the wait for
/// its answer.
struct Sent {
    prev: Option<LogIdOf<C>>,
    last: Option<LogIdOf<C>>,
    reply: Reply,
}

/// One `stream_append` session: the requests sent and not yet answered, oldest first, with
/// the range each covers, and an entry-less request held back ([`COMMIT_HOLD`]).
///
/// openraft counts a request answered once an answer covers its range (the answers carry log
/// ids), so a held request that is replaced needs no answer of its own.
struct Pipeline<'s, S> {
    client: &'s mut GroupClient,
    input: S,
    input_done: bool,
    in_flight: VecDeque<Sent>,
    held: Option<AppendEntriesRequest<C>>,
    hold_until: tokio::time::Instant,
    timeout: Duration,
}

impl<S> Pipeline<'_, S>
where
    S: Stream<Item = AppendEntriesRequest<C>> + Unpin,
{
    /// The next answer, and whether the stream goes on after it; `None` once the input has
    /// ended and every request is answered.
    async fn next(&mut self) -> Option<(Result<StreamAppendResult<C>, RPCError<C>>, bool)> {
        loop {
            if self.input_done {
                if let Some(req) = self.held.take() {
                    if let Err(e) = self.send(req).await {
                        return Some((Err(e), false));
                    }
                }
                if self.in_flight.is_empty() {
                    return None;
                }
            }
            let room = !self.input_done && self.in_flight.len() < PIPELINE_DEPTH;
            let (held, hold_until) = (self.held.is_some(), self.hold_until);
            let front = self.in_flight.front_mut().map(|sent| &mut sent.reply);
            let answered = front.is_some();
            tokio::select! {
                biased;
                req = self.input.next(), if room => match req {
                    Some(req) if req.entries.is_empty() => {
                        if self.held.is_none() {
                            self.hold_until = tokio::time::Instant::now() + COMMIT_HOLD;
                        }
                        self.held = Some(req);
                    }
                    Some(req) => {
                        self.held = None;
                        if let Err(e) = self.send(req).await {
                            return Some((Err(e), false));
                        }
                    }
                    None => self.input_done = true,
                },
                // A block, so the timer is made only when the branch is polled (held).
                () = async { tokio::time::sleep_until(hold_until).await }, if held => {
                    if let Some(req) = self.held.take() {
                        if let Err(e) = self.send(req).await {
                            return Some((Err(e), false));
                        }
                    }
                }
                reply = async move {
                    match front {
                        Some(reply) => reply.await,
                        None => std::future::pending().await,
                    }
                }, if answered => {
                    // The answered request is the front one (the branch runs only with one).
                    let Some(Sent { prev, last, .. }) = self.in_flight.pop_front() else {
                        continue;
                    };
                    let resp = self.client.answer(reply);
                    return Some(match self.client.append_response(resp) {
                        Err(e) => (Err(e), false),
                        Ok(resp) => {
                            // A partial success ends the stream, as in openraft's default.
                            let whole = match &resp {
                                AppendEntriesResponse::PartialSuccess(p) => *p == last,
                                _ => true,
                            };
                            let r = resp.into_stream_result(prev, last);
                            let more = r.is_ok() && whole;
                            (Ok(r), more)
                        }
                    });
                }
            }
        }
    }

    async fn send(&mut self, rpc: AppendEntriesRequest<C>) -> Result<(), RPCError<C>> {
        let prev = rpc.prev_log_id;
        let last = rpc.entries.last().map(|e| e.log_id).or(prev);
        let req = self.client.append_request(rpc)?;
        let reply = self
            .client
            .send(&req, self.timeout)
            .await
            .map_err(|e| self.client.rpc_error(e, RPCTypes::AppendEntries))?;
        self.in_flight.push_back(Sent { prev, last, reply });
        Ok(())
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
        fn send(
            &self,
            _target: NodeId,
            _frame: Vec<u8>,
            _timeout: Duration,
        ) -> BoxFuture<Result<Reply, TransportError>> {
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

    /// An append as sent: its prev index, number of entries and commit index.
    type Carried = (Option<u64>, usize, Option<u64>);

    /// Records the appends it carries and answers each with success once the test lets one
    /// more answer through (`answers`).
    struct Recording {
        sent: parking_lot::Mutex<Vec<Carried>>,
        answers: Arc<tokio::sync::Semaphore>,
    }

    impl Transport for Recording {
        fn send(
            &self,
            _target: NodeId,
            frame: Vec<u8>,
            _timeout: Duration,
        ) -> BoxFuture<Result<Reply, TransportError>> {
            let Ok((_, Request::Append(a))) = rpc::decode_request(&frame) else {
                panic!("only appends are sent here");
            };
            let index = |id: Option<crate::types::LogId>| id.map(|i| i.index);
            self.sent.lock().push((index(a.prev_log_id), a.entries.len(), index(a.leader_commit)));
            let answer = rpc::encode_response(&Response::Append(rpc::AppendResponse::Success));
            let answers = self.answers.clone();
            Box::pin(async move {
                let reply: Reply = Box::pin(async move {
                    answers.acquire().await.unwrap().forget();
                    Ok(answer)
                });
                Ok(reply)
            })
        }
    }

    fn append(prev: u64, entries: u64, commit: u64) -> AppendEntriesRequest<C> {
        let id = |index| crate::types::LogId { term: 1, leader: 1, index };
        let entries = (prev + 1..=prev + entries)
            .map(|i| {
                let e = crate::types::Entry {
                    log_id: id(i),
                    payload: crate::types::Payload::Normal(vec![7]),
                };
                super::super::convert::entry_out(e).unwrap()
            })
            .collect();
        AppendEntriesRequest {
            vote: RaftVote::new_committed(1, 1),
            prev_log_id: Some(log_id_out(&id(prev))),
            leader_commit: Some(log_id_out(&id(commit))),
            entries,
        }
    }

    /// Appends go out as the stream yields them, before the earlier ones are answered, and
    /// the answers come back in order. An entry-less append (a commit to pass on) that the
    /// next append with entries follows within the hold is not sent: that one carries the
    /// commit; one that nothing follows goes out once the hold is over.
    #[tokio::test(start_paused = true)]
    async fn appends_are_pipelined_and_a_commit_rides_on_the_next_entry() {
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let transport =
            Arc::new(Recording { sent: parking_lot::Mutex::default(), answers: gate.clone() });
        let sent = |n| {
            let t = transport.clone();
            async move {
                while t.sent.lock().len() < n {
                    tokio::task::yield_now().await;
                }
            }
        };
        let mut factory =
            NetworkFactory::new(GroupId(1), 1, transport.clone(), 1024, PurgedRead::new());
        let mut client = factory.new_client(2, &Peer::default()).await;
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let input =
            futures_util::stream::unfold(
                rx,
                |mut rx| async move { rx.recv().await.map(|r| (r, rx)) },
            );
        let option = RPCOption::new(Duration::from_secs(5));
        let mut answers = client.stream_append(Box::pin(input), option).await.unwrap();
        let index = |r: Option<Result<StreamAppendResult<C>, RPCError<C>>>| {
            r.unwrap().unwrap().unwrap().map(|id| id.index())
        };
        tx.send(append(4, 1, 4)).unwrap();
        tx.send(append(5, 2, 4)).unwrap();
        // Both go out while neither is answered (the stream is polled for its first answer).
        let first = tokio::select! {
            a = answers.next() => panic!("answered before the answers were let through: {a:?}"),
            () = sent(2) => answers.next(),
            () = tokio::time::sleep(Duration::from_secs(5)) => {
                panic!("the second append was not sent before the first was answered")
            }
        };
        assert_eq!(*transport.sent.lock(), [(Some(4), 1, Some(4)), (Some(5), 2, Some(4))]);
        gate.add_permits(2);
        assert_eq!(index(first.await), Some(5));
        assert_eq!(index(answers.next().await), Some(7));
        // Entry 7 committed: the commit waits, and entry 8 takes it along.
        tx.send(append(7, 0, 7)).unwrap();
        tx.send(append(7, 1, 7)).unwrap();
        gate.add_permits(1);
        assert_eq!(index(answers.next().await), Some(8));
        assert_eq!(transport.sent.lock().len(), 3);
        assert_eq!(transport.sent.lock()[2], (Some(7), 1, Some(7)));
        // Entry 8 committed, and nothing follows: the commit goes out alone after the hold.
        tx.send(append(8, 0, 8)).unwrap();
        gate.add_permits(1);
        let started = tokio::time::Instant::now();
        assert_eq!(index(answers.next().await), Some(8));
        assert!(started.elapsed() >= COMMIT_HOLD);
        assert_eq!(transport.sent.lock()[3], (Some(8), 0, Some(8)));
        // The input ends: so does the stream.
        drop(tx);
        assert!(answers.next().await.is_none());
    }
}
