//! Randomized model test of compaction filters under snapshots: puts (some values the filter
//! removes, some it rewrites), deletes, merges, flushes, compactions, snapshots taken and
//! released, and reopens, checked against a `BTreeMap` after every step.
//!
//! When the filter runs is the engine's choice, so a read of a key may return its written value
//! `v` or the filter's verdict `f(v)`. What must hold exactly:
//! - never anything else (no older version resurfacing under a removed one);
//! - once a read has returned `f(v) != v`, every later read of the key returns it too, until
//!   the key is written again (a filtered value never comes back);
//! - a snapshot's reads never change while it lives (the filter never touches what a snapshot
//!   can see), and each is `v` or `f(v)` of the value current when the snapshot was taken.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::env::MemFs;
use strata::merge_operator::StringAppendOperator;
use strata::{Db, Decision, IteratorMode, Options, ReadOptions, Snapshot};

/// Removes values starting with `x`; rewrites values starting with `u` to start with `U`.
fn verdict(v: &[u8]) -> Decision {
    match v.first() {
        Some(b'x') => Decision::Remove,
        Some(b'u') => {
            let mut n = v.to_vec();
            n[0] = b'U';
            Decision::Change(n)
        }
        _ => Decision::Keep,
    }
}

/// `f(v)` as a read would show it.
fn filtered(v: &[u8]) -> Option<Vec<u8>> {
    match verdict(v) {
        Decision::Keep => Some(v.to_vec()),
        Decision::Remove => None,
        Decision::Change(n) => Some(n),
    }
}

fn options(fs: &MemFs, rng: &mut StdRng) -> Options {
    let mut o = Options {
        fs: Arc::new(fs.clone()),
        write_buffer_size: [4 << 10, 16 << 10, 1 << 20][rng.gen_range(0..3)],
        level0_file_num_compaction_trigger: rng.gen_range(2..4),
        max_bytes_for_level_base: 64 << 10,
        target_file_size_base: 16 << 10,
        block_size: [256, 4096][rng.gen_range(0..2)],
        merge_operator: Some(Arc::new(StringAppendOperator::new(b","))),
        ..Options::default()
    };
    o.set_compaction_filter("model", |_, _, v: &[u8]| verdict(v));
    o
}

/// What a key may read as: its written value (`None`: absent) and whether `f` was seen.
#[derive(Clone, Debug, Default)]
struct KeyState {
    value: Option<Vec<u8>>,
    filtered_seen: bool,
}

fn check_read(step: usize, k: &[u8], st: &mut KeyState, got: Option<Vec<u8>>) {
    let Some(v) = &st.value else {
        assert_eq!(got, None, "step {step}: key {:?} was deleted", String::from_utf8_lossy(k));
        return;
    };
    let f = filtered(v);
    if st.filtered_seen {
        assert_eq!(
            got,
            f,
            "step {step}: key {:?} came back unfiltered",
            String::from_utf8_lossy(k)
        );
    } else if got == f && f.as_deref() != Some(v) {
        st.filtered_seen = true;
    } else {
        assert_eq!(
            got.as_deref(),
            Some(&v[..]),
            "step {step}: key {:?}",
            String::from_utf8_lossy(k)
        );
    }
}

struct Snap {
    handle: Snapshot<'static>,
    /// The written values when taken.
    model: BTreeMap<Vec<u8>, Vec<u8>>,
    /// What each key read as the first time it was read through the snapshot.
    seen: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
}

fn check_snapshot(db: &Db, s: &mut Snap, step: usize) {
    let mut ro = ReadOptions::default();
    ro.set_snapshot(&s.handle);
    let got: BTreeMap<Vec<u8>, Vec<u8>> = db
        .iterator_opt(IteratorMode::Start, &ro)
        .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).expect("iterate"))
        .collect();
    for (k, v) in &s.model {
        let g = got.get(k).cloned();
        assert!(
            g.as_deref() == Some(&v[..]) || g == filtered(v),
            "step {step}: snapshot read {g:?} of {:?}, written {v:?}",
            String::from_utf8_lossy(k)
        );
    }
    for k in got.keys() {
        assert!(s.model.contains_key(k), "step {step}: snapshot sees a key it never had");
    }
    for (k, v) in &s.model {
        let g = got.get(k).cloned();
        let first = s.seen.entry(k.clone()).or_insert_with(|| g.clone());
        assert_eq!(
            *first,
            g,
            "step {step}: a snapshot's read of {:?} changed (was {v:?})",
            String::from_utf8_lossy(k)
        );
    }
}

fn run(seed: u64, steps: usize) {
    let mut rng = StdRng::seed_from_u64(seed);
    let fs = MemFs::new();
    let opts = options(&fs, &mut rng);
    let dir = Path::new("/db");
    let mut db = Db::open(&opts, dir).unwrap();
    let mut model: BTreeMap<Vec<u8>, KeyState> = BTreeMap::new();
    let mut snaps: Vec<Snap> = Vec::new();
    for step in 0..steps {
        let k = format!("k{:03}", rng.gen_range(0..120)).into_bytes();
        match rng.gen_range(0..100) {
            0..=49 => {
                let prefix = ["x", "u", "p"][rng.gen_range(0..3)];
                let v = format!("{prefix}{seed}-{step}-{}", "z".repeat(rng.gen_range(0..60)));
                db.put(&k, &v).unwrap();
                model.insert(k, KeyState { value: Some(v.into_bytes()), filtered_seen: false });
            }
            50..=57 => {
                db.delete(&k).unwrap();
                model.insert(k, KeyState::default());
            }
            58..=63 => {
                // A merge onto a value the filter may already have removed or changed: the
                // operand applies to whatever the read shows, so read it first.
                let cur = db.get(&k).unwrap();
                let st = model.entry(k.clone()).or_default();
                check_read(step, &k, st, cur.clone());
                db.merge(&k, "p").unwrap();
                // A background run may filter the base between the read and the merge, so the
                // result starts from the value read or from its verdict.
                let join = |base: Option<Vec<u8>>| {
                    let mut v = base.unwrap_or_default();
                    if !v.is_empty() {
                        v.push(b',');
                    }
                    v.push(b'p');
                    v
                };
                let got = db.get(&k).unwrap().expect("merge result");
                let from_verdict = cur.as_deref().and_then(filtered);
                assert!(
                    got == join(cur.clone()) || got == join(from_verdict),
                    "step {step}: merge result {got:?}"
                );
                let st = model.get_mut(&k).unwrap();
                st.value = Some(got);
                st.filtered_seen = false;
            }
            64..=73 => {
                let got = db.get(&k).unwrap();
                check_read(step, &k, model.entry(k.clone()).or_default(), got);
            }
            74..=79 => db.flush().unwrap(),
            80..=84 => db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap(),
            85..=90 => {
                let written = model
                    .iter()
                    .filter_map(|(k, s)| s.value.clone().map(|v| (k.clone(), v)))
                    .collect();
                snaps.push(Snap { handle: db.snapshot(), model: written, seen: BTreeMap::new() });
            }
            91..=95 if !snaps.is_empty() => {
                let i = rng.gen_range(0..snaps.len());
                snaps.swap_remove(i);
            }
            96..=99 => {
                snaps.clear();
                drop(db);
                db = Db::open(&opts, dir).unwrap();
            }
            _ => {}
        }
        db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
        for s in &mut snaps {
            check_snapshot(&db, s, step);
        }
        // The whole latest view.
        let got: BTreeMap<Vec<u8>, Vec<u8>> = db
            .iterator(IteratorMode::Start)
            .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).expect("iterate"))
            .collect();
        for (k, st) in &mut model {
            check_read(step, k, st, got.get(k).cloned());
        }
        for k in got.keys() {
            assert!(model.contains_key(k), "step {step}: unknown key {k:?}");
        }
    }
}

#[test]
fn filters_under_snapshots_match_the_model() {
    for seed in 0..12 {
        run(seed, 300);
    }
}
