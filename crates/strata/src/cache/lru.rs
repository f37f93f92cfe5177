//! One shard of the cache: a strict LRU over a slab of entries, indexed by an open-addressing
//! hash table. Not synchronised; the cache wraps each shard in a mutex.
//!
//! ```text
//! table: [u64]        (hash low 32 bits << 32) | slot, or EMPTY; linear probing, load <= 1/2
//! slab:  [Slot]       Used(entry) or Free(next free slot)
//! list:  head .. tail doubly linked through the entries' prev/next slot numbers; head = most
//!        recently used, tail = next victim
//!        [ high-priority pool | low-priority part ]   low_head = first entry of the low part
//! ```
//!
//! The high-priority pool (RocksDB's `high_pri_pool_ratio`) is a prefix of the list holding at
//! most `high_capacity` bytes: high-priority entries, and entries hit while cached, enter at
//! the head; other entries enter at the head of the low part, so an entry read once leaves
//! before the pool's. When the pool overflows, its last entries move to the low part. With a
//! pool of 0 bytes there is no pool and every entry enters at the head (plain LRU).
//!
//! Every operation is O(1) expected. Nothing allocates on a lookup; an insert allocates only
//! when the slab or table grows (both keep their size, so a warm cache no longer allocates). The
//! table stores the hash's low 32 bits next to the slot number: they give the entry's home
//! position (`tag & mask`, so the table can grow without reading the slab) and filter probe
//! candidates without touching the slab. Removal shifts later entries of the probe run back, so there are no tombstones.
//!
//! Keys are hashed once by the caller, which passes the hash in (its top bits chose the shard).

use std::mem;
use std::sync::Arc;

use super::Priority;

/// No slot (list ends, free-list end, and the slot half of an empty table word).
const NIL: u32 = u32::MAX;
/// An empty table word.
const EMPTY: u64 = u64::MAX;
/// Smallest table size.
const MIN_TABLE: usize = 16;

struct Entry<K, V> {
    key: K,
    value: Arc<V>,
    charge: usize,
    /// Low 32 bits of the key's hash.
    tag: u32,
    prev: u32,
    next: u32,
    /// In the high-priority pool (its charge counts in `high_usage`).
    in_high: bool,
}

enum Slot<K, V> {
    Used(Entry<K, V>),
    Free { next_free: u32 },
}

/// Entries removed while the shard was locked, returned so the caller drops them (and possibly
/// the last reference to a value) after unlocking.
pub(crate) type Removed<K, V> = Vec<(K, Arc<V>)>;

pub(crate) struct LruShard<K, V> {
    capacity: usize,
    /// Entries' charges plus `reserved`.
    usage: usize,
    /// Charge held without an entry ([`LruShard::reserve`]): counted in `usage`, never evicted.
    reserved: usize,
    len: usize,
    table: Vec<u64>,
    slab: Vec<Slot<K, V>>,
    free_head: u32,
    /// Most recently used.
    head: u32,
    /// Least recently used.
    tail: u32,
    /// Bytes the high-priority pool may hold (0: no pool).
    high_capacity: usize,
    high_usage: usize,
    /// First entry outside the pool (NIL: none).
    low_head: u32,
}

impl<K: Eq, V> LruShard<K, V> {
    #[cfg(test)]
    pub(crate) fn new(capacity: usize) -> Self {
        Self::with_pool(capacity, 0)
    }

    /// A shard of `capacity` bytes whose high-priority pool holds `high_capacity` of them.
    pub(crate) fn with_pool(capacity: usize, high_capacity: usize) -> Self {
        LruShard {
            high_capacity: high_capacity.min(capacity),
            high_usage: 0,
            low_head: NIL,
            capacity,
            usage: 0,
            reserved: 0,
            len: 0,
            table: vec![EMPTY; MIN_TABLE],
            slab: Vec::new(),
            free_head: NIL,
            head: NIL,
            tail: NIL,
        }
    }

    pub(crate) fn usage(&self) -> usize {
        self.usage
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Bytes of the shard's own structures: its hash table and entry slab.
    pub(crate) fn structure_bytes(&self) -> usize {
        self.table.capacity() * std::mem::size_of::<u64>()
            + self.slab.capacity() * std::mem::size_of::<Slot<K, V>>()
    }

    /// Holds `charge` bytes of the capacity without an entry, evicting entries (into
    /// `removed`) to make room. The reservation is never evicted; when it alone exceeds the
    /// capacity, the shard holds no charged entry until it is released.
    pub(crate) fn reserve(&mut self, charge: usize, removed: &mut Removed<K, V>) {
        self.reserved += charge;
        self.usage += charge;
        self.evict(removed);
    }

    /// Gives back `charge` bytes of an earlier [`LruShard::reserve`].
    pub(crate) fn release(&mut self, charge: usize) {
        let charge = charge.min(self.reserved);
        self.reserved -= charge;
        self.usage -= charge;
    }

    /// The value for `key`, made most recently used.
    pub(crate) fn lookup(&mut self, hash: u64, key: &K) -> Option<Arc<V>> {
        let (_, slot) = self.find(hash as u32, key).ok()?;
        self.unlink(slot);
        self.place(slot, true);
        Some(Arc::clone(&self.entry(slot).value))
    }

    /// Inserts or replaces `key`, then evicts from the LRU end until the charges fit. An entry
    /// whose charge alone exceeds the capacity is not cached, and any older entry for its key is
    /// removed (so a lookup never returns the stale value). Everything removed is returned.
    pub(crate) fn insert(
        &mut self,
        hash: u64,
        key: K,
        value: Arc<V>,
        charge: usize,
        priority: Priority,
        removed: &mut Removed<K, V>,
    ) {
        let tag = hash as u32;
        let high = priority == Priority::High;
        let pos = match self.find(tag, &key) {
            Ok((_, slot)) if charge > self.capacity => {
                removed.push(self.remove(slot));
                removed.push((key, value));
                return;
            }
            Ok((_, slot)) => {
                self.unlink(slot);
                let e = self.entry_mut(slot);
                let old_charge = mem::replace(&mut e.charge, charge);
                let old_value = mem::replace(&mut e.value, value);
                self.usage = self.usage - old_charge + charge;
                self.place(slot, high);
                removed.push((key, old_value));
                self.evict(removed);
                return;
            }
            Err(pos) => pos,
        };
        if charge > self.capacity || (self.slab.len() >= NIL as usize && self.free_head == NIL) {
            removed.push((key, value));
            return;
        }
        let entry = Entry { key, value, charge, tag, prev: NIL, next: NIL, in_high: false };
        let slot = if self.free_head != NIL {
            let slot = self.free_head;
            match mem::replace(&mut self.slab[slot as usize], Slot::Used(entry)) {
                Slot::Free { next_free } => self.free_head = next_free,
                Slot::Used(_) => unreachable!("free list holds a used slot"),
            }
            slot
        } else {
            self.slab.push(Slot::Used(entry));
            (self.slab.len() - 1) as u32
        };
        self.table[pos] = (u64::from(tag) << 32) | u64::from(slot);
        self.len += 1;
        self.usage += charge;
        self.place(slot, high);
        if self.len * 2 > self.table.len() {
            self.grow();
        }
        self.evict(removed);
    }

    /// Removes `key` if present.
    pub(crate) fn erase(&mut self, hash: u64, key: &K) -> Option<(K, Arc<V>)> {
        let (_, slot) = self.find(hash as u32, key).ok()?;
        Some(self.remove(slot))
    }

    /// `Ok((table position, slot))` of `key`, or `Err(first empty position)` of its probe run.
    fn find(&self, tag: u32, key: &K) -> Result<(usize, u32), usize> {
        let mask = self.table.len() - 1;
        let mut pos = tag as usize & mask;
        loop {
            let w = self.table[pos];
            if w == EMPTY {
                return Err(pos);
            }
            let slot = w as u32;
            if (w >> 32) as u32 == tag && self.entry(slot).key == *key {
                return Ok((pos, slot));
            }
            pos = (pos + 1) & mask;
        }
    }

    /// Overflow of the pool: its last entries become the low part's first.
    fn shrink_pool(&mut self) {
        while self.high_usage > self.high_capacity {
            let last =
                if self.low_head == NIL { self.tail } else { self.entry(self.low_head).prev };
            if last == NIL {
                break;
            }
            let e = self.entry_mut(last);
            e.in_high = false;
            let charge = e.charge;
            self.high_usage -= charge;
            self.low_head = last;
        }
    }

    /// Gives the shard `capacity` bytes, `high_capacity` of them the pool's (at most
    /// `capacity`), evicting least recently used entries (into `removed`) until it fits.
    pub(crate) fn set_capacity(
        &mut self,
        capacity: usize,
        high_capacity: usize,
        removed: &mut Removed<K, V>,
    ) {
        self.capacity = capacity;
        self.high_capacity = high_capacity.min(capacity);
        self.shrink_pool();
        self.evict(removed);
    }

    /// The charge of the entries whose values a reader holds besides the shard.
    pub(crate) fn pinned_usage(&self) -> usize {
        self.slab
            .iter()
            .map(|s| match s {
                Slot::Used(e) if Arc::strong_count(&e.value) > 1 => e.charge,
                _ => 0,
            })
            .sum()
    }

    fn evict(&mut self, removed: &mut Removed<K, V>) {
        while self.usage > self.capacity && self.tail != NIL {
            removed.push(self.remove(self.tail));
        }
    }

    /// Unlinks `slot` from list and table and frees it.
    fn remove(&mut self, slot: u32) -> (K, Arc<V>) {
        let tag = self.entry(slot).tag;
        let mask = self.table.len() - 1;
        // The entry is in the table: find its position by slot.
        let mut pos = tag as usize & mask;
        while self.table[pos] as u32 != slot {
            pos = (pos + 1) & mask;
        }
        self.delete_at(pos);
        self.unlink(slot);
        let freed = Slot::Free { next_free: self.free_head };
        self.free_head = slot;
        match mem::replace(&mut self.slab[slot as usize], freed) {
            Slot::Used(e) => {
                self.len -= 1;
                self.usage -= e.charge;
                (e.key, e.value)
            }
            Slot::Free { .. } => unreachable!("removing a free slot"),
        }
    }

    /// Empties table position `hole`, moving later words of its probe run back so that every
    /// word stays reachable from its home position.
    fn delete_at(&mut self, mut hole: usize) {
        let mask = self.table.len() - 1;
        let mut pos = (hole + 1) & mask;
        loop {
            let w = self.table[pos];
            if w == EMPTY {
                break;
            }
            let home = (w >> 32) as usize & mask;
            // `w` may fill the hole if the hole lies on its probe path, from home to `pos`.
            if pos.wrapping_sub(home) & mask >= pos.wrapping_sub(hole) & mask {
                self.table[hole] = w;
                hole = pos;
            }
            pos = (pos + 1) & mask;
        }
        self.table[hole] = EMPTY;
    }

    fn grow(&mut self) {
        let new_len = self.table.len() * 2;
        let old = mem::replace(&mut self.table, vec![EMPTY; new_len]);
        let mask = new_len - 1;
        for w in old.into_iter().filter(|&w| w != EMPTY) {
            let mut pos = (w >> 32) as usize & mask;
            while self.table[pos] != EMPTY {
                pos = (pos + 1) & mask;
            }
            self.table[pos] = w;
        }
    }

    #[inline]
    fn entry(&self, slot: u32) -> &Entry<K, V> {
        match &self.slab[slot as usize] {
            Slot::Used(e) => e,
            Slot::Free { .. } => unreachable!("slot {slot} is free"),
        }
    }

    #[inline]
    fn entry_mut(&mut self, slot: u32) -> &mut Entry<K, V> {
        match &mut self.slab[slot as usize] {
            Slot::Used(e) => e,
            Slot::Free { .. } => unreachable!("slot {slot} is free"),
        }
    }

    /// Links an unlinked entry in: at the head, in the pool, if `high` and there is a pool;
    /// else at the head of the low part.
    fn place(&mut self, slot: u32, high: bool) {
        if high && self.high_capacity > 0 {
            self.push_front(slot);
            let e = self.entry_mut(slot);
            e.in_high = true;
            let charge = e.charge;
            self.high_usage += charge;
            self.shrink_pool();
            return;
        }
        if self.low_head == NIL {
            self.push_back(slot);
        } else {
            self.insert_before(slot, self.low_head);
        }
        self.low_head = slot;
    }

    fn unlink(&mut self, slot: u32) {
        let (prev, next) = {
            let e = self.entry_mut(slot);
            let in_high = mem::replace(&mut e.in_high, false);
            let charge = e.charge;
            if in_high {
                self.high_usage -= charge;
            }
            let e = self.entry(slot);
            (e.prev, e.next)
        };
        if self.low_head == slot {
            self.low_head = next;
        }
        if prev == NIL {
            self.head = next;
        } else {
            self.entry_mut(prev).next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.entry_mut(next).prev = prev;
        }
    }

    fn push_front(&mut self, slot: u32) {
        let old_head = self.head;
        {
            let e = self.entry_mut(slot);
            e.prev = NIL;
            e.next = old_head;
        }
        if old_head == NIL {
            self.tail = slot;
        } else {
            self.entry_mut(old_head).prev = slot;
        }
        self.head = slot;
    }

    fn push_back(&mut self, slot: u32) {
        let old_tail = self.tail;
        {
            let e = self.entry_mut(slot);
            e.prev = old_tail;
            e.next = NIL;
        }
        if old_tail == NIL {
            self.head = slot;
        } else {
            self.entry_mut(old_tail).next = slot;
        }
        self.tail = slot;
    }

    /// Links `slot` just before the linked entry `at`.
    fn insert_before(&mut self, slot: u32, at: u32) {
        let prev = self.entry(at).prev;
        {
            let e = self.entry_mut(slot);
            e.prev = prev;
            e.next = at;
        }
        self.entry_mut(at).prev = slot;
        if prev == NIL {
            self.head = slot;
        } else {
            self.entry_mut(prev).next = slot;
        }
    }

    #[cfg(test)]
    pub(crate) fn capacity_for_test(&self) -> usize {
        self.capacity
    }

    /// Keys from most to least recently used (tests).
    #[cfg(test)]
    pub(crate) fn keys_mru_first(&self) -> Vec<&K> {
        let mut out = Vec::new();
        let mut s = self.head;
        while s != NIL {
            out.push(&self.entry(s).key);
            s = self.entry(s).next;
        }
        out
    }

    /// Checks every structural invariant (tests).
    #[cfg(test)]
    pub(crate) fn check(&self) {
        // List: consistent links, covers exactly the used slots.
        let mut count = 0;
        let mut charge = 0;
        let mut prev = NIL;
        let mut s = self.head;
        while s != NIL {
            let e = self.entry(s);
            assert_eq!(e.prev, prev);
            count += 1;
            charge += e.charge;
            prev = s;
            s = e.next;
        }
        assert_eq!(self.tail, prev);
        assert_eq!(count, self.len);
        // The pool is a prefix ending just before `low_head`, within its capacity.
        let mut s = self.head;
        let mut high = 0;
        while s != NIL && self.entry(s).in_high {
            high += self.entry(s).charge;
            s = self.entry(s).next;
        }
        assert_eq!(s, self.low_head, "low_head is the first entry outside the pool");
        while s != NIL {
            assert!(!self.entry(s).in_high, "pool entries form a prefix");
            s = self.entry(s).next;
        }
        assert_eq!(high, self.high_usage);
        assert!(self.high_usage <= self.high_capacity);
        assert_eq!(charge + self.reserved, self.usage);
        assert!(self.usage <= self.capacity.max(self.reserved));
        let used = self.slab.iter().filter(|s| matches!(s, Slot::Used(_))).count();
        assert_eq!(used, self.len);
        // Table: every used slot once, findable from its home.
        let words: Vec<u64> = self.table.iter().copied().filter(|&w| w != EMPTY).collect();
        assert_eq!(words.len(), self.len);
        assert!(self.len * 2 <= self.table.len());
        for w in words {
            let e = self.entry(w as u32);
            assert_eq!((w >> 32) as u32, e.tag);
            assert_eq!(self.find(e.tag, &e.key), Ok((self.position_of(w), w as u32)));
        }
    }

    #[cfg(test)]
    fn position_of(&self, w: u64) -> usize {
        self.table.iter().position(|&x| x == w).unwrap_or(usize::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn shard(cap: usize) -> LruShard<u64, u64> {
        LruShard::new(cap)
    }

    fn ins(s: &mut LruShard<u64, u64>, hash: u64, key: u64, charge: usize) -> Vec<u64> {
        let mut removed = Vec::new();
        s.insert(hash, key, Arc::new(key * 10), charge, Priority::Low, &mut removed);
        s.check();
        removed.into_iter().map(|(k, _)| k).collect()
    }

    #[test]
    fn colliding_hashes_and_backward_shift() {
        // All keys share a few hash values, so probe runs are long and wrap around the table.
        let mut s = shard(usize::MAX);
        let mut model = HashMap::new();
        let mut r = 1u64;
        for step in 0..20_000u64 {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            let key = r % 300;
            let hash = (key % 5) | 0xffff_fff0; // low bits near the table end: runs wrap
            match r % 3 {
                0 => {
                    let got = s.erase(hash, &key).map(|(k, v)| (k, *v));
                    assert_eq!(got, model.remove(&key).map(|v| (key, v)));
                }
                _ => {
                    let mut removed = Vec::new();
                    s.insert(hash, key, Arc::new(step), 0, Priority::Low, &mut removed);
                    model.insert(key, step);
                }
            }
            if step % 97 == 0 {
                s.check();
                for k in 0..300 {
                    let h = (k % 5) | 0xffff_fff0;
                    assert_eq!(s.lookup(h, &k).map(|v| *v), model.get(&k).copied());
                }
            }
        }
        s.check();
        assert_eq!(s.len(), model.len());
    }

    #[test]
    fn lru_order_and_eviction() {
        let mut s = shard(3);
        for k in 1..=3 {
            assert!(ins(&mut s, k, k, 1).is_empty());
        }
        assert_eq!(s.keys_mru_first(), [&3, &2, &1]);
        assert!(s.lookup(1, &1).is_some());
        assert_eq!(s.keys_mru_first(), [&1, &3, &2]);
        assert_eq!(ins(&mut s, 4, 4, 1), [2]);
        assert_eq!(s.keys_mru_first(), [&4, &1, &3]);
        // A charge-2 entry evicts the two least recently used.
        assert_eq!(ins(&mut s, 5, 5, 2), [3, 1]);
        assert_eq!(s.keys_mru_first(), [&5, &4]);
        // Too large: not cached, existing entries untouched.
        assert_eq!(ins(&mut s, 6, 6, 4), [6]);
        assert_eq!(s.keys_mru_first(), [&5, &4]);
        // Too large for an existing key: the stale entry goes too.
        assert_eq!(ins(&mut s, 4, 4, 4), [4, 4]);
        assert_eq!(s.keys_mru_first(), [&5]);
        assert_eq!(s.usage(), 2);
    }

    #[test]
    fn replace_updates_charge_and_recency() {
        let mut s = shard(10);
        ins(&mut s, 1, 1, 3);
        ins(&mut s, 2, 2, 3);
        let mut removed = Vec::new();
        s.insert(1, 1, Arc::new(99), 5, Priority::Low, &mut removed);
        s.check();
        assert_eq!(removed.len(), 1);
        assert_eq!(*removed[0].1, 10, "old value returned for dropping");
        assert_eq!(s.usage(), 8);
        assert_eq!(s.keys_mru_first(), [&1, &2]);
        assert_eq!(s.lookup(1, &1).map(|v| *v), Some(99));
        // Growing the charge past capacity evicts others, not itself.
        let mut removed = Vec::new();
        s.insert(1, 1, Arc::new(7), 9, Priority::Low, &mut removed);
        s.check();
        assert_eq!(removed.iter().map(|(k, _)| *k).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(s.keys_mru_first(), [&1]);
        assert_eq!(s.usage(), 9);
    }

    #[test]
    fn zero_capacity_caches_nothing_charged() {
        let mut s = shard(0);
        assert_eq!(ins(&mut s, 1, 1, 1), [1]);
        assert_eq!(s.len(), 0);
        // Zero-charge entries fit.
        assert!(ins(&mut s, 2, 2, 0).is_empty());
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn high_priority_pool_keeps_index_blocks_and_hit_entries() {
        // 10 bytes, a pool of 4.
        let mut s: LruShard<u64, u64> = LruShard::with_pool(10, 4);
        let put = |s: &mut LruShard<u64, u64>, k: u64, p: Priority| {
            let mut removed = Vec::new();
            s.insert(k, k, Arc::new(k), 1, p, &mut removed);
            s.check();
            removed.into_iter().map(|(k, _)| k).collect::<Vec<_>>()
        };
        put(&mut s, 1, Priority::High);
        put(&mut s, 2, Priority::High);
        for k in 10..18 {
            put(&mut s, k, Priority::Low);
        }
        // Full: the next low entries evict low entries only, oldest first.
        assert_eq!(put(&mut s, 18, Priority::Low), [10]);
        assert_eq!(put(&mut s, 19, Priority::Low), [11]);
        assert!(s.lookup(1, &1).is_some() && s.lookup(2, &2).is_some());
        // A hit promotes a low entry into the pool; it then outlives older low entries.
        assert!(s.lookup(12, &12).is_some());
        assert_eq!(s.keys_mru_first()[0], &12);
        for k in 20..26 {
            put(&mut s, k, Priority::Low);
        }
        assert!(s.lookup(12, &12).is_some(), "pool entry survived a flood of low entries");
        assert!(s.lookup(1, &1).is_some() && s.lookup(2, &2).is_some());
        // Pool overflow demotes its oldest to the low part (which then leaves first).
        for k in 30..34 {
            put(&mut s, k, Priority::High);
        }
        s.check();
        assert!(s.high_usage <= 4);
    }

    #[test]
    fn without_a_pool_priority_changes_nothing() {
        let mut s: LruShard<u64, u64> = LruShard::new(3);
        let mut removed = Vec::new();
        s.insert(1, 1, Arc::new(1), 1, Priority::High, &mut removed);
        s.insert(2, 2, Arc::new(2), 1, Priority::Low, &mut removed);
        s.insert(3, 3, Arc::new(3), 1, Priority::High, &mut removed);
        s.check();
        assert_eq!(s.keys_mru_first(), [&3, &2, &1]);
    }
}
