//! `--engine=strata`: the engine under test.
//!
//! Flag mapping: each engine-class flag Strata honours is listed in
//! [`STRATA_HONOURED_FLAGS`](crate::engine_kind::STRATA_HONOURED_FLAGS) and applied in
//! [`build_options`]; any other engine-class flag with a non-default value is rejected by the
//! configuration stage. A new engine option is one line in each.

use anyhow::{anyhow, bail, Result};
use std::sync::Arc;

use strata::{
    BlockCacheAdmission as Admission, Cache, ColumnFamily, ColumnFamilyDescriptor,
    CompactionStopStyle, CompactionStyle, CompressionType, Db, ErrorKind, HyperClockCacheOptions,
    LruCacheOptions, OptimisticTransactionDb, Options, PrefixExtractor, ReadOptions, Transaction,
    TransactionDb, TransactionDbOptions, TransactionOptions, WriteBatch, WriteBufferManager,
    WriteOptions,
};

use super::{
    Batch, BatchOp, Bounds, Engine, EngineIter, EngineSnapshot, LiveFile, MultiScanSettings,
    Operands, ReadOpts, WriteOpts,
};
use crate::config::{Compression, Config};

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

// The engine-class flags applied here are listed in `crate::engine_kind::STRATA_HONOURED_FLAGS`.

/// The block cache `--cache_type`, `--cache_size`, `--cache_numshardbits`,
/// `--cache_high_pri_pool_ratio` and `--block_cache_admission` ask for (None without a
/// cache). As RocksDB 11's db_bench: `fixed_hyper_clock_cache` sizes the clock table for
/// entries of `--block_size` bytes; `auto_hyper_clock_cache` and a bare `hyper_clock_cache`
/// (the default) get the table that grows as entries are inserted.
pub fn block_cache(cfg: &Config) -> Result<Option<Cache>> {
    let f = &cfg.flags;
    if f.cache_size <= 0 {
        return Ok(None);
    }
    let capacity = usize::try_from(f.cache_size)?;
    let num_shard_bits = i32::try_from(f.cache_numshardbits)
        .map_err(|_| anyhow!("--cache_numshardbits={}: out of range", f.cache_numshardbits))?;
    let admission = admission(cfg)?;
    let cache = match f.cache_type.as_str() {
        "lru_cache" => Cache::new_lru_opts(&LruCacheOptions {
            capacity,
            num_shard_bits,
            strict_capacity_limit: false,
            high_pri_pool_ratio: f.cache_high_pri_pool_ratio,
            admission,
        }),
        "hyper_clock_cache" | "fixed_hyper_clock_cache" | "auto_hyper_clock_cache" => {
            // As RocksDB: the fixed table is sized for --block_size entries; the automatic
            // one (estimate 0) grows.
            let estimate = match f.cache_type.as_str() {
                "fixed_hyper_clock_cache" => usize::try_from(f.block_size)?,
                _ => 0,
            };
            let mut o = HyperClockCacheOptions::new(capacity, estimate);
            o.num_shard_bits = num_shard_bits;
            o.admission = admission;
            Cache::new_hyper_clock_opts(&o)
        }
        "clock_cache" => bail!("Old clock cache implementation has been removed."),
        other => bail!("--cache_type={other}: Cache type not supported."),
    };
    Ok(Some(cache.map_err(|e| anyhow!("--cache_type={}: {e}", f.cache_type))?))
}

/// The admission policy `--block_cache_admission` asks for (the block cache's, and a blob
/// cache's of its own).
fn admission(cfg: &Config) -> Result<Admission> {
    Ok(match cfg.flags.block_cache_admission.as_str() {
        "second_miss" => Admission::SecondMiss,
        "always" => Admission::Always,
        other => bail!("--block_cache_admission={other}: expected second_miss or always"),
    })
}

/// The Strata cache for [`super::blob_cache`]'s choice: the block cache itself, or an LRU
/// cache with the block cache's admission policy.
fn blob_cache(cfg: &Config, block_cache: Option<&Cache>) -> Result<Option<Cache>> {
    Ok(match (super::blob_cache(cfg, block_cache.is_some())?, block_cache) {
        (super::BlobCache::None, _) => None,
        (super::BlobCache::Shared, c) => c.cloned(),
        (super::BlobCache::Own { capacity, num_shard_bits }, _) => {
            let cache = Cache::new_lru_opts(&LruCacheOptions {
                capacity,
                num_shard_bits,
                strict_capacity_limit: false,
                high_pri_pool_ratio: 0.0,
                admission: admission(cfg)?,
            });
            Some(cache.map_err(|e| anyhow!("--blob_cache_size={capacity}: {e}"))?)
        }
    })
}

/// Strata `Options` from the flags.
pub fn build_options(cfg: &Config) -> Result<Options> {
    let f = &cfg.flags;
    let mut o = Options::default();
    let usize_of = |name: &str, v: i64| -> Result<usize> {
        usize::try_from(v).map_err(|_| anyhow!("--{name}={v}: must not be negative"))
    };
    // As db_bench: a run on an existing DB never creates an empty one.
    o.create_if_missing = !cfg.use_existing_db;
    if !f.wal_dir.is_empty() {
        o.wal_dir = Some(std::path::PathBuf::from(&f.wal_dir));
    }
    o.block_cache_size = if f.cache_size <= 0 { 0 } else { usize_of("cache_size", f.cache_size)? };
    o.block_cache = block_cache(cfg)?;
    if f.row_cache_size > 0 {
        o.row_cache = Some(Cache::new_lru(usize_of("row_cache_size", f.row_cache_size)?));
    }
    // db_bench: < 0 keeps the table default, which in RocksDB is no filter.
    o.bloom_bits_per_key = if f.bloom_bits <= 0 { 0 } else { f.bloom_bits as u32 };
    o.block_size = usize_of("block_size", f.block_size)?;
    o.cache_index_and_filter_blocks = f.cache_index_and_filter_blocks;
    o.pin_l0_filter_and_index_blocks_in_cache = f.pin_l0_filter_and_index_blocks_in_cache;
    o.pin_top_level_index_and_filter = f.pin_top_level_index_and_filter;
    o.index_type = match (f.index_type, f.partition_index || f.partition_index_and_filters) {
        (0, false) => strata::IndexType::BinarySearch,
        (0 | 2, _) => strata::IndexType::TwoLevel,
        (t, _) => bail!("--index_type={t}: Strata supports 0 (binary search) and 2 (two-level)"),
    };
    o.partition_filters = f.partition_index_and_filters;
    o.metadata_block_size = usize_of("metadata_block_size", f.metadata_block_size)?;
    o.block_align = f.block_align;
    o.block_restart_interval = usize_of("block_restart_interval", f.block_restart_interval)?;
    if f.index_block_restart_interval != 0 {
        o.index_block_restart_interval =
            usize_of("index_block_restart_interval", f.index_block_restart_interval)?;
    }
    o.compression = match cfg.compression {
        Compression::None => CompressionType::None,
        Compression::Snappy => CompressionType::Snappy,
        Compression::Lz4 => CompressionType::Lz4,
        Compression::Zstd => CompressionType::Zstd,
        other => bail!(
            "--compression_type={}: strata supports none, snappy, lz4 and zstd ({other:?} is not available)",
            f.compression_type
        ),
    };
    // BlobDB's flags: key-value separation (`strata::BlobOptions`).
    o.blob = strata::BlobOptions {
        enable_blob_files: f.enable_blob_files,
        min_blob_size: f.min_blob_size,
        blob_file_size: f.blob_file_size,
        write_blobs_at_commit: f.write_blobs_at_commit,
        blob_compression_type: match Compression::parse(&f.blob_compression_type)? {
            Compression::None => None,
            Compression::Snappy => Some(CompressionType::Snappy),
            Compression::Lz4 => Some(CompressionType::Lz4),
            Compression::Zstd => Some(CompressionType::Zstd),
            other => bail!(
                "--blob_compression_type={}: strata supports none, snappy, lz4 and zstd \
                 ({other:?} is not available)",
                f.blob_compression_type
            ),
        },
        enable_blob_gc: f.enable_blob_garbage_collection,
        blob_gc_age_cutoff: f.blob_garbage_collection_age_cutoff,
        blob_gc_force_threshold: f.blob_garbage_collection_force_threshold,
        blob_cache: blob_cache(cfg, o.block_cache.as_ref())?,
        ..strata::BlobOptions::default()
    };
    // db_bench: levels below --min_level_to_compress are not compressed (-1 or 0: all are).
    if f.min_level_to_compress > 0 {
        let below = usize::try_from(f.min_level_to_compress)?;
        o.compression_per_level = vec![CompressionType::None; below];
        o.compression_per_level.push(o.compression);
    }
    if f.compression_level != 32767 {
        if cfg.compression != Compression::Zstd {
            bail!("--compression_level: strata applies a level to zstd only");
        }
        o.zstd_level = f.compression_level as i32;
    }
    o.compression_parallel_threads =
        usize_of("compression_parallel_threads", f.compression_parallel_threads)?;
    if o.compression_parallel_threads == 0 {
        bail!("--compression_parallel_threads=0: at least 1 (1 compresses on the writing thread)");
    }
    o.write_buffer_size = usize_of("write_buffer_size", f.write_buffer_size)?;
    o.vector_memtable = match f.memtablerep.as_str() {
        "skip_list" => false,
        "vector" => true,
        other => bail!(
            "--memtablerep={other}: strata has the skiplist (skip_list) and the vector memtable \
             (vector); the hash representations are RocksDB's"
        ),
    };
    // Strata's memtable filter holds whole keys: a ratio given without
    // --memtable_whole_key_filtering (RocksDB's prefix filter) leaves it off, as RocksDB's
    // whole-key lookups then have none either.
    if let Some(ratio) = super::memtable_bloom_size_ratio(cfg)? {
        o.memtable_bloom_size_ratio = if f.memtable_whole_key_filtering { ratio } else { 0.0 };
    }
    o.max_write_buffer_number = usize_of("max_write_buffer_number", f.max_write_buffer_number)?;
    o.min_write_buffer_number_to_merge =
        usize_of("min_write_buffer_number_to_merge", f.min_write_buffer_number_to_merge)?;
    // db_bench: either flag makes a write buffer manager of --db_write_buffer_size bytes (0:
    // no budget) charged to the block cache when there is one; no stalls.
    if f.cost_write_buffer_to_cache || f.db_write_buffer_size != 0 {
        let budget = usize_of("db_write_buffer_size", f.db_write_buffer_size)?;
        o.write_buffer_manager =
            Some(Arc::new(WriteBufferManager::new(budget, o.block_cache.clone(), false)));
    }
    o.max_background_jobs = usize_of("max_background_jobs", f.max_background_jobs)?;
    // RocksDB's deprecated split: when either is set, the two limits (each at least 1)
    // replace max_background_jobs. Strata's threads take both kinds of work.
    if f.max_background_compactions != -1 || f.max_background_flushes != -1 {
        let limit = |name: &str, v: i64| usize_of(name, v.max(1));
        o.max_background_jobs = limit("max_background_compactions", f.max_background_compactions)?
            + limit("max_background_flushes", f.max_background_flushes)?;
    }
    o.num_levels = usize_of("num_levels", f.num_levels)?;
    o.max_open_files = i32::try_from(f.open_files)
        .map_err(|_| anyhow!("--open_files={}: out of range", f.open_files))?;
    o.paranoid_checks = f.paranoid_checks;
    o.file_checksums = f.file_checksum;
    o.max_subcompactions = usize_of("subcompactions", f.subcompactions)?;
    o.trim_heap_after_compaction = f.trim_heap_after_compaction;
    o.level0_compaction_batching = f.level0_compaction_batching;
    o.level0_file_num_compaction_trigger =
        usize_of("level0_file_num_compaction_trigger", f.level0_file_num_compaction_trigger)?;
    o.level0_slowdown_writes_trigger =
        usize_of("level0_slowdown_writes_trigger", f.level0_slowdown_writes_trigger)?;
    o.level0_stop_writes_trigger =
        usize_of("level0_stop_writes_trigger", f.level0_stop_writes_trigger)?;
    o.max_bytes_for_level_base = f.max_bytes_for_level_base;
    o.max_bytes_for_level_multiplier = f.max_bytes_for_level_multiplier;
    o.level_compaction_dynamic_level_bytes = f.level_compaction_dynamic_level_bytes;
    o.target_file_size_base = usize_of("target_file_size_base", f.target_file_size_base)? as u64;
    o.target_file_size_multiplier =
        usize_of("target_file_size_multiplier", f.target_file_size_multiplier)? as u64;
    o.max_compaction_bytes = f.max_compaction_bytes;
    o.disable_auto_compactions = f.disable_auto_compactions;
    o.soft_pending_compaction_bytes_limit = f.soft_pending_compaction_bytes_limit;
    o.hard_pending_compaction_bytes_limit = f.hard_pending_compaction_bytes_limit;
    o.delayed_write_rate = f.delayed_write_rate;
    o.wal_bytes_per_sync = f.wal_bytes_per_sync;
    o.max_total_wal_size = f.max_total_wal_size;
    o.wal_ttl_seconds = f.wal_ttl_seconds;
    o.wal_size_limit_mb = f.wal_size_limit_MB;
    o.avoid_flush_during_recovery = f.avoid_flush_during_recovery;
    o.stats_dump_period_sec = super::fit("stats_dump_period_sec", f.stats_dump_period_sec)?;
    // As db_bench's `--statistics`: a statistics object for the DB (the STATISTICS dump reads
    // the DB's own counts either way; the statistics history needs the object).
    if f.statistics {
        o.enable_statistics();
    }
    o.stats_persist_period_sec =
        super::fit("stats_persist_period_sec", f.stats_persist_period_sec)?;
    o.stats_history_buffer_size =
        super::fit("stats_history_buffer_size", f.stats_history_buffer_size)?;
    // db_bench's default (4, XXH3) describes RocksDB's; Strata keeps its own (CRC32C)
    // unless the flag is given.
    if cfg.set.contains("checksum_type") {
        o.checksum = match f.checksum_type {
            1 => strata::ChecksumType::Crc32c,
            4 => strata::ChecksumType::Xxh3,
            t => bail!(
                "--checksum_type={t}: strata has 1 (crc32c) and 4 (xxh3); 0 (none), 2 (xxhash) \
                 and 3 (xxhash64) are RocksDB's"
            ),
        };
    }
    o.recycle_log_file_num = usize_of("recycle_log_file_num", f.recycle_log_file_num)?;
    o.manual_wal_flush = f.manual_wal_flush;
    o.allow_concurrent_memtable_write = f.allow_concurrent_memtable_write;
    o.enable_pipelined_write = f.enable_pipelined_write;
    o.unordered_write = f.unordered_write;
    o.max_write_batch_group_size_bytes = f.max_write_batch_group_size_bytes;
    if let Some(on) = super::adaptive_yield(cfg)? {
        o.enable_write_thread_adaptive_yield = on;
    }
    o.write_thread_max_yield_usec = f.write_thread_max_yield_usec;
    o.write_thread_slow_yield_usec = f.write_thread_slow_yield_usec;
    o.wal_zeros_ahead = f.wal_zeros_ahead;
    o.wal_mmap_writes = f.wal_mmap_writes;
    o.use_direct_reads = f.use_direct_reads;
    // db_bench's default (false) describes RocksDB's; Strata keeps its own (mapped reads
    // where they pay, `Options::allow_mmap_reads`) unless the flag is given.
    if cfg.set.contains("mmap_read") {
        o.allow_mmap_reads = f.mmap_read;
    }
    o.advise_random_on_open = f.advise_random_on_open;
    o.use_direct_io_for_flush_and_compaction = f.use_direct_io_for_flush_and_compaction;
    o.bytes_per_sync = f.bytes_per_sync;
    o.compaction_readahead_size =
        super::fit("compaction_readahead_size", f.compaction_readahead_size)?;
    o.rate_limiter = (f.rate_limiter_bytes_per_sec > 0).then(|| {
        std::sync::Arc::new(if f.rate_limiter_auto_tuned {
            strata::env::RateLimiter::new_auto_tuned(f.rate_limiter_bytes_per_sec)
        } else {
            strata::env::RateLimiter::new(f.rate_limiter_bytes_per_sec)
        })
    });
    if let Some(expired) = super::expired_time_filter(cfg) {
        o.set_compaction_filter("ExpiredTimeFilter", move |_level: u32, key: &[u8], _: &[u8]| {
            if expired(key) {
                strata::Decision::Remove
            } else {
                strata::Decision::Keep
            }
        });
    }
    if !f.merge_operator.is_empty() {
        let op =
            strata::merge_operator::builtin_merge_operator(&f.merge_operator).ok_or_else(|| {
                anyhow!("--merge_operator={}: not available in strata", f.merge_operator)
            })?;
        o.merge_operator = Some(op);
    }
    if f.prefix_size > 0 {
        o.prefix_extractor = Some(PrefixExtractor::Fixed(f.prefix_size as usize));
    }
    apply_compaction_style(f, &mut o)?;
    if !f.options_file.is_empty() {
        return options_from_file(&f.options_file, o);
    }
    Ok(o)
}

/// db_bench's `--options_file`: the file's DB options and its default family's, read as
/// `Options::load_from_file` reads them (options Strata does not have skipped: a file RocksDB
/// wrote names many), then only what db_bench's own set-up puts over an OPTIONS file, taken
/// from `flags` (the options the flags made): the DB created unless `--use_existing_db`, the
/// run's block cache when `--cache_size` is above 0, a Bloom filter of `--bloom_bits` when
/// the file sets none, and `--wal_dir`, `--rate_limiter_bytes_per_sec` and
/// `--merge_operator` where given. Every other option flag is left unapplied, as db_bench
/// leaves it.
fn options_from_file(file: &str, flags: Options) -> Result<Options> {
    let cache = flags.block_cache.clone().unwrap_or_else(|| Cache::new_lru_cache(8 << 20));
    let env = strata::Env::new().map_err(|e| anyhow!("--options_file={file}: {e}"))?;
    let (mut o, _) = Options::load_from_file(file, env, true, cache)
        .map_err(|e| anyhow!("--options_file={file}: {e}"))?;
    o.create_if_missing = flags.create_if_missing;
    if flags.block_cache.is_some() {
        o.block_cache = flags.block_cache;
        o.block_cache_size = flags.block_cache_size;
    }
    if o.bloom_bits_per_key == 0 {
        o.bloom_bits_per_key = flags.bloom_bits_per_key;
    }
    // The flag's where given, else the file's.
    o.wal_dir = flags.wal_dir.or(o.wal_dir);
    o.rate_limiter = flags.rate_limiter.or(o.rate_limiter);
    o.merge_operator = flags.merge_operator.or(o.merge_operator);
    Ok(o)
}

/// `--compaction_style` and the `--universal_*` / `--fifo_*` flags, as db_bench maps them
/// (0 for a universal knob keeps the engine default; the FIFO size 0, db_bench's default,
/// keeps the engine's 1 GiB, where RocksDB would get 0 and drop every file); the Strata-only
/// style 4 (tiered) and its `--tiered_*` flags (0 keeps the engine default).
fn apply_compaction_style(f: &crate::flags::Flags, o: &mut Options) -> Result<()> {
    o.compaction_style = match f.compaction_style {
        3 => {
            o.disable_auto_compactions = true;
            CompactionStyle::Leveled
        }
        4 => CompactionStyle::Tiered,
        n => CompactionStyle::from_rocksdb_number(n).ok_or_else(|| {
            anyhow!(
                "--compaction_style={n}: use 0 (level), 1 (universal), 2 (FIFO), 3 (none) or \
                 4 (tiered)"
            )
        })?,
    };
    let u32_of = |name: &str, v: i64| -> Result<u32> {
        u32::try_from(v).map_err(|_| anyhow!("--{name}={v}: out of range"))
    };
    let u = &mut o.compaction_options_universal;
    if f.universal_size_ratio != 0 {
        u.size_ratio = u32_of("universal_size_ratio", f.universal_size_ratio)?;
    }
    if f.universal_min_merge_width != 0 {
        u.min_merge_width = u32_of("universal_min_merge_width", f.universal_min_merge_width)?;
    }
    if f.universal_max_merge_width != 0 {
        u.max_merge_width = u32_of("universal_max_merge_width", f.universal_max_merge_width)?;
    }
    if f.universal_max_size_amplification_percent != 0 {
        u.max_size_amplification_percent = u32_of(
            "universal_max_size_amplification_percent",
            f.universal_max_size_amplification_percent,
        )?;
    }
    u.compression_size_percent = i32::try_from(f.universal_compression_size_percent)
        .map_err(|_| anyhow!("--universal_compression_size_percent: out of range"))?;
    u.allow_trivial_move = f.universal_allow_trivial_move;
    u.incremental = f.universal_incremental;
    u.stop_style = match f.universal_stop_style {
        0 => CompactionStopStyle::TotalSize,
        1 => CompactionStopStyle::SimilarSize,
        v => bail!("--universal_stop_style={v}: use 0 (total size) or 1 (similar size)"),
    };
    let t = &mut o.compaction_options_tiered;
    if f.tiered_fan_in != 0 {
        t.fan_in = u32_of("tiered_fan_in", f.tiered_fan_in)?;
    }
    if f.tiered_max_sorted_runs != 0 {
        t.max_sorted_runs = u32_of("tiered_max_sorted_runs", f.tiered_max_sorted_runs)?;
    }
    if f.tiered_max_size_amplification_percent != 0 {
        t.max_size_amplification_percent = u32_of(
            "tiered_max_size_amplification_percent",
            f.tiered_max_size_amplification_percent,
        )?;
    }
    t.skewed_filter_bits = f.tiered_skewed_filter_bits;
    let fifo = &mut o.compaction_options_fifo;
    if f.fifo_compaction_max_table_files_size_mb != 0 {
        fifo.max_table_files_size =
            f.fifo_compaction_max_table_files_size_mb.saturating_mul(1 << 20);
    }
    fifo.ttl_secs = f.fifo_compaction_ttl;
    fifo.allow_compaction = f.fifo_compaction_allow_compaction;
    Ok(())
}

pub fn open(cfg: &Config) -> Result<Box<dyn Engine>> {
    let mut opts = build_options(cfg)?;
    let n = super::num_column_families(cfg)?;
    // Every family the DB has must be opened; the ones `--num_column_families` names and the
    // DB lacks are created. Each family gets the run's options.
    let mut names: Vec<String> = (1..n).map(super::column_family_name).collect();
    if cfg.db.join("CURRENT").is_file() {
        for existing in Db::list_cf(&opts, &cfg.db)? {
            if existing != "default" && !names.contains(&existing) {
                names.push(existing);
            }
        }
    }
    opts.create_missing_column_families = true;
    let descriptors: Vec<ColumnFamilyDescriptor> =
        names.iter().map(|name| ColumnFamilyDescriptor::new(name, opts.clone())).collect();
    let f = &cfg.flags;
    let db = if f.readonly {
        if f.transaction_db || f.optimistic_transaction_db {
            bail!("--readonly with a transaction DB: a read-only DB takes no transactions");
        }
        // As RocksDB's OpenForReadOnly: the families named must exist, nothing is written.
        Handle::Plain(Db::open_cf_descriptors_read_only(&opts, &cfg.db, descriptors, false)?)
    } else if f.transaction_db {
        let mut t = TransactionOptions::new();
        // As db_bench's inserter: every transaction reads at a snapshot taken as it begins.
        t.set_snapshot(true);
        t.set_lock_timeout(f.transaction_lock_timeout);
        let o = TransactionDbOptions::new();
        Handle::Pessimistic(
            Box::new(TransactionDb::open_cf_descriptors(&opts, &o, &cfg.db, descriptors)?),
            t,
        )
    } else if f.optimistic_transaction_db {
        Handle::Optimistic(OptimisticTransactionDb::open_cf_descriptors(
            &opts,
            &cfg.db,
            descriptors,
        )?)
    } else {
        Handle::Plain(Db::open_cf_descriptors(&opts, &cfg.db, descriptors)?)
    };
    let mut cfs = Vec::new();
    if n > 1 {
        cfs.push(None);
        for i in 1..n {
            let name = super::column_family_name(i);
            cfs.push(Some(db.cf_handle(&name).ok_or_else(|| anyhow!("no column family {name}"))?));
        }
    }
    Ok(Box::new(StrataEngine { db, opts, cfs }))
}

/// The DB, opened plain or with transactions (`--transaction_db`,
/// `--optimistic_transaction_db`); every `Db` method through `Deref`.
enum Handle {
    Plain(Db),
    Optimistic(OptimisticTransactionDb),
    /// With the options each transaction begins with.
    Pessimistic(Box<TransactionDb>, TransactionOptions),
}

impl std::ops::Deref for Handle {
    type Target = Db;
    fn deref(&self) -> &Db {
        match self {
            Handle::Plain(db) => db,
            Handle::Optimistic(db) => db,
            Handle::Pessimistic(db, _) => db,
        }
    }
}

struct StrataEngine {
    db: Handle,
    /// The options the DB was opened with (its table files' format, for
    /// `write_table_file`).
    opts: Options,
    /// With `--num_column_families` > 1: the families keys are spread over, by index (0 is
    /// `default`, kept as `None`); empty otherwise.
    cfs: Vec<Option<Arc<ColumnFamily>>>,
}

/// A transaction's error as `randomtransaction` sees it: `Ok` for a conflict (module docs of
/// `super::EngineTxn`), else the error.
fn conflict_or(e: strata::Error) -> Result<()> {
    match e.kind() {
        ErrorKind::Busy | ErrorKind::TimedOut | ErrorKind::TryAgain | ErrorKind::Expired => Ok(()),
        _ => Err(e.into()),
    }
}

/// A Strata transaction of either kind behind [`super::EngineTxn`].
struct StrataTxn<'a, K> {
    txn: Transaction<'a, K>,
    pessimistic: bool,
}

impl<K> super::EngineTxn for StrataTxn<'_, K> {
    fn get(&mut self, key: &[u8], for_update: bool, out: &mut Vec<u8>) -> Result<Option<bool>> {
        // A pessimistic read for update locks the key and checks that it was not written since
        // the snapshot: what it reads then is what the snapshot holds.
        let r = if for_update {
            self.txn.get_for_update(key, true)
        } else if self.pessimistic {
            self.txn.snapshot().get(key)
        } else {
            self.txn.get(key)
        };
        super::txn_read(r, out, conflict_or)
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<bool> {
        super::txn_step(self.txn.put(key, value), conflict_or)
    }

    fn prepare(&mut self) -> Result<()> {
        Ok(self.txn.prepare()?)
    }

    fn commit(self: Box<Self>) -> Result<bool> {
        super::txn_step(self.txn.commit(), conflict_or)
    }

    fn rollback(self: Box<Self>) -> Result<()> {
        Ok(self.txn.rollback()?)
    }
}

impl StrataEngine {
    /// The family `key` belongs to (`None`: default).
    fn cf_of(&self, key: &[u8]) -> Option<&Arc<ColumnFamily>> {
        if self.cfs.len() <= 1 {
            return None;
        }
        self.cfs[super::family_of(key, self.cfs.len())].as_ref()
    }
}

/// `restore`: the newest backup in `from` restored into `to`, which `clear` empties once the
/// backup is known to be there.
pub fn restore(
    from: &std::path::Path,
    to: &std::path::Path,
    clear: &dyn Fn() -> Result<()>,
) -> Result<()> {
    let engine = strata::BackupEngine::open(&Options::default(), from)?;
    if engine.backups()?.is_empty() {
        bail!("{} holds no backup", from.display());
    }
    clear()?;
    engine.restore_from_latest_backup(to)?;
    Ok(())
}

/// A Strata snapshot, read in the engine's families.
struct StrataSnapshot<'a> {
    engine: &'a StrataEngine,
    snap: strata::Snapshot<'static>,
}

impl EngineSnapshot for StrataSnapshot<'_> {
    fn get(&self, key: &[u8], ro: &ReadOpts, out: &mut Vec<u8>) -> Result<bool> {
        let r = match self.engine.cf_of(key) {
            None => self.snap.get_opt(key, &ropts(*ro))?,
            Some(cf) => self.snap.get_cf_opt(cf, key, &ropts(*ro))?,
        };
        match r {
            Some(v) => {
                *out = v;
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

fn wopts(wo: WriteOpts) -> WriteOptions {
    WriteOptions { sync: wo.sync, disable_wal: wo.disable_wal, ..WriteOptions::default() }
}

/// The bytes db_bench counts of an entity read: every column's name and value.
fn column_bytes(c: &strata::WideColumns) -> u64 {
    c.iter().map(|(n, v)| (n.len() + v.len()) as u64).sum()
}

fn ropts(ro: ReadOpts) -> ReadOptions {
    ReadOptions {
        verify_checksums: ro.verify_checksums,
        fill_cache: ro.fill_cache,
        readahead_size: ro.readahead_size,
        // Strata's seeks are always in total order; `auto_prefix_mode` (the prefix filter
        // only where a total-order seek finds the same) is what they already give.
        total_order_seek: ro.total_order_seek,
        prefix_same_as_start: ro.prefix_same_as_start,
        ..ReadOptions::default()
    }
}

impl Engine for StrataEngine {
    // A `TransactionDb`'s own writes lock their keys (as RocksDB's do with --transaction_db).
    fn put(&self, key: &[u8], value: &[u8], wo: &WriteOpts) -> Result<()> {
        let w = wopts(*wo);
        match (&self.db, self.cf_of(key)) {
            (Handle::Pessimistic(t, _), None) => Ok(t.put_opt(key, value, &w)?),
            (Handle::Pessimistic(t, _), Some(cf)) => Ok(t.put_cf_opt(cf, key, value, &w)?),
            (db, None) => Ok(db.put_opt(key, value, &w)?),
            (db, Some(cf)) => Ok(db.put_cf_opt(cf, key, value, &w)?),
        }
    }

    fn delete(&self, key: &[u8], wo: &WriteOpts) -> Result<()> {
        let w = wopts(*wo);
        match (&self.db, self.cf_of(key)) {
            (Handle::Pessimistic(t, _), None) => Ok(t.delete_opt(key, &w)?),
            (Handle::Pessimistic(t, _), Some(cf)) => Ok(t.delete_cf_opt(cf, key, &w)?),
            (db, None) => Ok(db.delete_opt(key, &w)?),
            (db, Some(cf)) => Ok(db.delete_cf_opt(cf, key, &w)?),
        }
    }

    fn single_delete(&self, key: &[u8], wo: &WriteOpts) -> Result<()> {
        let mut b = WriteBatch::default();
        match self.cf_of(key) {
            None => b.single_delete(key),
            Some(cf) => b.single_delete_cf(cf, key),
        }
        match &self.db {
            Handle::Pessimistic(t, _) => Ok(t.write_opt(b, &wopts(*wo))?),
            db => Ok(db.write_opt(b, &wopts(*wo))?),
        }
    }

    fn backup(&self, dir: &std::path::Path) -> Result<()> {
        let engine = strata::BackupEngine::open(&Options::default(), dir)?;
        engine.purge_old_backups(0)?;
        engine.create_new_backup(&self.db)?;
        let n = engine.backups()?.len();
        if n != 1 {
            bail!("{} holds {n} backups after a backup into a cleared directory", dir.display());
        }
        Ok(())
    }

    fn verify_checksum(&self) -> Result<()> {
        Ok(self.db.verify_checksum()?)
    }

    fn verify_file_checksums(&self) -> Result<()> {
        Ok(self.db.verify_file_checksums()?)
    }

    fn write_table_file(
        &self,
        path: &std::path::Path,
        fill: &mut super::FillTable<'_>,
    ) -> Result<()> {
        let mut w = strata::SstFileWriter::create(&self.opts);
        w.open(path)?;
        fill(&mut |k, v| Ok(w.put(k, v)?))?;
        w.finish()?;
        Ok(())
    }

    fn ingest_files(&self, paths: &[std::path::PathBuf]) -> Result<()> {
        let o = strata::IngestExternalFileOptions { move_files: true, ..Default::default() };
        Ok(self.db.ingest_external_file_opts(&o, paths)?)
    }

    fn approximate_sizes(
        &self,
        ranges: &[u8],
        key_size: usize,
        sizes: &mut Vec<u64>,
    ) -> Result<()> {
        let rs: Vec<strata::Range<'_>> = ranges
            .chunks_exact(2 * key_size)
            .map(|r| strata::Range::new(&r[..key_size], &r[key_size..]))
            .collect();
        *sizes = self.db.get_approximate_sizes(&rs);
        Ok(())
    }

    fn approximate_memtable_stats(&self, start: &[u8], end: &[u8]) -> Result<(u64, u64)> {
        Ok(self.db.get_approximate_memtable_stats(&strata::Range::new(start, end)))
    }

    fn snapshot(&self) -> Result<Box<dyn EngineSnapshot + '_>> {
        Ok(Box::new(StrataSnapshot { engine: self, snap: self.db.snapshot() }))
    }

    fn merge(&self, key: &[u8], value: &[u8], wo: &WriteOpts) -> Result<()> {
        let w = wopts(*wo);
        match (&self.db, self.cf_of(key)) {
            (Handle::Pessimistic(t, _), None) => Ok(t.merge_opt(key, value, &w)?),
            (Handle::Pessimistic(t, _), Some(cf)) => Ok(t.merge_cf_opt(cf, key, value, &w)?),
            (db, None) => Ok(db.merge_opt(key, value, &w)?),
            (db, Some(cf)) => Ok(db.merge_cf_opt(cf, key, value, &w)?),
        }
    }

    fn transaction_kind(&self) -> Option<super::TxnKind> {
        match &self.db {
            Handle::Plain(_) => None,
            Handle::Optimistic(_) => Some(super::TxnKind::Optimistic),
            Handle::Pessimistic(..) => Some(super::TxnKind::Pessimistic),
        }
    }

    fn begin_transaction(
        &self,
        wo: &WriteOpts,
        name: &str,
    ) -> Result<Box<dyn super::EngineTxn + '_>> {
        let w = wopts(*wo);
        match &self.db {
            Handle::Plain(_) => {
                bail!("transactions need --transaction_db or --optimistic_transaction_db")
            }
            Handle::Optimistic(db) => {
                let txn = db.transaction_opt(&w, &strata::OptimisticTransactionOptions::default());
                Ok(Box::new(StrataTxn { txn, pessimistic: false }))
            }
            Handle::Pessimistic(db, o) => {
                let txn = db.transaction_opt(&w, o);
                txn.set_name(name.as_bytes())?;
                Ok(Box::new(StrataTxn { txn, pessimistic: true }))
            }
        }
    }

    fn write(&self, batch: &Batch, wo: &WriteOpts) -> Result<()> {
        let mut b = WriteBatch::new();
        for (op, k, v) in batch.iter() {
            match (op, self.cf_of(k)) {
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
        match &self.db {
            Handle::Pessimistic(t, _) => Ok(t.write_opt(b, &wopts(*wo))?),
            db => Ok(db.write_opt(b, &wopts(*wo))?),
        }
    }

    fn get(&self, key: &[u8], ro: &ReadOpts, out: &mut Vec<u8>) -> Result<bool> {
        let r = match self.cf_of(key) {
            None => self.db.get_opt(key, &ropts(*ro))?,
            Some(cf) => self.db.get_cf_opt(cf, key, &ropts(*ro))?,
        };
        match r {
            Some(v) => {
                *out = v;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn get_merge_operands(
        &self,
        key: &[u8],
        ro: &ReadOpts,
        max: usize,
        out: &mut Vec<Vec<u8>>,
    ) -> Result<Operands> {
        let bounds = strata::GetMergeOperandsOptions {
            expected_max_number_of_operands: max,
            ..strata::GetMergeOperandsOptions::default()
        };
        let r = match self.cf_of(key) {
            None => self.db.get_merge_operands_opt(key, &ropts(*ro), &bounds),
            Some(cf) => self.db.get_merge_operands_cf_opt(cf, key, &ropts(*ro), &bounds),
        };
        match r {
            Ok(Some(ops)) => {
                *out = ops;
                Ok(Operands::Found)
            }
            Ok(None) => Ok(Operands::Missing),
            Err(e) if e.kind() == strata::ErrorKind::Incomplete => Ok(Operands::MoreThanMax),
            Err(e) => Err(e.into()),
        }
    }

    fn get_entity(&self, key: &[u8], ro: &ReadOpts) -> Result<Option<u64>> {
        let found = match self.cf_of(key) {
            None => self.db.get_entity_opt(key, &ropts(*ro))?,
            Some(cf) => self.db.get_entity_cf_opt(cf, key, &ropts(*ro))?,
        };
        Ok(found.map(|c| column_bytes(&c)))
    }

    fn multi_get_entity(&self, keys: &[u8], key_size: usize, ro: &ReadOpts) -> Result<(u64, u64)> {
        let keys: Vec<&[u8]> = keys.chunks(key_size.max(1)).collect();
        let (mut found, mut bytes) = (0, 0);
        // Keys are routed to families by their first key (`--num_column_families`), as
        // db_bench's MultiGetEntity reads one family per call.
        let got = match keys.first().and_then(|k| self.cf_of(k)) {
            None => self.db.multi_get_entity_opt(keys, &ropts(*ro)),
            Some(cf) => self.db.multi_get_entity_cf_opt(cf, keys, &ropts(*ro)),
        };
        for r in got {
            if let Some(c) = r? {
                found += 1;
                bytes += column_bytes(&c);
            }
        }
        Ok((found, bytes))
    }

    fn multi_scan(
        &self,
        ranges: &[u8],
        key_size: usize,
        settings: &MultiScanSettings,
        ro: &ReadOpts,
    ) -> Result<u64> {
        let mut args = strata::MultiScanArgs::new();
        args.io_coalesce_threshold = settings.coalesce;
        args.max_prefetch_size = settings.max_prefetch;
        args.use_async_io = settings.async_io;
        args.reverse = settings.reverse;
        args.reserve(ranges.len() / (2 * key_size.max(1)));
        for r in ranges.chunks(2 * key_size.max(1)) {
            let (start, limit) = r.split_at(key_size.min(r.len()));
            args.insert(start, limit);
        }
        let mut scan = self.db.multi_scan(&ropts(*ro), &args)?;
        let mut keys = 0;
        while let Some(mut range) = scan.next_scan() {
            while let Some(entry) = range.next_entry() {
                std::hint::black_box(entry?);
                keys += 1;
            }
        }
        Ok(keys)
    }

    fn new_iterator<'a>(
        &'a self,
        ro: &ReadOpts,
        bounds: Bounds<'_>,
    ) -> Result<Box<dyn EngineIter + 'a>> {
        let mut o = ropts(*ro);
        o.iterate_lower_bound = bounds.lower.map(<[u8]>::to_vec);
        o.iterate_upper_bound = bounds.upper.map(<[u8]>::to_vec);
        Ok(Box::new(StrataIter { it: self.db.raw_iterator_opt(&o) }))
    }

    fn flush(&self) -> Result<()> {
        self.db.flush()?;
        for cf in self.cfs.iter().flatten() {
            self.db.flush_cf(cf)?;
        }
        Ok(())
    }

    fn compact_range(&self) -> Result<()> {
        self.db.compact_range(None::<&[u8]>, None::<&[u8]>)?;
        for cf in self.cfs.iter().flatten() {
            self.db.compact_range_cf(cf, None::<&[u8]>, None::<&[u8]>)?;
        }
        Ok(())
    }

    fn wait_for_compaction(&self) -> Result<()> {
        Ok(self.db.wait_for_compact(&strata::WaitForCompactOptions::default())?)
    }

    fn multi_get(
        &self,
        keys: &[u8],
        key_size: usize,
        ro: &ReadOpts,
        _scratch: &mut Vec<u8>,
        value_bytes: &mut u64,
    ) -> Result<u64> {
        let mut found = 0;
        if self.cfs.len() > 1 {
            // Per key (each in its family); the batched path reads one family.
            for k in keys.chunks(key_size.max(1)) {
                let r = match self.cf_of(k) {
                    None => self.db.get_opt(k, &ropts(*ro))?,
                    Some(cf) => self.db.get_cf_opt(cf, k, &ropts(*ro))?,
                };
                if let Some(v) = r {
                    found += 1;
                    *value_bytes += v.len() as u64;
                }
            }
            return Ok(found);
        }
        for r in self.db.multi_get_opt(keys.chunks(key_size.max(1)), &ropts(*ro)) {
            if let Some(v) = r? {
                found += 1;
                *value_bytes += v.len() as u64;
            }
        }
        Ok(found)
    }

    fn statistics_text(&self) -> Result<Option<String>> {
        Ok(self.db.property_value("strata.statistics")?)
    }

    fn property(&self, name: &str) -> Result<Option<String>> {
        Ok(self.db.property_value(name)?)
    }

    fn stats_text(&self) -> Result<String> {
        self.db
            .property_value("strata.stats")?
            .ok_or_else(|| anyhow!("strata.stats is not available"))
    }

    fn level_stats_text(&self) -> Result<String> {
        self.db
            .property_value("strata.levelstats")?
            .ok_or_else(|| anyhow!("strata.levelstats is not available"))
    }

    fn sstables_text(&self) -> Result<String> {
        self.db
            .property_value("strata.sstables")?
            .ok_or_else(|| anyhow!("sstables: strata has no strata.sstables property yet"))
    }

    fn stats_history(&self) -> Result<super::StatsRecords> {
        let mut it = self.db.get_stats_history(0, u64::MAX)?;
        let mut out = Vec::new();
        while it.valid() {
            out.push((it.stats_time(), it.stats_map().into_iter().collect()));
            it.next();
        }
        it.status()?;
        Ok(out)
    }

    fn live_files(&self) -> Result<Vec<LiveFile>> {
        Ok(self
            .db
            .live_files_metadata()
            .into_iter()
            .map(|f| LiveFile { name: f.name, level: f.level })
            .collect())
    }

    fn compact_files(&self, names: &[String], output_level: usize) -> Result<()> {
        Ok(self.db.compact_files(names, output_level)?)
    }
}

struct StrataIter {
    it: strata::DbRawIterator,
}

raw_iterator_adapter!(StrataIter);

#[cfg(test)]
mod tests {
    /// The adapter also fits a struct with a lifetime, as `engine/rocks.rs` uses it (that file
    /// builds only with the `rocksdb` feature).
    struct Borrowed<'a> {
        it: &'a mut strata::DbRawIterator,
    }

    raw_iterator_adapter!(Borrowed<'_>);

    #[test]
    fn adapter_over_a_borrowed_iterator() {
        fn is_iter<T: crate::engine::EngineIter>() {}
        is_iter::<Borrowed<'_>>();
    }
}
