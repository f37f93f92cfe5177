//! Nodes over TCP: length-prefixed frames, many calls in flight on one connection.
//!
//! ```text
//! frame = length u32 | call id u64 | payload        (little-endian; length counts id + payload)
//! hello = frame with call id 0, payload "strata-raft-hello 1\n" | tag (UTF-8)
//!         [ "\ncluster " | cluster id (16 lowercase hex digits) ]   when the sender knows one
//! answer to a hello = frame with call id 0, payload "ok" | "refused: " reason (UTF-8)
//! ```
//!
//! A connection starts with the connecting end's hello, answered before any request is sent:
//! both ends must have the same [`Handshake`] tag (what a program's nodes must agree on to
//! talk, such as the layout of the data they replicate), and, when both know the cluster
//! they belong to, the same cluster id: node ids and group ids repeat from one cluster to
//! the next, so a node of another cluster reaching this one's address (a reused port, a
//! stale address in a setting) would otherwise have its Raft messages taken as this
//! cluster's. A node that knows no cluster yet (one joining, before its first map) is let
//! in, and lets every node in. A refused connection is closed; the
//! refusal is told on both ends ([`Handshake`]), and the connecting end fails its calls to
//! that peer for [`REFUSED_FOR`] before it tries again.
//!
//! A node keeps one outgoing connection to each peer, shared by every group's messages (so a
//! pair of nodes has one connection each way). Calls are matched to responses by id, so a
//! slow call does not hold up the others. Every call has a deadline: the connect, and the
//! wait for the response. Frames go out in the order they were queued, and the server takes
//! them ([`RpcHandler::handle`]) in the order they came. A connection that fails fails every
//! call in flight on it; the next call connects again. The server answers each request on a
//! task of its own and writes responses as they complete. A frame longer than [`MAX_FRAME`]
//! closes the connection. Each direction of a connection is read through a buffer and written
//! by one task, which joins the frames queued meanwhile into one write (after letting the
//! tasks ready when it woke queue theirs).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};

use super::{BoxFuture, Reply, RpcHandler, Transport, TransportError};
use crate::types::NodeId;

/// Largest frame accepted (a snapshot chunk plus headers fits well within).
pub const MAX_FRAME: usize = 64 << 20;

/// The first bytes of a hello's payload (module doc).
const HELLO: &[u8] = b"strata-raft-hello 1\n";

/// What comes between a hello's tag and its cluster id (module doc).
const CLUSTER: &str = "\ncluster ";

/// A hello's tag and cluster id (0 when it names none), or the id's text when it is not one.
fn split_cluster(rest: &[u8]) -> (&[u8], Result<u64, &[u8]>) {
    let at = rest.windows(CLUSTER.len()).rposition(|w| w == CLUSTER.as_bytes());
    let Some(at) = at else { return (rest, Ok(0)) };
    let (tag, id) = (&rest[..at], &rest[at + CLUSTER.len()..]);
    let parsed = std::str::from_utf8(id).ok().filter(|t| t.len() == 16);
    (tag, parsed.and_then(|t| u64::from_str_radix(t, 16).ok()).ok_or(id))
}

/// How long calls to a peer that refused the handshake fail at once before the next try.
pub const REFUSED_FOR: Duration = Duration::from_secs(1);

/// How often one refusal is told again while it goes on.
const TELL_EVERY: Duration = Duration::from_secs(60);

/// What both ends of a connection must agree on (module doc): a tag, and who is told of a
/// refusal (each distinct reason at most once a minute). The default has the empty tag and
/// tells no one.
#[derive(Clone)]
pub struct Handshake {
    tag: String,
    /// The cluster this node belongs to, 0 while it knows none ([`Handshake::set_cluster`]).
    cluster: Arc<AtomicU64>,
    on_refuse: Arc<dyn Fn(&str) + Send + Sync>,
    told: Arc<Mutex<HashMap<String, Instant>>>,
}

impl Default for Handshake {
    fn default() -> Self {
        Handshake::new("", |_| {})
    }
}

impl Handshake {
    /// Connections whose other end has `tag` too; `on_refuse` hears of the others.
    pub fn new(tag: impl Into<String>, on_refuse: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Handshake {
            tag: tag.into(),
            cluster: Arc::default(),
            on_refuse: Arc::new(on_refuse),
            told: Arc::default(),
        }
    }

    /// Sets the cluster this node belongs to (0: none known), for the connections made and
    /// taken from now on; every clone of this handshake shares it.
    pub fn set_cluster(&self, id: u64) {
        self.cluster.store(id, Ordering::SeqCst);
    }

    fn hello(&self) -> Vec<u8> {
        let mut hello = [HELLO, self.tag.as_bytes()].concat();
        let cluster = self.cluster.load(Ordering::SeqCst);
        if cluster != 0 {
            hello.extend_from_slice(format!("{CLUSTER}{cluster:016x}").as_bytes());
        }
        hello
    }

    /// The answer to a hello's payload, and whether it is a refusal.
    fn answer(&self, payload: &[u8]) -> (Vec<u8>, Option<String>) {
        let why = match payload.strip_prefix(HELLO).map(split_cluster) {
            Some((tag, _)) if tag != self.tag.as_bytes() => format!(
                "its tag {:?} is not this node's {:?}",
                String::from_utf8_lossy(tag),
                self.tag
            ),
            Some((_, Err(bad))) => {
                format!("its cluster id {:?} is not 16 hex digits", String::from_utf8_lossy(bad))
            }
            Some((_, Ok(theirs))) => {
                let mine = self.cluster.load(Ordering::SeqCst);
                if theirs == 0 || mine == 0 || theirs == mine {
                    return (b"ok".to_vec(), None);
                }
                format!("it is a node of cluster {theirs:016x}, this one of cluster {mine:016x}")
            }
            None => "its first message is not a hello (a node of an older version?)".into(),
        };
        (format!("refused: {why}").into_bytes(), Some(why))
    }

    fn tell(&self, what: &str) {
        let now = Instant::now();
        let mut told = self.told.lock();
        if told.get(what).is_some_and(|t| now.duration_since(*t) < TELL_EVERY) {
            return;
        }
        told.retain(|_, t| now.duration_since(*t) < TELL_EVERY);
        told.insert(what.to_string(), now);
        drop(told);
        (self.on_refuse)(what);
    }
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Vec<u8>>>>>;

/// Removes a request's entry from its connection's pending answers when its wait ends or is
/// dropped, answered or not: a wait given up (a timeout, a caller gone) leaves no entry
/// behind for an answer that may never come.
struct Forget {
    pending: Pending,
    id: u64,
}

impl Drop for Forget {
    fn drop(&mut self) {
        self.pending.lock().remove(&self.id);
    }
}

/// One outgoing connection: a queue of frames to write, and the calls awaiting responses.
struct Conn {
    out: mpsc::UnboundedSender<Vec<u8>>,
    pending: Pending,
    /// Set when the connection's reader stopped (the peer closed it, or it failed).
    closed: Arc<AtomicBool>,
    next_id: u64,
}

impl Conn {
    fn alive(&self) -> bool {
        !self.out.is_closed() && !self.closed.load(Ordering::Acquire)
    }
}

#[derive(Default)]
struct Inner {
    /// Where each peer listens.
    addrs: Mutex<HashMap<NodeId, String>>,
    conns: tokio::sync::Mutex<HashMap<NodeId, Conn>>,
    handshake: Handshake,
    /// Peers that refused the handshake: when, and why.
    refused: Mutex<HashMap<NodeId, (Instant, String)>>,
}

/// The TCP transport of one node. Clones share the connections.
#[derive(Clone, Default)]
pub struct TcpTransport {
    inner: Arc<Inner>,
}

fn frame(id: u64, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(12 + payload.len());
    f.extend_from_slice(&((8 + payload.len()) as u32).to_le_bytes());
    f.extend_from_slice(&id.to_le_bytes());
    f.extend_from_slice(payload);
    f
}

/// Bytes a connection's reader takes from the socket at once: the frames that arrived
/// together are read with one call.
const READ_BUFFER: usize = 64 << 10;

/// Frames queued together are written with one call, up to this many bytes.
const WRITE_BATCH: usize = 256 << 10;

/// Writes the frames `rx` hands over to `wr`, in order, joining those already queued, until
/// the queue closes or a write fails. Only this task writes to the connection, so a caller
/// that gives up never leaves a frame half written.
///
/// Woken by a frame, the task first lets the runtime's other ready tasks run
/// ([`after_ready_tasks`]): those are often other groups' replication tasks about to queue
/// frames for the same peer, which then go out in the same write instead of one write (and,
/// on the peer, one wake-up and one read) each. Tokio runs a task woken by the running one
/// next (its "LIFO slot"), so without this the writer would send the first frame alone.
async fn write_frames(mut rx: mpsc::UnboundedReceiver<Vec<u8>>, mut wr: impl AsyncWrite + Unpin) {
    while let Some(mut buf) = rx.recv().await {
        after_ready_tasks().await;
        while buf.len() < WRITE_BATCH {
            match rx.try_recv() {
                Ok(f) => buf.extend_from_slice(&f),
                Err(_) => break,
            }
        }
        if wr.write_all(&buf).await.is_err() {
            break;
        }
    }
}

/// Returns once the tasks that were ready to run when it was first polled have had their
/// turn: the task wakes itself and yields, which puts it at the back of its worker's run
/// queue. (Unlike `tokio::task::yield_now`, which defers the task until the worker has
/// also polled for I/O: a system call per write.)
async fn after_ready_tasks() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            return std::task::Poll::Ready(());
        }
        yielded = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    })
    .await;
}

/// Reads one frame: its id and payload. `Ok(None)` at a clean end of stream.
async fn read_frame(
    r: &mut (impl AsyncReadExt + Unpin),
) -> std::io::Result<Option<(u64, Vec<u8>)>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as usize;
    if !(8..=MAX_FRAME).contains(&len) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("frame of {len} bytes"),
        ));
    }
    let mut buf = vec![0u8; len];
    r.read_exact(&mut buf).await?;
    let mut id = [0u8; 8];
    id.copy_from_slice(&buf[..8]);
    buf.drain(..8);
    Ok(Some((u64::from_le_bytes(id), buf)))
}

impl TcpTransport {
    /// A transport that knows no peer yet, with the default [`Handshake`].
    pub fn new() -> TcpTransport {
        TcpTransport::default()
    }

    /// A transport whose connections need `handshake`'s tag at the other end.
    pub fn with_handshake(handshake: Handshake) -> TcpTransport {
        TcpTransport { inner: Arc::new(Inner { handshake, ..Inner::default() }) }
    }

    /// Records where `node` listens (`host:port`).
    pub fn set_addr(&self, node: NodeId, addr: impl Into<String>) {
        self.inner.addrs.lock().insert(node, addr.into());
    }

    /// Starts a connection to `target`: a writer task and a reader task.
    async fn connect(&self, target: NodeId, timeout: Duration) -> Result<Conn, TransportError> {
        let addr = self.inner.addrs.lock().get(&target).cloned().ok_or_else(|| {
            TransportError::Unreachable(format!("no address known for node {target}"))
        })?;
        let stream = match tokio::time::timeout(timeout, TcpStream::connect(&addr)).await {
            Err(_) => return Err(TransportError::Timeout(timeout)),
            Ok(Err(e)) => {
                return Err(TransportError::Unreachable(format!(
                    "connect to node {target} at {addr}: {e}"
                )))
            }
            Ok(Ok(s)) => s,
        };
        let _ = stream.set_nodelay(true);
        let mut stream = BufReader::with_capacity(READ_BUFFER, stream);
        let hs = &self.inner.handshake;
        let said = tokio::time::timeout(timeout, async {
            stream.get_mut().write_all(&frame(0, &hs.hello())).await?;
            read_frame(&mut stream).await
        })
        .await;
        let refused = |why: String| {
            let what = format!("node {target} at {addr} refused this node's connection: {why}");
            hs.tell(&what);
            self.inner.refused.lock().insert(target, (Instant::now(), what.clone()));
            Err(TransportError::Unreachable(what))
        };
        match said {
            Err(_) => return Err(TransportError::Timeout(timeout)),
            Ok(Ok(Some((0, answer)))) if answer == b"ok" => {}
            Ok(Ok(Some((_, answer)))) => {
                return refused(match answer.strip_prefix(b"refused: ") {
                    Some(why) => String::from_utf8_lossy(why).into_owned(),
                    None => "it answered the hello with something else (an older version?)".into(),
                })
            }
            // A refusal is always answered first: a close without one is a node going away.
            Ok(Ok(None)) => {
                return Err(TransportError::Unreachable(format!(
                    "node {target} at {addr} closed the connection at the hello"
                )))
            }
            Ok(Err(e)) => {
                return Err(TransportError::Unreachable(format!(
                    "hello to node {target} at {addr}: {e}"
                )))
            }
        }
        // Nothing else was sent yet, so nothing past the answer is buffered.
        let (rd, wr) = stream.into_inner().into_split();
        let (out, rx) = mpsc::unbounded_channel::<Vec<u8>>();
        let pending: Pending = Arc::new(Mutex::new(HashMap::new()));
        tokio::spawn(write_frames(rx, wr));
        let (p, closed) = (pending.clone(), Arc::new(AtomicBool::new(false)));
        let c = closed.clone();
        tokio::spawn(async move {
            let mut rd = BufReader::with_capacity(READ_BUFFER, rd);
            while let Ok(Some((id, payload))) = read_frame(&mut rd).await {
                if let Some(tx) = p.lock().remove(&id) {
                    let _ = tx.send(payload);
                }
            }
            // The connection ended: every call waiting on it fails now, later ones reconnect.
            c.store(true, Ordering::Release);
            p.lock().clear();
        });
        Ok(Conn { out, pending, closed, next_id: 1 })
    }

    /// Queues `payload` on the connection to `target` (connecting first if there is none)
    /// and returns the wait for its response, which ends at `deadline`.
    async fn send_inner(
        &self,
        target: NodeId,
        payload: Vec<u8>,
        deadline: tokio::time::Instant,
        timeout: Duration,
    ) -> Result<Reply, TransportError> {
        let (rx, forget) = {
            let mut conns = self.inner.conns.lock().await;
            let alive = conns.get(&target).is_some_and(Conn::alive);
            if !alive {
                conns.remove(&target);
                if let Some((at, why)) = self.inner.refused.lock().get(&target) {
                    if at.elapsed() < REFUSED_FOR {
                        return Err(TransportError::Unreachable(why.clone()));
                    }
                }
                let c = self.connect(target, timeout).await?;
                conns.insert(target, c);
            }
            let Some(c) = conns.get_mut(&target) else {
                return Err(TransportError::Unreachable(format!("no connection to node {target}")));
            };
            let id = c.next_id;
            c.next_id += 1;
            let (tx, rx) = oneshot::channel();
            c.pending.lock().insert(id, tx);
            if c.out.send(frame(id, &payload)).is_err() || !c.alive() {
                c.pending.lock().remove(&id);
                conns.remove(&target);
                return Err(TransportError::Unreachable(format!(
                    "connection to node {target} closed"
                )));
            }
            (rx, Forget { pending: c.pending.clone(), id })
        };
        // The wait takes no lock: a caller may leave it unpolled while it sends more (a
        // pipeline), and a wait queued for `conns` meanwhile would hold up every send. The
        // dead connection is replaced by the next send (`Conn::alive`).
        Ok(Box::pin(async move {
            let _forget = forget;
            match tokio::time::timeout_at(deadline, rx).await {
                Ok(Ok(resp)) => Ok(resp),
                Ok(Err(_)) => {
                    Err(TransportError::Unreachable(format!("connection to node {target} lost")))
                }
                Err(_) => Err(TransportError::Timeout(timeout)),
            }
        }))
    }
}

impl Transport for TcpTransport {
    fn send(
        &self,
        target: NodeId,
        frame: Vec<u8>,
        timeout: Duration,
    ) -> BoxFuture<Result<Reply, TransportError>> {
        let me = self.clone();
        let deadline = tokio::time::Instant::now() + timeout;
        Box::pin(async move { me.send_inner(target, frame, deadline, timeout).await })
    }

    fn learn_addr(&self, node: NodeId, addr: &str) {
        if !addr.is_empty() {
            self.set_addr(node, addr);
        }
    }
}

/// Serves a node's handler on a TCP port; dropping it closes the port and every connection
/// it accepted.
pub struct TcpServer {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
    connections: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl TcpServer {
    /// Binds `addr` (port 0 picks a free one) and serves, with the default [`Handshake`].
    pub async fn bind(addr: &str, handler: Arc<dyn RpcHandler>) -> std::io::Result<TcpServer> {
        TcpServer::bind_with(addr, handler, Handshake::default()).await
    }

    /// Binds `addr` and serves the connections whose hello has `handshake`'s tag.
    pub async fn bind_with(
        addr: &str,
        handler: Arc<dyn RpcHandler>,
        handshake: Handshake,
    ) -> std::io::Result<TcpServer> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let connections: Arc<Mutex<Vec<tokio::task::AbortHandle>>> = Arc::default();
        let listener = Arc::new(listener);
        let accept = move || -> BoxFuture<std::io::Result<TcpStream>> {
            let l = listener.clone();
            Box::pin(async move { l.accept().await.map(|(stream, _)| stream) })
        };
        let task =
            tokio::spawn(accept_connections(accept, handler, handshake, connections.clone()));
        Ok(TcpServer { addr, task, connections })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for TcpServer {
    fn drop(&mut self) {
        self.task.abort();
        for c in self.connections.lock().drain(..) {
            c.abort();
        }
    }
}

/// How long a failed accept is waited out before the next.
const ACCEPT_RETRY: Duration = Duration::from_millis(10);

/// Serves each connection `accept` brings, until the task is aborted. A failed accept (a
/// connection reset before it was taken, no descriptor left) is waited out: it does not end
/// the serving, which would leave the node deaf to its peers until it restarts.
async fn accept_connections(
    mut accept: impl FnMut() -> BoxFuture<std::io::Result<TcpStream>>,
    handler: Arc<dyn RpcHandler>,
    handshake: Handshake,
    connections: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
) {
    loop {
        let stream = match accept().await {
            Ok(stream) => stream,
            Err(_) => {
                tokio::time::sleep(ACCEPT_RETRY).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let t = tokio::spawn(serve_connection(stream, handler.clone(), handshake.clone()));
        let mut c = connections.lock();
        c.retain(|h| !h.is_finished());
        c.push(t.abort_handle());
    }
}

async fn serve_connection(stream: TcpStream, handler: Arc<dyn RpcHandler>, hs: Handshake) {
    let peer = stream.peer_addr().map_or_else(|_| "?".to_string(), |a| a.to_string());
    let (rd, wr) = stream.into_split();
    let (out, rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let writer = tokio::spawn(write_frames(rx, wr));
    let mut rd = BufReader::with_capacity(READ_BUFFER, rd);
    // The hello first (module doc); a refusal closes the connection once it is answered.
    let refusal = match read_frame(&mut rd).await {
        Ok(Some((0, payload))) => {
            let (answer, refused) = hs.answer(&payload);
            let _ = out.send(frame(0, &answer));
            refused
        }
        // A request first: a peer that sends no hello (its calls fail as the connection closes).
        Ok(Some(_)) => hs.answer(b"").1,
        Ok(None) | Err(_) => Some(String::new()),
    };
    if let Some(why) = refusal {
        if !why.is_empty() {
            hs.tell(&format!("refused a connection from {peer}: {why}"));
        }
        drop(out);
        let _ = writer.await;
        return;
    }
    while let Ok(Some((id, payload))) = read_frame(&mut rd).await {
        // Taken here, in the order the frames came; answered concurrently.
        let answer = handler.clone().handle(payload);
        let out = out.clone();
        tokio::spawn(async move {
            let _ = out.send(frame(id, &answer.await));
        });
    }
    drop(out);
    let _ = writer.await;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers with the request reversed, after sleeping as many milliseconds as its first
    /// byte says.
    struct SlowEcho;

    impl RpcHandler for SlowEcho {
        fn handle(self: Arc<Self>, mut frame: Vec<u8>) -> BoxFuture<Vec<u8>> {
            Box::pin(async move {
                let ms = u64::from(frame.first().copied().unwrap_or(0));
                tokio::time::sleep(Duration::from_millis(ms * 10)).await;
                frame.reverse();
                frame
            })
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn calls_share_a_connection_complete_out_of_order_and_time_out() {
        let server = TcpServer::bind("127.0.0.1:0", Arc::new(SlowEcho)).await.unwrap();
        let t = TcpTransport::new();
        t.set_addr(2, server.addr().to_string());
        let d = Duration::from_secs(5);
        // A slow call does not hold up a quick one behind it.
        let slow = {
            let t = t.clone();
            tokio::spawn(async move { t.call(2, vec![30, 1], d).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        let started = std::time::Instant::now();
        assert_eq!(t.call(2, vec![0, 1, 2], d).await.unwrap(), [2, 1, 0]);
        assert!(started.elapsed() < Duration::from_millis(250), "{:?}", started.elapsed());
        assert_eq!(slow.await.unwrap().unwrap(), [1, 30]);
        // Many concurrent calls, one connection.
        let calls: Vec<_> = (0..50u8)
            .map(|i| {
                let t = t.clone();
                tokio::spawn(async move { t.call(2, vec![i % 3, i], d).await })
            })
            .collect();
        for (i, c) in calls.into_iter().enumerate() {
            assert_eq!(c.await.unwrap().unwrap(), [i as u8, i as u8 % 3]);
        }
        assert_eq!(t.inner.conns.lock().await.len(), 1);
        // A call answered too late times out.
        let short = Duration::from_millis(50);
        assert_eq!(t.call(2, vec![20], short).await, Err(TransportError::Timeout(short)));
        // An unknown node and a stopped server are unreachable.
        assert!(matches!(t.call(9, vec![0], d).await, Err(TransportError::Unreachable(_))));
        let addr = server.addr().to_string();
        drop(server);
        drop(t.inner.conns.lock().await.remove(&2));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(t.call(2, vec![0], d).await.is_err(), "nothing listens any more");
        // A new server on the same address is reached by a new connection.
        let again = TcpServer::bind(&addr, Arc::new(SlowEcho)).await.unwrap();
        assert_eq!(t.call(2, vec![0, 7], d).await.unwrap(), [7, 0]);
        drop(again);
    }

    /// Frames sent one after another are taken by the server in that order, though their
    /// answers complete in the reverse order.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn frames_sent_one_after_another_are_taken_in_that_order() {
        use crate::transport::order_test::{frames_are_taken_in_the_order_sent, Taken};
        let taken = Arc::new(Taken::default());
        let server = TcpServer::bind("127.0.0.1:0", taken.clone()).await.unwrap();
        let t = TcpTransport::new();
        t.set_addr(2, server.addr().to_string());
        frames_are_taken_in_the_order_sent(&t, &taken).await;
    }

    /// Never answers.
    struct Silent;

    impl RpcHandler for Silent {
        fn handle(self: Arc<Self>, _frame: Vec<u8>) -> BoxFuture<Vec<u8>> {
            Box::pin(std::future::pending())
        }
    }

    /// A wait whose connection was lost, polled once and then left (as a pipeline leaves the
    /// waits behind the one it awaits while it sends more), does not hold up later sends: it
    /// takes no lock. A wait queued for the connection table would keep its turn while its
    /// caller waits for that table to send, and every send of the node would wait for ever.
    #[tokio::test(flavor = "current_thread")]
    async fn a_lost_wait_left_unpolled_holds_up_no_send() {
        let server = TcpServer::bind("127.0.0.1:0", Arc::new(Silent)).await.unwrap();
        let addr = server.addr().to_string();
        let t = TcpTransport::new();
        t.set_addr(2, addr.clone());
        let d = Duration::from_secs(30);
        let mut lost = t.send(2, vec![1], d).await.unwrap();
        drop(server);
        // Another send holds the table (as one connecting would) when the wait sees its loss.
        let table = t.inner.conns.lock().await;
        for _ in 0..100 {
            if futures_util::poll!(&mut lost).is_ready() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        drop(table);
        let again = TcpServer::bind(&addr, Arc::new(SlowEcho)).await.unwrap();
        let next = tokio::time::timeout(Duration::from_secs(5), t.call(2, vec![0, 9], d)).await;
        assert_eq!(next.expect("the next send was not held up").unwrap(), [9, 0]);
        drop(again);
    }

    /// Regression: a wait dropped before its answer came (a caller that gave up) left its
    /// entry in the connection's pending answers until the connection closed.
    #[tokio::test(flavor = "current_thread")]
    async fn a_dropped_wait_leaves_no_pending_entry() {
        let server = TcpServer::bind("127.0.0.1:0", Arc::new(Silent)).await.unwrap();
        let t = TcpTransport::new();
        t.set_addr(2, server.addr().to_string());
        let d = Duration::from_secs(30);
        let pending = |t: &TcpTransport| {
            let conns = t.inner.conns.try_lock().unwrap();
            conns.get(&2).map_or(0, |c| c.pending.lock().len())
        };
        let unpolled = t.send(2, vec![1], d).await.unwrap();
        let mut polled = t.send(2, vec![2], d).await.unwrap();
        assert!(futures_util::poll!(&mut polled).is_pending());
        assert_eq!(pending(&t), 2);
        drop(unpolled);
        drop(polled);
        assert_eq!(pending(&t), 0, "entries left for answers that will not be read");
        // A wait that times out leaves none either.
        let late = t.send(2, vec![3], Duration::from_millis(20)).await.unwrap();
        assert!(matches!(late.await, Err(TransportError::Timeout(_))));
        assert_eq!(pending(&t), 0);
        drop(server);
    }

    /// A handshake whose refusals are collected.
    fn told(tag: &str) -> (Handshake, Arc<Mutex<Vec<String>>>) {
        let said = Arc::new(Mutex::new(Vec::new()));
        let s = said.clone();
        (Handshake::new(tag, move |m| s.lock().push(m.to_string())), said)
    }

    /// Nodes of different tags do not talk: the connection is refused, both ends are told
    /// (once, however often it is tried), and calls fail at once for a while without
    /// connecting again; nodes of one tag talk.
    #[tokio::test(flavor = "current_thread")]
    async fn a_peer_of_another_tag_is_refused_and_both_ends_told() {
        let (server_hs, server_told) = told("layout 2");
        let server = TcpServer::bind_with("127.0.0.1:0", Arc::new(SlowEcho), server_hs.clone())
            .await
            .unwrap();
        let (client_hs, client_told) = told("layout 1");
        let t = TcpTransport::with_handshake(client_hs);
        t.set_addr(2, server.addr().to_string());
        let d = Duration::from_secs(5);
        let Err(TransportError::Unreachable(why)) = t.call(2, vec![0, 1], d).await else {
            panic!("a call across tags went through");
        };
        assert!(why.contains("\"layout 1\"") && why.contains("\"layout 2\""), "{why}");
        assert_eq!(t.inner.conns.lock().await.len(), 0);
        for _ in 0..3 {
            assert!(t.call(2, vec![0, 1], d).await.is_err());
        }
        // Told once each, though refused again at once (no new connection meanwhile).
        assert_eq!(client_told.lock().len(), 1, "{:?}", client_told.lock());
        let server_said = server_told.lock().clone();
        assert_eq!(server_said.len(), 1, "{server_said:?}");
        assert!(
            server_said[0].starts_with("refused a connection from 127.0.0.1:"),
            "{server_said:?}"
        );
        // The same tag talks.
        let same = TcpTransport::with_handshake(server_hs);
        same.set_addr(2, server.addr().to_string());
        assert_eq!(same.call(2, vec![0, 5], d).await.unwrap(), [5, 0]);
    }

    /// Nodes of one tag but different clusters do not talk; a node that knows no cluster yet
    /// talks with any (and any with it); nodes of one cluster talk. A cluster id that is not
    /// one is refused.
    #[tokio::test(flavor = "current_thread")]
    async fn a_peer_of_another_cluster_is_refused() {
        let (server_hs, server_told) = told("layout 1");
        server_hs.set_cluster(0xa1);
        let server = TcpServer::bind_with("127.0.0.1:0", Arc::new(SlowEcho), server_hs.clone())
            .await
            .unwrap();
        let d = Duration::from_secs(5);
        let client = |cluster: u64| {
            let (hs, _) = told("layout 1");
            hs.set_cluster(cluster);
            let t = TcpTransport::with_handshake(hs);
            t.set_addr(2, server.addr().to_string());
            t
        };
        let Err(TransportError::Unreachable(why)) = client(0xb2).call(2, vec![0, 1], d).await
        else {
            panic!("a call across clusters went through");
        };
        assert!(why.contains("00000000000000b2") && why.contains("00000000000000a1"), "{why}");
        assert!(server_told.lock().iter().any(|m| m.contains("cluster 00000000000000b2")));
        assert_eq!(client(0).call(2, vec![0, 5], d).await.unwrap(), [5, 0]);
        assert_eq!(client(0xa1).call(2, vec![0, 6], d).await.unwrap(), [6, 0]);
        // A server that knows no cluster lets a node of any in.
        server_hs.set_cluster(0);
        assert_eq!(client(0xb2).call(2, vec![0, 7], d).await.unwrap(), [7, 0]);
        let bad = [HELLO, b"layout 1\ncluster 12z"].concat();
        let (answer, refused) = server_hs.answer(&bad);
        assert!(refused.is_some_and(|w| w.contains("not 16 hex digits")), "{answer:?}");
        assert_eq!(split_cluster(b"t"), (&b"t"[..], Ok(0)));
    }

    /// A peer that sends a request before any hello (a node of an older version) is refused,
    /// and so is a server that answers the hello with anything but its answer.
    #[tokio::test(flavor = "current_thread")]
    async fn peers_without_the_hello_are_refused() {
        let (hs, said) = told("");
        let server = TcpServer::bind_with("127.0.0.1:0", Arc::new(SlowEcho), hs).await.unwrap();
        let mut s = TcpStream::connect(server.addr()).await.unwrap();
        s.write_all(&frame(1, &[0, 1])).await.unwrap();
        let mut buf = [0u8; 1];
        assert_eq!(s.read(&mut buf).await.unwrap(), 0, "the server closed the connection");
        assert!(said.lock().iter().any(|m| m.contains("not a hello")), "{:?}", said.lock());
        // A server that answers every frame as a request (an older version's).
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let old = tokio::spawn(async move {
            let (mut c, _) = listener.accept().await.unwrap();
            if let Ok(Some((id, _))) = read_frame(&mut c).await {
                let _ = c.write_all(&frame(id, b"error: message version")).await;
            }
        });
        let t = TcpTransport::new();
        t.set_addr(3, addr);
        let r = t.call(3, vec![0, 1], Duration::from_secs(5)).await;
        assert!(
            matches!(&r, Err(TransportError::Unreachable(w)) if w.contains("older version")),
            "{r:?}"
        );
        old.await.unwrap();
    }

    /// A failed accept does not end the serving: the next connection is served.
    #[tokio::test(flavor = "current_thread")]
    async fn a_failed_accept_is_waited_out() {
        let listener = Arc::new(TcpListener::bind("127.0.0.1:0").await.unwrap());
        let addr = listener.local_addr().unwrap().to_string();
        let failures = Arc::new(std::sync::atomic::AtomicU32::new(2));
        let accept = {
            let failures = failures.clone();
            move || -> BoxFuture<std::io::Result<TcpStream>> {
                let l = listener.clone();
                let fail = failures
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok();
                Box::pin(async move {
                    if fail {
                        return Err(std::io::Error::from_raw_os_error(24)); // EMFILE
                    }
                    l.accept().await.map(|(stream, _)| stream)
                })
            }
        };
        let serving = tokio::spawn(accept_connections(
            accept,
            Arc::new(SlowEcho),
            Handshake::default(),
            Arc::default(),
        ));
        let t = TcpTransport::new();
        t.set_addr(2, addr);
        let reply = t.call(2, vec![0, 3], Duration::from_secs(5)).await;
        assert_eq!(reply.unwrap(), [3, 0]);
        assert_eq!(failures.load(Ordering::SeqCst), 0, "both failures were met");
        serving.abort();
    }

    #[tokio::test(flavor = "current_thread")]
    async fn an_oversized_or_short_frame_ends_the_connection() {
        let server = TcpServer::bind("127.0.0.1:0", Arc::new(SlowEcho)).await.unwrap();
        let mut s = TcpStream::connect(server.addr()).await.unwrap();
        s.write_all(&((MAX_FRAME + 1) as u32).to_le_bytes()).await.unwrap();
        let mut buf = [0u8; 1];
        assert_eq!(s.read(&mut buf).await.unwrap(), 0, "the server closed the connection");
        let mut s = TcpStream::connect(server.addr()).await.unwrap();
        s.write_all(&3u32.to_le_bytes()).await.unwrap();
        assert_eq!(s.read(&mut buf).await.unwrap(), 0);
    }

    /// Records each write call's bytes.
    #[derive(Clone, Default)]
    struct Writes(Arc<Mutex<Vec<Vec<u8>>>>);

    impl AsyncWrite for Writes {
        fn poll_write(
            self: std::pin::Pin<&mut Self>,
            _cx: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<std::io::Result<usize>> {
            self.0.lock().push(buf.to_vec());
            std::task::Poll::Ready(Ok(buf.len()))
        }
        fn poll_flush(
            self: std::pin::Pin<&mut Self>,
            _cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
        fn poll_shutdown(
            self: std::pin::Pin<&mut Self>,
            _cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
    }

    /// Frames queued by tasks that were ready together go out in one write, on a
    /// runtime that runs a woken task next (one worker: its LIFO slot): the writer, woken by
    /// the first frame, lets the other senders run before it writes.
    #[test]
    fn frames_of_tasks_ready_together_go_out_in_one_write() {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).build().unwrap();
        let writes = Writes::default();
        let sink = writes.clone();
        rt.block_on(async move {
            tokio::spawn(async move {
                let (out, rx) = mpsc::unbounded_channel::<Vec<u8>>();
                let writer = tokio::spawn(write_frames(rx, sink));
                tokio::task::yield_now().await; // the writer waits on the queue
                let senders: Vec<_> = (0..8u8)
                    .map(|i| {
                        let out = out.clone();
                        tokio::spawn(async move { out.send(vec![i]).unwrap() })
                    })
                    .collect();
                for s in senders {
                    s.await.unwrap();
                }
                drop(out);
                writer.await.unwrap();
            })
            .await
            .unwrap();
        });
        let mut writes = writes.0.lock().clone();
        assert_eq!(writes.len(), 1, "one write of the eight frames: {writes:?}");
        writes[0].sort_unstable(); // in the order the senders ran
        assert_eq!(writes[0], (0..8u8).collect::<Vec<u8>>());
    }
}
