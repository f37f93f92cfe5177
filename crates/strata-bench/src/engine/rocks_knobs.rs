//! The option flags of db_bench that `build_options` (`engine/rocks.rs`) leaves to this file:
//! the less common DB, column family and table options, set from the flags as db_bench's
//! `InitializeOptionsFromFlags` sets them, through the `rocksdb` crate's setters where it has
//! one and RocksDB's C API (`librocksdb-sys`) where it does not. Every flag read here is in
//! `crate::engine_kind::ROCKSDB_HONOURED_FLAGS`; the table options RocksDB's C API reaches
//! only through a table factory the crate keeps private stay hints (a note says so).

use anyhow::{anyhow, bail, Result};
use rocksdb::{BlockBasedOptions, ChecksumType, DBCompressionType, DataBlockIndexType, Options};

use super::fit;
use crate::config::Config;
use crate::flags::Flags;

/// `--max_bytes_for_level_multiplier_additional`: one factor per level, comma-separated, as
/// db_bench requires (empty: none).
pub(super) fn level_multipliers(f: &Flags) -> Result<Vec<i32>> {
    let text = f.max_bytes_for_level_multiplier_additional.trim();
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let v = text
        .split(',')
        .map(|s| s.trim().parse::<i32>())
        .collect::<Result<Vec<i32>, _>>()
        .map_err(|_| {
            anyhow!("--max_bytes_for_level_multiplier_additional={text}: integers, comma-separated")
        })?;
    if v.len() as i64 != f.num_levels {
        bail!(
            "--max_bytes_for_level_multiplier_additional={text}: {} factors for --num_levels={} \
             (one per level)",
            v.len(),
            f.num_levels
        );
    }
    Ok(v)
}

/// The table options: the block checksum and the data blocks' hash index.
pub(super) fn table(f: &Flags, t: &mut BlockBasedOptions) -> Result<()> {
    t.set_checksum_type(match f.checksum_type {
        0 => ChecksumType::NoChecksum,
        1 => ChecksumType::CRC32c,
        2 => ChecksumType::XXHash,
        3 => ChecksumType::XXHash64,
        4 => ChecksumType::XXH3,
        v => {
            bail!("--checksum_type={v}: 0 (none), 1 (crc32c), 2 (xxhash), 3 (xxhash64) or 4 (xxh3)")
        }
    });
    if f.use_data_block_hash_index {
        t.set_data_block_index_type(DataBlockIndexType::BinaryAndHash);
        t.set_data_block_hash_ratio(f.data_block_hash_table_util_ratio);
    }
    Ok(())
}

/// The DB and column family options.
pub(super) fn db(cfg: &Config, o: &mut Options) -> Result<()> {
    let f = &cfg.flags;
    o.set_periodic_compaction_seconds(f.periodic_compaction_seconds);
    // db_bench sets `ttl` from --fifo_compaction_ttl and then from --ttl_seconds; the second
    // wins when given.
    if cfg.set.contains("ttl_seconds") {
        o.set_ttl(f.ttl_seconds);
    }
    o.set_max_total_wal_size(f.max_total_wal_size);
    o.set_wal_ttl_seconds(f.wal_ttl_seconds);
    o.set_wal_size_limit_mb(f.wal_size_limit_MB);
    o.set_stats_dump_period_sec(fit("stats_dump_period_sec", f.stats_dump_period_sec)?);
    o.set_stats_persist_period_sec(fit("stats_persist_period_sec", f.stats_persist_period_sec)?);
    o.set_optimize_filters_for_hits(f.optimize_filters_for_hits);
    o.set_arena_block_size(fit("arena_block_size", f.arena_block_size)?);
    o.set_max_manifest_file_size(fit("max_manifest_file_size", f.max_manifest_file_size)?);
    o.set_inplace_update_support(f.inplace_update_support);
    o.set_inplace_update_locks(fit("inplace_update_num_locks", f.inplace_update_num_locks)?);
    o.set_max_write_buffer_size_to_maintain(f.max_write_buffer_size_to_maintain);
    o.set_use_adaptive_mutex(f.use_adaptive_mutex);
    // As db_bench: opening files in the background needs the stats update skipped.
    o.set_skip_stats_update_on_db_open(f.skip_stats_update_on_db_open || f.open_files_async);
    o.set_bloom_locality(fit("bloom_locality", f.bloom_locality)?);
    o.set_table_cache_num_shard_bits(fit("table_cache_numshardbits", f.table_cache_numshardbits)?);
    o.set_writable_file_max_buffer_size(fit(
        "writable_file_max_buffer_size",
        f.writable_file_max_buffer_size,
    )?);
    o.set_max_file_opening_threads(fit("file_opening_threads", f.file_opening_threads)?);
    o.set_dump_malloc_stats(f.dump_malloc_stats);
    o.set_experimental_mempurge_threshold(f.experimental_mempurge_threshold);
    let multipliers = level_multipliers(f)?;
    if !multipliers.is_empty() {
        o.set_max_bytes_for_level_multiplier_additional(&multipliers);
    }
    // db_bench: 2 KiB pages ask for huge pages (RocksDB rounds to the system's).
    o.set_memtable_huge_page_size(if f.memtable_use_huge_page { 2048 } else { 0 });
    match f.wal_compression.as_str() {
        "none" => {}
        "zstd" => o.set_wal_compression_type(DBCompressionType::Zstd),
        other => bail!(
            "--wal_compression={other}: none or zstd (RocksDB compresses WALs with zstd only)"
        ),
    }
    o.set_track_and_verify_wals_in_manifest(f.track_and_verify_wals_in_manifest);
    if f.compression_zstd_max_train_bytes != 0 {
        o.set_zstd_max_train_bytes(fit(
            "compression_zstd_max_train_bytes",
            f.compression_zstd_max_train_bytes,
        )?);
    }
    o.set_blob_compaction_readahead_size(f.blob_compaction_readahead_size);
    let b = u8::from;
    let log_readahead = fit::<usize>("log_readahead_size", f.log_readahead_size)?;
    let history = fit::<usize>("stats_history_buffer_size", f.stats_history_buffer_size)?;
    let scan_trigger =
        fit::<u32>("memtable_op_scan_flush_trigger", f.memtable_op_scan_flush_trigger)?;
    let uncache = fit::<u32>("uncache_aggressiveness", f.uncache_aggressiveness)?;
    let block_bytes =
        fit::<u8>("block_protection_bytes_per_key", f.block_protection_bytes_per_key)?;
    let memtable_bytes =
        fit::<u32>("memtable_protection_bytes_per_key", f.memtable_protection_bytes_per_key)?;
    let amp_pct = fit::<i32>("max_manifest_space_amp_pct", f.max_manifest_space_amp_pct)?;
    let partitions = fit::<u32>("blob_direct_write_partitions", f.blob_direct_write_partitions)?;
    let tombstones =
        fit::<u32>("min_tombstones_for_range_conversion", f.min_tombstones_for_range_conversion)?;
    let preserve = fit::<u64>("preserve_internal_time_seconds", f.preserve_internal_time_seconds)?;
    let preclude =
        fit::<u64>("preclude_last_level_data_seconds", f.preclude_last_level_data_seconds)?;
    let sample = fit::<u64>("sample_for_compression", f.sample_for_compression)?;
    // SAFETY: `o` is a live options object for the duration of the calls; the C setters only
    // store the values.
    unsafe {
        use librocksdb_sys as c;
        let raw = rocksdb::AsRawPtr::as_raw_ptr(o);
        c::rocksdb_options_set_avoid_flush_during_recovery(raw, b(f.avoid_flush_during_recovery));
        c::rocksdb_options_set_avoid_flush_during_shutdown(raw, b(f.avoid_flush_during_shutdown));
        c::rocksdb_options_set_force_consistency_checks(raw, b(f.force_consistency_checks));
        c::rocksdb_options_set_use_direct_io_for_compaction_reads(
            raw,
            b(f.use_direct_io_for_compaction_reads),
        );
        c::rocksdb_options_set_allow_data_in_errors(raw, b(f.allow_data_in_errors));
        c::rocksdb_options_set_log_readahead_size(raw, log_readahead);
        c::rocksdb_options_set_persist_stats_to_disk(raw, b(f.persist_stats_to_disk));
        c::rocksdb_options_set_stats_history_buffer_size(raw, history);
        c::rocksdb_options_set_track_and_verify_wals(raw, b(f.track_and_verify_wals));
        c::rocksdb_options_set_paranoid_memory_checks(raw, b(f.paranoid_memory_checks));
        c::rocksdb_options_set_memtable_verify_per_key_checksum_on_seek(
            raw,
            b(f.memtable_verify_per_key_checksum_on_seek),
        );
        c::rocksdb_options_set_sample_for_compression(raw, sample);
        c::rocksdb_options_set_preserve_internal_time_seconds(raw, preserve);
        c::rocksdb_options_set_preclude_last_level_data_seconds(raw, preclude);
        c::rocksdb_options_set_memtable_op_scan_flush_trigger(raw, scan_trigger);
        c::rocksdb_options_set_uncache_aggressiveness(raw, uncache);
        c::rocksdb_options_set_block_protection_bytes_per_key(raw, block_bytes);
        c::rocksdb_options_set_memtable_protection_bytes_per_key(raw, memtable_bytes);
        c::rocksdb_options_set_strict_max_successive_merges(raw, b(f.strict_max_successive_merges));
        c::rocksdb_options_set_max_manifest_space_amp_pct(raw, amp_pct);
        c::rocksdb_options_set_open_files_async(raw, b(f.open_files_async));
        c::rocksdb_options_set_enable_blob_direct_write(raw, b(f.enable_blob_direct_write));
        c::rocksdb_options_set_blob_direct_write_partitions(raw, partitions);
        c::rocksdb_options_set_read_triggered_compaction_threshold(
            raw,
            f.read_triggered_compaction_threshold,
        );
        c::rocksdb_options_set_min_tombstones_for_range_conversion(raw, tombstones);
        c::rocksdb_options_set_compression_options_max_dict_buffer_bytes(
            raw,
            f.compression_max_dict_buffer_bytes,
        );
        c::rocksdb_options_set_compression_options_use_zstd_dict_trainer(
            raw,
            b(f.compression_use_zstd_dict_trainer),
        );
        c::rocksdb_options_set_verify_manifest_content_on_close(
            raw,
            b(f.verify_manifest_content_on_close),
        );
        c::rocksdb_options_set_max_compaction_trigger_wakeup_seconds(
            raw,
            f.max_compaction_trigger_wakeup_seconds,
        );
        c::rocksdb_options_set_memtable_batch_lookup_optimization(
            raw,
            b(f.memtable_batch_lookup_optimization),
        );
        c::rocksdb_options_set_async_wal_precreate(raw, b(f.async_wal_precreate));
    }
    Ok(())
}
