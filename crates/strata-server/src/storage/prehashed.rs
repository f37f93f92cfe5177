//! Maps keyed by a hash their user computed already (seeded, of a key the map does not
//! keep as its key): the hasher passes the `u64` through instead of hashing it again.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The pass-through hasher.
#[derive(Default)]
pub struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed here; fold anything else in anyway.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// A map from a precomputed hash to `V`.
pub type PrehashedMap<V> = HashMap<u64, V, BuildHasherDefault<Prehashed>>;
