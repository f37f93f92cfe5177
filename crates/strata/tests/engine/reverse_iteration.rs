//! `DbIterator` is double-ended (`docs/rocksdb_port.md`): `next_back` walks from the other end of
//! the range `next` alone would yield, the two ends meet without yielding a key twice, and bounds
//! and `prefix_same_as_start` hold at both ends. Checked against a `BTreeMap` model over random
//! modes, bounds and interleavings of `next`/`next_back`, with data spread over memtables and
//! tables (flushes), overwrites and deletions.

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use strata::{Db, Direction, IteratorMode, Options, PrefixExtractor, ReadOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn key(i: u8) -> Vec<u8> {
    // Two-byte prefixes ("a0".."a3", "b0".."b3") with a varying tail, plus some short keys.
    let p = [b'a' + (i / 32) % 2, b'0' + (i / 8) % 4];
    let mut k = p.to_vec();
    if !i.is_multiple_of(8) {
        k.push(b'0' + i % 8);
    }
    k
}

fn small_opts() -> Options {
    Options {
        write_buffer_size: 4 << 10,
        prefix_extractor: Some(PrefixExtractor::Fixed(2)),
        ..Options::default()
    }
}

/// What `next` alone yields for `mode` under `ro`, from the model.
fn expected(m: &Model, mode: &Mode, ro: &ReadOptions) -> Vec<Vec<u8>> {
    let in_bounds = |k: &Vec<u8>| {
        ro.iterate_lower_bound.as_ref().is_none_or(|l| k >= l)
            && ro.iterate_upper_bound.as_ref().is_none_or(|u| k < u)
    };
    let mut keys: Vec<Vec<u8>> = match mode {
        Mode::Start => m.keys().filter(|k| in_bounds(k)).cloned().collect(),
        Mode::End => m.keys().rev().filter(|k| in_bounds(k)).cloned().collect(),
        Mode::Fwd(t) => m.keys().filter(|k| *k >= t && in_bounds(k)).cloned().collect(),
        Mode::Rev(t) => m.keys().rev().filter(|k| *k <= t && in_bounds(k)).cloned().collect(),
    };
    if ro.prefix_same_as_start {
        let x = PrefixExtractor::Fixed(2);
        let p = match mode {
            Mode::Fwd(t) | Mode::Rev(t) => Some(x.prefix(t).to_vec()),
            Mode::Start | Mode::End => keys.first().map(|k| x.prefix(k).to_vec()),
        };
        match p {
            Some(p) => keys.retain(|k| x.prefix(k) == p.as_slice()),
            None => keys.clear(),
        }
    }
    keys
}

#[derive(Clone, Debug)]
enum Mode {
    Start,
    End,
    Fwd(Vec<u8>),
    Rev(Vec<u8>),
}

impl Mode {
    fn as_mode(&self) -> IteratorMode<'_> {
        match self {
            Mode::Start => IteratorMode::Start,
            Mode::End => IteratorMode::End,
            Mode::Fwd(k) => IteratorMode::From(k, Direction::Forward),
            Mode::Rev(k) => IteratorMode::From(k, Direction::Reverse),
        }
    }
}

fn mode_strategy() -> impl Strategy<Value = Mode> {
    prop_oneof![
        Just(Mode::Start),
        Just(Mode::End),
        any::<u8>().prop_map(|i| Mode::Fwd(key(i))),
        any::<u8>().prop_map(|i| Mode::Rev(key(i))),
    ]
}

/// Writes: (key index, Some(value) = put, None = delete), with a flush every so often.
fn load(db: &Db, writes: &[(u8, Option<u8>)]) -> Model {
    let mut m = Model::new();
    for (n, (k, v)) in writes.iter().enumerate() {
        let k = key(*k);
        match v {
            Some(v) => {
                let v = vec![*v; 1 + usize::from(*v % 40)];
                db.put(&k, &v).unwrap();
                m.insert(k, v);
            }
            None => {
                db.delete(&k).unwrap();
                m.remove(&k);
            }
        }
        if n % 37 == 36 {
            db.flush().unwrap();
        }
    }
    m
}

proptest! {
    // Failing cases are saved beside this file, in `reverse_iteration.proptest-regressions`,
    // and replayed first (by default proptest would keep them in
    // `tests/proptest-regressions/`, since the group's directory has a `main.rs`).
    #![proptest_config(ProptestConfig {
        cases: 48,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn both_ends_match_the_model(
        writes in prop::collection::vec((any::<u8>(), prop::option::weighted(0.8, any::<u8>())), 0..200),
        mode in mode_strategy(),
        lower in prop::option::of(any::<u8>()),
        upper in prop::option::of(any::<u8>()),
        prefix in any::<bool>(),
        steps in prop::collection::vec(any::<bool>(), 0..80),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&small_opts(), dir.path()).unwrap();
        let m = load(&db, &writes);
        let ro = ReadOptions {
            iterate_lower_bound: lower.map(key),
            iterate_upper_bound: upper.map(key),
            prefix_same_as_start: prefix,
            ..ReadOptions::default()
        };
        let want = expected(&m, &mode, &ro);

        // `.rev()` alone: the range from the other end.
        let back: Vec<Vec<u8>> =
            db.iterator_opt(mode.as_mode(), &ro).rev().map(|r| r.unwrap().0.to_vec()).collect();
        let mut rev_want = want.clone();
        rev_want.reverse();
        prop_assert_eq!(&back, &rev_want);

        // Interleaved: front items in order, back items from the end, never overlapping.
        let mut it = db.iterator_opt(mode.as_mode(), &ro);
        let (mut lo, mut hi) = (0usize, want.len());
        for front in steps.iter().copied().chain(std::iter::repeat_n(true, want.len() + 1)) {
            let got = if front { it.next() } else { it.next_back() };
            match got {
                Some(r) => {
                    let (k, v) = r.unwrap();
                    prop_assert!(lo < hi, "yielded {:?} after the ends met", k);
                    let w = if front { lo += 1; &want[lo - 1] } else { hi -= 1; &want[hi] };
                    prop_assert_eq!(&k.to_vec(), w);
                    prop_assert_eq!(&v.to_vec(), m.get(w).unwrap());
                }
                None => {
                    // An end may only finish when the ends met.
                    prop_assert_eq!(lo, hi, "an end finished early (front: {})", front);
                }
            }
        }
        prop_assert_eq!(lo, hi);
    }
}

#[test]
fn rev_of_start_walks_from_the_last_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&small_opts(), dir.path()).unwrap();
    for k in ["a", "b", "c", "d"] {
        db.put(k, k).unwrap();
    }
    db.flush().unwrap();
    db.put("e", "e").unwrap();
    db.delete("b").unwrap();
    let keys = |it: strata::DbIterator| -> Vec<String> {
        it.map(|r| String::from_utf8(r.unwrap().0.to_vec()).unwrap()).collect()
    };
    assert_eq!(keys(db.iterator(IteratorMode::Start)), ["a", "c", "d", "e"]);
    let rev: Vec<String> = db
        .iterator(IteratorMode::Start)
        .rev()
        .map(|r| String::from_utf8(r.unwrap().0.to_vec()).unwrap())
        .collect();
    assert_eq!(rev, ["e", "d", "c", "a"]);
    assert_eq!(keys(db.iterator(IteratorMode::End)), ["e", "d", "c", "a"]);
    assert_eq!(keys(db.iterator(IteratorMode::From(b"c", Direction::Reverse))), ["c", "a"]);
    let from_c_rev: Vec<String> = db
        .iterator(IteratorMode::From(b"c", Direction::Forward))
        .rev()
        .map(|r| String::from_utf8(r.unwrap().0.to_vec()).unwrap())
        .collect();
    assert_eq!(from_c_rev, ["e", "d", "c"]);
    // Meeting in the middle.
    let mut it = db.iterator(IteratorMode::Start);
    assert_eq!(&*it.next().unwrap().unwrap().0, b"a");
    assert_eq!(&*it.next_back().unwrap().unwrap().0, b"e");
    assert_eq!(&*it.next_back().unwrap().unwrap().0, b"d");
    assert_eq!(&*it.next().unwrap().unwrap().0, b"c");
    assert!(it.next().is_none());
    assert!(it.next_back().is_none());
}
