//! The write path: queue, group commit, WAL, memtable, publish.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::filename::wal_path;
use super::{DbInner, PendingWrite, WalState};
use crate::error::{Error, Result};
use crate::memtable::MemTable;
use crate::options::WriteOptions;
use crate::types::{SeqNo, ValueType};
use crate::wal::{encode_wal_header, LogWriter};
use crate::write_batch::WriteBatch;

/// A write group never grows past this many bytes.
const MAX_GROUP_BYTES: usize = 1 << 20;
/// A small leader only takes this many extra bytes, so its own latency stays low.
const SMALL_LEADER_EXTRA: usize = 128 << 10;

/// Rejects batches the engine cannot store.
fn validate(batch: &WriteBatch) -> Result<()> {
    batch.validate_sizes()?;
    if batch.iter().any(|rec| rec.value_type == ValueType::RangeDeletion) {
        return Err(Error::NotSupported("delete_range is not supported yet".to_string()));
    }
    Ok(())
}

pub(crate) fn write(inner: &DbInner, batch: WriteBatch, opts: WriteOptions) -> Result<()> {
    if opts.sync && opts.disable_wal {
        return Err(Error::InvalidArgument("sync writes need the WAL (disable_wal is set)".into()));
    }
    validate(&batch)?;
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
        if !q.leader_active && q.pending.front().is_some_and(|p| p.ticket == ticket) {
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
    drop(q);

    let sync = leader.sync || followers.iter().any(|p| p.sync);
    for p in &followers {
        leader.batch.append(&p.batch);
    }
    let result = commit_group(inner, &mut leader.batch, sync, leader.disable_wal);

    let mut q = inner.queue.lock();
    for p in &followers {
        let r = match &result {
            Ok(()) => Ok(()),
            Err(e) => Err(e.duplicate()),
        };
        q.done.insert(p.ticket, r);
    }
    q.leader_active = false;
    inner.queue_cv.notify_all();
    drop(q);
    result
}

/// Logs and applies one combined batch. Called by the leader only.
fn commit_group(
    inner: &DbInner,
    batch: &mut WriteBatch,
    sync: bool,
    disable_wal: bool,
) -> Result<()> {
    let mut wal = inner.wal.lock();
    make_room_for_write(inner, &mut wal)?;
    let first = wal.last_sequence.plus(1);
    batch.set_sequence(first);
    if disable_wal {
        inner.state.lock().unpersisted_without_wal = true;
    } else {
        let logged = wal
            .writer
            .add_record(batch.data())
            .and_then(|()| wal.writer.flush())
            .and_then(|()| if sync { wal.writer.sync() } else { Ok(()) });
        if let Err(e) = logged {
            // Contract: after a failed WAL write or sync nothing more is acknowledged.
            let mut st = inner.state.lock();
            inner.set_bg_error(&mut st, &e);
            return Err(e);
        }
    }
    let count = insert_into_memtable(&wal.mem, batch, first)?;
    let last = SeqNo(first.0 + count - 1);
    wal.last_sequence = last;
    inner.visible_sequence.store(last.0, Ordering::Release);
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

/// Ensures the active memtable has room, switching it (and the WAL) when full and stalling
/// while every memtable slot is taken.
fn make_room_for_write(inner: &DbInner, wal: &mut WalState) -> Result<()> {
    loop {
        if let Some(e) = inner.bg_error() {
            return Err(e);
        }
        if wal.mem.approximate_memory_usage() < inner.opts.write_buffer_size {
            return Ok(());
        }
        {
            let mut st = inner.state.lock();
            if st.imm.len() + 1 >= inner.opts.max_write_buffer_number {
                // Every memtable is full: wait for the flush to free one.
                if st.shutting_down {
                    return Err(Error::ShutdownInProgress);
                }
                inner.bg_cv.wait(&mut st);
                continue;
            }
        }
        switch_memtable(inner, wal)?;
    }
}

/// Makes the active memtable immutable and starts a new WAL and memtable. The caller holds the
/// WAL lock (it is the leader, or `flush`).
pub(crate) fn switch_memtable(inner: &DbInner, wal: &mut WalState) -> Result<()> {
    let number = inner.new_file_number();
    let path = wal_path(&inner.dir, number);
    let created = inner.fs.create(&path).and_then(|f| {
        inner.fs.sync_dir(&inner.dir)?;
        Ok(f)
    });
    // The old WAL is synced so a later synced write in the new WAL can never survive a power
    // loss that its predecessors did not (recovery must see a prefix).
    let synced = created.and_then(|f| wal.writer.sync().map(|()| f));
    let file = match synced {
        Ok(f) => f,
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
    wal.writer = LogWriter::new(file);
    let header =
        wal.writer.add_record(&encode_wal_header(wal.number)).and_then(|()| wal.writer.flush());
    if let Err(e) = header {
        let mut st = inner.state.lock();
        inner.set_bg_error(&mut st, &e);
    }
    wal.number = number;
    wal.mem = new_mem;
    Ok(())
}
