//! An arena-backed skiplist of internal keys: one writer at a time, any number of lock-free
//! readers.
//!
//! ## Node layout
//!
//! Every entry is one arena allocation; key and value are copied into it once and never move:
//!
//! ```text
//!   link[h-1] .. link[1] link[0] | key_len: u32 | value_len: u32 | key bytes | value bytes
//!   ^ allocation start            ^ node pointer (8-aligned)
//! ```
//!
//! `link[i]` is an `AtomicPtr` to the next node at level `i`, and a node of height `h` has
//! exactly `h` links. They sit *below* the node pointer so that the key is at a fixed offset
//! whatever the height, and no height needs to be stored: a node reached through a level-`i` link
//! has at least `i + 1` links, which is all a search needs (a [`Node`] carries that lower bound).
//! The head node has [`MAX_HEIGHT`] links and an empty key it never compares.
//!
//! ## Publication protocol
//!
//! The writer (holding the writer mutex) allocates and fully initialises a node (header, key,
//! value, and its own links pointing at its successors), then links it in level by level, from 0
//! up, each with a `Release` store into the predecessor's link. Readers load links with `Acquire`,
//! so a node pointer they see carries the happens-before edge for every byte the writer wrote into
//! that node. Nodes are never unlinked or modified after publication (except their links, which
//! only the writer stores, atomically), and the arena frees nothing while the list lives, so a
//! reader can hold a node for as long as it holds the list. A reader may observe a node at level 0
//! before its higher levels, or a stale list height: both only make its search take a lower road.
//! A search answers with the nodes it actually compared: re-reading a link after the comparison
//! could return a node inserted meanwhile that is smaller than the target.
//!
//! ## Order and duplicates
//!
//! Keys are ordered by [`compare_internal`]. Inserting a key equal to one present keeps both; the
//! newer lands first (it is linked before the existing equal keys). The DB gives every entry a
//! unique sequence number, so this does not happen there.
//!
//! ## Sequential inserts
//!
//! The writer remembers, per level, where its last insert was linked (the "splice"). When the
//! next key is larger than the last one, as it is for bulk loads and per-batch writes of sorted
//! keys, each level's search starts from the splice when that is further right than the search
//! position, so appending costs a few comparisons instead of a full descent.

use std::cmp::Ordering;
use std::marker::PhantomData;
use std::ptr::{self, NonNull};
use std::sync::atomic::Ordering as MemOrder;

use super::sync::{AtomicPtr, AtomicUsize, Mutex, MutexGuard};

use super::arena::{Arena, ALIGN};
use crate::key::compare_internal;

/// Maximum node height; with branching 4 a list stays logarithmic up to ~4^12 = 16M entries.
pub(crate) const MAX_HEIGHT: usize = 12;

/// log2 of the branching factor: a node reaches level `i + 1` with probability 1/4 given `i`.
const BRANCHING_BITS: u32 = 2;

/// What the node pointer points at; key and value bytes follow it.
#[derive(Clone, Copy)]
#[repr(C, align(8))]
pub(crate) struct NodeHeader {
    key_len: u32,
    value_len: u32,
}

/// Size of one link.
const LINK_LEN: usize = std::mem::size_of::<Link>();

/// A level's forward pointer: the next node, or null.
type Link = AtomicPtr<NodeHeader>;

/// Node pointer (address of its header).
pub(crate) type NodePtr = NonNull<NodeHeader>;

// The arena's alignment suffices for links and header, and links tile down to the header.
const _: () = assert!(
    ALIGN >= std::mem::align_of::<NodeHeader>()
        && ALIGN >= std::mem::align_of::<Link>()
        && std::mem::size_of::<NodeHeader>().is_multiple_of(ALIGN)
        && LINK_LEN.is_multiple_of(std::mem::align_of::<NodeHeader>())
);

/// A published node of a skiplist that lives for `'a`.
///
/// Invariant (what makes the accessors safe): `ptr` is the node pointer of a node in the arena of
/// a [`SkipList`] borrowed for `'a`; the node has at least `links` links; its header, key, value
/// and links were initialised by the writer before the `Release` store that published it, and the
/// thread holding this `Node` acquired that store (or is the writer itself). Key and value bytes
/// are never written again.
#[derive(Clone, Copy)]
pub(crate) struct Node<'a> {
    ptr: NodePtr,
    links: usize,
    _list: PhantomData<&'a SkipList>,
}

impl<'a> Node<'a> {
    /// The level-`level` link. Panics if the node is not known to have that level (a bug).
    #[inline]
    fn link(self, level: usize) -> &'a Link {
        assert!(level < self.links, "skiplist: level {level} of a node with {} links", self.links);
        // SAFETY: by the type invariant the node has more than `level` links, stored right below
        // the header in the same arena allocation (aligned: the header is 8-aligned and links are
        // 8 bytes), and initialised (to a valid pointer value) before publication. The arena keeps
        // them alive for `'a`, and they are only ever accessed atomically, so a shared reference
        // is fine.
        unsafe { &*self.ptr.as_ptr().cast::<Link>().sub(level + 1) }
    }

    /// The next node at `level`, if any.
    #[inline]
    pub(crate) fn next(self, level: usize) -> Option<Node<'a>> {
        let p = self.link(level).load(MemOrder::Acquire);
        // SAFETY: a level-`level` link only ever holds null or a node of height > `level`, stored
        // with `Release` after that node was initialised; the `Acquire` load above synchronises
        // with that store. Both nodes belong to the same list.
        NonNull::new(p).map(|ptr| unsafe { Node::from_raw(ptr, level + 1) })
    }

    /// Builds a node handle.
    ///
    /// # Safety
    /// `ptr` must satisfy the type invariant for `'a` with `links` links.
    #[inline]
    pub(crate) unsafe fn from_raw(ptr: NodePtr, links: usize) -> Node<'a> {
        Node { ptr, links, _list: PhantomData }
    }

    /// The node pointer, for holders that cannot keep the lifetime (the memtable iterator).
    #[inline]
    pub(crate) fn as_raw(self) -> NodePtr {
        self.ptr
    }

    #[inline]
    fn lens(self) -> (usize, usize) {
        // SAFETY: the header is initialised (type invariant), aligned, and never written after
        // publication.
        let h = unsafe { self.ptr.as_ptr().read() };
        (h.key_len as usize, h.value_len as usize)
    }

    /// Address of the first byte after the header.
    #[inline]
    fn data(self) -> *const u8 {
        // SAFETY: the key (possibly empty) follows the header within the node's allocation, so
        // the address one header past the node pointer is in bounds (or one past the end).
        unsafe { self.ptr.as_ptr().add(1).cast::<u8>() }
    }

    /// The key (an internal key; empty for the head).
    #[inline]
    pub(crate) fn key(self) -> &'a [u8] {
        let (klen, _) = self.lens();
        // SAFETY: `klen` initialised bytes follow the header in the node's allocation (type
        // invariant); they are immutable after publication and live for `'a`.
        unsafe { std::slice::from_raw_parts(self.data(), klen) }
    }

    /// The value.
    #[inline]
    pub(crate) fn value(self) -> &'a [u8] {
        let (klen, vlen) = self.lens();
        // SAFETY: as for `key`; the value's `vlen` bytes follow the key.
        unsafe { std::slice::from_raw_parts(self.data().add(klen), vlen) }
    }
}

/// State only the writer touches, behind the writer mutex.
struct Writer {
    arena: Arena,
    rng: u64,
    /// The last inserted node, if any.
    last: Option<NodePtr>,
    /// `splice[i]`: a node with more than `i` links (or the head) whose key is `<=` the key of
    /// `last`; i.e. a valid starting point at level `i` for any key greater than `last`'s.
    splice: [NodePtr; MAX_HEIGHT],
}

// SAFETY: the raw pointers point into `arena`, which moves with the writer; they are used only by
// the thread holding the writer mutex.
unsafe impl Send for Writer {}

impl Writer {
    /// A height in 1..=MAX_HEIGHT, each extra level with probability 1/4.
    fn random_height(&mut self) -> usize {
        // splitmix64: well-mixed low bits from a counter.
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        1 + ((z.trailing_zeros() / BRANCHING_BITS) as usize).min(MAX_HEIGHT - 1)
    }
}

/// A sorted set of (internal key, value) entries; see the module doc.
pub(crate) struct SkipList {
    head: NodePtr,
    /// Current height of the list (1..=MAX_HEIGHT); only the writer stores it.
    height: AtomicUsize,
    /// Arena usage, republished by the writer after each insert so readers need no lock.
    memory_usage: AtomicUsize,
    writer: Mutex<Writer>,
}

// SAFETY: shared state is reached only through atomics (links, height, memory_usage) or the
// writer mutex; node bytes are written only before publication (Release/Acquire, module doc) and
// are immutable afterwards; `head` points into the arena owned by `writer`, which is freed only
// when the list drops, after every borrow has ended.
unsafe impl Send for SkipList {}
// SAFETY: as for Send.
unsafe impl Sync for SkipList {}

impl SkipList {
    pub(crate) fn new() -> Self {
        let mut arena = Arena::new();
        let head = alloc_node(&mut arena, MAX_HEIGHT, &[], &[], &[]);
        SkipList {
            head,
            height: AtomicUsize::new(1),
            memory_usage: AtomicUsize::new(arena.memory_usage()),
            writer: Mutex::new(Writer {
                arena,
                rng: 0x5eed_0f57_a7a0_0001,
                last: None,
                splice: [head; MAX_HEIGHT],
            }),
        }
    }

    #[inline]
    fn head(&self) -> Node<'_> {
        // SAFETY: the head was initialised in `new` before `self` could be shared, has
        // MAX_HEIGHT links and lives in the arena as long as `self`.
        unsafe { Node::from_raw(self.head, MAX_HEIGHT) }
    }

    #[inline]
    fn is_head(&self, n: Node<'_>) -> bool {
        n.ptr == self.head
    }

    /// Arena bytes in use (see the arena's doc). One atomic load.
    pub(crate) fn memory_usage(&self) -> usize {
        self.memory_usage.load(MemOrder::Relaxed)
    }

    /// Walks down from the top level, moving right while the next key satisfies `go_right`
    /// (which must hold for a prefix of the list). Returns the last node reached at level 0 (the
    /// head when `go_right` holds for no key) and the node after it that failed `go_right`
    /// (`None` at the end of the list).
    ///
    /// The pair is what the list looked like at one instant. Callers must use the returned
    /// successor rather than load the link again: a node inserted meanwhile between the two
    /// could still satisfy `go_right`.
    #[inline]
    fn descend(&self, mut go_right: impl FnMut(&[u8]) -> bool) -> (Node<'_>, Option<Node<'_>>) {
        let mut x = self.head();
        let mut bound = None;
        let mut level = self.height.load(MemOrder::Relaxed) - 1;
        loop {
            let (last, stop) = walk(x, level, &mut go_right, &mut bound);
            if level == 0 {
                return (last, stop);
            }
            x = last;
            level -= 1;
        }
    }

    /// `None` for the head.
    #[inline]
    fn non_head<'a>(&self, n: Node<'a>) -> Option<Node<'a>> {
        (!self.is_head(n)).then_some(n)
    }

    /// The first node.
    pub(crate) fn first(&self) -> Option<Node<'_>> {
        self.head().next(0)
    }

    /// The last node.
    pub(crate) fn last(&self) -> Option<Node<'_>> {
        self.non_head(self.descend(|_| true).0)
    }

    /// The first node with key `>= key`.
    pub(crate) fn seek_ge(&self, key: &[u8]) -> Option<Node<'_>> {
        self.descend(|k| compare_internal(k, key) == Ordering::Less).1
    }

    /// The last node with key `< key`.
    pub(crate) fn seek_lt(&self, key: &[u8]) -> Option<Node<'_>> {
        self.non_head(self.descend(|k| compare_internal(k, key) == Ordering::Less).0)
    }

    /// The last node with key `<= key`.
    pub(crate) fn seek_le(&self, key: &[u8]) -> Option<Node<'_>> {
        self.non_head(self.descend(|k| compare_internal(k, key) != Ordering::Greater).0)
    }

    /// Takes the writer mutex (readers are never blocked by it). Holding the guard lets a
    /// caller insert several entries, and update its own statistics, under one acquisition.
    pub(crate) fn lock_writer(&self) -> ListWriter<'_> {
        ListWriter { list: self, w: self.writer.lock() }
    }

    /// Inserts one entry; see [`ListWriter::insert`].
    #[cfg(test)]
    pub(crate) fn insert(&self, key_prefix: &[u8], key_suffix: &[u8], value: &[u8]) {
        self.lock_writer().insert(key_prefix, key_suffix, value);
    }
}

/// The right to insert: holds the list's writer mutex.
pub(crate) struct ListWriter<'a> {
    list: &'a SkipList,
    w: MutexGuard<'a, Writer>,
}

impl ListWriter<'_> {
    /// Inserts the entry whose key is `key_prefix | key_suffix`, copying key and value into the
    /// arena once. Equal keys are kept (module doc).
    ///
    /// Panics if the key or the value is longer than `u32::MAX` bytes (the DB rejects such
    /// writes before they reach the memtable).
    pub(crate) fn insert(&mut self, key_prefix: &[u8], key_suffix: &[u8], value: &[u8]) {
        let list = self.list;
        let w = &mut *self.w;
        let height = w.random_height();
        let new_ptr = alloc_node(&mut w.arena, height, key_prefix, key_suffix, value);
        // SAFETY: `alloc_node` initialised the node completely on this thread; it has `height`
        // links and lives in this list's arena.
        let new = unsafe { Node::from_raw(new_ptr, height) };
        let key = new.key();

        let hinted = w.last.is_some_and(|l| {
            // SAFETY: `last` was linked into this list by an earlier insert under this mutex.
            let last = unsafe { Node::from_raw(l, 1) };
            compare_internal(key, last.key()) == Ordering::Greater
        });

        let mut go_right = |k: &[u8]| compare_internal(k, key) == Ordering::Less;
        let mut bound = None;
        let list_height = list.height.load(MemOrder::Relaxed);
        let mut prev = [list.head(); MAX_HEIGHT];
        let mut x = list.head();
        for level in (0..list_height).rev() {
            if hinted {
                // SAFETY: `splice[level]` is the head or a node linked into this list by an
                // earlier insert under this mutex with more than `level` links (Writer doc).
                let s = unsafe { Node::from_raw(w.splice[level], level + 1) };
                // Start from the splice when it is right of `x` (both are < key).
                if !list.is_head(s)
                    && s.ptr != x.ptr
                    && (list.is_head(x) || compare_internal(s.key(), x.key()) == Ordering::Greater)
                {
                    x = s;
                }
            }
            x = walk(x, level, &mut go_right, &mut bound).0;
            prev[level] = x;
        }

        if height > list_height {
            // Readers that see the new height before the head links find null there and move
            // down: harmless.
            list.height.store(height, MemOrder::Relaxed);
        }
        for (level, p) in prev.iter().enumerate().take(height) {
            // Only this thread stores links, so a relaxed load reads the current successor.
            let succ = p.link(level).load(MemOrder::Relaxed);
            new.link(level).store(succ, MemOrder::Relaxed);
            // Publication: everything written to `new` happens-before this store.
            p.link(level).store(new_ptr.as_ptr(), MemOrder::Release);
        }

        for (level, s) in w.splice.iter_mut().enumerate() {
            *s = if level < height { new_ptr } else { prev[level].ptr };
        }
        w.last = Some(new_ptr);
        list.memory_usage.store(w.arena.memory_usage(), MemOrder::Relaxed);
    }
}

/// Moves right from `x` at `level` while the next key satisfies `go_right`. Returns the last
/// node that did (or `x`) and the successor it had when the walk stopped (`None` at the end of
/// the level). `bound`, when set, is a node known to fail `go_right` (the one that stopped the
/// walk a level up): meeting it again ends the walk without comparing keys. On return it holds
/// the node that stopped this walk, if any.
#[inline(always)]
fn walk<'a>(
    mut x: Node<'a>,
    level: usize,
    go_right: &mut impl FnMut(&[u8]) -> bool,
    bound: &mut Option<NodePtr>,
) -> (Node<'a>, Option<Node<'a>>) {
    loop {
        let Some(n) = x.next(level) else { return (x, None) };
        if *bound == Some(n.ptr) {
            return (x, Some(n));
        }
        // While `n`'s key is compared, start loading the node after it, which is the next one
        // compared if the walk goes on.
        prefetch(n.link(level).load(MemOrder::Relaxed));
        if go_right(n.key()) {
            x = n;
        } else {
            *bound = Some(n.ptr);
            return (x, Some(n));
        }
    }
}

/// A cache hint: starts loading the line at `p` (a node header, possibly null).
#[inline(always)]
fn prefetch(p: *const NodeHeader) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it never faults or reads into the program's state,
    // whatever the address (null included). SSE is part of the x86-64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Allocates and initialises a node of `height` links (all null) holding
/// `key_prefix | key_suffix` and `value`; returns its node pointer. See the module doc for the
/// layout.
fn alloc_node(
    arena: &mut Arena,
    height: usize,
    key_prefix: &[u8],
    key_suffix: &[u8],
    value: &[u8],
) -> NodePtr {
    let klen = key_prefix.len() + key_suffix.len();
    let (Ok(key_len), Ok(value_len)) = (u32::try_from(klen), u32::try_from(value.len())) else {
        panic!("memtable entry too large: key {klen} bytes, value {} bytes", value.len());
    };
    let size = height * LINK_LEN + std::mem::size_of::<NodeHeader>() + klen + value.len();
    // The arena returns ALIGN-aligned memory, enough for links and header (checked above).
    #[allow(clippy::cast_ptr_alignment)]
    let links = arena.allocate(size).as_ptr().cast::<Link>();
    // SAFETY: `links` is aligned and valid for `size` bytes, owned by nobody else yet: `height`
    // links, then the header, then `klen + value.len()` bytes, all within `size`. The sources are
    // caller slices, which cannot overlap fresh arena memory.
    unsafe {
        for i in 0..height {
            links.add(i).write(AtomicPtr::new(ptr::null_mut()));
        }
        let node = links.add(height).cast::<NodeHeader>();
        node.write(NodeHeader { key_len, value_len });
        let mut dst = node.add(1).cast::<u8>();
        for src in [key_prefix, key_suffix, value] {
            ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len());
            dst = dst.add(src.len());
        }
        NonNull::new_unchecked(node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::make_internal_key;
    use crate::types::{SeqNo, ValueType};

    /// Loop counts: full natively, small under Miri.
    fn scaled(n: u64, miri: u64) -> u64 {
        if cfg!(miri) {
            miri
        } else {
            n
        }
    }

    fn ik(user: &[u8], seq: u64) -> Vec<u8> {
        make_internal_key(user, SeqNo(seq), ValueType::Value)
    }

    fn collect(list: &SkipList) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        let mut n = list.first();
        while let Some(x) = n {
            out.push((x.key().to_vec(), x.value().to_vec()));
            n = x.next(0);
        }
        out
    }

    /// Checks the level structure: every level is sorted and a sublist of the level below.
    fn check_levels(list: &SkipList) {
        let h = list.height.load(MemOrder::Relaxed);
        let mut below: Vec<NodePtr> = Vec::new();
        for level in 0..h {
            let mut here = Vec::new();
            let mut x = list.head();
            while let Some(n) = x.next(level) {
                if !list.is_head(x) {
                    assert_eq!(compare_internal(x.key(), n.key()), Ordering::Less);
                }
                here.push(n.ptr);
                x = n;
            }
            if level > 0 {
                let mut it = below.iter();
                for p in &here {
                    assert!(it.any(|q| q == p), "level {level} is not a sublist");
                }
            }
            below = here;
        }
        for level in h..MAX_HEIGHT {
            assert!(list.head().next(level).is_none());
        }
    }

    #[test]
    fn empty_list() {
        let l = SkipList::new();
        assert!(l.first().is_none());
        assert!(l.last().is_none());
        assert!(l.seek_ge(&ik(b"a", 1)).is_none());
        assert!(l.seek_lt(&ik(b"a", 1)).is_none());
        assert!(l.seek_le(&ik(b"a", 1)).is_none());
    }

    #[test]
    fn random_inserts_are_sorted_and_searchable() {
        let l = SkipList::new();
        let mut model = Vec::new();
        let mut r = 7u64;
        for i in 0..scaled(3000, 200) {
            r = r.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let user = format!("k{:05}", (r >> 33) % 5000);
            let k = ik(user.as_bytes(), i + 1);
            let v = format!("v{i}").into_bytes();
            let (pre, suf) = k.split_at(k.len() - 8);
            l.insert(pre, suf, &v);
            model.push((k, v));
        }
        model.sort_by(|a, b| compare_internal(&a.0, &b.0));
        assert_eq!(collect(&l), model);
        check_levels(&l);
        assert_eq!(l.last().map(|n| n.key().to_vec()), model.last().map(|e| e.0.clone()));
        for (i, (k, _)) in model.iter().enumerate().step_by(7) {
            assert_eq!(l.seek_ge(k).map(|n| n.key()), Some(k.as_slice()));
            assert_eq!(l.seek_le(k).map(|n| n.key()), Some(k.as_slice()));
            let lt = l.seek_lt(k).map(|n| n.key().to_vec());
            assert_eq!(lt, i.checked_sub(1).map(|j| model[j].0.clone()));
        }
    }

    #[test]
    fn sequential_hint_keeps_structure() {
        // Ascending runs interleaved with jumps back exercise the splice and its fallback.
        let l = SkipList::new();
        let mut model = Vec::new();
        let mut seq = 0;
        for run in 0..scaled(40, 6) {
            let start = (run * 7919) % 1000;
            for j in 0..scaled(60, 12) {
                seq += 1;
                let k = ik(format!("{:06}", start * 100 + j).as_bytes(), seq);
                l.insert(&k, &[], b"v");
                model.push((k, b"v".to_vec()));
            }
        }
        model.sort_by(|a, b| compare_internal(&a.0, &b.0));
        assert_eq!(collect(&l), model);
        check_levels(&l);
    }

    #[test]
    fn duplicate_keys_are_both_kept() {
        let l = SkipList::new();
        let k = ik(b"dup", 5);
        l.insert(&k, &[], b"first");
        l.insert(&k, &[], b"second");
        let all = collect(&l);
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].1, b"second");
        assert_eq!(all[1].1, b"first");
    }

    #[test]
    fn heights_follow_branching_four() {
        let mut w = Writer {
            arena: Arena::new(),
            rng: 1,
            last: None,
            splice: [NonNull::dangling(); MAX_HEIGHT],
        };
        let mut counts = [0usize; MAX_HEIGHT + 1];
        let n = scaled(400_000, 20_000) as usize;
        for _ in 0..n {
            counts[w.random_height()] += 1;
        }
        assert_eq!(counts[0], 0);
        // P(height = 1) = 3/4, P(height = 2) = 3/16.
        let tol = if cfg!(miri) { 0.03 } else { 0.01 };
        assert!((counts[1] as f64 / n as f64 - 0.75).abs() < tol);
        assert!((counts[2] as f64 / n as f64 - 0.1875).abs() < tol);
        assert!(counts.iter().sum::<usize>() == n);
    }
}
