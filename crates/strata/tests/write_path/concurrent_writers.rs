//! Many threads writing at once go through group commit; every acknowledged write is visible
//! immediately and after reopen, and batches stay atomic.

use std::sync::Arc;
use std::thread;

use strata::{Db, Options, WriteBatch, WriteOptions};

#[test]
fn group_commit_keeps_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { write_buffer_size: 256 << 10, ..Options::default() };
    let threads = 8;
    let per_thread = 3000;
    {
        let db = Arc::new(Db::open(&opts, dir.path()).unwrap());
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let db = db.clone();
                thread::spawn(move || {
                    for i in 0..per_thread {
                        let k = format!("t{t}-k{i:05}");
                        let sync = i % 500 == 0;
                        if i % 10 == 0 {
                            // A batch of two keys that must appear together.
                            let mut b = WriteBatch::new();
                            b.put(format!("{k}-a"), format!("{i}"));
                            b.put(format!("{k}-b"), format!("{i}"));
                            db.write_opt(
                                b,
                                &WriteOptions {
                                    sync,
                                    disable_wal: false,
                                    ..WriteOptions::default()
                                },
                            )
                            .unwrap();
                        } else {
                            db.put_opt(
                                &k,
                                format!("v{i}"),
                                &WriteOptions {
                                    sync,
                                    disable_wal: false,
                                    ..WriteOptions::default()
                                },
                            )
                            .unwrap();
                            assert_eq!(db.get(&k).unwrap().unwrap(), format!("v{i}").into_bytes());
                        }
                    }
                })
            })
            .collect();
        // A reader checks batch atomicity while writers run.
        let reader = {
            let db = db.clone();
            thread::spawn(move || {
                for round in 0..2000 {
                    let t = round % threads;
                    let i = (round * 10) % per_thread;
                    let a = db.get(format!("t{t}-k{i:05}-a")).unwrap();
                    let b = db.get(format!("t{t}-k{i:05}-b")).unwrap();
                    if a.is_some() {
                        assert!(b.is_some(), "batch half visible");
                    }
                }
            })
        };
        for h in handles {
            h.join().unwrap();
        }
        reader.join().unwrap();
    }
    let db = Db::open(&opts, dir.path()).unwrap();
    for t in 0..threads {
        for i in 0..per_thread {
            let k = format!("t{t}-k{i:05}");
            if i % 10 == 0 {
                assert_eq!(db.get(format!("{k}-a")).unwrap().unwrap(), format!("{i}").into_bytes());
                assert_eq!(db.get(format!("{k}-b")).unwrap().unwrap(), format!("{i}").into_bytes());
            } else {
                assert_eq!(db.get(&k).unwrap().unwrap(), format!("v{i}").into_bytes(), "{k}");
            }
        }
    }
}
