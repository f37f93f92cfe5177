//! A bump allocator for the memtable's nodes.
//!
//! Memory comes from large chunks and is handed out in 8-byte aligned pieces; nothing is freed
//! until the whole arena is dropped, so a pointer returned by [`Arena::allocate`] stays valid (and
//! never moves) for the arena's lifetime. That is what lets the skiplist's readers follow raw
//! pointers without reference counting.
//!
//! Requests larger than a quarter of a chunk get a chunk of their own, so a large value neither
//! wastes the tail of the current chunk nor forces an oversized standard chunk. The first
//! chunk is small ([`FIRST_CHUNK_SIZE`]): an empty or nearly empty memtable (a new one, or a
//! column family that is rarely written) holds a few KiB, not a whole chunk.
//!
//! Standard chunks are mapped from the OS (on Unix) rather than taken from the global
//! allocator, and a dropped arena's go to a bounded set of spares ([`SparePool`]) for the
//! next memtables, the rest back to the OS at once. From the allocator, once it had seen a
//! large block freed (glibc then stops mapping blocks of that size), chunks came from its heap,
//! whose holes stayed resident after their memtable was gone: 10-15 MB of peak RSS in a
//! write-heavy benchmark. Elsewhere (and under Miri) the global allocator serves every chunk.
//! A huge chunk the spares cannot give comes from a helper thread that faults the next one in
//! ahead of need (`prefault.rs`), so a large memtable's writers do not zero fresh pages.
//!
//! With a [`MemoryTracker`], every chunk obtained is reported to its write buffer manager
//! (which counts memory at chunk granularity), and the tracker's drop, after the chunks are
//! freed, tells the manager they are gone.
//!
//! Accounting: [`Arena::memory_usage`] counts bytes handed out (with alignment padding), bytes
//! abandoned at the tail of a chunk when a new chunk was started, and the chunk list itself. It
//! does not count the untouched remainder of the current chunk: those pages are reserved but not
//! yet written, so the number tracks resident memory, and a memtable with a few entries reports a
//! few hundred bytes rather than a whole chunk (the DB compares it with `write_buffer_size`, which
//! tests set to a few KiB).

use std::alloc::{self, Layout};
use std::ptr::NonNull;

use super::write_buffer_manager::MemoryTracker;
use crate::util::page_buf::{map, map_huge, unmap, HUGE};

/// Alignment of every allocation: enough for the node header and its atomic pointers.
pub(crate) const ALIGN: usize = 8;

/// Size of a standard chunk of a small memtable's arena.
pub(crate) const CHUNK_SIZE: usize = 1 << 20;

/// Size of a standard chunk of a large memtable's arena ([`chunk_for`]): one transparent huge
/// page, mapped 2 MiB-aligned with huge pages asked for ([`map_huge`]). A skiplist insert or
/// lookup visits a node per level at addresses spread over the whole memtable; with 4 KiB
/// pages nearly every visit in a large memtable also missed the TLB.
pub(crate) const HUGE_CHUNK_SIZE: usize = HUGE;

/// The standard chunk size for a memtable that holds up to `capacity` bytes: huge-page
/// chunks from 16 MiB on, where a chunk is at most an eighth of the memtable (RocksDB sizes
/// its arena blocks at an eighth of the write buffer); 1 MiB below, so a small memtable (and
/// a write buffer manager's count, which moves a chunk at a time) does not grow by 2 MiB at
/// its first entries.
pub(crate) fn chunk_for(capacity: usize) -> usize {
    if capacity >= 8 * HUGE_CHUNK_SIZE {
        HUGE_CHUNK_SIZE
    } else {
        CHUNK_SIZE
    }
}

/// Size of the first chunk (it holds the skiplist's head node and the first entries).
pub(crate) const FIRST_CHUNK_SIZE: usize = 4096;

/// One block obtained from the global allocator or mapped from the OS ([`map`]), freed when
/// the arena drops.
struct Chunk {
    ptr: NonNull<u8>,
    layout: Layout,
    mapped: bool,
}

/// A bump allocator that frees everything at once. Not synchronised: the skiplist keeps it
/// behind a lock held only while a node's bytes are reserved.
pub(crate) struct Arena {
    chunks: Vec<Chunk>,
    /// Next free byte of the current standard chunk (dangling when there is none).
    cursor: NonNull<u8>,
    /// Bytes left after `cursor` in the current standard chunk.
    remaining: usize,
    /// See the module doc.
    usage: usize,
    /// Reports chunks to a write buffer manager (module doc).
    tracker: Option<MemoryTracker>,
    /// The standard chunk size: [`CHUNK_SIZE`] or [`HUGE_CHUNK_SIZE`]. Requests above a
    /// quarter of it get a dedicated chunk.
    chunk: usize,
}

// SAFETY: the arena exclusively owns its chunks (plain heap memory with no thread affinity); the
// raw pointers are only dereferenced through the allocations handed out, whose users are
// responsible for their own synchronisation.
unsafe impl Send for Arena {}

impl Arena {
    #[cfg(test)]
    pub(crate) fn new() -> Self {
        Self::with_tracker(None, CHUNK_SIZE)
    }

    /// An arena whose chunks are reported to `tracker`, with standard chunks of `chunk`
    /// bytes ([`CHUNK_SIZE`] or [`HUGE_CHUNK_SIZE`]: [`chunk_for`]).
    pub(crate) fn with_tracker(tracker: Option<MemoryTracker>, chunk: usize) -> Self {
        debug_assert!(chunk == CHUNK_SIZE || chunk == HUGE_CHUNK_SIZE, "chunk {chunk}");
        Arena {
            chunks: Vec::new(),
            cursor: NonNull::dangling(),
            remaining: 0,
            usage: 0,
            tracker,
            chunk,
        }
    }

    /// The tracker, if any.
    pub(crate) fn tracker_mut(&mut self) -> Option<&mut MemoryTracker> {
        self.tracker.as_mut()
    }

    /// Returns `size` bytes aligned to [`ALIGN`], uninitialised, valid until the arena drops.
    /// `size` must be non-zero. Aborts (via `handle_alloc_error`) when the system is out of
    /// memory, like every std collection.
    pub(crate) fn allocate(&mut self, size: usize) -> NonNull<u8> {
        debug_assert!(size > 0);
        let size = round_up(size);
        if size > self.chunk / 4 {
            self.usage += size;
            return self.new_chunk(size);
        }
        if size > self.remaining {
            // The tail of the old chunk is lost; count it so the total stays honest.
            self.usage += self.remaining;
            let chunk = if self.chunks.is_empty() && size <= FIRST_CHUNK_SIZE {
                FIRST_CHUNK_SIZE
            } else {
                self.chunk
            };
            self.cursor = self.new_chunk(chunk);
            self.remaining = chunk;
        }
        let p = self.cursor;
        // SAFETY: `size <= remaining`, so `cursor + size` is within (or one past the end of) the
        // current chunk, which is a single allocation.
        self.cursor = unsafe { p.add(size) };
        self.remaining -= size;
        self.usage += size;
        p
    }

    /// See the module doc. Cheap.
    pub(crate) fn memory_usage(&self) -> usize {
        self.usage + self.chunks.capacity() * std::mem::size_of::<Chunk>()
    }

    #[cfg(test)]
    /// Total bytes obtained from the allocator (reserved, touched or not).
    pub(crate) fn reserved_bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.layout.size()).sum()
    }

    fn new_chunk(&mut self, size: usize) -> NonNull<u8> {
        let layout = match Layout::from_size_align(size, ALIGN) {
            Ok(l) => l,
            // Only when `size` is within ALIGN of isize::MAX: no allocator could satisfy it.
            Err(_) => capacity_overflow(size),
        };
        let mapped = match size {
            CHUNK_SIZE => SPARE.lock().take().or_else(|| map(size)),
            // Past the spares, the chunk the prefault helper made ready (`prefault.rs`), which
            // asks it for the next.
            HUGE_CHUNK_SIZE => {
                SPARE_HUGE.lock().take().or_else(super::prefault::take).or_else(|| map_huge(size))
            }
            _ if size > CHUNK_SIZE => map(size),
            _ => None,
        };
        let (ptr, mapped) = match mapped {
            Some(p) => (p, true),
            None => {
                // SAFETY: `layout` has a non-zero size (`size > 0` is a precondition of
                // `allocate`, and CHUNK_SIZE > 0).
                let raw = unsafe { alloc::alloc(layout) };
                let Some(ptr) = NonNull::new(raw) else { alloc::handle_alloc_error(layout) };
                (ptr, false)
            }
        };
        self.chunks.push(Chunk { ptr, layout, mapped });
        if let Some(t) = &mut self.tracker {
            t.allocated(size);
        }
        ptr
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        let (mut standard, mut huge) = (Vec::new(), Vec::new());
        for c in &self.chunks {
            if !c.mapped {
                // SAFETY: every unmapped chunk was allocated by `alloc::alloc` with exactly
                // this layout and is freed once, here.
                unsafe { alloc::dealloc(c.ptr.as_ptr(), c.layout) };
            } else if c.layout.size() == CHUNK_SIZE {
                standard.push(c.ptr);
            } else if c.layout.size() == HUGE_CHUNK_SIZE {
                huge.push(c.ptr);
            } else {
                unmap(c.ptr, c.layout.size());
            }
        }
        // Each pool's lock is released before the chunks it refuses are unmapped.
        for (pool, chunks, size) in
            [(&SPARE, standard, CHUNK_SIZE), (&SPARE_HUGE, huge, HUGE_CHUNK_SIZE)]
        {
            if chunks.is_empty() {
                continue;
            }
            let refused = pool.lock().give(chunks);
            for p in refused {
                unmap(p, size);
            }
        }
    }
}

/// Mapped standard chunks of dropped arenas, resident, kept for the next arenas. A new
/// memtable takes its chunks from here before mapping fresh ones: its writes then find
/// resident pages instead of faulting each page in (about 3% of a write-heavy run's
/// throughput). At most as many are kept as the most standard chunks one arena has held:
/// the process's memtable memory stays within what its live memtables take, plus at most one
/// memtable's worth of spares (a memtable that takes spares shrinks the pool by as much; one
/// that mapped its chunks while the pool was empty does not, so both can be full at once).
struct SparePool {
    chunks: Vec<Spare>,
    max: usize,
}

/// A chunk nobody points into (its arena is gone); whichever thread takes it owns it.
struct Spare(NonNull<u8>);

// SAFETY: see `Spare`: the pointer is to memory no other thread uses.
unsafe impl Send for Spare {}

impl SparePool {
    const fn new() -> SparePool {
        SparePool { chunks: Vec::new(), max: 0 }
    }

    fn take(&mut self) -> Option<NonNull<u8>> {
        self.chunks.pop().map(|s| s.0)
    }

    /// Takes a dropped arena's standard mapped chunks, keeping what the bound allows;
    /// returns the rest, for the caller to unmap.
    fn give(&mut self, mut chunks: Vec<NonNull<u8>>) -> Vec<NonNull<u8>> {
        self.max = self.max.max(chunks.len());
        let keep = self.max.saturating_sub(self.chunks.len()).min(chunks.len());
        self.chunks.extend(chunks.drain(..keep).map(Spare));
        chunks
    }
}

static SPARE: parking_lot::Mutex<SparePool> = parking_lot::Mutex::new(SparePool::new());

/// The same for chunks of [`HUGE_CHUNK_SIZE`] (a huge mapping; `map_huge`).
static SPARE_HUGE: parking_lot::Mutex<SparePool> = parking_lot::Mutex::new(SparePool::new());

#[inline]
fn round_up(n: usize) -> usize {
    match n.checked_add(ALIGN - 1) {
        Some(m) => m & !(ALIGN - 1),
        None => capacity_overflow(n),
    }
}

#[cold]
fn capacity_overflow(n: usize) -> ! {
    panic!("memtable arena: allocation of {n} bytes exceeds the address space")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_memtables_take_huge_chunks_and_small_ones_a_megabyte() {
        assert_eq!(chunk_for(256 << 10), CHUNK_SIZE);
        assert_eq!(chunk_for((16 << 20) - 1), CHUNK_SIZE);
        assert_eq!(chunk_for(16 << 20), HUGE_CHUNK_SIZE);
        assert_eq!(chunk_for(usize::MAX), HUGE_CHUNK_SIZE);
        let mut a = Arena::with_tracker(None, HUGE_CHUNK_SIZE);
        let p = a.allocate(8000);
        assert_eq!(a.reserved_bytes(), HUGE_CHUNK_SIZE, "a standard chunk at once (above 4 KiB)");
        #[cfg(all(unix, not(miri)))]
        assert!((p.as_ptr() as usize).is_multiple_of(HUGE_CHUNK_SIZE), "at a huge page's start");
        // Above a quarter of the chunk: a chunk of its own; below: from the standard one.
        a.allocate((512 << 10) + 8);
        assert_eq!(a.reserved_bytes(), HUGE_CHUNK_SIZE + (512 << 10) + 8);
        a.allocate(512 << 10);
        assert_eq!(a.reserved_bytes(), HUGE_CHUNK_SIZE + (512 << 10) + 8);
        let _ = p;
    }

    #[test]
    fn spares_are_bounded_by_the_largest_arena_and_reused() {
        let p = |i: usize| NonNull::new((i * CHUNK_SIZE) as *mut u8).unwrap();
        let mut pool = SparePool::new();
        // The first arena's three chunks are all kept (the bound becomes three).
        assert!(pool.give((1..=3).map(p).collect()).is_empty());
        // A smaller arena adds nothing past the bound: both of its chunks come back.
        assert_eq!(pool.give((4..=5).map(p).collect()), vec![p(4), p(5)]);
        // Chunks taken make room for as many.
        assert_eq!(pool.take(), Some(p(3)));
        assert_eq!(pool.take(), Some(p(2)));
        assert_eq!(pool.give((6..=8).map(p).collect()), vec![p(8)]);
        // A larger arena raises the bound to its own size.
        assert_eq!(pool.give((9..=13).map(p).collect()), vec![p(11), p(12), p(13)]);
        assert_eq!(pool.chunks.len(), 5);
        let mut taken = Vec::new();
        while let Some(c) = pool.take() {
            taken.push(c.as_ptr() as usize / CHUNK_SIZE);
        }
        assert_eq!(taken, [10, 9, 7, 6, 1]);
    }

    #[test]
    fn allocations_are_aligned_disjoint_and_writable() {
        let mut a = Arena::new();
        let mut spans = Vec::new();
        let n = if cfg!(miri) { 200 } else { 2000 };
        for i in 1..n {
            let size = (i * 37) % 700 + 1;
            let p = a.allocate(size);
            assert_eq!(p.as_ptr() as usize % ALIGN, 0);
            // SAFETY: `p` is valid for `size` bytes.
            unsafe { std::ptr::write_bytes(p.as_ptr(), i as u8, size) };
            spans.push((p, size, i as u8));
        }
        for &(p, size, fill) in &spans {
            // SAFETY: each span is still owned by the arena and was fully written above.
            let s = unsafe { std::slice::from_raw_parts(p.as_ptr(), size) };
            assert!(s.iter().all(|&b| b == fill));
        }
        spans.sort_unstable_by_key(|s| s.0.as_ptr().addr());
        for w in spans.windows(2) {
            assert!(w[0].0.as_ptr().addr() + w[0].1 <= w[1].0.as_ptr().addr(), "overlap");
        }
    }

    #[test]
    fn usage_tracks_allocations_and_large_requests_get_own_chunk() {
        let mut a = Arena::new();
        assert_eq!(a.memory_usage(), 0);
        a.allocate(10);
        let small = a.memory_usage();
        assert!((16..1024).contains(&small), "{small}");
        assert_eq!(a.reserved_bytes(), FIRST_CHUNK_SIZE);
        let big = CHUNK_SIZE + 3;
        let p = a.allocate(big);
        // SAFETY: valid for `big` bytes.
        unsafe { std::ptr::write_bytes(p.as_ptr(), 0xab, big) };
        assert!(a.memory_usage() >= small + big);
        assert_eq!(a.reserved_bytes(), FIRST_CHUNK_SIZE + round_up(big));
        // The first chunk keeps serving small requests.
        a.allocate(10);
        assert_eq!(a.reserved_bytes(), FIRST_CHUNK_SIZE + round_up(big));
        // Past it, chunks are standard.
        a.allocate(FIRST_CHUNK_SIZE);
        assert_eq!(a.reserved_bytes(), FIRST_CHUNK_SIZE + round_up(big) + CHUNK_SIZE);
    }

    #[test]
    fn abandoned_tail_is_counted() {
        let t = CHUNK_SIZE / 4;
        let mut a = Arena::new();
        a.allocate(8);
        // The first chunk's tail is abandoned: `t` needs a standard chunk.
        a.allocate(t);
        assert_eq!(a.usage, FIRST_CHUNK_SIZE + t);
        a.allocate(8);
        a.allocate(t);
        a.allocate(t);
        assert_eq!(a.usage, FIRST_CHUNK_SIZE + 8 + 3 * t);
        // `t` no longer fits the `t - 8` bytes left: the tail is abandoned and counted.
        a.allocate(t);
        assert_eq!(a.reserved_bytes(), FIRST_CHUNK_SIZE + 2 * CHUNK_SIZE);
        assert_eq!(a.usage, FIRST_CHUNK_SIZE + CHUNK_SIZE + t);
    }
}
