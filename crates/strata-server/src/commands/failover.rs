//! FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms]: a master hands its role to one of
//! its replicas, as redis-server 6.2+ does (the phases: `crate::failover`).
//!
//! The command checks and answers at once; writes are then held (`pause`) and the server's
//! tasks look every 100 ms ([`tick`]) for a replica that acknowledged the stream's end (the
//! target, when one is named). Once one has, this server follows it, the link's PSYNC saying
//! FAILOVER (`replicaof`): the replica becomes a master and resumes this server's stream
//! (`storage::backlog`, its second id), and the failover ends when the PSYNC is answered
//! ([`finished`]); the held writes then meet a replica (READONLY). The timeout without FORCE,
//! FAILOVER ABORT or a refused PSYNC end it with this server a master again ([`abort`]).
//!
//! Refused as Redis refuses it: in cluster mode, on a replica, without connected replicas,
//! while one is under way, FORCE without both TO and TIMEOUT, a target that is not an online
//! replica, a timeout not above 0, ABORT with none under way.

use std::time::{Duration, Instant};

use super::args::{int_arg, is};
use super::errors::SYNTAX;
use super::CmdResult;
use crate::failover::{Phase, Plan};
use crate::master_link::Target;
use crate::replicas::{Replica, ReplicaState};
use crate::resp::Out;
use crate::state::{Conn, Shared};

/// FAILOVER (module doc).
pub fn failover(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if sh.router.is_some() {
        return Err("ERR FAILOVER not allowed in cluster mode. Use CLUSTER FAILOVER command \
instead."
            .into());
    }
    if a.len() == 2 && is(&a[1], "abort") {
        if sh.failover.phase() == Phase::Idle {
            return Err("ERR No failover in progress.".into());
        }
        abort(sh, "Failover manually aborted", conn.in_exec);
        out.ok();
        return Ok(());
    }
    let (mut timeout_ms, mut force, mut target) = (None, false, None);
    let mut j = 1;
    while j < a.len() {
        if is(&a[j], "timeout") && j + 1 < a.len() && timeout_ms.is_none() {
            let ms = int_arg(&a[j + 1])?;
            if ms <= 0 {
                return Err("ERR FAILOVER timeout must be greater than 0".into());
            }
            timeout_ms = Some(ms as u64);
            j += 2;
        } else if is(&a[j], "to") && j + 2 < a.len() && target.is_none() {
            let port = int_arg(&a[j + 2])?;
            let host = String::from_utf8_lossy(&a[j + 1]).into_owned();
            target = Some((host, port));
            j += 3;
        } else if is(&a[j], "force") && !force {
            force = true;
            j += 1;
        } else {
            return Err(SYNTAX.into());
        }
    }
    if sh.failover.phase() != Phase::Idle {
        return Err("ERR FAILOVER already in progress.".into());
    }
    if sh.master_link.following() {
        return Err("ERR FAILOVER is not valid when server is a replica.".into());
    }
    let replicas = sh.replicas.list();
    if replicas.is_empty() {
        return Err("ERR FAILOVER requires connected replicas.".into());
    }
    if force && (timeout_ms.is_none() || target.is_none()) {
        return Err("ERR FAILOVER with force option requires both a timeout and target HOST \
and IP."
            .into());
    }
    let target = match target {
        Some((host, port)) => {
            let named = replicas.iter().find(|r| r.ip == host && i64::from(r.port) == port);
            let Some(r) = named else {
                return Err("ERR FAILOVER target HOST and PORT is not a replica.".into());
            };
            if r.state != ReplicaState::Online {
                return Err("ERR FAILOVER target replica is not online.".into());
            }
            eprintln!("FAILOVER requested to {host}:{port}.");
            Some(Target { host, port: r.port })
        }
        None => {
            eprintln!("FAILOVER requested to any replica.");
            None
        }
    };
    let now = Instant::now();
    let deadline = timeout_ms.and_then(|ms| now.checked_add(Duration::from_millis(ms)));
    if !sh.failover.begin(Plan { target, deadline, force }) {
        return Err("ERR FAILOVER already in progress.".into());
    }
    sh.pause.hold_writes(true);
    out.ok();
    Ok(())
}

/// The server's tasks call this every 100 ms: while a failover waits for a replica, the
/// replica that acknowledged the stream's end (the target, when one is named) is failed
/// over to; past the deadline the target is under FORCE, else the failover is aborted.
pub fn tick(sh: &Shared) {
    let Some(plan) = sh.failover.waiting() else { return };
    let end = sh.engine().backlog.offset();
    let replicas = sh.replicas.list();
    // The replica that acknowledged the stream's end: the target, or any that listens.
    let named = |r: &&Replica| match &plan.target {
        Some(t) => r.ip == t.host && r.port == t.port,
        None => r.port != 0,
    };
    let caught_up = replicas.iter().filter(named).find(|r| r.ack == end);
    let to = match caught_up.map(|r| Target { host: r.ip.clone(), port: r.port }) {
        Some(t) => {
            eprintln!("Failover target {}:{} is synced, failing over.", t.host, t.port);
            t
        }
        None if plan.deadline.is_some_and(|d| Instant::now() >= d) => match plan.target {
            Some(t) if plan.force => {
                eprintln!("FAILOVER to {}:{} time out exceeded, failing over.", t.host, t.port);
                t
            }
            _ => {
                abort(sh, "Replica never caught up before timeout", false);
                return;
            }
        },
        None => return,
    };
    if !sh.failover.proceed(to.clone()) {
        return;
    }
    match sh.master_link.follow_for_failover(to.clone()) {
        Ok(_) => {
            super::blocking::unblock_for_replica(sh);
            sh.params.write().insert("replicaof".into(), format!("{} {}", to.host, to.port));
        }
        Err(e) => abort(sh, &format!("cannot follow the target: {e}"), false),
    }
}

/// The failover's PSYNC was answered: this server follows its target, and the held writes
/// go on (to READONLY).
pub fn finished(sh: &Shared) {
    if let Some((_, Some(t))) = sh.failover.end() {
        eprintln!("FAILOVER to {}:{} done: this server is its replica now.", t.host, t.port);
    }
    sh.pause.hold_writes(false);
}

/// Ends the failover under way for `why`: a master again if it was already following its
/// target (as after REPLICAOF NO ONE, `in_exec` as there), the held writes let go.
pub fn abort(sh: &Shared, why: &str, in_exec: bool) {
    let Some((phase, target)) = sh.failover.end() else { return };
    match target {
        Some(t) => eprintln!("FAILOVER to {}:{} aborted: {why}", t.host, t.port),
        None => eprintln!("FAILOVER to any replica aborted: {why}"),
    }
    if phase == Phase::InProgress {
        super::replication::become_master(sh, in_exec);
    }
    sh.pause.hold_writes(false);
}
