//! `WriteBatch::try_from_data` and `from_data` (`docs/format/write_batch.md`): a batch's
//! encoding round-trips; a malformed buffer is a `Corruption` naming the offset, from
//! `try_from_data` at once and from `from_data` (the `rocksdb` crate's, which cannot fail) when
//! the batch is written; an inverted range is `InvalidArgument` at the write (in the family's
//! key order); no input panics.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use strata::{Db, Error, Options, WriteBatch};

fn sample() -> WriteBatch {
    let mut b = WriteBatch::new();
    b.put(b"k1", b"v1");
    b.delete(b"k2");
    b.merge(b"k3", b"op");
    b.delete_range(b"a", b"b");
    b
}

#[test]
fn round_trip_and_apply() {
    let b = sample();
    let c = WriteBatch::try_from_data(b.data()).unwrap();
    assert_eq!(c.data(), b.data());
    assert_eq!(c.len(), 4);
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&Options::default(), dir.path()).unwrap();
    let mut p = WriteBatch::new();
    p.put(b"x", b"y");
    db.write(WriteBatch::try_from_data(p.data()).unwrap()).unwrap();
    assert_eq!(db.get(b"x").unwrap().as_deref(), Some(&b"y"[..]));
}

#[test]
fn malformed_buffers_name_the_offset() {
    match WriteBatch::try_from_data(&[1, 2, 3]) {
        Err(Error::Corruption { offset, reason, .. }) => {
            assert_eq!(offset, 0);
            assert!(reason.contains("header"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // A record cut short: the put's value length points past the end.
    let mut d = sample().data().to_vec();
    d.truncate(12 + 4);
    assert!(
        matches!(WriteBatch::try_from_data(&d), Err(Error::Corruption { offset, .. }) if offset >= 12)
    );
    // An unknown tag right after the header.
    let mut d = sample().data().to_vec();
    d[12] = 0x7e;
    assert!(matches!(WriteBatch::try_from_data(&d), Err(Error::Corruption { offset: 12, .. })));
    // A count that disagrees with the records.
    let mut d = sample().data().to_vec();
    d[8] = 9;
    assert!(matches!(WriteBatch::try_from_data(&d), Err(Error::Corruption { offset: 8, .. })));
    // begin > end decodes (the family's key order decides at the write; see below).
    let mut b = WriteBatch::new();
    b.delete_range(b"a", b"b");
    let mut d = b.data().to_vec();
    let n = d.len();
    d.swap(n - 1, n - 3);
    assert!(WriteBatch::try_from_data(&d).is_ok());
}

/// A damaged buffer given to `from_data` iterates up to its damage and is never written.
#[test]
fn from_data_defers_the_error_to_the_write() {
    struct Count(usize);
    impl strata::WriteBatchIterator for Count {
        fn put(&mut self, _: &[u8], _: &[u8]) {
            self.0 += 1;
        }
        fn delete(&mut self, _: &[u8]) {
            self.0 += 1;
        }
    }
    let mut b = WriteBatch::new();
    b.put(b"k1", b"v1");
    b.put(b"k2", b"v2");
    let mut d = b.data().to_vec();
    let n = d.len();
    d.truncate(n - 1); // the second record loses its value's last byte
    let damaged = WriteBatch::from_data(&d);
    let mut c = Count(0);
    damaged.iterate(&mut c);
    assert_eq!(c.0, 1, "the record before the damage");
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&Options::default(), dir.path()).unwrap();
    match db.write(damaged.clone()) {
        Err(Error::Corruption { offset, .. }) => assert!(offset >= 12, "offset {offset}"),
        other => panic!("expected Corruption, got {other:?}"),
    }
    let mut carrier = WriteBatch::new();
    carrier.put(b"x", b"y");
    carrier.append(&damaged);
    assert!(
        matches!(db.write(carrier), Err(Error::Corruption { .. })),
        "append carries the damage"
    );
    assert_eq!(db.get(b"k1").unwrap(), None);
    assert_eq!(db.get(b"x").unwrap(), None);
    // A well-formed buffer is the same batch either way; an inverted range is refused at the
    // write with `InvalidArgument`.
    assert_eq!(WriteBatch::from_data(b.data()), WriteBatch::try_from_data(b.data()).unwrap());
    let mut r = WriteBatch::new();
    r.delete_range(b"a", b"b");
    let mut d = r.data().to_vec();
    let n = d.len();
    d.swap(n - 1, n - 3);
    assert!(matches!(db.write(WriteBatch::from_data(&d)), Err(Error::InvalidArgument(_))));
}

proptest! {
    // Failing cases are saved beside this file, in `write_batch_from_data.proptest-regressions`,
    // and replayed first (by default proptest would keep them in
    // `tests/proptest-regressions/`, since the group's directory has a `main.rs`).
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = WriteBatch::try_from_data(&data);
    }

    #[test]
    fn damaged_batches_never_panic(flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..6), cut in any::<usize>()) {
        let mut d = sample().data().to_vec();
        for (at, x) in flips {
            let n = d.len();
            d[at % n] ^= x;
        }
        d.truncate(cut % (d.len() + 1));
        if let Ok(b) = WriteBatch::try_from_data(&d) {
            prop_assert_eq!(b.data(), &d[..]);
        }
    }
}
