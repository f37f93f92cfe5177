//! A WAL replayed into several memtables (`avoid_flush_during_recovery`, or a smaller
//! `write_buffer_size` than the one it was written with) must never be replayed a second time
//! over tables already holding part of it: when only the earlier memtables got flushed before
//! the process stopped, the next open may apply only what no table holds. A merge operand
//! applied twice would show as a wrong sum.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata::env::{FaultFs, FaultKind, FaultOp, FaultRule, FileSystem, MemFs};
use strata::merge_operator::builtin_merge_operator;
use strata::{Db, Options};

const MERGES: u64 = 3_000;

fn opts(fs: Arc<dyn FileSystem>) -> Options {
    Options {
        fs,
        merge_operator: builtin_merge_operator("uint64add"),
        avoid_flush_during_recovery: true,
        write_buffer_size: 32 << 10,
        ..Options::default()
    }
}

fn is_table(name: &str) -> bool {
    Path::new(name).extension().is_some_and(|x| x == "sst")
}

fn sum(db: &Db) -> u64 {
    let v = db.get(b"counter").unwrap().expect("counter present");
    u64::from_le_bytes(v.as_slice().try_into().expect("8-byte counter"))
}

fn check(db: &Db, what: &str) {
    assert_eq!(sum(db), MERGES, "{what}: merge operands applied twice (or lost)");
    for i in (0..MERGES).step_by(97) {
        assert_eq!(db.get(format!("pad{i:06}")).unwrap(), Some(vec![i as u8; 120]), "{what}");
    }
}

#[test]
fn a_wal_split_over_memtables_is_applied_once_after_a_partial_flush() {
    let mem = MemFs::new();
    let path = Path::new("/db");
    {
        // One WAL of about 400 KB: a single memtable at write time, none flushed.
        let o = Options { write_buffer_size: 4 << 20, ..opts(Arc::new(mem.clone())) };
        let db = Db::open(&o, path).unwrap();
        for i in 0..MERGES {
            db.merge(b"counter", 1u64.to_le_bytes()).unwrap();
            db.put(format!("pad{i:06}"), [i as u8; 120]).unwrap();
        }
        check(&db, "as written");
    }
    {
        // Replayed with 32 KB memtables kept in memory (cut inside the WAL, a dozen of them
        // flushed one by one); the first flush succeeds, the next cannot create its table,
        // and the DB stops there.
        let fs = FaultFs::new(Arc::new(mem.clone()), 1);
        fs.add_rule(FaultRule {
            op: FaultOp::Create,
            kind: FaultKind::NoSpace,
            nth: 2,
            persistent: true,
            path_contains: Some(".sst".into()),
        });
        let db = Db::open(&opts(Arc::new(fs)), path).unwrap();
        check(&db, "after the replay");
        let deadline = Instant::now() + Duration::from_secs(60);
        while db.put(b"probe", b"x").is_ok() {
            assert!(Instant::now() < deadline, "the second flush never failed");
            std::thread::sleep(Duration::from_millis(5));
        }
        let tables = mem.list(path).unwrap().iter().filter(|n| is_table(n)).count();
        assert_eq!(tables, 1, "exactly the first replayed memtable reached a table");
    }
    for round in 0..2 {
        let db = Db::open(&opts(Arc::new(mem.clone())), path).unwrap();
        check(&db, &format!("reopen {round}"));
    }
    let db = Db::open(&Options { avoid_flush_during_recovery: false, ..opts(Arc::new(mem)) }, path)
        .unwrap();
    check(&db, "reopen with the replay flushed");
}
