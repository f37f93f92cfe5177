//! Compaction scheduling: background threads pick and run compactions; `compact_range`,
//! `wait_for_compact`; deleting table files no live version needs.

use std::fmt::Write as _;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{Cfd, DbInner};
use crate::compaction::job::{run_job, JobEnv};
use crate::compaction::output_path::place;
use crate::compaction::picker::{
    level_targets, overlapping, plan_for, plan_through, range_of, CompactionPlan, PickContext,
    PickerOptions, Through,
};
use crate::compaction::{now_secs, pick};
use crate::comparator::KeyOrder;
use crate::error::{Error, Result};
use crate::filename::table_path;
use crate::key::user_key;
use crate::statistics::{Histogram, Ticker};
use crate::types::{FileNumber, SeqNo};
use crate::version::levels::{TableFile, Version};

/// Starts the compaction threads: `max_background_jobs - 1`, at least one.
pub(crate) fn start_compaction_threads(inner: &Arc<DbInner>) -> Result<Vec<JoinHandle<()>>> {
    let n = inner.opts.max_background_jobs.saturating_sub(1).max(1);
    (0..n)
        .map(|i| super::background::spawn(inner, format!("strata-compact-{i}"), compaction_loop))
        .collect()
}

/// What the compaction thread does next ([`pick_any`]).
enum Next {
    /// Run this compaction (its inputs marked busy).
    Run(Arc<Cfd>, CompactionPlan),
    /// Flush this family's active memtable first: its L0 drains and takes the memtable along
    /// (`compaction::l0_batch`, "Drain").
    Flush(Arc<Cfd>),
    /// Nothing to do until woken, or until this moment.
    Wait(Option<Instant>),
}

/// The first compaction any family needs (families in id order), marked busy; else, when a
/// family's L0 compaction waits for a batch ([`crate::compaction::l0_batch`]), the moment
/// that wait ends unless another L0 file comes. An L0 compaction picked while the pace is
/// measured is logged with the batch it waited for. A drain of L0 whose family holds writes
/// in memtables waits for them to be flushed first ([`Next::Flush`] for the active one).
fn pick_any(st: &mut super::DbState, log: &super::info_log::InfoLog) -> Next {
    let now = now_secs();
    let instant = Instant::now();
    let mut wake = None::<Instant>;
    let compacting = &st.compacting;
    let found = st.cfs.values_mut().find_map(|c| {
        if c.cfd.live_opts().disable_auto_compactions {
            return None;
        }
        let v = c.cfd.current_super_version().version.clone();
        let mut o = c.cfd.live_opts().picker_options();
        let batch = c.l0_pace.batch(
            &v,
            &o,
            compacting,
            c.cfd.live_opts().level0_compaction_batching,
            instant,
        );
        o.level0_batch_files = batch.files;
        o.level0_carry_over = batch.carry_over;
        o.level0_drain = batch.drain;
        let mut plan = pick(&v, &o, compacting, now);
        if batch.drain && plan.as_ref().is_some_and(|p| p.start_level == 0) {
            // The writes since the last flush would come back as one L0 file below the
            // trigger (at the next flush, or replayed from the WAL at the next open), the
            // state the drain ends: they go down with it. A flush already due lands first
            // (its end wakes this thread); memtables waiting for more to merge with
            // (`min_write_buffer_number_to_merge`) are flushed with the active one.
            if !c.imm.is_empty() && c.flush_count().is_some() {
                return None;
            }
            if !c.mem.is_empty() || !c.imm.is_empty() {
                c.l0_pace.expect_drain_flush();
                let entries: u64 = c.imm.iter().map(|(m, _)| m.num_entries()).sum();
                log.log(&format!(
                    "[{}] L0 drain: flushing the memtables ({} entries) to go down with L0",
                    c.cfd.name,
                    entries + c.mem.num_entries()
                ));
                return Some(Next::Flush(c.cfd.clone()));
            }
        }
        if let Some(p) = plan.as_mut() {
            place(p, &c.cfd.paths.targets(), &o);
        }
        match &plan {
            Some(p) if p.start_level == 0 => {
                c.l0_pace.set_carried(p.output_level == 0 && batch.carry_over);
            }
            Some(_) => {}
            None if v.levels[0].is_empty() => c.l0_pace.set_carried(false),
            None => {
                for at in [batch.until, batch.drain_at].into_iter().flatten() {
                    wake = Some(wake.map_or(at, |w| w.min(at)));
                }
            }
        }
        if batch.drain && plan.as_ref().is_some_and(|p| p.start_level == 0) {
            log.log(&format!(
                "[{}] L0 drain: writes stayed paused after a carry-over; {} L0 files go down",
                c.cfd.name,
                v.levels[0].len()
            ));
        }
        if let (Some(p), Some((interval, speed))) = (&plan, c.l0_pace.measured_pace()) {
            if p.start_level == 0 && p.output_level == 0 && batch.carry_over {
                log.log(&format!(
                    "[{}] L0 carry-over: writes paused with {} L0 files ({:.1} MB) that came \
                     every {interval:.2} s, faster than L0 -> base compactions ({:.0} MB/s) \
                     drain them; merging them in L0 to go down with the next batch",
                    c.cfd.name,
                    p.inputs.len(),
                    p.input_bytes() as f64 / 1e6,
                    speed / 1e6
                ));
            }
            if p.start_level == 0 && p.output_level > 0 && !p.trivial_move {
                log.log(&format!(
                    "[{}] L0 batch of {} files (trigger {}): a file every {interval:.2} s, L0 -> \
                     base compactions read {:.0} MB/s",
                    c.cfd.name,
                    batch.files,
                    o.level0_file_num_compaction_trigger,
                    speed / 1e6
                ));
            }
        }
        plan.map(|p| Next::Run(c.cfd.clone(), p))
    });
    match found {
        Some(Next::Run(cfd, p)) => {
            mark_busy(st, &cfd, &p);
            Next::Run(cfd, p)
        }
        Some(next) => next,
        None => Next::Wait(wake),
    }
}

/// First wait before looking again at tables a compaction made obsolete while a reader (an
/// iterator, a read in flight) still held their version; doubled at each look that finds
/// them still held, up to [`OBSOLETE_RETRY_MAX`].
const OBSOLETE_RETRY_MIN: Duration = Duration::from_millis(20);
const OBSOLETE_RETRY_MAX: Duration = Duration::from_secs(5);

fn compaction_loop(inner: &DbInner) {
    let mut obsolete_retry = OBSOLETE_RETRY_MIN;
    // When to look again at obsolete tables a reader held (`None`: nothing scheduled). Only
    // that moment triggers the look, not every wake-up of the thread (each flush notifies).
    let mut obsolete_at: Option<Instant> = None;
    loop {
        let (cfd, plan) = {
            let mut st = inner.state.lock();
            loop {
                if st.shutting_down {
                    return;
                }
                // Tables kept because a reader held them when their compaction finished: their
                // files and readers go soon after that reader does, not at the next job.
                if obsolete_at.is_some_and(|at| Instant::now() >= at)
                    && !st.obsolete_tables.is_empty()
                {
                    obsolete_at = None;
                    // Their readers' index and filter blocks go after the compaction's own
                    // trim: the purge trims again if it deleted any.
                    parking_lot::MutexGuard::unlocked(&mut st, || purge_then_trim(inner, false));
                    continue;
                }
                let mut wake = None;
                if st.bg_error.is_none() && st.manual_compactions == 0 {
                    match pick_any(&mut st, &inner.info_log) {
                        Next::Run(cfd, p) => break (cfd, p),
                        Next::Flush(cfd) => {
                            // Scheduled, not waited for: its install wakes this thread.
                            let flushed = parking_lot::MutexGuard::unlocked(&mut st, || {
                                super::flush::flush_families(inner, &[cfd], false)
                            });
                            if let Err(e) = flushed {
                                // Looked at again in a while, not at once: the drain would
                                // ask for the same flush.
                                inner.info_log.log(&format!("L0 drain: flush failed: {e}"));
                                inner.bg_cv.wait_for(&mut st, Duration::from_secs(1));
                            }
                            continue;
                        }
                        Next::Wait(w) => wake = w,
                    }
                }
                // Files expire with time alone under FIFO's TTL: look again without being woken.
                let timed = st.cfs.values().any(|c| {
                    let p = c.cfd.live_opts().picker_options();
                    p.style == crate::compaction::style::CompactionStyle::Fifo
                        && p.fifo.ttl_secs > 0
                });
                if timed {
                    let ttl_check = Instant::now() + Duration::from_secs(1);
                    wake = Some(wake.map_or(ttl_check, |w| w.min(ttl_check)));
                }
                if st.obsolete_tables.is_empty() {
                    obsolete_retry = OBSOLETE_RETRY_MIN;
                    obsolete_at = None;
                } else {
                    let at = *obsolete_at.get_or_insert_with(|| {
                        let at = Instant::now() + obsolete_retry;
                        obsolete_retry = (obsolete_retry * 2).min(OBSOLETE_RETRY_MAX);
                        at
                    });
                    wake = Some(wake.map_or(at, |w| w.min(at)));
                }
                match wake {
                    // An L0 batch's wait ends then (or a TTL may expire, or a reader may have let
                    // go of obsolete tables): look again.
                    Some(at) => {
                        inner.bg_cv.wait_until(&mut st, at);
                    }
                    None => inner.bg_cv.wait(&mut st),
                }
            }
        };
        // A panic in the job is a failed job: `finish` releases its inputs and records it.
        let result = super::background::catch_panic(|| execute(inner, &cfd, &plan, false));
        finish(inner, plan, result);
    }
}

/// The info LOG's line when a compaction that rewrites data starts (RocksDB's "Compacting
/// ..."): with the finish line (`log_compaction`) or the abandon line it brackets the job, so a
/// LOG shows what ran when, and what a close cut short.
fn log_compaction_start(inner: &DbInner, cfd: &Cfd, plan: &CompactionPlan) {
    let bytes = |files: &[Arc<TableFile>]| -> u64 { files.iter().map(|f| f.file_size).sum() };
    let mut middle = String::new();
    for (l, files) in &plan.middle_inputs {
        let _ = write!(middle, " + {}@L{l}", files.len());
    }
    inner.info_log.log(&format!(
        "[{}] Compaction L{} -> L{} ({}) started: {}@L{}{middle} + {}@L{} files, {} + {} bytes",
        cfd.name,
        plan.start_level,
        plan.output_level,
        plan.reason,
        plan.inputs.len(),
        plan.start_level,
        plan.output_inputs.len(),
        plan.output_level,
        bytes(&plan.inputs) + plan.middle_inputs.iter().map(|(_, f)| bytes(f)).sum::<u64>(),
        bytes(&plan.output_inputs),
    ));
}

/// Counts `plan` (of family `cf`) as running: its inputs busy, its output level and range
/// recorded.
fn mark_busy(st: &mut super::DbState, cfd: &Cfd, plan: &CompactionPlan) {
    st.compacting.extend(plan.all_inputs().map(|(_, f)| f.number));
    let first = plan.all_inputs().next().map(|(_, f)| f.number);
    if let (Some(input), Some((smallest, largest))) =
        (first, range_of(plan.all_inputs().map(|(_, f)| f), &cfd.opts.comparator))
    {
        st.compaction_outputs.push(super::CompactionOutput {
            cf: cfd.id,
            level: plan.output_level,
            smallest,
            largest,
            input,
        });
    }
    st.running_compactions += 1;
}

/// Releases the plan's files, records an error, removes obsolete files, hands the heap's free
/// pages back (`Options::trim_heap_after_compaction`), then stops counting
/// the compaction as running and wakes waiters: a waiter that sees no compaction running
/// ([`wait_for_compact`]) finds the finished ones' obsolete tables gone from disk.
///
/// Takes the plan, and drops it before the purge and the trim: its input tables' metadata
/// holds their readers (index and filter blocks, megabytes for a large compaction), which
/// must be freed before the trim hands free pages back, not after it.
fn finish(inner: &DbInner, plan: CompactionPlan, result: Result<()>) {
    {
        let mut st = inner.state.lock();
        for (_, f) in plan.all_inputs() {
            st.compacting.remove(&f.number);
        }
        if let Some((_, first)) = plan.all_inputs().next() {
            st.compaction_outputs.retain(|o| o.input != first.number);
        }
        match &result {
            // Abandoned because the DB is closing or the family was dropped: the inputs are
            // intact, nothing failed.
            Err(Error::ShutdownInProgress | Error::ColumnFamilyDropped(_)) => {}
            Err(e) => inner.set_bg_error(&mut st, e),
            Ok(()) => {}
        }
    }
    // A trivial move frees nothing itself; a rewrite or a deletion frees blocks and its
    // inputs' readers.
    let job_freed = !plan.trivial_move;
    drop(plan);
    purge_then_trim(inner, job_freed);
    let mut st = inner.state.lock();
    st.running_compactions -= 1;
    inner.bg_cv.notify_all();
}

/// Runs `plan` (of family `cfd`; `manual`: asked for by the user) and installs its result.
fn execute(inner: &DbInner, cfd: &Arc<Cfd>, plan: &CompactionPlan, manual: bool) -> Result<()> {
    // The version only, not the super version: that one also holds the memtables of the
    // moment, which would stay in memory, flushed, for as long as the compaction runs.
    let version = cfd.current_super_version().version.clone();
    let filter = cfd.opts.compaction_filter_factory.as_deref().map(|f| {
        let files: usize = version.levels.iter().map(Vec::len).sum();
        let ctx = crate::compaction_filter::CompactionFilterContext {
            is_full_compaction: plan.all_inputs().count() == files,
            is_manual_compaction: manual,
            column_family_id: cfd.id,
            reason: crate::compaction_filter::TableFileCreationReason::Compaction,
        };
        (f, ctx)
    });
    let snapshots = super::snapshot_reads::kept_for(inner, cfd);
    let new_file_number = || inner.new_file_number();
    let uncompressed;
    let mut table_options = &cfd.table_options[plan.output_level];
    if !plan.compress {
        uncompressed = crate::sstable::TableOptions {
            compression: crate::sstable::CompressionType::None,
            ..table_options.clone()
        };
        table_options = &uncompressed;
    }
    let skewed;
    if cfd.opts.compaction_style == crate::compaction::style::CompactionStyle::Tiered
        && cfd.opts.compaction_options_tiered.skewed_filter_bits
    {
        let base = table_options.bloom_bits_per_key;
        let bits = crate::compaction::filter_bits::bits_for_plan(base, &version, plan);
        skewed = crate::sstable::TableOptions { bloom_bits_per_key: bits, ..table_options.clone() };
        table_options = &skewed;
    }
    let output_dir = cfd.table_dir(plan.output_path_id, &inner.dir);
    // Read before the job starts: reads below it are refused from the moment it is set.
    let history_low = cfd.full_history_ts_low();
    let history = match (&cfd.opts.timestamps, &history_low) {
        (Some(t), Some(low)) => {
            Some(crate::compaction::stream::CollapsedHistory { timestamps: t, low })
        }
        _ => None,
    };
    let compaction_reads = crate::blob::BlobReads { source: &*inner.blobs, fill: false };
    let env = JobEnv {
        fs: inner.fs.as_ref(),
        dir: output_dir,
        tables: &inner.table_cache,
        table_options,
        merge_operator: cfd.opts.merge_operator.as_deref(),
        snapshots: &snapshots,
        version: &version,
        max_subcompactions: inner.opts.max_subcompactions,
        new_file_number: &new_file_number,
        cancel: &inner.closing,
        readahead_size: inner.opts.compaction_readahead_size,
        filter,
        versioned_keys: cfd.opts.timestamps.is_some(),
        history,
        blob_config: super::blob_files::write_config(cfd, Some(&version)),
        blob_dir: &inner.dir,
        blobs: Some(&compaction_reads),
    };
    let rewrites = !plan.trivial_move && !plan.deletion;
    if rewrites {
        log_compaction_start(inner, cfd, plan);
    }
    let mut result = match run_job(&env, plan) {
        Err(Error::ShutdownInProgress) if rewrites => {
            inner.info_log.log(&format!(
                "[{}] Compaction L{} -> L{} abandoned: the DB is closing (its inputs stay)",
                cfd.name, plan.start_level, plan.output_level
            ));
            return Err(Error::ShutdownInProgress);
        }
        r => r?,
    };
    // Counted before the install, which may wake a waiter on the compaction: its work is done.
    if let (Some(s), true) = (cfd.stats.user_statistics(), rewrites) {
        let st = &result.stats;
        s.tick(Ticker::CompactReadBytes, st.bytes_read_non_output + st.bytes_read_output);
        s.tick(Ticker::CompactWriteBytes, st.bytes_written + st.bytes_written_blob);
        s.record_time(Histogram::CompactionTime, st.micros.max(1));
        s.record_time(Histogram::CompactionCpuTime, st.cpu_micros);
        s.record(Histogram::NumFilesInSingleCompaction, plan.all_inputs().count() as u64);
    }
    let outputs: Vec<FileNumber> = result.edit.new_files.iter().map(|(_, f)| f.number).collect();
    crate::kill_point!("compaction.install");
    result.edit.column_family = cfd.id;
    let installed = {
        let mut versions = inner.versions.lock();
        if cfd.dropped.load(std::sync::atomic::Ordering::Acquire) {
            Err(Error::ColumnFamilyDropped(cfd.name.clone()))
        } else {
            versions.log_and_apply(&mut result.edit, &cfd.layout()).map(|version| {
                let mut st = inner.state.lock();
                st.obsolete_tables.extend(
                    plan.all_inputs()
                        .filter(|(_, f)| !outputs.contains(&f.number))
                        .map(|(_, f)| (f.number, f.path_in(&inner.dir))),
                );
                if let (Some(cs), Some(version)) = (st.cfs.get(&cfd.id), version) {
                    cfd.install_super_version(cs, version);
                }
                // The pace L0 batching estimates with: L0 -> base rewrites' (other levels'
                // compactions read at other speeds).
                let l0_to_base = rewrites && plan.start_level == 0 && plan.output_level > 0;
                if let (true, Some(cs)) = (l0_to_base, st.cfs.get_mut(&cfd.id)) {
                    let s = &result.stats;
                    cs.l0_pace
                        .on_compaction(s.bytes_read_non_output + s.bytes_read_output, s.micros);
                }
                inner.bg_cv.notify_all();
            })
        }
    };
    if let Err(e) = installed {
        if !plan.trivial_move {
            for n in outputs {
                let _ = inner.fs.remove(&table_path(output_dir, n));
            }
        }
        return Err(e);
    }
    cfd.stats.add_compaction(plan.output_level, &result.stats);
    log_compaction(inner, cfd, plan, &outputs, &result.stats);
    Ok(())
}

/// The info LOG's account of one compaction: a readable line and an `EVENT_LOG_v1` record.
fn log_compaction(
    inner: &DbInner,
    cfd: &Cfd,
    plan: &CompactionPlan,
    outputs: &[FileNumber],
    s: &crate::stats::LevelStats,
) {
    let numbers = |files: &[Arc<TableFile>]| files.iter().map(|f| f.number.0).collect::<Vec<_>>();
    let outs: Vec<u64> = outputs.iter().map(|n| n.0).collect();
    let secs = s.micros as f64 / 1e6;
    let mut middle = String::new();
    for (l, files) in &plan.middle_inputs {
        let _ = write!(middle, " + L{l} {:?}", numbers(files));
    }
    let path = match plan.output_path_id {
        0 => String::new(),
        p => format!(" in table path {p}"),
    };
    inner.info_log.log(&format!(
        "[{}] Compaction L{} -> L{}{} ({}): inputs L{} {:?}{middle} + L{} {:?} ({} + {} \
         bytes) -> {outs:?}{path} ({} bytes written, {} moved); {} records in, {} dropped; \
         {secs:.3} s",
        cfd.name,
        plan.start_level,
        plan.output_level,
        if plan.trivial_move {
            " (trivial move)"
        } else if plan.deletion {
            " (deletion)"
        } else {
            ""
        },
        plan.reason,
        plan.start_level,
        numbers(&plan.inputs),
        plan.output_level,
        numbers(&plan.output_inputs),
        s.bytes_read_non_output,
        s.bytes_read_output,
        s.bytes_written,
        s.bytes_moved,
        s.input_records,
        s.dropped_records,
    ));
    inner.info_log.log(&format!(
        "EVENT_LOG_v1 {{\"time_micros\": {}, \"event\": \"compaction_finished\", \"cf_name\": \
         \"{}\", \"output_level\": {}, \"num_output_files\": {}, \"total_output_size\": \
         {}, \"num_input_records\": {}, \"num_output_records\": {}, \"compaction_time_micros\": \
         {}}}",
        super::info_log::now_micros(),
        cfd.name,
        plan.output_level,
        outs.len(),
        s.bytes_written,
        s.input_records,
        s.input_records - s.dropped_records.min(s.input_records),
        s.micros
    ));
}

/// Compacts every file overlapping [begin, end] (None = unbounded) down to the level the data
/// ends in, then rewrites that level so obsolete versions and tombstones are dropped. Where the
/// levels on the way share keys, one job takes them all into that level
/// ([`crate::compaction::picker::plan_through`]), so each key is written once; otherwise (moves
/// alone would do) it goes a level at a time.
/// Memtables are flushed first. Where it ends is RocksDB's rule: with
/// `level_compaction_dynamic_level_bytes`, the last level; without, the deepest level that
/// held data (L0 always goes to L1 at least), automatic compaction moving data further down
/// when a level outgrows its target. Each level is visited once, top down,
/// so the call compacts what existed when it started and returns even while writes go on.
/// `bottom` says which files already in the last level are rewritten in place ([`Bottom`]);
/// data from above moves into it whatever it says.
pub(crate) fn compact_range(
    inner: &DbInner,
    cfd: &Arc<Cfd>,
    begin: Option<&[u8]>,
    end: Option<&[u8]>,
    bottom: Bottom,
) -> Result<()> {
    super::flush::flush_and_wait(inner, cfd)?;
    inner.state.lock().manual_compactions += 1;
    let r = if cfd.opts.compaction_style == crate::compaction::style::CompactionStyle::Fifo {
        compact_range_fifo(inner, cfd)
    } else if cfd.opts.num_levels == 1 {
        compact_range_one_level(inner, cfd, bottom)
    } else {
        compact_range_levels(inner, cfd, begin, end, bottom)
    };
    {
        let mut st = inner.state.lock();
        st.manual_compactions -= 1;
        inner.bg_cv.notify_all();
    }
    // Tables an earlier compaction left obsolete while a reader (or a checkpoint's hold on
    // deletions) kept them go now, also when the call itself had nothing to compact.
    super::obsolete::purge_obsolete_tables(inner);
    r
}

/// FIFO style's manual compaction (RocksDB's): data stays in L0 whatever the range, since
/// moving files down would break FIFO's oldest-first order. The call runs FIFO's own picks
/// (TTL and size deletions, intra-L0 merges when `allow_compaction` is set) until none
/// applies, at most one round per file present when it starts (so it ends while writes go on).
fn compact_range_fifo(inner: &DbInner, cfd: &Arc<Cfd>) -> Result<()> {
    let o = cfd.live_opts().picker_options();
    let files: usize = cfd.current_super_version().version.levels.iter().map(Vec::len).sum();
    for _ in 0..=files {
        let plan = wait_for_plan(inner, cfd, |v, busy| {
            Some(crate::compaction::fifo::pick_fifo(v, &o, busy, now_secs()))
        })?;
        match plan {
            Some(plan) => run_manual(inner, cfd, placed(cfd, &o, plan))?,
            None => break,
        }
    }
    Ok(())
}

/// Drops, at every level but L0, the tables whose keys all lie in `[from, to]` (RocksDB's
/// `DeleteFilesInRange`): their entries vanish without tombstones, so older versions of those
/// keys in lower levels can show again, as in RocksDB. Waits for compactions holding such
/// tables; a memtable's keys are untouched.
pub(crate) fn delete_files_in_range(
    inner: &DbInner,
    cfd: &Arc<Cfd>,
    from: &[u8],
    to: &[u8],
) -> Result<()> {
    let levels = cfd.current_super_version().version.levels.len();
    for level in 1..levels {
        let plan = wait_for_plan(inner, cfd, |v, busy| {
            let doomed: Vec<_> = v.levels[level]
                .iter()
                .filter(|f| {
                    let o = v.order();
                    o.le(from, user_key(&f.smallest)) && o.le(user_key(&f.largest), to)
                })
                .cloned()
                .collect();
            if doomed.iter().any(|f| busy.contains(&f.number)) {
                return None;
            }
            if doomed.is_empty() {
                return Some(None);
            }
            Some(Some(CompactionPlan::deletion(level, doomed, "delete files in range")))
        })?;
        if let Some(plan) = plan {
            run_manual(inner, cfd, plan)?;
        }
    }
    Ok(())
}

/// Moves every table of the deepest non-empty level below L0 to level `target` in one
/// version edit, the files unchanged (RocksDB's `CompactOptions::change_level` after a manual
/// compaction, its `ReFitLevel`). `target` -1: the highest level such that every level from
/// it down to the source is empty and its size target holds the tables. The levels between,
/// and `target` itself, must be empty (`InvalidArgument` otherwise); L0 is not a target.
pub(crate) fn refit_level(inner: &DbInner, cfd: &Arc<Cfd>, target: i32) -> Result<()> {
    let mut refused = None::<String>;
    let plan = wait_for_plan(inner, cfd, |v, busy| {
        let last = v.levels.len() - 1;
        let Some(from) = (1..=last).rev().find(|&l| !v.levels[l].is_empty()) else {
            return Some(None); // nothing below L0
        };
        let to = if target < 0 {
            let o = cfd.live_opts().picker_options();
            let t = level_targets(v, &o);
            let bytes = v.level_bytes(from);
            let mut to = from;
            for l in (1..from).rev() {
                if !v.levels[l].is_empty() || t.target[l] < bytes {
                    break;
                }
                to = l;
            }
            to
        } else {
            usize::try_from(target).unwrap_or(usize::MAX)
        };
        if to == 0 || to > last {
            refused = Some(format!("change_level: target level {target} is not one of 1..={last}"));
            return Some(None);
        }
        let (lo, hi) = (from.min(to), from.max(to));
        if let Some(l) = (lo..=hi).find(|&l| l != from && !v.levels[l].is_empty()) {
            refused = Some(format!(
                "change_level: level {l} between level {from} and target {to} holds tables"
            ));
            return Some(None);
        }
        if to == from {
            return Some(None);
        }
        if v.levels[from].iter().any(|f| busy.contains(&f.number)) {
            return None;
        }
        Some(Some(CompactionPlan::trivial_move(from, to, v.levels[from].clone(), "change level")))
    })?;
    if let Some(m) = refused {
        return Err(Error::InvalidArgument(m));
    }
    match plan {
        Some(plan) => run_manual(inner, cfd, plan),
        None => Ok(()),
    }
}

/// Which tables already in the last level a manual compaction rewrites in place, when the
/// data of the levels above did not go through that level's tables in a compaction of the
/// call (which rewrote them already).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bottom {
    /// None (RocksDB's `BottommostLevelCompaction::Skip`).
    Skip,
    /// Those a rewrite could change (not [`settled`]): `Db::compact_range`'s choice.
    Unsettled,
    /// All of them (`Force`, `ForceOptimized`, or a family with a compaction filter).
    All,
}

/// A universal family of one level (`num_levels` 1): every table is an L0 sorted run, and the
/// call merges them all into one, whatever the range (RocksDB's universal manual compaction
/// writes its last level, here L0). A lone run is rewritten in place as `bottom` says of the
/// last level's tables. Waits while a background compaction holds a run.
fn compact_range_one_level(inner: &DbInner, cfd: &Arc<Cfd>, bottom: Bottom) -> Result<()> {
    let o = cfd.live_opts().picker_options();
    let left_as_is = left_in_place(cfd, bottom);
    let plan = wait_for_plan(inner, cfd, |v, busy| {
        let l0 = &v.levels[0];
        let lone_left = match l0.as_slice() {
            [] => true,
            [f] => bottom == Bottom::Skip || left_as_is(f),
            _ => false,
        };
        if lone_left {
            return Some(None);
        }
        if l0.iter().any(|f| busy.contains(&f.number)) {
            return None;
        }
        let runs = crate::compaction::universal::sorted_runs(v, busy);
        let percent = o.universal.compression_size_percent;
        let plan = crate::compaction::universal::merge_plan(
            &o,
            &runs,
            0,
            runs.len(),
            "manual",
            percent,
            false,
        );
        Some(Some(plan))
    })?;
    if let Some(plan) = plan {
        run_manual(inner, cfd, placed(cfd, &o, plan))?;
    }
    Ok(())
}

fn compact_range_levels(
    inner: &DbInner,
    cfd: &Arc<Cfd>,
    begin: Option<&[u8]>,
    end: Option<&[u8]>,
    bottom: Bottom,
) -> Result<()> {
    let o = cfd.live_opts().picker_options();
    let last = o.num_levels - 1;
    let mut level = 0;
    let mut rewrote_bottom = false;
    while level < last {
        if level > 0 && !o.dynamic_level_bytes && level >= deepest_non_empty(cfd) {
            break;
        }
        let plan = wait_for_plan(inner, cfd, |v, busy| {
            let mut files = overlapping_range(v, level, begin, end);
            if files.is_empty() {
                return Some(None);
            }
            if level == 0 {
                // L0 files overlap each other: moving some of them down could put a newer
                // file below an older one holding the same keys. Like the automatic picker,
                // take them all.
                files.clone_from(&v.levels[0]);
            }
            let t = level_targets(v, &o);
            let output = if level == 0 { t.base_level.max(1) } else { level + 1 };
            let c = PickContext { v, o: &o, t: &t, busy };
            // Where the call leaves this data: the last level with dynamic level bytes, else
            // the deepest level holding data. Going there in one job rewrites each key once.
            let into = if o.dynamic_level_bytes { last } else { deepest(v).max(output) };
            if into > output {
                let in_range = |f: &TableFile| in_range(v.order(), f, begin, end);
                match plan_through(&c, level, into, files.clone(), in_range) {
                    Through::Busy => return None,
                    Through::Plan(plan) => return Some(Some(plan)),
                    Through::LevelByLevel => {}
                }
            }
            plan_for(&c, level, output, files).map(Some)
        })?;
        // Each level is compacted once, into a level below it: files that flushes add
        // meanwhile are not this call's job (RocksDB's semantics), so the call ends while
        // other threads keep writing.
        match plan.map(|p| placed(cfd, &o, p)) {
            Some(plan) => {
                rewrote_bottom |= !plan.trivial_move && plan.bottommost;
                let next = plan.output_level.max(level + 1);
                run_manual(inner, cfd, plan)?;
                level = next;
            }
            None => level += 1,
        }
    }
    if bottom != Bottom::Skip && !rewrote_bottom {
        // Data reached the last level by moves (or was there): rewrite it in place.
        rewrite_bottom_in_place(inner, cfd, &o, begin, end, bottom)?;
    }
    Ok(())
}

/// Rewrites in place the tables in `[begin, end]` of the deepest level holding data, with
/// [`Bottom::Unsettled`] but for those a rewrite would leave as they are ([`settled`]): the
/// tables to rewrite are taken in runs of neighbours, one compaction per run, each over the
/// key span of its run in the version it starts from, so no output spans a table left out.
fn rewrite_bottom_in_place(
    inner: &DbInner,
    cfd: &Arc<Cfd>,
    o: &PickerOptions,
    begin: Option<&[u8]>,
    end: Option<&[u8]>,
    which: Bottom,
) -> Result<()> {
    let v = cfd.current_super_version().version.clone();
    let Some(bottom) = (1..v.levels.len()).rev().find(|&l| v.num_files(l) > 0) else {
        return Ok(());
    };
    let left_as_is = left_in_place(cfd, which);
    // Each run's user-key span: its first table's smallest key to its last's largest.
    let mut runs: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut open = false;
    for f in overlapping_range(&v, bottom, begin, end) {
        if left_as_is(&f) {
            open = false;
            continue;
        }
        let (lo, hi) = (user_key(&f.smallest).to_vec(), user_key(&f.largest).to_vec());
        match runs.last_mut() {
            Some(run) if open => run.1 = hi,
            _ => runs.push((lo, hi)),
        }
        open = true;
    }
    drop(v);
    for (lo, hi) in runs {
        let plan = wait_for_plan(inner, cfd, |v, busy| {
            let files = overlapping_range(v, bottom, Some(lo.as_slice()), Some(hi.as_slice()));
            if files.is_empty() {
                return Some(None);
            }
            let t = level_targets(v, o);
            let c = PickContext { v, o, t: &t, busy };
            plan_for(&c, bottom, bottom, files).map(Some)
        })?;
        if let Some(plan) = plan {
            run_manual(inner, cfd, placed(cfd, o, plan))?;
        }
    }
    Ok(())
}

/// Which bottom tables a manual compaction of family `cfd` under rule `which` leaves as they
/// are: with [`Bottom::Unsettled`], no compaction filter and no timestamps, the [`settled`]
/// ones; none otherwise (a filter or a timestamp's collection could change any table).
fn left_in_place(cfd: &Cfd, which: Bottom) -> impl Fn(&TableFile) -> bool {
    let may_skip = which == Bottom::Unsettled
        && cfd.opts.compaction_filter_factory.is_none()
        && cfd.opts.timestamps.is_none();
    let blob_gc = cfd.live_opts().blob.enable_blob_gc;
    move |f| may_skip && settled(f, blob_gc)
}

/// Whether rewriting table `f` in place at the bottom could change nothing: every entry has
/// sequence number 0 (written at the bottom as a value every snapshot sees: no older
/// version, no deletion, no merge operand, no range tombstone is left to drop), it was not
/// ingested (an ingested table's entries read at its global number), and, with blob garbage
/// collection on (`blob_gc`), it refers to no blob file a rewrite could collect from. Only
/// for a family with no compaction filter and no user timestamps, which a rewrite could
/// still apply ([`left_in_place`]).
fn settled(f: &TableFile, blob_gc: bool) -> bool {
    f.largest_seqno == SeqNo::ZERO
        && f.global_seqno == SeqNo::ZERO
        && f.num_deletions == 0
        && (!blob_gc || f.blob_refs.is_empty())
}

/// The deepest level holding a table in the family's current version (0 when none does).
fn deepest_non_empty(cfd: &Cfd) -> usize {
    deepest(&cfd.current_super_version().version)
}

/// The deepest level of `v` holding a table (0 when none does).
fn deepest(v: &Version) -> usize {
    (1..v.levels.len()).rev().find(|&l| !v.levels[l].is_empty()).unwrap_or(0)
}

/// The files of `level` holding a user key in `[begin, end]` (`None`: unbounded).
fn overlapping_range(
    v: &Version,
    level: usize,
    begin: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Vec<Arc<TableFile>> {
    v.levels[level].iter().filter(|f| in_range(v.order(), f, begin, end)).cloned().collect()
}

/// Whether file `f` holds a user key in `[begin, end]` (`None`: unbounded).
fn in_range(o: &KeyOrder, f: &TableFile, begin: Option<&[u8]>, end: Option<&[u8]>) -> bool {
    begin.is_none_or(|b| !o.after_largest(b, &f.largest))
        && end.is_none_or(|e| o.le(user_key(&f.smallest), e))
}

/// Deletes the obsolete tables no reader holds any more, then hands the heap's free pages back
/// (`Options::trim_heap_after_compaction`) if memory was freed: by the job that ran before
/// (`job_freed`), or by the purge itself, whose deleted tables' readers go with them.
fn purge_then_trim(inner: &DbInner, job_freed: bool) {
    let purged = super::obsolete::purge_obsolete_tables(inner);
    if inner.opts.trim_heap_after_compaction && frees_memory(job_freed, purged) {
        crate::util::heap::release_free_pages();
    }
}

/// Whether a trim is worth it: the job before freed memory, or the purge deleted tables (an
/// earlier compaction's inputs that a reader held when it finished; after a trivial move too).
fn frees_memory(job_freed: bool, purged: usize) -> bool {
    job_freed || purged > 0
}

/// `Err` once a background error is set or the DB is shutting down: waiting is then over.
fn still_running(st: &super::DbState) -> Result<()> {
    if let Some(e) = &st.bg_error {
        return Err(Error::Background(e.to_string()));
    }
    if st.shutting_down {
        return Err(Error::ShutdownInProgress);
    }
    Ok(())
}

/// Waits until `f` can build a plan over files that are not busy; `Some(None)` = nothing to do.
fn wait_for_plan(
    inner: &DbInner,
    cfd: &Cfd,
    mut f: impl FnMut(
        &Version,
        &std::collections::HashSet<FileNumber>,
    ) -> Option<Option<CompactionPlan>>,
) -> Result<Option<CompactionPlan>> {
    let mut st = inner.state.lock();
    loop {
        still_running(&st)?;
        if cfd.dropped.load(std::sync::atomic::Ordering::Acquire) {
            return Err(Error::ColumnFamilyDropped(cfd.name.clone()));
        }
        let v = cfd.current_super_version().version.clone();
        if let Some(p) = f(&v, &st.compacting) {
            if let Some(plan) = &p {
                mark_busy(&mut st, cfd, plan);
            }
            return Ok(p);
        }
        inner.bg_cv.wait(&mut st);
    }
}

fn run_manual(inner: &DbInner, cfd: &Arc<Cfd>, plan: CompactionPlan) -> Result<()> {
    let r = super::background::catch_panic(|| execute(inner, cfd, &plan, true));
    let ret = match &r {
        Ok(()) => Ok(()),
        Err(e) => Err(e.duplicate()),
    };
    finish(inner, plan, r);
    ret
}

/// Stops background work for good (`Db::cancel_all_background_work`): running compactions
/// are abandoned, the background threads end, waiters get `ShutdownInProgress`. With `wait`,
/// returns once no compaction runs.
pub(crate) fn cancel_all_background_work(inner: &DbInner, wait: bool) {
    inner.closing.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut st = inner.state.lock();
    st.shutting_down = true;
    inner.bg_cv.notify_all();
    while wait && st.running_compactions > 0 {
        inner.bg_cv.wait(&mut st);
    }
}

/// Waits until no flush or compaction is pending or running; past `deadline`, `TimedOut`.
pub(crate) fn wait_for_compact(inner: &DbInner, deadline: Option<Instant>) -> Result<()> {
    let mut st = inner.state.lock();
    loop {
        still_running(&st)?;
        let now = now_secs();
        // A carried-over L0 is a compaction to come: it drains by itself once writes stay
        // paused (`compaction::l0_batch`), and is waited for like the others.
        let pending = st.cfs.values().any(|c| {
            let v = c.cfd.current_super_version().version.clone();
            !c.cfd.live_opts().disable_auto_compactions
                && (pick(&v, &c.cfd.live_opts().picker_options(), &st.compacting, now).is_some()
                    || (c.l0_pace.carried() && !v.levels[0].is_empty()))
        });
        // Memtables waiting for more to merge with (`min_write_buffer_number_to_merge`) are
        // no flush to come in an idle DB, as in RocksDB.
        let flushing = st.cfs.values().any(|c| c.flush_count().is_some());
        if !flushing && st.running_compactions == 0 && !pending {
            drop(st);
            // The files the compactions made obsolete while a reader still held them (the
            // purge after each compaction keeps those) go now if their readers are gone, as
            // RocksDB's last reader of a super version deletes or schedules them: after the
            // wait, no table or blob file is on disk that only old versions needed.
            super::obsolete::purge_obsolete_tables(inner);
            return Ok(());
        }
        match deadline {
            Some(d) if Instant::now() >= d => {
                return Err(Error::TimedOut(
                    "wait_for_compact: flushes or compactions still pending at the timeout".into(),
                ));
            }
            Some(d) => {
                inner.bg_cv.wait_until(&mut st, d);
            }
            None => inner.bg_cv.wait(&mut st),
        }
    }
}

/// Compacts the given table files, all of one level, into `output_level` (RocksDB's
/// `CompactFiles`). L0 inputs are widened as RocksDB widens them: into a lower level, to every
/// L0 file older than the newest named (L0 files overlap: moving a newer file below an older
/// one would put its versions under older ones; newer files may stay above); into L0, to every
/// file between the newest and the oldest named. Files of `output_level` overlapping the
/// inputs join the compaction. Refused (`InvalidArgument`): an unknown file, inputs from several
/// levels, an output level above the inputs' or beyond the last, and a level between the two
/// holding keys in the inputs' range (the inputs would land below older versions of their
/// keys). Waits while an input is being compacted; automatic compactions pause meanwhile.
pub(crate) fn compact_files(
    inner: &DbInner,
    cfd: &Arc<Cfd>,
    inputs: &[FileNumber],
    output_level: usize,
) -> Result<()> {
    let o = cfd.live_opts().picker_options();
    if output_level >= o.num_levels {
        return Err(Error::InvalidArgument(format!(
            "compact_files: output level {output_level} is beyond the last level {}",
            o.num_levels - 1
        )));
    }
    if inputs.is_empty() {
        return Err(Error::InvalidArgument("compact_files: no input files".into()));
    }
    inner.state.lock().manual_compactions += 1;
    let r = compact_files_locked_out(inner, cfd, inputs, output_level, &o);
    {
        let mut st = inner.state.lock();
        st.manual_compactions -= 1;
        inner.bg_cv.notify_all();
    }
    r
}

fn compact_files_locked_out(
    inner: &DbInner,
    cfd: &Arc<Cfd>,
    inputs: &[FileNumber],
    output_level: usize,
    o: &crate::compaction::picker::PickerOptions,
) -> Result<()> {
    let mut refusal: Option<Error> = None;
    let plan = wait_for_plan(inner, cfd, |v, busy| {
        let mut level = None;
        let mut files = Vec::new();
        for &n in inputs {
            let Some((l, f)) = v.files().find(|(_, f)| f.number == n) else {
                refusal = Some(Error::InvalidArgument(format!(
                    "compact_files: table {n} is not a live file of column family {:?}",
                    cfd.name
                )));
                return Some(None);
            };
            if level.is_some_and(|x| x != l) {
                refusal = Some(Error::InvalidArgument(
                    "compact_files: the input files are on different levels".into(),
                ));
                return Some(None);
            }
            level = Some(l);
            files.push(f.clone());
        }
        let level = level?;
        if output_level < level {
            refusal = Some(Error::InvalidArgument(format!(
                "compact_files: output level {output_level} is above the inputs' level {level}"
            )));
            return Some(None);
        }
        if level == 0 {
            // L0 is newest first.
            let l0 = &v.levels[0];
            let newest = l0.iter().position(|f| inputs.contains(&f.number)).unwrap_or(0);
            let oldest = match output_level {
                0 => l0.iter().rposition(|f| inputs.contains(&f.number)).unwrap_or(newest),
                _ => l0.len() - 1,
            };
            files = l0[newest..=oldest].to_vec();
        }
        let (lo, hi) = range_of(files.iter(), v.order())?;
        if let Some(between) =
            (level + 1..output_level).find(|&l| !overlapping(v, l, &lo, &hi).is_empty())
        {
            refusal = Some(Error::InvalidArgument(format!(
                "compact_files: level {between} holds keys in the inputs' range; compact into \
                 level {between} (or compact it first)"
            )));
            return Some(None);
        }
        let t = level_targets(v, o);
        let c = PickContext { v, o, t: &t, busy };
        plan_for(&c, level, output_level, files).map(Some)
    })?;
    if let Some(e) = refusal {
        return Err(e);
    }
    match plan {
        Some(plan) => run_manual(inner, cfd, placed(cfd, o, plan)),
        None => Ok(()),
    }
}

/// `plan` with the table path of its outputs chosen for family `cfd`
/// (`compaction::output_path`): manual compactions place their outputs as automatic ones do.
fn placed(
    cfd: &Cfd,
    o: &crate::compaction::picker::PickerOptions,
    mut plan: CompactionPlan,
) -> CompactionPlan {
    place(&mut plan, &cfd.paths.targets(), o);
    plan
}

#[cfg(test)]
mod tests;
