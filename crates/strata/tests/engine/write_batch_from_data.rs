//! `WriteBatch::from_data` (`docs/format/write_batch.md`): a batch's encoding round-trips, a
//! malformed buffer is a `Corruption` naming the offset (an inverted range `InvalidArgument`), and
//! no input panics.

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
    let c = WriteBatch::from_data(b.data()).unwrap();
    assert_eq!(c.data(), b.data());
    assert_eq!(c.len(), 4);
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&Options::default(), dir.path()).unwrap();
    let mut p = WriteBatch::new();
    p.put(b"x", b"y");
    db.write(WriteBatch::from_data(p.data()).unwrap()).unwrap();
    assert_eq!(db.get(b"x").unwrap().as_deref(), Some(&b"y"[..]));
}

#[test]
fn malformed_buffers_name_the_offset() {
    match WriteBatch::from_data(&[1, 2, 3]) {
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
        matches!(WriteBatch::from_data(&d), Err(Error::Corruption { offset, .. }) if offset >= 12)
    );
    // An unknown tag right after the header.
    let mut d = sample().data().to_vec();
    d[12] = 0x7e;
    assert!(matches!(WriteBatch::from_data(&d), Err(Error::Corruption { offset: 12, .. })));
    // A count that disagrees with the records.
    let mut d = sample().data().to_vec();
    d[8] = 9;
    assert!(matches!(WriteBatch::from_data(&d), Err(Error::Corruption { offset: 8, .. })));
    // begin > end.
    let mut b = WriteBatch::new();
    b.delete_range(b"a", b"b");
    let mut d = b.data().to_vec();
    let n = d.len();
    d.swap(n - 1, n - 3);
    assert!(matches!(WriteBatch::from_data(&d), Err(Error::InvalidArgument(_))));
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
        let _ = WriteBatch::from_data(&data);
    }

    #[test]
    fn damaged_batches_never_panic(flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..6), cut in any::<usize>()) {
        let mut d = sample().data().to_vec();
        for (at, x) in flips {
            let n = d.len();
            d[at % n] ^= x;
        }
        d.truncate(cut % (d.len() + 1));
        if let Ok(b) = WriteBatch::from_data(&d) {
            prop_assert_eq!(b.data(), &d[..]);
        }
    }
}
