//! The write path: queue, group commit, WAL, memtable, publish.
//!
//! An unsynced write (with `allow_concurrent_memtable_write`, outside `unordered_write` and a
//! transaction's commit) is a group of its own ([`write_alone`]): it stages itself under the
//! WAL lock as a leader would, inserts its batch in parallel with the other writers, and is
//! published in group order like any group, by its own writer or, when it finished before an
//! earlier group, by the writer that publishes that one ([`publish_in_order`]). A writer waits
//! only for earlier writes still being inserted, not for a leader to take it and wake it: with
//! more writers than cores, those wake-ups cost more than the writes (the leader's work waits
//! for each woken writer's core). Grouping pays where one operation serves many writers: a
//! sync.
//!
//! Every other writer queues (`queue.rs`); the one at the front leads a *group*: it takes the
//! batches queued behind it (up to `max_write_batch_group_size_bytes`), and in phase one, under
//! the WAL lock, makes room (`stall.rs`), takes sequence numbers and appends one combined WAL
//! record ([`stage_group`]). Phase two, without the WAL lock ([`finish_group`]): the group's
//! sync, its memtable inserts, and its publication, in group order. When the leadership passes
//! on is the choice of the write modes:
//!
//! | group | leadership passes on | so that |
//! |---|---|---|
//! | synced, one writer, nobody queued | after the WAL append | a writer arriving during the sync starts its own (at most [`MAX_SYNCS_IN_FLIGHT`]) |
//! | synced, several writers | after the publication | writers arriving during the sync all join the next group: one larger sync |
//! | `enable_pipelined_write`, in the WAL | after the WAL append (after the sync when synced) | group k+1's WAL write overlaps group k's memtable insert |
//! | `enable_pipelined_write`, `disable_wal` | after the publication | no WAL write to overlap: only a hand-off between leaders |
//! | `unordered_write` | after the WAL append | inserts need not wait for earlier groups at all |
//! | otherwise | after the publication | |
//!
//! With `allow_concurrent_memtable_write`, members whose batch is large insert it themselves, in
//! parallel with the leader (who inserts the rest) and with earlier groups still inserting; a
//! small batch is inserted by the leader, since waking its writer costs more than the insert.
//! With `unordered_write`, a group is published as soon as its WAL record is written (in group
//! order), and every member inserts its own batch and answers itself: reads may see part of a
//! batch, or a write below a snapshot's sequence that appeared after the snapshot.
//!
//! Contract: groups take sequence numbers in WAL order and are published in that order, so
//! `visible_sequence` never covers a write before every earlier one is in the memtable (outside
//! `unordered_write`); after a failed WAL write, sync or insert nothing more is acknowledged or
//! published (a background error). A memtable switch first drains the groups in flight
//! ([`drain_pipeline`]). The memtable's skiplist links a group's records once the group is
//! published (`MemSet::link_due`), so that later groups need not wait for the link.
//!
//! The rest of the write path, one concern per file:
//! - `queue.rs`: the writers' queue and each writer's slot (who leads, what a member is told).
//! - `wal.rs`: the WAL's lifecycle (opening a writer, syncing retired WALs and the directory,
//!   `Db::flush_wal`).
//! - `switch.rs`: the memtable switch.
//! - `stall.rs`: write stalls (stops, the write buffer manager, slowdowns).
//! - `rate.rs`: the delayed write rate a slowdown paces at.
//! - `yield_wait.rs`: how a writer waits (spin, yield, then sleep).
//! - `panics.rs`: a panic in the comparator as a write links (or inserts) fails that write and
//!   the DB's later ones, never leaving a writer waiting.

mod panics;
pub(super) mod queue;
pub(super) mod rate;
pub(super) mod stall;
pub(super) mod switch;
pub(crate) mod two_phase;
pub(super) mod wal;
mod wal_limit;
pub(crate) mod yield_wait;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{DbInner, MemSet};
use crate::error::{Error, Result};
use crate::options::WriteOptions;
use crate::statistics::{Histogram, StopWatch, Ticker as StatTicker};
use crate::stats::Ticker;
use crate::types::SeqNo;
use crate::write_batch::{BatchRecord, WriteBatch};
use queue::{hand_on_leadership, GroupInserts, InsertJob, PendingWrite, SlotState, WriterSlot};
use stall::make_room_for_write;
use wal::{append_synced_event, sync_retired_wals, sync_wal_dir};

/// Synced groups whose fdatasync may be in flight at once. A second one is started only by
/// a writer alone in the queue: then two writers no longer take turns with the device, while
/// with more writers waiting one larger group's sync costs less than two overlapping ones
/// (overlapping syncs of small groups cost throughput).
const MAX_SYNCS_IN_FLIGHT: u64 = 2;

/// With `allow_concurrent_memtable_write`, a member inserts its own batch from this many
/// records on (below, its leader inserts it: waking the member costs more than inserting a
/// few records).
const OWN_INSERT_MIN_RECORDS: u32 = 16;

pub(crate) fn write(inner: &DbInner, batch: WriteBatch, opts: WriteOptions) -> Result<()> {
    match &inner.ttl {
        // A DB opened with a TTL stores values with their write time (`db/ttl.rs`).
        Some(clock) => write_with(inner, super::ttl::stamp(&batch, clock())?, opts, None),
        None => write_with(inner, batch, opts, None),
    }
}

/// [`write`], or with `commit_xid` the commit of that prepared transaction (`two_phase.rs`).
pub(crate) fn write_with(
    inner: &DbInner,
    batch: WriteBatch,
    opts: WriteOptions,
    commit_xid: Option<Vec<u8>>,
) -> Result<()> {
    let r = write_queued(inner, batch, opts, commit_xid);
    if r.is_err() {
        // A panic in this thread's memtable insert (`panics.rs`), now that the others are told.
        panics::raise_held();
    }
    r
}

#[inline(always)]
fn write_queued(
    inner: &DbInner,
    batch: WriteBatch,
    opts: WriteOptions,
    commit_xid: Option<Vec<u8>>,
) -> Result<()> {
    let _timer = StopWatch::start(inner.stats.user_statistics(), Histogram::DbWrite);
    if opts.sync && opts.disable_wal {
        return Err(Error::InvalidArgument("sync writes need the WAL (disable_wal is set)".into()));
    }
    batch.validate()?;
    check_timestamps(inner, &batch)?;
    check_range_deletions(inner, &batch)?;
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
        return Ok(()); // an empty commit is a marker alone (`two_phase.rs`)
    }
    let o = &inner.opts;
    if !opts.sync && commit_xid.is_none() && o.allow_concurrent_memtable_write && !o.unordered_write
    {
        return write_alone(inner, batch, opts);
    }
    let slot = WriterSlot::for_this_thread();
    let lead_now = {
        let mut q = inner.queue.lock();
        q.pending.push_back(PendingWrite {
            batch,
            sync: opts.sync,
            disable_wal: opts.disable_wal,
            no_slowdown: opts.no_slowdown,
            slot: slot.clone(),
            commit_xid,
        });
        !std::mem::replace(&mut q.leader_active, true)
    };
    let mut next = if lead_now { SlotState::Lead } else { slot.wait(&inner.write_wait) };
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
        next = slot.wait(&inner.write_wait);
    }
}

/// A write that is its own group (unsynced, with concurrent memtable inserts, ordered): it
/// stages itself under the WAL lock, inserts its batch and publishes in sequence order,
/// without the queue. Writers then insert in parallel, and none sleeps until a leader wakes it
/// (with more writers than cores, those wake-ups cost more than the group's own work); a
/// writer waits only for earlier writes to be published, and for the WAL lock. Synced writes
/// still queue: one sync serves their whole group.
fn write_alone(inner: &DbInner, mut batch: WriteBatch, opts: WriteOptions) -> Result<()> {
    let flags =
        GroupFlags { sync: false, disable_wal: opts.disable_wal, no_slowdown: opts.no_slowdown };
    let staged = stage_group(inner, &mut batch, flags, None)?;
    let own_records = batch.count();
    let group =
        Group { wal_batch: batch, own_records, followers: Vec::new(), hand_on: HandOn::Alone };
    finish_group(inner, group, staged)
}

/// Refuses a batch naming a family that does not exist (or was dropped), or merging into a
/// family without a merge operator.
/// `InvalidArgument` for a batch that names timestamps to a family without them, or writes
/// to a family with them without one (`WriteBatch::put_cf_with_ts`; `db/timestamps.rs`).
fn check_timestamps(inner: &DbInner, batch: &WriteBatch) -> Result<()> {
    let any = inner.any_timestamps.load(Ordering::Acquire);
    if batch.ts_families().is_empty() && !any {
        return Ok(());
    }
    let st = inner.state.lock();
    let has_ts = |cf: u32| st.cfs.get(&cf).map(|c| (c.cfd.opts.timestamps.is_some(), &c.cfd.name));
    for &cf in batch.ts_families() {
        if let Some((false, name)) = has_ts(cf) {
            return Err(crate::options::no_timestamps(&format!("write to column family {name:?}")));
        }
    }
    if let (true, Some((true, name))) = (batch.writes_default_plain(), has_ts(0)) {
        return Err(crate::options::needs_timestamp("write", name));
    }
    if batch.is_decoded() && batch.has_cf() {
        for cf in batch.column_families() {
            if let (true, Some((true, name))) = (cf != 0, has_ts(cf)) {
                return Err(crate::options::needs_timestamp("write of a decoded batch", name));
            }
        }
    }
    Ok(())
}

/// `InvalidArgument` for a `delete_range` whose begin is after its end in its family's key
/// order (as RocksDB; begin == end deletes nothing). Families that do not exist are left to
/// [`check_families`].
fn check_range_deletions(inner: &DbInner, batch: &WriteBatch) -> Result<()> {
    if !batch.has_range_deletions() {
        return Ok(());
    }
    let st = inner.state.lock();
    for (cf, begin, end) in batch.range_deletions() {
        let Some(cs) = st.cfs.get(&cf) else { continue };
        if cs.cfd.opts.comparator.lt(end, begin) {
            return Err(Error::InvalidArgument(format!(
                "delete_range: begin key {:?} is after end key {:?} in column family {:?}'s \
                 key order",
                String::from_utf8_lossy(begin),
                String::from_utf8_lossy(end),
                cs.cfd.name
            )));
        }
    }
    Ok(())
}

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
    /// Never: the writer wrote alone, without leading ([`write_alone`]).
    Alone,
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
    let PendingWrite {
        batch: mut wal_batch,
        sync: leader_sync,
        disable_wal,
        no_slowdown,
        commit_xid,
        ..
    } = leader;
    let max_bytes = inner.opts.max_write_batch_group_size_bytes.max(1) as usize;
    let mut size = wal_batch.size_in_bytes();
    // A small leader takes only an eighth of the bound more, so its own latency stays low.
    let limit = if size <= max_bytes / 8 { size + max_bytes / 8 } else { max_bytes };
    let mut followers = Vec::new();
    while let Some(p) = q.pending.front() {
        // A transaction's commit has a WAL record of its own: it is never in a group.
        if commit_xid.is_some() || p.commit_xid.is_some() {
            break;
        }
        if p.disable_wal != disable_wal
            || p.no_slowdown != no_slowdown
            || size + p.batch.size_in_bytes() > limit
        {
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
    // A group without a WAL record has no WAL write for the next group's to overlap with its
    // inserts: pipelining it would only add a hand-off between leaders.
    let pipelined = o.enable_pipelined_write && !disable_wal;
    let hand_on = if o.unordered_write || (sync && alone) || (pipelined && !sync) {
        HandOn::Wal
    } else if pipelined {
        HandOn::Sync
    } else {
        HandOn::Publish
    };
    let own_records = wal_batch.count();
    for p in &followers {
        wal_batch.append(&p.batch);
    }
    let staged = stage_group(
        inner,
        &mut wal_batch,
        GroupFlags { sync, disable_wal, no_slowdown },
        commit_xid.as_deref(),
    );
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

/// What every member of a write group asked for alike (`sync`: at least one did).
#[derive(Clone, Copy)]
struct GroupFlags {
    sync: bool,
    disable_wal: bool,
    /// A stall fails the group with `Incomplete` instead of waiting.
    no_slowdown: bool,
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
    /// Values went to blob files at commit: the group's batch holds the records the members'
    /// own batches do not, so the leader inserts them all.
    converted: bool,
}

/// A group that finished its inserts before an earlier group was published: its outcome,
/// and the slot of the writer waiting to be told it ([`publish_in_order`]).
pub(crate) struct FinishedGroup {
    group: u64,
    last: SeqNo,
    result: Result<()>,
    inserts_after: u64,
    slot: Arc<WriterSlot>,
}

/// Groups in flight between the WAL and publication. Groups take numbers in sequence order
/// (under the WAL lock) and are published in that order: `visible_sequence` never covers a
/// group before every earlier one is published. Outside unordered writes a group is published
/// only once it is in the memtable; with them, `inserting` counts the inserts of published
/// groups still going on. How many groups are finished is `DbInner::groups_finished`,
/// changed under this lock only.
#[derive(Default)]
pub(crate) struct WritePipeline {
    /// Groups numbered below this took their sequence numbers.
    pub assigned: u64,
    /// Inserts of published groups still running (unordered writes only).
    pub inserting: u64,
    /// Groups finished but not yet published: an earlier group is still inserting.
    pub finished: Vec<FinishedGroup>,
}

/// Phase one, holding the WAL lock: room in the memtable, sequence numbers, the WAL record
/// (flushed), and for a synced group the syncs it must not outrun (retired WALs, the WAL
/// directory) and a handle for its own. Called by the leader only.
fn stage_group(
    inner: &DbInner,
    batch: &mut WriteBatch,
    flags: GroupFlags,
    commit_xid: Option<&[u8]>,
) -> Result<StagedGroup> {
    let GroupFlags { sync, disable_wal, no_slowdown } = flags;
    let mut wal = inner.wal.lock();
    make_room_for_write(inner, &mut wal, batch.size_in_bytes(), no_slowdown)?;
    // Values written at commit go to the memtables' blob files now that the memtables are
    // fixed (`db/blob_log.rs`).
    let converted = match crate::db::blob_log::commit_values(inner, wal.number, &wal.mems, batch) {
        Ok(c) => c,
        Err(e) => {
            // A blob file's append failed: nothing of the group is acknowledged, and the DB
            // takes no more writes (as after a failed WAL append).
            let mut st = inner.state.lock();
            inner.set_bg_error(&mut st, &e);
            return Err(e);
        }
    };
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
            .and_then(|()| match commit_xid {
                None => wal.writer.add_record(batch.data()),
                Some(xid) => two_phase::append_commit(&mut wal, xid, batch),
            })
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
                    None => {
                        let _timer = StopWatch::start(
                            inner.stats.user_statistics(),
                            Histogram::WalFileSyncMicros,
                        );
                        wal.writer.sync()
                    }
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
    Ok(StagedGroup {
        group,
        mems: wal.mems.clone(),
        first,
        last,
        syncer,
        sync,
        disable_wal,
        converted,
    })
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
    if result.is_ok() {
        // Once published: later groups need not wait for this link to publish.
        return link(inner, &staged.mems, !group.wal_batch.has_cf());
    }
    result
}

/// Links what the write left pending ([`MemSet::link_due`]). A panic in the comparator
/// here, or one that poisoned a memtable the write went to (in another write's link or in a
/// read's), fails the write and is a background error (`panics.rs`).
fn link(inner: &DbInner, mems: &MemSet, single_cf: bool) -> Result<()> {
    let r = panics::catching(|| mems.link_due(single_cf)).and_then(|linked| linked);
    if let Err(e) = &r {
        let mut st = inner.state.lock();
        inner.set_bg_error(&mut st, e);
    }
    r
}

/// The group's fdatasync, if it asked for one (outside the WAL lock). A failure is a
/// background error.
fn sync_group(inner: &DbInner, staged: &mut StagedGroup) -> Result<()> {
    let Some(syncer) = staged.syncer.take() else { return Ok(()) };
    let timer = StopWatch::start(inner.stats.user_statistics(), Histogram::WalFileSyncMicros);
    let synced = syncer.sync();
    drop(timer);
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
    let delegated =
        if staged.converted { Vec::new() } else { delegated_members(inner, group, staged.first) };
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
        inserted += insert(mems, SeqNo(first + at), run, single)?;
        expected += skip_from - at;
        records.by_ref().take(count as usize).for_each(drop);
        at = skip_from + u64::from(count);
    }
    inserted += insert(mems, SeqNo(first + at), records, single)?;
    expected += total - at;
    check_inserted(inserted, expected)
}

/// [`MemSet::add_batch`], with a panic in the comparator as a failed insert (`panics.rs`).
fn insert<'a>(
    mems: &MemSet,
    first: SeqNo,
    records: impl Iterator<Item = BatchRecord<'a>>,
    single_cf: bool,
) -> Result<u64> {
    panics::catching(|| mems.add_batch(first, records, single_cf))
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
    let single = !group.wal_batch.has_cf();
    let inserted = insert(&staged.mems, staged.first, own, single)
        .and_then(|n| check_inserted(n, u64::from(group.own_records)));
    let r = end_unordered_insert(inner, inserted);
    r.and(link(inner, &staged.mems, single))
}

/// A member's own insert (its leader handed it the job).
fn run_insert_job(inner: &DbInner, job: InsertJob) -> Result<()> {
    let single = !job.batch.has_cf();
    let inserted = insert(&job.mems, job.first, job.batch.iter(), single)
        .and_then(|n| check_inserted(n, u64::from(job.batch.count())));
    inner.stats.write.member_inserts.fetch_add(1, Ordering::Relaxed);
    let r = match job.group {
        Some(g) => {
            // A failure (a panic's too) reaches the writer as its group's answer.
            g.done(inserted);
            Ok(())
        }
        None => end_unordered_insert(inner, inserted),
    };
    // After the leader is told (it publishes the group once every member's insert is in).
    r.and(link(inner, &job.mems, single))
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

/// Publishes the group's last sequence number in group order, unless it, or an earlier group,
/// failed; `inserts_after` inserts of an unordered group are counted as still running.
/// Returns the group's result.
///
/// A group whose earlier groups are all finished publishes itself, then every group after it
/// that finished meanwhile (their writers are told their result through their slots). A group
/// that finishes before an earlier one leaves its outcome with the pipeline and waits on its
/// writer's slot for whichever writer publishes it: no writer has to be scheduled for a later
/// one to be published, which matters when there are more writers than cores.
fn publish_in_order(
    inner: &DbInner,
    staged: &StagedGroup,
    result: Result<()>,
    inserts_after: u64,
) -> Result<()> {
    let mut p = inner.pipeline.lock();
    if inner.groups_finished.load(Ordering::Acquire) != staged.group {
        let slot = WriterSlot::for_this_thread();
        p.finished.push(FinishedGroup {
            group: staged.group,
            last: staged.last,
            result,
            inserts_after,
            slot: slot.clone(),
        });
        drop(p);
        inner.stats.write.published_by_other.fetch_add(1, Ordering::Relaxed);
        return match slot.wait(&inner.write_wait) {
            SlotState::Done(r) => r,
            _ => Err(Error::Background("write pipeline: a group was told to do other work".into())),
        };
    }
    let own = publish_one(inner, &mut p, staged.group, staged.last, result, inserts_after);
    // Then every later group that finished meanwhile, in order; their writers are told after
    // the lock is let go.
    let mut told = Vec::new();
    loop {
        let turn = inner.groups_finished.load(Ordering::Relaxed);
        let Some(i) = p.finished.iter().position(|f| f.group == turn) else { break };
        let f = p.finished.swap_remove(i);
        let r = publish_one(inner, &mut p, f.group, f.last, f.result, f.inserts_after);
        told.push((f.slot, r));
    }
    drop(p);
    for (slot, r) in told {
        slot.post(SlotState::Done(r));
    }
    inner.pipeline_cv.notify_all();
    own
}

/// Publishes one group, whose turn it is (the caller holds the pipeline's lock): its last
/// sequence number becomes visible unless it failed or an earlier group did (a background
/// error: an earlier group's sync may have failed, and the OS may have dropped its pages,
/// which this group's sync does not vouch for). Returns the group's result.
fn publish_one(
    inner: &DbInner,
    p: &mut WritePipeline,
    group: u64,
    last: SeqNo,
    mut result: Result<()>,
    inserts_after: u64,
) -> Result<()> {
    if result.is_ok() {
        if let Some(e) = inner.bg_error() {
            result = Err(e);
        }
    }
    if result.is_ok() {
        inner.visible_sequence.store(last.0, Ordering::Release);
        p.inserting += inserts_after;
    }
    inner.groups_finished.store(group + 1, Ordering::Release);
    result
}

/// The write statistics of a published group.
fn count_group(inner: &DbInner, group: &Group, staged: &StagedGroup) {
    let w = &inner.stats.write;
    let writers = 1 + group.followers.len() as u64;
    let bytes = group.wal_batch.size_in_bytes() as u64;
    let count = staged.last.0 - staged.first.0 + 1;
    w.add_group(writers, bytes, !staged.disable_wal);
    inner.stats.tickers.add(Ticker::KeysWritten, count);
    inner.stats.tickers.add(Ticker::BytesWritten, bytes);
    let statistics = inner.stats.user_statistics();
    if let Some(s) = statistics {
        s.tick(StatTicker::WriteDoneBySelf, 1);
        s.tick(StatTicker::WriteDoneByOther, writers - 1);
        s.record(Histogram::BytesPerWrite, bytes);
    }
    if !staged.disable_wal {
        if let Some(s) = statistics {
            s.tick(StatTicker::WriteWithWal, writers);
            s.tick(StatTicker::WalFileBytes, bytes);
        }
        if staged.sync {
            w.wal_syncs.fetch_add(1, Ordering::Relaxed);
            inner.stats.tick(StatTicker::WalFileSynced, 1);
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
    while inner.groups_finished.load(Ordering::Acquire) < p.assigned || p.inserting > 0 {
        inner.pipeline_cv.wait(&mut p);
    }
}
