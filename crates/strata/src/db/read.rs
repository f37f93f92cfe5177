//! Point reads: memtables newest first, then L0 newest first, then one file per deeper level.

use super::pinnable::DbPinnableSlice;
use super::row_cache::Recorder;
use super::{Cfd, DbInner};
use crate::cache::Probe;
use crate::error::{Error, Result};
use crate::key::{append_internal_key, parse_internal_key, user_key, TRAILER_LEN};
use crate::merge_operator::MergeOperator;
use crate::options::ReadOptions;
use crate::perf_context::{self, PerfMetric, PerfTimer};
use crate::sstable::ReadBlockOptions;
use crate::statistics::{Histogram, StopWatch};
use crate::stats::Ticker;
use crate::types::{SeqNo, ValueType};
use crate::version::levels::TableFile;

/// Where a lookup stands after seeing some entries of its key, newest first.
pub(crate) enum Lookup {
    /// Nothing decisive seen yet.
    Searching,
    Found(Vec<u8>),
    /// (Pinning lookups) the value is the one just given to [`GetContext::add`]: the source
    /// that gave it must pin it (`Pinned`) before its bytes go away.
    FoundHere,
    Pinned(DbPinnableSlice),
    /// (Collecting lookups) decided: the operands stacked, above the base value if one was
    /// found (`GetContext::collect`).
    Operands(Option<Vec<u8>>),
    Deleted,
    Failed(Error),
}

/// Feeds entries (newest first, starting at the lookup key) into a [`Lookup`], stacking merge
/// operands until a base value, a deletion or the end of the sources.
pub(crate) struct GetContext<'a> {
    pub user_key: &'a [u8],
    pub merge_operator: Option<&'a dyn MergeOperator>,
    /// Merge operands seen so far, newest first.
    pub operands: Vec<Vec<u8>>,
    pub state: Lookup,
    /// The newest range tombstone covering the key (visible at the read sequence) among the
    /// sources read so far: entries older than it are deleted. Raised by each source before
    /// its entries are fed.
    pub covered_below: SeqNo,
    /// Pin a found value where it lies instead of copying it (`Lookup::FoundHere`).
    pub pin: bool,
    /// Reads values kept in blob files (entries of type `BlobIndex`).
    pub blobs: Option<&'a dyn crate::iterator::BlobFetch>,
    /// GetMergeOperands (`db/merge_operands.rs`): the lookup ends with the operands and the
    /// base value as found, never merged (no merge operator is needed), and a value with
    /// no operands above it is one operand too.
    pub collect: bool,
    /// With `collect`: asked of each operand, newest first; `false` ends the lookup there.
    pub continue_cb: Option<super::merge_operands::OperandCallback<'a>>,
    /// GetEntity (`db/entity.rs`): a wide-column entity found is the lookup's value as
    /// stored (its encoding), and a merge onto one makes the entity with the merged default
    /// column. Otherwise an entity's value is its default column.
    pub entity: bool,
    /// With `entity`: the value found is an entity's encoding, not a plain value.
    pub found_entity: bool,
}

impl<'a> GetContext<'a> {
    pub fn new(user_key: &'a [u8], merge_operator: Option<&'a dyn MergeOperator>) -> Self {
        GetContext {
            user_key,
            merge_operator,
            operands: Vec::new(),
            state: Lookup::Searching,
            covered_below: SeqNo::ZERO,
            pin: false,
            blobs: None,
            collect: false,
            continue_cb: None,
            entity: false,
            found_entity: false,
        }
    }

    /// Pins the value just found (if the last `add` found one in place) with `pin`.
    #[inline]
    fn pin_found(&mut self, pin: impl FnOnce() -> DbPinnableSlice) {
        if matches!(self.state, Lookup::FoundHere) {
            self.state = Lookup::Pinned(pin());
        }
    }

    /// Takes a source's tombstones into account before its entries.
    #[inline]
    fn cover(&mut self, f: Option<&crate::range_del::FragmentedTombstones>, read_seq: SeqNo) {
        if let Some(f) = f {
            self.cover_seq(f.max_covering_seq(self.user_key, read_seq));
        }
    }

    /// Takes into account a source's newest tombstone covering the key (0: none).
    #[inline]
    pub(super) fn cover_seq(&mut self, covering: SeqNo) {
        self.covered_below = self.covered_below.max(covering);
    }

    /// Ends the lookup with `e`.
    pub(super) fn fail(&mut self, e: Error) {
        self.state = Lookup::Failed(e);
    }

    /// Once a tombstone covers the key, every entry in older sources is older than it (the
    /// LSM order of sources), so the lookup ends as if a deletion were found.
    pub(super) fn end_if_covered(&mut self) {
        if !self.is_done() && self.covered_below > SeqNo::ZERO {
            self.state = if self.operands.is_empty() { Lookup::Deleted } else { self.merge(None) };
        }
    }

    /// Consumes one entry; returns true to keep reading (the entry did not decide the lookup).
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> bool {
        let Some(p) = parse_internal_key(ikey) else {
            self.state = Lookup::Failed(Error::corruption(
                "",
                0,
                format!("malformed internal key of {} bytes", ikey.len()),
            ));
            return false;
        };
        if p.user_key != self.user_key {
            return false;
        }
        if p.seq < self.covered_below {
            self.state = if self.operands.is_empty() { Lookup::Deleted } else { self.merge(None) };
            return false;
        }
        match p.value_type {
            ValueType::Value => {
                self.state = if self.operands.is_empty() && !self.collect {
                    if self.pin {
                        Lookup::FoundHere
                    } else {
                        Lookup::Found(value.to_vec())
                    }
                } else {
                    self.merge(Some(value))
                };
                false
            }
            ValueType::Deletion | ValueType::SingleDeletion => {
                self.state =
                    if self.operands.is_empty() { Lookup::Deleted } else { self.merge(None) };
                false
            }
            ValueType::Merge => {
                if self.merge_operator.is_none() && !self.collect {
                    self.state = Lookup::Failed(Error::InvalidArgument(format!(
                        "key {:?} holds merge operands but no merge operator is configured",
                        String::from_utf8_lossy(self.user_key)
                    )));
                    return false;
                }
                perf_context::count(PerfMetric::InternalMergeCount, 1);
                self.operands.push(value.to_vec());
                if self.continue_cb.is_some_and(|go_on| !go_on(value)) {
                    self.state = Lookup::Operands(None);
                    return false;
                }
                true
            }
            ValueType::Entity => {
                self.state = self.take_entity(value);
                false
            }
            // Range tombstones live in their own structures, never on the point path.
            ValueType::RangeDeletion => true,
            ValueType::BlobIndex => {
                let v = match self.blobs {
                    Some(b) => b.fetch(self.user_key, value),
                    None => Err(crate::iterator::no_blob_source(self.user_key)),
                };
                self.state = match v {
                    Ok(v) if self.operands.is_empty() && !self.collect => Lookup::Found(v),
                    Ok(v) => self.merge(Some(&v)),
                    Err(e) => Lookup::Failed(e),
                };
                false
            }
        }
    }

    /// Decides the lookup on a wide-column entity (module doc of `wide_columns.rs`): its
    /// default column is the value, the operands' base and a collecting lookup's base.
    fn take_entity(&mut self, entity: &[u8]) -> Lookup {
        let default = match crate::wide_columns::default_value(entity) {
            Ok(d) => d,
            Err(e) => return Lookup::Failed(e),
        };
        if self.collect {
            return self.merge(Some(default));
        }
        if self.operands.is_empty() {
            if !self.entity {
                return Lookup::Found(default.to_vec());
            }
            self.found_entity = true;
            return if self.pin { Lookup::FoundHere } else { Lookup::Found(entity.to_vec()) };
        }
        match self.merge(Some(default)) {
            Lookup::Found(merged) if self.entity => {
                self.found_entity = true;
                match crate::wide_columns::with_default_value(entity, &merged) {
                    Ok(e) => Lookup::Found(e),
                    Err(e) => Lookup::Failed(e),
                }
            }
            decided => decided,
        }
    }

    /// Applies the stacked operands to `base` (a collecting lookup keeps them as they are).
    fn merge(&self, base: Option<&[u8]>) -> Lookup {
        if self.collect {
            return Lookup::Operands(base.map(<[u8]>::to_vec));
        }
        let Some(op) = self.merge_operator else {
            return Lookup::Failed(Error::InvalidArgument("no merge operator".into()));
        };
        let operands: Vec<&[u8]> = self.operands.iter().rev().map(Vec::as_slice).collect();
        match op.full_merge(self.user_key, base, &operands) {
            Some(v) => Lookup::Found(v),
            None => Lookup::Failed(Error::corruption(
                "",
                0,
                format!(
                    "Merge operator failed: {} on key {:?}",
                    op.name(),
                    String::from_utf8_lossy(self.user_key)
                ),
            )),
        }
    }

    /// Merges the operands left when no source held a base value or a deletion.
    fn settle(&mut self) {
        if matches!(self.state, Lookup::Searching) && !self.operands.is_empty() {
            self.state = self.merge(None);
        }
    }

    /// Ends a copying lookup (`pin` false) after every source was read: the value as an owned
    /// vector, with no pinnable wrapper on the way. Inlined into the point read (out of line it
    /// costs a copy of the context, about 20 instructions a get).
    #[inline(always)]
    pub fn finish_copied(mut self) -> Result<Option<Vec<u8>>> {
        self.settle();
        match self.state {
            Lookup::Found(v) => Ok(Some(v)),
            Lookup::Searching | Lookup::Deleted => Ok(None),
            Lookup::Pinned(p) => Ok(Some(p.into_vec())),
            Lookup::FoundHere => Err(Error::InvalidArgument(
                "internal: a copying lookup's value was left in place".into(),
            )),
            Lookup::Operands(_) => Err(collected()),
            Lookup::Failed(e) => Err(e),
        }
    }

    /// Ends the lookup after every source was read.
    pub fn finish(mut self) -> Result<Option<DbPinnableSlice>> {
        self.settle();
        match self.state {
            Lookup::Found(v) => Ok(Some(DbPinnableSlice::owned(v))),
            Lookup::Pinned(p) => Ok(Some(p)),
            Lookup::Searching | Lookup::Deleted => Ok(None),
            // A source that did not pin its value: a defect, reported rather than panicking.
            Lookup::FoundHere => Err(Error::InvalidArgument(
                "internal: a pinned lookup's value was not pinned by its source".into(),
            )),
            Lookup::Operands(_) => Err(collected()),
            Lookup::Failed(e) => Err(e),
        }
    }

    /// Ends a collecting lookup (`collect`) after every source was read: the base value (if
    /// one was found) and the operands above it, oldest first; `None` when the key is
    /// deleted or was never written.
    pub fn finish_operands(mut self) -> Result<Option<Vec<Vec<u8>>>> {
        self.settle();
        let base = match self.state {
            Lookup::Operands(base) => base,
            Lookup::Searching | Lookup::Deleted => return Ok(None),
            Lookup::Failed(e) => return Err(e),
            Lookup::Found(_) | Lookup::FoundHere | Lookup::Pinned(_) => {
                return Err(Error::InvalidArgument(
                    "internal: a collecting lookup merged its operands".into(),
                ))
            }
        };
        let mut operands = self.operands;
        operands.reverse();
        if let Some(b) = base {
            operands.insert(0, b);
        }
        Ok(Some(operands))
    }

    /// Attributes a decoding failure to the table it came from.
    fn name_file(&mut self, path: &std::path::Path) {
        if let Lookup::Failed(e) = &mut self.state {
            // A blob file's error already names its file.
            let named = matches!(e, Error::Corruption { file, .. } | Error::ChecksumMismatch { file, .. }
                if !file.as_os_str().is_empty());
            if e.is_corruption() && !named {
                let taken = std::mem::replace(e, Error::ShutdownInProgress);
                *e = taken.with_file(path);
            }
        }
    }

    pub(super) fn is_done(&self) -> bool {
        !matches!(self.state, Lookup::Searching)
    }

    fn failed(&self) -> bool {
        matches!(self.state, Lookup::Failed(_))
    }
}

/// An internal key built on the stack for ordinary key sizes: a lookup's seek key, or a row
/// cache replay's entry key (`row_cache.rs`, its trailer set per entry).
pub(super) struct LookupKeyBuf {
    inline: [u8; 128],
    heap: Vec<u8>,
    len: usize,
}

impl LookupKeyBuf {
    #[inline(always)]
    pub(super) fn new(ukey: &[u8], seq: SeqNo) -> Self {
        let mut b = LookupKeyBuf { inline: [0; 128], heap: Vec::new(), len: ukey.len() + 8 };
        if b.len <= b.inline.len() {
            b.inline[..ukey.len()].copy_from_slice(ukey);
            let t = crate::key::pack_trailer(seq, ValueType::FOR_SEEK);
            b.inline[ukey.len()..b.len].copy_from_slice(&t.to_le_bytes());
        } else {
            append_internal_key(&mut b.heap, ukey, seq, ValueType::FOR_SEEK);
        }
        b
    }

    pub(super) fn as_slice(&self) -> &[u8] {
        if self.heap.is_empty() {
            &self.inline[..self.len]
        } else {
            &self.heap
        }
    }

    /// Replaces the key's trailer (sequence number and type) with `trailer`'s 8 bytes.
    pub(super) fn set_trailer(&mut self, trailer: &[u8]) {
        let key = if self.heap.is_empty() { &mut self.inline[..self.len] } else { &mut self.heap };
        let at = key.len() - TRAILER_LEN;
        key[at..].copy_from_slice(trailer);
    }
}

pub(crate) fn get(
    inner: &DbInner,
    cfd: &Cfd,
    key: &[u8],
    opts: &ReadOptions,
) -> Result<Option<Vec<u8>>> {
    if cfd.opts.timestamps.is_some() {
        return get_at_timestamp(inner, cfd, key, opts);
    }
    opts.read_timestamp(None)?;
    let _timer = StopWatch::start(inner.stats.user_statistics(), Histogram::DbGet);
    cfd.local_svs.with(
        || cfd.current_super_version(),
        |sv| {
            let seq = super::snapshot_reads::read_sequence(inner, cfd, opts)?;
            get_copied_at(inner, cfd, sv, key, seq, opts)
        },
    )
}

/// [`get`], the value pinned where it lies (`db/pinnable.rs`). The super version is taken
/// afresh (not the thread's cached one): the value may hold its memtable past the call.
pub(crate) fn get_pinned(
    inner: &DbInner,
    cfd: &Cfd,
    key: &[u8],
    opts: &ReadOptions,
) -> Result<Option<DbPinnableSlice>> {
    if cfd.opts.timestamps.is_some() {
        return get_at_timestamp(inner, cfd, key, opts).map(|v| v.map(DbPinnableSlice::owned));
    }
    opts.read_timestamp(None)?;
    let _timer = StopWatch::start(inner.stats.user_statistics(), Histogram::DbGet);
    let sv = cfd.current_super_version();
    let seq = super::snapshot_reads::read_sequence(inner, cfd, opts)?;
    get_at(inner, cfd, &sv, key, seq, opts, true)
}

pub(crate) fn multi_get<K: AsRef<[u8]>>(
    inner: &DbInner,
    cfd: &Cfd,
    keys: Vec<K>,
    opts: &ReadOptions,
) -> Vec<Result<Option<Vec<u8>>>> {
    if cfd.opts.timestamps.is_some() {
        return keys.iter().map(|k| get_at_timestamp(inner, cfd, k.as_ref(), opts)).collect();
    }
    if let Err(e) = opts.read_timestamp(None) {
        return keys.iter().map(|_| Err(e.duplicate())).collect();
    }
    let statistics = inner.stats.user_statistics();
    let _timer = StopWatch::start(statistics, Histogram::DbMultiget);
    let sv = cfd.current_super_version();
    let seq = match super::snapshot_reads::read_sequence(inner, cfd, opts) {
        Ok(seq) => seq,
        Err(e) => return keys.iter().map(|_| Err(e.duplicate())).collect(),
    };
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by(|&a, &b| keys[a].as_ref().cmp(keys[b].as_ref()));
    let mut out: Vec<Option<Result<Option<Vec<u8>>>>> = (0..keys.len()).map(|_| None).collect();
    for i in order {
        out[i] = Some(get_copied_at(inner, cfd, &sv, keys[i].as_ref(), seq, opts));
    }
    let out: Vec<_> = out.into_iter().map(|r| r.unwrap_or(Ok(None))).collect();
    if let Some(s) = statistics {
        let bytes: usize =
            out.iter().map(|r| r.as_ref().map_or(0, |v| v.as_ref().map_or(0, Vec::len))).sum();
        s.tick(crate::statistics::Ticker::NumberMultigetCalls, 1);
        s.tick(crate::statistics::Ticker::NumberMultigetKeysRead, out.len() as u64);
        s.tick(crate::statistics::Ticker::NumberMultigetBytesRead, bytes as u64);
        s.record(Histogram::BytesPerMultiget, bytes as u64);
    }
    out
}

/// The value of `key` in family `cfd`, which has user-defined timestamps, at the read
/// options' timestamp: its newest version at or below it, unless that is a deletion
/// (`db/ts_iter.rs`, whose cursor finds it).
fn get_at_timestamp(
    inner: &DbInner,
    cfd: &Cfd,
    key: &[u8],
    opts: &ReadOptions,
) -> Result<Option<Vec<u8>>> {
    let _timer = StopWatch::start(inner.stats.user_statistics(), Histogram::DbGet);
    // A point read ignores `iter_start_ts` (as RocksDB's), and bounds.
    let ro = ReadOptions {
        iterate_lower_bound: None,
        iterate_upper_bound: None,
        iter_start_ts: None,
        ..opts.clone()
    };
    let mut it = super::iter::new_raw_iter(inner, cfd, &ro);
    it.seek(key);
    it.status()?;
    Ok(match it.key() {
        Some(k) if k == key => it.value().map(<[u8]>::to_vec),
        _ => None,
    })
}

/// The value of `key` at `seq` in `sv`, pinned where it lies when `pin` (else owned).
pub(crate) fn get_at(
    inner: &DbInner,
    cfd: &Cfd,
    sv: &super::SuperVersion,
    key: &[u8],
    seq: SeqNo,
    opts: &ReadOptions,
    pin: bool,
) -> Result<Option<DbPinnableSlice>> {
    let mut ctx = GetContext::new(key, cfd.opts.merge_operator.as_deref());
    let blobs = crate::blob::BlobReads { source: &*inner.blobs, fill: opts.fill_cache };
    ctx.blobs = Some(&blobs);
    ctx.pin = pin;
    search(inner, sv, key, seq, opts, &mut ctx)?;
    let mut found = ctx.finish();
    if cfd.value_suffix > 0 {
        if let Ok(Some(v)) = &mut found {
            let n = super::ttl::user_len(key, v.len())?;
            v.truncate(n);
        }
    }
    count_bytes_read(inner, found)
}

/// [`get_at`] for a copying read: the value as an owned vector.
fn get_copied_at(
    inner: &DbInner,
    cfd: &Cfd,
    sv: &super::SuperVersion,
    key: &[u8],
    seq: SeqNo,
    opts: &ReadOptions,
) -> Result<Option<Vec<u8>>> {
    let mut ctx = GetContext::new(key, cfd.opts.merge_operator.as_deref());
    let blobs = crate::blob::BlobReads { source: &*inner.blobs, fill: opts.fill_cache };
    ctx.blobs = Some(&blobs);
    search(inner, sv, key, seq, opts, &mut ctx)?;
    let mut found = ctx.finish_copied();
    if cfd.value_suffix > 0 {
        if let Ok(Some(v)) = &mut found {
            let n = super::ttl::user_len(key, v.len())?;
            v.truncate(n);
        }
    }
    count_bytes_read(inner, found)
}

/// Counts a found value's bytes as read.
#[inline]
fn count_bytes_read<V: std::ops::Deref<Target = [u8]>>(
    inner: &DbInner,
    r: Result<Option<V>>,
) -> Result<Option<V>> {
    if let Ok(Some(v)) = &r {
        inner.stats.tickers.add(Ticker::BytesRead, v.len() as u64);
        perf_context::count(PerfMetric::GetReadBytes, v.len() as u64);
        if let Some(s) = inner.stats.user_statistics() {
            s.record(Histogram::BytesPerRead, v.len() as u64);
        }
    }
    r
}

/// A value lookup that ended with its operands unmerged: a defect, reported rather than
/// panicking.
fn collected() -> Error {
    Error::InvalidArgument("internal: a value lookup ended with its operands unmerged".into())
}

/// Feeds `ctx` the entries of `key` at `seq` from the sources of `sv`, newest first, until
/// one decides the lookup. Inlined into each caller (the copying get, the pinning get,
/// GetMergeOperands), with its lookup key's set-up: left to itself, the compiler stops
/// inlining it once it has three callers, and the copying get, the hot one, then pays a call
/// and a lookup key built out of line on every read.
#[inline(always)]
pub(super) fn search(
    inner: &DbInner,
    sv: &super::SuperVersion,
    key: &[u8],
    seq: SeqNo,
    opts: &ReadOptions,
    ctx: &mut GetContext<'_>,
) -> Result<()> {
    let lkey = LookupKeyBuf::new(key, seq);
    let lkey = lkey.as_slice();
    let tickers = &inner.stats.tickers;
    tickers.add(Ticker::KeysRead, 1);
    let memtable_timer = PerfTimer::start(PerfMetric::GetFromMemtableTime);
    for m in std::iter::once(&sv.mem).chain(&sv.imm) {
        perf_context::count(PerfMetric::GetFromMemtableCount, 1);
        ctx.cover(m.fragmented_range_tombstones().as_deref(), seq);
        m.get(lkey, |k, v| {
            let more = ctx.add(k, v);
            ctx.pin_found(|| DbPinnableSlice::in_memtable(m, v));
            more
        });
        // A link the key order panicked in left entries unreachable: the walk may have
        // missed the newest version of `key`, so no answer from it is sound.
        m.check_sound()?;
        ctx.end_if_covered();
        if ctx.is_done() {
            break;
        }
    }
    drop(memtable_timer);
    tickers.add(if ctx.is_done() { Ticker::MemtableHit } else { Ticker::MemtableMiss }, 1);
    if !ctx.is_done() {
        let _files_timer = PerfTimer::start(PerfMetric::GetFromOutputFilesTime);
        let ro = ReadBlockOptions {
            verify_checksums: opts.verify_checksums,
            fill_cache: opts.fill_cache,
            readahead_size: 0,
            cache_only: opts.cache_only(),
        };
        // One table: if its Bloom filter lets the key through, its row in the row cache if
        // there is one (`row_cache.rs`); else its tombstones (they apply even where the filter
        // says no), then, through the filter, its entries.
        let search_table = |ctx: &mut GetContext<'_>, f: &TableFile, level: usize| -> Result<()> {
            let t = inner.table_cache.reader_at(f.number, &f.pinned, level)?;
            let passes = filter_passes(tickers, &t, key)?;
            let rows = inner.row_cache.as_ref().filter(|_| passes);
            let mut keep = false;
            if let Some(r) = rows {
                match r.probe(f, seq, key, inner.stats.user_statistics().map(|s| &**s)) {
                    Probe::Hit(row) => {
                        super::row_cache::replay(&row, key, ctx);
                        return Ok(());
                    }
                    // A row holds a key's entries up to the one that decided the lookup by
                    // them alone; a callback's stop is not such a place.
                    Probe::Miss { keep: k } => {
                        keep = k && opts.fill_cache && ctx.continue_cb.is_none();
                    }
                }
            }
            let tombstones = t.fragmented_range_tombstones();
            let cover = tombstones.map_or(SeqNo::ZERO, |ts| ts.max_covering_seq(key, seq));
            ctx.cover_seq(cover);
            let mut rec = keep.then(|| Recorder::new(cover));
            if passes {
                match &mut rec {
                    None => t.get_in_blocks(lkey, &ro, |block, k, v| {
                        let more = ctx.add(k, v);
                        ctx.pin_found(|| DbPinnableSlice::in_block(block, v));
                        more
                    })?,
                    Some(rec) => t.get_in_blocks(lkey, &ro, |block, k, v| {
                        rec.take(k, v, key);
                        let more = ctx.add(k, v);
                        ctx.pin_found(|| DbPinnableSlice::in_block(block, v));
                        more
                    })?,
                }
                ctx.name_file(t.path());
            }
            ctx.end_if_covered();
            if let (Some(rows), Some(rec)) = (rows, rec) {
                if rec.holds_entries() && !ctx.failed() {
                    rows.insert(f, seq, key, rec);
                }
            }
            Ok(())
        };
        'levels: for (level, files) in sv.version.levels.iter().enumerate() {
            // Empty levels are skipped before any of their fences are read: a universal or
            // tiered family has up to `num_levels` (often 40) levels, most of them empty, and
            // a lookup in each cost a call and its loads per level.
            if files.is_empty() {
                continue;
            }
            if level == 0 {
                for f in files {
                    let o = sv.version.order();
                    if o.lt(key, user_key(&f.smallest)) || o.after_largest(key, &f.largest) {
                        continue;
                    }
                    search_table(ctx, f, level)?;
                    if ctx.is_done() {
                        tickers.add(Ticker::GetHitL0, 1);
                        break 'levels;
                    }
                }
                continue;
            }
            let Some(f) = sv.version.file_for_key(level, key) else { continue };
            search_table(ctx, f, level)?;
            if ctx.is_done() {
                tickers.add(if level == 1 { Ticker::GetHitL1 } else { Ticker::GetHitL2AndUp }, 1);
                break;
            }
        }
    }
    Ok(())
}

/// Consults the table's Bloom filter, counting checks and the lookups it saved.
fn filter_passes(
    tickers: &crate::stats::Tickers,
    t: &crate::sstable::TableReader,
    key: &[u8],
) -> Result<bool> {
    let pass = t.may_contain(key)?;
    tickers.add(if pass { Ticker::BloomChecked } else { Ticker::BloomUseful }, 1);
    let m = if pass { PerfMetric::BloomSstHitCount } else { PerfMetric::BloomSstMissCount };
    perf_context::count(m, 1);
    Ok(pass)
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use crate::db::Db;
    use crate::env::MemFs;
    use crate::options::{CompactionStyle, Options};
    use crate::version::levels::LEVEL_SEARCHES;

    /// Regression: a point read searched every sorted level, empty or not, so a universal
    /// family with 40 levels and one run paid 39 searches per read (half its time).
    #[test]
    fn a_point_read_searches_only_the_levels_holding_tables() {
        let fs = MemFs::new();
        let opts = Options {
            fs: Arc::new(fs),
            compaction_style: CompactionStyle::Universal,
            num_levels: 40,
            ..Options::default()
        };
        let db = Db::open(&opts, Path::new("/db")).unwrap();
        for i in 0..100u32 {
            db.put(format!("key{i:03}"), b"v").unwrap();
        }
        db.flush().unwrap();
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        let searched = |key: &[u8]| {
            LEVEL_SEARCHES.with(|n| n.set(0));
            let found = db.get(key).unwrap();
            (found, LEVEL_SEARCHES.with(std::cell::Cell::get))
        };
        assert_eq!(searched(b"key042"), (Some(b"v".to_vec()), 1), "one run: one level searched");
        assert_eq!(searched(b"nokey"), (None, 1), "a miss searches the same one level");
    }
}
