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

/// Carries request frames to other nodes.
pub trait Transport: Send + Sync + 'static {
    /// Sends `frame` to `target` and returns its response, or fails once `timeout` passed.
    fn call(
        &self,
        target: NodeId,
        frame: Vec<u8>,
        timeout: Duration,
    ) -> BoxFuture<Result<Vec<u8>, TransportError>>;

    /// Learns where `node` is reached (its [`crate::Peer`] address from the membership).
    fn learn_addr(&self, node: NodeId, addr: &str) {
        let _ = (node, addr);
    }
}

/// Serves the request frames a node receives.
pub trait RpcHandler: Send + Sync + 'static {
    /// Answers one request frame (a malformed one gets an error response).
    fn handle(self: Arc<Self>, frame: Vec<u8>) -> BoxFuture<Vec<u8>>;
}
