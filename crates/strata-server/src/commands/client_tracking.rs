//! CLIENT TRACKING, CLIENT CACHING, CLIENT GETREDIR and CLIENT TRACKINGINFO, and the look a
//! tracking client's commands take before and after they run (`crate::tracking` has the
//! rules and keeps the state), as Redis 7.0 has them:
//!
//! - `CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST] [PREFIX p]... [OPTIN] [OPTOUT] [NOLOOP]`,
//!   with Redis's refusals in its order: a second REDIRECT, an id that is no connection's,
//!   PREFIX without BCAST, switching BCAST or OPTIN/OPTOUT without turning tracking off first,
//!   BCAST with OPTIN or OPTOUT, OPTIN with OPTOUT, overlapping prefixes.
//! - A read-only command of a default-mode client has its keys remembered before it runs
//!   (`crate::tracking`'s contract). A script's declared keys are remembered when one of the
//!   commands it calls reads (Redis 7.0 tracks the keys of the EVAL or FCALL, not those its
//!   commands name): remembered before it runs and taken back after if none read.
//! - `CLIENT CACHING yes` (OPTIN) or `no` (OPTOUT) counts for the next command (for a
//!   transaction's, until EXEC); any CLIENT command keeps it.
//! - In cluster mode every replica tells its own tracking clients of each change as it
//!   applies it (`cluster::apply`), so a client hears of a change to a key it read whichever
//!   node it read from (the leader, or a replica after READONLY) and whichever node leads the
//!   partition later; a node that loses its replica of a partition, or installs a snapshot
//!   or a slot's copy, or applies a FLUSHALL, tells every tracking client to flush. While a
//!   client of a node tracks with NOLOOP, the entries that node proposes name the client
//!   whose command wrote each batch (`cluster::apply`), so applying them it leaves that
//!   client's own changes untold, as Redis does.

use super::args::{int_arg, is};
use super::errors::SYNTAX;
use super::{scripting, CmdResult, Command};
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::tracking::{Mode, Options};
use crate::types::notify;

/// CLIENT TRACKING ON|OFF [options] (`a` from CLIENT on; at least 3 arguments).
pub fn tracking(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let mut opts = Options::default();
    let mut j = 3;
    while j < a.len() {
        let more = j + 1 < a.len();
        if is(&a[j], "redirect") && more {
            j += 1;
            if opts.redirect != 0 {
                return Err("ERR A client can only redirect to a single other client".into());
            }
            let id = u64::try_from(int_arg(&a[j])?).ok();
            opts.redirect = id
                .filter(|id| sh.clients.lock().contains_key(id))
                .ok_or("ERR The client ID you want redirect to does not exist")?;
        } else if is(&a[j], "bcast") {
            opts.bcast = true;
        } else if is(&a[j], "optin") {
            opts.optin = true;
        } else if is(&a[j], "optout") {
            opts.optout = true;
        } else if is(&a[j], "noloop") {
            opts.noloop = true;
        } else if is(&a[j], "prefix") && more {
            j += 1;
            opts.prefixes.push(a[j].clone());
        } else {
            return Err(SYNTAX.into());
        }
        j += 1;
    }
    if is(&a[2], "on") {
        if !opts.bcast && !opts.prefixes.is_empty() {
            return Err("ERR PREFIX option requires BCAST mode to be enabled".into());
        }
        if conn.tracking.is_some_and(|m| m.bcast != opts.bcast) {
            return Err("ERR You can't switch BCAST mode on/off before disabling tracking for \
                        this client, and then re-enabling it with a different mode."
                .into());
        }
        if opts.bcast && (opts.optin || opts.optout) {
            return Err("ERR OPTIN and OPTOUT are not compatible with BCAST".into());
        }
        if opts.optin && opts.optout {
            return Err("ERR You can't specify both OPTIN mode and OPTOUT mode".into());
        }
        if conn.tracking.is_some_and(|m| (opts.optin && m.optout) || (opts.optout && m.optin)) {
            return Err("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for \
                        this client, and then re-enabling it with a different mode."
                .into());
        }
        super::pubsub::message_queue(sh, conn);
        sh.tracking.enable(conn.id, &opts)?;
        let caching = conn.tracking.is_some_and(|m| m.caching);
        conn.tracking =
            Some(Mode { bcast: opts.bcast, optin: opts.optin, optout: opts.optout, caching });
    } else if is(&a[2], "off") {
        sh.tracking.disable(conn.id);
        conn.tracking = None;
    } else {
        return Err(SYNTAX.into());
    }
    announce(sh);
    out.ok();
    Ok(())
}

/// CLIENT CACHING YES|NO (`a` from CLIENT on; 3 arguments).
pub fn caching(conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let Some(mode) = conn.tracking.as_mut() else {
        return Err("ERR CLIENT CACHING can be called only when the client is in tracking mode \
                    with OPTIN or OPTOUT mode enabled"
            .into());
    };
    if is(&a[2], "yes") {
        if !mode.optin {
            return Err(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."
                    .into(),
            );
        }
    } else if is(&a[2], "no") {
        if !mode.optout {
            return Err(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."
                    .into(),
            );
        }
    } else {
        return Err(SYNTAX.into());
    }
    mode.caching = true;
    out.ok();
    Ok(())
}

/// CLIENT GETREDIR: the redirect target, 0 when tracking without one, -1 when not tracking.
pub fn getredir(sh: &Shared, conn: &Conn, out: &mut Out) -> CmdResult {
    out.int(sh.tracking.info(conn.id).map_or(-1, |i| i.redirect as i64));
    Ok(())
}

/// CLIENT TRACKINGINFO: a map of `flags` (a set: on or off, then bcast, optin with
/// caching-yes, optout with caching-no, noloop, broken_redirect), `redirect` and `prefixes`.
pub fn trackinginfo(sh: &Shared, conn: &Conn, out: &mut Out) -> CmdResult {
    let info = sh.tracking.info(conn.id);
    let mode = conn.tracking.unwrap_or_default();
    let mut flags = vec![if info.is_some() { "on" } else { "off" }];
    if let Some(i) = &info {
        let optin = [Some("optin"), mode.caching.then_some("caching-yes")];
        let optout = [Some("optout"), mode.caching.then_some("caching-no")];
        flags.extend(i.bcast.then_some("bcast"));
        flags.extend(optin.into_iter().flatten().filter(|_| mode.optin));
        flags.extend(optout.into_iter().flatten().filter(|_| mode.optout));
        flags.extend(i.noloop.then_some("noloop"));
        flags.extend(i.broken.then_some("broken_redirect"));
    }
    out.map(3);
    out.bulk(b"flags");
    out.set(flags.len());
    for f in flags {
        out.bulk(f.as_bytes());
    }
    out.bulk(b"redirect");
    out.int(info.as_ref().map_or(-1, |i| i.redirect as i64));
    out.bulk(b"prefixes");
    let prefixes = info.map(|i| i.prefixes).unwrap_or_default();
    out.array(prefixes.len());
    for p in prefixes {
        out.bulk(&p);
    }
    Ok(())
}

/// CLIENT LIST's `flags` letters and `redir` of client `id`: `t` tracking, `R` its redirect
/// target gone, `B` broadcasting; `redir` -1 when not tracking.
pub fn list_fields(sh: &Shared, id: u64) -> (String, i64) {
    match sh.tracking.info(id) {
        None => (String::new(), -1),
        Some(i) => {
            let mut f = String::from("t");
            if i.broken {
                f.push('R');
            }
            if i.bcast {
                f.push('B');
            }
            (f, i.redirect as i64)
        }
    }
}

/// Tells the notifier whether every change is to be queued for invalidations, after a client
/// turned tracking on or off. Never in cluster mode: there every replica tells its clients as
/// it applies each change (`cluster::apply`), and the leader's queued changes would be told
/// twice.
fn announce(sh: &Shared) {
    if sh.router.is_none() {
        sh.tracking.announce(&sh.notifier);
    }
}

/// Tracking ends for a connection (RESET).
pub fn turn_off(sh: &Shared, conn: &mut Conn) {
    if conn.tracking.take().is_some() {
        sh.tracking.disable(conn.id);
        announce(sh);
    }
}

/// A connection closed: its tracking ends, and the clients redirecting to it are told.
pub fn gone(sh: &Shared, id: u64) {
    sh.tracking.drop_client(id);
    announce(sh);
}

/// Every key may have changed (FLUSHALL, FLUSHDB, SWAPDB): every tracking client is told,
/// and the table emptied (also of the ids of clients that stopped tracking). In cluster mode
/// each replica does it as it applies the deletion (`cluster::apply`).
pub fn flushed(sh: &Shared) {
    if sh.router.is_none() {
        sh.tracking.flush();
    }
}

/// Whether `cmd` reads keys without writing (Redis's `readonly` commands with keys): its keys
/// are remembered for a tracking client.
fn reads_keys(cmd: &Command) -> bool {
    !cmd.write && !cmd.keys.channels && cmd.keys.first != 0 && cmd.name != "watch"
}

/// Before `cmd` runs on `conn` (only while some client tracks): remembers the keys it reads
/// for `conn`'s tracking, or marks a script's state as having read. For a script, the keys it
/// declared are remembered provisionally: what was added, for [`after`].
pub fn before(
    sh: &Shared,
    conn: &mut Conn,
    cmd: &Command,
    args: &[Vec<u8>],
) -> Option<Vec<Vec<u8>>> {
    if conn.in_script {
        conn.script_read |= reads_keys(cmd);
        return None;
    }
    let mode = conn.tracking?;
    if !mode.remembers() {
        return None;
    }
    if scripting::runs_script(cmd.name) {
        conn.script_read = false;
        return Some(sh.tracking.remember(conn.id, &cmd.keys.of(args)));
    }
    if reads_keys(cmd) {
        let keys = cmd.keys.of(args);
        let added = sh.tracking.remember(conn.id, &keys);
        if conn.in_exec {
            // The order of the transaction's reads and writes decides what is told
            // (`types::notify`, `note_read`).
            for k in &keys {
                notify::note_read(k, !added.iter().any(|a| a.as_slice() == *k));
            }
        }
    }
    None
}

/// After `cmd` ran on `conn`: a script that read nothing has its declared keys taken back,
/// and `CLIENT CACHING` is spent (outside a transaction; a CLIENT command keeps it).
pub fn after(sh: &Shared, conn: &mut Conn, cmd: &Command, provisional: Option<Vec<Vec<u8>>>) {
    if let Some(added) = provisional {
        if !std::mem::take(&mut conn.script_read) {
            sh.tracking.forget(conn.id, &added);
        }
    }
    let outside = conn.multi.is_none() && !conn.in_exec && !conn.in_script;
    if let Some(mode) = conn.tracking.as_mut().filter(|_| outside && cmd.name != "client") {
        mode.caching = false;
    }
}
