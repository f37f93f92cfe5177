//! The write path: queue, group commit, WAL, memtable, publish.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{DbInner, PendingWrite, WalState};
use crate::error::{Error, Result};
use crate::filename::wal_path;
use crate::memtable::MemTable;
use crate::options::WriteOptions;
use crate::stats::{Stall, Ticker};
use crate::types::{FileNumber, SeqNo};
use crate::wal::{encode_wal_event, encode_wal_header, LogWriter, WalEvent};
use crate::write_batch::WriteBatch;

/// A write group never grows past this many bytes.
const MAX_GROUP_BYTES: usize = 1 << 20;
/// A small leader only takes this many extra bytes, so its own latency stays low.
const SMALL_LEADER_EXTRA: usize = 128 << 10;
/// Synced groups whose fdatasync may be in flight at once. A second one is started only by
/// a writer alone in the queue: then two writers no longer take turns with the device, while
/// with more writers waiting one larger group's sync costs less than two overlapping ones
/// (measured: overlapping syncs of small groups lost up to a third of the throughput at 8 to
/// 32 writers).
const MAX_SYNCS_IN_FLIGHT: u64 = 2;

pub(crate) fn write(inner: &DbInner, batch: WriteBatch, opts: WriteOptions) -> Result<()> {
    if opts.sync && opts.disable_wal {
        return Err(Error::InvalidArgument("sync writes need the WAL (disable_wal is set)".into()));
    }
    batch.validate()?;
    if batch.has_merge() && inner.opts.merge_operator.is_none() {
        // Refused at the call (as RocksDB does): stored, the operand would leave the key
        // unreadable until the DB is reopened with an operator.
        return Err(Error::NotSupported(
            "merge needs a merge operator: set Options::merge_operator".into(),
        ));
    }
    if let Some(e) = inner.bg_error() {
        return Err(e);
    }
    if batch.is_empty() {
        return Ok(());
    }
    let mut q = inner.queue.lock();
    let ticket = q.next_ticket;
    q.next_ticket += 1;
    q.pending.push_back(PendingWrite {
        ticket,
        batch,
        sync: opts.sync,
        disable_wal: opts.disable_wal,
    });
    loop {
        if let Some(r) = q.done.remove(&ticket) {
            return r;
        }
        // A synced writer leads when no sync is in flight, or when it is alone and a second
        // may start; otherwise it waits, more writers queue behind it, and its group takes
        // them all.
        let in_flight = inner.syncs_in_flight.load(Ordering::Acquire);
        if !q.leader_active
            && q.pending.front().is_some_and(|p| p.ticket == ticket)
            && (!opts.sync
                || in_flight == 0
                || (in_flight < MAX_SYNCS_IN_FLIGHT && q.pending.len() == 1))
        {
            break;
        }
        inner.queue_cv.wait(&mut q);
    }
    q.leader_active = true;
    let Some(mut leader) = q.pending.pop_front() else {
        q.leader_active = false;
        return Err(Error::Background("write queue lost the leader's batch".into()));
    };
    let mut size = leader.batch.size_in_bytes();
    let limit =
        if size <= SMALL_LEADER_EXTRA { size + SMALL_LEADER_EXTRA } else { MAX_GROUP_BYTES };
    let mut followers = Vec::new();
    while let Some(p) = q.pending.front() {
        if p.disable_wal != leader.disable_wal || size + p.batch.size_in_bytes() > limit {
            break;
        }
        size += p.batch.size_in_bytes();
        if let Some(p) = q.pending.pop_front() {
            followers.push(p);
        }
    }
    // Alone: no follower taken and nobody queued behind.
    let alone = followers.is_empty() && q.pending.is_empty();
    drop(q);

    let sync = leader.sync || followers.iter().any(|p| p.sync);
    for p in &followers {
        leader.batch.append(&p.batch);
    }
    let writers = 1 + followers.len() as u64;
    // A synced writer that is alone hands the leadership on as soon as its bytes are in the
    // WAL: a writer arriving during its sync then starts its own instead of waiting for this
    // one (two writers no longer take turns with the device). A larger group keeps the
    // leadership through its sync, and the writers arriving meanwhile all join the next group
    // (one larger sync costs less than overlapping small ones, and each hand-over wakes every
    // waiting writer).
    let early = sync && alone;
    let staged = stage_group(inner, &mut leader.batch, sync, leader.disable_wal);
    if early {
        let mut q = inner.queue.lock();
        q.leader_active = false;
        inner.queue_cv.notify_all();
    }
    let result = staged.and_then(|st| finish_group(inner, &leader.batch, st, writers, early));

    let mut q = inner.queue.lock();
    for p in &followers {
        let r = match &result {
            Ok(()) => Ok(()),
            Err(e) => Err(e.duplicate()),
        };
        q.done.insert(p.ticket, r);
    }
    if !early {
        q.leader_active = false;
    }
    inner.queue_cv.notify_all();
    drop(q);
    result
}

/// A write group that took its sequence numbers and is in the WAL (flushed, maybe not yet
/// synced), on its way into the memtable.
pub(crate) struct StagedGroup {
    /// The group's place in the pipeline (`WritePipeline`).
    group: u64,
    mem: Arc<MemTable>,
    first: SeqNo,
    last: SeqNo,
    /// Makes the group's WAL bytes durable; `None` when no sync was asked for, or it was made.
    syncer: Option<Box<dyn crate::env::FileSyncer>>,
    sync: bool,
    disable_wal: bool,
}

/// Groups in flight between the WAL and publication. Groups take numbers in sequence order
/// (under the WAL lock) and are published in that order: `visible_sequence` never covers a
/// group before every earlier one is in the memtable.
#[derive(Default)]
pub(crate) struct WritePipeline {
    /// Groups numbered below this took their sequence numbers.
    pub assigned: u64,
    /// Groups numbered below this are finished: published, or failed.
    pub finished: u64,
}

/// Phase one, holding the WAL lock: room in the memtable, sequence numbers, the WAL record
/// (flushed), and for a synced group the syncs it must not outrun (retired WALs, the WAL
/// directory) and a handle for its own. Called by the leader only.
fn stage_group(
    inner: &DbInner,
    batch: &mut WriteBatch,
    sync: bool,
    disable_wal: bool,
) -> Result<StagedGroup> {
    let mut wal = inner.wal.lock();
    make_room_for_write(inner, &mut wal, batch.size_in_bytes())?;
    let first = wal.last_sequence.plus(1);
    batch.set_sequence(first);
    let mut syncer = None;
    if disable_wal {
        wal.mem.mark_unlogged();
    } else {
        crate::kill_point!("wal.append");
        // A synced write must not become durable before the writes of retired WALs: sync
        // them first (the caller asked for a sync; no other writer ever waits on one).
        if sync {
            sync_retired_wals(inner, None)?;
            sync_wal_dir(inner)?;
        }
        // With `manual_wal_flush` the bytes stay in the process until `Db::flush_wal` (or a
        // full buffer, or a synced write).
        let hand_over = sync || !inner.opts.manual_wal_flush;
        let logged = append_synced_event(inner, &mut wal)
            .and_then(|()| wal.writer.add_record(batch.data()))
            .and_then(|()| if hand_over { wal.writer.flush() } else { Ok(()) })
            .and_then(|()| {
                if !sync {
                    return Ok(());
                }
                match wal.writer.syncer()? {
                    Some(s) => {
                        inner.syncs_in_flight.fetch_add(1, Ordering::AcqRel);
                        syncer = Some(s);
                        Ok(())
                    }
                    None => wal.writer.sync(),
                }
            });
        if let Err(e) = logged {
            // Contract: after a failed WAL write or sync nothing more is acknowledged.
            let mut st = inner.state.lock();
            inner.set_bg_error(&mut st, &e);
            return Err(e);
        }
    }
    let last = SeqNo(first.0 + u64::from(batch.count()) - 1);
    wal.last_sequence = last;
    let group = {
        let mut p = inner.pipeline.lock();
        p.assigned += 1;
        p.assigned - 1
    };
    Ok(StagedGroup { group, mem: wal.mem.clone(), first, last, syncer, sync, disable_wal })
}

/// Phase two, without the WAL lock: the group's sync, its memtable insert, then, in group
/// order, publication. A group that fails (or follows a failure: a background error) is
/// finished without publishing, so later groups never make it visible.
fn finish_group(
    inner: &DbInner,
    batch: &WriteBatch,
    staged: StagedGroup,
    writers: u64,
    handed_on: bool,
) -> Result<()> {
    let StagedGroup { group, mem, first, last, syncer, sync, disable_wal } = staged;
    let mut result = Ok(());
    if let Some(s) = syncer {
        let synced = s.sync();
        inner.syncs_in_flight.fetch_sub(1, Ordering::AcqRel);
        if handed_on {
            // A writer may wait for this sync slot (a group that kept the leadership wakes
            // the queue when it finishes). Under the queue lock, so the wake-up is not missed.
            let _q = inner.queue.lock();
            inner.queue_cv.notify_all();
        }
        if let Err(e) = synced {
            let mut st = inner.state.lock();
            inner.set_bg_error(&mut st, &e);
            result = Err(e);
        }
    }
    if result.is_ok() {
        crate::kill_point!("wal.sync", when sync);
        result = insert_into_memtable(&mem, batch, first).and_then(|count| {
            if count == last.0 - first.0 + 1 {
                Ok(())
            } else {
                Err(Error::Background(format!(
                    "write batch inserted {count} records, its header says {}",
                    last.0 - first.0 + 1
                )))
            }
        });
        if let Err(e) = &result {
            // Part of the batch may be in the memtable: nothing more may be published.
            let mut st = inner.state.lock();
            inner.set_bg_error(&mut st, e);
        }
    }
    // This group's turn: only it advances `finished` from here, so it publishes unlocked.
    {
        let mut p = inner.pipeline.lock();
        while p.finished != group {
            inner.pipeline_cv.wait(&mut p);
        }
    }
    if result.is_ok() {
        if let Some(e) = inner.bg_error() {
            // An earlier group's sync failed: the OS may have dropped its pages, and this
            // group's sync does not vouch for them.
            result = Err(e);
        }
    }
    if result.is_ok() {
        inner.visible_sequence.store(last.0, Ordering::Release);
    }
    inner.pipeline.lock().finished += 1;
    inner.pipeline_cv.notify_all();
    result?;
    let w = &inner.stats.write;
    let bytes = batch.size_in_bytes() as u64;
    let count = last.0 - first.0 + 1;
    w.writes.fetch_add(writers, Ordering::Relaxed);
    w.keys.fetch_add(count, Ordering::Relaxed);
    w.groups.fetch_add(1, Ordering::Relaxed);
    w.ingest_bytes.fetch_add(bytes, Ordering::Relaxed);
    inner.stats.tickers.add(Ticker::KeysWritten, count);
    inner.stats.tickers.add(Ticker::BytesWritten, bytes);
    if !disable_wal {
        w.wal_writes.fetch_add(writers, Ordering::Relaxed);
        w.wal_bytes.fetch_add(bytes, Ordering::Relaxed);
        if sync {
            w.wal_syncs.fetch_add(1, Ordering::Relaxed);
        }
    }
    Ok(())
}

/// Waits until every staged group is finished (in the memtable and published, or failed).
/// A memtable switch calls it first, so that no group still inserts into the memtable it
/// makes immutable. The caller holds the WAL lock, which finishing groups never take.
pub(crate) fn drain_pipeline(inner: &DbInner) {
    let mut p = inner.pipeline.lock();
    while p.finished < p.assigned {
        inner.pipeline_cv.wait(&mut p);
    }
}

/// Appends a "synced" event when retired WALs were synced since the last one: recovery then
/// knows a retired WAL that ends early is damaged, not an unsynced tail (`db/recover.rs`).
fn append_synced_event(inner: &DbInner, wal: &mut WalState) -> Result<()> {
    let through = FileNumber(inner.wals_synced_through.load(Ordering::Acquire));
    if through > wal.synced_event_through {
        wal.writer.add_record(&encode_wal_event(WalEvent::SyncedThrough(through)))?;
        wal.synced_event_through = through;
    }
    Ok(())
}

/// Syncs the retired WALs numbered below `before` (all of them with `None`), oldest first.
/// Called by a synced write's leader (holding the WAL lock) and by the flush job before its
/// MANIFEST edit drops WALs. A failed sync is a background error: the WAL's unsynced writes
/// may be lost, so nothing more is acknowledged.
pub(crate) fn sync_retired_wals(inner: &DbInner, before: Option<FileNumber>) -> Result<()> {
    let mut retired = inner.retired_wals.lock();
    while let Some((n, _)) = retired.front() {
        if before.is_some_and(|b| *n >= b) {
            break;
        }
        crate::kill_point!("wal.sync_retired");
        let Some((n, mut writer)) = retired.pop_front() else { break };
        if let Err(e) = writer.sync() {
            drop(retired);
            let mut st = inner.state.lock();
            inner.set_bg_error(&mut st, &e);
            return Err(e);
        }
        inner.wals_synced_through.fetch_max(n.0, Ordering::AcqRel);
    }
    Ok(())
}

/// `Db::flush_wal`: hands the current WAL's buffered bytes to the OS; with `sync`, makes every
/// write so far durable, as a synced write would (older WALs and the directory first).
pub(crate) fn flush_wal(inner: &DbInner, sync: bool) -> Result<()> {
    if let Some(e) = inner.bg_error() {
        return Err(e);
    }
    let mut wal = inner.wal.lock();
    if sync {
        sync_retired_wals(inner, None)?;
        sync_wal_dir(inner)?;
    }
    let r = wal.writer.flush().and_then(|()| if sync { wal.writer.sync() } else { Ok(()) });
    if let Err(e) = &r {
        let mut st = inner.state.lock();
        inner.set_bg_error(&mut st, e);
    } else if sync {
        inner.stats.write.wal_syncs.fetch_add(1, Ordering::Relaxed);
    }
    r
}

/// Opens the writer of WAL `number` in `wal_dir`: in the file of WAL `reuse` when given (an
/// obsolete WAL written in recyclable fragments, renamed and overwritten in place), else in a
/// new file with space reserved for a memtable's worth of writes. With recycling on, the WAL
/// is written in recyclable fragments.
pub(crate) fn open_wal_writer(
    fs: &dyn crate::env::FileSystem,
    opts: &crate::options::Options,
    wal_dir: &std::path::Path,
    number: FileNumber,
    reuse: Option<FileNumber>,
) -> Result<LogWriter> {
    let path = wal_path(wal_dir, number);
    let file = match reuse {
        Some(old) => {
            crate::kill_point!("wal.reuse");
            fs.reuse_for_write(&wal_path(wal_dir, old), &path)?
        }
        None => fs.create(&path)?,
    };
    let mut writer = if opts.recycle_log_file_num > 0 {
        LogWriter::recyclable(file, number.0)
    } else {
        LogWriter::new(file)
    };
    writer.set_bytes_per_sync(opts.wal_bytes_per_sync);
    if reuse.is_none() {
        // A memtable's worth of records, with room for their framing.
        writer.preallocate(opts.write_buffer_size as u64 / 10 * 11);
    }
    Ok(writer)
}

/// Makes the directory entries of every WAL created so far durable, unless they are known to
/// be. Called by a synced write's leader and by the flush job before its MANIFEST edit. Under
/// power loss a file system keeps the entries of one directory in creation order, so WALs
/// created after the last sync are lost together with their (never synced) writes, which
/// recovery treats as a WAL that ended early; should one vanish while a later one survives,
/// the next open reports the missing WAL. A failed sync is a background error.
pub(crate) fn sync_wal_dir(inner: &DbInner) -> Result<()> {
    let newest = inner.newest_wal.load(Ordering::Acquire);
    if inner.wal_dir_synced_through.load(Ordering::Acquire) >= newest {
        return Ok(());
    }
    crate::kill_point!("wal.sync_dir");
    if let Err(e) = inner.fs.sync_dir(&inner.wal_dir) {
        let mut st = inner.state.lock();
        inner.set_bg_error(&mut st, &e);
        return Err(e);
    }
    inner.wal_dir_synced_through.fetch_max(newest, Ordering::AcqRel);
    Ok(())
}

/// Inserts every record of `batch` at consecutive sequence numbers from `first`; returns the
/// record count.
pub(crate) fn insert_into_memtable(
    mem: &MemTable,
    batch: &WriteBatch,
    first: SeqNo,
) -> Result<u64> {
    let mut seq = first;
    let mut n = 0u64;
    for rec in batch.iter() {
        mem.add(seq, rec.value_type, rec.key, rec.value);
        seq = seq.plus(1);
        n += 1;
    }
    Ok(n)
}

/// Ensures the active memtable has room and applies write flow control: stops while L0 has
/// `level0_stop_writes_trigger` files, while every memtable is full, or while the pending
/// compaction bytes exceed the hard limit; paces writes at `delayed_write_rate` once L0 reaches
/// `level0_slowdown_writes_trigger` files or pending bytes the soft limit. Every stall is
/// counted (once per write group and kind) and timed.
fn make_room_for_write(inner: &DbInner, wal: &mut WalState, batch_bytes: usize) -> Result<()> {
    let o = &inner.opts;
    let auto = !o.disable_auto_compactions;
    let mut delayed = false;
    let mut counted: Option<Stall> = None;
    loop {
        if let Some(e) = inner.bg_error() {
            return Err(e);
        }
        let sv = inner.current_super_version();
        let l0 = sv.version.num_files(0);
        let stop = if auto && l0 >= o.level0_stop_writes_trigger {
            Some(Stall::Level0NumFiles)
        } else if auto && o.pending_bytes_stop(sv.pending_compaction_bytes) {
            Some(Stall::StopPendingCompactionBytes)
        } else {
            None
        };
        let mem_full = wal.mem.approximate_memory_usage() >= o.write_buffer_size;
        let stop = stop.or_else(|| {
            (mem_full && inner.state.lock().imm.len() + 1 >= o.max_write_buffer_number)
                .then_some(Stall::MemtableStop)
        });
        inner.write_stopped.store(stop.is_some(), Ordering::Relaxed);
        note_stall_change(inner, stop.map(|k| describe_stop(k, l0, sv.pending_compaction_bytes)));
        if let Some(kind) = stop {
            let started = Instant::now();
            {
                let mut st = inner.state.lock();
                if st.shutting_down {
                    return Err(Error::ShutdownInProgress);
                }
                let kind = if kind == Stall::Level0NumFiles && st.running_compactions > 0 {
                    Stall::Level0NumFilesWithCompaction
                } else {
                    kind
                };
                inner.bg_cv.wait_for(&mut st, Duration::from_millis(100));
                let micros = started.elapsed().as_micros() as u64;
                if counted == Some(kind) {
                    inner.stats.add_stall_micros(micros);
                } else {
                    counted = Some(kind);
                    inner.stats.record_stall(kind, micros);
                }
            }
            continue;
        }
        if mem_full {
            switch_memtable(inner, wal)?;
            continue;
        }
        let slowed = auto
            && (l0 >= o.level0_slowdown_writes_trigger
                || o.pending_bytes_slowdown(sv.pending_compaction_bytes));
        if inner.write_delayed.load(Ordering::Relaxed) != slowed
            && inner.write_delayed.swap(slowed, Ordering::Relaxed) != slowed
        {
            inner.info_log.log(&if slowed {
                format!(
                    "[default] Slowing writes to {} bytes/s: {} L0 files (slowdown trigger {}), \
                     {} pending compaction bytes (soft limit {})",
                    o.delayed_write_rate,
                    l0,
                    o.level0_slowdown_writes_trigger,
                    sv.pending_compaction_bytes,
                    o.soft_pending_compaction_bytes_limit
                )
            } else {
                "[default] Writes no longer slowed down".to_string()
            });
        }
        let slow = slowed && !delayed;
        if slow {
            delayed = true;
            wal.delay_debt_micros += batch_bytes as f64 * 1e6 / o.delayed_write_rate as f64;
            if wal.delay_debt_micros >= 1000.0 {
                let micros = wal.delay_debt_micros as u64;
                wal.delay_debt_micros = 0.0;
                std::thread::sleep(Duration::from_micros(micros));
                let running = inner.state.lock().running_compactions > 0;
                let kind = if l0 < o.level0_slowdown_writes_trigger {
                    Stall::SlowdownPendingCompactionBytes
                } else if running {
                    Stall::Level0SlowdownWithCompaction
                } else {
                    Stall::Level0Slowdown
                };
                inner.stats.record_stall(kind, micros);
            }
            continue;
        }
        return Ok(());
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

/// Logs the start of a write stop (with its cause) and, when writes flow again, its duration.
fn note_stall_change(inner: &DbInner, cause: Option<String>) {
    let now = super::info_log::now_micros();
    match cause {
        Some(cause) => {
            if inner
                .stall_started_micros
                .compare_exchange(0, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                inner.info_log.log(&format!("[default] Stopping writes: {cause}"));
            }
        }
        // One load per write group in the common case (no stall).
        None if inner.stall_started_micros.load(Ordering::Relaxed) == 0 => {}
        None => {
            let started = inner.stall_started_micros.swap(0, Ordering::Relaxed);
            if started != 0 {
                inner.info_log.log(&format!(
                    "[default] Writes resume after a stop of {:.1} ms",
                    now.saturating_sub(started) as f64 / 1000.0
                ));
            }
        }
    }
}

/// Makes the active memtable immutable and starts a new WAL and memtable. The caller holds the
/// WAL lock (it is the leader, or `flush`).
pub(crate) fn switch_memtable(inner: &DbInner, wal: &mut WalState) -> Result<()> {
    drain_pipeline(inner);
    let number = inner.new_file_number();
    // The file taken for reuse is renamed under the list's lock (`db/obsolete.rs`).
    let created = if inner.opts.recycle_log_file_num > 0 {
        let mut recycled = inner.recycled_wals.lock();
        let reuse = recycled.files.pop_front();
        open_wal_writer(inner.fs.as_ref(), &inner.opts, &inner.wal_dir, number, reuse)
    } else {
        open_wal_writer(inner.fs.as_ref(), &inner.opts, &inner.wal_dir, number, None)
    };
    // Neither the old WAL nor the new one's directory entry is synced here (the writer that
    // switched did not ask for it): the old WAL is retired, and synced by the flush job or by
    // the next synced write first, which also syncs the directory (`sync_wal_dir`). Until
    // then a power loss may cut the old WAL while later writes in the new one survive;
    // recovery drops those (they were never synced) to keep a prefix (`db/recover.rs`).
    if created.is_ok() {
        inner.newest_wal.fetch_max(number.0, Ordering::AcqRel);
    }
    crate::kill_point!("wal.switch");
    // The old WAL's last record says it ended here: recovery then tells a WAL that power loss
    // cut at a record boundary from one that was complete (`db/recover.rs`).
    let closed = created.and_then(|f| {
        wal.writer
            .add_record(&encode_wal_event(WalEvent::Closed(wal.number)))
            .and_then(|()| wal.writer.flush())
            .map(|()| f)
    });
    let new_writer = match closed {
        Ok(w) => w,
        Err(e) => {
            let mut st = inner.state.lock();
            inner.set_bg_error(&mut st, &e);
            return Err(e);
        }
    };
    let new_mem = Arc::new(MemTable::new());
    {
        let mut st = inner.state.lock();
        let old_mem = std::mem::replace(&mut st.mem, new_mem.clone());
        let old_log = std::mem::replace(&mut st.mem_log, number);
        st.imm.push_back((old_mem, old_log));
        st.memtables_switched += 1;
        let version = inner.current_super_version().version.clone();
        inner.install_super_version(&st, version);
        inner.bg_cv.notify_all();
    }
    let retired = std::mem::replace(&mut wal.writer, new_writer);
    inner.retired_wals.lock().push_back((wal.number, retired));
    let recyclable = inner.opts.recycle_log_file_num > 0;
    let header = wal
        .writer
        .add_record(&encode_wal_header(wal.number, recyclable))
        .and_then(|()| wal.writer.flush());
    if let Err(e) = header {
        let mut st = inner.state.lock();
        inner.set_bg_error(&mut st, &e);
    }
    wal.number = number;
    wal.mem = new_mem;
    Ok(())
}
