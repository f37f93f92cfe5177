//! REPLICAOF (and its old name SLAVEOF): this server follows a Redis master
//! (`crate::master_link`, the link in `crate::replicaof`), or stops following one.
//!
//! As redis-server 7.0: NO ONE makes the server a master again, keeping its dataset; a
//! master already followed is answered "Already connected to specified master"; a new one
//! is answered at once, the link connecting and syncing in the background (INFO
//! replication and ROLE say how it stands). Cluster mode refuses it: its replication is
//! its Raft groups' (`docs/replication.md`).

use super::args::is;
use super::CmdResult;
use crate::master_link::{Followed, Target};
use crate::resp::Out;
use crate::state::{Conn, Shared};

/// REPLICAOF host port | NO ONE
pub fn replicaof(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if sh.router.is_some() {
        return Err("ERR REPLICAOF not allowed in cluster mode.".into());
    }
    if is(&a[1], "no") && is(&a[2], "one") {
        if sh.master_link.following() {
            sh.master_link.stop();
            sh.params.write().insert("replicaof".into(), String::new());
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
            // CONFIG GET replicaof, and CONFIG REWRITE's line, say the master followed.
            sh.params.write().insert("replicaof".into(), format!("{host} {port}"));
            eprintln!("REPLICAOF {host}:{port} enabled");
            out.ok();
        }
    }
    Ok(())
}
