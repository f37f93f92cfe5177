//! A program written against the `rocksdb` crate (rust-rocksdb) 0.22's API, ported to Strata
//! by changing its `use` line only: `use rocksdb::{...}` became `use strata::{...}`. Nothing
//! else below differs from what a rust-rocksdb user writes (`DB` is used as the
//! multi-threaded handle is: family handles are passed as `&cf`).
//!
//! It keeps per-user event counters and profiles in two column families: a merge operator
//! (a closure) appends events, a fixed 4-byte prefix extractor groups keys by user, a batch
//! writes atomically, a snapshot reads a past state, and a reverse iterator lists the newest
//! profiles first.
//!
//! `cargo run -p strata --example rocksdb_port -- [DIR]`; `tests/engine/rocksdb_port_example.rs`
//! runs it.

use strata::{
    BlockBasedOptions, Cache, ColumnFamilyDescriptor, DBCompactionStyle, DBCompressionType,
    Direction, IteratorMode, MergeOperands, Options, ReadOptions, SliceTransform, WriteBatch,
    WriteOptions, DB,
};

/// Appends each operand to the existing value, comma-separated.
fn concat_merge(_key: &[u8], existing: Option<&[u8]>, operands: &MergeOperands) -> Option<Vec<u8>> {
    let mut result = existing.map(|v| v.to_vec()).unwrap_or_default();
    for op in operands {
        if !result.is_empty() {
            result.push(b',');
        }
        result.extend_from_slice(op);
    }
    Some(result)
}

/// What the program found, for its test.
#[derive(Debug, Default)]
pub struct Report {
    pub families: Vec<String>,
    pub events_u001: String,
    pub prefix_u002: Vec<String>,
    pub snapshot_name: Option<String>,
    pub current_name: Option<String>,
    pub profiles_newest_first: Vec<String>,
    pub pinned_len: usize,
}

pub fn run(path: &str) -> Result<Report, Box<dyn std::error::Error>> {
    let _ = DB::destroy(&Options::default(), path);

    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    opts.increase_parallelism(2);
    opts.set_write_buffer_size(64 << 10);
    opts.set_max_write_buffer_number(3);
    opts.set_target_file_size_base(1 << 20);
    opts.set_max_bytes_for_level_base(4 << 20);
    opts.set_level_compaction_dynamic_level_bytes(true);
    opts.set_compaction_style(DBCompactionStyle::Level);
    opts.set_compression_type(DBCompressionType::Lz4);

    let cache = Cache::new_lru_cache(8 << 20);
    let mut table = BlockBasedOptions::default();
    table.set_block_size(16 << 10);
    table.set_bloom_filter(10.0, false);
    table.set_block_cache(&cache);
    table.set_cache_index_and_filter_blocks(true);
    opts.set_block_based_table_factory(&table);

    let mut events_opts = opts.clone();
    events_opts.set_merge_operator_associative("concat", concat_merge);
    events_opts.set_prefix_extractor(SliceTransform::create_fixed_prefix(4));
    let profiles_opts = opts.clone();

    let cfs = vec![
        ColumnFamilyDescriptor::new("events", events_opts),
        ColumnFamilyDescriptor::new("profiles", profiles_opts),
    ];
    let db = DB::open_cf_descriptors(&opts, path, cfs)?;
    let events = db.cf_handle("events").ok_or("no events family")?;
    let profiles = db.cf_handle("profiles").ok_or("no profiles family")?;

    // Merges through the closure operator.
    for (user, event) in [("u001", "login"), ("u002", "view"), ("u001", "buy"), ("u001", "logout")]
    {
        db.merge_cf(&events, format!("{user}:log"), event)?;
    }
    for i in 0..50 {
        db.put_cf(&events, format!("u002:item{i:03}"), format!("{i}"))?;
    }
    db.put_cf(&events, "u003:item000", "other user")?;

    // An atomic batch across families.
    let mut batch = WriteBatch::default();
    batch.put_cf(&profiles, b"2024-01-01:u001", b"alice");
    batch.put_cf(&profiles, b"2024-02-01:u002", b"bob");
    batch.put_cf(&profiles, b"2024-03-01:u003", b"carol");
    batch.put(b"profile_count", b"3");
    let mut write_opts = WriteOptions::default();
    write_opts.set_sync(false);
    db.write_opt(batch, &write_opts)?;

    // A snapshot, then a change it must not see.
    let snapshot = db.snapshot();
    db.put_cf(&profiles, b"2024-01-01:u001", b"alice2")?;
    db.flush_cf(&profiles)?;
    db.flush_cf(&events)?;

    let events_u001 = db.get_cf(&events, b"u001:log")?.ok_or("no u001 events")?;

    // Prefix iteration: only u002's keys, stopping at the prefix's end.
    let mut read_opts = ReadOptions::default();
    read_opts.set_prefix_same_as_start(true);
    let mut prefix_u002 = Vec::new();
    for item in
        db.iterator_cf_opt(&events, read_opts, IteratorMode::From(b"u002", Direction::Forward))
    {
        let (key, _value) = item?;
        prefix_u002.push(String::from_utf8(key.to_vec())?);
    }

    let snapshot_name = snapshot
        .get_cf(&profiles, b"2024-01-01:u001")?
        .map(|v| String::from_utf8_lossy(&v).into_owned());
    let current_name =
        db.get_cf(&profiles, b"2024-01-01:u001")?.map(|v| String::from_utf8_lossy(&v).into_owned());

    // Reverse iteration: newest profile first.
    let mut profiles_newest_first = Vec::new();
    for item in db.iterator_cf(&profiles, IteratorMode::End) {
        let (key, value) = item?;
        profiles_newest_first.push(format!(
            "{}={}",
            String::from_utf8_lossy(&key),
            String::from_utf8_lossy(&value)
        ));
    }

    let pinned = db.get_pinned_cf(&events, b"u003:item000")?.ok_or("missing")?;
    let pinned_len = pinned.len();

    let report = Report {
        families: DB::list_cf(&Options::default(), path)?,
        events_u001: String::from_utf8(events_u001)?,
        prefix_u002,
        snapshot_name,
        current_name,
        profiles_newest_first,
        pinned_len,
    };
    Ok(report)
}

#[allow(dead_code)] // the test includes this file and calls `run` instead
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| std::env::temp_dir().join("strata-rocksdb-port").display().to_string());
    let report = run(&path)?;
    println!("{report:#?}");
    DB::destroy(&Options::default(), &path)?;
    Ok(())
}
