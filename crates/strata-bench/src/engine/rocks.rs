//! `--engine=rocksdb` (cargo feature `rocksdb`): RocksDB through the `rocksdb` crate, with the
//! same flags mapped onto RocksDB's options as db_bench maps them.
//!
//! Merge operators are the crate's Rust callbacks (RocksDB's C++ built-ins are not reachable
//! through its C API), implemented in [`super::merge`].

use anyhow::{anyhow, bail, Context, Result};
use rocksdb::{
    BlockBasedOptions, BottommostLevelCompaction, Cache, ColumnFamilyDescriptor, CompactOptions,
    CompactionPri, DBCompactionStyle, DBCompressionType, FifoCompactOptions, LruCacheOptions,
    MemtableFactory, MergeOperands, Options, ReadOptions, SliceTransform, UniversalCompactOptions,
    UniversalCompactionStopStyle, WaitForCompactOptions, WriteBatch, WriteBufferManager,
    WriteOptions, DB,
};

use super::merge::MergeKind;
use super::{
    Batch, BatchOp, Bounds, Engine, EngineIter, EngineSnapshot, LiveFile, ReadOpts, WriteOpts,
};
use crate::config::{Compression, Config};

/// Version of the RocksDB library the `rocksdb` crate bundles.
pub fn version() -> &'static str {
    super::ROCKSDB_VERSION
}

// The flags applied here are listed in `crate::engine_kind::ROCKSDB_HONOURED_FLAGS`.

fn compression_of(c: Compression) -> Result<DBCompressionType> {
    Ok(match c {
        Compression::None => DBCompressionType::None,
        Compression::Snappy => DBCompressionType::Snappy,
        Compression::Lz4 => DBCompressionType::Lz4,
        Compression::Lz4hc => DBCompressionType::Lz4hc,
        Compression::Zstd => DBCompressionType::Zstd,
        other => bail!("compression {other:?} is not compiled into this RocksDB build"),
    })
}

fn int(name: &str, v: i64) -> Result<i32> {
    i32::try_from(v).map_err(|_| anyhow!("--{name}={v}: out of range"))
}

fn size(name: &str, v: i64) -> Result<usize> {
    usize::try_from(v).map_err(|_| anyhow!("--{name}={v}: must not be negative"))
}

/// The block cache of `--cache_size` and `--cache_type` (None without one).
fn block_cache(f: &crate::flags::Flags) -> Result<Option<Cache>> {
    if f.cache_size <= 0 {
        return Ok(None);
    }
    let cap = f.cache_size as usize;
    let cache = match f.cache_type.as_str() {
        "lru_cache" => {
            let mut lo = LruCacheOptions::default();
            lo.set_capacity(cap);
            if f.cache_numshardbits >= 0 {
                lo.set_num_shard_bits(int("cache_numshardbits", f.cache_numshardbits)?);
            }
            Cache::new_lru_cache_opts(&lo)
        }
        "hyper_clock_cache" | "auto_hyper_clock_cache" => Cache::new_hyper_clock_cache(cap, 0),
        "fixed_hyper_clock_cache" => {
            Cache::new_hyper_clock_cache(cap, size("block_size", f.block_size)?)
        }
        "clock_cache" => bail!("Old clock cache implementation has been removed."),
        other => bail!("--cache_type={other}: Cache type not supported."),
    };
    Ok(Some(cache))
}

/// RocksDB `Options` from the flags (db_bench's `InitializeOptionsFromFlags`).
pub fn build_options(cfg: &Config) -> Result<Options> {
    let f = &cfg.flags;
    let mut o = Options::default();
    // As db_bench: a run on an existing DB never creates an empty one.
    o.create_if_missing(!cfg.use_existing_db);
    o.set_write_buffer_size(size("write_buffer_size", f.write_buffer_size)?);
    if let Some(ratio) = super::memtable_bloom_size_ratio(cfg)? {
        o.set_memtable_prefix_bloom_ratio(ratio);
    }
    o.set_memtable_whole_key_filtering(f.memtable_whole_key_filtering);
    o.set_max_write_buffer_number(int("max_write_buffer_number", f.max_write_buffer_number)?);
    o.set_min_write_buffer_number_to_merge(int(
        "min_write_buffer_number_to_merge",
        f.min_write_buffer_number_to_merge,
    )?);
    // db_bench: either flag makes a write buffer manager of --db_write_buffer_size bytes
    // charged to the block cache (when there is one).
    let cache = block_cache(f)?;
    if f.cost_write_buffer_to_cache || f.db_write_buffer_size != 0 {
        let budget = size("db_write_buffer_size", f.db_write_buffer_size)?;
        let m = match &cache {
            Some(c) => {
                WriteBufferManager::new_write_buffer_manager_with_cache(budget, false, c.clone())
            }
            None => WriteBufferManager::new_write_buffer_manager(budget, false),
        };
        o.set_write_buffer_manager(&m);
    }
    o.set_max_background_jobs(int("max_background_jobs", f.max_background_jobs)?);
    // Deprecated in RocksDB (derived from max_background_jobs) but still applied, as db_bench does.
    #[allow(deprecated)]
    if f.max_background_compactions != -1 {
        o.set_max_background_compactions(int(
            "max_background_compactions",
            f.max_background_compactions,
        )?);
    }
    #[allow(deprecated)]
    if f.max_background_flushes != -1 {
        o.set_max_background_flushes(int("max_background_flushes", f.max_background_flushes)?);
    }
    o.set_max_subcompactions(int("subcompactions", f.subcompactions)?.max(1) as u32);
    match f.compaction_style {
        0 => o.set_compaction_style(DBCompactionStyle::Level),
        1 => o.set_compaction_style(DBCompactionStyle::Universal),
        2 => o.set_compaction_style(DBCompactionStyle::Fifo),
        3 => {
            o.set_compaction_style(DBCompactionStyle::Level);
            o.set_disable_auto_compactions(true);
        }
        4 => bail!(
            "--compaction_style=4: tiered compaction is Strata's own write-optimised style; \
             RocksDB has no equivalent (use 0, 1, 2 or 3 with --engine=rocksdb)"
        ),
        v => bail!("--compaction_style={v}: use 0 (level), 1 (universal), 2 (FIFO) or 3 (none)"),
    }
    o.set_compaction_pri(match f.compaction_pri {
        0 => CompactionPri::ByCompensatedSize,
        1 => CompactionPri::OldestLargestSeqFirst,
        2 => CompactionPri::OldestSmallestSeqFirst,
        3 => CompactionPri::MinOverlappingRatio,
        4 => CompactionPri::RoundRobin,
        v => bail!("--compaction_pri={v}: use 0..4"),
    });
    o.set_num_levels(int("num_levels", f.num_levels)?);
    o.set_target_file_size_base(f.target_file_size_base.max(0) as u64);
    o.set_target_file_size_multiplier(int(
        "target_file_size_multiplier",
        f.target_file_size_multiplier,
    )?);
    o.set_max_bytes_for_level_base(f.max_bytes_for_level_base);
    o.set_max_compaction_bytes(f.max_compaction_bytes);
    o.set_max_bytes_for_level_multiplier(f.max_bytes_for_level_multiplier);
    o.set_level_compaction_dynamic_level_bytes(f.level_compaction_dynamic_level_bytes);
    o.set_level_zero_file_num_compaction_trigger(int(
        "level0_file_num_compaction_trigger",
        f.level0_file_num_compaction_trigger,
    )?);
    o.set_level_zero_slowdown_writes_trigger(int(
        "level0_slowdown_writes_trigger",
        f.level0_slowdown_writes_trigger,
    )?);
    o.set_level_zero_stop_writes_trigger(int(
        "level0_stop_writes_trigger",
        f.level0_stop_writes_trigger,
    )?);
    o.set_soft_pending_compaction_bytes_limit(f.soft_pending_compaction_bytes_limit as usize);
    o.set_hard_pending_compaction_bytes_limit(f.hard_pending_compaction_bytes_limit as usize);
    if f.disable_auto_compactions {
        o.set_disable_auto_compactions(true);
    }
    if f.compaction_style == 1 {
        let mut u = UniversalCompactOptions::default();
        if f.universal_size_ratio != 0 {
            u.set_size_ratio(int("universal_size_ratio", f.universal_size_ratio)?);
        }
        if f.universal_min_merge_width != 0 {
            u.set_min_merge_width(int("universal_min_merge_width", f.universal_min_merge_width)?);
        }
        if f.universal_max_merge_width != 0 {
            u.set_max_merge_width(int("universal_max_merge_width", f.universal_max_merge_width)?);
        }
        if f.universal_max_size_amplification_percent != 0 {
            u.set_max_size_amplification_percent(int(
                "universal_max_size_amplification_percent",
                f.universal_max_size_amplification_percent,
            )?);
        }
        if f.universal_compression_size_percent != -1 {
            u.set_compression_size_percent(int(
                "universal_compression_size_percent",
                f.universal_compression_size_percent,
            )?);
        }
        u.set_stop_style(match f.universal_stop_style {
            0 => UniversalCompactionStopStyle::Total,
            1 => UniversalCompactionStopStyle::Similar,
            v => bail!("--universal_stop_style={v}: use 0 (total size) or 1 (similar size)"),
        });
        o.set_universal_compaction_options(&u);
    }
    if f.compaction_style == 2 {
        let mut fifo = FifoCompactOptions::default();
        // 0 (db_bench's default) keeps RocksDB's 1 GiB, as for Strata (0 would drop every file).
        if f.fifo_compaction_max_table_files_size_mb != 0 {
            fifo.set_max_table_files_size(f.fifo_compaction_max_table_files_size_mb << 20);
        }
        o.set_fifo_compaction_options(&fifo);
        // db_bench: `options.ttl = FLAGS_fifo_compaction_ttl`.
        o.set_ttl(f.fifo_compaction_ttl);
    }
    o.set_use_fsync(f.use_fsync);
    o.set_bytes_per_sync(f.bytes_per_sync);
    o.set_wal_bytes_per_sync(f.wal_bytes_per_sync);
    o.set_recycle_log_file_num(usize::try_from(f.recycle_log_file_num).map_err(|_| {
        anyhow!("--recycle_log_file_num={}: must not be negative", f.recycle_log_file_num)
    })?);
    o.set_manual_wal_flush(f.manual_wal_flush);
    o.set_max_open_files(int("open_files", f.open_files)?);
    o.set_allow_mmap_reads(f.mmap_read);
    o.set_allow_mmap_writes(f.mmap_write);
    o.set_use_direct_reads(f.use_direct_reads);
    o.set_advise_random_on_open(f.advise_random_on_open);
    o.set_use_direct_io_for_flush_and_compaction(f.use_direct_io_for_flush_and_compaction);
    o.set_paranoid_checks(f.paranoid_checks);
    o.set_allow_concurrent_memtable_write(f.allow_concurrent_memtable_write);
    o.set_enable_pipelined_write(f.enable_pipelined_write);
    o.set_unordered_write(f.unordered_write);
    if let Some(on) = super::adaptive_yield(cfg)? {
        o.set_enable_write_thread_adaptive_yield(on);
    }
    // SAFETY: `o` is a live options object for the duration of the calls; the C setters only
    // store the values.
    unsafe {
        let raw = rocksdb::AsRawPtr::as_raw_ptr(&o);
        librocksdb_sys::rocksdb_options_set_max_write_batch_group_size_bytes(
            raw,
            f.max_write_batch_group_size_bytes,
        );
        librocksdb_sys::rocksdb_options_set_write_thread_max_yield_usec(
            raw,
            f.write_thread_max_yield_usec,
        );
        librocksdb_sys::rocksdb_options_set_write_thread_slow_yield_usec(
            raw,
            f.write_thread_slow_yield_usec,
        );
        if f.file_checksum {
            // db_bench's `--file_checksum`: RocksDB's crc32c generator. The options keep
            // their own reference to it.
            let factory = librocksdb_sys::rocksdb_file_checksum_gen_crc32c_factory_create();
            librocksdb_sys::rocksdb_options_set_file_checksum_gen_factory(raw, factory);
            librocksdb_sys::rocksdb_file_checksum_gen_factory_destroy(factory);
        }
    }
    match f.memtablerep.as_str() {
        "skip_list" | "skiplist" => {}
        "vector" => o.set_memtable_factory(MemtableFactory::Vector),
        "prefix_hash" => o.set_memtable_factory(MemtableFactory::HashSkipList {
            bucket_count: 1_000_000,
            height: 4,
            branching_factor: 4,
        }),
        "hash_linkedlist" => {
            o.set_memtable_factory(MemtableFactory::HashLinkList { bucket_count: 1_000_000 });
        }
        other => {
            bail!("--memtablerep={other}: use skip_list, vector, prefix_hash or hash_linkedlist")
        }
    }
    if !f.wal_dir.is_empty() {
        o.set_wal_dir(&f.wal_dir);
    }
    if f.prefix_size > 0 {
        o.set_prefix_extractor(SliceTransform::create_fixed_prefix(f.prefix_size as usize));
    }
    if f.row_cache_size > 0 {
        o.set_row_cache(&Cache::new_lru_cache(f.row_cache_size as usize));
    }
    if !f.merge_operator.is_empty() {
        let kind = MergeKind::parse(&f.merge_operator)?;
        let merge = move |_key: &[u8], existing: Option<&[u8]>, ops: &MergeOperands| {
            kind.apply_all(existing, ops)
        };
        o.set_merge_operator_associative(f.merge_operator.as_str(), merge);
    }
    if f.max_successive_merges > 0 {
        o.set_max_successive_merges(f.max_successive_merges as usize);
    }
    if let Some(expired) = super::expired_time_filter(cfg) {
        use rocksdb::compaction_filter::Decision;
        o.set_compaction_filter("ExpiredTimeFilter", move |_level: u32, key: &[u8], _: &[u8]| {
            if expired(key) {
                Decision::Remove
            } else {
                Decision::Keep
            }
        });
    }
    o.set_compaction_readahead_size(usize::try_from(f.compaction_readahead_size)?);
    set_rate_limiter(f, &mut o);
    set_thread_pools(f, &mut o)?;
    // Compression.
    let ct = compression_of(cfg.compression)?;
    o.set_compression_type(ct);
    if f.min_level_to_compress >= 0 {
        let levels = f.num_levels.max(1) as usize;
        let per: Vec<DBCompressionType> = (0..levels)
            .map(
                |l| if (l as i64) < f.min_level_to_compress { DBCompressionType::None } else { ct },
            )
            .collect();
        o.set_compression_per_level(&per);
    }
    if f.compression_level != 32767 || f.compression_max_dict_bytes != 0 {
        o.set_compression_options(
            -14,
            int("compression_level", f.compression_level)?,
            0,
            int("compression_max_dict_bytes", f.compression_max_dict_bytes)?,
        );
    }
    if f.compression_parallel_threads != 1 {
        let n = int("compression_parallel_threads", f.compression_parallel_threads)?;
        o.set_compression_options_parallel_threads(n);
    }
    // BlobDB.
    o.set_enable_blob_files(f.enable_blob_files);
    o.set_min_blob_size(f.min_blob_size);
    o.set_blob_file_size(f.blob_file_size);
    o.set_blob_compression_type(compression_of(crate::config::Compression::parse(
        &f.blob_compression_type,
    )?)?);
    o.set_enable_blob_gc(f.enable_blob_garbage_collection);
    o.set_blob_gc_age_cutoff(f.blob_garbage_collection_age_cutoff);
    o.set_blob_gc_force_threshold(f.blob_garbage_collection_force_threshold);
    // db_bench's blob cache: none, the block cache, or an LRU cache of its own.
    match (super::blob_cache(cfg, cache.is_some())?, &cache) {
        (super::BlobCache::Shared, Some(c)) => o.set_blob_cache(c),
        (super::BlobCache::Own { capacity, num_shard_bits }, _) => {
            let mut lo = LruCacheOptions::default();
            lo.set_capacity(capacity);
            lo.set_num_shard_bits(num_shard_bits);
            o.set_blob_cache(&Cache::new_lru_cache_opts(&lo));
        }
        _ => {}
    }
    if f.statistics {
        o.enable_statistics();
    }
    // Block-based table.
    let mut t = BlockBasedOptions::default();
    t.set_block_size(size("block_size", f.block_size)?);
    t.set_block_restart_interval(int("block_restart_interval", f.block_restart_interval)?);
    if f.index_block_restart_interval != 0 {
        t.set_index_block_restart_interval(int(
            "index_block_restart_interval",
            f.index_block_restart_interval,
        )?);
    }
    t.set_format_version(int("format_version", f.format_version)?);
    match &cache {
        Some(cache) => t.set_block_cache(cache),
        None => t.disable_cache(),
    }
    t.set_cache_index_and_filter_blocks(f.cache_index_and_filter_blocks);
    t.set_pin_l0_filter_and_index_blocks_in_cache(f.pin_l0_filter_and_index_blocks_in_cache);
    t.set_pin_top_level_index_and_filter(f.pin_top_level_index_and_filter);
    // db_bench: either partition flag selects the two-level index.
    let index_type =
        if f.partition_index || f.partition_index_and_filters { 2 } else { f.index_type };
    t.set_index_type(match index_type {
        0 => rocksdb::BlockBasedIndexType::BinarySearch,
        1 => rocksdb::BlockBasedIndexType::HashSearch,
        2 => rocksdb::BlockBasedIndexType::TwoLevelIndexSearch,
        t => bail!("--index_type={t}: not an index type (0, 1 or 2)"),
    });
    t.set_partition_filters(f.partition_index_and_filters);
    t.set_metadata_block_size(size("metadata_block_size", f.metadata_block_size)?);
    if f.bloom_bits > 0 {
        if f.use_ribbon_filter {
            t.set_ribbon_filter(f.bloom_bits as f64);
        } else {
            t.set_bloom_filter(f.bloom_bits as f64, false);
        }
    }
    t.set_whole_key_filtering(f.whole_key_filtering);
    super::rocks_knobs::table(f, &mut t)?;
    o.set_block_based_table_factory(&t);
    super::rocks_knobs::db(cfg, &mut o)?;
    Ok(o)
}

/// The options of `--options_file`, as db_bench's `InitializeOptionsFromFile` and then its
/// `InitializeOptionsGeneral` make them: RocksDB's loader reads the file as given (unknown
/// options refused), then a copy in which each of the families `names` (default first) has
/// the file's first family's options with a filter where it has none (`--bloom_bits`) and
/// `--merge_operator` by RocksDB's registered name (`options_text`); the run's block cache
/// (`--cache_size` > 0, else a file's default, 32 MiB of HyperClock); and over the DB
/// options, creation, statistics, the thread pools and the flags' WAL directory and rate
/// limiter.
fn from_options_file(
    cfg: &Config,
    names: &[String],
) -> Result<(Options, Vec<ColumnFamilyDescriptor>)> {
    use super::options_text::{for_families, OverFile};
    let f = &cfg.flags;
    let file = f.options_file.as_str();
    let text = std::fs::read_to_string(file).with_context(|| format!("--options_file={file}"))?;
    // The loader reads a DB directory's newest OPTIONS file: a directory of its own for it.
    let dir = tempfile::tempdir().with_context(|| format!("--options_file={file}: temp dir"))?;
    let copy = dir.path().join("OPTIONS-000001");
    let load = |text: &str, cache: Cache| -> Result<(Options, Vec<ColumnFamilyDescriptor>)> {
        std::fs::write(&copy, text).with_context(|| format!("writing {}", copy.display()))?;
        let env = rocksdb::Env::new()?;
        Options::load_latest(dir.path(), env, false, cache).map_err(|e| {
            let copy = copy.display().to_string();
            anyhow!("--options_file={file}: {}", e.to_string().replace(&copy, file))
        })
    };
    let default_cache = || Cache::new_hyper_clock_cache(32 << 20, 0);
    load(&text, default_cache())?;
    let filter = match f.bloom_bits {
        b if b <= 0 => None,
        b if f.use_ribbon_filter => Some(format!("ribbonfilter:{b}")),
        b => Some(format!("bloomfilter:{b}")),
    };
    let merge_operator = Some(f.merge_operator.clone()).filter(|m| !m.is_empty());
    let over = OverFile { filter, merge_operator };
    let text =
        for_families(&text, names, &over).map_err(|e| anyhow!("--options_file={file}: {e}"))?;
    let (mut o, families) = load(&text, block_cache(f)?.unwrap_or_else(default_cache))?;
    o.create_if_missing(!cfg.use_existing_db);
    o.create_missing_column_families(true);
    if f.statistics {
        o.enable_statistics();
    }
    if !f.wal_dir.is_empty() {
        o.set_wal_dir(&f.wal_dir);
    }
    set_rate_limiter(f, &mut o);
    set_thread_pools(f, &mut o)?;
    Ok((o, families))
}

/// db_bench's `--num_{high,low,bottom}_pri_threads`: the sizes of the default `Env`'s thread
/// pools, set whether or not options come from a file (0 leaves a pool as RocksDB sizes it
/// from the background jobs at open).
fn set_thread_pools(f: &crate::flags::Flags, o: &mut Options) -> Result<()> {
    type Setter = fn(&mut rocksdb::Env, i32);
    let pools: [(&str, i64, Setter); 3] = [
        (
            "num_high_pri_threads",
            f.num_high_pri_threads,
            rocksdb::Env::set_high_priority_background_threads,
        ),
        (
            "num_low_pri_threads",
            f.num_low_pri_threads,
            rocksdb::Env::set_low_priority_background_threads,
        ),
        (
            "num_bottom_pri_threads",
            f.num_bottom_pri_threads,
            rocksdb::Env::set_bottom_priority_background_threads,
        ),
    ];
    if pools.iter().all(|&(_, n, _)| n == 0) {
        return Ok(());
    }
    let mut env = rocksdb::Env::new()?;
    for (name, n, set) in pools {
        match int(name, n)? {
            0 => {}
            n if n < 0 => bail!("--{name}={n}: must not be negative"),
            n => set(&mut env, n),
        }
    }
    o.set_env(&env);
    Ok(())
}

fn set_rate_limiter(f: &crate::flags::Flags, o: &mut Options) {
    if f.rate_limiter_bytes_per_sec > 0 {
        let rate = f.rate_limiter_bytes_per_sec as i64;
        if f.rate_limiter_auto_tuned {
            o.set_auto_tuned_ratelimiter(rate, 100_000, 10);
        } else {
            o.set_ratelimiter(rate, 100_000, 10);
        }
    }
}

/// The DB options and the families to open: `--num_column_families`' (created when missing)
/// and any other family an existing DB has (RocksDB must open them all), default first, each
/// with the run's options (the flags', or `--options_file`'s).
fn options_and_families(cfg: &Config) -> Result<(Options, Vec<ColumnFamilyDescriptor>)> {
    let n = super::num_column_families(cfg)?;
    let mut names: Vec<String> = (0..n).map(super::column_family_name).collect();
    if cfg.db.join("CURRENT").is_file() {
        for existing in DB::list_cf(&Options::default(), &cfg.db)? {
            if !names.contains(&existing) {
                names.push(existing);
            }
        }
    }
    if !cfg.flags.options_file.is_empty() {
        return from_options_file(cfg, &names);
    }
    let mut opts = build_options(cfg)?;
    if n > 1 {
        opts.create_missing_column_families(true);
    }
    // The default column family is opened by descriptor, with the same options, so that
    // `cf_handle("default")` (batched MultiGet) finds it. (`open_cf` by name would give it
    // default options: no merge operator, no table options.)
    let families =
        names.into_iter().map(|name| ColumnFamilyDescriptor::new(name, opts.clone())).collect();
    Ok((opts, families))
}

pub fn open(cfg: &Config) -> Result<Box<dyn Engine>> {
    let (opts, families) = options_and_families(cfg)?;
    if cfg.flags.transaction_db || cfg.flags.optimistic_transaction_db {
        return super::rocks_txn::open(cfg, opts, families);
    }
    let n = super::num_column_families(cfg)?;
    let db = if cfg.flags.readonly {
        DB::open_cf_descriptors_read_only(&opts, &cfg.db, families, false)?
    } else {
        DB::open_cf_descriptors(&opts, &cfg.db, families)?
    };
    let f = &cfg.flags;
    // With an OPTIONS file, its universal and FIFO options stand.
    if !f.readonly && f.options_file.is_empty() {
        // What the `rocksdb` crate's option setters do not reach: set as mutable options
        // right after the open, before any write.
        if f.compaction_style == 1 && f.universal_allow_trivial_move {
            db.set_options(&[("compaction_options_universal", "{allow_trivial_move=true;}")])?;
        }
        if f.compaction_style == 1 && f.universal_incremental {
            db.set_options(&[("compaction_options_universal", "{incremental=true;}")])?;
        }
        if f.compaction_style == 2 {
            let allow = if f.fifo_compaction_allow_compaction { "true" } else { "false" };
            db.set_options(&[(
                "compaction_options_fifo",
                format!("{{allow_compaction={allow};}}").as_str(),
            )])?;
        }
    }
    let (ro, wo) = (read_options(cfg), write_options());
    Ok(Box::new(RocksEngine {
        db,
        opts,
        ro,
        verify_checksums: f.verify_checksum,
        wo,
        batched_multiget: f.multiread_batched,
        tailing: f.use_tailing_iterator,
        families: (0..n).map(super::column_family_name).collect(),
    }))
}

struct RocksEngine {
    db: DB,
    opts: Options,
    /// Prebuilt read options (building one costs an allocation and an FFI call).
    ro: ReadOptions,
    /// `--verify_checksum`, for the read options of a snapshot.
    verify_checksums: bool,
    /// Prebuilt write options, indexed by `sync * 2 + disable_wal`.
    wo: [WriteOptions; 4],
    batched_multiget: bool,
    tailing: bool,
    /// `--num_column_families` names, by index (`default` first).
    families: Vec<String>,
}

impl RocksEngine {
    fn wo(&self, w: WriteOpts) -> &WriteOptions {
        &self.wo[usize::from(w.sync) * 2 + usize::from(w.disable_wal)]
    }

    /// A get of `key` in its family with read options `ro` (the engine's, or a snapshot's).
    fn get_with(&self, ro: &ReadOptions, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let value = match self.cf(key)? {
            None => self.db.get_pinned_opt(key, ro)?,
            Some(cf) => self.db.get_pinned_cf_opt(cf, key, ro)?,
        };
        Ok(super::copy_found(value, out))
    }

    /// The family `key` belongs to with `--num_column_families` > 1 (`None`: default).
    fn cf(&self, key: &[u8]) -> Result<Option<&rocksdb::ColumnFamily>> {
        if self.families.len() <= 1 {
            return Ok(None);
        }
        let i = super::family_of(key, self.families.len());
        if i == 0 {
            return Ok(None);
        }
        let name = &self.families[i];
        self.db.cf_handle(name).map(Some).ok_or_else(|| anyhow!("no column family {name}"))
    }
}

impl Engine for RocksEngine {
    fn put(&self, key: &[u8], value: &[u8], wo: &WriteOpts) -> Result<()> {
        match self.cf(key)? {
            None => Ok(self.db.put_opt(key, value, self.wo(*wo))?),
            Some(cf) => Ok(self.db.put_cf_opt(cf, key, value, self.wo(*wo))?),
        }
    }

    fn delete(&self, key: &[u8], wo: &WriteOpts) -> Result<()> {
        match self.cf(key)? {
            None => Ok(self.db.delete_opt(key, self.wo(*wo))?),
            Some(cf) => Ok(self.db.delete_cf_opt(cf, key, self.wo(*wo))?),
        }
    }

    fn single_delete(&self, key: &[u8], wo: &WriteOpts) -> Result<()> {
        let mut b = WriteBatch::default();
        match self.cf(key)? {
            None => b.single_delete(key),
            Some(cf) => b.single_delete_cf(cf, key),
        }
        Ok(self.db.write_opt(b, self.wo(*wo))?)
    }

    fn backup(&self, dir: &std::path::Path) -> Result<()> {
        use rocksdb::backup::{BackupEngine, BackupEngineOptions};
        let env = rocksdb::Env::new()?;
        let mut engine = BackupEngine::open(&BackupEngineOptions::new(dir)?, &env)?;
        engine.purge_old_backups(0)?;
        engine.create_new_backup(&self.db)?;
        let n = engine.get_backup_info().len();
        if n != 1 {
            bail!("{} holds {n} backups after a backup into a cleared directory", dir.display());
        }
        Ok(())
    }

    fn verify_checksum(&self) -> Result<()> {
        verify_checksum(&self.db)
    }

    fn verify_file_checksums(&self) -> Result<()> {
        verify_file_checksums(&self.db)
    }

    fn write_table_file(
        &self,
        path: &std::path::Path,
        fill: &mut super::FillTable<'_>,
    ) -> Result<()> {
        let mut w = rocksdb::SstFileWriter::create(&self.opts);
        w.open(path)?;
        fill(&mut |k, v| Ok(w.put(k, v)?))?;
        Ok(w.finish()?)
    }

    fn ingest_files(&self, paths: &[std::path::PathBuf]) -> Result<()> {
        let mut o = rocksdb::IngestExternalFileOptions::default();
        o.set_move_files(true);
        Ok(self.db.ingest_external_file_opts(&o, paths.to_vec())?)
    }

    fn approximate_sizes(
        &self,
        ranges: &[u8],
        key_size: usize,
        sizes: &mut Vec<u64>,
    ) -> Result<()> {
        let rs: Vec<rocksdb::Range<'_>> = ranges
            .chunks_exact(2 * key_size)
            .map(|r| rocksdb::Range::new(&r[..key_size], &r[key_size..]))
            .collect();
        *sizes = self.db.get_approximate_sizes(&rs);
        Ok(())
    }

    fn snapshot(&self) -> Result<Box<dyn EngineSnapshot + '_>> {
        let snap = self.db.snapshot();
        let mut ro = ReadOptions::default();
        ro.set_verify_checksums(self.verify_checksums);
        ro.set_snapshot(&snap);
        Ok(Box::new(RocksSnapshot { engine: self, ro, _snap: snap }))
    }

    fn merge(&self, key: &[u8], value: &[u8], wo: &WriteOpts) -> Result<()> {
        match self.cf(key)? {
            None => Ok(self.db.merge_opt(key, value, self.wo(*wo))?),
            Some(cf) => Ok(self.db.merge_cf_opt(cf, key, value, self.wo(*wo))?),
        }
    }

    fn write(&self, batch: &Batch, wo: &WriteOpts) -> Result<()> {
        let mut b = WriteBatch::default();
        for (op, k, v) in batch.iter() {
            match (op, self.cf(k)?) {
                (BatchOp::Put, None) => b.put(k, v),
                (BatchOp::Delete, None) => b.delete(k),
                (BatchOp::Merge, None) => b.merge(k, v),
                (BatchOp::DeleteRange, None) => b.delete_range(k, v),
                (BatchOp::Put, Some(cf)) => b.put_cf(cf, k, v),
                (BatchOp::Delete, Some(cf)) => b.delete_cf(cf, k),
                (BatchOp::Merge, Some(cf)) => b.merge_cf(cf, k, v),
                (BatchOp::DeleteRange, Some(cf)) => b.delete_range_cf(cf, k, v),
            }
        }
        Ok(self.db.write_opt(b, self.wo(*wo))?)
    }

    fn get(&self, key: &[u8], _ro: &ReadOpts, out: &mut Vec<u8>) -> Result<bool> {
        self.get_with(&self.ro, key, out)
    }

    fn multi_get(
        &self,
        keys: &[u8],
        key_size: usize,
        ro: &ReadOpts,
        _scratch: &mut Vec<u8>,
        value_bytes: &mut u64,
    ) -> Result<u64> {
        if self.families.len() > 1 {
            // Each key in its family, one read at a time.
            let mut found = 0;
            let mut scratch = Vec::new();
            for k in keys.chunks(key_size.max(1)) {
                if self.get(k, ro, &mut scratch)? {
                    found += 1;
                    *value_bytes += scratch.len() as u64;
                }
            }
            return Ok(found);
        }
        let keys = keys.chunks(key_size);
        if self.batched_multiget {
            let cf =
                self.db.cf_handle("default").ok_or_else(|| anyhow!("no default column family"))?;
            count_found(self.db.batched_multi_get_cf_opt(&cf, keys, false, &self.ro), value_bytes)
        } else {
            count_found(self.db.multi_get_opt(keys, &self.ro), value_bytes)
        }
    }

    fn new_iterator<'a>(
        &'a self,
        ro: &ReadOpts,
        bounds: Bounds<'_>,
    ) -> Result<Box<dyn EngineIter + 'a>> {
        let mut o = ReadOptions::default();
        o.set_verify_checksums(ro.verify_checksums);
        o.fill_cache(ro.fill_cache);
        o.set_tailing(self.tailing);
        o.set_readahead_size(ro.readahead_size);
        o.set_total_order_seek(ro.total_order_seek);
        o.set_prefix_same_as_start(ro.prefix_same_as_start);
        if let Some(l) = bounds.lower {
            o.set_iterate_lower_bound(l);
        }
        if let Some(u) = bounds.upper {
            o.set_iterate_upper_bound(u);
        }
        Ok(Box::new(RocksIter { it: self.db.raw_iterator_opt(o) }))
    }

    fn flush(&self) -> Result<()> {
        self.db.flush()?;
        for name in self.families.iter().skip(1) {
            let cf = self.db.cf_handle(name).ok_or_else(|| anyhow!("no column family {name}"))?;
            self.db.flush_cf(cf)?;
        }
        Ok(())
    }

    fn compact_range(&self) -> Result<()> {
        let mut c = CompactOptions::default();
        c.set_bottommost_level_compaction(BottommostLevelCompaction::ForceOptimized);
        self.db.compact_range_opt(None::<&[u8]>, None::<&[u8]>, &c);
        for name in self.families.iter().skip(1) {
            let cf = self.db.cf_handle(name).ok_or_else(|| anyhow!("no column family {name}"))?;
            self.db.compact_range_cf_opt(cf, None::<&[u8]>, None::<&[u8]>, &c);
        }
        Ok(())
    }

    fn wait_for_compaction(&self) -> Result<()> {
        Ok(self.db.wait_for_compact(&WaitForCompactOptions::default())?)
    }

    fn property(&self, name: &str) -> Result<Option<String>> {
        Ok(self.db.property_value(name)?)
    }

    fn stats_text(&self) -> Result<String> {
        property_text(self, "rocksdb.stats")
    }

    fn level_stats_text(&self) -> Result<String> {
        property_text(self, "rocksdb.levelstats")
    }

    fn sstables_text(&self) -> Result<String> {
        property_text(self, "rocksdb.sstables")
    }

    fn statistics_text(&self) -> Result<Option<String>> {
        Ok(self.opts.get_statistics())
    }

    fn reset_stats(&self) -> Result<()> {
        bail!("resetstats: the rocksdb crate does not expose DB::ResetStats")
    }

    fn live_files(&self) -> Result<Vec<LiveFile>> {
        Ok(self
            .db
            .live_files()?
            .into_iter()
            .map(|f| LiveFile { name: f.name, level: usize::try_from(f.level).unwrap_or(0) })
            .collect())
    }

    fn compact_files(&self, names: &[String], output_level: usize) -> Result<()> {
        compact_files(&self.db, names, output_level)
    }
}

/// `restore`: the newest backup in `from` restored into `to` (its DB and WAL directory),
/// which `clear` empties once the backup is known to be there.
pub fn restore(
    from: &std::path::Path,
    to: &std::path::Path,
    clear: &dyn Fn() -> Result<()>,
) -> Result<()> {
    use rocksdb::backup::{BackupEngine, BackupEngineOptions, RestoreOptions};
    let env = rocksdb::Env::new()?;
    let mut engine = BackupEngine::open(&BackupEngineOptions::new(from)?, &env)?;
    if engine.get_backup_info().is_empty() {
        bail!("{} holds no backup", from.display());
    }
    clear()?;
    engine.restore_from_latest_backup(to, to, &RestoreOptions::default())?;
    Ok(())
}

/// A RocksDB snapshot with the read options that read at it, built once.
struct RocksSnapshot<'a> {
    engine: &'a RocksEngine,
    /// Points at `_snap`, which it must not outlive (fields drop in order).
    ro: ReadOptions,
    _snap: rocksdb::SnapshotWithThreadMode<'a, DB>,
}

impl EngineSnapshot for RocksSnapshot<'_> {
    fn get(&self, key: &[u8], _ro: &ReadOpts, out: &mut Vec<u8>) -> Result<bool> {
        self.engine.get_with(&self.ro, key, out)
    }
}

/// The read options of gets (`--verify_checksum`), built once.
pub(super) fn read_options(cfg: &Config) -> ReadOptions {
    let mut ro = ReadOptions::default();
    ro.set_verify_checksums(cfg.flags.verify_checksum);
    ro
}

/// Write options for every (sync, disable_wal), indexed by `sync * 2 + disable_wal`, built
/// once (building one costs an allocation and an FFI call).
pub(super) fn write_options() -> [WriteOptions; 4] {
    let w = |sync: bool, disable_wal: bool| {
        let mut w = WriteOptions::default();
        w.set_sync(sync);
        w.disable_wal(disable_wal);
        w
    };
    [w(false, false), w(false, true), w(true, false), w(true, true)]
}

/// A text property RocksDB must have (`rocksdb.stats`, ...), else an error naming it.
pub(super) fn property_text(engine: &dyn Engine, name: &str) -> Result<String> {
    engine.property(name)?.ok_or_else(|| anyhow!("{name} is not available"))
}

/// How many MultiGet results found a value; their lengths are added to `value_bytes`.
fn count_found<V: AsRef<[u8]>>(
    results: impl IntoIterator<Item = std::result::Result<Option<V>, rocksdb::Error>>,
    value_bytes: &mut u64,
) -> Result<u64> {
    let mut found = 0;
    for r in results {
        if let Some(v) = r? {
            found += 1;
            *value_bytes += v.as_ref().len() as u64;
        }
    }
    Ok(found)
}

/// `DB::VerifyChecksum` through the C API (the `rocksdb` crate does not wrap it).
fn verify_checksum(db: &DB) -> Result<()> {
    use rocksdb::AsRawPtr;
    let mut err: *mut std::ffi::c_char = std::ptr::null_mut();
    // SAFETY: `db` outlives the call; `err` is the API's error out-parameter.
    unsafe {
        librocksdb_sys::rocksdb_verify_checksum(db.as_raw_ptr(), &mut err);
        c_result("VerifyChecksum", err)
    }
}

/// `DB::VerifyFileChecksums` through the C API (the `rocksdb` crate does not wrap it).
fn verify_file_checksums(db: &DB) -> Result<()> {
    use rocksdb::AsRawPtr;
    let mut err: *mut std::ffi::c_char = std::ptr::null_mut();
    // SAFETY: `db` outlives the call; `err` is the API's error out-parameter.
    unsafe {
        librocksdb_sys::rocksdb_verify_file_checksums(db.as_raw_ptr(), &mut err);
        c_result("VerifyFileChecksums", err)
    }
}

/// The outcome a C API call left in its error out-parameter: `Ok` when it is null, else its
/// message (the string then freed) as an error of `what`.
///
/// # Safety
/// `err` is null or a string the API allocated and nothing else frees.
unsafe fn c_result(what: &str, err: *mut std::ffi::c_char) -> Result<()> {
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: as the caller promises, a NUL-terminated string of the API's, freed once.
    let msg = unsafe {
        let msg = std::ffi::CStr::from_ptr(err).to_string_lossy().into_owned();
        librocksdb_sys::rocksdb_free(err.cast());
        msg
    };
    bail!("{what}: {msg}")
}

/// `DB::CompactFiles` through the C API (the `rocksdb` crate does not wrap it). Default
/// `CompactionOptions`: the C API cannot set `output_file_size_limit`, so RocksDB writes
/// one output file where db_bench asks for `target_file_size_base`-sized ones.
fn compact_files(db: &DB, names: &[String], output_level: usize) -> Result<()> {
    use rocksdb::AsRawPtr;
    use std::ffi::{c_char, CString};

    let level = i32::try_from(output_level).context("compact_files: output level")?;
    let c_names = names.iter().map(|n| CString::new(n.as_str())).collect::<Result<Vec<_>, _>>()?;
    let ptrs: Vec<*const c_char> = c_names.iter().map(|c| c.as_ptr()).collect();
    let mut out_names: *mut *mut c_char = std::ptr::null_mut();
    let mut out_len: usize = 0;
    let mut err: *mut c_char = std::ptr::null_mut();
    // SAFETY: `db` outlives the call; `opts` is created here and destroyed below; `ptrs`
    // points into `c_names`, NUL-terminated strings alive for the call; the output arrays
    // are released with the API's own destroy function; `err` goes to `c_result`.
    unsafe {
        let opts = librocksdb_sys::rocksdb_compaction_options_create();
        librocksdb_sys::rocksdb_compact_files(
            db.as_raw_ptr(),
            opts,
            ptrs.as_ptr(),
            ptrs.len(),
            level,
            0,
            &mut out_names,
            &mut out_len,
            std::ptr::null_mut(),
            &mut err,
        );
        librocksdb_sys::rocksdb_compaction_options_destroy(opts);
        if !out_names.is_null() {
            librocksdb_sys::rocksdb_compact_files_output_file_names_destroy(out_names, out_len);
        }
        c_result("CompactFiles", err)
    }
}

struct RocksIter<'a> {
    it: rocksdb::DBRawIterator<'a>,
}

raw_iterator_adapter!(RocksIter<'_>);

#[cfg(test)]
mod tests {
    use super::*;

    /// Two `uint64add` operands on one key read back as their sum.
    fn merges_add_up(e: &dyn Engine) {
        let wo = WriteOpts::default();
        e.merge(b"k", &1u64.to_le_bytes(), &wo).expect("merge");
        e.merge(b"k", &2u64.to_le_bytes(), &wo).expect("merge");
        let mut out = Vec::new();
        assert!(e.get(b"k", &ReadOpts::default(), &mut out).expect("get"));
        assert_eq!(out, 3u64.to_le_bytes());
    }

    /// The default column family gets the run's options (it once got RocksDB's defaults:
    /// no merge operator), and batched MultiGet finds it.
    #[test]
    fn default_column_family_has_the_run_options() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("db");
        let cfg = Config::from_args(&[
            "--engine=rocksdb".to_string(),
            "--merge_operator=uint64add".to_string(),
            "--multiread_batched=true".to_string(),
            format!("--db={}", db.display()),
        ])
        .expect("config");
        let e = open(&cfg).expect("open");
        merges_add_up(e.as_ref());
        let (mut scratch, mut bytes) = (Vec::new(), 0);
        let found =
            e.multi_get(b"kx", 1, &ReadOpts::default(), &mut scratch, &mut bytes).expect("mget");
        assert_eq!(found, 1);
        // Table files are listed for compact0/compact1.
        e.flush().expect("flush");
        assert_eq!(e.live_files().expect("live files").len(), 1);
    }

    /// The newest OPTIONS file RocksDB wrote into `db`.
    fn newest_options(db: &std::path::Path) -> std::path::PathBuf {
        let mut files: Vec<_> = std::fs::read_dir(db)
            .expect("read_dir")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("OPTIONS-")))
            .collect();
        files.sort();
        files.pop().expect("an OPTIONS file")
    }

    fn config(args: &[String]) -> Config {
        let mut a = vec!["--engine=rocksdb".to_string()];
        a.extend_from_slice(args);
        Config::from_args(&a).expect("config")
    }

    /// `--options_file` gives every family the file's options; the run's filter (where the
    /// file has none), merge operator and block cache go over it, as in db_bench.
    #[test]
    fn an_options_file_gives_every_family_its_options() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (src, db) = (dir.path().join("src"), dir.path().join("db"));
        let src_cfg = config(&[
            format!("--db={}", src.display()),
            "--write_buffer_size=4194304".into(),
            "--open_files=77".into(),
            "--bloom_bits=0".into(),
        ]);
        drop(open(&src_cfg).expect("open the source DB"));
        let file = newest_options(&src);
        let text = std::fs::read_to_string(&file).expect("read");
        assert!(text.contains("filter_policy=nullptr"), "{text}");
        let arg = format!("--options_file={}", file.display());
        let cfg = config(&[
            format!("--db={}", db.display()),
            arg.clone(),
            "--write_buffer_size=1048576".into(),
            "--bloom_bits=12".into(),
            "--merge_operator=uint64add".into(),
            "--cache_size=1048576".into(),
            "--num_column_families=2".into(),
        ]);
        let notes = cfg.notes.join("\n");
        assert!(notes.contains("--write_buffer_size=1048576 is not applied"), "{notes}");
        assert!(!notes.contains("num_column_families") && !notes.contains("bloom"), "{notes}");
        let e = open(&cfg).expect("open with the file");
        merges_add_up(e.as_ref());
        drop(e);
        // What RocksDB made of it, as it wrote it back.
        let got = std::fs::read_to_string(newest_options(&db)).expect("read");
        assert!(got.contains("max_open_files=77"), "{got}");
        for family in ["default", &crate::engine::column_family_name(1)] {
            let cf = got.split(&format!("[CFOptions \"{family}\"]")).nth(1).expect(family);
            let cf = cf.split("[CFOptions").next().unwrap_or_default();
            assert!(cf.contains("write_buffer_size=4194304"), "{family}: {cf}");
            assert!(cf.contains("merge_operator=") && !cf.contains("merge_operator=nullptr"));
            assert!(cf.contains("filter_policy=bloomfilter"), "{family}: {cf}");
        }
    }

    #[test]
    fn a_bad_options_file_is_an_error_naming_the_file_and_what_is_wrong() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = format!("--db={}", dir.path().join("db").display());
        let missing = dir.path().join("absent");
        let e = open(&config(&[db.clone(), format!("--options_file={}", missing.display())]))
            .err()
            .expect("a missing file is refused")
            .to_string();
        assert!(e.contains("--options_file=") && e.contains("absent"), "{e}");
        let file = dir.path().join("OPTIONS-000009");
        std::fs::write(
            &file,
            "[Version]\n  rocksdb_version=11.8.1\n  options_file_version=1.1\n[DBOptions]\n  \
             max_open_files=many\n[CFOptions \"default\"]\n",
        )
        .expect("write");
        let e = open(&config(&[db, format!("--options_file={}", file.display())]))
            .err()
            .expect("a bad value is refused")
            .to_string();
        assert!(e.contains(&file.display().to_string()) && e.contains("max_open_files"), "{e}");
        assert!(!e.contains("OPTIONS-000001"), "the loader's copy is not named: {e}");
        assert!(!dir.path().join("db").exists(), "nothing created");
    }
}
