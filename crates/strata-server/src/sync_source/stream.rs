//! Serving a replica: its dataset and then the replication stream (`storage::backlog`), as
//! a redis-server master serves one.
//!
//! ```text
//! PSYNC <this server's replid> <offset>, the bytes from offset-1 on still held, or
//! PSYNC <its second replid> <offset> with offset <= second_repl_offset (a failover):
//!              +CONTINUE <replid>\r\n   then the stream from there
//! otherwise:   +FULLRESYNC <replid> <end>\r\n  (PSYNC; nothing for SYNC)
//!              the RDB as `super` sends it (its length first), then the stream from <end>
//! replica -> master, any time:  REPLCONF ACK <offset> [FACK <aof offset>]
//! master -> replica, in the stream: PING every repl-ping-replica-period seconds (`cron`;
//!              not from a replica: its stream is its master's as it came, `storage::backlog`)
//! ```
//!
//! The dataset is taken holding the backlog's gate (a replica's link applies and adds its
//! master's commands under it) and every key lock, with the stream's end offset, after the
//! stream was turned on (`Backlog::activate`): every write is in one or the other. The
//! connection then carries the stream until the replica leaves, falls too far behind
//! (`client-output-buffer-limit replica`'s hard limit), or the server stops.

use std::sync::Arc;

use crate::socket::Sock;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::dataset;
use crate::commands::args::is;
use crate::replicas::{Replica, ReplicaState};
use crate::resp::parser::{parse_command, ParseOutcome};
use crate::state::{Shared, SyncRequest};
use crate::storage::backlog::Reader;

/// How far behind the stream's end a replica may fall before it is dropped (Redis's
/// `client-output-buffer-limit replica 256mb`).
const REPLICA_HARD_LIMIT: u64 = 256 << 20;

/// How much of the stream goes to the socket per write.
const CHUNK: usize = 256 * 1024;

/// Serves replica `client` on `sock` (its connection's) until it leaves, saying on stderr
/// how it went.
pub async fn serve(sh: &Arc<Shared>, sock: &mut Sock, client: u64, req: SyncRequest) {
    let who = sock.peer_name();
    sh.replicas.add(Replica {
        id: client,
        ip: sock.peer_ip(),
        port: req.port,
        state: ReplicaState::WaitBgsave,
        ack: 0,
        ack_at: std::time::Instant::now(),
    });
    // Off the books however serving ends (a panic too: a replica left listed would count
    // for WAIT and min-replicas-to-write).
    let _listed = Listed { sh, client };
    eprintln!("Replica {who} (client {client}) asks for synchronization");
    let outcome = run(sh, sock, client, &req).await;
    match outcome {
        Ok(()) => eprintln!("Connection with replica {who} lost (it closed it)"),
        Err(e) => eprintln!("Connection with replica {who} lost: {e}"),
    }
}

async fn run(
    sh: &Arc<Shared>,
    sock: &mut Sock,
    client: u64,
    req: &SyncRequest,
) -> Result<(), String> {
    let backlog = &sh.engine().backlog;
    // `repl-backlog-size` as set now (CONFIG SET takes effect at the next replica's sync);
    // the replica's limit behind the end is Redis's default hard limit for replicas.
    let size = sh.params.read().get("repl-backlog-size").and_then(|v| crate::config::parse_size(v));
    backlog.set_limits(size.map_or(1 << 20, |s| s as usize), REPLICA_HARD_LIMIT);
    // PSYNC asks for the byte after the last it has.
    if let Some((id, at)) = req.resume.as_ref().filter(|_| backlog.is_active()) {
        if let Ok(reader) = backlog.resume(id, at - 1) {
            let replid = backlog.replid();
            eprintln!("Partial resynchronization request from client {client} accepted");
            let line = format!("+CONTINUE {replid}\r\n");
            sock.write_all(line.as_bytes()).await.map_err(|e| format!("writing: {e}"))?;
            sh.replicas.partial_syncs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return stream(sh, sock, client, reader).await;
        }
    }
    if req.named {
        sh.replicas.partial_refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        eprintln!("Partial resynchronization request from client {client} not accepted: full sync");
    }
    let taken = {
        let sh = sh.clone();
        tokio::task::spawn_blocking(move || {
            let engine = sh.engine();
            // A replica's link applies its master's commands under the gate; then the
            // databases' map, then every key (a writer's order). The stream is turned on
            // under the gate, which a freeing of it takes too (`Backlog::free_unless`): it
            // stays on until this reader is registered.
            let _gate = engine.backlog.gate();
            engine.backlog.activate();
            let _pin = sh.dbs.pin(false);
            let _all = engine.locks.lock_all();
            let mut moment = dataset::moment_pinned(&sh);
            if sh.master_link.following() {
                // The master's stream goes on as it came, in the database it selected last:
                // the file says which (`repl-stream-db`), as redis-server's does.
                moment.set_stream_db(engine.backlog.selected());
            } else {
                engine.backlog.forget_selected();
            }
            let (end, replid) = (engine.backlog.offset(), engine.backlog.replid());
            engine.backlog.reader(end).map(|r| (moment, end, replid, r))
        })
    };
    let (moment, end, replid, reader) = taken
        .await
        .map_err(|e| format!("taking the dataset: {e}"))?
        .map_err(|_| "the stream's end was let go".to_string())?;
    // The reader is registered from here on: its bytes stay while the RDB goes.
    let _forget = Forget { sh, reader: reader.clone() };
    sh.replicas.full_syncs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let resync = req.psync.then(|| format!("+FULLRESYNC {replid} {end}\r\n"));
    sh.replicas.set_state(client, ReplicaState::SendBulk);
    super::transfer(sh, sock, client, req, resync, Some(moment)).await?;
    stream(sh, sock, client, reader).await
}

/// Takes replica `client` off the books when its serving ends.
struct Listed<'a> {
    sh: &'a Shared,
    client: u64,
}

impl Drop for Listed<'_> {
    fn drop(&mut self) {
        self.sh.replicas.remove(self.client);
    }
}

/// Unregisters a reader when its replica's serving ends.
struct Forget<'a> {
    sh: &'a Shared,
    reader: Arc<Reader>,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.sh.engine().backlog.forget_reader(&self.reader);
    }
}

/// Sends the stream from where `reader` is, and takes the replica's acknowledgements.
async fn stream(
    sh: &Arc<Shared>,
    sock: &mut Sock,
    client: u64,
    reader: Arc<Reader>,
) -> Result<(), String> {
    let _forget = Forget { sh, reader: reader.clone() };
    let backlog = &sh.engine().backlog;
    sh.replicas.set_state(client, ReplicaState::Online);
    let (mut rd, mut wr) = tokio::io::split(&mut *sock);
    let mut input: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 4096];
    loop {
        loop {
            let bytes = backlog.read(&reader, CHUNK).map_err(|_| {
                "its stream was let go (it fell behind by more than the replica output \
                     limit, or a full sync from this server's master replaced the dataset)"
                    .to_string()
            })?;
            if bytes.is_empty() {
                break;
            }
            wr.write_all(&bytes).await.map_err(|e| format!("writing: {e}"))?;
        }
        tokio::select! {
            () = reader.more(backlog) => {}
            n = rd.read(&mut buf) => {
                let n = n.map_err(|e| format!("reading: {e}"))?;
                if n == 0 {
                    return Ok(());
                }
                input.extend_from_slice(&buf[..n]);
                take_acks(sh, client, &mut input)?;
            }
        }
    }
}

/// Takes the replica's whole commands from the front of `input`: `REPLCONF ACK <offset>`
/// acknowledges; anything else is ignored (a replica sends nothing else), a malformed frame
/// ends the connection.
fn take_acks(sh: &Shared, client: u64, input: &mut Vec<u8>) -> Result<(), String> {
    let mut used = 0;
    loop {
        match parse_command(&input[used..], 1 << 20) {
            Ok(ParseOutcome::Incomplete) => break,
            Ok(ParseOutcome::Command(args, len)) => {
                used += len;
                if args.len() >= 2 && is(&args[0], "replconf") && is(&args[1], "ack") {
                    let ack = args
                        .get(2)
                        .and_then(|a| std::str::from_utf8(a).ok())
                        .and_then(|a| a.parse::<u64>().ok());
                    if let Some(ack) = ack {
                        sh.replicas.ack(client, ack);
                        crate::commands::server::replicas_acked(sh);
                    }
                }
            }
            Err(e) => return Err(format!("a malformed frame from the replica: {e}")),
        }
    }
    input.drain(..used);
    Ok(())
}
