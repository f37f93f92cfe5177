//! The iterator conformance suite (`docs/design.md`, Testing): every iterator is driven forward,
//! backward, by random seeks and by random walks, and compared with a sorted model.

use std::cmp::Ordering;

use super::InternalIterator;
use crate::key::{compare_internal, make_internal_key, parse_internal_key};
use crate::types::{SeqNo, ValueType};

/// A tiny deterministic generator so the suite needs no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Seek targets around the model's internal keys: each key, a newer and an older version of
/// it, a user key just after it, and keys before all and after all.
pub(crate) fn internal_key_targets(model: &[(Vec<u8>, Vec<u8>)]) -> Vec<Vec<u8>> {
    let mut t = vec![make_internal_key(b"", SeqNo::MAX, ValueType::FOR_SEEK)];
    t.push(make_internal_key(&[0xff; 40], SeqNo::ZERO, ValueType::Deletion));
    for (k, _) in model {
        t.push(k.clone());
        if let Some(p) = parse_internal_key(k) {
            t.push(make_internal_key(p.user_key, SeqNo(p.seq.0 + 1), p.value_type));
            if p.seq.0 > 0 {
                t.push(make_internal_key(p.user_key, SeqNo(p.seq.0 - 1), p.value_type));
            }
            let mut after = p.user_key.to_vec();
            after.push(0);
            t.push(make_internal_key(&after, SeqNo::MAX, ValueType::FOR_SEEK));
        }
    }
    t
}

fn check_at<I: InternalIterator + ?Sized>(
    it: &I,
    model: &[(Vec<u8>, Vec<u8>)],
    pos: Option<usize>,
    what: &str,
) {
    it.status().unwrap_or_else(|e| panic!("{what}: unexpected error {e}"));
    match pos {
        None => assert!(!it.valid(), "{what}: expected invalid, at {:?}", it.key()),
        Some(i) => {
            assert!(it.valid(), "{what}: expected entry {i} ({:?}), got invalid", model[i].0);
            assert_eq!(it.key(), model[i].0.as_slice(), "{what}: key at {i}");
            assert_eq!(it.value(), model[i].1.as_slice(), "{what}: value at {i}");
        }
    }
}

/// Runs the whole suite. `model` must be sorted by `cmp` with distinct keys and must hold
/// exactly what `it` iterates over.
pub(crate) fn check_iterator<I: InternalIterator + ?Sized>(
    it: &mut I,
    model: &[(Vec<u8>, Vec<u8>)],
    targets: &[Vec<u8>],
    cmp: fn(&[u8], &[u8]) -> Ordering,
    seed: u64,
) {
    for w in model.windows(2) {
        assert_eq!(cmp(&w[0].0, &w[1].0), Ordering::Less, "model must be strictly sorted");
    }
    let n = model.len();
    // Forward scan.
    it.seek_to_first();
    for i in 0..n {
        check_at(it, model, Some(i), "forward scan");
        it.next();
    }
    check_at(it, model, None, "forward scan end");
    // Backward scan.
    it.seek_to_last();
    for i in (0..n).rev() {
        check_at(it, model, Some(i), "backward scan");
        it.prev();
    }
    check_at(it, model, None, "backward scan end");
    // Every target with seek and seek_for_prev, then a step each way.
    for t in targets {
        let ge = model.partition_point(|(k, _)| cmp(k, t) == Ordering::Less);
        it.seek(t);
        check_at(it, model, (ge < n).then_some(ge), "seek");
        if ge < n {
            it.next();
            check_at(it, model, (ge + 1 < n).then_some(ge + 1), "seek+next");
            it.seek(t);
            it.prev();
            check_at(it, model, ge.checked_sub(1), "seek+prev");
        }
        let gt = model.partition_point(|(k, _)| cmp(k, t) != Ordering::Greater);
        it.seek_for_prev(t);
        check_at(it, model, gt.checked_sub(1), "seek_for_prev");
        if gt > 0 {
            it.prev();
            check_at(it, model, gt.checked_sub(2), "seek_for_prev+prev");
            it.seek_for_prev(t);
            it.next();
            check_at(it, model, (gt < n).then_some(gt), "seek_for_prev+next");
        }
    }
    // Random walks with direction changes.
    let mut rng = Rng(seed | 1);
    for _ in 0..8 {
        let mut pos: Option<usize>;
        if targets.is_empty() || rng.below(3) == 0 {
            it.seek_to_first();
            pos = (n > 0).then_some(0);
        } else {
            let t = &targets[rng.below(targets.len())];
            let ge = model.partition_point(|(k, _)| cmp(k, t) == Ordering::Less);
            it.seek(t);
            pos = (ge < n).then_some(ge);
        }
        check_at(it, model, pos, "walk start");
        for _ in 0..(4 * n.min(64) + 4) {
            let Some(p) = pos else { break };
            if rng.below(2) == 0 {
                it.next();
                pos = (p + 1 < n).then_some(p + 1);
            } else {
                it.prev();
                pos = p.checked_sub(1);
            }
            check_at(it, model, pos, "walk");
        }
    }
}

/// The suite with the internal-key order and generated targets.
pub(crate) fn check_internal_iterator<I: InternalIterator + ?Sized>(
    it: &mut I,
    model: &[(Vec<u8>, Vec<u8>)],
    seed: u64,
) {
    let targets = internal_key_targets(model);
    check_iterator(it, model, &targets, compare_internal, seed);
}

/// Model entries for tests: `n` internal keys with varied user keys, several versions of some
/// keys, and types mixing values, merges and deletions; sorted.
pub(crate) fn sample_entries(n: usize, seed: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut rng = Rng(seed | 1);
    let mut out = Vec::with_capacity(n);
    let mut seq = 1u64;
    while out.len() < n {
        let k = rng.below(n * 2 + 1);
        let user = format!("key{k:06}").into_bytes();
        let versions = 1 + rng.below(3);
        for _ in 0..versions {
            let t = match rng.below(5) {
                0 => ValueType::Deletion,
                1 => ValueType::Merge,
                _ => ValueType::Value,
            };
            seq += 1;
            let value = if t == ValueType::Deletion {
                Vec::new()
            } else {
                let len = rng.below(40);
                (0..len).map(|i| (seq as u8).wrapping_add(i as u8)).collect()
            };
            out.push((make_internal_key(&user, SeqNo(seq), t), value));
        }
    }
    out.sort_by(|a, b| compare_internal(&a.0, &b.0));
    out.dedup_by(|a, b| a.0 == b.0);
    out.truncate(n);
    out
}

use crate::error::Result;

/// A trivially correct iterator over a sorted vector: the reference for the suite itself and
/// a child for composite iterators under test.
pub(crate) struct VecIter {
    data: Vec<(Vec<u8>, Vec<u8>)>,
    pos: Option<usize>,
}

impl VecIter {
    pub(crate) fn new(data: Vec<(Vec<u8>, Vec<u8>)>) -> Self {
        VecIter { data, pos: None }
    }
}

impl InternalIterator for VecIter {
    fn valid(&self) -> bool {
        self.pos.is_some()
    }
    fn seek_to_first(&mut self) {
        self.pos = (!self.data.is_empty()).then_some(0);
    }
    fn seek_to_last(&mut self) {
        self.pos = self.data.len().checked_sub(1);
    }
    fn seek(&mut self, t: &[u8]) {
        let i = self.data.partition_point(|(k, _)| compare_internal(k, t) == Ordering::Less);
        self.pos = (i < self.data.len()).then_some(i);
    }
    fn seek_for_prev(&mut self, t: &[u8]) {
        let i = self.data.partition_point(|(k, _)| compare_internal(k, t) != Ordering::Greater);
        self.pos = i.checked_sub(1);
    }
    fn next(&mut self) {
        let p = self.pos.unwrap();
        self.pos = (p + 1 < self.data.len()).then_some(p + 1);
    }
    fn prev(&mut self) {
        self.pos = self.pos.unwrap().checked_sub(1);
    }
    fn key(&self) -> &[u8] {
        &self.data[self.pos.unwrap()].0
    }
    fn value(&self) -> &[u8] {
        &self.data[self.pos.unwrap()].1
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suite_accepts_a_correct_iterator() {
        for n in [0, 1, 2, 17, 200] {
            let data = sample_entries(n, n as u64 + 3);
            let mut it = VecIter { data: data.clone(), pos: None };
            check_internal_iterator(&mut it, &data, 9);
        }
    }

    #[test]
    #[should_panic(expected = "seek")]
    fn suite_rejects_a_wrong_seek() {
        struct Bad(VecIter);
        impl InternalIterator for Bad {
            fn valid(&self) -> bool {
                self.0.valid()
            }
            fn seek_to_first(&mut self) {
                self.0.seek_to_first();
            }
            fn seek_to_last(&mut self) {
                self.0.seek_to_last();
            }
            fn seek(&mut self, t: &[u8]) {
                self.0.seek(t);
                if self.0.valid() {
                    self.0.next(); // off by one
                }
            }
            fn seek_for_prev(&mut self, t: &[u8]) {
                self.0.seek_for_prev(t);
            }
            fn next(&mut self) {
                self.0.next();
            }
            fn prev(&mut self) {
                self.0.prev();
            }
            fn key(&self) -> &[u8] {
                self.0.key()
            }
            fn value(&self) -> &[u8] {
                self.0.value()
            }
            fn status(&self) -> Result<()> {
                Ok(())
            }
        }
        let data = sample_entries(20, 1);
        let mut it = Bad(VecIter { data: data.clone(), pos: None });
        check_internal_iterator(&mut it, &data, 1);
    }
}
