//! GetMergeOperands: a key's merge operands as stored, without merging them (RocksDB's
//! `DB::GetMergeOperands`).
//!
//! The lookup is a point read's (`db/read.rs`, the same sources newest first, snapshots,
//! range deletions, the row cache and blob files) that stacks every operand and stops where
//! a read would merge: at the key's value (which becomes the first operand), at a deletion
//! (nothing older counts), or past the last source. A key whose newest entry is a value
//! gives that value alone; a deleted or never-written key gives `None`. No merge operator is
//! needed, and none is called.
//!
//! Bounds, as RocksDB's `GetMergeOperandsOptions`: a key with more operands than
//! `expected_max_number_of_operands` (when non-zero) fails with `Incomplete` naming how many
//! it has, and `continue_cb`, asked of each merge operand newest first, can end the lookup
//! early: the operands seen up to and including the one it refused are returned.
//!
//! A family with a TTL stores each operand and value with its write time: that suffix is
//! taken off each. In a family with user-defined timestamps the read is at the read options'
//! timestamp, through the family's cursor (`db/ts_iter.rs`, `TsCursor::operands_of`): the
//! operands of the key's version there and of the versions under it, down to a value, as a
//! read merges them.

use super::read::{search, GetContext};
use super::{Cfd, DbInner};
use crate::error::{Error, Result};
use crate::options::ReadOptions;
use crate::statistics::{Histogram, StopWatch};

/// Asked of each merge operand, newest first: `false` ends the lookup (RocksDB's
/// `continue_cb`).
pub type OperandCallback<'a> = &'a dyn Fn(&[u8]) -> bool;

/// How [`crate::Db::get_merge_operands_cf_opt`] bounds its answer (RocksDB's
/// `GetMergeOperandsOptions`).
#[derive(Clone, Copy, Default)]
pub struct GetMergeOperandsOptions<'a> {
    /// The most operands the caller takes: a key with more fails with `Incomplete`, whose
    /// message names how many it has. 0 (the default): any number.
    pub expected_max_number_of_operands: usize,
    /// Asked of each merge operand, newest first (not of a base value); `false` ends the
    /// lookup with the operands seen, that one included.
    pub continue_cb: Option<OperandCallback<'a>>,
}

impl std::fmt::Debug for GetMergeOperandsOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GetMergeOperandsOptions")
            .field("expected_max_number_of_operands", &self.expected_max_number_of_operands)
            .field("continue_cb", &self.continue_cb.is_some())
            .finish()
    }
}

/// The operands of `key` in `cfd` (module doc), oldest first.
pub(crate) fn get_merge_operands(
    inner: &DbInner,
    cfd: &Cfd,
    key: &[u8],
    opts: &ReadOptions,
    bounds: &GetMergeOperandsOptions<'_>,
) -> Result<Option<Vec<Vec<u8>>>> {
    let _timer = StopWatch::start(inner.stats.user_statistics(), Histogram::DbGet);
    let found = if cfd.opts.timestamps.is_some() {
        // A point read: bounds and a history's start do not apply.
        let ro = ReadOptions {
            iterate_lower_bound: None,
            iterate_upper_bound: None,
            iter_start_ts: None,
            ..opts.clone()
        };
        let source = super::iter::IterSource::capture(inner, cfd, &ro)?;
        source.ts_cursor()?.operands_of(key, bounds.continue_cb)?
    } else {
        opts.read_timestamp(None)?;
        let sv = cfd.current_super_version();
        let seq = super::snapshot_reads::read_sequence(inner, cfd, opts)?;
        let mut ctx = GetContext::new(key, cfd.opts.merge_operator.as_deref());
        let blobs = crate::blob::BlobReads { source: &*inner.blobs, fill: opts.fill_cache };
        ctx.blobs = Some(&blobs);
        ctx.collect = true;
        ctx.continue_cb = bounds.continue_cb;
        search(inner, &sv, key, seq, opts, &mut ctx)?;
        ctx.finish_operands()?
    };
    let Some(mut operands) = found else { return Ok(None) };
    let max = bounds.expected_max_number_of_operands;
    if max > 0 && operands.len() > max {
        return Err(Error::Incomplete(format!(
            "get_merge_operands: key {:?} has {} operands, more than the {max} expected \
             (expected_max_number_of_operands)",
            String::from_utf8_lossy(key),
            operands.len()
        )));
    }
    if cfd.value_suffix > 0 {
        for o in &mut operands {
            let n = super::ttl::user_len(key, o.len())?;
            o.truncate(n);
        }
    }
    Ok(Some(operands))
}
