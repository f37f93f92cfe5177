//! MONITOR: a connection that sends it receives a line for each command the server runs
//! afterwards, as redis-server 7.0 writes them:
//!
//! ```text
//! +<unix seconds>.<microseconds> [<db> <client ip:port>|lua] "arg" "arg" ...\r\n
//! ```
//!
//! Each argument is quoted with Redis's escapes (`\\`, `\"`, `\n`, `\r`, `\t`, `\a`, `\b`,
//! `\xHH` for other bytes that are not printable ASCII). A command is fed after it ran (so
//! EXEC's commands come before EXEC), but a script's command (EVAL, EVALSHA, FCALL and their
//! read-only forms) before it runs, so that the commands it calls (`[<db> lua]`) follow it.
//! Queued commands are fed when EXEC runs them, not when MULTI queued them. Administrative
//! commands (Redis's `admin` flag: SHUTDOWN, SAVE and the others `super::flags` marks so; of
//! the containers, whose subcommands carry their own flags there, CONFIG GET/SET, CLIENT
//! LIST/KILL...) are not shown, and AUTH's arguments (HELLO's after AUTH) are shown as
//! `(redacted)`.

use super::args::is;
use super::{CmdResult, Command};
use crate::pubsub::Subscriber;
use crate::resp::Out;
use crate::state::{Conn, Shared};

/// MONITOR
pub fn monitor(sh: &Shared, conn: &mut Conn, _: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let (id, resp3) = (conn.id, conn.resp3);
    let subs = super::pubsub::message_queue(sh, conn);
    sh.pubsub.monitor(id, Subscriber { tx: subs.tx.clone(), resp3 });
    out.ok();
    Ok(())
}

/// Whether `cmd` with `args` is an administrative command, never fed (Redis's `admin` flag:
/// the command's own in `super::flags`, a container's subcommand's here).
fn hidden(cmd: &Command, args: &[Vec<u8>]) -> bool {
    let sub = |names: &[&str]| args.get(1).is_some_and(|s| names.iter().any(|n| is(s, n)));
    let name = cmd.name;
    super::flags::has(name, "admin")
        || (name == "config" && sub(&["get", "set", "resetstat", "rewrite"]))
        || (name == "slowlog" && sub(&["get", "len", "reset"]))
        || (name == "latency" && !sub(&["help"]))
        || (name == "client" && sub(&["kill", "list", "no-evict", "pause", "unblock", "unpause"]))
        || (name == "cluster"
            && sub(&[
                "addslots",
                "addslotsrange",
                "bumpepoch",
                "count-failure-reports",
                "delslots",
                "delslotsrange",
                "failover",
                "flushslots",
                "forget",
                "meet",
                "replicas",
                "replicate",
                "reset",
                "saveconfig",
                "set-config-epoch",
                "setslot",
                "slaves",
            ]))
}

/// Which arguments MONITOR shows as `(redacted)`: SLOWLOG's secrets.
fn redacted(args: &[Vec<u8>]) -> Vec<bool> {
    let mut hide = vec![false; args.len()];
    for i in crate::slowlog::redacted(args) {
        hide[i] = true;
    }
    hide
}

/// The line MONITOR shows for `args` run by `conn` at `now` (seconds, microseconds).
pub fn line(sh: &Shared, conn: &Conn, args: &[Vec<u8>], now: (u64, u32)) -> Vec<u8> {
    let mut line = format!("+{}.{:06} [{} ", now.0, now.1, conn.db).into_bytes();
    if conn.in_script {
        line.extend_from_slice(b"lua");
    } else {
        let addr = sh.clients.lock().get(&conn.id).map(|e| e.addr.clone()).unwrap_or_default();
        line.extend_from_slice(addr.as_bytes());
    }
    line.extend_from_slice(b"] ");
    for (i, (a, hide)) in args.iter().zip(redacted(args)).enumerate() {
        if i > 0 {
            line.push(b' ');
        }
        crate::resp::args::push_repr(&mut line, if hide { b"(redacted)" } else { a });
    }
    line.extend_from_slice(b"\r\n");
    line
}

/// Feeds `cmd` with `args`, run by `conn`, to the monitors, unless it is hidden from them.
/// The caller has seen a monitor (`PubSub::monitored`).
pub fn feed(sh: &Shared, conn: &Conn, cmd: &Command, args: &[Vec<u8>]) {
    if hidden(cmd, args) {
        return;
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or((0, 0), |d| (d.as_secs(), d.subsec_micros()));
    sh.pubsub.feed_monitors(line(sh, conn, args, now));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&[u8]]) -> Vec<Vec<u8>> {
        a.iter().map(|x| x.to_vec()).collect()
    }

    #[test]
    fn secrets_are_redacted_and_admin_commands_hidden() {
        assert_eq!(redacted(&args(&[b"AUTH", b"u", b"p"])), [false, true, true]);
        assert_eq!(redacted(&args(&[b"acl", b"setuser", b"u", b">p"])), [false, false, true, true]);
        let hello = args(&[b"hello", b"2", b"AUTH", b"u", b"p", b"SETNAME", b"n"]);
        assert_eq!(redacted(&hello), [false, false, false, true, true, false, false]);
        let migrate =
            args(&[b"MIGRATE", b"h", b"1", b"", b"0", b"9", b"AUTH2", b"u", b"p", b"KEYS", b"k"]);
        let shown = [false, false, false, false, false, false, false, true, true, false, false];
        assert_eq!(redacted(&migrate), shown);
        let hidden = |a: &[&[u8]]| {
            let a = args(a);
            super::hidden(crate::commands::lookup(&a[0]).unwrap(), &a)
        };
        assert!(hidden(&[b"CONFIG", b"SET", b"x", b"y"]));
        assert!(!hidden(&[b"config", b"help"]));
        assert!(hidden(&[b"monitor"]));
        assert!(hidden(&[b"SHUTDOWN", b"NOSAVE"]));
        assert!(hidden(&[b"pfselftest"]));
        assert!(!hidden(&[b"set", b"k", b"v"]));
    }
}
