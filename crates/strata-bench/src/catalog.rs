//! The benchmarks strata-bench implements, one row each ([`BENCHMARKS`]): the name, what runs
//! (its [`Workload`], which also names its [`Family`]), what it does, whether it writes,
//! whether it starts from an empty DB, whether it needs `--merge_operator`, and how it adjusts
//! the per-benchmark parameters ([`Tweak`]). Flag validation ([`crate::config`]), the planner
//! ([`crate::runner`]), the tests and `docs/db_bench.md` §6 all read this table.

use crate::keys::WriteMode;

/// The workload families; the runner keeps one file per family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    /// Puts and deletes (`runner/fill.rs`).
    Fill,
    /// Point reads and full scans (`runner/read.rs`).
    Read,
    /// Seeks followed by short scans (`runner/seek.rs`).
    Seek,
    /// Reads mixed with writes (`runner/mixed.rs`).
    Mixed,
    /// Read-modify-write and merges (`runner/merge.rs`).
    Merge,
    /// CPU micro-benchmarks that do not touch the DB (`runner/micro.rs`).
    Micro,
    /// DB maintenance and introspection: compaction, flush, stats, open (`runner/admin.rs`).
    Admin,
    /// Transactions (`runner/transaction.rs`).
    Transaction,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::Fill => "fill",
            Family::Read => "read",
            Family::Seek => "seek",
            Family::Mixed => "mixed",
            Family::Merge => "merge",
            Family::Micro => "micro",
            Family::Admin => "admin",
            Family::Transaction => "transaction",
        }
    }
}

/// What the threads of a benchmark do (the family is the outer variant).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    Fill(Fill),
    Read(Read),
    Seek(Seek),
    Mixed(Mixed),
    Merge(Merge),
    Micro(Micro),
    Admin(Admin),
    /// db_bench's `randomtransaction`: read-modify-write of one key per set in a transaction.
    RandomTransaction,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// Puts, keys in the given order.
    Put(WriteMode),
    /// Deletes, keys in order (`seq`) or at random.
    Delete { seq: bool },
    /// db_bench's `randomreplacekeys`: `--numdistinct` keys put, a snapshot held, then each
    /// operation (single-)deletes one of them and puts its successor in its slot.
    ReplaceKeys,
    /// db_bench's `ingestexternalfile`: batches of table files, each of keys 0..`--num`,
    /// written and ingested (one operation per batch).
    Ingest,
    /// db_bench's `fillseqdeterministic` and `filluniquerandomdeterministic`: rounds of puts
    /// (the first in this order) flushed into sorted runs, then compacted into one level each
    /// (`runner/deterministic.rs`).
    Deterministic(WriteMode),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// One iterator over the whole DB, forward or backward.
    Seq { reverse: bool },
    /// Point gets of random keys (`hot`: from the first 1% of the key space).
    Random { hot: bool },
    /// Point gets in steps of 100, keys masked below a power of two (`readrandomfast`).
    RandomFast,
    /// Gets of every key in order, 0 to `--num` - 1 (`readtorowcache`: warms a row cache).
    EveryKey,
    /// MultiGet of `--batch_size` keys.
    Multi,
    /// An iterator created and dropped, nothing read through it.
    NewIterator,
    /// `GetApproximateSizes` of `--batch_size` random key ranges.
    ApproximateSizes,
    /// `readrandom` through `GetMergeOperands` (`readrandomoperands`).
    Operands,
    /// `readrandom` through `GetEntity` (`readrandomentity`).
    Entity,
    /// `multireadrandom` through `MultiGetEntity` (`multireadentity`).
    MultiEntity,
    /// `GetApproximateMemTableStats` of ranges of `--batch_size` keys
    /// (`approximatememtablestats`).
    MemtableStats,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seek {
    /// Seeks to random keys, each followed by `--seek_nexts` steps.
    Random,
    /// `--num` sequential puts, then one iterator seeks every key in order (db_bench's
    /// `WriteSeqSeekSeq`); only the seeks are counted.
    FillThenSeekSeq,
    /// A multi-range scan of `--multiscan_size` ranges of `--seek_nexts` keys, each
    /// `--multiscan_stride` keys after the one before (db_bench's `multiscan`).
    MultiScan,
    /// A multi-range scan of 1 to 64 random disjoint ranges of up to 1 MiB of entries each,
    /// through the multi-scan API or (`--use_multiscan=false`) one iterator
    /// (`multiscanrandom`).
    MultiScanRandom,
}

/// What the readers of a *while* benchmark do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reader {
    /// `readrandom`.
    Get,
    /// `seekrandom`.
    Seek,
    /// `multireadrandom`.
    MultiGet,
    /// `newiterator`.
    NewIterator,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mixed {
    /// Thread 0 writes (or merges) in the background, excluded from the result; the others
    /// are `reader`s.
    WhileWriting { merge: bool, reader: Reader },
    /// Thread 0 walks one iterator over the DB forward, from the first key again at the end,
    /// its steps counted in the result as db_bench counts them; the others get random keys.
    WhileScanning,
    /// Each thread reads and writes random keys in `--readwritepercent` proportion.
    ReadRandomWriteRandom,
    /// Gets, puts and seeks drawn from Facebook's fitted distributions (`crate::mixgraph`).
    MixGraph,
    /// db_bench's `randomwithverify`: gets, puts and deletes of key triples, each triple
    /// written in one batch and read at one snapshot, its three values checked equal.
    RandomWithVerify,
    /// db_bench's `timeseries`: thread 0 writes time series entries (its own result line),
    /// the others read or delete expired ones by id until it is done (`runner/timeseries.rs`).
    TimeSeries,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Merge {
    /// Get then put of the same random key.
    Update,
    /// Get, then put the value read XORed with a new value of its length (db_bench's
    /// `xorupdaterandom`, RocksDB's `BytesXOROperator` done by the client).
    XorUpdate,
    /// Get, then put the value read with `,` and a new value appended (db_bench's
    /// `appendrandom`: what a `stringappend` merge does, done by the client).
    Append,
    /// Merge operands to random keys.
    MergeRandom,
    /// Merges and gets of random keys in `--mergereadpercent` proportion.
    ReadRandomMergeRandom,
    /// db_bench's `getmergeoperands`: 999 merges of sorted lists of integers into one key,
    /// then one integer looked for in its merged value and in its operands, each timed.
    GetMergeOperands,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HashKind {
    Xxh32,
    Xxh64,
    Xxh3,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Micro {
    Crc32c,
    Hash(HashKind),
    Compress,
    /// Compression into a budget too small for its output (db_bench's `compressreject`).
    CompressReject,
    Uncompress,
    AcquireLoad,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admin {
    /// `compact_range` over the whole key space on every thread (with a result line).
    Compact,
    /// A new backup into `--backup_dir`, its earlier backups deleted first (with a result
    /// line).
    Backup,
    /// The newest backup of `--backup_dir` restored into `--restore_dir` (with a result
    /// line).
    Restore,
    /// Close and reopen the DB `--num / 10000` times (with a result line).
    Open,
    /// Every block of the live files read and its checksum checked, on every thread (with a
    /// result line).
    VerifyChecksum,
    /// Every live table with a recorded whole-file checksum read whole and compared, on
    /// every thread (with a result line).
    VerifyFileChecksums,
    /// The rest run inline on the main thread and print their own text, no result line.
    CompactAll,
    /// Compact the files of the first non-empty level at or below `from` (0 or 1) into the
    /// next non-empty level, with the engine's CompactFiles.
    CompactLevel {
        from: usize,
    },
    Flush,
    WaitForCompaction,
    Stats,
    LevelStats,
    /// db_bench's `stats_history`: the engine's statistics history, record by record.
    StatsHistory,
    SsTables,
    MemStats,
    ResetStats,
    /// db_bench's `verify`: the DB against the one in `--truth_db`, opened read-only.
    Verify,
}

impl Workload {
    pub fn family(self) -> Family {
        match self {
            Workload::Fill(_) => Family::Fill,
            Workload::Read(_) => Family::Read,
            Workload::Seek(_) => Family::Seek,
            Workload::Mixed(_) => Family::Mixed,
            Workload::Merge(_) => Family::Merge,
            Workload::Micro(_) => Family::Micro,
            Workload::Admin(_) => Family::Admin,
            Workload::RandomTransaction => Family::Transaction,
        }
    }

    /// Runs inline on the main thread and prints no result line.
    pub fn is_inline(self) -> bool {
        matches!(
            self,
            Workload::Admin(a)
                if !matches!(
                    a,
                    Admin::Compact
                        | Admin::Open
                        | Admin::Backup
                        | Admin::Restore
                        | Admin::VerifyChecksum
                        | Admin::VerifyFileChecksums
                )
        )
    }

    /// One more thread than `--threads`: thread 0 is a background writer or scanner.
    pub fn extra_background_thread(self) -> bool {
        matches!(self, Workload::Mixed(Mixed::WhileWriting { .. } | Mixed::WhileScanning))
    }
}

/// A change to the per-benchmark parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tweak {
    /// Writers' key range is `--num / 1000`; the op count stays `--writes` (`(N ops)` message).
    KeyRangeDiv1000,
    /// Every write is synced.
    Sync,
    /// 100,000-byte values.
    Values100K,
    /// 1000 entries per write batch.
    Batch1000,
    /// One thread; says so on stderr when `--threads` asked for more.
    OneThreadWithNote,
    /// One thread that reads `--num` entries.
    OneThreadReadAll,
    /// `--reads / 1000` reads.
    ReadsDiv1000,
    /// Keys one byte longer than stored ones, so never found.
    LongerKeys,
    /// `--num` writes whatever `--writes` says.
    WritesNum,
}

/// One row of the table.
#[derive(Clone, Copy, Debug)]
pub struct Benchmark {
    pub name: &'static str,
    pub workload: Workload,
    pub about: &'static str,
    /// Modifies the DB.
    pub writes: bool,
    /// Starts from an empty DB (skipped with `--use_existing_db`).
    pub fresh_db: bool,
    /// Needs `--merge_operator`.
    pub merge_operator: bool,
    pub tweaks: &'static [Tweak],
}

impl Benchmark {
    pub fn family(&self) -> Family {
        self.workload.family()
    }
}

const fn row(
    name: &'static str,
    workload: Workload,
    writes: bool,
    about: &'static str,
) -> Benchmark {
    Benchmark { name, workload, about, writes, fresh_db: false, merge_operator: false, tweaks: &[] }
}

const fn fresh(b: Benchmark) -> Benchmark {
    Benchmark { fresh_db: true, ..b }
}

const fn merging(b: Benchmark) -> Benchmark {
    Benchmark { merge_operator: true, ..b }
}

const fn tweaked(b: Benchmark, tweaks: &'static [Tweak]) -> Benchmark {
    Benchmark { tweaks, ..b }
}

/// A *while* benchmark: `--threads` `reader`s and one background writer that puts (`merge`:
/// merges, which needs `--merge_operator`).
const fn while_writing(
    name: &'static str,
    merge: bool,
    reader: Reader,
    about: &'static str,
) -> Benchmark {
    let b = row(name, Workload::Mixed(Mixed::WhileWriting { merge, reader }), true, about);
    if merge {
        merging(b)
    } else {
        b
    }
}

use Workload as W;

const PUT_SEQ: Workload = W::Fill(Fill::Put(WriteMode::Sequential));
const PUT_RANDOM: Workload = W::Fill(Fill::Put(WriteMode::Random));
const READ_RANDOM: Workload = W::Read(Read::Random { hot: false });
const WRITE: bool = true;
const READ: bool = false;

/// Every benchmark strata-bench implements.
pub const BENCHMARKS: &[Benchmark] = &[
    fresh(row("fillseq", PUT_SEQ, WRITE, "puts keys 0, 1, 2, ... into an empty DB")),
    fresh(row("fillrandom", PUT_RANDOM, WRITE, "puts random keys into an empty DB")),
    fresh(tweaked(
        row(
            "filluniquerandom",
            W::Fill(Fill::Put(WriteMode::UniqueRandom)),
            WRITE,
            "puts every key once, in a shuffled order, into an empty DB (one thread); \
             --overwrite_probability puts recent keys again instead",
        ),
        &[Tweak::OneThreadWithNote],
    )),
    fresh(tweaked(
        row(
            "fillanddeleteuniquerandom",
            W::Fill(Fill::Put(WriteMode::UniqueRandom)),
            WRITE,
            "filluniquerandom; with --disposable_entries_batch_size, sets of keys are put, then \
             after --disposable_entries_delete_delay deleted behind --persistent_entries_batch_size \
             kept keys (one thread)",
        ),
        &[Tweak::OneThreadWithNote],
    )),
    fresh(tweaked(
        row(
            "fillseqdeterministic",
            W::Fill(Fill::Deterministic(WriteMode::Sequential)),
            WRITE,
            "an LSM of known shape: rounds of puts (keys 0, 1, 2, ... first, then unique random, \
             each --max_bytes_for_level_multiplier times fewer) flushed into sorted runs, each \
             compacted into its level (needs --disable_auto_compactions; one thread)",
        ),
        &[Tweak::OneThreadWithNote],
    )),
    fresh(tweaked(
        row(
            "filluniquerandomdeterministic",
            W::Fill(Fill::Deterministic(WriteMode::UniqueRandom)),
            WRITE,
            "fillseqdeterministic with unique random keys in the first round too",
        ),
        &[Tweak::OneThreadWithNote],
    )),
    row("overwrite", PUT_RANDOM, WRITE, "puts random keys into the existing DB"),
    tweaked(
        row(
            "ingestexternalfile",
            W::Fill(Fill::Ingest),
            WRITE,
            "writes --ingest_external_file_batch_size table files of keys 0..--num and ingests \
             them in one call, --ingest_external_file_num_batches times (one thread)",
        ),
        &[Tweak::OneThreadWithNote],
    ),
    fresh(tweaked(
        row("fillsync", PUT_RANDOM, WRITE, "synced puts of random keys from --num/1000"),
        &[Tweak::KeyRangeDiv1000, Tweak::Sync],
    )),
    fresh(tweaked(
        row("fill100K", PUT_RANDOM, WRITE, "puts of 100,000-byte values, keys from --num/1000"),
        &[Tweak::KeyRangeDiv1000, Tweak::Values100K],
    )),
    fresh(tweaked(
        row("fillbatch", PUT_SEQ, WRITE, "sequential puts in batches of 1000"),
        &[Tweak::Batch1000],
    )),
    row("deleteseq", W::Fill(Fill::Delete { seq: true }), WRITE, "deletes keys 0, 1, 2, ..."),
    row("deleterandom", W::Fill(Fill::Delete { seq: false }), WRITE, "deletes random keys"),
    fresh(row(
        "randomreplacekeys",
        W::Fill(Fill::ReplaceKeys),
        WRITE,
        "puts --numdistinct keys, holds a snapshot, then deletes keys picked by a normal \
         distribution (--stddev) and puts the next key of each slot",
    )),
    row("readseq", W::Read(Read::Seq { reverse: false }), READ, "scans the DB forward"),
    row("readreverse", W::Read(Read::Seq { reverse: true }), READ, "scans the DB backward"),
    tweaked(
        row(
            "readtocache",
            W::Read(Read::Seq { reverse: false }),
            READ,
            "one thread scans --num entries forward (warms the cache)",
        ),
        &[Tweak::OneThreadReadAll],
    ),
    row("readrandom", READ_RANDOM, READ, "gets of random keys"),
    row(
        "readtorowcache",
        W::Read(Read::EveryKey),
        READ,
        "gets of every key in order, to fill the row cache (--use_existing_keys, \
         --row_cache_size)",
    ),
    row(
        "readrandomfast",
        W::Read(Read::RandomFast),
        READ,
        "gets of random keys masked below the power of two at or above --num (some missing), \
         counted 100 at a time",
    ),
    tweaked(
        row("readrandomsmall", READ_RANDOM, READ, "readrandom with --reads/1000 reads"),
        &[Tweak::ReadsDiv1000],
    ),
    tweaked(
        row("readmissing", READ_RANDOM, READ, "gets of keys that are never stored"),
        &[Tweak::LongerKeys],
    ),
    row(
        "readhot",
        W::Read(Read::Random { hot: true }),
        READ,
        "gets of random keys from the first 1% of the key space",
    ),
    row("multireadrandom", W::Read(Read::Multi), READ, "MultiGet of --batch_size random keys"),
    row("newiterator", W::Read(Read::NewIterator), READ, "creates and drops an iterator"),
    row(
        "readrandomoperands",
        W::Read(Read::Operands),
        READ,
        "gets of random keys' merge operands (GetMergeOperands), retried once with room for \
         all of a key's when it has more than any before",
    ),
    row(
        "readrandomentity",
        W::Read(Read::Entity),
        READ,
        "gets of random keys' wide columns (GetEntity; a plain value is one default column)",
    ),
    row(
        "multireadentity",
        W::Read(Read::MultiEntity),
        READ,
        "MultiGetEntity of --batch_size random keys",
    ),
    row(
        "approximatememtablestats",
        W::Read(Read::MemtableStats),
        READ,
        "approximate memtable entries of ranges of --batch_size random keys, their counts' \
         histogram against the expected",
    ),
    row(
        "approximatesizerandom",
        W::Read(Read::ApproximateSizes),
        READ,
        "approximate sizes of --batch_size random key ranges per call",
    ),
    row("seekrandom", W::Seek(Seek::Random), READ, "seeks to random keys, then --seek_nexts steps"),
    tweaked(
        row(
            "fillseekseq",
            W::Seek(Seek::FillThenSeekSeq),
            WRITE,
            "puts keys 0, 1, 2, ... then seeks each in order with one iterator (seeks timed)",
        ),
        &[Tweak::WritesNum],
    ),
    row(
        "multiscan",
        W::Seek(Seek::MultiScan),
        READ,
        "multi-range scans of --multiscan_size ranges of --seek_nexts keys (50 if 0), \
         --multiscan_stride keys apart, from a random key",
    ),
    row(
        "multiscanrandom",
        W::Seek(Seek::MultiScanRandom),
        READ,
        "multi-range scans of 1 to 64 random disjoint ranges of up to 1 MiB each \
         (--use_multiscan=false: seek and step per range)",
    ),
    while_writing("readwhilewriting", false, Reader::Get, "readrandom while one more thread puts"),
    while_writing("readwhilemerging", true, Reader::Get, "readrandom while one more thread merges"),
    while_writing(
        "seekrandomwhilewriting",
        false,
        Reader::Seek,
        "seekrandom while one more thread puts",
    ),
    while_writing(
        "seekrandomwhilemerging",
        true,
        Reader::Seek,
        "seekrandom while one more thread merges",
    ),
    while_writing(
        "multireadwhilewriting",
        false,
        Reader::MultiGet,
        "multireadrandom while one more thread puts",
    ),
    while_writing(
        "newiteratorwhilewriting",
        false,
        Reader::NewIterator,
        "newiterator while one more thread puts",
    ),
    row(
        "readwhilescanning",
        W::Mixed(Mixed::WhileScanning),
        READ,
        "readrandom while one more thread walks the DB forward (its steps counted)",
    ),
    row(
        "readrandomwriterandom",
        W::Mixed(Mixed::ReadRandomWriteRandom),
        WRITE,
        "gets and puts of random keys, --readwritepercent of them gets",
    ),
    fresh(row(
        "timeseries",
        W::Mixed(Mixed::TimeSeries),
        WRITE,
        "thread 0 writes time series entries (its own line), the other threads read or delete \
         expired ones by id until it is done (--key_id_range, --time_range, --expire_style)",
    )),
    row(
        "randomwithverify",
        W::Mixed(Mixed::RandomWithVerify),
        WRITE,
        "gets, puts and deletes of key triples of --numdistinct keys, each triple read at a \
         snapshot and checked equal (--readwritepercent gets, --deletepercent deletes)",
    ),
    row(
        "mixgraph",
        W::Mixed(Mixed::MixGraph),
        WRITE,
        "gets, puts and seeks in --mix_*_ratio shares, with keys, value sizes, scan lengths \
         and rates from Facebook's fitted models (--key_dist_*, --keyrange_*, --value_*, \
         --iter_*, --sine_*)",
    ),
    row("updaterandom", W::Merge(Merge::Update), WRITE, "get then put of random keys"),
    row(
        "xorupdaterandom",
        W::Merge(Merge::XorUpdate),
        WRITE,
        "get, then put of the value XORed with a new one, of random keys",
    ),
    row(
        "appendrandom",
        W::Merge(Merge::Append),
        WRITE,
        "get, then put of the value with ',' and a new value appended, of random keys",
    ),
    merging(row(
        "mergerandom",
        W::Merge(Merge::MergeRandom),
        WRITE,
        "merges to random keys of --merge_keys",
    )),
    merging(row(
        "readrandommergerandom",
        W::Merge(Merge::ReadRandomMergeRandom),
        WRITE,
        "merges and gets of random keys, --mergereadpercent of them merges",
    )),
    merging(row(
        "getmergeoperands",
        W::Merge(Merge::GetMergeOperands),
        WRITE,
        "merges 999 sorted lists of integers into one key, then finds one integer in its value \
         (Get) and in its operands (GetMergeOperands), each timed and printed",
    )),
    row("crc32c", W::Micro(Micro::Crc32c), READ, "CRC32C of --block_size blocks"),
    row("xxhash", W::Micro(Micro::Hash(HashKind::Xxh32)), READ, "XXH32 of --block_size blocks"),
    row("xxhash64", W::Micro(Micro::Hash(HashKind::Xxh64)), READ, "XXH64 of --block_size blocks"),
    row("xxh3", W::Micro(Micro::Hash(HashKind::Xxh3)), READ, "XXH3 of --block_size blocks"),
    row("compress", W::Micro(Micro::Compress), READ, "compresses a --block_size value block"),
    row(
        "compressreject",
        W::Micro(Micro::CompressReject),
        READ,
        "compresses a --block_size value block into a budget it cannot fit (rejected)",
    ),
    row("uncompress", W::Micro(Micro::Uncompress), READ, "uncompresses a --block_size block"),
    row("acquireload", W::Micro(Micro::AcquireLoad), READ, "atomic acquire loads, 1000 per op"),
    row("compact", W::Admin(Admin::Compact), WRITE, "compacts the whole key range (timed)"),
    row("flush", W::Admin(Admin::Flush), WRITE, "flushes the memtable"),
    tweaked(
        row(
            "backup",
            W::Admin(Admin::Backup),
            READ,
            "backs the DB up into --backup_dir, deleting the backups there first",
        ),
        &[Tweak::OneThreadWithNote],
    ),
    tweaked(
        row(
            "restore",
            W::Admin(Admin::Restore),
            READ,
            "restores the newest backup of --backup_dir into --restore_dir",
        ),
        &[Tweak::OneThreadWithNote],
    ),
    row(
        "compact0",
        W::Admin(Admin::CompactLevel { from: 0 }),
        WRITE,
        "compacts the L0 files into the next non-empty level (CompactFiles)",
    ),
    row(
        "compact1",
        W::Admin(Admin::CompactLevel { from: 1 }),
        WRITE,
        "compacts the first non-empty level below L0 into the next one (CompactFiles)",
    ),
    row("compactall", W::Admin(Admin::CompactAll), WRITE, "compacts the whole key range"),
    row(
        "verifychecksum",
        W::Admin(Admin::VerifyChecksum),
        READ,
        "reads every block of the live files, checking its checksum (timed)",
    ),
    row(
        "verifyfilechecksums",
        W::Admin(Admin::VerifyFileChecksums),
        READ,
        "reads every live table whole against the checksum --file_checksum recorded (timed)",
    ),
    row(
        "waitforcompaction",
        W::Admin(Admin::WaitForCompaction),
        READ,
        "waits until background compaction is done",
    ),
    row("levelstats", W::Admin(Admin::LevelStats), READ, "prints files and bytes per level"),
    row(
        "stats_history",
        W::Admin(Admin::StatsHistory),
        READ,
        "prints the statistics history: each --stats_persist_period_sec, every ticker's change",
    ),
    row("sstables", W::Admin(Admin::SsTables), READ, "prints every table file per level"),
    row(
        "memstats",
        W::Admin(Admin::MemStats),
        READ,
        "prints memtable, table-reader and block-cache memory properties",
    ),
    row("stats", W::Admin(Admin::Stats), READ, "prints the engine's compaction and DB stats"),
    row("resetstats", W::Admin(Admin::ResetStats), READ, "resets the engine's statistics"),
    row(
        "verify",
        W::Admin(Admin::Verify),
        READ,
        "checks that the DB holds exactly the keys and values of --truth_db (opened read-only)",
    ),
    row("open", W::Admin(Admin::Open), READ, "closes and reopens the DB --num/10000 times"),
    row(
        "randomtransaction",
        W::RandomTransaction,
        WRITE,
        "transactions each adding one amount to a random key of every --transaction_sets set \
         (--transaction_db, --optimistic_transaction_db; plain batches without); then checks \
         that every set sums the same",
    ),
];

/// db_bench benchmarks strata-bench knows but does not implement (a clear error instead of
/// "unknown benchmark").
pub const NOT_IMPLEMENTED: &[&str] = &[
    "block_cache_entry_stats",
    "cache_report_problems",
    "heapprofile",
    "replay",
    "openandcompact",
    "readrandomcoroutine",
    "multireadrandomcoroutine",
    "fillembeddedentity",
    "fillembeddedblob",
];

/// The row of `name`.
pub fn find(name: &str) -> Option<&'static Benchmark> {
    BENCHMARKS.iter().find(|b| b.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_not_also_unimplemented() {
        let mut names: Vec<&str> = BENCHMARKS.iter().map(|b| b.name).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "a name is listed twice");
        for u in NOT_IMPLEMENTED {
            assert!(find(u).is_none(), "{u} is both implemented and not");
        }
    }

    #[test]
    fn rows_are_consistent() {
        for b in BENCHMARKS {
            assert!(!b.fresh_db || b.writes, "{}: a fresh DB is only for writers", b.name);
            if let Workload::Mixed(Mixed::WhileWriting { merge, .. }) = b.workload {
                assert_eq!(merge, b.merge_operator, "{}", b.name);
            }
            if b.merge_operator {
                assert!(b.writes, "{}", b.name);
            }
            assert!(!b.about.is_empty(), "{}", b.name);
        }
    }
}
