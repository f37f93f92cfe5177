//! Command-line parsing (gflags syntax) and validation.

use strata_bench::config::{parse_bench_spec, BenchSpec, Config};
use strata_bench::flags::{self, FlagError};

fn parse(args: &[&str]) -> Result<flags::ParsedFlags, FlagError> {
    flags::parse(args)
}

fn err(args: &[&str]) -> String {
    match Config::from_args(args) {
        Ok(_) => panic!("{args:?} was accepted"),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn syntaxes() {
    let p = parse(&["--num=5", "-reads=7", "--writes", "9", "--histogram", "--noverify_checksum"])
        .expect("parse");
    assert_eq!(p.flags.num, 5);
    assert_eq!(p.flags.reads, 7);
    assert_eq!(p.flags.writes, 9);
    assert!(p.flags.histogram);
    assert!(!p.flags.verify_checksum);
    assert!(p.set.contains("verify_checksum"));
    let p = parse(&["--histogram=false", "--sync=1", "--disable_wal=yes", "--use_existing_db=t"])
        .expect("parse");
    assert!(!p.flags.histogram && p.flags.sync && p.flags.disable_wal && p.flags.use_existing_db);
    let p = parse(&["--seed", "0x10", "--compression_ratio=0.25", "--db", "/x y"]).expect("parse");
    assert_eq!(p.flags.seed, 16);
    assert!((p.flags.compression_ratio - 0.25).abs() < 1e-12);
    assert_eq!(p.flags.db, "/x y");
    // A boolean flag does not take the next argument as its value.
    assert!(parse(&["--histogram", "1"]).is_err());
    assert!(parse(&["--", "--num=1"]).is_err());
    assert!(parse(&["--"]).is_ok());
}

#[test]
fn unknown_flags_and_undefok() {
    let e = parse(&["--no_such_flag=1"]).expect_err("unknown");
    assert_eq!(e.to_string(), "ERROR: unknown command line flag 'no_such_flag'");
    // --undefok may come before or after, value with '=' or as the next argument.
    assert!(parse(&["--no_such_flag=1", "--undefok=a,no_such_flag"]).is_ok());
    assert!(parse(&["--undefok", "no_such_flag", "--no_such_flag", "3", "--num=2"]).is_ok());
    assert!(parse(&["--undefok=other", "--nono_such_flag"]).is_err());
    assert!(parse(&["--undefok=blob_flag", "--noblob_flag"]).is_ok());
    // benchmark.sh's --undefok list parses.
    let bsh = "--undefok=use_blob_cache,use_shared_block_and_blob_cache,blob_cache_size,\
               blob_cache_numshardbits,prepopulate_blob_cache,multiread_batched,\
               cache_low_pri_pool_ratio,prepopulate_block_cache";
    assert!(parse(&[bsh, "--multiread_batched=1"]).is_ok());
}

#[test]
fn bad_values() {
    assert!(parse(&["--num=abc"]).is_err());
    assert!(parse(&["--seed=-1"]).is_err());
    assert!(parse(&["--histogram=maybe"]).is_err());
    assert!(parse(&["--num"]).is_err());
    let e = parse(&["--nonum"]).expect_err("no on int");
    assert!(e.to_string().contains("boolean value (nonum) specified for int64"), "{e}");
}

#[test]
fn help_and_version() {
    let p = parse(&["--help"]).expect("help");
    assert!(p.help);
    let u = flags::usage();
    assert!(u.contains("--benchmarks"));
    assert!(u.contains("--cache_size (int64) [engine] default: 33554432"));
    assert!(parse(&["--version"]).expect("version").version);
}

#[test]
fn defaults_follow_db_bench() {
    let f = flags::Flags::default();
    assert_eq!(
        (f.num, f.reads, f.key_size, f.value_size, f.batch_size),
        (1_000_000, -1, 16, 100, 1)
    );
    assert!((f.compression_ratio - 0.5).abs() < 1e-12);
    assert_eq!(f.cache_size, 32 << 20);
    assert_eq!(f.write_buffer_size, 64 << 20);
    assert_eq!(f.bloom_bits, -1);
    assert_eq!(f.compression_type, "snappy");
    assert_eq!(f.readwritepercent, 90);
    assert_eq!(f.mergereadpercent, 70);
    assert_eq!(f.level0_stop_writes_trigger, 36);
    assert!(f.verify_checksum && f.progress_reports && !f.histogram);
}

#[test]
fn repeat_syntax() {
    assert_eq!(
        parse_bench_spec("readrandom[X3-W1]").expect("spec"),
        BenchSpec { name: "readrandom".into(), repeats: 3, warmups: 1 }
    );
    assert_eq!(parse_bench_spec("fillseq[W2]").expect("spec").warmups, 2);
    assert_eq!(parse_bench_spec("fillseq").expect("spec").repeats, 1);
    assert!(parse_bench_spec("fillseq[X3").is_err());
    assert!(parse_bench_spec("fillseq[Z3]").is_err());
}

#[test]
fn validation() {
    let c = Config::from_args(&["--benchmarks=fillseq,readrandom[X2]", "--seed=7", "--db=/tmp/v"])
        .expect("valid");
    assert_eq!(c.benchmarks.len(), 2);
    assert_eq!(c.seed_base, 7);
    assert!(err(&["--benchmarks=nosuch"]).contains("unknown benchmark 'nosuch'"));
    assert!(err(&["--benchmarks=replay"]).contains("not implemented"));
    let e = err(&["--benchmarks=mixgraph", "--mix_get_ratio=0"]);
    assert!(e.contains("mixgraph: --mix_get_ratio=0") && e.contains("one must be positive"), "{e}");
    let e = err(&["--benchmarks=mixgraph", "--keyrange_dist_a=1", "--keyrange_num=2000000"]);
    assert!(e.contains("more key ranges than --num=1000000 has keys"), "{e}");
    assert!(err(&["--num=0"]).contains("--num=0"));
    assert!(err(&["--compression_ratio=1.5"]).contains("compression_ratio"));
    assert!(err(&["--compression_type=brotli"]).contains("compression_type"));
    assert!(err(&["--merge_operator=nope"]).contains("merge_operator"));
    assert!(err(&["--prefix_size=20"]).contains("prefix_size"));
    assert!(err(&["--use_existing_keys"]).contains("use_existing_db"));
    assert!(err(&["--engine=nosuch"]).contains("unknown engine"));
    // A peer not compiled in: the feature that builds it, and where its library comes from.
    if !cfg!(feature = "leveldb") {
        let e = err(&["--engine=leveldb"]);
        assert!(e.contains("--features leveldb") && e.contains("bench/setup-peers.sh"), "{e}");
    }
    assert!(err(&["--readwritepercent=101"]).contains("percentage"));
    // --readonly implies --use_existing_db; the memory engine has no read-only open.
    let c = Config::from_args(&["--readonly"]).expect("strata opens read-only");
    assert!(c.use_existing_db);
    let e = err(&["--engine=memory", "--readonly"]);
    assert!(e.contains("engine memory cannot honour --readonly=true"), "{e}");
}

#[test]
fn engine_flags_are_never_silently_ignored() {
    // Non-default engine flags that Strata cannot honour are rejected, naming them.
    let e = err(&["--compression_max_dict_bytes=16384", "--use_direct_reads"]);
    assert!(e.contains("engine strata cannot honour"), "{e}");
    assert!(e.contains("--compression_max_dict_bytes=16384"), "{e}");
    assert!(!e.contains("use_direct_reads"), "direct I/O is honoured: {e}");
    // A missing compaction style is named once, as the feature, not as a list of its knobs.
    let e = err(&["--engine=memory", "--compaction_style=1", "--universal_size_ratio=5"]);
    assert!(e.contains("engine memory has no universal compaction (--compaction_style=1)"), "{e}");
    assert!(!e.contains("universal_size_ratio"), "{e}");
    // Their default values are fine.
    assert!(Config::from_args(&["--compaction_style=0", "--use_direct_reads=false"]).is_ok());
    // Honoured engine flags pass.
    let c = Config::from_args(&[
        "--write_buffer_size=1048576",
        "--bloom_bits=10",
        "--sync",
        "--level0_slowdown_writes_trigger=8",
        "--target_file_size_base=1048576",
    ])
    .expect("honoured");
    assert_eq!(c.flags.write_buffer_size, 1 << 20);
    // RocksDB tuning knobs are accepted with a note.
    let c =
        Config::from_args(&["--cache_low_pri_pool_ratio=0.1", "--stats_level=2"]).expect("hints");
    assert_eq!(c.notes.len(), 2);
    assert!(c.notes[0].contains("--cache_low_pri_pool_ratio=0.1"), "{:?}", c.notes);
    // The memtable representation is Strata's too (skip_list or vector): no note.
    let c = Config::from_args(&["--memtablerep=vector"]).expect("vector memtable");
    assert!(c.notes.is_empty(), "{:?}", c.notes);
    // The block cache's shape is Strata's too: no note.
    let c = Config::from_args(&[
        "--cache_type=lru_cache",
        "--cache_numshardbits=6",
        "--cache_high_pri_pool_ratio=0.5",
    ])
    .expect("cache flags");
    assert!(c.notes.is_empty(), "{:?}", c.notes);
    // The memory engine honours fewer flags.
    assert!(err(&["--engine=memory", "--bloom_bits=10"]).contains("engine memory cannot honour"));
}

/// The flags RocksDB's regression_test.sh passes are known: one DB (`--num_multi_db` above 1
/// is refused, naming it), RocksDB's thread pools and async reads noted as having no effect.
#[test]
fn regression_test_sh_flags_are_known_and_several_dbs_refused() {
    let c = Config::from_args(&[
        "--num_multi_db=1",
        "--num_high_pri_threads=4",
        "--num_low_pri_threads=16",
        "--async_io=true",
        "--max_auto_readahead_size=1048576",
    ])
    .expect("regression_test.sh's flags");
    let notes = c.notes.join("\n");
    for name in ["num_high_pri_threads", "num_low_pri_threads", "async_io", "max_auto_readahead"] {
        assert!(notes.contains(&format!("--{name}")), "{name}: {notes}");
    }
    assert!(!notes.contains("num_multi_db"), "{notes}");
    let e = err(&["--num_multi_db=2"]);
    assert!(e.contains("--num_multi_db=2") && e.contains("one DB"), "{e}");
}

#[test]
fn compaction_styles_map_to_strata_options() {
    use strata::{CompactionStopStyle, CompactionStyle};
    let c = Config::from_args(&[
        "--compaction_style=1",
        "--universal_size_ratio=5",
        "--universal_min_merge_width=3",
        "--universal_max_merge_width=20",
        "--universal_max_size_amplification_percent=150",
        "--universal_compression_size_percent=40",
        "--universal_allow_trivial_move=true",
        "--universal_incremental=true",
    ])
    .expect("universal flags are honoured");
    let o = strata_bench::engine::strata::build_options(&c).expect("options");
    assert_eq!(o.compaction_style, CompactionStyle::Universal);
    let u = &o.compaction_options_universal;
    assert_eq!(
        (u.size_ratio, u.min_merge_width, u.max_merge_width, u.max_size_amplification_percent),
        (5, 3, 20, 150)
    );
    assert_eq!(u.compression_size_percent, 40);
    assert!(u.allow_trivial_move);
    assert!(u.incremental);
    assert_eq!(u.stop_style, CompactionStopStyle::TotalSize);
    // 0 keeps the engine's defaults, as db_bench's flags do for RocksDB.
    let c = Config::from_args(&["--compaction_style=1"]).expect("universal");
    let o = strata_bench::engine::strata::build_options(&c).expect("options");
    assert_eq!(o.compaction_options_universal, strata::UniversalCompactionOptions::default());
    let c = Config::from_args(&[
        "--compaction_style=2",
        "--fifo_compaction_max_table_files_size_mb=64",
        "--fifo_compaction_ttl=3600",
        "--fifo_compaction_allow_compaction=false",
    ])
    .expect("FIFO flags are honoured");
    let o = strata_bench::engine::strata::build_options(&c).expect("options");
    assert_eq!(o.compaction_style, CompactionStyle::Fifo);
    assert_eq!(o.compaction_options_fifo.max_table_files_size, 64 << 20);
    assert_eq!(o.compaction_options_fifo.ttl_secs, 3600);
    assert!(!o.compaction_options_fifo.allow_compaction);
    // 3 ("none") is leveled without automatic compactions; other numbers are refused.
    let c = Config::from_args(&["--compaction_style=3"]).expect("none");
    let o = strata_bench::engine::strata::build_options(&c).expect("options");
    assert!(o.disable_auto_compactions);
    // 4 is Strata's tiered style, with its own flags and universal's stop style.
    let c = Config::from_args(&[
        "--compaction_style=4",
        "--tiered_fan_in=6",
        "--tiered_max_sorted_runs=20",
        "--tiered_max_size_amplification_percent=150",
        "--tiered_skewed_filter_bits=true",
        "--universal_stop_style=1",
    ])
    .expect("tiered flags are honoured");
    let o = strata_bench::engine::strata::build_options(&c).expect("options");
    assert_eq!(o.compaction_style, CompactionStyle::Tiered);
    let t = &o.compaction_options_tiered;
    assert_eq!((t.fan_in, t.max_sorted_runs, t.max_size_amplification_percent), (6, 20, 150));
    assert!(t.skewed_filter_bits);
    assert_eq!(o.compaction_options_universal.stop_style, CompactionStopStyle::SimilarSize);
    let c = Config::from_args(&["--compaction_style=4"]).expect("tiered");
    let o = strata_bench::engine::strata::build_options(&c).expect("options");
    assert_eq!(o.compaction_options_tiered, strata::TieredCompactionOptions::default());
    let c = Config::from_args(&["--universal_stop_style=2"]).expect("parsed");
    let e = strata_bench::engine::strata::build_options(&c).expect_err("stop style 2");
    assert!(e.to_string().contains("--universal_stop_style=2"), "{e}");
    let c = Config::from_args(&["--compaction_style=7"]).expect("parsed");
    let e = strata_bench::engine::strata::build_options(&c).expect_err("style 7");
    assert!(e.to_string().contains("--compaction_style=7"), "{e}");
}

#[test]
fn engines_not_compiled_in_are_explained() {
    if cfg!(feature = "rocksdb") {
        return;
    }
    let e = err(&["--engine=rocksdb"]);
    assert!(e.contains("--features rocksdb"), "{e}");
}

#[test]
fn cache_flags_build_the_strata_block_cache() {
    use strata::CacheType;
    use strata_bench::engine::strata::block_cache;
    let cache = |args: &[&str]| block_cache(&Config::from_args(args).expect("valid flags"));
    let c = cache(&["--cache_size=8388608", "--cache_type=lru_cache"]).unwrap().unwrap();
    assert_eq!((c.cache_type(), c.capacity()), (CacheType::Lru, 8 << 20));
    for t in ["hyper_clock_cache", "fixed_hyper_clock_cache", "auto_hyper_clock_cache"] {
        let c = cache(&["--cache_size=8388608", &format!("--cache_type={t}")]).unwrap().unwrap();
        assert_eq!(c.cache_type(), CacheType::HyperClock, "{t}");
    }
    assert!(cache(&["--cache_size=0"]).unwrap().is_none());
    assert!(cache(&["--cache_type=clock_cache"]).is_err());
    assert!(cache(&["--cache_type=lru_cache", "--cache_high_pri_pool_ratio=2"]).is_err());
    assert!(cache(&["--cache_type=lru_cache", "--cache_numshardbits=20"]).is_err());
}

#[test]
fn memtablerep_selects_strata_s_memtable_and_refuses_the_hash_ones() {
    let build = |rep: &str| {
        let c = Config::from_args(&[&format!("--memtablerep={rep}")]).expect("flags");
        strata_bench::engine::strata::build_options(&c).map(|o| o.vector_memtable)
    };
    assert!(!build("skip_list").unwrap());
    assert!(build("vector").unwrap());
    for hash in ["prefix_hash", "hash_linkedlist"] {
        let e = build(hash).unwrap_err().to_string();
        assert!(e.contains(&format!("--memtablerep={hash}")) && e.contains("vector"), "{e}");
    }
}

/// Every flag of db_bench is known: a workload flag strata-bench does not implement is refused
/// with the others of its kind, never ignored; a flag that only matters with another (range
/// deletion widths without range deletions) is taken as db_bench takes it; RocksDB's knobs
/// are noted; the options Strata has are applied without a note.
#[test]
fn db_bench_flags_are_refused_noted_or_applied() {
    let e = err(&["--trace_file=/tmp/t", "--fault_injection_read_after_reads=9", "--num=10"]);
    assert!(
        e.contains(
            "does not implement --fault_injection_read_after_reads=9 --trace_file=/tmp/t yet"
        ),
        "{e}"
    );
    let c = Config::from_args(&["--range_tombstone_width=10", "--expand_range_tombstones"])
        .expect("flags that need --writes_per_range_tombstone");
    assert!(c.notes.is_empty(), "{:?}", c.notes);
    let c = Config::from_args(&["--optimize_filters_for_hits", "--table_cache_numshardbits=6"])
        .expect("hints");
    assert_eq!(c.notes.len(), 2, "{:?}", c.notes);
    let c = Config::from_args(&[
        "--readahead_size=65536",
        "--total_order_seek",
        "--prefix_same_as_start",
        "--max_total_wal_size=1048576",
        "--wal_ttl_seconds=60",
        "--wal_size_limit_MB=16",
        "--checksum_type=1",
        "--avoid_flush_during_recovery",
    ])
    .expect("Strata's options");
    assert!(c.notes.is_empty(), "{:?}", c.notes);
    // An option Strata lacks is refused by name, as every engine flag is.
    let e = err(&["--use_plain_table", "--user_timestamp_size=8"]);
    assert!(e.contains("--use_plain_table=true --user_timestamp_size=8"), "{e}");
    assert!(err(&["--readahead_size=-1"]).contains("--readahead_size=-1"));
}

/// Strata's table checksums are CRC32C and XXH3: db_bench's other types are refused at open,
/// and the two it has give a DB that opens and reads.
#[test]
fn checksum_types_strata_has_and_lacks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = format!("--db={}", dir.path().join("db").display());
    let e = match Config::from_args(&[db.as_str(), "--checksum_type=3"]) {
        Ok(c) => c.engine.open(&c).map(|_| ()).expect_err("xxhash64 refused"),
        Err(e) => e,
    };
    assert!(format!("{e:#}").contains("--checksum_type=3"), "{e:#}");
    for t in ["--checksum_type=1", "--checksum_type=4"] {
        let c = Config::from_args(&[db.as_str(), t]).expect("config");
        c.engine.open(&c).unwrap_or_else(|e| panic!("{t}: {e:#}"));
    }
}
