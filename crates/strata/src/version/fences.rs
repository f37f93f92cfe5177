//! A sorted level's file boundaries as fences: every file's smallest and largest user key cut
//! to the 8 bytes after the prefix they all share, in two arrays of integers.
//!
//! A point lookup finds its file at each sorted level with a binary search. Over the files
//! themselves every step reads a file record and the key bytes it points to: two cache lines
//! per step that nothing else of the lookup shares. With the database larger than memory a
//! lookup starts cold (its thread slept through the previous one's read), so those misses are
//! a large part of its CPU time. Over the fences a search reads a few adjacent lines of one
//! array and compares integers; a file's full keys are compared only where its fence equals
//! the key's.
//!
//! ```text
//! common    the longest prefix of every smallest and largest user key of the level
//! smallest  [ f(smallest of file 0), f(smallest of file 1), ... ]    u64 each
//! largest   [ f(largest of file 0),  f(largest of file 1),  ... ]    u64 each
//!
//! f(k) = the (up to) 8 bytes of k after `common`, zero-padded on the right, big-endian
//! ```
//!
//! Invariant (fences decide only strictly): for user keys `a` and `b` that both start with
//! `common`, `f(a) < f(b)` implies `a < b`, and `f(a) > f(b)` implies `a > b`. At the first
//! byte where the two padded windows differ, either both bytes are the keys' own (they decide),
//! or the smaller is padding, a zero: that key ended there while the other goes on, so it is
//! the other's prefix and smaller. A real byte is never below a pad. Equal fences say
//! nothing, and the caller compares the keys. A key that does not start with `common` is below
//! every file's keys (it sorts before `common`) or above all of them.

/// A sorted level's fences (module doc). Built with the version; never changed.
#[derive(Debug, Default)]
pub(crate) struct LevelFences {
    common: Box<[u8]>,
    smallest: Box<[u64]>,
    largest: Box<[u64]>,
}

/// Where a key stands against a level's fences.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// Sorts before every key starting with `common`.
    Below,
    /// Starts with `common`; its fence.
    At(u64),
    /// Sorts after every key starting with `common`.
    Above,
}

impl LevelFences {
    /// The fences of a sorted level whose files' user-key bounds are `bounds` (smallest,
    /// largest), in the level's order.
    pub fn new<'a>(bounds: impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone) -> LevelFences {
        let mut common: Option<&[u8]> = None;
        for k in bounds.clone().flat_map(|(s, l)| [s, l]) {
            common = Some(match common {
                None => k,
                Some(c) => &c[..c.iter().zip(k).take_while(|(a, b)| a == b).count()],
            });
        }
        let common = common.unwrap_or_default();
        let cut = |k: &[u8]| fence(&k[common.len()..]);
        LevelFences {
            smallest: bounds.clone().map(|(s, _)| cut(s)).collect(),
            largest: bounds.map(|(_, l)| cut(l)).collect(),
            common: common.into(),
        }
    }

    /// Number of files.
    pub fn len(&self) -> usize {
        self.largest.len()
    }

    fn target(&self, key: &[u8]) -> Target {
        match key.strip_prefix(&*self.common) {
            Some(rest) => Target::At(fence(rest)),
            None if key < &*self.common => Target::Below,
            None => Target::Above,
        }
    }

    /// The index of the first file that `key` is not after, as
    /// `partition_point(after_largest)` over the files, where `after(i)` says whether `key`
    /// is after file `i`'s largest key. `after` is called only for files whose largest fence
    /// equals the key's. (The get path asks [`Self::file_for`]; this is its first half.)
    #[cfg(test)]
    pub fn find(&self, key: &[u8], after: impl Fn(usize) -> bool) -> usize {
        self.find_target(self.target(key), after)
    }

    /// The one file whose range can hold `key`: [`Self::find`]'s, unless `key` sorts before
    /// its smallest key. `below(i)` says whether `key` sorts before file `i`'s smallest key;
    /// like `after`, it is called only where the fences tie.
    #[inline]
    pub fn file_for(
        &self,
        key: &[u8],
        after: impl Fn(usize) -> bool,
        below: impl Fn(usize) -> bool,
    ) -> Option<usize> {
        let target = self.target(key);
        let i = self.find_target(target, after);
        let fence = *self.smallest.get(i)?;
        let before = match target {
            Target::Below => true,
            Target::Above => false,
            Target::At(t) => fence > t || (fence == t && below(i)),
        };
        (!before).then_some(i)
    }

    #[inline]
    fn find_target(&self, target: Target, after: impl Fn(usize) -> bool) -> usize {
        let t = match target {
            Target::Below => return 0,
            Target::Above => return self.len(),
            Target::At(t) => t,
        };
        // Files before `lo` end below the key; files from `hi` on end above it.
        let lo = self.largest.partition_point(|&f| f < t);
        let hi = lo + self.largest[lo..].partition_point(|&f| f == t);
        // `after` is true for a prefix of the tied files.
        let (mut a, mut b) = (lo, hi);
        while a < b {
            let m = a + (b - a) / 2;
            if after(m) {
                a = m + 1;
            } else {
                b = m;
            }
        }
        a
    }
}

/// `f(rest)` of the module doc.
#[inline]
fn fence(rest: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = rest.len().min(8);
    b[..n].copy_from_slice(&rest[..n]);
    u64::from_be_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_fence_decides_only_strictly() {
        let common = b"key".as_slice();
        let keys: [&[u8]; 8] = [
            b"key",
            b"key\0",
            b"key\0\0",
            b"key\x01",
            b"keya",
            b"keyabcdefgh",
            b"keyabcdefghi",
            b"keyb",
        ];
        for a in keys {
            for b in keys {
                let (fa, fb) = (fence(&a[common.len()..]), fence(&b[common.len()..]));
                if fa < fb {
                    assert!(a < b, "{a:?} {b:?}");
                }
                if fa > fb {
                    assert!(a > b, "{a:?} {b:?}");
                }
            }
        }
    }

    #[test]
    fn an_empty_level_finds_nothing() {
        let f = LevelFences::new(std::iter::empty());
        assert_eq!(f.find(b"k", |_| unreachable!()), 0);
        assert_eq!(f.find(b"", |_| unreachable!()), 0);
        assert_eq!(f.file_for(b"k", |_| unreachable!(), |_| unreachable!()), None);
    }

    /// A file's smallest and largest user keys, and whether the largest is an exclusive bound.
    type File = (Vec<u8>, Vec<u8>, bool);

    /// A level of up to six files over keys of a small alphabet (so that fences tie and prefixes
    /// are shared), with the flags saying which files' largest keys are exclusive bounds.
    fn level() -> impl Strategy<Value = (Vec<File>, Vec<Vec<u8>>)> {
        let key =
            || prop::collection::vec(prop::sample::select(vec![0u8, 1, b'a', b'b', 0xff]), 0..14);
        (
            prop::collection::vec((key(), prop::bool::ANY), 0..12),
            prop::collection::vec(key(), 1..24),
            prop::sample::select(vec![Vec::new(), b"user".to_vec(), b"user00000000".to_vec()]),
        )
            .prop_map(|(mut bounds, probes, prefix)| {
                let with = |k: &Vec<u8>| [prefix.as_slice(), k].concat();
                bounds.sort();
                bounds.dedup_by(|a, b| a.0 == b.0);
                // Consecutive sorted keys pair up into files [k0, k1], [k2, k3], ...; a file
                // whose largest is exclusive does not contain it.
                let files = bounds
                    .chunks_exact(2)
                    .map(|p| (with(&p[0].0), with(&p[1].0), p[1].1))
                    .collect();
                let mut probes: Vec<Vec<u8>> = probes.iter().map(with).collect();
                probes.push(prefix[..prefix.len() / 2].to_vec());
                probes.push([prefix.as_slice(), b"\xff\xff"].concat());
                (files, probes)
            })
    }

    proptest! {
        #[test]
        fn find_and_file_for_agree_with_the_full_keys((files, probes) in level()) {
            let after = |key: &[u8], (_, l, excl): &File| {
                key > l.as_slice() || (key == l.as_slice() && *excl)
            };
            let f = LevelFences::new(files.iter().map(|(s, l, _)| (s.as_slice(), l.as_slice())));
            prop_assert_eq!(f.len(), files.len());
            for key in &probes {
                let want = files.partition_point(|file| after(key, file));
                let got = f.find(key, |i| after(key, &files[i]));
                prop_assert_eq!(got, want, "key {:?}", key);
                let holder = files.get(want).filter(|file| key.as_slice() >= file.0.as_slice());
                let got = f.file_for(
                    key,
                    |i| after(key, &files[i]),
                    |i| key.as_slice() < files[i].0.as_slice(),
                );
                prop_assert_eq!(got, holder.map(|_| want), "key {:?}", key);
            }
        }
    }
}
