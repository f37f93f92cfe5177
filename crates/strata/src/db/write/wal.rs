//! The WAL's lifecycle around the write path: opening a WAL's writer, the "synced" event a
//! write group appends, syncing the retired WALs and the WAL directory, and `Db::flush_wal`.
//!
//! Contract: a synced write must not become durable before any write acknowledged earlier.
//! A WAL retired by a memtable switch is not synced by the writer that switched (no writer
//! waits on an fsync it did not ask for), nor is the new WAL's directory entry: both are
//! synced by the next synced write ([`sync_retired_wals`], [`sync_wal_dir`], before its own
//! record is synced) or by the flush job before its MANIFEST edit drops or names a WAL (the
//! retired WALs only in a DB of several families or with a WAL archive: otherwise the flush
//! drops them unsynced once its edit is installed, [`forget_retired_wals`]). Any failed WAL
//! write or sync is a background error: nothing more is acknowledged.

use std::sync::atomic::Ordering;

use crate::db::{DbInner, WalState};
use crate::error::Result;
use crate::filename::wal_path;
use crate::statistics::{Histogram, StopWatch, Ticker as StatTicker};
use crate::types::FileNumber;
use crate::wal::{encode_wal_event, LogWriter, WalEvent};

/// Appends a "synced" event when retired WALs were synced since the last one: recovery then
/// knows a retired WAL that ends early is damaged, not an unsynced tail (`db/recover.rs`).
pub(super) fn append_synced_event(inner: &DbInner, wal: &mut WalState) -> Result<()> {
    let through = FileNumber(inner.wals_synced_through.load(Ordering::Acquire));
    if through > wal.synced_event_through {
        wal.writer.add_record(&encode_wal_event(WalEvent::SyncedThrough(through)))?;
        wal.synced_event_through = through;
    }
    Ok(())
}

/// Syncs the retired WALs numbered below `before` (all of them with `None`), oldest first,
/// after the blob files of values written at commit, into which WAL records may point
/// (`db/blob_log.rs`). Called before every WAL sync: by a synced write's leader (holding the
/// WAL lock), by `flush_wal` (not holding it), by a transaction's synced marker, and by the
/// flush job before its MANIFEST edit drops WALs. A failed sync is a background error: the
/// WAL's unsynced writes may be lost, so nothing more is acknowledged.
pub(crate) fn sync_retired_wals(inner: &DbInner, before: Option<FileNumber>) -> Result<()> {
    let mut retired = inner.retired_wals.lock();
    if !inner.blob_logs.is_empty() {
        if let Err(e) = inner.blob_logs.sync_unfinished(&inner.dir) {
            drop(retired);
            let mut st = inner.state.lock();
            inner.set_bg_error(&mut st, &e);
            return Err(e);
        }
    }
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

/// Drops the retired WALs numbered below `before` without syncing them: a flush's of a DB of
/// one family without a WAL archive, once its installed edit made them obsolete (every write in them is in a
/// table, and recovery never replays them). A synced write meanwhile may have synced them.
pub(crate) fn forget_retired_wals(inner: &DbInner, before: FileNumber) {
    let mut retired = inner.retired_wals.lock();
    while retired.front().is_some_and(|(n, _)| *n < before) {
        retired.pop_front();
    }
}

/// `Db::flush_wal`: hands the current WAL's buffered bytes to the OS; with `sync`, makes every
/// write so far durable, as a synced write would (older WALs and the directory first).
///
/// The syncs run after the WAL lock is released, so writers keep appending meanwhile: the
/// older WALs' too, which may hold a memtable's worth of unsynced bytes each (a server's
/// once-a-second sync after a memtable switch). The lock is held only to hand the current
/// WAL's bytes over and take its number and syncer: every write before the call is in that
/// WAL or in a retired one numbered below it. A file that cannot be synced apart from its
/// writer (`WritableFile::syncer`) is synced under the lock, after the older WALs.
pub(crate) fn flush_wal(inner: &DbInner, sync: bool) -> Result<()> {
    if let Some(e) = inner.bg_error() {
        return Err(e);
    }
    let mut wal = inner.wal.lock();
    let number = wal.number;
    let mut syncer = None;
    let staged = wal.writer.flush().and_then(|()| {
        if !sync {
            return Ok(());
        }
        syncer = wal.writer.syncer()?;
        if syncer.is_some() {
            return Ok(());
        }
        sync_retired_wals(inner, None)?;
        sync_wal_dir(inner)?;
        let _timer = StopWatch::start(inner.stats.user_statistics(), Histogram::WalFileSyncMicros);
        wal.writer.sync()
    });
    drop(wal);
    let r = staged.and_then(|()| {
        let Some(s) = syncer else { return Ok(()) };
        // These two set the background error themselves when they fail.
        sync_retired_wals(inner, Some(number))?;
        sync_wal_dir_through(inner, number.0)?;
        let _timer = StopWatch::start(inner.stats.user_statistics(), Histogram::WalFileSyncMicros);
        s.sync()
    });
    if let Err(e) = &r {
        let mut st = inner.state.lock();
        inner.set_bg_error(&mut st, e);
    } else if sync {
        inner.stats.write.wal_syncs.fetch_add(1, Ordering::Relaxed);
        inner.stats.tick(StatTicker::WalFileSynced, 1);
    }
    r
}

/// Opens the writer of WAL `number` in `wal_dir`: in the file of WAL `reuse` when given (an
/// obsolete WAL written in recyclable fragments, renamed and overwritten in place), else in a
/// new file, zero-filled ahead of its records (`Options::wal_zeros_ahead`, where the file
/// system can, unless `zeros` is false: the WAL before had appends too large for them,
/// `LogWriter::appends_large`) or with space reserved for a memtable's worth of writes. With
/// recycling on, the
/// WAL is written in recyclable fragments. The caller writes the header, which says whether
/// zeros are ahead (`LogWriter::zeros_ahead`).
pub(crate) fn open_wal_writer(
    fs: &dyn crate::env::FileSystem,
    opts: &crate::options::Options,
    wal_dir: &std::path::Path,
    number: FileNumber,
    reuse: Option<FileNumber>,
    zeros: bool,
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
        if opts.wal_zeros_ahead && zeros && writer.write_zeros_ahead() {
            if opts.wal_mmap_writes {
                writer.map_zeros_ahead();
            }
        } else {
            // A memtable's worth of records, with room for their framing.
            writer.preallocate(opts.write_buffer_size as u64 / 10 * 11);
        }
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
    sync_wal_dir_through(inner, inner.newest_wal.load(Ordering::Acquire))
}

/// [`sync_wal_dir`] when the entries of the WALs up to number `need` are not known durable
/// (the flush job needs only the WAL its edit names).
pub(crate) fn sync_wal_dir_through(inner: &DbInner, need: u64) -> Result<()> {
    if inner.wal_dir_synced_through.load(Ordering::Acquire) >= need {
        return Ok(());
    }
    let newest = inner.newest_wal.load(Ordering::Acquire);
    crate::kill_point!("wal.sync_dir");
    if let Err(e) = inner.fs.sync_dir(&inner.wal_dir) {
        let mut st = inner.state.lock();
        inner.set_bg_error(&mut st, &e);
        return Err(e);
    }
    inner.wal_dir_synced_through.fetch_max(newest, Ordering::AcqRel);
    Ok(())
}
