//! Cluster mode's side of a command (`crate::routing`): before a command with keys runs, its
//! keys must hash to one slot (`CROSSSLOT` otherwise) and the slot must be served here
//! (`MOVED <slot> <host>:<port>` to the node that serves it, `CLUSTERDOWN` when none does),
//! with Redis Cluster's reply texts; and READONLY/READWRITE, which let a connection read from
//! a replica. Commands without keys run on any node.

use super::{CmdResult, Command};
use crate::resp::Out;
use crate::routing::Route;
use crate::slots::key_slot;
use crate::state::{Conn, Shared};

/// Redis's reply when a command's keys are in more than one slot.
pub const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";
/// Redis's reply when no node serves the slot.
pub const CLUSTERDOWN: &str = "CLUSTERDOWN Hash slot not served";
/// Redis's reply to a cluster command on a standalone server.
pub const DISABLED: &str = "ERR This instance has cluster support disabled";

/// The error reply that keeps `args` (a command line of `cmd`, its arity checked) from
/// running on this node, or `None` when it runs here: always on a standalone server.
pub fn refusal(sh: &Shared, conn: &Conn, cmd: &Command, args: &[Vec<u8>]) -> Option<String> {
    let router = sh.router.as_ref()?;
    let mut slot = None;
    for i in cmd.keys.positions(args) {
        let s = key_slot(&args[i]);
        if slot.is_some_and(|first| first != s) {
            return Some(CROSSSLOT.to_string());
        }
        slot = Some(s);
    }
    let slot = slot?;
    match router.route(slot, cmd.write, conn.readonly) {
        Route::Local => router.prepare(slot, cmd.write, conn.readonly).err(),
        Route::Moved(addr) => Some(format!("MOVED {slot} {addr}")),
        Route::Down => Some(CLUSTERDOWN.to_string()),
    }
}

/// READONLY: this connection's reads may be served by a replica of their slot.
pub fn readonly(sh: &Shared, conn: &mut Conn, _: &[Vec<u8>], out: &mut Out) -> CmdResult {
    set_readonly(sh, conn, true, out)
}

/// READWRITE: back to reads from the slot's leader only.
pub fn readwrite(sh: &Shared, conn: &mut Conn, _: &[Vec<u8>], out: &mut Out) -> CmdResult {
    set_readonly(sh, conn, false, out)
}

fn set_readonly(sh: &Shared, conn: &mut Conn, on: bool, out: &mut Out) -> CmdResult {
    if sh.router.is_none() {
        return Err(DISABLED.into());
    }
    conn.readonly = on;
    out.simple("OK");
    Ok(())
}
