//! DEBUG, as redis-server 7.0 guards it: refused unless `enable-debug-command` (read at
//! start: `--enable-debug-command` or the config file) is `yes`, or `local` and the client
//! is on a loopback address, with Redis's text; the refusal comes after the arity check, as
//! in Redis (`commands::dispatch_found`).
//!
//! Allowed, it serves the subcommands that mean something here: `SLEEP` (the connection's
//! thread sleeps, as Redis's one thread does), `SET-ACTIVE-EXPIRE` (the expiry task's rounds
//! stop and start), `OBJECT` (encoding, serialized length, idle time), `RELOAD` (Redis saves
//! its dataset and loads it back; the data here live in the engine's files, so RELOAD is
//! SAVE),
//! `LOG`, `ERROR`, `JMAP` and `HELP`. Any other is Redis's unknown-subcommand error.

use std::sync::atomic::Ordering;

use super::args::is;
use super::errors::unknown_subcommand;
use super::CmdResult;
use crate::resp::Out;
use crate::state::{Conn, Shared};

/// Redis's refusal of DEBUG while `enable-debug-command` does not allow it.
pub const NOT_ALLOWED: &str = "ERR DEBUG command not allowed. If the enable-debug-command \
    option is set to \"local\", you can run it from a local connection, otherwise you need to \
    set this option in the configuration file, and then restart the server.";

/// Whether `enable-debug-command` lets connection `conn` run DEBUG.
pub fn allowed(sh: &Shared, conn: &Conn) -> bool {
    let setting = sh.params.read().get("enable-debug-command").cloned().unwrap_or_default();
    match setting.to_ascii_lowercase().as_str() {
        "yes" => true,
        "local" => {
            let clients = sh.clients.lock();
            let addr = clients.get(&conn.id).map(|e| e.addr.clone()).unwrap_or_default();
            addr.parse::<std::net::SocketAddr>().is_ok_and(|a| a.ip().is_loopback())
        }
        _ => false,
    }
}

pub fn debug(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let sub = &a[1];
    let args = a.len() - 2;
    if is(sub, "help") && args == 0 {
        let help = [
            "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "ERROR <string>",
            "    Return a Redis protocol error with <string> as message.",
            "JMAP",
            "    No effect here (no Java).",
            "LOG <message>",
            "    Write <message> to the server's standard error.",
            "OBJECT <key>",
            "    Show low level info about the key and its value.",
            "RELOAD",
            "    SAVE: every database's memtables written to its files (the dataset read",
            "    from them is the one there was).",
            "SET-ACTIVE-EXPIRE <0|1>",
            "    Stop or start the active expiry of keys (their lazy expiry goes on).",
            "SLEEP <seconds>",
            "    Stop this connection's thread for <seconds> (decimals allowed).",
            "HELP",
            "    Print this help.",
        ];
        super::args::reply_help(out, &help);
    } else if is(sub, "sleep") && args == 1 {
        let secs = std::str::from_utf8(&a[2]).ok().and_then(|s| s.trim().parse::<f64>().ok());
        let secs = secs.filter(|s| s.is_finite()).unwrap_or(0.0).clamp(0.0, 3600.0);
        std::thread::sleep(std::time::Duration::from_secs_f64(secs));
        out.ok();
    } else if is(sub, "set-active-expire") && args == 1 {
        sh.active_expire.store(a[2] != b"0", Ordering::Relaxed);
        out.ok();
    } else if is(sub, "object") && args == 1 {
        let ks = sh.keyspace(c.db);
        let Some(m) = ks.meta(&a[2])? else { return Err("ERR no such key".into()) };
        let encoding = super::keys::encoding_name(sh, &ks, &a[2], &m)?;
        // The value's RDB length, as DUMP encodes it: the payload less its type byte, its
        // version and its checksum.
        let len = match crate::types::rdb::key::read(&ks, &a[2])? {
            Some(v) => crate::types::rdb::encode_payload(&v, &super::dump::encodings(sh))
                .len()
                .saturating_sub(11),
            None => 0,
        };
        let idle = ks.store.meta_cache.idle_secs(ks.store.space, &a[2]);
        out.simple(&format!(
            "Value at:0x0 refcount:1 encoding:{encoding} serializedlength:{len} lru:0 \
             lru_seconds_idle:{idle}"
        ));
    } else if is(sub, "reload") {
        // SAVE's work (Redis's DEBUG RELOAD saves first, and counts as a save); Redis's
        // options (MERGE, NOFLUSH, NOSAVE) only change how its file is read back.
        return super::persistence::save(sh, c, a, out);
    } else if is(sub, "log") && args == 1 {
        eprintln!("DEBUG LOG: {}", String::from_utf8_lossy(&a[2]));
        out.ok();
    } else if is(sub, "error") && args == 1 {
        out.error(&String::from_utf8_lossy(&a[2]));
    } else if is(sub, "jmap") && args == 0 {
        out.ok();
    } else {
        return Err(unknown_subcommand(a));
    }
    Ok(())
}
