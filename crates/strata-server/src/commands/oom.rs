//! `maxmemory` as this server keeps it: a limit on what it counts in memory (INFO's
//! `used_memory`, `memory::Figures::used`) and Redis 7.0's out-of-memory refusals.
//!
//! The data live on disk, so the memory they cost here is the caches' and the memtables':
//! the block cache holds copies of table blocks, the memtables the writes not yet in table
//! files. When the figures pass the limit, the server first gives back what it can without
//! losing anything: the block cache's capacity comes down so that everything counted fits
//! (and goes back up, to its configured size at most, as room comes back), and memtables
//! that hold 1 MiB, or what the server is over by, are flushed (at most once a second). No key is evicted under any
//! `maxmemory-policy`: deleting a key here writes a tombstone and frees no memory, so
//! Redis's evictions would destroy data without making room.
//!
//! What is still over the limit after that (the connections' buffers, the scripts, the
//! memtables being written, what the server held at start) is the out-of-memory state, in
//! which [`refusal`] refuses what Redis 7.0 refuses: a command flagged `denyoom`, any command
//! queued in MULTI but EXEC, DISCARD, QUIT and RESET (the transaction is then doomed), an EXEC
//! with a `denyoom` command queued, a script or function that declares flags without
//! `allow-oom` or `no-writes`. A script without flags starts, and is refused its first
//! `denyoom` call if the state held when it started and it has not written yet
//! (`scripting::ScriptHost`). Commands an EXEC or a script runs are not checked one by one.
//!
//! The state is taken when CONFIG SET changes `maxmemory` and at each clients' round (ten
//! times a second, `server::tasks`), where Redis takes it before each command: a burst of
//! writes may pass the limit by what it writes in a tenth of a second.

use std::sync::atomic::Ordering;

use super::{find, Command};
use crate::state::{Conn, Shared};

/// Redis's reply to a command refused in the out-of-memory state.
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// Memtables holding this much are flushed when the server is over its limit; smaller ones
/// only when flushing them brings it under (else they would free little and make small
/// table files).
const FLUSH_AT_LEAST: u64 = 1 << 20;

/// Takes the out-of-memory state against `maxmemory` (module doc), `used` being what is
/// counted now (`memory::Figures::used`), after giving back what the caches and memtables can.
pub fn enforce(sh: &Shared, used: u64) {
    let limit = sh.maxmemory.load(Ordering::Relaxed);
    let cache = sh.engine().block_cache.as_ref();
    if limit == 0 {
        if let Some((c, configured)) = cache {
            if c.capacity() != *configured {
                c.set_capacity(*configured);
            }
        }
        sh.out_of_memory.store(false, Ordering::Relaxed);
        return;
    }
    let mut counted = used;
    if let Some((c, configured)) = cache {
        let held = c.usage() as u64;
        let others = used.saturating_sub(held);
        if let Some(capacity) = cache_capacity(limit, others, *configured, c.capacity()) {
            c.set_capacity(capacity);
        }
        counted = others + (c.usage() as u64).min(held);
    }
    let over = counted > limit;
    if over
        && super::info::prop(sh, "strata.cur-size-active-mem-table")
            >= FLUSH_AT_LEAST.min(counted - limit)
        && flush_due()
    {
        if let Err(e) = sh.dbs.flush_behind() {
            eprintln!("maxmemory: flushing the memtables failed: {e}");
        }
    }
    sh.out_of_memory.store(over, Ordering::Relaxed);
}

/// Whether a memtable flush may be asked for now: at most one a second (a limit the server
/// stays over would otherwise cut a small table file every round).
fn flush_due() -> bool {
    static LAST: std::sync::Mutex<Option<std::time::Instant>> = std::sync::Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let due = last.is_none_or(|t| t.elapsed() >= std::time::Duration::from_secs(1));
    if due {
        *last = Some(std::time::Instant::now());
    }
    due
}

/// The block cache's new capacity, if it changes: what the limit leaves beside the rest of
/// what is counted (`others`), at most the configured capacity. It comes down at once and
/// goes up by a sixteenth of its size at least (the rest moves with every connection's
/// buffers), or to the configured capacity when that fits.
fn cache_capacity(limit: u64, others: u64, configured: usize, now: usize) -> Option<usize> {
    let room = usize::try_from(limit.saturating_sub(others)).unwrap_or(usize::MAX);
    let want = room.min(configured);
    let grows_enough = want >= now.saturating_add(now / 16) || want == configured;
    (want < now || (want > now && grows_enough)).then_some(want)
}

/// Whether `cmd` (with arguments `args`) is refused with [`OOM`] in the out-of-memory state
/// (module doc); the caller checks the state first. A refused EXEC ends its transaction
/// (`commands::reject`).
pub fn refused(sh: &Shared, conn: &Conn, cmd: &'static Command, args: &[Vec<u8>]) -> bool {
    match &conn.multi {
        Some(m) if cmd.name == "exec" => {
            m.queued.iter().any(|q| find(sh, &q[0]).is_some_and(|c| denies_oom(sh, c, q)))
        }
        Some(_) => !matches!(cmd.name, "discard" | "quit" | "reset"),
        None => denies_oom(sh, cmd, args),
    }
}

/// Whether `cmd` with `args` is refused in the out-of-memory state: flagged `denyoom` (its
/// subcommand, for a container), or a script or function whose flags do not allow it.
fn denies_oom(sh: &Shared, cmd: &'static Command, args: &[Vec<u8>]) -> bool {
    super::flags::line_has(cmd, args, "denyoom")
        || super::scripting::declares_denyoom(sh, cmd, args)
}

#[cfg(test)]
mod tests {
    use super::cache_capacity;

    const MIB: usize = 1 << 20;

    #[test]
    fn the_cache_comes_down_to_fit_at_once_and_goes_up_by_a_sixteenth() {
        let mib = MIB as u64;
        // No room beside the rest: nothing cached.
        assert_eq!(cache_capacity(10 * mib, 12 * mib, 64 * MIB, 64 * MIB), Some(0));
        // Room for 30 MiB: down to it at once.
        assert_eq!(cache_capacity(40 * mib, 10 * mib, 64 * MIB, 64 * MIB), Some(30 * MIB));
        // A little more room: the capacity stays.
        assert_eq!(cache_capacity(41 * mib, 10 * mib, 64 * MIB, 30 * MIB), None);
        // A sixteenth more or above: up.
        assert_eq!(cache_capacity(42 * mib, 10 * mib, 64 * MIB, 30 * MIB), Some(32 * MIB));
        // Never above the configured capacity; back to it when it fits.
        assert_eq!(cache_capacity(1 << 40, 10 * mib, 64 * MIB, 63 * MIB), Some(64 * MIB));
        assert_eq!(cache_capacity(1 << 40, 10 * mib, 64 * MIB, 64 * MIB), None);
        // A limit below what the rest holds leaves nothing, without wrapping.
        assert_eq!(cache_capacity(1, u64::MAX, 64 * MIB, 0), None);
    }
}
