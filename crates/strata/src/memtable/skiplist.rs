//! An arena-backed skiplist of internal keys: any number of concurrent writers, linking with
//! compare-and-swap, and any number of lock-free readers.
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
//! ## Insertion and publication protocol
//!
//! A writer reserves the node's bytes in the arena (a pointer bump under the arena's short
//! lock, the only lock an insert takes) and initialises them on its own thread: header, key,
//! value. It then searches, without any lock, for the node's predecessor and successor at every
//! level, and links the node in level by level, from 0 up. At each level it first stores the
//! successor into the node's own link (nobody else can reach that link yet: the node is not
//! linked at that level), then swaps the predecessor's link from that successor to the node
//! with a `Release` compare-and-swap. A failed swap means another writer linked a node after
//! the predecessor meanwhile: the writer walks right from the predecessor at that level (every
//! node it meets is complete, see below) to the new position and tries again. Level 0 first
//! means a node is in the list before any search can reach it from above; a higher level's
//! search that misses it (not linked there yet) only takes a lower road.
//!
//! Readers (and writers' searches) load links with `Acquire`, so a node pointer they see carries
//! the happens-before edge of the `Release` swap that published it, and with it every byte the
//! node's writer wrote. Nodes are never unlinked or modified after publication (except their
//! links, only ever changed by a swap that publishes a newer node), and the arena frees nothing
//! while the list lives, so a thread can hold a node for as long as it holds the list. A reader
//! may observe a node at level 0 before its higher levels, or a stale list height: both only
//! make its search take a lower road. A search answers with the nodes it actually compared:
//! re-reading a link after the comparison could return a node inserted meanwhile that is smaller
//! than the target.
//!
//! The list height only grows (an atomic maximum); a reader that sees a height before the head's
//! link at that level finds null there and moves down.
//!
//! ## Order and duplicates
//!
//! Keys are ordered by the list's [`KeyOrder`] (internal keys: user key in that order, newest
//! first). Inserting a key equal to one present keeps both; the
//! newer lands first (it is linked before the existing equal keys). The DB gives every entry a
//! unique sequence number, so this does not happen there.
//!
//! ## Sequential inserts
//!
//! A [`Splice`] remembers, per level, where an insert was linked. When the next key is larger
//! than the last one, as it is for bulk loads and per-batch writes of sorted keys, each level's
//! search starts from the splice when that is further right than the search position, so
//! appending costs no descent. An append at the end of the list (where, at each of the node's
//! levels, the splice's node is the last: a bulk load's usual case) is linked right after the
//! splice's nodes with no search at all: one key comparison (that it comes after the last
//! insert) and a load per level of the node, however tall the list. Elsewhere, the splice's
//! nodes being in list order from the top level down, a search still standing on the splice's
//! node of the level above takes the next level's without comparing keys. A splice stays a
//! valid start for any larger key whatever other writers do (nodes are never removed), so the
//! list keeps one shared splice, taken by whichever writer finds it free (`try_lock`), and a
//! writer that finds it taken uses a fresh one.
//!
//! ## Batches
//!
//! A search for where a node goes is a chain of dependent loads, most of them cache misses in
//! a large list: inserted one after another, a batch's entries wait for one miss at a time.
//! Nodes already written are linked [`LINK_BATCH`] at a time ([`SkipList::link_batch`],
//! below for where the batches come from): their searches advance in turns, one
//! node each, and each turn starts loading the node a search compares next, so the misses of
//! up to [`LINK_BATCH`] searches are in flight at once. Then the nodes are published one by
//! one as above. A node of the batch linked between another's predecessor and successor
//! makes that one's swap fail and walk on, as any other writer's node would. An ascending
//! batch after the splice is linked one node at a time through the splice instead, which
//! costs it a few comparisons of nodes in cache each.
//!
//! ## Batches across writes
//!
//! Most writes carry one entry, and the DB's writes come one after another, so a batch alone
//! would seldom overlap anything. The memtable's list ([`SkipList::batched`]) carries the
//! batch over from write to write instead: [`SkipList::add`] writes the node at once and
//! pushes it on the pending vector, as below, and a writer that then finds [`LINK_BATCH`]
//! pending links them as a batch ([`SkipList::link_due`]; the DB's writers call it once their
//! write is published, so that later writes do not wait for the link to be published). Every
//! read finds every entry added before it began, as if each were linked by its writer: an
//! iterator links what is pending first (`settle`, below), and a point read
//! ([`SkipList::visit_from`]) merges the pending nodes into its walk instead, when they are
//! few and no link is under way (else it settles). A writer links only when no one else is
//! linking (a `try_lock`), and never waits for another writer here; its nodes are then linked
//! by the next writer that finds a batch pending, or by the next read that settles. A link
//! takes the nodes pending when it starts and no more, so a read under a stream of writes
//! links a few nodes, not the writers' share.
//!
//! ## Deferred linking (the vector memtable)
//!
//! A list made with [`SkipList::deferred`] takes entries by [`SkipList::add`] unlinked: the node is
//! reserved and written as above, and its pointer pushed on a pending vector, with no search
//! and no link (RocksDB's `VectorRepFactory`, for bulk loads that read nothing back). Before
//! anything reads the list, [`SkipList::settle`] sorts the pending nodes and links them in key
//! order, each through the splice, so linking costs a few comparisons per node. A node is
//! counted under the lock it is taken under, the pending count drops only after its nodes are
//! linked, and settles run one at a time: a reader that finds nothing pending finds every node
//! appended before it looked already linked, and one that finds some waits for the settle
//! under way and then links the rest itself.

use std::cmp::Ordering;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ptr::{self, NonNull};
use std::sync::atomic::Ordering as MemOrder;

use super::sync::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Mutex};

use super::arena::{Arena, ALIGN};
use super::write_buffer_manager::MemoryTracker;
use crate::comparator::KeyOrder;
use crate::key::compare_internal;
use crate::util::prefetch::{prefetch, prefetch_span, CACHE_LINE};

/// Maximum node height; with branching 4 a list stays logarithmic up to ~4^12 = 16M entries.
pub(crate) const MAX_HEIGHT: usize = 12;

/// Most nodes [`SkipList::link_batch`] links together: about as many cache misses as a core
/// keeps in flight (`docs/measurements.md` has 8, 16 and 32 compared).
#[cfg(not(any(feature = "loom", feature = "shuttle")))]
pub(crate) const LINK_BATCH: usize = 16;
/// Two under the model checkers, so that their few writes fill batches.
#[cfg(any(feature = "loom", feature = "shuttle"))]
pub(crate) const LINK_BATCH: usize = 2;

/// Most pending nodes a point read merges into its walk ([`SkipList::visit_from`]) instead of
/// linking them.
const MERGE_MAX: usize = 2 * LINK_BATCH;

/// log2 of the branching factor: a node reaches level `i + 1` with probability 1/4 given `i`.
const BRANCHING_BITS: u32 = 2;

/// Most nodes [`SkipList::estimate_between`] counts on one level before it counts on the
/// level above instead.
const ESTIMATE_STEPS: u64 = 64;

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

    /// Starts loading the next node at level 0: its link, header, key and value, guessed to
    /// be as long as this node's (at most [`PREFETCH_SPAN_MAX`] bytes). An in-order scan calls
    /// it on each node it arrives at, so the entry after it is on its way while this one is
    /// copied: nodes are scattered over the arena in insertion order, and a scan that waits
    /// for each one is bound by memory latency (a flush was, half of its time).
    #[inline]
    pub(crate) fn prefetch_next(self) {
        let (klen, vlen) = self.lens();
        let span = LINK_LEN + std::mem::size_of::<NodeHeader>() + klen + vlen;
        let next = self.link(0).load(MemOrder::Relaxed);
        if next.is_null() {
            return;
        }
        // The addresses are only hints (never dereferenced), hence `wrapping_sub`: a guessed
        // span past the node's end names other arena bytes, or none.
        let start = next.cast::<u8>().wrapping_sub(LINK_LEN);
        prefetch_span(start, span.min(PREFETCH_SPAN_MAX));
    }
}

/// Most bytes of one node [`Node::prefetch_next`] asks for (8 lines): a larger value is
/// streamed by the hardware once its copy has started.
const PREFETCH_SPAN_MAX: usize = 8 * CACHE_LINE;

/// Where the last insert through this splice was linked: a starting point for the search of
/// any larger key (module doc).
///
/// Invariant: `prev[i]` is the head or a node of the list it was made for, with more than `i`
/// links, whose key is `<=` the key of `last` (`last` is `None` only while every `prev[i]` is
/// the head); and `prev[i]` is at or after `prev[i + 1]` in the list (the head first), as the
/// predecessors one search found are.
pub(crate) struct Splice {
    last: Option<NodePtr>,
    prev: [NodePtr; MAX_HEIGHT],
}

// SAFETY: the pointers name nodes of one list's arena, immutable after publication except their
// atomic links; a splice is used only with its list, and moving it between threads is ordered by
// the mutex that holds the shared one (or by the thread that owns a local one).
unsafe impl Send for Splice {}

/// A sorted set of (internal key, value) entries; see the module doc.
pub(crate) struct SkipList {
    head: NodePtr,
    /// Current height of the list (1..=MAX_HEIGHT); only grows.
    height: AtomicUsize,
    /// Node memory. Held only to reserve a node's bytes, never during a search or a link.
    arena: Mutex<Arena>,
    /// Arena usage, republished after each reservation so readers need no lock.
    memory_usage: AtomicUsize,
    /// Counter behind node heights (splitmix64 of successive values; see `random_height`).
    rng: AtomicU64,
    /// The shared insertion hint (module doc).
    hint: Mutex<Splice>,
    /// The order of the keys.
    order: KeyOrder,
    /// Nodes appended but not linked yet, for a list made with [`SkipList::deferred`].
    deferred: Option<Deferred>,
}

/// How a deferred list links the nodes it took unlinked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Linking {
    /// Sorted and linked through the splice when read (the vector memtable).
    Sorted,
    /// Linked [`LINK_BATCH`] at a time, their searches interleaved, as soon as that many
    /// wait, and when read (module doc, "Batches across writes").
    Batched,
}

/// The unlinked nodes of a deferred list (module doc, "Deferred linking").
struct Deferred {
    linking: Linking,
    /// Appended nodes with their heights, in append order.
    pending: Mutex<Vec<(NodePtr, usize)>>,
    /// Nodes appended and not linked yet: raised by `add` after the push, lowered after the
    /// linking (by `settle`, or by a batched list's writer).
    unlinked: AtomicUsize,
    /// Held while a settle (or a batched list's writer) links, so links run one at a time;
    /// it guards the nodes the link took (a vector kept for its capacity).
    settling: Mutex<Vec<(NodePtr, usize)>>,
    /// Point reads that merged the pending nodes into their walks since a link last took
    /// them (changed under `pending`'s lock): past [`merges_before_link`], a read links them.
    merges: AtomicUsize,
    /// Set when the order (a user comparator) panicked while nodes were linked: a node of the
    /// batch may then be linked at some levels only, and linking it again would break the
    /// list, so nothing is linked any more ([`SkipList::is_poisoned`]). The nodes the link
    /// had taken stay unreachable; the memtable's iterators and point reads fail (and a flush
    /// with them), the DB refuses writes, and a reopen replays those nodes' entries from the
    /// WAL.
    poisoned: AtomicBool,
}

/// Runs `link` (the caller holds `settling`); should the order panic in it, poisons the list
/// ([`Deferred::poisoned`]) before the panic goes on (and `settling` is let go). It wraps
/// the call, not the linking loop: the loop's code is then what it is without it.
fn poisoning<R>(d: &Deferred, link: impl FnOnce() -> R) -> R {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(link)) {
        Ok(r) => r,
        Err(payload) => {
            d.poisoned.store(true, MemOrder::Release);
            std::panic::resume_unwind(payload)
        }
    }
}

/// How many point reads merge `pending` nodes before one links them instead: twice as many
/// as the nodes, and a few. Reads that come one or two to a write (read-modify-write) keep
/// merging, and writers link in whole batches; reads that come many to a write (a read-mostly
/// load) soon link, and the reads after them find nothing pending.
fn merges_before_link(pending: usize) -> usize {
    2 * pending + 2
}

// SAFETY: shared state is reached only through atomics (links, height, memory_usage, rng) or
// mutexes (arena, hint); node bytes are written only before publication (Release/Acquire, module
// doc) and are immutable afterwards; `head` points into the arena, which is freed only when the
// list drops, after every borrow has ended.
unsafe impl Send for SkipList {}
// SAFETY: as for Send.
unsafe impl Sync for SkipList {}

impl SkipList {
    #[cfg(test)]
    pub(crate) fn new() -> Self {
        Self::with_tracker(None, KeyOrder::Bytewise, super::arena::CHUNK_SIZE)
    }

    /// A list in `order` whose arena reports its chunks to `tracker` and takes standard
    /// chunks of `chunk` bytes (`arena.rs`, `chunk_for`).
    pub(crate) fn with_tracker(
        tracker: Option<MemoryTracker>,
        order: KeyOrder,
        chunk: usize,
    ) -> Self {
        let mut arena = Arena::with_tracker(tracker, chunk);
        let head = alloc_node(&mut arena, MAX_HEIGHT, 0, 0);
        // SAFETY: fresh, exclusively owned, sized for MAX_HEIGHT links and an empty entry.
        unsafe { init_node(head, MAX_HEIGHT, &[], &[], &[]) };
        SkipList {
            head,
            height: AtomicUsize::new(1),
            memory_usage: AtomicUsize::new(arena.memory_usage()),
            arena: Mutex::new(arena),
            rng: AtomicU64::new(0x5eed_0f57_a7a0_0001),
            hint: Mutex::new(Splice { last: None, prev: [head; MAX_HEIGHT] }),
            order,
            deferred: None,
        }
    }

    /// A list in `order` that takes entries by [`Self::add`] unlinked and links them when read
    /// ([`Self::settle`]); its arena reports to `tracker`, with chunks of `chunk` bytes.
    pub(crate) fn deferred(tracker: Option<MemoryTracker>, order: KeyOrder, chunk: usize) -> Self {
        Self::deferring(tracker, order, chunk, Linking::Sorted)
    }

    /// A list in `order` that links its entries [`LINK_BATCH`] at a time across writes and
    /// the rest when read (module doc, "Batches across writes"); its arena reports to
    /// `tracker`, with chunks of `chunk` bytes.
    pub(crate) fn batched(tracker: Option<MemoryTracker>, order: KeyOrder, chunk: usize) -> Self {
        Self::deferring(tracker, order, chunk, Linking::Batched)
    }

    fn deferring(
        tracker: Option<MemoryTracker>,
        order: KeyOrder,
        chunk: usize,
        linking: Linking,
    ) -> Self {
        let mut list = Self::with_tracker(tracker, order, chunk);
        list.deferred = Some(Deferred {
            linking,
            pending: Mutex::new(Vec::with_capacity(2 * LINK_BATCH)),
            merges: AtomicUsize::new(0),
            unlinked: AtomicUsize::new(0),
            settling: Mutex::new(Vec::with_capacity(2 * LINK_BATCH)),
            poisoned: AtomicBool::new(false),
        });
        list
    }

    /// Whether the order panicked while nodes were linked ([`Deferred::poisoned`]).
    pub(crate) fn is_poisoned(&self) -> bool {
        self.deferred.as_ref().is_some_and(|d| d.poisoned.load(MemOrder::Acquire))
    }

    /// Whether entries are appended and linked later (a list made by [`Self::deferred`] or
    /// [`Self::batched`]).
    pub(crate) fn is_deferred(&self) -> bool {
        self.deferred.is_some()
    }

    /// Nodes added and not linked yet.
    #[cfg(test)]
    pub(crate) fn unlinked(&self) -> usize {
        self.deferred.as_ref().map_or(0, |d| d.unlinked.load(MemOrder::Acquire))
    }

    /// Whether entries are appended and linked in order when read (a list made by
    /// [`Self::deferred`]: the vector memtable).
    #[cfg(test)]
    pub(crate) fn is_sorted_on_read(&self) -> bool {
        self.deferred.as_ref().is_some_and(|d| d.linking == Linking::Sorted)
    }

    /// Adds the entry whose key is `key_prefix | key_suffix`: in a deferred list, copied into
    /// the arena unlinked and reachable from the next [`Self::settle`] (or, in a batched list,
    /// the next [`Self::link_due`] that links) on; in another, linked at once through `splice`
    /// ([`Self::insert_with`]). Safe from any number of threads. Panics if the key or the
    /// value is longer than `u32::MAX` bytes.
    #[inline]
    pub(crate) fn add(
        &self,
        splice: &mut Splice,
        key_prefix: &[u8],
        key_suffix: &[u8],
        value: &[u8],
    ) {
        match &self.deferred {
            None => self.insert_with(splice, key_prefix, key_suffix, value),
            Some(d) => {
                let (ptr, height) = self.new_node(key_prefix, key_suffix, value);
                let mut pending = d.pending.lock();
                pending.push((ptr, height));
                // Counted under the lock a settle takes the nodes under, so a settle never
                // subtracts a node that is not counted yet: the count can then never read 0
                // while a counted node waits. (Counted after the unlock, a settle that took
                // another writer's uncounted node made the count one short, and a read after
                // this node's publication could find 0 and skip it.)
                d.unlinked.fetch_add(1, MemOrder::Release);
            }
        }
    }

    /// Links what a batched list has pending once a whole batch is, unless someone else is
    /// linking: a writer never waits here, and the nodes then go with the next link (module
    /// doc, "Batches across writes"). Nothing for another list. One atomic load while no batch
    /// is pending.
    #[inline]
    pub(crate) fn link_due(&self) {
        let Some(d) = &self.deferred else { return };
        if d.linking == Linking::Batched && d.unlinked.load(MemOrder::Relaxed) >= LINK_BATCH {
            if let Some(mut taken) = d.settling.try_lock() {
                if !d.poisoned.load(MemOrder::Acquire) {
                    self.with_splice(|s| poisoning(d, || self.link_batches(d, &mut taken, s)));
                }
            }
        }
    }

    /// Links every node appended before the call (a deferred list; nothing otherwise): they
    /// are sorted, then linked in key order. Returns when they are all reachable. One atomic
    /// load when nothing is pending.
    #[inline]
    pub(crate) fn settle(&self) {
        if let Some(d) = &self.deferred {
            if d.unlinked.load(MemOrder::Acquire) != 0 {
                self.link_pending(d);
            }
        }
    }

    /// [`Self::settle`]'s work, once something is pending.
    #[inline(never)]
    fn link_pending(&self, d: &Deferred) {
        let mut taken = d.settling.lock();
        if d.poisoned.load(MemOrder::Acquire) {
            return;
        }
        if d.linking == Linking::Batched {
            return self.with_splice(|s| poisoning(d, || self.link_batches(d, &mut taken, s)));
        }
        std::mem::swap(&mut *d.pending.lock(), &mut *taken);
        if taken.is_empty() {
            // A settle that held the lock before this one linked them.
            return;
        }
        poisoning(d, || match &self.order {
            KeyOrder::Bytewise => self.link_sorted(&taken, true, compare_internal),
            o @ KeyOrder::Custom(_) => {
                self.link_sorted(&taken, false, |a: &[u8], b: &[u8]| o.compare_internal(a, b));
            }
        });
        d.unlinked.fetch_sub(taken.len(), MemOrder::Release);
        taken.clear();
    }

    /// A batched list's nodes pending now, linked [`LINK_BATCH`] at a time; `taken` is the
    /// vector `settling` guards (held). Nodes added meanwhile are left to the next writer or
    /// read that links: a read never links more than was pending when it came, so it is not
    /// held up by writes that go on.
    fn link_batches(&self, d: &Deferred, taken: &mut Vec<(NodePtr, usize)>, splice: &mut Splice) {
        {
            let mut pending = d.pending.lock();
            std::mem::swap(&mut *pending, taken);
            d.merges.store(0, MemOrder::Relaxed);
        }
        for batch in taken.chunks(LINK_BATCH) {
            self.link_batch(splice, batch);
            d.unlinked.fetch_sub(batch.len(), MemOrder::Release);
        }
        taken.clear();
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

    /// Tells the arena's tracker (if any) that the list takes no more writes; returns the
    /// bytes it reported.
    pub(crate) fn mark_immutable(&self) -> Option<usize> {
        let mut arena = self.arena.lock();
        let t = arena.tracker_mut()?;
        t.mark_immutable();
        Some(t.bytes())
    }

    /// Arena bytes in use (see the arena's doc). One atomic load.
    pub(crate) fn memory_usage(&self) -> usize {
        self.memory_usage.load(MemOrder::Relaxed)
    }

    /// A height in 1..=MAX_HEIGHT, each extra level with probability 1/4.
    fn random_height(&self) -> usize {
        const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;
        // splitmix64: well-mixed low bits from a counter. Load and store rather than an atomic
        // add: writers racing here may draw the same height, which costs nothing.
        let mut z = self.rng.load(MemOrder::Relaxed).wrapping_add(GAMMA);
        self.rng.store(z, MemOrder::Relaxed);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        1 + ((z.trailing_zeros() / BRANCHING_BITS) as usize).min(MAX_HEIGHT - 1)
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

    /// About how many linked nodes have keys in `[start, end)`. A node reaches level `i`
    /// with probability 4^-i, so the nodes of level `i` in the range, times 4^i, estimate
    /// the nodes below. The walk finds `start`'s predecessor on every level, then counts the
    /// range's nodes level by level from the bottom, giving up on a level after
    /// [`ESTIMATE_STEPS`] of them: the lowest level that counts the range whole answers
    /// (exactly, at level 0), so a small range costs a few dozen steps and a large one is
    /// estimated from a level where it still spans many nodes. Pending nodes are not
    /// counted (a settled list has none).
    pub(crate) fn estimate_between(&self, start: &[u8], end: &[u8]) -> u64 {
        let less = |k: &[u8], bound: &[u8]| match &self.order {
            KeyOrder::Bytewise => compare_internal(k, bound) == Ordering::Less,
            o @ KeyOrder::Custom(_) => o.compare_internal(k, bound) == Ordering::Less,
        };
        let height = self.height.load(MemOrder::Relaxed);
        let mut preds = [self.head(); MAX_HEIGHT];
        let (mut x, mut bound) = (self.head(), None);
        for level in (0..height).rev() {
            x = walk(x, level, &mut |k: &[u8]| less(k, start), &mut bound).0;
            preds[level] = x;
        }
        for (level, pred) in preds.iter().enumerate().take(height) {
            let (mut n, mut count) = (pred.next(level), 0u64);
            while let Some(node) = n.filter(|node| less(node.key(), end)) {
                count += 1;
                if count > ESTIMATE_STEPS && level + 1 < height {
                    break;
                }
                n = node.next(level);
            }
            if count <= ESTIMATE_STEPS || level + 1 == height {
                return count << (BRANCHING_BITS as usize * level);
            }
        }
        0
    }

    /// The first node with key `>= key`.
    pub(crate) fn seek_ge(&self, key: &[u8]) -> Option<Node<'_>> {
        match &self.order {
            KeyOrder::Bytewise => self.descend(|k| compare_internal(k, key) == Ordering::Less).1,
            o @ KeyOrder::Custom(_) => {
                self.descend(|k| o.compare_internal(k, key) == Ordering::Less).1
            }
        }
    }

    /// Calls `f` on the nodes with key `>= from`, in order, until it returns false: every node
    /// added before the call, and maybe later ones. A batched list's pending nodes (at most
    /// [`MERGE_MAX`], with no link under way) are merged into the walk instead of linked: a point
    /// read then costs a comparison per pending node instead of a link's searches, and readers
    /// never wait for one another's links. Otherwise the list settles first.
    pub(crate) fn visit_from<'s>(&'s self, from: &[u8], f: impl FnMut(Node<'s>) -> bool) {
        match &self.order {
            KeyOrder::Bytewise => self.visit_in(from, f, compare_internal),
            o @ KeyOrder::Custom(_) => {
                self.visit_in(from, f, |a: &[u8], b: &[u8]| o.compare_internal(a, b));
            }
        }
    }

    /// [`Self::visit_from`] with `cmp` the order of internal keys.
    fn visit_in<'s>(
        &'s self,
        from: &[u8],
        f: impl FnMut(Node<'s>) -> bool,
        cmp: impl Fn(&[u8], &[u8]) -> Ordering,
    ) {
        let mut slots = [const { MaybeUninit::<Node<'s>>::uninit() }; MERGE_MAX];
        let n = match self.pending_from(from, &mut slots, &cmp) {
            Some(n) => n,
            None => {
                self.settle();
                0
            }
        };
        // SAFETY: `pending_from` initialised the first `n` slots.
        let pending =
            unsafe { std::slice::from_raw_parts_mut(slots.as_mut_ptr().cast::<Node<'s>>(), n) };
        self.walk_merged(from, pending, f, cmp);
    }

    /// The walk of [`Self::visit_in`]: the list's nodes from `from` on, with `pending` (nodes
    /// taken from the pending vector, any of which may have been linked since) merged in.
    fn walk_merged<'s>(
        &'s self,
        from: &[u8],
        pending: &mut [Node<'s>],
        mut f: impl FnMut(Node<'s>) -> bool,
        cmp: impl Fn(&[u8], &[u8]) -> Ordering,
    ) {
        pending.sort_unstable_by(|a, b| cmp(a.key(), b.key()));
        let mut pending = pending.iter().copied().peekable();
        let mut node = self.descend(|k| cmp(k, from) == Ordering::Less).1;
        loop {
            // A pending node linked meanwhile is met in the walk too: visited once.
            let same = |l: Node<'s>, p: Node<'s>| l.ptr == p.ptr;
            let next = match (node, pending.peek().copied()) {
                (Some(l), Some(p)) if same(l, p) || cmp(p.key(), l.key()) == Ordering::Less => {
                    pending.next();
                    if same(l, p) {
                        node = l.next(0);
                    }
                    p
                }
                (Some(l), _) => {
                    node = l.next(0);
                    l
                }
                (None, Some(p)) => {
                    pending.next();
                    p
                }
                (None, None) => return,
            };
            if !f(next) {
                return;
            }
        }
    }

    /// A batched list's pending nodes with key `>= from`, written into `out` (unsorted);
    /// their count, or `None` when the read must settle instead: the list links when read
    /// (the vector memtable), a link is under way (its nodes are neither pending nor surely
    /// reachable), more than [`MERGE_MAX`] are pending, or enough reads merged these already
    /// ([`merges_before_link`]). `Some(0)` when nothing is pending.
    fn pending_from<'s>(
        &'s self,
        from: &[u8],
        out: &mut [MaybeUninit<Node<'s>>; MERGE_MAX],
        cmp: &impl Fn(&[u8], &[u8]) -> Ordering,
    ) -> Option<usize> {
        let Some(d) = &self.deferred else { return Some(0) };
        if d.unlinked.load(MemOrder::Acquire) == 0 {
            return Some(0);
        }
        if d.linking != Linking::Batched {
            return None;
        }
        let pending = d.pending.lock();
        // Raised under this lock with each push, lowered only once a link is done: equal to
        // the nodes pending, no node is between the vector and the list.
        if pending.len() > MERGE_MAX || d.unlinked.load(MemOrder::Acquire) != pending.len() {
            return None;
        }
        let merges = d.merges.load(MemOrder::Relaxed) + 1;
        if merges > merges_before_link(pending.len()) {
            return None;
        }
        d.merges.store(merges, MemOrder::Relaxed);
        let mut n = 0;
        for &(ptr, height) in pending.iter() {
            // SAFETY: the node, in this list's arena, was written before it was pushed under
            // the lock held here, and its key and value are never written again; only its
            // links may change (a link), and they are not read here.
            let node = unsafe { Node::from_raw(ptr, height) };
            if cmp(node.key(), from) != Ordering::Less {
                out[n].write(node);
                n += 1;
            }
        }
        Some(n)
    }

    /// The last node with key `< key`.
    pub(crate) fn seek_lt(&self, key: &[u8]) -> Option<Node<'_>> {
        let last = match &self.order {
            KeyOrder::Bytewise => self.descend(|k| compare_internal(k, key) == Ordering::Less).0,
            o @ KeyOrder::Custom(_) => {
                self.descend(|k| o.compare_internal(k, key) == Ordering::Less).0
            }
        };
        self.non_head(last)
    }

    /// The last node with key `<= key`.
    pub(crate) fn seek_le(&self, key: &[u8]) -> Option<Node<'_>> {
        let last = match &self.order {
            KeyOrder::Bytewise => self.descend(|k| compare_internal(k, key) != Ordering::Greater).0,
            o @ KeyOrder::Custom(_) => {
                self.descend(|k| o.compare_internal(k, key) != Ordering::Greater).0
            }
        };
        self.non_head(last)
    }

    /// Runs `f` with a splice for [`Self::insert_with`]: the list's shared one when no other
    /// writer holds it, else a fresh one (module doc, "Sequential inserts").
    pub(crate) fn with_splice<R>(&self, f: impl FnOnce(&mut Splice) -> R) -> R {
        if let Some(mut shared) = self.hint.try_lock() {
            return f(&mut shared);
        }
        f(&mut Splice { last: None, prev: [self.head; MAX_HEIGHT] })
    }

    /// Inserts one entry; see [`Self::insert_with`].
    #[cfg(test)]
    pub(crate) fn insert(&self, key_prefix: &[u8], key_suffix: &[u8], value: &[u8]) {
        self.with_splice(|s| self.insert_with(s, key_prefix, key_suffix, value));
    }

    /// Inserts the entry whose key is `key_prefix | key_suffix`, copying key and value into the
    /// arena once. Safe to call from any number of threads at once (module doc). Equal keys
    /// are kept. `splice` must come from [`Self::with_splice`] of this list.
    ///
    /// Panics if the key or the value is longer than `u32::MAX` bytes (the DB rejects such
    /// writes before they reach the memtable).
    pub(crate) fn insert_with(
        &self,
        splice: &mut Splice,
        key_prefix: &[u8],
        key_suffix: &[u8],
        value: &[u8],
    ) {
        // The order is matched once per insert: the bytewise one compiles to direct calls.
        match &self.order {
            KeyOrder::Bytewise => {
                self.insert_in(splice, key_prefix, key_suffix, value, compare_internal);
            }
            o @ KeyOrder::Custom(_) => {
                self.insert_in(splice, key_prefix, key_suffix, value, |a: &[u8], b: &[u8]| {
                    o.compare_internal(a, b)
                });
            }
        }
    }

    /// [`Self::insert_with`] with `cmp` the order of internal keys.
    #[inline(always)]
    fn insert_in(
        &self,
        splice: &mut Splice,
        key_prefix: &[u8],
        key_suffix: &[u8],
        value: &[u8],
        cmp: impl Fn(&[u8], &[u8]) -> Ordering,
    ) {
        let (new_ptr, height) = self.new_node(key_prefix, key_suffix, value);
        self.link_in(splice, new_ptr, height, cmp);
    }

    /// Sorts `nodes` (appended, unlinked) by `cmp` and links them in that order through the
    /// splice. With `bytewise`, each is first keyed by its user key's first 8 bytes
    /// (zero-padded, so that order agrees with the bytewise one), held beside the pointer:
    /// most comparisons then read no node, which the scattered arena would make a cache miss
    /// each.
    fn link_sorted(
        &self,
        nodes: &[(NodePtr, usize)],
        bytewise: bool,
        cmp: impl Fn(&[u8], &[u8]) -> Ordering + Copy,
    ) {
        let key = |p: NodePtr, h: usize| {
            // SAFETY: appended nodes are initialised, have the height they were appended
            // with, and live as long as the list.
            unsafe { Node::from_raw(p, h) }.key()
        };
        let mut keyed: Vec<(u64, NodePtr, usize)> = nodes
            .iter()
            .map(|&(p, h)| {
                let mut head = [0u8; 8];
                if bytewise {
                    let k = key(p, h);
                    let user = &k[..k.len().saturating_sub(8)];
                    let m = user.len().min(8);
                    head[..m].copy_from_slice(&user[..m]);
                }
                (u64::from_be_bytes(head), p, h)
            })
            .collect();
        keyed
            .sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| cmp(key(a.1, a.2), key(b.1, b.2))));
        self.with_splice(|splice| {
            for (_, p, h) in keyed {
                self.link_in(splice, p, h, cmp);
            }
        });
    }

    /// A node of a random height holding the entry `key_prefix | key_suffix` -> `value`,
    /// reserved in the arena and written, reachable by no one yet; with its height.
    #[inline(always)]
    fn new_node(&self, key_prefix: &[u8], key_suffix: &[u8], value: &[u8]) -> (NodePtr, usize) {
        let height = self.random_height();
        let ptr = {
            let mut arena = self.arena.lock();
            let p =
                alloc_node(&mut arena, height, key_prefix.len() + key_suffix.len(), value.len());
            self.memory_usage.store(arena.memory_usage(), MemOrder::Relaxed);
            p
        };
        // SAFETY: the arena handed these bytes to this call alone, sized by `alloc_node` for
        // `height` links and this entry.
        unsafe { init_node(ptr, height, key_prefix, key_suffix, value) };
        (ptr, height)
    }

    /// Links node `new_ptr` of `height` links, initialised and not reachable yet, into the
    /// list (the search and publication of [`Self::insert_with`]).
    #[inline(always)]
    fn link_in(
        &self,
        splice: &mut Splice,
        new_ptr: NodePtr,
        height: usize,
        cmp: impl Fn(&[u8], &[u8]) -> Ordering,
    ) {
        // SAFETY: the caller initialised the node, which has `height` links and lives in
        // this list's arena; this thread wrote it or acquired it through a mutex.
        let new = unsafe { Node::from_raw(new_ptr, height) };
        let key = new.key();
        let top = self.raise_height(height);
        let hinted = splice.hints(key, &cmp);
        let mut go_right = |k: &[u8]| cmp(k, key) == Ordering::Less;
        if hinted && self.append_at_end(splice, new, &mut go_right) {
            return;
        }
        let mut bound = None;
        let mut prev = [self.head(); MAX_HEIGHT];
        let mut next: [Option<Node<'_>>; MAX_HEIGHT] = [None; MAX_HEIGHT];
        let mut x = self.head();
        for level in (0..top).rev() {
            if hinted && splice.prev.get(level + 1) == Some(&x.ptr) {
                // Still on the splice's node of the level above (an ascending insert, not at
                // the end of the list): the splice's node here is at or after it (Splice
                // invariant), with no keys to compare.
                // SAFETY: Splice invariant: the head or a node of this list with more than
                // `level` links.
                x = unsafe { Node::from_raw(splice.prev[level], level + 1) };
            } else if hinted {
                x = self.splice_start(splice, level, x, &cmp);
            }
            let (p, n) = walk(x, level, &mut go_right, &mut bound);
            prev[level] = p;
            next[level] = n;
            x = p;
        }
        publish(new, &mut prev, &mut next, &mut go_right);
        splice.set(new, &prev);
    }

    /// Links `new` (initialised, reachable by no one yet, its key after the splice's last) at
    /// the end of the list when, at each of its levels, the splice's node is the level's last
    /// node: no search, a few loads (module doc, "Sequential inserts"). Returns false, having
    /// done nothing, when some level goes on past the splice.
    #[inline(always)]
    fn append_at_end<'a>(
        &'a self,
        splice: &mut Splice,
        new: Node<'a>,
        go_right: &mut impl FnMut(&[u8]) -> bool,
    ) -> bool {
        let mut prev = [self.head(); MAX_HEIGHT];
        for (level, p) in prev.iter_mut().enumerate().take(new.links) {
            // SAFETY: Splice invariant: the head or a node of this list with more than
            // `level` links.
            let s = unsafe { Node::from_raw(splice.prev[level], level + 1) };
            if !s.link(level).load(MemOrder::Acquire).is_null() {
                return false;
            }
            *p = s;
        }
        // A node linked after one of them meanwhile makes that level's swap fail and walk on,
        // as for any search.
        publish(new, &mut prev, &mut [None; MAX_HEIGHT], go_right);
        splice.advance(new);
        true
    }

    /// Links `nodes` (each with its height; initialised, reachable by no one yet, at most
    /// [`LINK_BATCH`] of them) into the list with their searches interleaved (module doc,
    /// "Batches"), as [`Self::insert_with`] would one after another.
    pub(crate) fn link_batch(&self, splice: &mut Splice, nodes: &[(NodePtr, usize)]) {
        match &self.order {
            KeyOrder::Bytewise => self.link_batch_in(splice, nodes, compare_internal),
            o @ KeyOrder::Custom(_) => {
                self.link_batch_in(splice, nodes, |a: &[u8], b: &[u8]| o.compare_internal(a, b));
            }
        }
    }

    /// [`Self::link_batch`] with `cmp` the order of internal keys.
    fn link_batch_in(
        &self,
        splice: &mut Splice,
        nodes: &[(NodePtr, usize)],
        cmp: impl Fn(&[u8], &[u8]) -> Ordering,
    ) {
        assert!(nodes.len() <= LINK_BATCH, "skiplist: a batch of {} nodes", nodes.len());
        // SAFETY: as in `link_in`, for each node of the batch.
        let key = |i: usize| unsafe { Node::from_raw(nodes[i].0, nodes[i].1) }.key();
        // An ascending run after the splice (a sequential load) is cheaper through the
        // splice, each search a few comparisons of nodes in cache: interleaved, every search
        // would start before the batch's earlier nodes and walk over them.
        let ascending = || {
            splice.hints(key(0), &cmp)
                && (1..nodes.len()).all(|i| cmp(key(i - 1), key(i)) == Ordering::Less)
        };
        if nodes.len() <= 1 || ascending() {
            for &(ptr, height) in nodes {
                self.link_in(splice, ptr, height, &cmp);
            }
            return;
        }
        let top = self.raise_height(nodes.iter().map(|n| n.1).max().unwrap_or(1));
        let head = self.head();
        // Only the batch's searches are written (a whole array of them would cost more than
        // the search of a short batch).
        let mut slots = [const { MaybeUninit::<Search<'_>>::uninit() }; LINK_BATCH];
        for (slot, &(ptr, height)) in slots.iter_mut().zip(nodes) {
            // SAFETY: as in `link_in`.
            let new = unsafe { Node::from_raw(ptr, height) };
            let hinted = splice.hints(new.key(), &cmp);
            let x = if hinted { self.splice_start(splice, top - 1, head, &cmp) } else { head };
            slot.write(Search {
                new,
                x,
                level: top - 1,
                bound: None,
                hinted,
                done: false,
                prev: [head; MAX_HEIGHT],
                next: [None; MAX_HEIGHT],
            });
        }
        // SAFETY: the first `nodes.len()` slots were written just above, and a `Search` is
        // `Copy` (nothing to drop).
        let searches: &mut [Search<'_>] =
            unsafe { std::slice::from_raw_parts_mut(slots.as_mut_ptr().cast(), nodes.len()) };
        // Each turn moves every unfinished search one `step` on (right, or down a level), and
        // the node it compares next is on its way meanwhile, while the other searches take
        // their turns.
        let mut left = nodes.len();
        while left > 0 {
            for s in searches.iter_mut().filter(|s| !s.done) {
                let (level, key) = (s.level, s.new.key());
                let go_right = &mut |k: &[u8]| cmp(k, key) == Ordering::Less;
                let stop = match step(s.x, level, go_right, &mut s.bound) {
                    Ok(n) => {
                        s.x = n;
                        continue;
                    }
                    Err(stop) => stop,
                };
                s.prev[level] = s.x;
                s.next[level] = stop;
                if level == 0 {
                    s.done = true;
                    left -= 1;
                    continue;
                }
                s.level -= 1;
                if s.hinted {
                    s.x = self.splice_start(splice, s.level, s.x, &cmp);
                }
                prefetch(s.x.link(s.level).load(MemOrder::Relaxed));
            }
        }
        for s in searches.iter_mut() {
            let key = s.new.key();
            publish(s.new, &mut s.prev, &mut s.next, &mut |k: &[u8]| cmp(k, key) == Ordering::Less);
        }
        let last = &searches[nodes.len() - 1];
        splice.set(last.new, &last.prev);
    }

    /// Raises the list's height to at least `height` (before a node that tall is searched
    /// for: a search starting below its top level would find no predecessor there); the
    /// height after.
    #[inline(always)]
    fn raise_height(&self, height: usize) -> usize {
        let mut top = self.height.load(MemOrder::Relaxed);
        while height > top {
            match self.height.compare_exchange_weak(
                top,
                height,
                MemOrder::Relaxed,
                MemOrder::Relaxed,
            ) {
                Ok(_) => top = height,
                Err(now) => top = now,
            }
        }
        top
    }

    /// Where a hinted search (at `x`, all of whose keys so far are less than its key) goes on
    /// at `level`: the splice's node there when that is right of `x`, else `x`.
    #[inline(always)]
    fn splice_start<'a>(
        &'a self,
        splice: &Splice,
        level: usize,
        x: Node<'a>,
        cmp: &impl Fn(&[u8], &[u8]) -> Ordering,
    ) -> Node<'a> {
        // SAFETY: Splice invariant: the head or a node of this list with more than `level`
        // links.
        let s = unsafe { Node::from_raw(splice.prev[level], level + 1) };
        if !self.is_head(s)
            && s.ptr != x.ptr
            && (self.is_head(x) || cmp(s.key(), x.key()) == Ordering::Greater)
        {
            s
        } else {
            x
        }
    }
}

/// One search of [`SkipList::link_batch`]: the node it places, where it stands, and the
/// predecessors and successors it found at the levels it left.
#[derive(Clone, Copy)]
struct Search<'a> {
    new: Node<'a>,
    x: Node<'a>,
    level: usize,
    /// As in [`walk`].
    bound: Option<NodePtr>,
    hinted: bool,
    done: bool,
    prev: [Node<'a>; MAX_HEIGHT],
    next: [Option<Node<'a>>; MAX_HEIGHT],
}

impl Splice {
    /// Whether a search for `key` may start from this splice (`key` is after its last node).
    #[inline(always)]
    fn hints(&self, key: &[u8], cmp: &impl Fn(&[u8], &[u8]) -> Ordering) -> bool {
        self.last.is_some_and(|l| {
            // SAFETY: `last` was linked into this list through this splice (Splice invariant).
            let last = unsafe { Node::from_raw(l, 1) };
            cmp(key, last.key()) == Ordering::Greater
        })
    }

    /// After `new` was linked at the end of each of its levels, the splice's nodes of the
    /// levels above staying the last below it there: the search start of a larger key.
    #[inline(always)]
    fn advance(&mut self, new: Node<'_>) {
        for s in &mut self.prev[..new.links] {
            *s = new.ptr;
        }
        self.last = Some(new.ptr);
    }

    /// After `new` was linked with predecessors `prev`: the search start of a larger key.
    #[inline(always)]
    fn set(&mut self, new: Node<'_>, prev: &[Node<'_>; MAX_HEIGHT]) {
        for (level, s) in self.prev.iter_mut().enumerate() {
            *s = if level < new.links { new.ptr } else { prev[level].ptr };
        }
        self.last = Some(new.ptr);
    }
}

/// Publishes `new` (initialised, reachable by no one yet) level by level from 0 up, between
/// `prev` and `next` as a search for its key found them (module doc, "Insertion and
/// publication protocol"); `go_right` holds for the keys less than its key.
#[inline(always)]
fn publish<'a>(
    new: Node<'a>,
    prev: &mut [Node<'a>; MAX_HEIGHT],
    next: &mut [Option<Node<'a>>; MAX_HEIGHT],
    go_right: &mut impl FnMut(&[u8]) -> bool,
) {
    for level in 0..new.links {
        loop {
            let succ = next[level].map_or(ptr::null_mut(), |n| n.ptr.as_ptr());
            // Not yet reachable at this level: only this thread touches this link.
            new.link(level).store(succ, MemOrder::Relaxed);
            // Publication: everything written to `new` happens-before a successful swap.
            match prev[level].link(level).compare_exchange(
                succ,
                new.ptr.as_ptr(),
                MemOrder::Release,
                MemOrder::Relaxed,
            ) {
                Ok(_) => break,
                Err(_) => {
                    // A node was linked after `prev[level]` meanwhile: walk on from there
                    // (the walk's loads acquire what it meets).
                    let (p, n) = walk(prev[level], level, go_right, &mut None);
                    prev[level] = p;
                    next[level] = n;
                }
            }
        }
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
        match step(x, level, go_right, bound) {
            Ok(n) => x = n,
            Err(stop) => return (x, stop),
        }
    }
}

/// One step of [`walk`] from `x`: `Ok` with the next node when it satisfies `go_right` (the
/// node after it already on its way), else `Err` with the successor that stopped the walk
/// (`None` at the end of the level).
#[inline(always)]
fn step<'a>(
    x: Node<'a>,
    level: usize,
    go_right: &mut impl FnMut(&[u8]) -> bool,
    bound: &mut Option<NodePtr>,
) -> Result<Node<'a>, Option<Node<'a>>> {
    let Some(n) = x.next(level) else { return Err(None) };
    if *bound == Some(n.ptr) {
        return Err(Some(n));
    }
    // While `n`'s key is compared, start loading the node after it, which is the next one
    // compared if the walk goes on.
    prefetch(n.link(level).load(MemOrder::Relaxed));
    if go_right(n.key()) {
        Ok(n)
    } else {
        *bound = Some(n.ptr);
        Err(Some(n))
    }
}

/// Reserves a node of `height` links for an entry of `klen` key and `vlen` value bytes; returns
/// its node pointer (uninitialised: [`init_node`] fills it). See the module doc for the layout.
///
/// Panics if the key or the value is longer than `u32::MAX` bytes.
fn alloc_node(arena: &mut Arena, height: usize, klen: usize, vlen: usize) -> NodePtr {
    assert!(
        u32::try_from(klen).is_ok() && u32::try_from(vlen).is_ok(),
        "memtable entry too large: key {klen} bytes, value {vlen} bytes"
    );
    let size = height * LINK_LEN + std::mem::size_of::<NodeHeader>() + klen + vlen;
    let links = arena.allocate(size).as_ptr();
    // The arena returns ALIGN-aligned memory and links are 8 bytes, so the header is aligned
    // (checked above).
    #[allow(clippy::cast_ptr_alignment)]
    // SAFETY: the allocation is `size` bytes, so the header position (after `height` links) is
    // within it, and it is not null.
    unsafe {
        NonNull::new_unchecked(links.add(height * LINK_LEN).cast::<NodeHeader>())
    }
}

/// Writes a node reserved by [`alloc_node`]: `height` null links, the header, the key
/// `key_prefix | key_suffix` and `value`.
///
/// # Safety
/// `node` must come from `alloc_node(_, height, key_prefix.len() + key_suffix.len(),
/// value.len())` and not be reachable by any other thread yet.
unsafe fn init_node(
    node: NodePtr,
    height: usize,
    key_prefix: &[u8],
    key_suffix: &[u8],
    value: &[u8],
) {
    let node = node.as_ptr();
    // SAFETY: by the contract, the `height * LINK_LEN` bytes below `node` and the header and
    // `klen + vlen` bytes from `node` on are one fresh arena allocation owned by this call,
    // aligned for links and header (the arena's ALIGN, checked above); the sources are caller
    // slices, which cannot overlap it.
    unsafe {
        #[allow(clippy::cast_ptr_alignment)]
        let links = node.cast::<u8>().sub(height * LINK_LEN).cast::<Link>();
        for i in 0..height {
            links.add(i).write(AtomicPtr::new(ptr::null_mut()));
        }
        // Lengths fit u32: checked by `alloc_node`.
        node.write(NodeHeader {
            key_len: (key_prefix.len() + key_suffix.len()) as u32,
            value_len: value.len() as u32,
        });
        let mut dst = node.add(1).cast::<u8>();
        for src in [key_prefix, key_suffix, value] {
            ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len());
            dst = dst.add(src.len());
        }
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

    /// A read that took pending nodes and then finds some of them linked (a writer's link ran
    /// between its look at the vector and its walk) visits each once, in order.
    #[test]
    fn a_walk_visits_once_the_pending_nodes_linked_since_it_took_them() {
        let list = SkipList::batched(None, KeyOrder::Bytewise, super::super::arena::CHUNK_SIZE);
        let add = |user: &[u8], seq: u64| {
            let k = ik(user, seq);
            let (pre, suf) = k.split_at(k.len() - 8);
            list.with_splice(|s| list.add(s, pre, suf, &seq.to_le_bytes()));
        };
        add(b"b", 1);
        add(b"d", 2);
        let from = ik(b"", 0);
        let mut slots = [const { MaybeUninit::<Node<'_>>::uninit() }; MERGE_MAX];
        let n = list.pending_from(&from, &mut slots, &compare_internal).expect("no link running");
        assert_eq!(n, 2);
        // SAFETY: the first `n` slots were written by `pending_from`.
        let taken = unsafe { std::slice::from_raw_parts_mut(slots.as_mut_ptr().cast(), n) };
        list.settle();
        add(b"a", 3);
        add(b"c", 4);
        list.settle();
        let mut seen = Vec::new();
        let visit = |n: Node<'_>| {
            seen.push(n.key().to_vec());
            true
        };
        list.walk_merged(&from, taken, visit, compare_internal);
        let want = [ik(b"a", 3), ik(b"b", 1), ik(b"c", 4), ik(b"d", 2)];
        assert_eq!(seen, want, "each node once, in order");
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

    /// An append at the end of the list (a sequential load) is linked through the splice with
    /// one comparison (is the key after the splice's last?), however tall the list. Counted
    /// through a custom order; a descent from the head would compare at every level. Then a
    /// jump back and an ascending run between the keys already there, whose searches skip
    /// the comparisons the splice's order makes needless: the list stays whole and ordered.
    #[test]
    fn appends_through_the_splice_compare_one_key_each() {
        use std::sync::atomic::AtomicU64;
        let calls = std::sync::Arc::new(AtomicU64::new(0));
        let counted = calls.clone();
        let order = KeyOrder::custom(
            "counted",
            Box::new(move |a: &[u8], b: &[u8]| {
                counted.fetch_add(1, MemOrder::Relaxed);
                a.cmp(b)
            }),
        );
        let l = SkipList::with_tracker(None, order, super::super::arena::CHUNK_SIZE);
        let n = scaled(20_000, 300);
        let mut model = Vec::new();
        let mut put = |i: u64, seq: u64| {
            let k = ik(format!("{i:08}").as_bytes(), seq);
            let (pre, suf) = k.split_at(k.len() - 8);
            l.insert(pre, suf, b"v");
            model.push(k);
        };
        put(0, 1);
        let before = calls.load(MemOrder::Relaxed);
        for i in 1..n {
            put(i * 2, i + 1);
        }
        let per_insert = (calls.load(MemOrder::Relaxed) - before) as f64 / (n - 1) as f64;
        let tall = if cfg!(miri) { 2 } else { 4 };
        assert!(l.height.load(MemOrder::Relaxed) >= tall, "a list tall enough to tell");
        assert!(per_insert <= 1.0, "{per_insert} comparisons per append");
        // Back to the start, then ascending again between the keys already there.
        let before = calls.load(MemOrder::Relaxed);
        for i in 0..n / 2 {
            put(i * 2 + 1, n + i + 1);
        }
        // A search still on the splice's node of the level above takes the next level's
        // without a comparison: 9.2 per insert here, 13.8 when each level compares.
        let between = (calls.load(MemOrder::Relaxed) - before) as f64 / (n / 2) as f64;
        assert!(cfg!(miri) || between <= 10.0, "{between} comparisons per insert between keys");
        // A key far after the last insert, with thousands of keys between them: a search
        // through the splice's upper levels, not a walk along the bottom one.
        let before = calls.load(MemOrder::Relaxed);
        put(2 * n - 3, 2 * n);
        let far = calls.load(MemOrder::Relaxed) - before;
        assert!(far <= 8 * l.height.load(MemOrder::Relaxed) as u64, "{far} comparisons");
        model.sort_by(|a, b| compare_internal(a, b));
        let keys: Vec<Vec<u8>> = collect(&l).into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, model);
        check_levels(&l);
    }

    /// Four writers, each adding its ids through `write` (in order), the ids interleaved so
    /// that each writer's key sits between two of the others': compare-and-swaps fail and
    /// re-walk at every level. Afterwards every key is present once with its value, and every
    /// level is a sorted sublist of the one below. Id `i` is user key `{i:08}` at sequence
    /// number `i + 1` with value `i`.
    fn interleaved_writers(write: fn(&SkipList, &[u64])) {
        let l = std::sync::Arc::new(SkipList::new());
        let writers = 4u64;
        let per = scaled(4000, 60);
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let l = l.clone();
                std::thread::spawn(move || {
                    let ids: Vec<u64> = (0..per).map(|i| i * writers + w).collect();
                    write(&l, &ids);
                })
            })
            .collect();
        for h in handles {
            h.join().expect("writer");
        }
        let all = collect(&l);
        assert_eq!(all.len() as u64, writers * per);
        for (i, (k, v)) in all.iter().enumerate() {
            assert_eq!(k, &ik(format!("{i:08}").as_bytes(), i as u64 + 1));
            assert_eq!(v, &(i as u64).to_le_bytes());
        }
        check_levels(&l);
    }

    #[test]
    fn concurrent_inserts_keep_every_level_sorted() {
        interleaved_writers(|l, ids| {
            for id in ids {
                let k = ik(format!("{id:08}").as_bytes(), id + 1);
                l.insert(&k, &[], &id.to_le_bytes());
            }
        });
    }

    /// Writes the nodes of `entries` (key prefix, key suffix, value) and links them
    /// `LINK_BATCH` at a time through one splice, as a batched list's link does.
    fn link_in_batches<'e>(list: &SkipList, entries: impl Iterator<Item = [&'e [u8]; 3]>) {
        let nodes: Vec<_> = entries.map(|[pre, suf, v]| list.new_node(pre, suf, v)).collect();
        list.with_splice(|s| nodes.chunks(LINK_BATCH).for_each(|b| list.link_batch(s, b)));
    }

    /// Adds `entries` (user key, sequence number), linked `LINK_BATCH` at a time.
    fn add_all(list: &SkipList, entries: &[(Vec<u8>, u64)]) {
        let keys: Vec<_> = entries.iter().map(|(user, seq)| (ik(user, *seq), *seq)).collect();
        let values: Vec<_> = keys.iter().map(|(_, seq)| seq.to_le_bytes()).collect();
        link_in_batches(
            list,
            keys.iter().zip(&values).map(|((k, _), v)| {
                let (pre, suf) = k.split_at(k.len() - 8);
                [pre, suf, &v[..]]
            }),
        );
    }

    /// Batches of every size up to a few `LINK_BATCH`es, of random keys, of ascending runs
    /// (the splice's case) and with one key twice, mixed with single inserts: the list holds
    /// what one-by-one inserts would, in order, every level a sorted sublist of the one below.
    #[test]
    fn batches_link_as_single_inserts_would() {
        let l = SkipList::new();
        let mut model = Vec::new();
        let (mut r, mut seq) = (11u64, 0u64);
        let mut rand = |m: u64| {
            r = r.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (r >> 33) % m
        };
        for round in 0..scaled(300, 20) {
            let size = rand(3 * LINK_BATCH as u64 + 1) as usize;
            let start = rand(5000);
            let mut batch: Vec<(Vec<u8>, u64)> = (0..size as u64)
                .map(|i| {
                    seq += 1;
                    let k = if round % 3 == 0 { start + i } else { rand(5000) };
                    (format!("k{k:05}").into_bytes(), seq)
                })
                .collect();
            if round % 7 == 0 && !batch.is_empty() {
                seq += 1;
                batch.push((batch[0].0.clone(), seq));
            }
            if round % 5 == 0 {
                seq += 1;
                let k = ik(format!("k{:05}", rand(5000)).as_bytes(), seq);
                l.insert(&k, &[], &seq.to_le_bytes());
                model.push((k, seq.to_le_bytes().to_vec()));
            }
            add_all(&l, &batch);
            model.extend(batch.iter().map(|(u, s)| (ik(u, *s), s.to_le_bytes().to_vec())));
        }
        model.sort_by(|a, b| compare_internal(&a.0, &b.0));
        assert_eq!(collect(&l), model);
        check_levels(&l);
        for (k, _) in model.iter().step_by(5) {
            assert_eq!(l.seek_ge(k).map(|n| n.key()), Some(k.as_slice()));
        }
    }

    /// As `concurrent_inserts_keep_every_level_sorted`, each writer adding its ids in batches
    /// of a little more than `LINK_BATCH`, each batch in descending order (an ascending one
    /// would go through the splice one node at a time).
    #[test]
    fn concurrent_batches_keep_every_level_sorted() {
        interleaved_writers(|l, ids| {
            for chunk in ids.chunks(LINK_BATCH + 3) {
                let entries: Vec<_> = chunk
                    .iter()
                    .rev()
                    .map(|id| (ik(format!("{id:08}").as_bytes(), id + 1), id.to_le_bytes()))
                    .collect();
                link_in_batches(l, entries.iter().map(|(k, v)| [&k[..], &[][..], &v[..]]));
            }
        });
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
        let w = SkipList::new();
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

    /// A key order that panics while a batch is linked poisons the list: nothing is linked
    /// again (a node of the cut batch may be linked at some levels only), neither by writers
    /// nor by reads, and what was linked before stays a sound list.
    #[test]
    fn an_order_that_panics_while_linking_poisons_the_list() {
        use std::sync::atomic::AtomicBool as StdAtomicBool;
        use std::sync::Arc;
        let armed = Arc::new(StdAtomicBool::new(false));
        let refuses = armed.clone();
        let order = KeyOrder::custom(
            "test.panics-on-boom",
            Box::new(move |a: &[u8], b: &[u8]| {
                assert!(!(refuses.load(MemOrder::Relaxed) && (a == b"boom" || b == b"boom")));
                a.cmp(b)
            }),
        );
        let list = SkipList::batched(None, order, super::super::arena::CHUNK_SIZE);
        let add = |user: &[u8], seq: u64| {
            let k = ik(user, seq);
            let (pre, suf) = k.split_at(k.len() - 8);
            list.with_splice(|s| list.add(s, pre, suf, &seq.to_le_bytes()));
        };
        for i in 0..LINK_BATCH as u64 {
            add(format!("k{i:02}").as_bytes(), i + 1);
        }
        list.link_due();
        assert_eq!(list.unlinked(), 0);
        armed.store(true, MemOrder::Relaxed);
        for i in 0..LINK_BATCH as u64 {
            let user = if i == 5 { b"boom".to_vec() } else { format!("m{i:02}").into_bytes() };
            add(&user, 100 + i);
        }
        let cut = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| list.link_due()));
        assert!(cut.is_err(), "the order panicked");
        assert!(list.is_poisoned());
        let unlinked = list.unlinked();
        assert!(unlinked > 0);
        add(b"n", 200);
        list.link_due();
        list.settle();
        assert_eq!(list.unlinked(), unlinked + 1, "nothing linked after the panic");
        armed.store(false, MemOrder::Relaxed);
        check_levels(&list);
        let keys = collect(&list);
        for i in 0..LINK_BATCH as u64 {
            let k = ik(format!("k{i:02}").as_bytes(), i + 1);
            assert!(keys.iter().any(|(x, _)| *x == k), "linked before the panic: {i}");
        }
    }
}
