//! `merge` on a DB without a merge operator is refused at the call with `NotSupported`, as
//! RocksDB does, and the batch holding it writes nothing: accepted, the operand would leave the
//! key unreadable.

use strata::{Db, Error, Options, WriteBatch};

#[test]
fn merge_without_an_operator_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&Options::default(), dir.path()).unwrap();
    db.put(b"k", b"v").unwrap();
    assert!(matches!(db.merge(b"k", b"x"), Err(Error::NotSupported(_))));
    let mut b = WriteBatch::new();
    b.put(b"other", b"1");
    b.merge(b"k", b"x");
    assert!(matches!(db.write(b), Err(Error::NotSupported(_))));
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(db.get(b"other").unwrap(), None, "the refused batch was partly applied");
    db.put(b"after", b"ok").unwrap();
}
