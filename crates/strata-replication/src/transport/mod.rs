//! How nodes reach each other: a [`Transport`] carries one request frame (`rpc.rs`) to a
//! node and brings back its response frame, within a deadline; a node serves the frames it
//! receives through its [`RpcHandler`]. [`mem`] connects nodes in one process (tests, with
//! links that can be cut); [`tcp`] connects them over TCP.

pub mod mem;
pub mod tcp;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::types::NodeId;

/// A boxed future that can move between threads.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Why a call brought back no response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransportError {
    /// The node cannot be reached (unknown, down, connection refused or lost).
    Unreachable(String),
    /// No response came within the deadline.
    Timeout(Duration),
}

impl std::fmt::Display for TransportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TransportError::Unreachable(r) => write!(f, "unreachable: {r}"),
            TransportError::Timeout(d) => write!(f, "no response within {d:?}"),
        }
    }
}

impl std::error::Error for TransportError {}

/// The wait for one response: the frame, or an error once the deadline passed.
pub type Reply = BoxFuture<Result<Vec<u8>, TransportError>>;

/// Carries request frames to other nodes.
pub trait Transport: Send + Sync + 'static {
    /// Sends `frame` to `target`: resolves once the frame is on its way, to the wait for its
    /// response, which fails once `timeout` (counted from this call) has passed. Frames sent
    /// to one node one after the other (each send awaited before the next begins) reach its
    /// [`RpcHandler::handle`] in that order, so many requests can be in flight in order.
    /// The wait holds no lock while it is pending: a caller may leave it unpolled while it
    /// sends more.
    fn send(
        &self,
        target: NodeId,
        frame: Vec<u8>,
        timeout: Duration,
    ) -> BoxFuture<Result<Reply, TransportError>>;

    /// Sends `frame` to `target` and returns its response, or fails once `timeout` passed.
    fn call(
        &self,
        target: NodeId,
        frame: Vec<u8>,
        timeout: Duration,
    ) -> BoxFuture<Result<Vec<u8>, TransportError>> {
        let sent = self.send(target, frame, timeout);
        Box::pin(async move { sent.await?.await })
    }

    /// Learns where `node` is reached (its [`crate::Peer`] address from the membership).
    fn learn_addr(&self, node: NodeId, addr: &str) {
        let _ = (node, addr);
    }
}

/// Serves the request frames a node receives.
pub trait RpcHandler: Send + Sync + 'static {
    /// Answers one request frame (a malformed one gets an error response). It is called in
    /// the order one sender's frames arrived; what it does before returning the future is
    /// done in that order (the Raft appends are queued there), the futures run concurrently.
    fn handle(self: Arc<Self>, frame: Vec<u8>) -> BoxFuture<Vec<u8>>;
}

#[cfg(test)]
pub(crate) mod order_test {
    use super::*;
    use parking_lot::Mutex;

    /// Notes the first byte of each frame when it takes it (in `handle`, before the answer's
    /// future), and answers with the frame after a delay that shrinks with that byte, so the
    /// later frames' answers are ready first.
    #[derive(Default)]
    pub(crate) struct Taken(pub Mutex<Vec<u8>>);

    impl RpcHandler for Taken {
        fn handle(self: Arc<Self>, frame: Vec<u8>) -> BoxFuture<Vec<u8>> {
            let n = frame[0];
            self.0.lock().push(n);
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(u64::from(40 - n))).await;
                frame
            })
        }
    }

    /// Sends 40 frames to node 2 one after another, each before any is answered: the handler
    /// took them in that order, and each answer is its own frame's.
    pub(crate) async fn frames_are_taken_in_the_order_sent(t: &dyn Transport, taken: &Taken) {
        let mut replies = Vec::new();
        for n in 0..40u8 {
            replies.push(t.send(2, vec![n, 7], Duration::from_secs(10)).await.unwrap());
        }
        for (n, reply) in replies.into_iter().enumerate() {
            assert_eq!(reply.await.unwrap(), [n as u8, 7]);
        }
        assert_eq!(*taken.0.lock(), (0..40).collect::<Vec<u8>>());
    }
}
