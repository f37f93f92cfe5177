//! Listener and connection loop.
//!
//! Each connection reads into one buffer, parses every complete frame in it (pipelining),
//! executes them in order, and writes all their replies with one write. A malformed frame
//! gets `-ERR Protocol error: ...` after the replies of the frames before it, and closes that
//! connection only.
//!
//! Engine calls are blocking but fast (memtable/cache hits) and run on the connection's task,
//! except when every write is synced (`appendfsync always`): a batch containing a write then
//! runs on the blocking pool, and its replies wait for one WAL sync shared with every other
//! connection's writes (`storage::sync_group`) without holding the async workers or any key
//! lock.

use super::{ClientEntry, Conn, Shared};
use crate::commands;
use crate::resp::{parse_command, Out, ParseOutcome};
use crate::storage::SyncPolicy;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Accepts connections until `shutdown` resolves.
pub async fn serve(
    sh: Arc<Shared>,
    listener: TcpListener,
    shutdown: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => return,
            acc = listener.accept() => match acc {
                Ok((sock, addr)) => {
                    let _ = sock.set_nodelay(true);
                    let sh = sh.clone();
                    tokio::spawn(async move { handle(sh, sock, addr.to_string()).await });
                }
                Err(e) => {
                    eprintln!("accept failed: {e}");
                    // Out of descriptors and the like: back off briefly.
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            }
        }
    }
}

fn run_batch(sh: &Shared, conn: &mut Conn, frames: &[Vec<Vec<u8>>], out: &mut Out) {
    for f in frames {
        if conn.close {
            break;
        }
        if f.is_empty() {
            continue;
        }
        out.resp3 = conn.resp3;
        commands::dispatch(sh, conn, f, out);
    }
    // Under `appendfsync always` the replies wait for one WAL sync covering every write the
    // batch made. If it fails, nothing of the batch is acknowledged: the connection closes
    // without its replies.
    if sh.store.settle_sync().is_err() {
        out.buf.clear();
        conn.close = true;
    }
}

async fn handle(sh: Arc<Shared>, mut sock: TcpStream, addr: String) {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    sh.stats.connections.fetch_add(1, Ordering::Relaxed);
    sh.stats.connected.fetch_add(1, Ordering::Relaxed);
    sh.clients.lock().insert(
        id,
        ClientEntry {
            addr,
            since: Some(std::time::Instant::now()),
            resp: 2,
            ..ClientEntry::default()
        },
    );
    let mut conn = Conn { id, authed: sh.password().is_none(), resp3: false, close: false };
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut out = Out::default();
    let max_bulk = sh.config.proto_max_bulk_len;
    'conn: loop {
        match sock.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let mut frames = Vec::new();
        let mut pos = 0;
        let mut proto_err = None;
        loop {
            match parse_command(&buf[pos..], max_bulk) {
                Ok(ParseOutcome::Incomplete) => break,
                Ok(ParseOutcome::Command(args, n)) => {
                    pos += n;
                    frames.push(args);
                }
                Err(e) => {
                    proto_err = Some(e);
                    break;
                }
            }
        }
        buf.drain(..pos);
        if !frames.is_empty() {
            let needs_pool = sh.store.sync_policy() == SyncPolicy::Always
                && frames
                    .iter()
                    .any(|f| f.first().and_then(|n| commands::lookup(n)).is_some_and(|c| c.write));
            if needs_pool {
                let sh2 = sh.clone();
                let mut c = std::mem::replace(
                    &mut conn,
                    Conn { id, authed: false, resp3: false, close: false },
                );
                let mut o = std::mem::take(&mut out);
                let res = tokio::task::spawn_blocking(move || {
                    run_batch(&sh2, &mut c, &frames, &mut o);
                    (c, o)
                })
                .await;
                match res {
                    Ok((c, o)) => {
                        conn = c;
                        out = o;
                    }
                    Err(_) => break 'conn,
                }
            } else {
                run_batch(&sh, &mut conn, &frames, &mut out);
            }
        }
        if let Some(e) = &proto_err {
            sh.stats.protocol_errors.fetch_add(1, Ordering::Relaxed);
            out.error(&format!("ERR {e}"));
        }
        if !out.buf.is_empty() {
            if sock.write_all(&out.buf).await.is_err() {
                break;
            }
            out.buf.clear();
            if out.buf.capacity() > 1 << 20 {
                out.buf.shrink_to(64 * 1024);
            }
        }
        if proto_err.is_some() || conn.close {
            break;
        }
        if buf.capacity() > 1 << 20 && buf.len() < 64 * 1024 {
            buf.shrink_to(64 * 1024);
        }
    }
    let _ = sock.shutdown().await;
    sh.clients.lock().remove(&id);
    sh.stats.connected.fetch_sub(1, Ordering::Relaxed);
}
