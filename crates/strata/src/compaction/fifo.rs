//! FIFO compaction picking: a pure function from a version, the files being compacted, the
//! options and the current time to a plan. Files are kept in L0 (flushes write there and
//! nothing moves them down); the DB is a log whose oldest files are dropped. In order:
//!
//! - **TTL** (`ttl_secs` > 0): the oldest files whose newest entry is at least `ttl_secs`
//!   old are deleted, oldest first, up to the first file that is not expired, has no known
//!   time, or is busy.
//! - **Size**: while all table files hold more than `max_table_files_size` bytes, the oldest
//!   files are deleted until the rest fit (a busy oldest file waits).
//! - **Intra-L0** (`allow_compaction`): the longest span of consecutive free L0 files from
//!   the newest free one, each at most `write_buffer_size` bytes (so a merged file is not
//!   merged again) and together at most `max_compaction_bytes`, is merged into one L0 file
//!   once it has `level0_file_num_compaction_trigger` files. Each entry is rewritten at most
//!   once; reads probe fewer files.
//!
//! "Oldest" is L0's order (newest first, so its tail is oldest); files in levels >= 1 (a DB
//! that used another style before) are older than every L0 file, the deepest level oldest, and
//! are deleted a level at a time. A deletion is a plan with `deletion` set: its inputs leave
//! the version, nothing is written.

use std::collections::HashSet;
use std::sync::Arc;

use super::picker::{CompactionPlan, PickerOptions};
use crate::types::FileNumber;
use crate::version::levels::{TableFile, Version};

/// Every file from the oldest to the newest, with its level.
fn oldest_first(v: &Version) -> Vec<(usize, &Arc<TableFile>)> {
    let mut out = Vec::new();
    for level in (1..v.levels.len()).rev() {
        out.extend(v.levels[level].iter().map(|f| (level, f)));
    }
    out.extend(v.levels[0].iter().rev().map(|f| (0, f)));
    out
}

/// The FIFO compaction to run next, if any (`now_secs`: seconds since the Unix epoch).
pub(crate) fn pick_fifo(
    v: &Version,
    o: &PickerOptions,
    busy: &HashSet<FileNumber>,
    now_secs: u64,
) -> Option<CompactionPlan> {
    let files = oldest_first(v);
    if o.fifo.ttl_secs > 0 {
        let expired = |f: &TableFile| {
            f.data_time != 0 && f.data_time.saturating_add(o.fifo.ttl_secs) <= now_secs
        };
        let doomed: Vec<(usize, &Arc<TableFile>)> = files
            .iter()
            .copied()
            .take_while(|(_, f)| expired(f) && !busy.contains(&f.number))
            .collect();
        if let Some(p) = deletion(&doomed, "FIFO TTL") {
            return Some(p);
        }
    }
    let total: u64 = files.iter().map(|(_, f)| f.file_size).sum();
    if total > o.fifo.max_table_files_size {
        let mut left = total;
        let mut doomed = Vec::new();
        for &(level, f) in &files {
            if left <= o.fifo.max_table_files_size || busy.contains(&f.number) {
                break;
            }
            left -= f.file_size;
            doomed.push((level, f));
        }
        return deletion(&doomed, "FIFO size");
    }
    if o.fifo.allow_compaction {
        return intra_l0(v, o, busy);
    }
    None
}

/// Deletes the files of the first (oldest) level among `doomed`.
fn deletion(doomed: &[(usize, &Arc<TableFile>)], reason: &'static str) -> Option<CompactionPlan> {
    let &(level, _) = doomed.first()?;
    let inputs: Vec<Arc<TableFile>> =
        doomed.iter().filter(|(l, _)| *l == level).map(|(_, f)| (*f).clone()).collect();
    Some(CompactionPlan::deletion(level, inputs, reason))
}

fn intra_l0(v: &Version, o: &PickerOptions, busy: &HashSet<FileNumber>) -> Option<CompactionPlan> {
    let l0 = &v.levels[0];
    let first = l0.iter().position(|f| !busy.contains(&f.number))?;
    let mut bytes = 0u64;
    let mut span = Vec::new();
    for f in &l0[first..] {
        if busy.contains(&f.number)
            || f.file_size > o.write_buffer_size
            || bytes.saturating_add(f.file_size) > o.max_compaction_bytes
        {
            break;
        }
        bytes += f.file_size;
        span.push(f.clone());
    }
    if span.len() < o.level0_file_num_compaction_trigger.max(2) {
        return None;
    }
    Some(CompactionPlan::l0_merge(span, "FIFO intra-L0"))
}

#[cfg(test)]
mod tests;
