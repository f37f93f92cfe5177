//! Tables read through mappings (`Options::allow_mmap_reads`, `env/mapped_read.rs`): the
//! same answers as through `pread`, and a table cut below its mapping while open gives errors
//! naming it, never a wrong value or a stopped process.

use std::collections::BTreeMap;
use std::path::Path;

use strata::{Db, IteratorMode, Options};

fn open(dir: &Path, mapped: bool) -> Db {
    let opts = Options {
        create_if_missing: true,
        allow_mmap_reads: mapped,
        block_cache_size: 0,
        ..Options::default()
    };
    Db::open(&opts, dir).unwrap()
}

fn value(i: u32) -> Vec<u8> {
    format!("value-{i:08}-{}", "x".repeat((i % 97) as usize)).into_bytes()
}

/// Point reads and a full scan of a DB of several flushed and compacted tables agree with a
/// model, with and without mappings, across a reopen.
#[test]
fn mapped_and_pread_reads_agree() {
    for mapped in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let mut model = BTreeMap::new();
        {
            let db = open(dir.path(), mapped);
            for round in 0..4u32 {
                for i in (round..6_000).step_by(3) {
                    let k = format!("key{i:06}").into_bytes();
                    if i % 11 == round {
                        db.delete(&k).unwrap();
                        model.remove(&k);
                    } else {
                        db.put(&k, value(i + round)).unwrap();
                        model.insert(k, value(i + round));
                    }
                }
                db.flush().unwrap();
            }
            db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        }
        let db = open(dir.path(), mapped);
        for i in 0..6_000u32 {
            let k = format!("key{i:06}").into_bytes();
            assert_eq!(db.get(&k).unwrap(), model.get(&k).cloned(), "mapped {mapped}, key {i}");
        }
        let seen: Vec<(Vec<u8>, Vec<u8>)> = db
            .iterator(IteratorMode::Start)
            .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())))
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(seen, model.into_iter().collect::<Vec<_>>(), "mapped {mapped}");
    }
}

/// A table cut to its first page by someone else while the DB has it open: every read of a
/// key past the cut is an error naming the table (through the mapping, the page's `SIGBUS`
/// turned into an I/O error; through `pread`, a truncated read), and every read that succeeds
/// returns the key's value.
#[test]
fn a_table_cut_while_open_gives_errors_not_wrong_values() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path(), true);
        for i in 0..20_000u32 {
            db.put(format!("key{i:06}"), value(i)).unwrap();
        }
        db.flush().unwrap();
    }
    let db = open(dir.path(), true);
    assert_eq!(db.get("key000000").unwrap(), Some(value(0)));
    let table = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "sst"))
        .unwrap();
    let name = table.file_name().unwrap().to_string_lossy().to_string();
    std::fs::OpenOptions::new().write(true).open(&table).unwrap().set_len(4096).unwrap();
    let mut errors = 0;
    for i in (0..20_000u32).step_by(7) {
        match db.get(format!("key{i:06}")) {
            Ok(v) => assert_eq!(v, Some(value(i)), "key {i}"),
            Err(e) => {
                assert!(e.to_string().contains(&name), "key {i}: {e}");
                errors += 1;
            }
        }
    }
    assert!(errors > 2_500, "{errors} errors");
}
