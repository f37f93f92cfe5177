//! Running one compaction plan: merge the inputs, keep what [`super::stream`] keeps, cut output
//! tables where [`super::cut`] says (never inside one user key's versions), split large jobs into key-range
//! subcompactions running on their own threads.

use std::sync::Arc;
use std::time::Instant;

use super::below::Below;
use super::cut::OutputCutter;
use super::picker::CompactionPlan;
use super::stream::{run_stream, StreamContext, StreamFilter, StreamStats};
use crate::blob::{BlobFlow, BlobOutput, BlobWriteConfig};
use crate::compaction_filter::{filter_for, CompactionFilterContext, CompactionFilterFactory};
use crate::comparator::KeyOrder;
use crate::env::FileSystem;
use crate::error::Result;
use crate::filename::{blob_path, table_path};
use crate::iterator::merging::MergingIterator;
use crate::iterator::{BlobFetch, InternalIterator};
use crate::key::{make_internal_key, user_key};
use crate::merge_operator::MergeOperator;
use crate::range_del::{sort_tombstones, FragmentedTombstones, RangeTombstone};
use crate::sstable::table_cache::TableCache;
use crate::sstable::{ReadBlockOptions, TableBuilder, TableOptions};
use crate::stats::LevelStats;
use crate::types::{FileNumber, SeqNo, ValueType};
use crate::util::compare::equal_bytes;
use crate::version::edit::{FileMetaData, VersionEdit};
use crate::version::level_iter::LevelIterator;
use crate::version::levels::Version;

/// Everything a job needs from the DB.
pub(crate) struct JobEnv<'a> {
    pub fs: &'a dyn FileSystem,
    /// The directory the outputs are written to: the family's table path
    /// `plan.output_path_id` (`compaction::output_path`).
    pub dir: &'a std::path::Path,
    pub tables: &'a Arc<TableCache>,
    pub table_options: &'a TableOptions,
    pub merge_operator: Option<&'a dyn MergeOperator>,
    pub snapshots: &'a [SeqNo],
    /// The version the plan was picked from (to tell whether a key exists below the output).
    pub version: &'a Version,
    pub max_subcompactions: usize,
    pub new_file_number: &'a (dyn Fn() -> FileNumber + Sync),
    /// Set when the DB is closing: the job stops at the next output file (or within
    /// [`CANCEL_CHECK_EVERY`] entries), removes what it wrote and fails with
    /// `ShutdownInProgress`; its inputs stay live, so nothing is lost.
    pub cancel: &'a std::sync::atomic::AtomicBool,
    /// Each input table is read this many bytes at a time at least (0: automatic readahead;
    /// `Options::compaction_readahead_size`).
    pub readahead_size: usize,
    /// The family's compaction filter factory and what it is told of this job; each
    /// subcompaction gets a filter of its own.
    pub filter: Option<(&'a dyn CompactionFilterFactory, CompactionFilterContext)>,
    /// The family's keys end in user-defined timestamps (`comparator::UserTimestamps`): each
    /// version is a key of its own to the job, and a deletion hides the older ones only from
    /// reads at or above its timestamp, so no entry counts as having nothing below it and no
    /// deletion is dropped.
    pub versioned_keys: bool,
    /// With `versioned_keys`, the family's `full_history_ts_low` when set: versions below it
    /// that no read can reach are dropped (`stream::CollapsedHistory`).
    pub history: Option<super::stream::CollapsedHistory<'a>>,
    /// How outputs write blob files (`crate::blob`), and where (the DB directory).
    pub blob_config: BlobWriteConfig,
    pub blob_dir: &'a std::path::Path,
    /// Reads values kept in blob files (filter, merges, garbage collection).
    pub blobs: Option<&'a dyn BlobFetch>,
}

/// Entries a job writes between two looks at the cancel flag.
const CANCEL_CHECK_EVERY: u32 = 1024;

/// The outcome of a job: the edit to apply and its statistics.
pub(crate) struct JobResult {
    pub edit: VersionEdit,
    pub stats: LevelStats,
}

/// Runs `plan`. On error, output files already written are removed.
pub(crate) fn run_job(env: &JobEnv<'_>, plan: &CompactionPlan) -> Result<JobResult> {
    let start = Instant::now();
    let mut edit = VersionEdit::default();
    for (level, f) in plan.all_inputs() {
        edit.deleted_files.push((level, f.number));
    }
    let mut stats = LevelStats { count: 1, ..LevelStats::default() };
    if plan.trivial_move || plan.deletion {
        if plan.trivial_move {
            for (_, f) in plan.all_inputs() {
                edit.new_files.push((plan.output_level, (**f).clone()));
                stats.bytes_moved += f.file_size;
            }
        }
        stats.micros = start.elapsed().as_micros() as u64;
        return Ok(JobResult { edit, stats });
    }
    for f in plan.inputs.iter().chain(plan.middle_inputs.iter().flat_map(|(_, fs)| fs)) {
        stats.bytes_read_non_output += f.file_size;
    }
    for f in &plan.output_inputs {
        stats.bytes_read_output += f.file_size;
    }
    let ranges = split_ranges(plan, env.max_subcompactions, env.version.order());
    let results: Vec<Result<RangeOutput>> = if ranges.len() == 1 {
        vec![run_range(env, plan, &ranges[0])]
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> =
                ranges.iter().map(|r| scope.spawn(move || run_range(env, plan, r))).collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(crate::Error::Background("a subcompaction thread panicked".into()))
                    })
                })
                .collect()
        })
    };
    let mut outputs = Vec::new();
    let mut blob_files = Vec::new();
    let (mut blob_in, mut blob_out) = (BlobFlow::default(), BlobFlow::default());
    let mut first_error = None;
    for r in results {
        match r {
            Ok(o) => {
                let s = o.stats;
                stats.input_records += s.input_entries;
                stats.dropped_records += s.dropped;
                stats.cpu_micros += s.cpu_micros;
                outputs.extend(o.files);
                blob_files.extend(o.blob_files);
                blob_in.merge(&o.blob_in);
                blob_out.merge(&o.blob_out);
                stats.bytes_read_blob += o.blob_read;
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_error {
        for f in &outputs {
            let _ = env.fs.remove(&table_path(env.dir, f.number));
        }
        for b in &blob_files {
            let _ = env.fs.remove(&blob_path(env.blob_dir, b.number));
        }
        return Err(e);
    }
    for b in &blob_files {
        stats.bytes_written_blob += b.bytes;
    }
    edit.blob_garbage = blob_in.garbage(&blob_out);
    edit.blob_files_added = blob_files;
    // An output holds data as new as its newest input's (FIFO's TTL reads this).
    let data_time = plan.all_inputs().map(|(_, f)| f.data_time).max().unwrap_or(0);
    for mut f in outputs {
        f.data_time = data_time;
        f.path_id = plan.output_path_id;
        stats.bytes_written += f.file_size;
        edit.new_files.push((plan.output_level, f));
    }
    stats.micros = start.elapsed().as_micros() as u64;
    Ok(JobResult { edit, stats })
}

/// A key range of a subcompaction: user keys in [start, end).
struct KeyRange {
    start: Option<Vec<u8>>,
    end: Option<Vec<u8>>,
}

/// Splits the plan's key space at input-file boundaries into at most `n` ranges of similar
/// input size.
fn split_ranges(plan: &CompactionPlan, n: usize, order: &KeyOrder) -> Vec<KeyRange> {
    let whole = vec![KeyRange { start: None, end: None }];
    let total = plan.input_bytes();
    // An L0 output (universal) is one sorted run: one file.
    if n <= 1 || total < (32 << 20) || plan.output_level == 0 {
        return whole;
    }
    let mut bounds: Vec<(Vec<u8>, u64)> =
        plan.all_inputs().map(|(_, f)| (user_key(&f.smallest).to_vec(), f.file_size)).collect();
    bounds.sort_by(|a, b| order.compare(&a.0, &b.0).then(a.1.cmp(&b.1)));
    let per = total / n as u64;
    let mut splits: Vec<Vec<u8>> = Vec::new();
    let mut acc = 0u64;
    for (k, size) in bounds {
        if acc >= per * (splits.len() as u64 + 1) && splits.last().is_none_or(|l| order.lt(l, &k)) {
            splits.push(k);
            if splits.len() + 1 == n {
                break;
            }
        }
        acc += size;
    }
    if splits.is_empty() {
        return whole;
    }
    let mut out = Vec::new();
    let mut prev: Option<Vec<u8>> = None;
    for s in splits {
        out.push(KeyRange { start: prev.take(), end: Some(s.clone()) });
        prev = Some(s);
    }
    out.push(KeyRange { start: prev, end: None });
    out
}

/// Full readahead windows a job's inputs share ([`input_readahead`]).
const READAHEAD_WINDOWS: usize = 4;
/// The least window an input gets when many share them.
const MIN_SHARED_READAHEAD: usize = 256 << 10;

/// The readahead window of each of `inputs` tables read side by side, given the configured
/// window `size` (0: automatic): `size` for up to [`READAHEAD_WINDOWS`] inputs, else their
/// share of that many windows, at least [`MIN_SHARED_READAHEAD`] (and at most `size`). Under
/// direct I/O each window is a buffer the job holds, so this bounds the job's memory (an L0
/// compaction reads every L0 input at once).
fn input_readahead(size: usize, inputs: usize) -> usize {
    if inputs <= READAHEAD_WINDOWS {
        return size;
    }
    (size * READAHEAD_WINDOWS / inputs).max(MIN_SHARED_READAHEAD).min(size)
}

/// The merged input of the plan (fresh iterators: each subcompaction has its own).
fn input_iterator(env: &JobEnv<'_>, plan: &CompactionPlan) -> Result<MergingIterator> {
    // Read side by side: every L0 input, and one table of each other level.
    let l0 = if plan.start_level == 0 { plan.inputs.len() } else { 1 };
    let side_by_side = l0 + plan.middle_inputs.len() + usize::from(!plan.output_inputs.is_empty());
    let ro = ReadBlockOptions {
        verify_checksums: true,
        fill_cache: false,
        readahead_size: input_readahead(env.readahead_size, side_by_side),
        cache_only: false,
    };
    let order = env.version.order();
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    if plan.start_level == 0 {
        for f in &plan.inputs {
            children.push(Box::new(env.tables.reader(f.number, &f.pinned)?.iter(ro)));
        }
    } else {
        let files = plan.inputs.clone();
        children.push(Box::new(LevelIterator::new(files, env.tables.clone(), ro, order.clone())));
    }
    for (_, files) in &plan.middle_inputs {
        let files = files.clone();
        children.push(Box::new(LevelIterator::new(files, env.tables.clone(), ro, order.clone())));
    }
    if !plan.output_inputs.is_empty() {
        children.push(Box::new(LevelIterator::new(
            plan.output_inputs.clone(),
            env.tables.clone(),
            ro,
            order.clone(),
        )));
    }
    Ok(MergingIterator::new(children, order.clone()))
}

/// The range tombstones of the plan's input tables.
fn input_range_tombstones(env: &JobEnv<'_>, plan: &CompactionPlan) -> Result<Vec<RangeTombstone>> {
    let mut out = Vec::new();
    for (_, f) in plan.all_inputs() {
        out.extend_from_slice(env.tables.reader(f.number, &f.pinned)?.range_tombstones());
    }
    Ok(out)
}

/// What one subcompaction wrote and counted.
struct RangeOutput {
    files: Vec<FileMetaData>,
    stats: StreamStats,
    blob_files: Vec<crate::version::edit::BlobFileAddition>,
    /// Blob indexes read and written, by blob file.
    blob_in: BlobFlow,
    blob_out: BlobFlow,
    /// Bytes garbage collection read from blob files.
    blob_read: u64,
}

fn run_range(env: &JobEnv<'_>, plan: &CompactionPlan, range: &KeyRange) -> Result<RangeOutput> {
    let cpu_start = crate::util::cpu::thread_cpu_micros();
    let order = env.version.order();
    let tombstones = input_range_tombstones(env, plan)?;
    let fragmented = (!tombstones.is_empty())
        .then(|| FragmentedTombstones::from_tombstones(&tombstones, 0, order));
    // A tombstone no snapshot predates deletes, at the bottom, only entries of its own stripe,
    // all dropped here: it has nothing left to hide.
    let oldest_snapshot = env.snapshots.first().copied();
    let mut kept: Vec<RangeTombstone> = tombstones
        .iter()
        .filter(|t| {
            env.versioned_keys || !(plan.bottommost && oldest_snapshot.is_none_or(|s| s >= t.seq))
        })
        .filter_map(|t| t.clipped(range.start.as_deref(), range.end.as_deref(), order))
        .collect();
    sort_tombstones(&mut kept, order);
    let mut merged = input_iterator(env, plan)?;
    let mut input = Bounded {
        inner: &mut merged,
        start: range.start.as_deref(),
        end: range.end.as_deref(),
        order,
        blob_in: (!env.version.blobs().is_empty()).then(BlobFlow::default),
    };
    let bottommost = plan.bottommost;
    let below = Below::new(plan, env.version);
    let versioned = env.versioned_keys;
    let is_bottom = |ukey: &[u8]| !versioned && (bottommost || below.nothing_below(ukey));
    let ctx = StreamContext {
        snapshots: env.snapshots,
        merge_operator: env.merge_operator,
        is_bottom: &is_bottom,
        range_dels: fragmented.as_ref(),
        zero_seqnos: plan.output_level > 0,
        history: env.history,
        blobs: env.blobs,
    };
    let mut filter = env.filter.as_ref().and_then(|(f, c)| filter_for(Some(*f), c));
    let sf =
        filter.as_deref_mut().map(|f| StreamFilter { filter: f, level: plan.output_level as u32 });
    let mut out = OutputWriter::new(env, plan, kept, range);
    let result = run_stream(&mut input, &ctx, sf, |k, v| out.add(k, v));
    let blob_in = input.blob_in.take().unwrap_or_default();
    match result.and_then(|s| out.finish().map(|files| (files, s))) {
        Ok(((files, blob_files), mut stats)) => {
            stats.cpu_micros = crate::util::cpu::thread_cpu_micros().saturating_sub(cpu_start);
            let blob_out = std::mem::take(&mut out.blobs.out_flow);
            let blob_read = out.blobs.relocated_bytes;
            Ok(RangeOutput { files, stats, blob_files, blob_in, blob_out, blob_read })
        }
        Err(e) => {
            out.abandon();
            Err(e)
        }
    }
}

/// Writes the compaction output, cutting files.
struct OutputWriter<'a> {
    env: &'a JobEnv<'a>,
    builder: Option<(TableBuilder, FileNumber)>,
    done: Vec<FileMetaData>,
    last_user_key: Vec<u8>,
    cutter: OutputCutter<'a>,
    /// Range tombstones to write, clipped to the subcompaction's range; each output gets
    /// them clipped to its own range [lower, first user key of the next output).
    tombstones: Vec<RangeTombstone>,
    lower: Option<Vec<u8>>,
    range_end: Option<Vec<u8>>,
    /// Entries added since the cancel flag was last read.
    since_cancel_check: u32,
    /// Moves values into blob files and keeps account of the tables' references.
    blobs: BlobOutput<'a>,
    /// Whether entries go through `blobs`: blob files are on, or the input may hold blob
    /// indexes (its version has blob files). Otherwise every entry goes to the table as it is.
    route_blobs: bool,
}

impl<'a> OutputWriter<'a> {
    fn new(
        env: &'a JobEnv<'a>,
        plan: &'a CompactionPlan,
        tombstones: Vec<RangeTombstone>,
        range: &KeyRange,
    ) -> Self {
        OutputWriter {
            env,
            tombstones,
            lower: range.start.clone(),
            range_end: range.end.clone(),
            builder: None,
            done: Vec::new(),
            last_user_key: Vec::new(),
            cutter: OutputCutter::new(
                &plan.grandparents,
                plan.target_file_size,
                plan.max_compaction_bytes,
                env.version.order(),
            ),
            since_cancel_check: 0,
            route_blobs: env.blob_config.min_blob_size.is_some() || !env.version.blobs().is_empty(),
            blobs: BlobOutput::new(
                env.blob_config.clone(),
                env.fs,
                env.blob_dir,
                env.new_file_number,
                env.blobs,
            ),
        }
    }

    fn check_cancel(&mut self) -> Result<()> {
        self.since_cancel_check = 0;
        if self.env.cancel.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(crate::Error::ShutdownInProgress);
        }
        Ok(())
    }

    fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        self.since_cancel_check += 1;
        if self.since_cancel_check >= CANCEL_CHECK_EVERY {
            self.check_cancel()?;
        }
        let ukey = user_key(ikey);
        let new_user_key = !equal_bytes(ukey, &self.last_user_key);
        if new_user_key {
            let size = self.builder.as_ref().map(|(b, _)| b.estimated_file_size());
            if self.cutter.cut_before(ukey, size) {
                self.finish_current(Some(ukey))?;
            }
        }
        if self.builder.is_none() {
            self.open_output()?;
        }
        if let Some((b, _)) = &mut self.builder {
            if self.route_blobs {
                let (k, v) = self.blobs.route(ikey, value)?;
                b.add(k, v)?;
            } else {
                b.add(ikey, value)?;
            }
        }
        if new_user_key {
            self.last_user_key.clear();
            self.last_user_key.extend_from_slice(ukey);
        }
        Ok(())
    }

    fn open_output(&mut self) -> Result<()> {
        self.check_cancel()?;
        let number = (self.env.new_file_number)();
        let path = table_path(self.env.dir, number);
        let file = self.env.fs.create(&path)?;
        self.builder = Some((TableBuilder::new(self.env.table_options, file, path), number));
        Ok(())
    }

    /// Finishes the current output, giving it the tombstones of [lower, upper); the next
    /// output starts at `upper`.
    fn finish_current(&mut self, upper: Option<&[u8]>) -> Result<()> {
        let order = self.env.version.order();
        if let Some((b, _)) = &mut self.builder {
            let lower = self.lower.as_deref();
            for t in &self.tombstones {
                if upper.is_some_and(|u| !order.lt(&t.start, u)) {
                    break; // sorted by start
                }
                if let Some(c) = t.clipped(lower, upper, order) {
                    b.add_range_tombstone(&c);
                }
            }
        }
        self.lower = upper.map(<[u8]>::to_vec);
        if let Some((b, number)) = self.builder.take() {
            let mut meta = FileMetaData::from_summary(number, b.finish()?);
            meta.blob_refs = self.blobs.take_table_refs();
            self.done.push(meta);
        }
        Ok(())
    }

    /// Finishes the last output; returns the tables and the blob files written.
    fn finish(
        &mut self,
    ) -> Result<(Vec<FileMetaData>, Vec<crate::version::edit::BlobFileAddition>)> {
        let lower = self.lower.as_deref();
        let order = self.env.version.order();
        if self.builder.is_none()
            && self.tombstones.iter().any(|t| t.clipped(lower, None, order).is_some())
        {
            // Only tombstones are left (or were ever there): they still need a file.
            self.open_output()?;
        }
        let end = self.range_end.take();
        self.finish_current(end.as_deref())?;
        // Blob files first: a table is durable only with the values it refers to.
        let blob_files = self.blobs.finish()?;
        if !self.done.is_empty() {
            crate::kill_point!("compaction.sync_dir");
            self.env.fs.sync_dir(self.env.dir)?;
        }
        Ok((std::mem::take(&mut self.done), blob_files))
    }

    /// Removes every file this writer created.
    fn abandon(&mut self) {
        if let Some((_, n)) = self.builder.take() {
            let _ = self.env.fs.remove(&table_path(self.env.dir, n));
        }
        for f in self.done.drain(..) {
            let _ = self.env.fs.remove(&table_path(self.env.dir, f.number));
        }
        self.blobs.abandon();
    }
}

/// Restricts an iterator to user keys in [start, end) for forward iteration from the start.
struct Bounded<'a> {
    inner: &'a mut dyn InternalIterator,
    start: Option<&'a [u8]>,
    end: Option<&'a [u8]>,
    order: &'a KeyOrder,
    /// Counts the blob indexes read (when the input version has blob files).
    blob_in: Option<BlobFlow>,
}

impl Bounded<'_> {
    /// Counts the current entry if it is a blob index.
    fn count(&mut self) {
        if self.blob_in.is_none() || !self.valid() {
            return;
        }
        let (Some(flow), k) = (&mut self.blob_in, self.inner.key()) else { return };
        if crate::key::parse_internal_key(k).is_some_and(|p| p.value_type == ValueType::BlobIndex) {
            flow.count(user_key(k), self.inner.value());
        }
    }
}

impl InternalIterator for Bounded<'_> {
    fn valid(&self) -> bool {
        self.inner.valid() && self.end.is_none_or(|e| self.order.lt(user_key(self.inner.key()), e))
    }
    fn seek_to_first(&mut self) {
        match self.start {
            Some(s) => self.inner.seek(&make_internal_key(s, SeqNo::MAX, ValueType::FOR_SEEK)),
            None => self.inner.seek_to_first(),
        }
        self.count();
    }
    fn seek_to_last(&mut self) {
        unreachable_direction();
    }
    fn seek(&mut self, target: &[u8]) {
        self.inner.seek(target);
    }
    fn seek_for_prev(&mut self, _target: &[u8]) {
        unreachable_direction();
    }
    fn next(&mut self) {
        self.inner.next();
        self.count();
    }
    fn prev(&mut self) {
        unreachable_direction();
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
    fn status(&self) -> Result<()> {
        self.inner.status()
    }
}

/// Compaction reads forward only.
fn unreachable_direction() {
    debug_assert!(false, "compaction input is read forward only");
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

    use super::*;
    use crate::env::MemFs;
    use crate::key::is_exclusive_bound;
    use crate::range_del::RangeTombstone;
    use crate::version::levels::TableFile;

    #[test]
    fn readahead_windows_are_shared_beyond_four_inputs() {
        let mib = 1 << 20;
        for n in 1..=4 {
            assert_eq!(input_readahead(2 * mib, n), 2 * mib, "{n} inputs");
        }
        assert_eq!(input_readahead(2 * mib, 8), mib);
        assert_eq!(input_readahead(2 * mib, 20), 8 * mib / 20);
        assert_eq!(input_readahead(2 * mib, 64), MIN_SHARED_READAHEAD);
        assert_eq!(input_readahead(128 << 10, 20), 128 << 10, "never above the configured size");
        assert_eq!(input_readahead(0, 20), 0, "automatic readahead stays automatic");
        for n in 5..100 {
            let total = n * input_readahead(2 * mib, n);
            assert!(total <= (8 * mib).max(n * MIN_SHARED_READAHEAD), "{n} inputs hold {total}");
        }
    }

    /// Runs `f` with a job's surroundings over `fs`'s `/db`: `files` at their levels make the
    /// version, the table cache reads them, and new tables are numbered from 100.
    fn with_env<R>(
        fs: &MemFs,
        files: &[(usize, &Arc<TableFile>)],
        snapshots: &[SeqNo],
        max_subcompactions: usize,
        f: impl FnOnce(&JobEnv<'_>) -> R,
    ) -> R {
        let tables =
            Arc::new(TableCache::new(Arc::new(fs.clone()), PathBuf::from("/db"), 16, None));
        let mut base = VersionEdit::default();
        for (level, file) in files {
            base.new_files.push((*level, (***file).clone()));
        }
        let version = Version::new(4, crate::comparator::KeyOrder::Bytewise).apply(&base).unwrap();
        let next = AtomicU64::new(100);
        let new_file_number = || FileNumber(next.fetch_add(1, AtomicOrdering::Relaxed));
        let env = JobEnv {
            fs,
            dir: std::path::Path::new("/db"),
            tables: &tables,
            table_options: &TableOptions::default(),
            merge_operator: None,
            snapshots,
            version: &version,
            max_subcompactions,
            new_file_number: &new_file_number,
            cancel: &std::sync::atomic::AtomicBool::new(false),
            readahead_size: 0,
            filter: None,
            versioned_keys: false,
            history: None,
            blob_config: BlobWriteConfig {
                min_blob_size: None,
                file_size: 1 << 20,
                compression: crate::sstable::CompressionType::None,
                zstd_level: 3,
                column_family: 0,
                relocate_below: None,
                statistics: None,
                file_checksum: false,
            },
            blob_dir: std::path::Path::new("/db"),
            blobs: None,
        };
        f(&env)
    }

    fn write_table(
        fs: &MemFs,
        number: u64,
        points: &[(&str, u64)],
        tombstones: &[RangeTombstone],
    ) -> Arc<TableFile> {
        let path = table_path(std::path::Path::new("/db"), FileNumber(number));
        let mut b = TableBuilder::new(&TableOptions::default(), fs.create(&path).unwrap(), path);
        for (k, seq) in points {
            b.add(&make_internal_key(k.as_bytes(), SeqNo(*seq), ValueType::Value), b"v").unwrap();
        }
        for t in tombstones {
            b.add_range_tombstone(t);
        }
        Arc::new(TableFile::new(FileMetaData::from_summary(
            FileNumber(number),
            b.finish().unwrap(),
        )))
    }

    /// Subcompactions and output cuts split tombstones at their boundaries: the outputs do not
    /// overlap (range-end bounds are exclusive), each holds only tombstones within its range,
    /// and together they cover what the inputs covered.
    #[test]
    fn tombstones_are_clipped_to_subcompactions_and_outputs() {
        let fs = MemFs::new();
        fs.create_dir_all(std::path::Path::new("/db")).unwrap();
        let keys: Vec<String> = (0..200).map(|i| format!("k{i:03}")).collect();
        let newer: Vec<(&str, u64)> = keys.iter().step_by(2).map(|k| (k.as_str(), 100)).collect();
        let older: Vec<(&str, u64)> = keys.iter().map(|k| (k.as_str(), 10)).collect();
        let t = |s: &str, e: &str, seq| RangeTombstone::new(s.as_bytes(), e.as_bytes(), SeqNo(seq));
        let tombstones = [t("k010", "k150", 50), t("k120", "k199x", 60)];
        let f1 = write_table(&fs, 1, &newer, &tombstones);
        let f2 = write_table(&fs, 2, &older, &[]);
        let snapshots = [SeqNo(20)]; // keeps the covered old entries and the tombstones
        with_env(&fs, &[(1, &f1), (2, &f2)], &snapshots, 2, |env| {
            let plan = CompactionPlan {
                start_level: 1,
                output_level: 2,
                inputs: vec![f1.clone()],
                middle_inputs: Vec::new(),
                output_inputs: vec![f2.clone()],
                deletion: false,
                compress: true,
                reason: "test",
                grandparents: Vec::new(),
                trivial_move: false,
                bottommost: true,
                target_file_size: 400,
                max_compaction_bytes: u64::MAX,
                output_path_id: 0,
            };
            let ranges = [
                KeyRange { start: None, end: Some(b"k100".to_vec()) },
                KeyRange { start: Some(b"k100".to_vec()), end: Some(b"k130".to_vec()) },
                KeyRange { start: Some(b"k130".to_vec()), end: None },
            ];
            let mut outputs = Vec::new();
            for r in &ranges {
                outputs.extend(run_range(env, &plan, r).unwrap().files);
            }
            assert!(outputs.len() > 4, "several outputs: {}", outputs.len());
            let mut edit = VersionEdit::default();
            edit.deleted_files.push((1, FileNumber(1)));
            edit.deleted_files.push((2, FileNumber(2)));
            for f in &outputs {
                edit.new_files.push((2, f.clone()));
            }
            let after = env.version.apply(&edit).expect("outputs do not overlap");
            assert!(outputs.iter().any(|f| is_exclusive_bound(&f.largest)));
            let mut all = Vec::new();
            for f in &after.levels[2] {
                let r = env.tables.reader(f.number, &f.pinned).unwrap();
                for x in r.range_tombstones() {
                    assert!(user_key(&f.smallest) <= x.start.as_slice(), "file {}", f.number);
                    let lu = user_key(&f.largest);
                    assert!(
                        x.end.as_slice() < lu
                            || (x.end.as_slice() == lu && is_exclusive_bound(&f.largest)),
                        "file {}",
                        f.number
                    );
                    all.push(x.clone());
                }
            }
            let got = FragmentedTombstones::from_tombstones(&all, 0, &KeyOrder::Bytewise);
            let want = FragmentedTombstones::from_tombstones(&tombstones, 0, &KeyOrder::Bytewise);
            for k in keys.iter().map(String::as_bytes).chain([&b"k199x"[..], b"k199w", b"a"]) {
                assert_eq!(
                    got.max_covering_seq(k, SeqNo::MAX),
                    want.max_covering_seq(k, SeqNo::MAX)
                );
            }
            // Old entries are kept for the snapshot; the newer ones too.
            let entries: u64 = outputs.iter().map(|f| f.num_entries).sum();
            assert_eq!(entries, 300);
        });
    }

    fn write_values(fs: &MemFs, number: u64, keys: &[String], value: &[u8]) -> Arc<TableFile> {
        let path = table_path(std::path::Path::new("/db"), FileNumber(number));
        let mut b = TableBuilder::new(&TableOptions::default(), fs.create(&path).unwrap(), path);
        for k in keys {
            b.add(&make_internal_key(k.as_bytes(), SeqNo(number), ValueType::Value), value)
                .unwrap();
        }
        Arc::new(TableFile::new(FileMetaData::from_summary(
            FileNumber(number),
            b.finish().unwrap(),
        )))
    }

    /// A universal merge's middle levels are read like its start level: the job's read
    /// bytes are all its inputs' (they were missing from the stats' Read(GB) and W-Amp).
    #[test]
    fn middle_inputs_count_as_bytes_read() {
        let fs = MemFs::new();
        fs.create_dir_all(std::path::Path::new("/db")).unwrap();
        let keys: Vec<String> = (0..50).map(|i| format!("k{i:03}")).collect();
        let top = write_values(&fs, 3, &keys, b"new");
        let middle = write_values(&fs, 2, &keys, &[b'm'; 50]);
        let bottom = write_values(&fs, 1, &keys, &[b'o'; 80]);
        with_env(&fs, &[(0, &top), (2, &middle), (3, &bottom)], &[], 1, |env| {
            let plan = CompactionPlan {
                start_level: 0,
                output_level: 3,
                inputs: vec![top.clone()],
                middle_inputs: vec![(2, vec![middle.clone()])],
                output_inputs: vec![bottom.clone()],
                deletion: false,
                compress: true,
                reason: "test",
                grandparents: Vec::new(),
                trivial_move: false,
                bottommost: true,
                target_file_size: u64::MAX,
                max_compaction_bytes: u64::MAX,
                output_path_id: 0,
            };
            let r = run_job(env, &plan).unwrap();
            assert_eq!(r.stats.bytes_read_non_output, top.file_size + middle.file_size);
            assert_eq!(r.stats.bytes_read_output, bottom.file_size);
            assert_eq!(r.stats.input_records, 150);
        });
    }

    /// Past half the target size, outputs end where the grandparent level has a boundary:
    /// each output then overlaps whole grandparent files only (`compaction/cut.rs`).
    #[test]
    fn outputs_line_up_with_grandparent_files() {
        let fs = MemFs::new();
        fs.create_dir_all(std::path::Path::new("/db")).unwrap();
        let keys: Vec<String> = (0..200).map(|i| format!("k{i:03}")).collect();
        let input = write_values(&fs, 1, &keys, &[b'x'; 100]);
        // Ten grandparents of 20 keys each: k000-k019, k020-k039, ...
        let gps: Vec<Arc<TableFile>> = (0..10)
            .map(|g| write_values(&fs, 10 + g as u64, &keys[g * 20..g * 20 + 20], b"v"))
            .collect();
        let mut files = vec![(1, &input)];
        files.extend(gps.iter().map(|g| (3, g)));
        with_env(&fs, &files, &[], 1, |env| {
            // 20 entries of ~115 bytes pass half of a 2,000-byte target before each boundary.
            let plan = CompactionPlan {
                start_level: 1,
                output_level: 2,
                inputs: vec![input.clone()],
                middle_inputs: Vec::new(),
                output_inputs: Vec::new(),
                deletion: false,
                compress: true,
                reason: "test",
                grandparents: gps.clone(),
                trivial_move: false,
                bottommost: false,
                target_file_size: 2000,
                max_compaction_bytes: u64::MAX,
                output_path_id: 0,
            };
            let out = run_range(env, &plan, &KeyRange { start: None, end: None }).unwrap().files;
            let firsts: Vec<String> = out
                .iter()
                .map(|f| String::from_utf8(user_key(&f.smallest).to_vec()).unwrap())
                .collect();
            let want: Vec<String> = (0..10).map(|g| format!("k{:03}", g * 20)).collect();
            assert_eq!(firsts, want);
        });
    }

    /// At the bottom with no snapshot, covered entries and the tombstones go away; a job whose
    /// input is only tombstones above data still writes them.
    #[test]
    fn tombstones_dropped_at_the_bottom_kept_above() {
        let fs = MemFs::new();
        fs.create_dir_all(std::path::Path::new("/db")).unwrap();
        let t = RangeTombstone::new(b"b", b"y", SeqNo(50));
        let only = write_table(&fs, 1, &[], std::slice::from_ref(&t));
        let data = write_table(&fs, 2, &[("a", 1), ("c", 2), ("z", 3)], &[]);
        with_env(&fs, &[(1, &only), (3, &data)], &[], 1, |env| {
            let mut plan = CompactionPlan {
                start_level: 1,
                output_level: 2,
                inputs: vec![only.clone()],
                middle_inputs: Vec::new(),
                output_inputs: Vec::new(),
                deletion: false,
                compress: true,
                reason: "test",
                grandparents: vec![data.clone()],
                trivial_move: false,
                bottommost: false,
                target_file_size: 1 << 20,
                max_compaction_bytes: u64::MAX,
                output_path_id: 0,
            };
            let whole = KeyRange { start: None, end: None };
            let out = run_range(env, &plan, &whole).unwrap().files;
            assert_eq!(out.len(), 1, "a tombstone-only input still yields a file");
            assert_eq!(
                env.tables
                    .reader(out[0].number, &crate::sstable::table_cache::PinnedTable::default())
                    .unwrap()
                    .range_tombstones(),
                std::slice::from_ref(&t)
            );
            // Bottom: tombstone and covered entry dropped.
            plan.start_level = 2;
            plan.output_level = 3;
            plan.inputs = vec![Arc::new(TableFile::new(out[0].clone()))];
            plan.output_inputs = vec![data.clone()];
            plan.grandparents = Vec::new();
            plan.bottommost = true;
            let RangeOutput { files: out, stats, .. } = run_range(env, &plan, &whole).unwrap();
            assert_eq!(out.len(), 1);
            assert_eq!(stats.output_entries, 2, "c dropped");
            assert!(env
                .tables
                .reader(out[0].number, &crate::sstable::table_cache::PinnedTable::default())
                .unwrap()
                .range_tombstones()
                .is_empty());
        });
    }
}
