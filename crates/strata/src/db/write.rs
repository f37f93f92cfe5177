//! The write path: queue, group commit, WAL, memtable, publish.
//!
//! A writer queues (`db/write_queue.rs`); the one at the front leads a *group*: it takes the
//! batches queued behind it (up to `max_write_batch_group_size_bytes`), and in phase one, under
//! the WAL lock, makes room, takes sequence numbers and appends one combined WAL record
//! ([`stage_group`]). Phase two, without the WAL lock ([`finish_group`]): the group's sync, its
//! memtable inserts, and its publication, in group order. When the leadership passes on is the
//! choice of the write modes:
//!
//! | group | leadership passes on | so that |
//! |---|---|---|
//! | synced, one writer, nobody queued | after the WAL append | a writer arriving during the sync starts its own (at most [`MAX_SYNCS_IN_FLIGHT`]) |
//! | synced, several writers | after the publication | writers arriving during the sync all join the next group: one larger sync |
//! | `enable_pipelined_write` | after the WAL append (after the sync when synced) | group k+1's WAL write overlaps group k's memtable insert |
//! | `unordered_write` | after the WAL append | inserts need not wait for earlier groups at all |
//! | otherwise | after the publication | |
//!
//! With `allow_concurrent_memtable_write`, members whose batch is large insert it themselves, in
//! parallel with the leader (who inserts the rest) and with earlier groups still inserting; a
//! small batch is inserted by the leader, since waking its writer costs more than the insert.
//! With `unordered_write`, a group is published as soon as its WAL record is written (in group
//! order), and every member inserts its own batch and answers itself: reads may see part of a
//! batch, or a write below a snapshot's sequence that appeared after the snapshot.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::cf::FamilyMem;
use super::write_queue::{
    hand_on_leadership, GroupInserts, InsertJob, PendingWrite, SlotState, WriterSlot,
};
use super::write_rate::Debt;
use super::{Cfd, DbInner, MemSet, WalState};
use crate::error::{Error, Result};
use crate::filename::wal_path;
use crate::memtable::WriteBufferManager;
use crate::options::{Options, WriteOptions};
use crate::stats::{Stall, Ticker};
use crate::types::{FileNumber, SeqNo};
use crate::wal::{encode_wal_event, encode_wal_header, LogWriter, WalEvent};
use crate::write_batch::WriteBatch;

/// Synced groups whose fdatasync may be in flight at once. A second one is started only by
/// a writer alone in the queue: then two writers no longer take turns with the device, while
/// with more writers waiting one larger group's sync costs less than two overlapping ones
/// (measured: overlapping syncs of small groups lost up to a third of the throughput at 8 to
/// 32 writers).
const MAX_SYNCS_IN_FLIGHT: u64 = 2;

/// With `allow_concurrent_memtable_write`, a member inserts its own batch from this many
/// records on (below, its leader inserts it: a wake-up costs several microseconds, a record's
/// insert well under one).
const OWN_INSERT_MIN_RECORDS: u32 = 16;

pub(crate) fn write(inner: &DbInner, batch: WriteBatch, opts: WriteOptions) -> Result<()> {
    if opts.sync && opts.disable_wal {
        return Err(Error::InvalidArgument("sync writes need the WAL (disable_wal is set)".into()));
    }
    batch.validate()?;
    if batch.has_cf() {
        check_families(inner, &batch)?;
    } else if batch.has_merge() && inner.default_cf.opts.merge_operator.is_none() {
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
    let slot = WriterSlot::for_this_thread();
    let lead_now = {
        let mut q = inner.queue.lock();
        q.pending.push_back(PendingWrite {
            batch,
            sync: opts.sync,
            disable_wal: opts.disable_wal,
            slot: slot.clone(),
        });
        !std::mem::replace(&mut q.leader_active, true)
    };
    let mut next = if lead_now { SlotState::Lead } else { slot.wait() };
    loop {
        match next {
            SlotState::Done(r) => return r,
            SlotState::Lead => return lead_group(inner, &slot),
            SlotState::Insert(job) => {
                let answers_itself = job.group.is_none();
                let r = run_insert_job(inner, job);
                if answers_itself {
                    return r;
                }
            }
            SlotState::Waiting => {}
        }
        next = slot.wait();
    }
}

/// Refuses a batch naming a family that does not exist (or was dropped), or merging into a
/// family without a merge operator.
fn check_families(inner: &DbInner, batch: &WriteBatch) -> Result<()> {
    let st = inner.state.lock();
    for r in batch.iter() {
        let Some(cs) = st.cfs.get(&r.cf) else {
            return Err(Error::InvalidArgument(format!(
                "write batch names column family {}, which does not exist (dropped?)",
                r.cf
            )));
        };
        if r.value_type == crate::types::ValueType::Merge && cs.cfd.opts.merge_operator.is_none() {
            return Err(Error::NotSupported(format!(
                "merge needs a merge operator: column family {:?} has none",
                cs.cfd.name
            )));
        }
    }
    Ok(())
}

/// When a group's leader passes the leadership on (module doc).
#[derive(Clone, Copy, PartialEq, Eq)]
enum HandOn {
    /// Once the group's WAL record is written.
    Wal,
    /// Once the group's sync is done.
    Sync,
    /// Once the group is published.
    Publish,
}

/// Leads one write group; the caller's slot is at the front of the queue. Returns the
/// leader's own result; every follower gets its own through its slot.
fn lead_group(inner: &DbInner, me: &Arc<WriterSlot>) -> Result<()> {
    let mut q = inner.queue.lock();
    // A synced group starts its sync when none is in flight, or when its writer is alone and
    // a second may start; otherwise it waits, more writers queue behind, and it takes them all.
    while let Some(front) = q.pending.front() {
        if !front.sync {
            break;
        }
        let limit = if q.pending.len() == 1 { MAX_SYNCS_IN_FLIGHT } else { 1 };
        if inner.syncs_in_flight.load(Ordering::Acquire) < limit {
            break;
        }
        drop(q);
        {
            // The count drops under this lock, so the wake-up cannot be missed.
            let mut g = inner.sync_slots.lock();
            while inner.syncs_in_flight.load(Ordering::Acquire) >= limit {
                inner.sync_slots_cv.wait(&mut g);
            }
        }
        q = inner.queue.lock();
    }
    // The leader is at the front (the queue's invariant). Were it not, its entry is taken out
    // wherever it is, so that no later group writes its batch or answers its slot, and the
    // write fails.
    let leader = match q.pending.iter().position(|p| Arc::ptr_eq(&p.slot, me)) {
        Some(0) => q.pending.pop_front(),
        Some(i) => {
            q.pending.remove(i);
            None
        }
        None => None,
    };
    let Some(leader) = leader else {
        drop(q);
        hand_on_leadership(&inner.queue);
        return Err(Error::Background("write queue: the leader was not at the front".into()));
    };
    let PendingWrite { batch: mut wal_batch, sync: leader_sync, disable_wal, .. } = leader;
    let max_bytes = inner.opts.max_write_batch_group_size_bytes.max(1) as usize;
    let mut size = wal_batch.size_in_bytes();
    // A small leader takes only an eighth of the bound more, so its own latency stays low.
    let limit = if size <= max_bytes / 8 { size + max_bytes / 8 } else { max_bytes };
    let mut followers = Vec::new();
    while let Some(p) = q.pending.front() {
        if p.disable_wal != disable_wal || size + p.batch.size_in_bytes() > limit {
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

    let sync = leader_sync || followers.iter().any(|p| p.sync);
    let o = &inner.opts;
    let hand_on = if o.unordered_write || (sync && alone) || (o.enable_pipelined_write && !sync) {
        HandOn::Wal
    } else if o.enable_pipelined_write {
        HandOn::Sync
    } else {
        HandOn::Publish
    };
    let own_records = wal_batch.count();
    for p in &followers {
        wal_batch.append(&p.batch);
    }
    let staged = stage_group(inner, &mut wal_batch, sync, disable_wal);
    if hand_on == HandOn::Wal || staged.is_err() {
        hand_on_leadership(&inner.queue);
    }
    let group = Group { wal_batch, own_records, followers, hand_on };
    match staged {
        Ok(st) => finish_group(inner, group, st),
        Err(e) => {
            for p in &group.followers {
                p.slot.post(SlotState::Done(Err(e.duplicate())));
            }
            Err(e)
        }
    }
}

/// A write group as its leader holds it.
struct Group {
    /// Every member's records, the leader's first (the WAL record).
    wal_batch: WriteBatch,
    /// How many of them are the leader's own.
    own_records: u32,
    followers: Vec<PendingWrite>,
    hand_on: HandOn,
}

/// A write group that took its sequence numbers and is in the WAL (flushed, maybe not yet
/// synced), on its way into the memtable.
pub(crate) struct StagedGroup {
    /// The group's place in the pipeline (`WritePipeline`).
    group: u64,
    mems: Arc<MemSet>,
    first: SeqNo,
    last: SeqNo,
    /// Makes the group's WAL bytes durable; `None` when no sync was asked for, or it was made.
    syncer: Option<Box<dyn crate::env::FileSyncer>>,
    sync: bool,
    disable_wal: bool,
}

/// Groups in flight between the WAL and publication. Groups take numbers in sequence order
/// (under the WAL lock) and are published in that order: `visible_sequence` never covers a
/// group before every earlier one is published. Outside unordered writes a group is published
/// only once it is in the memtable; with them, `inserting` counts the inserts of published
/// groups still going on.
#[derive(Default)]
pub(crate) struct WritePipeline {
    /// Groups numbered below this took their sequence numbers.
    pub assigned: u64,
    /// Groups numbered below this are finished: published, or failed.
    pub finished: u64,
    /// Inserts of published groups still running (unordered writes only).
    pub inserting: u64,
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
        if batch.has_cf() {
            for cf in batch.column_families() {
                if let Some(f) = wal.mems.get(cf) {
                    f.mem.mark_unlogged();
                }
            }
        } else {
            wal.mems.default.mem.mark_unlogged();
        }
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
    Ok(StagedGroup { group, mems: wal.mems.clone(), first, last, syncer, sync, disable_wal })
}

/// Phase two, without the WAL lock: the group's sync, its memtable inserts, then, in group
/// order, publication; then every follower's answer. A group that fails (or follows a failure:
/// a background error) is finished without publishing, so later groups never make it visible.
fn finish_group(inner: &DbInner, mut group: Group, mut staged: StagedGroup) -> Result<()> {
    let mut result = sync_group(inner, &mut staged);
    if result.is_ok() {
        crate::kill_point!("wal.sync", when staged.sync);
    }
    if group.hand_on == HandOn::Sync {
        hand_on_leadership(&inner.queue);
    }
    if inner.opts.unordered_write {
        return finish_unordered(inner, group, &staged, result);
    }
    if result.is_ok() {
        result = insert_group(inner, &mut group, &staged);
        if let Err(e) = &result {
            // Part of the batch may be in the memtable: nothing more may be published.
            let mut st = inner.state.lock();
            inner.set_bg_error(&mut st, e);
        }
    }
    let result = publish_in_order(inner, &staged, result, 0);
    if group.hand_on == HandOn::Publish {
        hand_on_leadership(&inner.queue);
    }
    if result.is_ok() {
        count_group(inner, &group, &staged);
    }
    for p in &group.followers {
        p.slot.post(SlotState::Done(result.as_ref().map_err(Error::duplicate).copied()));
    }
    result
}

/// The group's fdatasync, if it asked for one (outside the WAL lock). A failure is a
/// background error.
fn sync_group(inner: &DbInner, staged: &mut StagedGroup) -> Result<()> {
    let Some(syncer) = staged.syncer.take() else { return Ok(()) };
    let synced = syncer.sync();
    {
        // Under the lock a leader waiting for a sync slot checks the count with.
        let _g = inner.sync_slots.lock();
        inner.syncs_in_flight.fetch_sub(1, Ordering::AcqRel);
        inner.sync_slots_cv.notify_all();
    }
    if let Err(e) = &synced {
        let mut st = inner.state.lock();
        inner.set_bg_error(&mut st, e);
    }
    synced
}

/// The followers that insert their own batch: (index, first sequence number, record count).
fn delegated_members(inner: &DbInner, group: &Group, first: SeqNo) -> Vec<(usize, SeqNo, u32)> {
    let o = &inner.opts;
    let mut next = first.0 + u64::from(group.own_records);
    let mut out = Vec::new();
    for (i, p) in group.followers.iter().enumerate() {
        let count = p.batch.count();
        if o.unordered_write
            || (o.allow_concurrent_memtable_write && count >= OWN_INSERT_MIN_RECORDS)
        {
            out.push((i, SeqNo(next), count));
        }
        next += u64::from(count);
    }
    out
}

/// Hands each delegated member its insert job (its batch moves into the job).
fn post_insert_jobs(
    group: &mut Group,
    delegated: &[(usize, SeqNo, u32)],
    mems: &Arc<MemSet>,
    waiting: Option<&Arc<GroupInserts>>,
) {
    for &(i, first, _) in delegated {
        let p = &mut group.followers[i];
        let job = InsertJob {
            batch: std::mem::take(&mut p.batch),
            mems: mems.clone(),
            first,
            group: waiting.cloned(),
        };
        p.slot.post(SlotState::Insert(job));
    }
}

/// The group's memtable inserts, outside unordered writes: delegated members insert their own
/// batches while the leader inserts the rest; returns once all are in.
fn insert_group(inner: &DbInner, group: &mut Group, staged: &StagedGroup) -> Result<()> {
    let delegated = delegated_members(inner, group, staged.first);
    let waiting = (!delegated.is_empty()).then(|| GroupInserts::new(delegated.len()));
    post_insert_jobs(group, &delegated, &staged.mems, waiting.as_ref());
    let mine = insert_undelegated(&staged.mems, &group.wal_batch, staged, &delegated);
    // Waited for whatever the leader's own insert gave: no insert may outlive the group.
    let members = waiting.map_or(Ok(()), |w| w.wait());
    mine.and(members)
}

/// Inserts the records of `batch` (the group's WAL batch, starting at `staged.first`) except
/// the delegated members' ranges.
fn insert_undelegated(
    mems: &MemSet,
    batch: &WriteBatch,
    staged: &StagedGroup,
    delegated: &[(usize, SeqNo, u32)],
) -> Result<()> {
    let first = staged.first.0;
    let total = staged.last.0 - first + 1;
    let single = !batch.has_cf();
    let mut records = batch.iter();
    let (mut at, mut expected, mut inserted) = (0u64, 0u64, 0u64);
    for &(_, start, count) in delegated {
        let skip_from = start.0 - first;
        let run = records.by_ref().take((skip_from - at) as usize);
        inserted += mems.add_batch(SeqNo(first + at), run, single);
        expected += skip_from - at;
        records.by_ref().take(count as usize).for_each(drop);
        at = skip_from + u64::from(count);
    }
    inserted += mems.add_batch(SeqNo(first + at), records, single);
    expected += total - at;
    check_inserted(inserted, expected)
}

/// Unordered writes: the group is published as soon as it is in the WAL (in group order), then
/// every member inserts its own batch and answers itself; the leader inserts its own.
fn finish_unordered(
    inner: &DbInner,
    mut group: Group,
    staged: &StagedGroup,
    synced: Result<()>,
) -> Result<()> {
    let members = 1 + group.followers.len() as u64;
    let result = publish_in_order(inner, staged, synced, members);
    if let Err(e) = &result {
        for p in &group.followers {
            p.slot.post(SlotState::Done(Err(e.duplicate())));
        }
        return result;
    }
    count_group(inner, &group, staged);
    let delegated = delegated_members(inner, &group, staged.first);
    post_insert_jobs(&mut group, &delegated, &staged.mems, None);
    let own = group.wal_batch.iter().take(group.own_records as usize);
    let n = staged.mems.add_batch(staged.first, own, !group.wal_batch.has_cf());
    end_unordered_insert(inner, check_inserted(n, u64::from(group.own_records)))
}

/// A member's own insert (its leader handed it the job).
fn run_insert_job(inner: &DbInner, job: InsertJob) -> Result<()> {
    let n = job.mems.add_batch(job.first, job.batch.iter(), !job.batch.has_cf());
    inner.stats.write.member_inserts.fetch_add(1, Ordering::Relaxed);
    let r = check_inserted(n, u64::from(job.batch.count()));
    match job.group {
        Some(g) => {
            g.done(r);
            Ok(())
        }
        None => end_unordered_insert(inner, r),
    }
}

/// One insert of a published (unordered) group is over: a memtable switch may be waiting.
fn end_unordered_insert(inner: &DbInner, r: Result<()>) -> Result<()> {
    if let Err(e) = &r {
        let mut st = inner.state.lock();
        inner.set_bg_error(&mut st, e);
    }
    inner.pipeline.lock().inserting -= 1;
    inner.pipeline_cv.notify_all();
    r
}

/// Waits for the group's turn, then publishes its last sequence unless it, or an earlier
/// group, failed; `inserts_after` inserts of an unordered group are counted as still running.
fn publish_in_order(
    inner: &DbInner,
    staged: &StagedGroup,
    mut result: Result<()>,
    inserts_after: u64,
) -> Result<()> {
    {
        let mut p = inner.pipeline.lock();
        while p.finished != staged.group {
            inner.pipeline_cv.wait(&mut p);
        }
    }
    // This group's turn: only it advances `finished` from here, so it publishes unlocked.
    if result.is_ok() {
        if let Some(e) = inner.bg_error() {
            // An earlier group's sync failed: the OS may have dropped its pages, and this
            // group's sync does not vouch for them.
            result = Err(e);
        }
    }
    if result.is_ok() {
        inner.visible_sequence.store(staged.last.0, Ordering::Release);
    }
    {
        let mut p = inner.pipeline.lock();
        p.finished += 1;
        if result.is_ok() {
            p.inserting += inserts_after;
        }
    }
    inner.pipeline_cv.notify_all();
    result
}

/// The write statistics of a published group.
fn count_group(inner: &DbInner, group: &Group, staged: &StagedGroup) {
    let w = &inner.stats.write;
    let writers = 1 + group.followers.len() as u64;
    let bytes = group.wal_batch.size_in_bytes() as u64;
    let count = staged.last.0 - staged.first.0 + 1;
    w.writes.fetch_add(writers, Ordering::Relaxed);
    w.keys.fetch_add(count, Ordering::Relaxed);
    w.groups.fetch_add(1, Ordering::Relaxed);
    w.ingest_bytes.fetch_add(bytes, Ordering::Relaxed);
    inner.stats.tickers.add(Ticker::KeysWritten, count);
    inner.stats.tickers.add(Ticker::BytesWritten, bytes);
    if !staged.disable_wal {
        w.wal_writes.fetch_add(writers, Ordering::Relaxed);
        w.wal_bytes.fetch_add(bytes, Ordering::Relaxed);
        if staged.sync {
            w.wal_syncs.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn check_inserted(inserted: u64, expected: u64) -> Result<()> {
    if inserted == expected {
        Ok(())
    } else {
        Err(Error::Background(format!(
            "write batch inserted {inserted} records, its header says {expected}"
        )))
    }
}

/// Waits until every staged group is finished (in the memtable and published, or failed).
/// A memtable switch calls it first, so that no group still inserts into the memtable it
/// makes immutable. The caller holds the WAL lock, which finishing groups never take.
pub(crate) fn drain_pipeline(inner: &DbInner) {
    let mut p = inner.pipeline.lock();
    while p.finished < p.assigned || p.inserting > 0 {
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
    // The fdatasync itself runs after the WAL lock is released (as a synced group's does), so
    // writers keep appending while it runs.
    let mut syncer = None;
    let staged = wal.writer.flush().and_then(|()| {
        if !sync {
            return Ok(());
        }
        match wal.writer.syncer()? {
            Some(s) => {
                syncer = Some(s);
                Ok(())
            }
            None => wal.writer.sync(),
        }
    });
    drop(wal);
    let r = staged.and_then(|()| syncer.map_or(Ok(()), |s| s.sync()));
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
/// new file, zero-filled ahead of its records (`Options::wal_zeros_ahead`, where the file
/// system can) or with space reserved for a memtable's worth of writes. With recycling on, the
/// WAL is written in recyclable fragments. The caller writes the header, which says whether
/// zeros are ahead (`LogWriter::zeros_ahead`).
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
    if reuse.is_none() && !(opts.wal_zeros_ahead && writer.write_zeros_ahead()) {
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

/// Ensures the active memtable has room and applies write flow control: stops while L0 has
/// `level0_stop_writes_trigger` files, while every memtable is full, or while the pending
/// compaction bytes exceed the hard limit; paces writes once L0 reaches
/// `level0_slowdown_writes_trigger` files or pending bytes the soft limit, at a rate that
/// starts at `delayed_write_rate` and follows the debt (`db/write_rate.rs`). Every stall is
/// counted (once per write group and kind) and timed.
fn make_room_for_write(inner: &DbInner, wal: &mut WalState, batch_bytes: usize) -> Result<()> {
    let o = &inner.opts;
    let mut delayed = false;
    // This writer waited in a stop: a slowdown right after it paces slower (`write_rate.rs`).
    let mut was_stopped = false;
    let mut counted: Option<Stall> = None;
    let wbm = o.write_buffer_manager.as_deref();
    let mut budget_switched = false;
    loop {
        if let Some(e) = inner.bg_error() {
            return Err(e);
        }
        // The shared memtable budget: at most one switch per write group, of this DB's
        // largest mutable memtable (`memtable/write_buffer_manager.rs`).
        if !budget_switched && wbm.is_some_and(WriteBufferManager::should_flush) {
            match largest_mutable(inner, wal) {
                Some((cfd, true)) => {
                    budget_switched = true;
                    switch_memtable(inner, wal, &cfd)?;
                    continue;
                }
                Some((_, false)) => {
                    // Every memtable slot of that family is taken: wait for its flush, as
                    // for a full memtable (the budget then bounds it, not write_buffer_size).
                    wait_for_flush(inner, &mut counted)?;
                    continue;
                }
                None => budget_switched = true,
            }
        }
        // The worst state over the families: a stop in any stops every write (they share
        // the WAL and the sequence), as does a slowdown. Nothing is cloned or formatted here
        // unless a family stalls or is full.
        let mut stop: Option<(Stall, Arc<Cfd>, usize, u64)> = None;
        let mut slow: Option<(Arc<Cfd>, usize, u64)> = None;
        let mut full: Option<Arc<Cfd>> = None;
        for f in wal.mems.iter() {
            let co = &f.cfd.opts;
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
            let mem_full = f.mem.approximate_memory_usage() >= co.write_buffer_size;
            let kind = kind.or_else(|| {
                (mem_full
                    && inner.state.lock().cfs.get(&f.cfd.id).map_or(0, |c| c.imm.len()) + 1
                        >= co.max_write_buffer_number)
                    .then_some(Stall::MemtableStop)
            });
            if let Some(kind) = kind {
                stop.get_or_insert_with(|| (kind, f.cfd.clone(), l0, pending));
                continue;
            }
            if mem_full && full.is_none() {
                full = Some(f.cfd.clone());
            }
            if auto
                && slow.is_none()
                && (l0 >= co.level0_slowdown_writes_trigger || co.pending_bytes_slowdown(pending))
            {
                slow = Some((f.cfd.clone(), l0, pending));
            }
        }
        // The shared memtable budget stops writes too, once no family must switch first.
        let budget = wbm.filter(|m| stop.is_none() && full.is_none() && budget_stall_applies(m));
        inner.write_stopped.store(stop.is_some() || budget.is_some(), Ordering::Relaxed);
        note_stall_change(
            inner,
            match (&stop, budget) {
                (Some((k, cfd, l0, pending)), _) => {
                    Some((cfd.name.clone(), describe_stop(*k, *l0, *pending)))
                }
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
        if let Some(m) = budget {
            wait_for_budget(inner, m, &mut counted)?;
            continue;
        }
        if let Some((kind, _, _, _)) = stop {
            was_stopped = true;
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
                count_stall(inner, &mut counted, kind, started);
            }
            continue;
        }
        if let Some(cfd) = full {
            switch_memtable(inner, wal, &cfd)?;
            continue;
        }
        // The pace of this write group's slowdown, from the slowed family's debt now.
        let rate = match &slow {
            Some((cfd, l0, pending)) if !delayed => {
                let debt = Debt { pending_bytes: *pending, l0_files: *l0 };
                let near = near_stop(&cfd.opts, *l0, *pending);
                Some(inner.delayed_rate.lock().slowed(debt, near, was_stopped))
            }
            _ => None,
        };
        let slowed = slow.is_some();
        if inner.write_delayed.load(Ordering::Relaxed) != slowed
            && inner.write_delayed.swap(slowed, Ordering::Relaxed) != slowed
        {
            let now = super::info_log::now_micros();
            inner.info_log.log(&match &slow {
                Some((cfd, l0, pending)) => {
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
        if let (Some((cfd, l0, _)), Some(rate)) = (slow, rate) {
            delayed = true;
            wal.delay_debt_micros += batch_bytes as f64 * 1e6 / rate as f64;
            if wal.delay_debt_micros >= 1000.0 {
                let micros = wal.delay_debt_micros as u64;
                wal.delay_debt_micros = 0.0;
                std::thread::sleep(Duration::from_micros(micros));
                let running = inner.state.lock().running_compactions > 0;
                let kind = if l0 < cfd.opts.level0_slowdown_writes_trigger {
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

/// Whether a slowed family is close to a stop (`db/write_rate.rs`): L0 within two files of
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

/// This DB's family with the largest non-empty mutable memtable, and whether it may be
/// switched now (a free memtable slot: fewer than `max_write_buffer_number - 1` immutable
/// ones).
fn largest_mutable(inner: &DbInner, wal: &WalState) -> Option<(Arc<Cfd>, bool)> {
    let f = wal
        .mems
        .iter()
        .filter(|f| !f.mem.is_empty())
        .max_by_key(|f| f.mem.approximate_memory_usage())?;
    let imm = inner.state.lock().cfs.get(&f.cfd.id).map_or(0, |c| c.imm.len());
    Some((f.cfd.clone(), imm + 1 < f.cfd.opts.max_write_buffer_number))
}

/// One wait (at most 100 ms) for a flush to free a memtable slot, counted as a memtable stop.
fn wait_for_flush(inner: &DbInner, counted: &mut Option<Stall>) -> Result<()> {
    let started = Instant::now();
    let mut st = inner.state.lock();
    if st.shutting_down {
        return Err(Error::ShutdownInProgress);
    }
    inner.bg_cv.wait_for(&mut st, Duration::from_millis(100));
    count_stall(inner, counted, Stall::MemtableStop, started);
    Ok(())
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
    let now = super::info_log::now_micros();
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

/// Makes family `cfd`'s active memtable immutable and starts a new WAL and a new memtable for
/// the family (the other families keep theirs). The caller holds the WAL lock (it is the
/// leader, or `flush`).
pub(crate) fn switch_memtable(inner: &DbInner, wal: &mut WalState, cfd: &Arc<Cfd>) -> Result<()> {
    if cfd.dropped.load(Ordering::Acquire) {
        return Ok(()); // its memtables went with it (`db/cf/admin.rs`)
    }
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
    // Retired before the memtable is handed to the flush thread: a flush syncs the retired
    // WALs its memtable's writes are in (`db/flush.rs`), so the WAL must be on the list by then.
    let retired = std::mem::replace(&mut wal.writer, new_writer);
    inner.retired_wals.lock().push_back((wal.number, retired));
    let new_mem = super::cf::new_memtable(&cfd.opts, &inner.opts);
    {
        let mut st = inner.state.lock();
        if let Some(cs) = st.cfs.get_mut(&cfd.id) {
            let old_mem = std::mem::replace(&mut cs.mem, new_mem.clone());
            old_mem.mark_immutable();
            let old_log = std::mem::replace(&mut cs.mem_log, number);
            cs.imm.push_back((old_mem, old_log));
            cs.memtables_switched += 1;
            let version = cfd.current_super_version().version.clone();
            cfd.install_super_version(cs, version);
        }
        inner.bg_cv.notify_all();
    }
    let recyclable = inner.opts.recycle_log_file_num > 0;
    let zeros_ahead = wal.writer.zeros_ahead();
    let header = wal
        .writer
        .add_record(&encode_wal_header(wal.number, recyclable, zeros_ahead))
        .and_then(|()| wal.writer.flush());
    if let Err(e) = header {
        let mut st = inner.state.lock();
        inner.set_bg_error(&mut st, &e);
    }
    wal.number = number;
    wal.mems = Arc::new(wal.mems.with(FamilyMem { cfd: cfd.clone(), mem: new_mem }));
    Ok(())
}
