//! Persistence and shutdown: SAVE, BGSAVE, BGREWRITEAOF, LASTSAVE, SHUTDOWN.
//!
//! Every write is in the WAL as it is acknowledged (synced as `appendfsync` says), so there is
//! no separate snapshot file to write. SAVE makes everything durable and moves it out of the
//! WAL: the WAL synced, every memtable flushed to table files (what a restart then need not
//! replay). BGSAVE does the same on a thread of its own. The WAL is this server's
//! append-only file, and rewriting it is the same work (what it holds goes to table files and
//! the WALs go), so BGREWRITEAOF is a background save too, with its own flag and status
//! (INFO's `aof_rewrite_in_progress`, `aof_last_bgrewrite_status`). LASTSAVE is when the last one
//! finished (the server's start before any). SHUTDOWN is the graceful stop SIGTERM gives: no
//! new connections, the DB flushed and closed, the process exits; NOSAVE, SAVE, NOW and FORCE
//! change nothing (the close always flushes), and ABORT has no shutdown in progress to abort.

use std::sync::atomic::{AtomicBool, Ordering};

use super::args::is;
use super::errors::SYNTAX;
use super::CmdResult;
use crate::resp::Out;
use crate::state::{unix_now, Conn, Persistence, Shared};

const IN_PROGRESS: &str = "ERR Background save already in progress";

pub fn save(sh: &Shared, _: &mut Conn, _: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if sh.persistence.saving.load(Ordering::Acquire) {
        return Err(IN_PROGRESS.into());
    }
    let changes = sh.notifier.changes();
    sh.dbs.save().map_err(|e| format!("ERR saving failed: {e}"))?;
    sh.persistence.last_save.store(unix_now(), Ordering::Release);
    sh.persistence.saved_changes.store(changes, Ordering::Release);
    out.ok();
    Ok(())
}

pub fn bgsave(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let schedule = match a.len() {
        1 => false,
        2 if is(&a[1], "schedule") => true,
        _ => return Err(SYNTAX.into()),
    };
    if sh.persistence.saving.swap(true, Ordering::AcqRel) {
        if schedule {
            // The running one covers every write acknowledged before this call.
            out.simple("Background saving scheduled");
            return Ok(());
        }
        return Err(IN_PROGRESS.into());
    }
    // The changes made before the save starts are the ones it covers.
    let changes = sh.notifier.changes();
    in_background(
        sh,
        "strata-bgsave",
        |p| &p.saving,
        move |p, ok| {
            p.last_bgsave_ok.store(ok, Ordering::Release);
            if ok {
                p.last_save.store(unix_now(), Ordering::Release);
                p.saved_changes.store(changes, Ordering::Release);
            }
        },
    )
    .map_err(|e| format!("ERR cannot start the background save: {e}"))?;
    out.simple("Background saving started");
    Ok(())
}

/// Runs a save (`Databases::save`) on a thread named `name` while `running` (already set by
/// the caller) says so; `done` records its outcome before `running` is cleared. A panic in
/// the save is a failed save, never one "in progress" forever.
fn in_background(
    sh: &Shared,
    name: &str,
    running: fn(&Persistence) -> &AtomicBool,
    done: impl FnOnce(&Persistence, bool) + Send + 'static,
) -> std::io::Result<()> {
    let (dbs, p) = (sh.dbs.clone(), sh.persistence.clone());
    let started = std::thread::Builder::new().name(name.into()).spawn(move || {
        let saved = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| dbs.save()));
        done(&p, matches!(saved, Ok(Ok(()))));
        running(&p).store(false, Ordering::Release);
    });
    if started.is_err() {
        running(&sh.persistence).store(false, Ordering::Release);
    }
    started.map(drop)
}

/// BGREWRITEAOF (module doc).
pub fn bgrewriteaof(sh: &Shared, _: &mut Conn, _: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if sh.persistence.rewriting.swap(true, Ordering::AcqRel) {
        return Err("ERR Background append only file rewriting already in progress".into());
    }
    in_background(
        sh,
        "strata-aofrw",
        |p| &p.rewriting,
        |p, ok| {
            p.rewrites.fetch_add(1, Ordering::Relaxed);
            p.last_rewrite_ok.store(ok, Ordering::Release);
        },
    )
    .map_err(|e| format!("ERR cannot start the background rewrite: {e}"))?;
    out.simple("Background append only file rewriting started");
    Ok(())
}

pub fn lastsave(sh: &Shared, _: &mut Conn, _: &[Vec<u8>], out: &mut Out) -> CmdResult {
    out.int(sh.persistence.last_save.load(Ordering::Acquire) as i64);
    Ok(())
}

pub fn shutdown(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], _: &mut Out) -> CmdResult {
    let (mut save, mut nosave, mut abort) = (false, false, false);
    for arg in &a[1..] {
        if is(arg, "nosave") {
            nosave = true;
        } else if is(arg, "save") {
            save = true;
        } else if is(arg, "abort") {
            abort = true;
        } else if !(is(arg, "now") || is(arg, "force")) {
            return Err(SYNTAX.into());
        }
    }
    if (save && nosave) || (abort && a.len() > 2) {
        return Err(SYNTAX.into());
    }
    if abort {
        return Err("ERR No shutdown in progress.".into());
    }
    // No reply: the connection closes, and the server stops (`lib.rs`); a script running
    // stops too (what it wrote so far is written, as when it fails).
    sh.scripts.stop_for_shutdown();
    sh.shutdown.notify_one();
    c.close = true;
    Ok(())
}
