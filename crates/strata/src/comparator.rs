//! Key orders: the order of user keys a column family keeps (RocksDB's `Comparator`).
//!
//! Every family has one order, fixed when it is created and recorded by name in the MANIFEST
//! (`docs/format/manifest.md`, field `Comparator`) and in each table it writes (table property
//! `comparator`, `docs/format/sstable.md`; absent for bytewise tables). Everything that orders
//! keys in the family asks its [`KeyOrder`]: the memtable, table blocks and indexes, level
//! bounds, compaction picking and output cutting, range tombstones, iterators and their bounds.
//!
//! - [`KeyOrder::Bytewise`] is lexicographic byte order (RocksDB's
//!   `leveldb.BytewiseComparator`), the default. It is matched first everywhere, so the
//!   default order pays one predictable branch per comparison and no call.
//! - [`KeyOrder::Custom`] calls the program's function (`Options::set_comparator`).
//!
//! Contract of a custom order, as RocksDB's: a strict total order, the same for the life of
//! the data (a DB opened with another order of the same name reads wrong), and consistent
//! with byte equality: two keys compare `Equal` only when they are the same bytes (the engine
//! tells versions of one key apart by their bytes). Strata never shortens index separators
//! for a custom order (RocksDB's `FindShortestSeparator` is a no-op for such comparators too).

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use crate::key::{after_largest, is_exclusive_bound, trailer, user_key};
use crate::util::compare::compare_bytes;

/// The name Strata records for bytewise order.
pub const BYTEWISE_NAME: &str = "strata.BytewiseComparator";

/// RocksDB's (and LevelDB's) name for bytewise order, accepted as Strata's.
pub const ROCKSDB_BYTEWISE_NAME: &str = "leveldb.BytewiseComparator";

/// A user-key comparison function as the engine stores it.
pub type CompareUserKeys = dyn Fn(&[u8], &[u8]) -> Ordering + Send + Sync;

/// A program's key order: its name and function.
pub struct CustomOrder {
    name: String,
    compare: Box<CompareUserKeys>,
}

/// The order of a family's user keys. Cloning shares the function.
#[derive(Clone, Default)]
pub enum KeyOrder {
    /// Lexicographic byte order.
    #[default]
    Bytewise,
    /// A program's order.
    Custom(Arc<CustomOrder>),
}

impl KeyOrder {
    /// The order `compare`, named `name`. The names of bytewise order give [`KeyOrder::Bytewise`]
    /// (the function is then not called: it must be bytewise order).
    pub fn custom(name: impl Into<String>, compare: Box<CompareUserKeys>) -> KeyOrder {
        let name = name.into();
        if is_bytewise_name(&name) {
            return KeyOrder::Bytewise;
        }
        KeyOrder::Custom(Arc::new(CustomOrder { name, compare }))
    }

    /// The name recorded for the order.
    pub fn name(&self) -> &str {
        match self {
            KeyOrder::Bytewise => BYTEWISE_NAME,
            KeyOrder::Custom(c) => &c.name,
        }
    }

    /// Whether this is bytewise order.
    #[inline]
    pub fn is_bytewise(&self) -> bool {
        matches!(self, KeyOrder::Bytewise)
    }

    /// Whether `name`, as recorded in a MANIFEST or table, is this order's.
    pub fn matches_name(&self, name: &str) -> bool {
        match self {
            KeyOrder::Bytewise => is_bytewise_name(name),
            KeyOrder::Custom(c) => c.name == name,
        }
    }

    /// The order of user keys `a` and `b`.
    #[inline]
    pub fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        match self {
            KeyOrder::Bytewise => compare_bytes(a, b),
            // Equal bytes are equal keys in any order (the contract): no call.
            KeyOrder::Custom(_) if a == b => Ordering::Equal,
            KeyOrder::Custom(c) => (c.compare)(a, b),
        }
    }

    /// `a < b` in this order.
    #[inline]
    pub fn lt(&self, a: &[u8], b: &[u8]) -> bool {
        self.compare(a, b) == Ordering::Less
    }

    /// `a <= b` in this order.
    #[inline]
    pub fn le(&self, a: &[u8], b: &[u8]) -> bool {
        self.compare(a, b) != Ordering::Greater
    }

    /// The order of internal keys: user key in this order, then trailer descending (newest
    /// first), as `crate::key::compare_internal` for bytewise order.
    #[inline]
    pub fn compare_internal(&self, a: &[u8], b: &[u8]) -> Ordering {
        match self.compare(user_key(a), user_key(b)) {
            Ordering::Equal => trailer(b).cmp(&trailer(a)),
            o => o,
        }
    }

    /// Whether user key `ukey` lies after a table whose largest key is `largest` (exclusive
    /// when it is a range end bound), as `crate::key::after_largest` in bytewise order.
    #[inline]
    pub fn after_largest(&self, ukey: &[u8], largest: &[u8]) -> bool {
        match self {
            KeyOrder::Bytewise => after_largest(ukey, largest),
            KeyOrder::Custom(_) => {
                let u = user_key(largest);
                match self.compare(ukey, u) {
                    Ordering::Greater => true,
                    Ordering::Equal => is_exclusive_bound(largest),
                    Ordering::Less => false,
                }
            }
        }
    }

    /// The larger of two user keys.
    pub fn max<'a>(&self, a: &'a [u8], b: &'a [u8]) -> &'a [u8] {
        if self.lt(a, b) {
            b
        } else {
            a
        }
    }

    /// The smaller of two user keys.
    pub fn min<'a>(&self, a: &'a [u8], b: &'a [u8]) -> &'a [u8] {
        if self.lt(b, a) {
            b
        } else {
            a
        }
    }
}

/// Orders are told apart by name (one name stands for one order, as in RocksDB).
impl PartialEq for KeyOrder {
    fn eq(&self, other: &KeyOrder) -> bool {
        self.name() == other.name()
    }
}

impl Eq for KeyOrder {}

impl fmt::Debug for KeyOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyOrder({})", self.name())
    }
}

/// A family's user-defined timestamps (RocksDB's comparator with a timestamp size,
/// `Options::set_comparator_with_ts`): every stored user key is a key followed by a
/// `size`-byte timestamp, and the family's [`KeyOrder`] orders the whole (the key, then the
/// timestamp newest first). Reads name a timestamp and see, per key, the newest version at or
/// below it.
pub struct UserTimestamps {
    size: usize,
    compare_ts: Box<CompareUserKeys>,
    compare_without_ts: Box<CompareWithoutTs>,
}

/// The order of keys with or without their timestamps (the `rocksdb` crate's
/// `CompareWithoutTsFn`): `(a, a has a timestamp, b, b has a timestamp)`.
pub type CompareWithoutTs = dyn Fn(&[u8], bool, &[u8], bool) -> Ordering + Send + Sync;

impl UserTimestamps {
    /// Timestamps of `size` bytes, ordered by `compare_ts` (older first); keys without them
    /// ordered by `compare_without_ts`.
    pub fn new(
        size: usize,
        compare_ts: Box<CompareUserKeys>,
        compare_without_ts: Box<CompareWithoutTs>,
    ) -> UserTimestamps {
        UserTimestamps { size, compare_ts, compare_without_ts }
    }

    /// Bytes of a timestamp.
    pub fn size(&self) -> usize {
        self.size
    }

    /// A stored key split into key and timestamp; `None` when it is too short to hold one.
    pub fn split<'a>(&self, stored: &'a [u8]) -> Option<(&'a [u8], &'a [u8])> {
        let at = stored.len().checked_sub(self.size)?;
        Some(stored.split_at(at))
    }

    /// The order of timestamps (older first).
    pub fn compare_ts(&self, a: &[u8], b: &[u8]) -> Ordering {
        (self.compare_ts)(a, b)
    }

    /// The order of keys without their timestamps.
    pub fn compare_keys(&self, a: &[u8], b: &[u8]) -> Ordering {
        if a == b {
            return Ordering::Equal;
        }
        (self.compare_without_ts)(a, false, b, false)
    }
}

impl fmt::Debug for UserTimestamps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UserTimestamps({} bytes)", self.size)
    }
}

/// The key orders a table may be written in that readers can open, found by the name the
/// table records (its `comparator` property; none: bytewise). Bytewise is always known; a DB
/// adds the order of each family it opens. Cloning shares the list. One name stands for one
/// order (RocksDB's rule): a second order of a known name is not added.
#[derive(Clone, Default)]
pub struct KnownOrders(Arc<parking_lot::RwLock<Vec<KeyOrder>>>);

impl KnownOrders {
    /// Bytewise and `order`.
    pub fn of(order: &KeyOrder) -> KnownOrders {
        let k = KnownOrders::default();
        k.add(order);
        k
    }

    /// Makes `order` known (nothing for bytewise or a known name).
    pub fn add(&self, order: &KeyOrder) {
        if order.is_bytewise() {
            return;
        }
        let mut v = self.0.write();
        if !v.iter().any(|o| o.name() == order.name()) {
            v.push(order.clone());
        }
    }

    /// The order named `name` (`None`: bytewise), if known.
    pub fn find(&self, name: Option<&str>) -> Option<KeyOrder> {
        match name {
            None => Some(KeyOrder::Bytewise),
            Some(n) if is_bytewise_name(n) => Some(KeyOrder::Bytewise),
            Some(n) => self.0.read().iter().find(|o| o.name() == n).cloned(),
        }
    }
}

impl fmt::Debug for KnownOrders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.read().iter().map(KeyOrder::name)).finish()
    }
}

/// Whether `name` names bytewise order (Strata's name or RocksDB's).
pub fn is_bytewise_name(name: &str) -> bool {
    name == BYTEWISE_NAME || name == ROCKSDB_BYTEWISE_NAME
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::make_internal_key;
    use crate::types::{SeqNo, ValueType};

    fn reverse() -> KeyOrder {
        KeyOrder::custom("reverse", Box::new(|a: &[u8], b: &[u8]| b.cmp(a)))
    }

    #[test]
    fn known_orders_find_by_name() {
        let k = KnownOrders::default();
        assert!(k.find(None).unwrap().is_bytewise());
        assert!(k.find(Some(ROCKSDB_BYTEWISE_NAME)).unwrap().is_bytewise());
        assert!(k.find(Some("reverse")).is_none());
        k.add(&reverse());
        k.add(&KeyOrder::custom("reverse", Box::new(|a: &[u8], b: &[u8]| a.cmp(b))));
        let r = k.find(Some("reverse")).unwrap();
        assert_eq!(r.compare(b"a", b"b"), Ordering::Greater, "the first order of a name stays");
        assert_eq!(format!("{k:?}"), "[\"reverse\"]");
        assert!(KnownOrders::of(&reverse()).find(Some("reverse")).is_some());
    }

    #[test]
    fn bytewise_names_give_bytewise_order() {
        for n in [BYTEWISE_NAME, ROCKSDB_BYTEWISE_NAME] {
            let o = KeyOrder::custom(n, Box::new(|_: &[u8], _: &[u8]| unreachable!()));
            assert!(o.is_bytewise());
            assert_eq!(o.compare(b"a", b"b"), Ordering::Less);
            assert!(o.matches_name(BYTEWISE_NAME) && o.matches_name(ROCKSDB_BYTEWISE_NAME));
        }
    }

    #[test]
    fn a_custom_order_decides_user_keys_and_trailers_stay_newest_first() {
        let o = reverse();
        assert_eq!(o.name(), "reverse");
        assert!(o.matches_name("reverse") && !o.matches_name(BYTEWISE_NAME));
        assert!(o.lt(b"b", b"a") && o.le(b"a", b"a") && !o.lt(b"a", b"b"));
        assert_eq!(o.max(b"a", b"b"), b"a");
        assert_eq!(o.min(b"a", b"b"), b"b");
        let old = make_internal_key(b"k", SeqNo(1), ValueType::Value);
        let new = make_internal_key(b"k", SeqNo(2), ValueType::Value);
        assert_eq!(o.compare_internal(&new, &old), Ordering::Less);
        let a = make_internal_key(b"a", SeqNo(1), ValueType::Value);
        let b = make_internal_key(b"b", SeqNo(9), ValueType::Value);
        assert_eq!(o.compare_internal(&b, &a), Ordering::Less);
        assert_eq!(KeyOrder::Bytewise.compare_internal(&a, &b), Ordering::Less);
        assert_eq!(format!("{o:?}"), "KeyOrder(reverse)");
    }
}
