//! Point reads through per-thread cached super versions: a read never misses a write that
//! returned before it started while flushes and compactions install new super versions; a
//! thread that read once and went idle does not keep obsolete table files alive; dropping the
//! DB with idle reader threads leaves it reopenable.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

use strata::env::MemFs;
use strata::{Db, Options};

fn opts(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        write_buffer_size: 16 << 10,
        level0_file_num_compaction_trigger: 2,
        block_size: 512,
        ..Options::default()
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key{:05}", i % 500).into_bytes()
}

#[test]
fn reads_see_every_returned_write_across_flushes_and_compactions() {
    let fs = MemFs::new();
    let db = Arc::new(Db::open(&opts(&fs), "/db").unwrap());
    // Writes round r of key k as "r"; `done` is the last round fully written.
    let done = Arc::new(AtomicU64::new(0));
    std::thread::scope(|s| {
        let readers: Vec<_> = (0..3)
            .map(|t| {
                let (db, done) = (db.clone(), done.clone());
                s.spawn(move || {
                    let mut i = t;
                    loop {
                        let round = done.load(Ordering::Acquire);
                        let v = db.get(key(i)).unwrap();
                        if round > 0 {
                            let got: u64 = String::from_utf8(v.expect("written key"))
                                .unwrap()
                                .parse()
                                .unwrap();
                            assert!(got >= round, "read {got} after round {round} was written");
                        }
                        if round >= 12 {
                            break;
                        }
                        i += 7;
                    }
                })
            })
            .collect();
        for round in 1..=12u64 {
            for k in 0..500 {
                db.put(key(k), round.to_string()).unwrap();
            }
            done.store(round, Ordering::Release);
            if round % 3 == 0 {
                db.flush().unwrap();
            }
        }
        for r in readers {
            r.join().unwrap();
        }
    });
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    for k in 0..500 {
        assert_eq!(db.get(key(k)).unwrap().as_deref(), Some(&b"12"[..]));
    }
}

fn table_files(fs: &MemFs) -> Vec<String> {
    use strata::env::FileSystem;
    let mut v: Vec<String> = fs
        .list(std::path::Path::new("/db"))
        .unwrap()
        .into_iter()
        .filter(|n| std::path::Path::new(n).extension().is_some_and(|e| e == "sst"))
        .collect();
    v.sort();
    v
}

#[test]
fn an_idle_reader_thread_does_not_pin_obsolete_tables() {
    let fs = MemFs::new();
    let db = Arc::new(Db::open(&opts(&fs), "/db").unwrap());
    for k in 0..500 {
        db.put(key(k), "v1").unwrap();
    }
    db.flush().unwrap();
    // A thread reads (caching the super version that holds the first table), then idles.
    let (read, release) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
    let idle = {
        let (db, read, release) = (db.clone(), read.clone(), release.clone());
        std::thread::spawn(move || {
            assert_eq!(db.get(key(1)).unwrap().as_deref(), Some(&b"v1"[..]));
            read.wait();
            release.wait();
            assert_eq!(db.get(key(1)).unwrap().as_deref(), Some(&b"v2"[..]));
        })
    };
    read.wait();
    let before = table_files(&fs);
    for k in 0..500 {
        db.put(key(k), "v2").unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
    // Obsolete tables are deleted when a compaction finishes, just after it wakes
    // `wait_for_compact`: poll briefly. A table pinned by the idle thread's cached super
    // version would stay until the next compaction, so this would time out.
    let live = || {
        let mut l: Vec<String> = db.live_files_metadata().into_iter().map(|f| f.name).collect();
        l.sort();
        l
    };
    let mut after = table_files(&fs);
    for _ in 0..200 {
        if after == live() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        after = table_files(&fs);
    }
    assert!(
        before.iter().all(|f| !after.contains(f)),
        "obsolete tables kept: {before:?} in {after:?}"
    );
    assert_eq!(after, live());
    release.wait();
    idle.join().unwrap();
}

#[test]
fn dropping_the_db_with_idle_reader_threads_releases_everything() {
    let fs = MemFs::new();
    let db = Arc::new(Db::open(&opts(&fs), "/db").unwrap());
    for k in 0..200 {
        db.put(key(k), "x").unwrap();
    }
    db.flush().unwrap();
    let (read, release) = (Arc::new(Barrier::new(3)), Arc::new(Barrier::new(3)));
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let (db, read, release) = (db.clone(), read.clone(), release.clone());
            std::thread::spawn(move || {
                assert!(db.get(key(3)).unwrap().is_some());
                drop(db);
                read.wait();
                release.wait(); // idle, with the DB gone
            })
        })
        .collect();
    read.wait();
    let weak = Arc::downgrade(&db);
    drop(db);
    assert!(weak.upgrade().is_none(), "the DB is closed");
    let db = Db::open(&opts(&fs), "/db").unwrap();
    assert_eq!(db.get(key(3)).unwrap().as_deref(), Some(&b"x"[..]));
    release.wait();
    for t in threads {
        t.join().unwrap();
    }
}
