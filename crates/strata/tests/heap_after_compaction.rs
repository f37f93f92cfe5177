//! A compaction hands its free heap pages back to the OS (`Options::trim_heap_after_compaction`)
//! only after its input tables' readers (their index and filter blocks) are freed: a trim
//! right after the compaction finds next to nothing left to give back. (Regression: the job's
//! plan held the input tables until after the trim, so their readers' memory was freed too
//! late and stayed resident: 4.5 MB after one L0->L5 compaction of the I/O suite's 6M-key DB,
//! against a few hundred KB.)
//!
//! One test in this file, and a test target of its own (not a module of a group): it measures
//! the whole process's resident memory and trims the whole heap, which a test running beside it
//! in the same process would move.

#![cfg(all(target_os = "linux", target_env = "gnu"))]

use strata::{Db, Options};

/// The process's resident memory in KiB (`/proc/self/statm`).
fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = s.split_whitespace().nth(1).unwrap().parse().unwrap();
    // SAFETY: sysconf takes no pointers.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
    pages * page / 1024
}

/// What a trim now gives back: the resident KiB of free heap pages.
fn trimmable_kib() -> u64 {
    let before = rss_kib();
    // SAFETY: malloc_trim takes no pointers and touches only the allocator's free memory.
    unsafe { libc::malloc_trim(0) };
    before.saturating_sub(rss_kib())
}

#[test]
fn the_inputs_readers_are_freed_before_the_compaction_trims_the_heap() {
    let dir = tempfile::tempdir().unwrap();
    // Many small tables with small blocks: each reader's index and filter are heap chunks
    // (under glibc's mapping threshold), not mappings of their own that a free unmaps.
    let opts = Options {
        create_if_missing: true,
        disable_auto_compactions: true,
        write_buffer_size: 256 << 10,
        target_file_size_base: 256 << 10,
        block_size: 128,
        bloom_bits_per_key: 10,
        max_open_files: -1,
        ..Options::default()
    };
    let db = Db::open(&opts, dir.path()).unwrap();
    let value = [b'v'; 16];
    for round in 0..4u64 {
        for i in 0..150_000u64 {
            let k = (i * 7919 + round) % 600_000;
            db.put(format!("key{k:012}"), value).unwrap();
        }
        db.flush().unwrap();
    }
    // Every table read once, so every reader is open and holds its index and filter.
    for i in (0..600_000u64).step_by(499) {
        db.get(format!("key{i:012}")).unwrap();
    }
    let readers_kib =
        db.property_int_value("rocksdb.estimate-table-readers-mem").unwrap().unwrap() / 1024;
    assert!(
        readers_kib >= 2048,
        "the inputs' readers hold only {readers_kib} KiB: too little to tell"
    );
    trimmable_kib();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let left = trimmable_kib();
    assert!(
        left * 8 < readers_kib,
        "after the compaction a trim still gave back {left} KiB, against {readers_kib} KiB of \
         input readers: their memory was freed after the compaction's own trim"
    );
    assert_eq!(db.get("key000000000000").unwrap().as_deref(), Some(&value[..]));
}
