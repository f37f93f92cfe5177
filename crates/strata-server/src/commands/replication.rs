//! REPLICAOF (and its old name SLAVEOF): this server follows a Redis master
//! (`crate::master_link`, the link in `crate::replicaof`), or stops following one. And the
//! other direction: REPLCONF, then SYNC or PSYNC, which send the dataset as one RDB
//! (`crate::sync_source`), alone to a client that asked for it alone (`REPLCONF rdb-only 1`,
//! as `redis-cli --rdb` and `--functions-rdb` ask), else followed by the replication stream
//! (a replica; `docs/redis-compat.md`).
//!
//! As redis-server 7.0: NO ONE makes the server a master again, keeping its dataset; a
//! master already followed is answered "Already connected to specified master"; a new one
//! is answered at once, the link connecting and syncing in the background (INFO
//! replication and ROLE say how it stands). Cluster mode refuses it: its replication is
//! its Raft groups' (`docs/replication.md`).

use super::args::is;
use super::errors::{NOT_INT, SYNTAX};
use super::CmdResult;
use crate::master_link::{Followed, Target};
use crate::resp::Out;
use crate::state::{Conn, Shared, SyncRequest};
use crate::types::number::parse_int_strict;

/// REPLICAOF host port | NO ONE
pub fn replicaof(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if sh.router.is_some() {
        return Err("ERR REPLICAOF not allowed in cluster mode.".into());
    }
    if sh.failover.phase() != crate::failover::Phase::Idle {
        return Err("ERR REPLICAOF not allowed while failing over.".into());
    }
    if is(&a[1], "no") && is(&a[2], "one") {
        if sh.master_link.following() {
            become_master(sh, conn.in_exec);
            eprintln!("MASTER MODE enabled (REPLICAOF NO ONE)");
        }
        out.ok();
        return Ok(());
    }
    let port = crate::types::number::parse_int_strict(&a[2]).ok_or(super::errors::NOT_INT)?;
    let port = u16::try_from(port).map_err(|_| "ERR Invalid master port")?;
    let host = String::from_utf8_lossy(&a[1]).into_owned();
    match sh.master_link.follow(Target { host: host.clone(), port })? {
        Followed::Already => out.simple("OK Already connected to specified master"),
        Followed::Started => {
            super::blocking::unblock_for_replica(sh);
            // CONFIG GET replicaof, and CONFIG REWRITE's line, say the master followed.
            sh.params.write().insert("replicaof".into(), format!("{host} {port}"));
            eprintln!("REPLICAOF {host}:{port} enabled");
            out.ok();
        }
    }
    Ok(())
}

/// A replica becomes a master (REPLICAOF NO ONE, a PSYNC FAILOVER from its master, a
/// failover that did not finish): the link stops and the dataset stays. The stream goes on
/// under a new id, the master's kept as the second one up to here (`storage::backlog`: the
/// master's other replicas, and the master itself, resume from this one). Under the gate:
/// the link applies no more of the master's commands once it is taken, and this server's own
/// writes are not streamed before the link is stopped, so none goes before the master's
/// last. Not `in_exec` (an EXEC holds its keys' locks, and the gate is taken before any):
/// there the link may still add the command it is applying after the shift, which only
/// takes that command into the new history.
pub fn become_master(sh: &Shared, in_exec: bool) {
    let backlog = &sh.engine().backlog;
    let _gate = (!in_exec).then(|| backlog.gate());
    backlog.shift_id(None);
    backlog.forget_selected();
    sh.master_link.stop();
    sh.params.write().insert("replicaof".into(), String::new());
}

/// REPLCONF option value [option value ...]: what a client about to SYNC says of itself,
/// each pair taken as it is read (an error stops at its pair), as redis-server 7.0 takes
/// them. `ack` and `getack` get no reply: a replica's ACKs are read by its sender
/// (`crate::sync_source::stream`), and GETACK is answered on the link (`crate::replicaof`).
pub fn replconf(_: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if a.len().is_multiple_of(2) {
        return Err(SYNTAX.into());
    }
    for pair in a[1..].chunks_exact(2) {
        let (option, value) = (&pair[0], &pair[1]);
        if is(option, "listening-port") {
            // Checked as Redis checks it; INFO lists the replica with it.
            let port = parse_int_strict(value).ok_or(NOT_INT)?;
            c.replconf.listening_port = u16::try_from(port).unwrap_or(0);
        } else if is(option, "ip-address") {
            // Redis's NET_HOST_STR_LEN.
            if value.len() >= 46 {
                return Err(format!(
                    "ERR REPLCONF ip-address provided by replica instance is too long: {} bytes",
                    value.len()
                )
                .into());
            }
        } else if is(option, "capa") {
            // Capabilities not understood are ignored (psync2 changes nothing here).
            if is(value, "eof") {
                c.replconf.eof = true;
            }
        } else if is(option, "ack") || is(option, "getack") {
            return Ok(());
        } else if is(option, "rdb-only") {
            match parse_int_strict(value) {
                Some(v @ 0..=1) => c.replconf.rdb_only = v == 1,
                Some(_) => return Err("ERR value is out of range, must be between 0 and 1".into()),
                None => return Err(NOT_INT.into()),
            }
        } else if is(option, "rdb-filter-only") {
            let Some(filters) = crate::resp::args::split_args(value) else {
                return Err("ERR Missing rdb-filter-only values".into());
            };
            c.replconf.filtered = true;
            c.replconf.functions = false;
            for f in &filters {
                if !is(f, "functions") {
                    return Err(format!(
                        "ERR Unsupported rdb-filter-only option: {}",
                        String::from_utf8_lossy(f)
                    )
                    .into());
                }
                c.replconf.functions = true;
            }
        } else {
            return Err(format!(
                "ERR Unrecognized REPLCONF option: {}",
                String::from_utf8_lossy(option)
            )
            .into());
        }
    }
    out.ok();
    Ok(())
}

/// SYNC, and PSYNC replid offset: the dataset as one RDB, sent once the replies before it
/// are out, then the replication stream, or only the stream after the offset asked when
/// it is still held (`crate::sync_source`); a client that asked for the RDB alone is
/// closed after it. Refused as redis-server
/// refuses it (a replica whose link is down, a filtered RDB to a client that cannot read
/// one ended by a mark, PSYNC FAILOVER to a master, a PSYNC offset that is no integer), in
/// cluster mode (its nodes replicate through Raft). A replica serves replicas of its own
/// (its master's stream goes on to them as it came; a full sync from its master makes them
/// sync again in full: `storage::backlog`). PSYNC FAILOVER from this replica's master makes
/// it a master first (`commands::failover`).
pub fn sync(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], _: &mut Out) -> CmdResult {
    let psync = is(&a[0], "psync");
    if psync && a.len() > 3 && is(&a[3], "failover") {
        // A master hands its role over (`commands::failover`): the replica it follows, and
        // whose stream is its own (the same id), becomes the master, and the PSYNC goes on
        // as one to a master (its old id now the second one: CONTINUE).
        let id = String::from_utf8_lossy(&a[1]);
        eprintln!("Failover request received for replid {id}.");
        if !sh.master_link.following() {
            return Err("ERR PSYNC FAILOVER can't be sent to a master.".into());
        }
        if a[1] != sh.engine().backlog.replid().as_bytes() {
            return Err("ERR PSYNC FAILOVER replid must match my replid.".into());
        }
        become_master(sh, false);
        eprintln!("MASTER MODE enabled (failover request from client {})", c.id);
    }
    if sh.failover.phase() != crate::failover::Phase::Idle {
        return Err("NOMASTERLINK Can't SYNC while failing over".into());
    }
    if sh.master_link.link_down() {
        return Err("NOMASTERLINK Can't SYNC while not connected with my master".into());
    }
    if c.replconf.filtered && !c.replconf.eof {
        return Err("ERR Filtered replica requires EOF capability".into());
    }
    if psync && parse_int_strict(&a[2]).is_none() {
        return Err(NOT_INT.into());
    }
    if sh.router.is_some() {
        return Err("ERR SYNC is not served in cluster mode: its nodes replicate through \
Raft (docs/replication.md)"
            .into());
    }
    let stream = !c.replconf.rdb_only;
    let filtered = c.replconf.filtered;
    let resume = psync
        .then(|| parse_int_strict(&a[2]).map(|o| (a[1].clone(), o)))
        .flatten()
        .filter(|(_, o)| *o > 0)
        .map(|(id, o)| (id, o as u64));
    c.sync = Some(SyncRequest {
        psync,
        keys: !filtered,
        functions: !filtered || c.replconf.functions,
        stream,
        resume,
        named: psync && a[1] != b"?",
        port: c.replconf.listening_port,
    });
    // No reply: the transfer is the answer; the connection is the replica's from now on.
    c.close = true;
    Ok(())
}
