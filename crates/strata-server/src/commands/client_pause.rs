//! CLIENT PAUSE and CLIENT UNPAUSE, and which commands a pause holds (`crate::pause` keeps
//! the state), as Redis 7.0 has them:
//!
//! - `CLIENT PAUSE <ms> [WRITE|ALL]` (ALL unless given): a timeout that is not an integer is
//!   `ERR timeout is not an integer or out of range`, a negative one `ERR timeout is
//!   negative`, another mode `ERR CLIENT PAUSE mode must be WRITE or ALL`.
//! - A held command has passed the checks that answer at once (unknown command, NOAUTH, the
//!   wrong number of arguments): it then waits, unanswered, until the pause is over, and runs.
//! - ALL holds every command (CLIENT UNPAUSE included: only the time ends such a pause);
//!   WRITE holds the commands that write and those Redis marks `may-replicate` (PUBLISH,
//!   SPUBLISH, PFCOUNT, and EVAL, EVALSHA, FCALL unless their script or function declares
//!   `no-writes`), and an EXEC whose queue holds one of these. Inside MULTI a command is
//!   looked at before it is queued, as Redis does; commands an EXEC or a script runs are not
//!   looked at one by one (a pause given inside a transaction starts after it).

use super::args::{int_arg, is};
use super::{CmdResult, Command};
use crate::pause::{PauseMode, NO_END};
use crate::resp::Out;
use crate::state::{Conn, Shared};
use std::time::{Duration, Instant};

/// CLIENT PAUSE <ms> [WRITE|ALL] (`a` from CLIENT on; 3 or 4 arguments).
pub fn pause(sh: &Shared, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let mode = match a.get(3) {
        None => PauseMode::All,
        Some(m) if is(m, "write") => PauseMode::Write,
        Some(m) if is(m, "all") => PauseMode::All,
        Some(_) => return Err("ERR CLIENT PAUSE mode must be WRITE or ALL".into()),
    };
    let ms = int_arg(&a[2]).map_err(|_| "ERR timeout is not an integer or out of range")?;
    if ms < 0 {
        return Err("ERR timeout is negative".into());
    }
    let now = Instant::now();
    // Far enough for any client; an `Instant` cannot hold i64::MAX milliseconds from now.
    let end = now.checked_add(Duration::from_millis(ms as u64)).unwrap_or(now + NO_END);
    sh.pause.pause(end, mode);
    out.ok();
    Ok(())
}

/// CLIENT UNPAUSE.
pub fn unpause(sh: &Shared, out: &mut Out) -> CmdResult {
    sh.pause.unpause();
    out.ok();
    Ok(())
}

/// Whether the pause in force holds `args` (its command `found`) sent by `conn` now.
pub fn holds(sh: &Shared, conn: &Conn, found: Option<&'static Command>, args: &[Vec<u8>]) -> bool {
    let Some((_, mode)) = sh.pause.current() else { return false };
    let Some(cmd) = found else { return false };
    // What is answered at once is answered (`commands::dispatch_found`'s first checks).
    if super::arity_error(cmd, args).is_some()
        || (!conn.authed && !super::runs_unauthenticated(cmd.name))
    {
        return false;
    }
    match mode {
        PauseMode::All => true,
        PauseMode::Write if cmd.name == "exec" => conn.multi.as_ref().is_some_and(|m| {
            m.queued
                .iter()
                .any(|q| q.first().is_some_and(|n| may_replicate(sh, super::find(sh, n), q)))
        }),
        PauseMode::Write => may_replicate(sh, Some(cmd), args),
    }
}

/// Whether running `args` (its command `found`) may write or reach replicas: Redis's
/// `CMD_WRITE | CMD_MAY_REPLICATE`, a script's by its `no-writes` flag. The write flag is
/// Redis's (COMMAND's, a container's by its subcommand: FUNCTION LOAD writes, FUNCTION LIST
/// does not), not the command table's `write`, which also marks what must run off the async
/// workers (EVAL_RO, FCALL_RO).
fn may_replicate(sh: &Shared, found: Option<&'static Command>, args: &[Vec<u8>]) -> bool {
    let Some(cmd) = found else { return false };
    match cmd.name {
        name if super::flags::may_replicate(name) => true,
        "eval" | "evalsha" | "fcall" => !super::scripting::declares_no_writes(sh, cmd.name, args),
        name => match super::subcommands::subcommand_of(cmd, args) {
            Some((_, entry)) => super::subcommands::words(entry.2).any(|f| f == "write"),
            None => super::flags::has(name, "write"),
        },
    }
}
