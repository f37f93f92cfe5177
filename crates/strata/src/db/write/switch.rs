//! The memtable switch: a family's active memtable becomes immutable (for the flush thread)
//! and the DB moves to a new WAL.
//!
//! Contract: the caller holds the WAL lock (a write group's leader making room, or a flush,
//! a capture or a family's drop). No write group is still in flight when the memtable turns
//! immutable ([`drain_pipeline`]), so the memtable a group inserts into is always the one its
//! WAL belongs to, and complete before it is flushed. The old WAL is retired unsynced (see
//! `wal.rs`), closed by a record saying it ended there; a failure to retire it is a
//! background error.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::drain_pipeline;
use super::two_phase::carry_prepared;
use super::wal::open_wal_writer;
use crate::db::cf::FamilyMem;
use crate::db::{Cfd, DbInner, WalState};
use crate::error::Result;
use crate::wal::{encode_wal_event, encode_wal_header, WalEvent};

/// Makes family `cfd`'s active memtable immutable and starts a new WAL and a new memtable for
/// the family (the other families keep theirs). The caller holds the WAL lock (it is the
/// leader, or `flush`).
pub(crate) fn switch_memtable(inner: &DbInner, wal: &mut WalState, cfd: &Arc<Cfd>) -> Result<()> {
    if cfd.dropped.load(Ordering::Acquire) {
        return Ok(()); // its memtables went with it (`db/cf/admin.rs`)
    }
    drain_pipeline(inner);
    let number = inner.new_file_number();
    // Appends that were too large for zeros ahead in this WAL will be in the next one too.
    let zeros = !wal.writer.appends_large();
    let (fs, opts, dir) = (inner.fs.as_ref(), &inner.opts, &inner.wal_dir);
    // The file taken for reuse is renamed under the list's lock (`db/obsolete.rs`).
    let created = if opts.recycle_log_file_num > 0 {
        let mut recycled = inner.recycled_wals.lock();
        let reuse = recycled.files.pop_front();
        open_wal_writer(fs, opts, dir, number, reuse, zeros)
    } else {
        open_wal_writer(fs, opts, dir, number, None, zeros)
    };
    // Neither the old WAL nor the new one's directory entry is synced here (the writer that
    // switched did not ask for it): the old WAL is retired, and synced by the flush job (in a
    // DB of several families or with a WAL archive; `db/flush.rs`) or by the next synced
    // write first, which also syncs the directory (`sync_wal_dir`). Until
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
            .and_then(|()| wal.writer.finish())
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
    wal.closed.push_back((wal.number, retired.file_size()));
    inner.retired_wals.lock().push_back((wal.number, retired));
    // The memtable it replaces (the pipeline is drained: no write goes to it any more) sizes
    // the new one's filter by the entries it held.
    let replaced = cfd.current_super_version();
    let new_mem = crate::db::cf::new_memtable(&cfd.live_opts(), &inner.opts, Some(&replaced.mem));
    // The pipeline is drained: every write published so far is in the old memtables.
    new_mem.set_earliest(crate::types::SeqNo(inner.visible_sequence.load(Ordering::Acquire)));
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
    // Prepared transactions start the new WAL, durably (`two_phase.rs`).
    if let Err(e) = header.and_then(|()| carry_prepared(inner, wal)) {
        let mut st = inner.state.lock();
        inner.set_bg_error(&mut st, &e);
    }
    wal.number = number;
    wal.mems = Arc::new(wal.mems.with(FamilyMem { cfd: cfd.clone(), mem: new_mem }));
    Ok(())
}
