//! Write stalls: the flow control a write group's leader applies before it takes sequence
//! numbers ([`make_room_for_write`], holding the WAL lock).
//!
//! Contract, looked at again after every wait, switch or pause:
//! - **Stop**: while a family has `level0_stop_writes_trigger` L0 files, pending compaction
//!   bytes at the hard limit, or every memtable full (`max_write_buffer_number`), every write
//!   waits (the families share the WAL and the sequence), in waits of at most 100 ms, for a
//!   flush or compaction to change that, or for shutdown.
//! - **Write buffer manager**: when its memtables hold the whole shared budget and some of it
//!   is on its way out, writes wait for it (once no family must switch first); when it asks
//!   for a flush, a write group switches this DB's largest mutable memtable (at most once).
//! - **Full memtable**: the family's memtable is switched (`switch.rs`).
//! - **Slowdown**: once a family reaches `level0_slowdown_writes_trigger` L0 files or pending
//!   bytes reach the soft limit, writes are paced at a rate that starts at
//!   `delayed_write_rate` and follows the debt (`rate.rs`).
//!
//! Every stall is counted (once per write group and kind) and timed; the info LOG says when
//! writes stop and resume, and when they are slowed down and no longer. Nothing is formatted
//! unless a family stalls or is full. A look that finds writes free to go is remembered with
//! the numbers of what it read; until one of them moves (a family's super version or live
//! options, the set of families) or a memtable fills, a write pays a few loads per family
//! instead of the look ([`still_unstalled`]).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::rate::Debt;
use super::switch::switch_memtable;
use crate::db::{Cfd, DbInner, DbState, WalState};
use crate::error::{Error, Result};
use crate::memtable::WriteBufferManager;
use crate::options::Options;
use crate::stats::Stall;

/// A family whose writes must stop: why, and its L0 files and pending compaction bytes.
struct Stop {
    kind: Stall,
    cfd: Arc<Cfd>,
    l0: usize,
    pending: u64,
    /// The family's super version number, read before the stop was judged: every change that
    /// can end a stop (a flush, a compaction, an ingestion, a switch) installs a new one under
    /// the state lock, so a waiter that sees it changed knows its judgement is stale.
    sv_number: u64,
}

/// A family whose writes are slowed down: its L0 files and pending compaction bytes.
struct Slow {
    cfd: Arc<Cfd>,
    l0: usize,
    pending: u64,
}

/// What the last look at a family found writes free to go with (`WalState::unstalled`):
/// the numbers of its super version and live options read before they were, and its write
/// buffer size.
pub(crate) struct Unstalled {
    id: crate::ColumnFamilyId,
    sv_number: u64,
    live_changes: u64,
    write_buffer_size: usize,
    /// A memtable whose blob file of values written at commit holds this many bytes is full.
    blob_file_size: u64,
}

/// Whether writes are still free to go as the last look found them (no stall, no full
/// memtable), with nothing that decides a stall changed since: the same families, none with
/// a new super version (L0 files, pending compaction bytes) or new live options, and no
/// memtable full. A few loads per family, where the look itself takes two locks and two
/// reference counts per family: it runs once per write under the WAL lock, and writers on
/// other cores take turns with those cache lines.
fn still_unstalled(wal: &WalState) -> bool {
    let Some(seen) = &wal.unstalled else { return false };
    let mut seen = seen.iter();
    for f in wal.mems.iter() {
        let Some(u) = seen.next() else { return false };
        if u.id != f.cfd.id
            || f.cfd.local_svs.current() != u.sv_number
            || f.cfd.live_changes() != u.live_changes
            || f.mem.approximate_memory_usage() >= u.write_buffer_size
            || crate::db::blob_log::log_full(&f.mem, u.blob_file_size)
        {
            return false;
        }
    }
    seen.next().is_none()
}

/// The worst stall state over the families ([`worst_state`]).
struct Worst {
    /// The first family that stops writes.
    stop: Option<Stop>,
    /// The first family not stopped that slows them down.
    slow: Option<Slow>,
    /// The first family not stopped whose active memtable is full.
    full: Option<Arc<Cfd>>,
    /// What each family's look read, for [`still_unstalled`].
    seen: Vec<Unstalled>,
}

/// Ensures the active memtable has room and applies write flow control (module doc), in
/// named steps, each of which may send the loop round again: the write buffer manager's
/// switch, the worst state over the families, the LOG line of a stop's change, the wait on
/// the budget, the wait in a stop, the switch of a full memtable, and the slowdown's pace.
pub(super) fn make_room_for_write(
    inner: &DbInner,
    wal: &mut WalState,
    batch_bytes: usize,
    no_slowdown: bool,
) -> Result<()> {
    let o = &inner.opts;
    let mut delayed = false;
    // This writer waited in a stop: a slowdown right after it paces slower (`rate.rs`).
    let mut was_stopped = false;
    let mut counted: Option<Stall> = None;
    let wbm = o.write_buffer_manager.as_deref();
    let mut budget_switched = false;
    loop {
        if let Some(e) = inner.bg_error() {
            return Err(e);
        }
        if wbm.is_none() && still_unstalled(wal) {
            return Ok(());
        }
        wal.unstalled = None;
        if !budget_switched
            && wbm.is_some_and(WriteBufferManager::should_flush)
            && switch_for_budget(inner, wal, &mut budget_switched, &mut counted, no_slowdown)?
        {
            continue;
        }
        let Worst { stop, slow, full, seen } = worst_state(inner, wal);
        // The shared memtable budget stops writes too, once no family must switch first.
        let budget = wbm.filter(|m| stop.is_none() && full.is_none() && budget_stall_applies(m));
        note_stop(inner, stop.as_ref(), budget);
        if let Some(m) = budget {
            if no_slowdown {
                return Err(no_slowdown_refused("the write buffer manager's budget is full"));
            }
            // Only flushes free the budget: the immutable memtables waiting to be merged
            // into one flush go now.
            {
                let mut st = inner.state.lock();
                st.cfs.values_mut().for_each(|c| c.request_flush());
            }
            inner.bg_cv.notify_all();
            wait_for_budget(inner, m, &mut counted)?;
            continue;
        }
        if let Some(stop) = stop {
            if no_slowdown {
                return Err(no_slowdown_refused("writes are stopped"));
            }
            was_stopped = true;
            wait_out_stop(inner, &stop, &mut counted)?;
            continue;
        }
        if let Some(cfd) = full {
            switch_memtable(inner, wal, &cfd)?;
            super::wal_limit::flush_for_wal_limit(inner, wal)?;
            continue;
        }
        let rate = match &slow {
            Some(s) if !delayed => Some(slowdown_rate(inner, s, was_stopped)),
            _ => None,
        };
        note_slowdown_change(inner, slow.as_ref(), rate);
        let slowed = slow.is_some();
        if let (Some(slow), Some(rate)) = (slow, rate) {
            if no_slowdown {
                return Err(no_slowdown_refused("writes are slowed down"));
            }
            delayed = true;
            pace_slowdown(inner, wal, &slow, rate, batch_bytes);
            continue;
        }
        if !slowed {
            wal.unstalled = Some(seen);
        }
        return Ok(());
    }
}

/// Step: the write buffer manager asks for a flush. Switches this DB's largest mutable
/// memtable, at most once per write group (`memtable/write_buffer_manager.rs`); when every
/// memtable slot of that family is taken, waits once for its flush instead, as for a full
/// memtable (the budget then bounds it, not `write_buffer_size`). Returns whether it switched
/// or waited (the caller looks again); `switched` is set once this group switched or found
/// nothing to switch.
fn switch_for_budget(
    inner: &DbInner,
    wal: &mut WalState,
    switched: &mut bool,
    counted: &mut Option<Stall>,
    no_slowdown: bool,
) -> Result<bool> {
    match largest_mutable(inner, wal) {
        Some((cfd, true, _)) => {
            *switched = true;
            switch_memtable(inner, wal, &cfd)?;
            super::wal_limit::flush_for_wal_limit(inner, wal)?;
            // The budget needs the memory back: no waiting for more memtables to merge.
            crate::db::flush::request_flush(inner, &cfd);
            Ok(true)
        }
        Some((cfd, false, sv_number)) => {
            if no_slowdown {
                return Err(no_slowdown_refused("every memtable slot is taken"));
            }
            wait_for_flush(inner, &cfd, sv_number, counted)?;
            Ok(true)
        }
        None => {
            *switched = true;
            Ok(false)
        }
    }
}

/// The refusal of a write that asked `WriteOptions::no_slowdown` and met a stall of kind
/// `what`: it fails rather than wait, as RocksDB's.
fn no_slowdown_refused(what: &str) -> Error {
    Error::Incomplete(format!("write stall ({what}) and the write asked no_slowdown"))
}

/// Step: the worst state over the families. A stop in any stops every write (they share the
/// WAL and the sequence), as does a slowdown. A family's stop is, in this order, its L0 files
/// at the stop trigger, its pending compaction bytes at the hard limit (both only with
/// automatic compactions), or a full memtable with every memtable slot taken.
fn worst_state(inner: &DbInner, wal: &WalState) -> Worst {
    let mut stop: Option<Stop> = None;
    let mut slow: Option<Slow> = None;
    let mut full: Option<Arc<Cfd>> = None;
    let mut seen = Vec::new();
    for f in wal.mems.iter() {
        // The numbers first: a change after them is seen by the next write.
        let (sv_number, live_changes) = (f.cfd.local_svs.current(), f.cfd.live_changes());
        let co = f.cfd.live_opts();
        seen.push(Unstalled {
            id: f.cfd.id,
            sv_number,
            live_changes,
            write_buffer_size: co.write_buffer_size,
            blob_file_size: co.blob.blob_file_size,
        });
        let auto = !co.disable_auto_compactions;
        let sv = f.cfd.current_super_version();
        let l0 = sv.stall_count;
        let pending = sv.pending_compaction_bytes;
        let kind = if auto && l0 >= co.level0_stop_writes_trigger {
            Some(Stall::Level0NumFiles)
        } else if auto && co.pending_bytes_stop(pending) {
            Some(Stall::StopPendingCompactionBytes)
        } else {
            None
        };
        let mem_full = f.mem.approximate_memory_usage() >= co.write_buffer_size
            || crate::db::blob_log::log_full(&f.mem, co.blob.blob_file_size);
        let kind = kind.or_else(|| {
            (mem_full
                && inner.state.lock().cfs.get(&f.cfd.id).map_or(0, |c| c.imm.len()) + 1
                    >= co.max_write_buffer_number)
                .then_some(Stall::MemtableStop)
        });
        if let Some(kind) = kind {
            let sv_number = sv.number;
            stop.get_or_insert_with(|| Stop { kind, cfd: f.cfd.clone(), l0, pending, sv_number });
            continue;
        }
        if mem_full && full.is_none() {
            full = Some(f.cfd.clone());
        }
        if auto
            && slow.is_none()
            && (l0 >= co.level0_slowdown_writes_trigger || co.pending_bytes_slowdown(pending))
        {
            slow = Some(Slow { cfd: f.cfd.clone(), l0, pending });
        }
    }
    Worst { stop, slow, full, seen }
}

/// Step: publishes whether writes are stopped (`rocksdb.is-write-stopped`), by a family or by
/// the write buffer manager's `budget`, and logs the stop's start or end
/// ([`note_stall_change`]).
fn note_stop(inner: &DbInner, stop: Option<&Stop>, budget: Option<&WriteBufferManager>) {
    inner.write_stopped.store(stop.is_some() || budget.is_some(), Ordering::Relaxed);
    note_stall_change(
        inner,
        match (stop, budget) {
            (Some(s), _) => Some((s.cfd.name.clone(), describe_stop(s.kind, s.l0, s.pending))),
            (None, Some(m)) => Some((
                inner.default_cf.name.clone(),
                format!(
                    "the write buffer manager's memtables hold {} bytes of its {} byte budget",
                    m.memory_usage(),
                    m.buffer_size()
                ),
            )),
            (None, None) => None,
        },
    );
}

/// Step: one wait (at most 100 ms) of a write stopped by a family, for a flush or compaction
/// to end the stop, counted as a stall of its kind (an L0 stop while compactions run is a
/// kind of its own). Shutdown ends the wait with an error. No wait when the family changed
/// since the stop was judged (a flush that ended between the judgement and this lock has
/// already sent its wake-up).
fn wait_out_stop(inner: &DbInner, stop: &Stop, counted: &mut Option<Stall>) -> Result<()> {
    let started = Instant::now();
    let mut st = inner.state.lock();
    if st.shutting_down {
        return Err(Error::ShutdownInProgress);
    }
    let kind = if stop.kind == Stall::Level0NumFiles && st.running_compactions > 0 {
        Stall::Level0NumFilesWithCompaction
    } else {
        stop.kind
    };
    wait_unless_changed(inner, &mut st, &stop.cfd, stop.sv_number);
    count_stall(inner, counted, kind, started);
    Ok(())
}

/// Step: the pace of this write group's slowdown, from the slowed family's debt now
/// (`rate.rs`); `was_stopped`: the writer waited in a stop first.
fn slowdown_rate(inner: &DbInner, slow: &Slow, was_stopped: bool) -> u64 {
    let debt = Debt { pending_bytes: slow.pending, l0_files: slow.l0 };
    let near = near_stop(&slow.cfd.opts, slow.l0, slow.pending);
    inner.delayed_rate.lock().slowed(debt, near, was_stopped)
}

/// Step: publishes whether writes are slowed down (`rocksdb.actual-delayed-write-rate`) and,
/// when that changed, logs it: the family, its state and the `rate` when a slowdown starts,
/// its duration when it ends (and the rate then recovers part of the way, `rate.rs`).
fn note_slowdown_change(inner: &DbInner, slow: Option<&Slow>, rate: Option<u64>) {
    let slowed = slow.is_some();
    if inner.write_delayed.load(Ordering::Relaxed) != slowed
        && inner.write_delayed.swap(slowed, Ordering::Relaxed) != slowed
    {
        let now = crate::db::info_log::now_micros();
        inner.info_log.log(&match slow {
            Some(Slow { cfd, l0, pending }) => {
                inner.slowdown_started_micros.store(now, Ordering::Relaxed);
                cfd.name.clone_into(&mut inner.stall_families.lock().1);
                let co = &cfd.opts;
                format!(
                    "[{}] Slowing writes to {} bytes/s: {l0} L0 files (slowdown trigger {}), \
                     {pending} pending compaction bytes (soft limit {})",
                    cfd.name,
                    rate.unwrap_or_else(|| inner.delayed_rate.lock().rate()),
                    co.level0_slowdown_writes_trigger,
                    co.soft_pending_compaction_bytes_limit
                )
            }
            None => {
                inner.delayed_rate.lock().not_slowed();
                let started = inner.slowdown_started_micros.load(Ordering::Relaxed);
                format!(
                    "[{}] Writes no longer slowed down, after {:.1} ms",
                    inner.stall_families.lock().1,
                    now.saturating_sub(started) as f64 / 1000.0
                )
            }
        });
    }
}

/// Step: paces a slowed write group of `batch_bytes` at `rate` bytes per second. The pause
/// owed accumulates in the WAL state and is slept once it reaches a millisecond, counted as a
/// stall of the slowdown's kind (L0 files, with or without compactions running, or pending
/// compaction bytes).
fn pace_slowdown(inner: &DbInner, wal: &mut WalState, slow: &Slow, rate: u64, batch_bytes: usize) {
    wal.delay_debt_micros += batch_bytes as f64 * 1e6 / rate as f64;
    if wal.delay_debt_micros >= 1000.0 {
        let micros = wal.delay_debt_micros as u64;
        wal.delay_debt_micros = 0.0;
        std::thread::sleep(Duration::from_micros(micros));
        let running = inner.state.lock().running_compactions > 0;
        let kind = if slow.l0 < slow.cfd.live_opts().level0_slowdown_writes_trigger {
            Stall::SlowdownPendingCompactionBytes
        } else if running {
            Stall::Level0SlowdownWithCompaction
        } else {
            Stall::Level0Slowdown
        };
        inner.stats.record_stall(kind, micros);
    }
}

/// Whether a slowed family is close to a stop (`rate.rs`): L0 within two files of
/// the stop trigger, or pending compaction bytes past three quarters of the way from the soft
/// limit to the hard one.
fn near_stop(co: &Options, l0: usize, pending: u64) -> bool {
    let (soft, hard) =
        (co.soft_pending_compaction_bytes_limit, co.hard_pending_compaction_bytes_limit);
    l0 + 2 >= co.level0_stop_writes_trigger
        || (soft > 0 && hard > soft && pending > soft + (hard - soft) / 4 * 3)
}

/// Whether writes must wait for the write buffer manager: it allows stalls, its memtables
/// hold the whole budget, and some of that memory is on its way out (immutable memtables).
/// With every byte in mutable memtables that no write of this DB could switch, nothing this
/// writer waits for would free memory: it goes on (the flush rule switches memtables as
/// writes come).
fn budget_stall_applies(m: &WriteBufferManager) -> bool {
    m.should_stall() && m.memory_usage() > m.mutable_memtable_memory_usage()
}

/// One wait (at most 100 ms) of a write stopped by the write buffer manager, counted as a
/// stall of its own kind.
fn wait_for_budget(
    inner: &DbInner,
    m: &WriteBufferManager,
    counted: &mut Option<Stall>,
) -> Result<()> {
    if inner.state.lock().shutting_down {
        return Err(Error::ShutdownInProgress);
    }
    let started = Instant::now();
    m.wait_for_room(Duration::from_millis(100));
    count_stall(inner, counted, Stall::WriteBufferManager, started);
    Ok(())
}

/// Counts a wait of kind `kind` begun at `started`: a new stall when the write's previous
/// wait (`counted`) was of another kind (or none), else more time of the same stall.
fn count_stall(inner: &DbInner, counted: &mut Option<Stall>, kind: Stall, started: Instant) {
    let micros = started.elapsed().as_micros() as u64;
    if *counted == Some(kind) {
        inner.stats.add_stall_micros(micros);
    } else {
        *counted = Some(kind);
        inner.stats.record_stall(kind, micros);
    }
}

/// This DB's family with the largest non-empty mutable memtable, whether it may be switched
/// now (a free memtable slot: fewer than `max_write_buffer_number - 1` immutable ones), and
/// its super version number read before the slots were counted (see [`Stop::sv_number`]).
fn largest_mutable(inner: &DbInner, wal: &WalState) -> Option<(Arc<Cfd>, bool, u64)> {
    let f = wal
        .mems
        .iter()
        .filter(|f| !f.mem.is_empty())
        .max_by_key(|f| f.mem.approximate_memory_usage())?;
    let sv_number = f.cfd.current_super_version().number;
    let imm = inner.state.lock().cfs.get(&f.cfd.id).map_or(0, |c| c.imm.len());
    Some((f.cfd.clone(), imm + 1 < f.cfd.live_opts().max_write_buffer_number, sv_number))
}

/// One wait (at most 100 ms) for a flush of `cfd` to free a memtable slot, counted as a
/// memtable stop; none when `cfd` changed since its slots were counted (`sv_number`).
fn wait_for_flush(
    inner: &DbInner,
    cfd: &Cfd,
    sv_number: u64,
    counted: &mut Option<Stall>,
) -> Result<()> {
    let started = Instant::now();
    let mut st = inner.state.lock();
    if st.shutting_down {
        return Err(Error::ShutdownInProgress);
    }
    wait_unless_changed(inner, &mut st, cfd, sv_number);
    count_stall(inner, counted, Stall::MemtableStop, started);
    Ok(())
}

/// One wait of a stalled writer, at most 100 ms, for a flush or compaction to change `cfd`;
/// none when it changed since `sv_number` was read (before the stall was judged: every change
/// that can end a stall installs a new super version under the state lock `st` holds, and
/// its wake-up may already have gone out) or a background error was set.
fn wait_unless_changed(
    inner: &DbInner,
    st: &mut parking_lot::MutexGuard<'_, DbState>,
    cfd: &Cfd,
    sv_number: u64,
) {
    if st.bg_error.is_none() && cfd.current_super_version().number == sv_number {
        inner.bg_cv.wait_for(st, Duration::from_millis(100));
    }
}

/// Why writes stop, for the info LOG.
fn describe_stop(kind: Stall, l0: usize, pending: u64) -> String {
    match kind {
        Stall::MemtableStop => "every memtable is full, waiting for a flush".to_string(),
        Stall::StopPendingCompactionBytes => {
            format!("{pending} pending compaction bytes reach the hard limit")
        }
        _ => format!("{l0} L0 files reach the stop trigger"),
    }
}

/// Logs the start of a write stop (with the family and cause) and, when writes flow again,
/// its duration.
fn note_stall_change(inner: &DbInner, cause: Option<(String, String)>) {
    let now = crate::db::info_log::now_micros();
    match cause {
        Some((name, cause)) => {
            if inner
                .stall_started_micros
                .compare_exchange(0, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                inner.info_log.log(&format!("[{name}] Stopping writes: {cause}"));
                inner.stall_families.lock().0 = name;
            }
        }
        // One load per write group in the common case (no stall).
        None if inner.stall_started_micros.load(Ordering::Relaxed) == 0 => {}
        None => {
            let started = inner.stall_started_micros.swap(0, Ordering::Relaxed);
            if started != 0 {
                inner.info_log.log(&format!(
                    "[{}] Writes resume after a stop of {:.1} ms",
                    inner.stall_families.lock().0,
                    now.saturating_sub(started) as f64 / 1000.0
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Db, Options};

    fn stop_of(db: &Db, sv_number: u64) -> Stop {
        let cfd = db.inner.default_cf.clone();
        Stop { kind: Stall::MemtableStop, cfd, l0: 0, pending: 0, sv_number }
    }

    /// A stop judged before its family changed (a flush ended between the judgement and the
    /// wait, and its wake-up went out before the writer waited) is not waited out: the
    /// writer looks again at once instead of sleeping the whole poll interval.
    #[test]
    fn a_stop_judged_before_the_family_changed_is_not_waited_out() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&Options::default(), dir.path()).unwrap();
        let now = db.inner.default_cf.current_super_version().number;
        let mut counted = None;

        let started = Instant::now();
        wait_out_stop(&db.inner, &stop_of(&db, now.wrapping_sub(1)), &mut counted).unwrap();
        assert!(started.elapsed() < Duration::from_millis(100), "a stale stop was waited out");

        let started = Instant::now();
        wait_for_flush(&db.inner, &db.inner.default_cf, now.wrapping_sub(1), &mut counted).unwrap();
        assert!(started.elapsed() < Duration::from_millis(100), "a stale count was waited out");
    }
}
