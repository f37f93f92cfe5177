//! Sending the dataset to a client that asked for it with SYNC or PSYNC
//! (`commands::replication`): the connection's task carries the transfer once the replies
//! before the command are out. A client that asked for the RDB alone (`REPLCONF rdb-only
//! 1`) is closed after it; a replica is sent the replication stream after it (`stream`).
//!
//! ```text
//! PSYNC only:  +FULLRESYNC <replid> <offset>\r\n
//! while the RDB is written:  \n  every second (Redis's keep-alive; readers skip it)
//! then:        $<length>\r\n <the RDB, `length` bytes>
//! ```
//!
//! The RDB (`dataset`) is written first to a file in the data directory, unlinked as soon as
//! it is made (a process killed during a transfer leaves nothing behind), so that its length
//! is known for a reader without `capa eof`; the keep-alives tell the reader the server is
//! still at it. A reader that leaves stops the writing at the next key. For the RDB alone,
//! `+FULLRESYNC`'s id is all zeros and its offset 0 (no stream follows).

pub mod cron;
pub mod dataset;
pub mod stream;

use std::io::{BufWriter, Seek, SeekFrom};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::socket::Sock;
use tokio::io::AsyncWriteExt;

use crate::state::{Shared, SyncRequest};
use dataset::Contents;

/// How the transfer files' names begin, in the data directory.
const PREFIX: &str = "temp-sync-";
/// How often a reader waiting for the RDB is sent a keep-alive newline.
const KEEP_ALIVE: Duration = Duration::from_secs(1);
/// How much of the file goes to the socket per write.
const CHUNK: usize = 256 * 1024;

/// Carries the transfer `req` on `sock` (the connection's), saying on stderr how it went:
/// the RDB alone, or a replica's dataset and stream (`stream`).
pub async fn serve(sh: &Arc<Shared>, sock: &mut Sock, client: u64, req: SyncRequest) {
    if req.stream {
        stream::serve(sh, sock, client, req).await;
        return;
    }
    let who = sock.peer_name();
    eprintln!("Replica {who} (client {client}) asks for the RDB alone");
    let resync = req.psync.then(|| format!("+FULLRESYNC {} 0\r\n", "0".repeat(40)));
    match transfer(sh, sock, client, &req, resync, None).await {
        Ok((bytes, keys)) => {
            eprintln!("RDB transfer to {who} done: {keys} keys, {bytes} bytes");
        }
        Err(e) => eprintln!("RDB transfer to {who} failed: {e}"),
    }
}

/// Sends `resync` (PSYNC's `+FULLRESYNC` line) and then the RDB of `at` (of now when
/// `None`) on `sock`: the bytes and keys sent.
async fn transfer(
    sh: &Arc<Shared>,
    sock: &mut Sock,
    client: u64,
    req: &SyncRequest,
    resync: Option<String>,
    at: Option<dataset::Moment>,
) -> Result<(u64, u64), String> {
    if let Some(line) = resync {
        sock.write_all(line.as_bytes()).await.map_err(|e| format!("writing to the reader: {e}"))?;
    }
    let path = sh.config.dir.join(format!("{PREFIX}{}-{client}.rdb", std::process::id()));
    let stop = Arc::new(AtomicBool::new(false));
    let what = Contents { keys: req.keys, functions: req.functions };
    let writing = {
        let (sh, stop, path) = (sh.clone(), stop.clone(), path.clone());
        tokio::task::spawn_blocking(move || write_file(&sh, &path, what, at, &stop))
    };
    tokio::pin!(writing);
    let mut tick = tokio::time::interval(KEEP_ALIVE);
    tick.tick().await;
    let written = loop {
        tokio::select! {
            done = &mut writing => break done,
            _ = tick.tick() => {
                if sock.write_all(b"\n").await.is_err() {
                    stop.store(true, Ordering::Relaxed);
                    // The file is unlinked: what it holds goes when the writer drops it.
                    return Err("the reader left while the RDB was written".into());
                }
            }
        }
    };
    let (file, len, keys) = written
        .map_err(|e| format!("writing the RDB: {e}"))?
        .map_err(|e| format!("writing the RDB to {}: {e}", path.display()))?;
    sock.write_all(format!("${len}\r\n").as_bytes())
        .await
        .map_err(|e| format!("writing to the reader: {e}"))?;
    send_file(file, len, sock).await?;
    sock.flush().await.map_err(|e| format!("writing to the reader: {e}"))?;
    Ok((len, keys))
}

/// Writes the RDB to a new file at `path`, unlinked once made; returns it at its start, its
/// length and the keys it holds.
fn write_file(
    sh: &Shared,
    path: &std::path::Path,
    what: Contents,
    at: Option<dataset::Moment>,
    stop: &AtomicBool,
) -> Result<(std::fs::File, u64, u64), String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| e.to_string())?;
    // Once unlinked, a process killed mid-transfer leaves nothing behind. Where the system
    // refuses (the name stays), the file is removed when the transfer ends.
    let unlinked = std::fs::remove_file(path).is_ok();
    let out = (|| {
        let w = BufWriter::with_capacity(CHUNK, file);
        let at = at.unwrap_or_else(|| dataset::moment(sh));
        let (w, written) = dataset::write_at(sh, at, w, what, stop).map_err(|e| e.to_string())?;
        let mut file = w.into_inner().map_err(|e| e.error().to_string())?;
        let len = file.stream_position().map_err(|e| e.to_string())?;
        file.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
        Ok((file, len, written.keys))
    })();
    if !unlinked {
        let _ = std::fs::remove_file(path);
    }
    out
}

/// Sends `len` bytes of `file` from its start to `sock`, read on a blocking thread a chunk
/// at a time (the reads stay off the connection threads).
async fn send_file(file: std::fs::File, len: u64, sock: &mut Sock) -> Result<(), String> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<std::io::Result<Vec<u8>>>(4);
    let reader = tokio::task::spawn_blocking(move || {
        use std::io::Read;
        let mut file = file.take(len);
        loop {
            let mut chunk = vec![0u8; CHUNK];
            let n = match file.read(&mut chunk) {
                Ok(n) => n,
                Err(e) => {
                    let _ = tx.blocking_send(Err(e));
                    return;
                }
            };
            if n == 0 {
                return;
            }
            chunk.truncate(n);
            if tx.blocking_send(Ok(chunk)).is_err() {
                return;
            }
        }
    });
    let mut sent = 0u64;
    while let Some(chunk) = rx.recv().await {
        let chunk = chunk.map_err(|e| format!("reading the RDB file back: {e}"))?;
        sock.write_all(&chunk).await.map_err(|e| format!("writing to the reader: {e}"))?;
        sent += chunk.len() as u64;
    }
    drop(rx);
    let _ = reader.await;
    if sent != len {
        return Err(format!("the RDB file gave {sent} of its {len} bytes"));
    }
    Ok(())
}
