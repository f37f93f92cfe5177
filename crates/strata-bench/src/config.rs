//! Stage 2 of the command line: raw [`Flags`] -> a validated [`Config`].
//!
//! Every rejection names the flag and why; engine-class flags with non-default values that the
//! chosen engine cannot honour, and benchmarks it cannot run, are rejected here, before anything
//! runs. What each engine honours and runs is data in [`crate::engine_kind`]; this stage needs
//! nothing of the engines themselves.

use std::collections::BTreeSet;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use crate::catalog;
use crate::engine_kind::EngineKind;
use crate::flags::{self, Class, Flags, ParsedFlags};
use crate::keys::KeyFormat;
use crate::values::ValueSize;

/// `--compression_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Snappy,
    Zlib,
    Bzip2,
    Lz4,
    Lz4hc,
    Xpress,
    Zstd,
    /// Kyoto Cabinet only (LevelDB's benchmark page compressed TreeDB with LZO).
    Lzo,
    /// Kyoto Cabinet only.
    Lzma,
}

impl Compression {
    pub fn parse(s: &str) -> Result<Self> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "none" | "nocompression" => Compression::None,
            "snappy" => Compression::Snappy,
            "zlib" => Compression::Zlib,
            "bzip2" => Compression::Bzip2,
            "lz4" => Compression::Lz4,
            "lz4hc" => Compression::Lz4hc,
            "xpress" => Compression::Xpress,
            "zstd" => Compression::Zstd,
            "lzo" => Compression::Lzo,
            "lzma" => Compression::Lzma,
            _ => bail!(
                "--compression_type={s}: unknown (none, snappy, zlib, bzip2, lz4, lz4hc, xpress, \
                 zstd, lzo, lzma)"
            ),
        })
    }

    /// RocksDB's `CompressionTypeToString`, as printed in the header.
    pub fn header_name(self) -> &'static str {
        match self {
            Compression::None => "NoCompression",
            Compression::Snappy => "Snappy",
            Compression::Zlib => "Zlib",
            Compression::Bzip2 => "BZip2",
            Compression::Lz4 => "LZ4",
            Compression::Lz4hc => "LZ4HC",
            Compression::Xpress => "Xpress",
            Compression::Zstd => "ZSTD",
            Compression::Lzo => "LZO",
            Compression::Lzma => "LZMA",
        }
    }
}

/// One entry of `--benchmarks`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BenchSpec {
    /// The name without the repeat suffix.
    pub name: String,
    pub repeats: usize,
    pub warmups: usize,
}

/// Parses `name[X3-W1]` (either part optional).
pub fn parse_bench_spec(s: &str) -> Result<BenchSpec> {
    let s = s.trim();
    let Some(open) = s.find('[') else {
        return Ok(BenchSpec { name: s.to_string(), repeats: 1, warmups: 0 });
    };
    let Some(inner) = s[open + 1..].strip_suffix(']') else {
        bail!("benchmark '{s}': a repeat suffix looks like name[X3-W1]");
    };
    let mut spec = BenchSpec { name: s[..open].to_string(), repeats: 1, warmups: 0 };
    for part in inner.split('-').filter(|p| !p.is_empty()) {
        let (kind, n) = part.split_at(1);
        let n: usize =
            n.parse().map_err(|_| anyhow::anyhow!("benchmark '{s}': bad repeat count '{part}'"))?;
        match kind {
            "X" | "x" => spec.repeats = n.max(1),
            "W" | "w" => spec.warmups = n,
            _ => bail!("benchmark '{s}': '{part}' is neither X<n> nor W<n>"),
        }
    }
    Ok(spec)
}

/// Merge operator names db_bench accepts.
const MERGE_OPERATORS: &[&str] = &[
    "put",
    "put_v1",
    "PutOperator",
    "uint64add",
    "UInt64AddOperator",
    "max",
    "MaxOperator",
    "stringappend",
    "StringAppendOperator",
    "stringappendtest",
    "StringAppendTESTOperator",
    "bytesxor",
    "BytesXOR",
    "sortlist",
    "MyTestSortList",
];

/// The validated configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The raw flags (already validated); benchmarks read workload flags from here.
    pub flags: Flags,
    /// Flags given on the command line.
    pub set: BTreeSet<&'static str>,
    pub engine: EngineKind,
    pub benchmarks: Vec<BenchSpec>,
    pub db: PathBuf,
    /// Seed base (the time when `--seed=0`).
    pub seed_base: u64,
    pub num: u64,
    pub key: KeyFormat,
    pub value_size: ValueSize,
    pub compression: Compression,
    /// `--stats_interval`, after `--stats_interval_seconds` forced it to 1000.
    pub stats_interval: u64,
    pub use_existing_db: bool,
    /// Notes for the user (RocksDB-only flags that have no effect on this engine), printed on
    /// stderr before the run.
    pub notes: Vec<String>,
    /// The write counter of the latest `timeseries` (`crate::runner::timeseries`), set by
    /// the runner when one starts; with `--expire_style=compaction_filter` the engines open
    /// the DB with a compaction filter dropping the entries it says are expired.
    pub time_series_clock: Option<crate::expiry::Clock>,
}

fn default_db_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("TEST_TMPDIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("dbbench");
    }
    std::env::temp_dir().join(format!("strata-bench-{}", effective_uid())).join("dbbench")
}

fn effective_uid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn now_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_micros() as u64)
}

impl Config {
    /// Validates `parsed`.
    pub fn from_parsed(parsed: ParsedFlags) -> Result<Config> {
        let ParsedFlags { mut flags, set, .. } = parsed;
        let f = &mut flags;
        let engine = EngineKind::parse(&f.engine)?;
        if !engine.compiled_in() {
            bail!(
                "--engine={}: this strata-bench was built without it; rebuild with \
                 `cargo build --release -p strata-bench --features {}`{}",
                f.engine,
                engine.feature().unwrap_or(engine.name()),
                match engine {
                    EngineKind::LevelDb | EngineKind::Kyoto => {
                        " (it links the system's library: `bash bench/setup-peers.sh` installs it)"
                    }
                    _ => "",
                }
            );
        }
        let positive = |name: &str, v: i64| -> Result<u64> {
            if v < 1 {
                bail!("--{name}={v}: must be at least 1");
            }
            Ok(v as u64)
        };
        let num = positive("num", f.num)?;
        positive("threads", f.threads)?;
        positive("batch_size", f.batch_size)?;
        positive("key_size", f.key_size)?;
        positive("ops_between_duration_checks", f.ops_between_duration_checks)?;
        for (name, v) in [
            ("reads", f.reads),
            ("writes", f.writes),
            ("deletes", f.deletes),
            ("merge_keys", f.merge_keys),
        ] {
            if v < -1 {
                bail!("--{name}={v}: must be -1 (= --num) or a count");
            }
        }
        for (name, v) in [
            ("duration", f.duration),
            ("seek_nexts", f.seek_nexts),
            ("max_scan_distance", f.max_scan_distance),
            ("multiscan_size", f.multiscan_size),
            ("multiscan_stride", f.multiscan_stride),
            ("multiread_stride", f.multiread_stride),
            ("bgwriter_num", f.bgwriter_num),
            ("keys_per_prefix", f.keys_per_prefix),
            ("prefix_size", f.prefix_size),
            ("stats_interval", f.stats_interval),
            ("stats_interval_seconds", f.stats_interval_seconds),
            ("report_interval_seconds", f.report_interval_seconds),
            ("value_size", f.value_size),
            ("readahead_size", f.readahead_size),
            ("disposable_entries_value_size", f.disposable_entries_value_size),
            ("writes_per_range_tombstone", f.writes_per_range_tombstone),
            ("seek_nexts_to_delete", f.seek_nexts_to_delete),
            ("writes_before_delete_range", f.writes_before_delete_range),
            ("range_tombstone_width", f.range_tombstone_width),
            ("max_num_range_tombstones", f.max_num_range_tombstones),
            ("persistent_entries_value_size", f.persistent_entries_value_size),
        ] {
            if v < 0 {
                bail!("--{name}={v}: must not be negative");
            }
        }
        if f.num_multi_db > 1 {
            bail!(
                "--num_multi_db={}: strata-bench runs every benchmark on one DB (--db); \
                 db_bench's several DBs at <db>/0.. are not supported",
                f.num_multi_db
            );
        }
        for (name, v) in [
            ("readwritepercent", f.readwritepercent),
            ("mergereadpercent", f.mergereadpercent),
            ("same_value_percentage", f.same_value_percentage),
            ("deletepercent", f.deletepercent),
        ] {
            if !(0..=100).contains(&v) {
                bail!("--{name}={v}: must be a percentage (0..100)");
            }
        }
        if !(0.0..=1.0).contains(&f.compression_ratio) {
            bail!("--compression_ratio={}: must be between 0 and 1", f.compression_ratio);
        }
        if f.fio_baseline_iops < 0.0 {
            bail!(
                "--fio_baseline_iops={}: must not be negative (the read IOPS of the fio \
                 baseline; 0: none)",
                f.fio_baseline_iops
            );
        }
        if f.read_random_exp_range < 0.0 {
            bail!("--read_random_exp_range={}: must not be negative", f.read_random_exp_range);
        }
        let value_size = match f.value_size_distribution_type.as_str() {
            "fixed" => ValueSize::Fixed(f.value_size as usize),
            kind @ ("uniform" | "normal") => {
                if f.value_size_min < 0 || f.value_size_min > f.value_size_max {
                    bail!(
                        "--value_size_min={} --value_size_max={}: need 0 <= min <= max",
                        f.value_size_min,
                        f.value_size_max
                    );
                }
                let (min, max) = (f.value_size_min as usize, f.value_size_max as usize);
                if kind == "uniform" {
                    ValueSize::Uniform { min, max }
                } else {
                    ValueSize::Normal { min, max }
                }
            }
            other => bail!("--value_size_distribution_type={other}: use fixed, uniform or normal"),
        };
        if f.prefix_size > f.key_size {
            bail!("--prefix_size={} must not exceed --key_size={}", f.prefix_size, f.key_size);
        }
        if f.seek_missing_prefix && f.prefix_size <= 8 {
            bail!("--seek_missing_prefix needs --prefix_size > 8");
        }
        if f.keys_per_prefix > 0 && f.prefix_size == 0 {
            bail!("--keys_per_prefix needs --prefix_size > 0");
        }
        if f.transaction_db && f.optimistic_transaction_db {
            bail!("--transaction_db and --optimistic_transaction_db: choose one");
        }
        if !(1..=9999).contains(&f.transaction_sets) {
            bail!("--transaction_sets={}: must be between 1 and 9999", f.transaction_sets);
        }
        if f.readonly {
            f.use_existing_db = true;
        }
        if f.use_existing_keys && !f.use_existing_db {
            bail!("--use_existing_keys needs --use_existing_db");
        }
        if f.use_existing_keys && f.bgwriter_num > f.num {
            bail!(
                "--bgwriter_num={} must not exceed --num={} with --use_existing_keys",
                f.bgwriter_num,
                f.num
            );
        }
        if f.writes_per_range_tombstone > 0 {
            if !f.expand_range_tombstones && !engine.has_range_deletion() {
                bail!(
                    "--writes_per_range_tombstone={}: engine {} has no range deletion (use \
                     --expand_range_tombstones for point deletes)",
                    f.writes_per_range_tombstone,
                    engine.name()
                );
            }
            if f.disposable_entries_batch_size > 0 {
                bail!(
                    "--writes_per_range_tombstone and --disposable_entries_batch_size: db_bench \
                     takes one or the other"
                );
            }
        }
        let compression = Compression::parse(&f.compression_type)?;
        if !f.merge_operator.is_empty() && !MERGE_OPERATORS.contains(&f.merge_operator.as_str()) {
            bail!(
                "--merge_operator={}: unknown (put, put_v1, uint64add, max, stringappend, \
                 stringappendtest, bytesxor, sortlist)",
                f.merge_operator
            );
        }
        let stats_interval =
            if f.stats_interval_seconds > 0 { 1000 } else { f.stats_interval as u64 };
        let mut benchmarks = Vec::new();
        for b in f.benchmarks.split(',').map(str::trim).filter(|b| !b.is_empty()) {
            let spec = parse_bench_spec(b)?;
            if catalog::find(&spec.name).is_none() {
                if catalog::NOT_IMPLEMENTED.contains(&spec.name.as_str()) {
                    bail!("benchmark '{}' is not implemented by strata-bench", spec.name);
                }
                // db_bench's exact message for names it does not know.
                bail!("unknown benchmark '{}'", spec.name);
            }
            if let Err(why) = engine.check_benchmark(&spec.name) {
                bail!("benchmark '{}' cannot run on engine {}: {why}", spec.name, engine.name());
            }
            if spec.name == "randomwithverify" && f.readwritepercent + f.deletepercent > 100 {
                bail!(
                    "randomwithverify: --readwritepercent={} and --deletepercent={} leave a \
                     negative share of puts (their sum must not exceed 100)",
                    f.readwritepercent,
                    f.deletepercent
                );
            }
            if matches!(spec.name.as_str(), "randomwithverify" | "randomreplacekeys")
                && f.numdistinct < 1
            {
                bail!("--numdistinct={}: {} needs at least 1 key", f.numdistinct, spec.name);
            }
            match spec.name.as_str() {
                "backup" | "restore" if f.backup_dir.is_empty() => {
                    bail!("{} needs --backup_dir", spec.name)
                }
                "restore" if f.restore_dir.is_empty() => bail!("restore needs --restore_dir"),
                "restore" if f.restore_dir == f.db => {
                    bail!("restore: --restore_dir is the run's own --db={}; name another", f.db)
                }
                _ => {}
            }
            for (flag, v, bench) in [
                ("backup_rate_limit", f.backup_rate_limit, "backup"),
                ("restore_rate_limit", f.restore_rate_limit, "restore"),
            ] {
                if v > 0 && spec.name == bench {
                    bail!(
                        "--{flag}={v}: the backup engines strata-bench drives take no rate \
                         limiter here; run without it"
                    );
                }
            }
            if let Some(b) = catalog::find(&spec.name) {
                check_unique_fill(f, b)?;
            }
            check_benchmark_flags(f, engine, &spec.name)?;
            if spec.name == "mixgraph" {
                crate::mixgraph::Model::new(f, num as i64).context("mixgraph")?;
            }
            benchmarks.push(spec);
        }
        let db = if f.db.is_empty() { default_db_dir() } else { PathBuf::from(&f.db) };
        let seed_base = if f.seed == 0 { now_micros() } else { f.seed };
        let key = KeyFormat {
            key_size: f.key_size as usize,
            prefix_size: f.prefix_size as usize,
            keys_per_prefix: f.keys_per_prefix as u64,
            existing: None,
        };
        let notes = check_engine_flags(&flags, &set, engine)?;
        let use_existing_db = flags.use_existing_db;
        Ok(Config {
            flags,
            set,
            engine,
            benchmarks,
            db,
            seed_base,
            num,
            key,
            value_size,
            compression,
            stats_interval,
            use_existing_db,
            notes,
            time_series_clock: None,
        })
    }

    /// Parses and validates a command line (without the program name).
    pub fn from_args<S: AsRef<str>>(args: &[S]) -> Result<Config> {
        let parsed = flags::parse(args)?;
        Config::from_parsed(parsed)
    }
}

/// The flags some benchmarks need or cannot take, checked for benchmark `name`:
/// readtorowcache's existing keys and row cache (db_bench's condition), timeseries' expiry
/// style and key layout, and the ingestion options neither engine's ingestion reaches here.
fn check_benchmark_flags(f: &Flags, engine: EngineKind, name: &str) -> Result<()> {
    match name {
        "readtorowcache" if !f.use_existing_keys || f.row_cache_size <= 0 => bail!(
            "readtorowcache: set --use_existing_keys and a --row_cache_size (db_bench's \
             condition)"
        ),
        "timeseries" => {
            if !matches!(f.expire_style.as_str(), "none" | "compaction_filter" | "delete") {
                bail!("--expire_style={}: none, compaction_filter or delete", f.expire_style);
            }
            if f.expire_style == "compaction_filter" && !engine.has_compaction_filter() {
                bail!(
                    "--expire_style=compaction_filter: engine {} has no compaction filter",
                    engine.name()
                );
            }
            if f.key_id_range < 1 || f.key_size < 8 || f.num_deletion_threads < 0 {
                bail!(
                    "timeseries: --key_id_range={} must be at least 1, --key_size={} at least 8 \
                     (an id, then the timestamp) and --num_deletion_threads={} not negative",
                    f.key_id_range,
                    f.key_size,
                    f.num_deletion_threads
                );
            }
        }
        "ingestexternalfile" => {
            let unreachable: Vec<String> = [
                "ingest_external_file_file_opening_threads",
                "ingest_external_file_fill_cache",
                "ingest_external_file_prefetch_lmax_index_and_filter_blocks",
                "ingest_external_file_use_file_info",
            ]
            .iter()
            .filter(|n| !f.is_default(n))
            .map(|n| format!("--{n}={}", f.value_text(n).unwrap_or_default()))
            .collect();
            if !unreachable.is_empty() {
                bail!(
                    "ingestexternalfile: {} not applied: the engines' ingestion options as \
                     reached here have none of them (run with their defaults)",
                    unreachable.join(" ")
                );
            }
        }
        _ => {}
    }
    Ok(())
}

/// db_bench's checks of filluniquerandom's variants (`runner/fill_unique.rs`): disposable
/// keys only in the unique-random fills and not with overwrites; an overwrite window of at
/// least one key.
fn check_unique_fill(f: &Flags, b: &catalog::Benchmark) -> Result<()> {
    use crate::keys::WriteMode;
    let catalog::Workload::Fill(catalog::Fill::Put(mode)) = b.workload else { return Ok(()) };
    if f.disposable_entries_batch_size > 0
        && (mode != WriteMode::UniqueRandom || f.overwrite_probability > 0.0)
    {
        bail!(
            "{}: --disposable_entries_batch_size={} works only in filluniquerandom and \
             fillanddeleteuniquerandom, and not with --overwrite_probability",
            b.name,
            f.disposable_entries_batch_size
        );
    }
    if mode == WriteMode::UniqueRandom
        && f.overwrite_probability > 0.0
        && f.overwrite_window_size == 0
    {
        bail!("--overwrite_window_size=0: with --overwrite_probability it must be at least 1");
    }
    if f.overwrite_probability < 0.0 {
        bail!("--overwrite_probability={}: must not be negative", f.overwrite_probability);
    }
    Ok(())
}

/// The feature a run asks for with a switch the engine does not honour (universal or FIFO
/// compaction, BlobDB, transactions), named once rather than as a list of its tuning flags.
fn missing_feature(flags: &Flags, honoured: &[&str]) -> Option<String> {
    let lacks = |name: &str| !flags.is_default(name) && !honoured.contains(&name);
    if lacks("compaction_style") {
        let style = match flags.compaction_style {
            1 => "universal compaction",
            2 => "FIFO compaction",
            3 => "compaction style 'none'",
            4 => "tiered compaction",
            _ => "such compaction style",
        };
        return Some(format!(
            "{style} (--compaction_style={}): only leveled compaction (--compaction_style=0; \
             benchmark.sh: COMPACTION_STYLE=leveled) is implemented",
            flags.compaction_style
        ));
    }
    if lacks("enable_blob_files") {
        return Some("key-value separation (BlobDB, --enable_blob_files=true)".into());
    }
    if lacks("transaction_db") {
        return Some("transactions (--transaction_db=true)".into());
    }
    if lacks("optimistic_transaction_db") {
        return Some("optimistic transactions (--optimistic_transaction_db=true)".into());
    }
    None
}

/// The engine flags applied with an OPTIONS file (`--options_file`): the option flags
/// db_bench's set-up puts over the file (`engine/strata.rs`, `options_from_file`;
/// `engine/rocks.rs`, `from_options_file`), then the flags that choose how the run opens and
/// uses the DB rather than its options. The other option flags are not applied then.
const OVER_OPTIONS_FILE: &[&str] = &[
    "options_file",
    "cache_size",
    "cache_type",
    "cache_numshardbits",
    "cache_high_pri_pool_ratio",
    "block_cache_admission",
    "bloom_bits",
    "use_ribbon_filter",
    "wal_dir",
    "rate_limiter_bytes_per_sec",
    "rate_limiter_auto_tuned",
    "merge_operator",
    // Not options of the DB:
    "num_column_families",
    "readonly",
    "transaction_db",
    "optimistic_transaction_db",
    "transaction_lock_timeout",
    "use_tailing_iterator",
    "multiread_batched",
    "sync",
    "disable_wal",
    "verify_checksum",
    "num_high_pri_threads",
    "num_low_pri_threads",
    "num_bottom_pri_threads",
];

/// Rejects non-default engine-class flags the engine cannot honour; returns notes for hint
/// flags it does not apply, one per flag, and with `--options_file`, for the option flags
/// given that the file's options replace.
fn check_engine_flags(
    flags: &Flags,
    set: &BTreeSet<&'static str>,
    engine: EngineKind,
) -> Result<Vec<String>> {
    let honoured = engine.honoured_flags();
    if let Some(feature) = missing_feature(flags, honoured) {
        bail!("engine {} has no {feature}", engine.name());
    }
    let mut errors = Vec::new();
    let mut unsupported = Vec::new();
    let mut notes = Vec::new();
    let from_file = !flags.options_file.is_empty();
    for name in set {
        let Some(info) = flags::info(name) else { continue };
        if info.class == Class::Tool || flags.is_default(name) {
            continue;
        }
        let value = flags.value_text(name).unwrap_or_default();
        if info.class == Class::Unsupported {
            unsupported.push(format!("--{name}={value}"));
            continue;
        }
        if honoured.contains(name) {
            if from_file && !OVER_OPTIONS_FILE.contains(name) {
                notes.push(format!(
                    "--{name}={value} is not applied: --options_file gives the options (as in db_bench)"
                ));
            }
            continue;
        }
        match info.class {
            Class::Engine => errors.push(format!("--{name}={value}")),
            Class::Hint if engine == EngineKind::RocksDb => notes.push(format!(
                "--{name}={value}: the rocksdb crate does not reach this RocksDB option; it has \
                 no effect"
            )),
            Class::Hint => notes.push(format!(
                "--{name}={value} is a RocksDB tuning knob that engine {} does not have; it has no effect",
                engine.name()
            )),
            Class::Tool | Class::Unsupported => {}
        }
    }
    if !unsupported.is_empty() {
        bail!(
            "strata-bench does not implement {} yet (db_bench workload flag{}); run without {}",
            unsupported.join(" "),
            if unsupported.len() == 1 { "" } else { "s" },
            if unsupported.len() == 1 { "it" } else { "them" },
        );
    }
    if !errors.is_empty() {
        bail!(
            "engine {} cannot honour {} (not supported by this engine yet); remove {} or use an \
             engine that supports {}",
            engine.name(),
            errors.join(" "),
            if errors.len() == 1 { "it" } else { "them" },
            if errors.len() == 1 { "it" } else { "them" },
        );
    }
    Ok(notes)
}
