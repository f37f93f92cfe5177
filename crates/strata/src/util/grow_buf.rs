//! [`GrowBuf`]: a growable buffer of `Copy` values that lives in a `Vec` while it is small and
//! moves to a page mapping of its own once it reaches [`MAP_AT`] bytes, growing there by
//! remapping.
//!
//! ```text
//!   capacity < MAP_AT bytes    Vec<T>                      freed to the allocator
//!   capacity >= MAP_AT bytes   mapping, capacity rounded   unmapped: back to the OS at once
//!                              up to a page; grows by
//!                              doubling (mremap on Linux)
//! ```
//!
//! Why: glibc serves a large allocation with a mapping of its own only until it sees one
//! freed; it then raises its mapping threshold to that size (up to 32 MiB), and from then on
//! every allocation below the threshold comes from a heap whose freed holes stay resident.
//! A flush or a compaction builds its output table's filter and index in buffers that grow to
//! megabytes and die with the table builder (the key hashes of a 75 MB output alone: 8 MiB).
//! The first such buffer freed raised the threshold to 8 MiB, and the process kept the holes
//! of everything allocated and freed under it afterwards: 13 MB more resident memory after one
//! L0->L5 compaction (121 MB against 108 MB with the threshold held at 128 KiB). Buffers
//! built here never pass through glibc's mapping path, so they never raise it.
//!
//! Where nothing can be mapped (Miri, non-Unix, a failed `mmap`) the buffer stays a `Vec`.

use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use super::page_buf::{map, unmap, MAP_AT, PAGE};

/// A growable buffer of `Copy` values (module documentation).
pub struct GrowBuf<T: Copy> {
    store: Store<T>,
}

enum Store<T> {
    Heap(Vec<T>),
    /// `len` initialised values at the start of a mapping of `bytes` bytes.
    Mapped {
        ptr: NonNull<T>,
        len: usize,
        bytes: usize,
    },
}

// SAFETY: a `GrowBuf` exclusively owns its memory (a `Vec` or a private mapping), with no
// thread affinity; `&GrowBuf` only reads it.
unsafe impl<T: Copy + Send> Send for GrowBuf<T> {}
// SAFETY: as above.
unsafe impl<T: Copy + Sync> Sync for GrowBuf<T> {}

impl<T: Copy> Default for GrowBuf<T> {
    fn default() -> Self {
        GrowBuf::new()
    }
}

impl<T: Copy> GrowBuf<T> {
    pub const fn new() -> GrowBuf<T> {
        GrowBuf { store: Store::Heap(Vec::new()) }
    }

    pub fn len(&self) -> usize {
        match &self.store {
            Store::Heap(v) => v.len(),
            Store::Mapped { len, .. } => *len,
        }
    }

    /// Values the buffer holds without growing.
    pub fn capacity(&self) -> usize {
        match &self.store {
            Store::Heap(v) => v.capacity(),
            Store::Mapped { bytes, .. } => bytes / size_of::<T>().max(1),
        }
    }

    /// Whether the values are in a mapping of their own.
    pub fn is_mapped(&self) -> bool {
        matches!(self.store, Store::Mapped { .. })
    }

    /// Makes room for `additional` more values.
    #[inline]
    pub fn reserve(&mut self, additional: usize) {
        if self.capacity() - self.len() < additional {
            self.grow(additional);
        }
    }

    /// [`Self::reserve`] past the capacity. Out of line: a data block's builder appends a few
    /// bytes at a time and must not pay for this on every append.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, additional: usize) {
        let len = self.len();
        // Saturated sizes cannot be mapped and make the `Vec` fail as it fails on overflow.
        let need = len.saturating_add(additional);
        let elem = size_of::<T>().max(1);
        let want = need.max(self.capacity().saturating_mul(2)).max(4);
        let want_bytes = want.saturating_mul(elem);
        if want_bytes < MAP_AT || std::mem::align_of::<T>() > PAGE {
            if let Store::Heap(v) = &mut self.store {
                v.reserve(want - len);
                return;
            }
        }
        let bytes = want_bytes.next_multiple_of(PAGE);
        match &mut self.store {
            Store::Heap(v) => {
                let Some(ptr) = map(bytes) else {
                    v.reserve(want - len);
                    return;
                };
                let ptr = ptr.cast::<T>();
                // SAFETY: the fresh mapping holds `bytes >= len * size_of::<T>()` bytes at a
                // page-aligned address (aligned for `T`) and overlaps no live memory; the
                // vector's first `len` values are initialised `Copy` values.
                unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), ptr.as_ptr(), len) };
                self.store = Store::Mapped { ptr, len, bytes };
            }
            Store::Mapped { ptr, bytes: old, .. } => match os::remap(ptr.cast(), *old, bytes) {
                Some(p) => {
                    *ptr = p.cast();
                    *old = bytes;
                }
                None => {
                    // Nothing more can be mapped: the process is out of memory, as a `Vec`
                    // that cannot grow would find it.
                    let layout = std::alloc::Layout::array::<u8>(bytes);
                    std::alloc::handle_alloc_error(
                        layout.unwrap_or(std::alloc::Layout::new::<u8>()),
                    );
                }
            },
        }
    }

    #[inline]
    pub fn push(&mut self, x: T) {
        if let Store::Heap(v) = &mut self.store {
            if v.len() < v.capacity() {
                v.push(x); // the common case: a block builder's byte, with room for it
                return;
            }
        }
        self.reserve(1);
        match &mut self.store {
            Store::Heap(v) => v.push(x),
            Store::Mapped { ptr, len, .. } => {
                // SAFETY: `reserve(1)` left room for one more value after the `len` ones.
                unsafe { ptr.as_ptr().add(*len).write(x) };
                *len += 1;
            }
        }
    }

    #[inline]
    pub fn extend_from_slice(&mut self, xs: &[T]) {
        self.reserve(xs.len());
        match &mut self.store {
            Store::Heap(v) => v.extend_from_slice(xs),
            Store::Mapped { ptr, len, .. } => {
                // SAFETY: `reserve` left room for `xs.len()` values after the `len` ones, and
                // `xs` cannot overlap memory past this buffer's length.
                unsafe {
                    std::ptr::copy_nonoverlapping(xs.as_ptr(), ptr.as_ptr().add(*len), xs.len());
                }
                *len += xs.len();
            }
        }
    }

    /// Shortens the buffer to `n` values (no effect when it holds fewer); keeps its memory.
    pub fn truncate(&mut self, n: usize) {
        match &mut self.store {
            Store::Heap(v) => v.truncate(n),
            Store::Mapped { len, .. } => *len = (*len).min(n),
        }
    }

    /// Forgets every value; keeps the memory.
    pub fn clear(&mut self) {
        self.truncate(0);
    }

    /// The values as a `Vec`: the buffer's own when it is still one, else a copy (and the
    /// mapping is unmapped).
    pub fn into_vec(mut self) -> Vec<T> {
        match &mut self.store {
            Store::Heap(v) => std::mem::take(v),
            Store::Mapped { .. } => self.to_vec(),
        }
    }

    /// Sets the length to `n`, filling new places with `x`.
    pub fn resize(&mut self, n: usize, x: T) {
        let len = self.len();
        if n <= len {
            self.truncate(n);
            return;
        }
        self.reserve(n - len);
        match &mut self.store {
            Store::Heap(v) => v.resize(n, x),
            Store::Mapped { ptr, len, .. } => {
                for i in *len..n {
                    // SAFETY: `reserve` made room for `n` values.
                    unsafe { ptr.as_ptr().add(i).write(x) };
                }
                *len = n;
            }
        }
    }
}

impl<T: Copy> Deref for GrowBuf<T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        match &self.store {
            Store::Heap(v) => v,
            // SAFETY: the first `len` values of the mapping are initialised, and the mapping
            // lives as long as `self`.
            Store::Mapped { ptr, len, .. } => unsafe {
                std::slice::from_raw_parts(ptr.as_ptr(), *len)
            },
        }
    }
}

impl<T: Copy> DerefMut for GrowBuf<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        match &mut self.store {
            Store::Heap(v) => v,
            // SAFETY: as in `deref`, and `&mut self` makes the access exclusive.
            Store::Mapped { ptr, len, .. } => unsafe {
                std::slice::from_raw_parts_mut(ptr.as_ptr(), *len)
            },
        }
    }
}

impl<T: Copy> Drop for GrowBuf<T> {
    fn drop(&mut self) {
        if let Store::Mapped { ptr, bytes, .. } = self.store {
            unmap(ptr.cast(), bytes);
        }
    }
}

impl<T: Copy + std::fmt::Debug> std::fmt::Debug for GrowBuf<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrowBuf")
            .field("len", &self.len())
            .field("mapped", &self.is_mapped())
            .finish_non_exhaustive()
    }
}

#[cfg(all(target_os = "linux", not(miri)))]
mod os {
    use std::ptr::NonNull;

    /// Grows the mapping `ptr..ptr + old` to `new` bytes, moving it where it must.
    pub fn remap(ptr: NonNull<u8>, old: usize, new: usize) -> Option<NonNull<u8>> {
        // SAFETY: `ptr..ptr + old` is one whole mapping this buffer owns; with MREMAP_MAYMOVE
        // the kernel moves it if needed, and the old address is not used after a success.
        let p = unsafe { libc::mremap(ptr.as_ptr().cast(), old, new, libc::MREMAP_MAYMOVE) };
        if p == libc::MAP_FAILED {
            return None;
        }
        NonNull::new(p.cast())
    }
}

#[cfg(not(all(target_os = "linux", not(miri))))]
mod os {
    use super::{map, unmap};
    use std::ptr::NonNull;

    /// Grows the mapping by mapping anew, copying, and unmapping the old one.
    pub fn remap(ptr: NonNull<u8>, old: usize, new: usize) -> Option<NonNull<u8>> {
        let p = map(new)?;
        // SAFETY: both are whole mappings of at least `old` bytes, distinct.
        unsafe { std::ptr::copy_nonoverlapping(ptr.as_ptr(), p.as_ptr(), old) };
        unmap(ptr, old);
        Some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_a_vec_through_the_move_to_a_mapping_and_its_growth() {
        let mut g = GrowBuf::<u64>::new();
        let mut v = Vec::new();
        for i in 0..300_000u64 {
            match i % 5 {
                0 => {
                    g.extend_from_slice(&[i, i + 1, i + 2]);
                    v.extend_from_slice(&[i, i + 1, i + 2]);
                }
                _ => {
                    g.push(i * 7);
                    v.push(i * 7);
                }
            }
            if i % 99_991 == 0 {
                g.truncate(g.len() / 2);
                v.truncate(v.len() / 2);
            }
        }
        assert_eq!(&g[..], &v[..]);
        assert!(g.capacity() >= g.len());
        #[cfg(all(unix, not(miri)))]
        assert!(g.is_mapped(), "{} bytes of values are past MAP_AT", g.len() * 8);
        g[3] = 42;
        assert_eq!(g[3], 42);
        g.clear();
        assert_eq!(g.len(), 0);
        g.push(9);
        assert_eq!(&g[..], &[9]);
    }

    #[test]
    fn into_vec_moves_a_heap_buffer_and_copies_a_mapped_one() {
        let mut small = GrowBuf::<u8>::new();
        small.resize(100, 3);
        let at = small.as_ptr();
        let v = small.into_vec();
        assert_eq!((v.as_ptr(), v.len()), (at, 100), "moved, not copied");
        let mut big = GrowBuf::<u64>::new();
        big.extend_from_slice(&(0..50_000).collect::<Vec<u64>>());
        let v = big.into_vec();
        assert_eq!(v, (0..50_000).collect::<Vec<u64>>());
    }

    #[test]
    fn small_buffers_stay_on_the_heap() {
        let mut g = GrowBuf::<u8>::new();
        g.resize(MAP_AT / 2, 7);
        assert!(!g.is_mapped());
        assert!(g.iter().all(|&b| b == 7));
    }

    #[test]
    fn resize_fills_and_shrinks_at_every_size() {
        let mut g = GrowBuf::<u8>::new();
        for n in [10, MAP_AT - 1, MAP_AT + 1, 3 * MAP_AT, 5, 2 * MAP_AT] {
            let before = g.len();
            g.resize(n, (n % 251) as u8);
            assert_eq!(g.len(), n);
            if n > before {
                assert!(g[before..].iter().all(|&b| b == (n % 251) as u8), "resize to {n}");
            }
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_dropped_mapped_buffer_leaves_the_process() {
        let rss = || {
            let s = std::fs::read_to_string("/proc/self/statm").unwrap();
            s.split_whitespace().nth(1).unwrap().parse::<usize>().unwrap() * PAGE
        };
        let mut g = GrowBuf::<u8>::new();
        g.resize(64 << 20, 1);
        if !g.is_mapped() {
            return; // nothing could be mapped here
        }
        let with = rss();
        drop(g);
        let without = rss();
        assert!(with >= without + (48 << 20), "RSS {with} with the buffer, {without} after");
    }
}
