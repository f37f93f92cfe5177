//! An in-process network for tests: nodes register their handler, and links between two
//! nodes can be cut (messages are then lost: calls over it wait out their deadline, as over a
//! real partition) and healed. A send takes the frame at once (the handler is called in the
//! order of the sends) and runs its answer on a task of its own, so a deadline also bounds a
//! handler that is slow.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::{BoxFuture, Reply, RpcHandler, Transport, TransportError};
use crate::types::NodeId;

#[derive(Default)]
struct Links {
    nodes: HashMap<NodeId, Arc<dyn RpcHandler>>,
    /// Directed links that lose every message.
    cut: HashSet<(NodeId, NodeId)>,
}

/// The in-process network.
#[derive(Default)]
pub struct MemNetwork {
    links: Mutex<Links>,
}

impl MemNetwork {
    /// An empty network.
    pub fn new() -> Arc<MemNetwork> {
        Arc::new(MemNetwork::default())
    }

    /// Makes `handler` the node `id` (replacing an earlier one).
    pub fn register(&self, id: NodeId, handler: Arc<dyn RpcHandler>) {
        self.links.lock().nodes.insert(id, handler);
    }

    /// Removes node `id`: calls to it fail as to a stopped process.
    pub fn unregister(&self, id: NodeId) {
        self.links.lock().nodes.remove(&id);
    }

    /// Cuts the link between `a` and `b`, both ways.
    pub fn cut(&self, a: NodeId, b: NodeId) {
        let mut l = self.links.lock();
        l.cut.insert((a, b));
        l.cut.insert((b, a));
    }

    /// Cuts every link of `a` to the `others`.
    pub fn isolate(&self, a: NodeId, others: impl IntoIterator<Item = NodeId>) {
        for b in others {
            if b != a {
                self.cut(a, b);
            }
        }
    }

    /// Restores every link.
    pub fn heal_all(&self) {
        self.links.lock().cut.clear();
    }

    /// The transport node `from` sends through.
    pub fn transport(self: &Arc<Self>, from: NodeId) -> Arc<dyn Transport> {
        Arc::new(MemTransport { from, net: self.clone() })
    }

    /// The handler of `to` if the link from `from` carries messages; `Ok(None)` if it loses
    /// them.
    fn route(
        &self,
        from: NodeId,
        to: NodeId,
    ) -> Result<Option<Arc<dyn RpcHandler>>, TransportError> {
        let l = self.links.lock();
        if l.cut.contains(&(from, to)) {
            return Ok(None);
        }
        match l.nodes.get(&to) {
            Some(h) => Ok(Some(h.clone())),
            None => Err(TransportError::Unreachable(format!("node {to} is not running"))),
        }
    }
}

struct MemTransport {
    from: NodeId,
    net: Arc<MemNetwork>,
}

impl Transport for MemTransport {
    fn send(
        &self,
        target: NodeId,
        frame: Vec<u8>,
        timeout: Duration,
    ) -> BoxFuture<Result<Reply, TransportError>> {
        let (net, from) = (self.net.clone(), self.from);
        let deadline = tokio::time::Instant::now() + timeout;
        Box::pin(async move {
            let Some(handler) = net.route(from, target)? else {
                let lost: Reply = Box::pin(async move {
                    tokio::time::sleep_until(deadline).await;
                    Err(TransportError::Timeout(timeout))
                });
                return Ok(lost);
            };
            // Taken now, in the order of the sends; answered on a task of its own.
            let task = tokio::spawn(handler.handle(frame));
            let reply: Reply = Box::pin(async move {
                let resp = match tokio::time::timeout_at(deadline, task).await {
                    Err(_) => return Err(TransportError::Timeout(timeout)),
                    Ok(Err(e)) => {
                        return Err(TransportError::Unreachable(format!(
                            "node {target} failed: {e}"
                        )))
                    }
                    Ok(Ok(resp)) => resp,
                };
                // The response travels back over the link, which may have been cut meanwhile.
                match net.route(target, from) {
                    Ok(Some(_)) => Ok(resp),
                    Ok(None) => Err(TransportError::Timeout(timeout)),
                    // The target stopped after answering; the answer still arrived.
                    Err(_) => Ok(resp),
                }
            });
            Ok(reply)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Echo;

    impl RpcHandler for Echo {
        fn handle(self: Arc<Self>, mut frame: Vec<u8>) -> BoxFuture<Vec<u8>> {
            Box::pin(async move {
                frame.reverse();
                frame
            })
        }
    }

    /// Frames sent one after another are taken by the handler in that order, though their
    /// answers complete in the reverse order.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn frames_sent_one_after_another_are_taken_in_that_order() {
        use crate::transport::order_test::{frames_are_taken_in_the_order_sent, Taken};
        let net = MemNetwork::new();
        let taken = Arc::new(Taken::default());
        net.register(2, taken.clone());
        frames_are_taken_in_the_order_sent(net.transport(1).as_ref(), &taken).await;
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn calls_reach_registered_nodes_and_cut_links_time_out() {
        let net = MemNetwork::new();
        net.register(2, Arc::new(Echo));
        let t = net.transport(1);
        let d = Duration::from_millis(100);
        assert_eq!(t.call(2, vec![1, 2, 3], d).await.unwrap(), [3, 2, 1]);
        assert!(matches!(t.call(3, vec![], d).await, Err(TransportError::Unreachable(_))));
        net.cut(1, 2);
        let started = tokio::time::Instant::now();
        assert_eq!(t.call(2, vec![1], d).await, Err(TransportError::Timeout(d)));
        assert!(started.elapsed() >= d, "a lost message is noticed only at the deadline");
        net.heal_all();
        assert_eq!(t.call(2, vec![1, 2], d).await.unwrap(), [2, 1]);
        net.unregister(2);
        assert!(matches!(t.call(2, vec![], d).await, Err(TransportError::Unreachable(_))));
    }
}
