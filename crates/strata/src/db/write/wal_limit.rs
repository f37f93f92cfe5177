//! `max_total_wal_size`: when the WALs still kept outgrow it, the families whose unflushed
//! writes keep the oldest of them are flushed (their active memtables switched if those
//! started in it), as RocksDB's `SwitchWAL`. A WAL is deleted only once every family's
//! writes in it are in tables, so without this a family written rarely keeps every WAL since
//! its last write, and the WAL directory grows with the other families' traffic.
//!
//! The WALs counted are those this process closed (`WalState::closed`, each with its size at
//! the switch; dropped once no family needs them) and the current one; WALs recovered at open
//! are not. The check runs after each memtable switch, the only time a WAL is added. Called
//! under the WAL lock.

use std::sync::Arc;

use super::switch::switch_memtable;
use crate::db::cf::{min_log_to_keep, CfState};
use crate::db::{Cfd, DbInner, WalState};
use crate::error::Result;

/// The bytes of WALs kept at most: the option, or four times the memtable memory the
/// families (`cfs`) may hold (RocksDB's default).
fn limit<'a>(inner: &DbInner, cfs: impl Iterator<Item = &'a CfState>) -> u64 {
    match inner.opts.max_total_wal_size {
        0 => cfs
            .map(|c| {
                let o = c.cfd.live_opts();
                (o.write_buffer_size as u64).saturating_mul(o.max_write_buffer_number as u64)
            })
            .sum::<u64>()
            .saturating_mul(4),
        n => n,
    }
}

/// Flushes the families that keep the oldest WAL when the WALs kept exceed the limit.
pub(super) fn flush_for_wal_limit(inner: &DbInner, wal: &mut WalState) -> Result<()> {
    let holders: Vec<(Arc<Cfd>, bool)> = {
        let st = inner.state.lock();
        let keep = min_log_to_keep(&st.cfs, None);
        while wal.closed.front().is_some_and(|(n, _)| *n < keep) {
            wal.closed.pop_front();
        }
        let Some(&(oldest, _)) = wal.closed.front() else { return Ok(()) };
        let total: u64 = wal.closed.iter().map(|(_, b)| b).sum::<u64>() + wal.writer.file_size();
        if total <= limit(inner, st.cfs.values()) {
            return Ok(());
        }
        st.cfs
            .values()
            .filter(|c| c.oldest_unflushed_log().is_some_and(|l| l <= oldest))
            .map(|c| (c.cfd.clone(), c.mem_log <= oldest && !c.mem.is_empty()))
            .collect()
    };
    for (cfd, switch) in holders {
        if switch {
            switch_memtable(inner, wal, &cfd)?;
        }
        crate::db::flush::request_flush(inner, &cfd);
    }
    Ok(())
}
