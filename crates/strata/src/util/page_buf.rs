//! [`PageBuf`]: a zeroed, page-aligned byte buffer for I/O, and the page mappings
//! ([`map`], [`map_huge`], [`unmap`]) behind it and behind the memtable's arena chunks.
//!
//! ```text
//!   len < MAP_AT    a Vec of len + align - 1 bytes, used from  freed to the allocator
//!                   its first aligned byte (align: PAGE, or
//!                   less where asked)
//!   len >= MAP_AT   anonymous private mapping of len rounded up to PAGE bytes
//!                                                            unmapped: back to the OS at once
//! ```
//!
//! Why map the large ones: glibc maps a large block itself only until it sees one freed; then
//! it raises its mapping threshold to that size, and every later block of that size comes
//! from its heap, whose free holes stay resident. A compaction's readahead windows (2 MiB
//! per input under direct I/O) and direct writers' windows (1 MiB) are made and dropped all
//! the time: from the heap they kept megabytes of a process's peak RSS after the compaction
//! that used them was over (`docs/measurements.md`). A mapping costs two
//! system calls and a fault per page touched, nothing next to the megabytes of I/O such a
//! buffer is made for. [`MAP_AT`] is glibc's own initial threshold.
//!
//! Bytes are zeroed either way (a fresh mapping is; the vector is made zeroed): a buffer never
//! exposes what an earlier user left in it.

use std::ptr::NonNull;

/// Alignment of a buffer's address: a page, which satisfies every direct-I/O alignment.
pub const PAGE: usize = 4096;

/// Buffers of at least this many bytes are mapped from the OS.
pub const MAP_AT: usize = 128 << 10;

/// A zeroed byte buffer at a [`PAGE`]-aligned address, or one of a smaller alignment asked
/// for (see the module documentation).
pub struct PageBuf {
    mem: Mem,
    len: usize,
}

enum Mem {
    /// Below [`MAP_AT`] (or where nothing can be mapped): a `Vec` longer than the buffer by
    /// the alignment less one, which starts at the vector's first aligned byte. Not an aligned allocation
    /// from the global allocator: glibc's aligned allocations split off and free the bytes
    /// before the aligned block, and point reads' and table opens' short-lived buffers left
    /// those pieces scattered over the heap (5 MB more resident memory in readwhilewriting).
    Heap { raw: Vec<u8>, start: usize },
    /// A mapping of `len` rounded up to [`PAGE`] bytes.
    Mapped(NonNull<u8>),
}

// SAFETY: a `PageBuf` exclusively owns its memory (no thread affinity: a mapping or a `Vec`);
// shared access only reads it through `&[u8]`.
unsafe impl Send for PageBuf {}
// SAFETY: as above; `&PageBuf` gives out only `&[u8]`.
unsafe impl Sync for PageBuf {}

impl PageBuf {
    /// `len` zeroed bytes at a [`PAGE`]-aligned address. Aborts when the system is out of
    /// memory, as a `Vec` does.
    pub fn new(len: usize) -> PageBuf {
        PageBuf::aligned_to(len, PAGE)
    }

    /// `len` zeroed bytes at an `align`-aligned address (`align` a power of two up to
    /// [`PAGE`]; a mapped buffer is page-aligned anyway). A buffered file's reader asks for 1:
    /// its small buffers then cost no padding.
    pub fn aligned_to(len: usize, align: usize) -> PageBuf {
        debug_assert!(align.is_power_of_two() && align <= PAGE, "alignment {align}");
        if len >= MAP_AT {
            if let Some(ptr) = map(mapped_size(len)) {
                return PageBuf { mem: Mem::Mapped(ptr), len };
            }
        }
        let raw = vec![0u8; if len == 0 { 0 } else { len + align - 1 }];
        // `align_offset` on a byte pointer is always computable at run time (< align).
        let start = raw.as_ptr().align_offset(align).min(raw.len().saturating_sub(len));
        PageBuf { mem: Mem::Heap { raw, start }, len }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn as_slice(&self) -> &[u8] {
        match &self.mem {
            Mem::Heap { raw, start } => &raw[*start..*start + self.len],
            // SAFETY: a live mapping of at least `len` bytes owned by `self`, zeroed by the OS
            // and written only through `as_mut_slice`.
            Mem::Mapped(ptr) => unsafe { std::slice::from_raw_parts(ptr.as_ptr(), self.len) },
        }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        match &mut self.mem {
            Mem::Heap { raw, start } => &mut raw[*start..*start + self.len],
            // SAFETY: as in `as_slice`, and `&mut self` makes this the only reference.
            Mem::Mapped(ptr) => unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), self.len) },
        }
    }
}

impl Default for PageBuf {
    fn default() -> Self {
        PageBuf::new(0)
    }
}

impl Drop for PageBuf {
    fn drop(&mut self) {
        if let Mem::Mapped(ptr) = self.mem {
            unmap(ptr, mapped_size(self.len));
        }
    }
}

impl std::fmt::Debug for PageBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mapped = matches!(self.mem, Mem::Mapped(_));
        f.debug_struct("PageBuf").field("len", &self.len).field("mapped", &mapped).finish()
    }
}

fn mapped_size(len: usize) -> usize {
    len.div_ceil(PAGE) * PAGE
}

/// `size` bytes of fresh zeroed pages mapped from the OS, or `None` (on targets without
/// mappings, under Miri, or when the OS refuses): the caller then uses the global allocator.
#[cfg(all(unix, not(miri)))]
pub fn map(size: usize) -> Option<NonNull<u8>> {
    // SAFETY: an anonymous private mapping at an address of the kernel's choosing touches no
    // existing memory; the result is checked before use.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    NonNull::new(p.cast())
}

#[cfg(not(all(unix, not(miri))))]
pub fn map(_size: usize) -> Option<NonNull<u8>> {
    None
}

/// Size and alignment of a transparent huge page on x86-64 and arm64 Linux.
pub const HUGE: usize = 2 << 20;

/// Like [`map`], for `size` a multiple of [`HUGE`]: the mapping starts at a [`HUGE`]-aligned
/// address and, on Linux, asks for transparent huge pages (`MADV_HUGEPAGE`), so that memory
/// walked at random (a memtable's skiplist) costs one TLB entry per 2 MiB instead of one per
/// 4 KiB page. Where the kernel gives no huge pages (THP `never`, none free), the mapping is
/// an ordinary one. Unmapped by [`unmap`] with the same `size`.
///
/// The mapping comes with its anonymous-memory record (Linux's `anon_vma`) already made, so
/// that its first fault, the one that zeroes a whole huge page, is served under the mapping's
/// own lock. Without the record, Linux makes it in that fault under the process's memory-map
/// lock, held until the page is zeroed, and every `mmap` and `munmap` of the process waits
/// (milliseconds for a fresh huge page where a hypervisor backs guest memory lazily). The
/// record is made by touching a small page of the part given back below: the pieces of a
/// split mapping share it.
#[cfg(all(unix, not(miri)))]
pub fn map_huge(size: usize) -> Option<NonNull<u8>> {
    debug_assert!(size.is_multiple_of(HUGE), "size {size}");
    // Map one huge page more, then give back the unaligned head and the tail beyond `size`.
    let total = size.checked_add(HUGE)?;
    let raw = map(total)?;
    let start = raw.as_ptr() as usize;
    let aligned = start.next_multiple_of(HUGE);
    let head = aligned - start;
    let tail = HUGE - head;
    #[cfg(target_os = "linux")]
    // SAFETY: advice on the range just mapped (a small page for the touch below, whatever
    // the system's THP mode); the byte written is in the head or the tail, inside the mapping
    // and unmapped below with it, and nothing else refers to it.
    unsafe {
        libc::madvise(raw.as_ptr().cast(), total, libc::MADV_NOHUGEPAGE);
        let given_back = if head > 0 { 0 } else { size };
        raw.as_ptr().add(given_back).write_volatile(0);
    }
    if head > 0 {
        unmap(raw, head);
    }
    // SAFETY: `aligned + size` is within the mapping of `size + HUGE` bytes from `start`.
    let ptr = unsafe { NonNull::new_unchecked(raw.as_ptr().add(head)) };
    if tail > 0 {
        // SAFETY: as above; the tail is the mapping's last `tail` bytes.
        unmap(unsafe { NonNull::new_unchecked(ptr.as_ptr().add(size)) }, tail);
    }
    #[cfg(target_os = "linux")]
    // SAFETY: advice on a range this function mapped and owns; it changes no contents.
    unsafe {
        libc::madvise(ptr.as_ptr().cast(), size, libc::MADV_HUGEPAGE);
    }
    Some(ptr)
}

#[cfg(not(all(unix, not(miri))))]
pub fn map_huge(_size: usize) -> Option<NonNull<u8>> {
    None
}

/// Unmaps `ptr..ptr + size`, exactly one mapping made by [`map`] that nothing uses any more.
#[cfg(all(unix, not(miri)))]
pub fn unmap(ptr: NonNull<u8>, size: usize) {
    // SAFETY: the caller's contract: one whole mapping from `map`, unmapped once, with no
    // reference into it left.
    unsafe { libc::munmap(ptr.as_ptr().cast(), size) };
}

#[cfg(not(all(unix, not(miri))))]
pub fn unmap(_ptr: NonNull<u8>, _size: usize) {
    unreachable!("nothing is mapped on this target")
}

/// For tests: the value of `field` (`"Locked"`, `"VmFlags"`, ...) in `/proc/self/smaps` for
/// the mapping that holds `addr` (the kernel may have merged it with its neighbours).
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn smaps_field(addr: usize, field: &str) -> Option<String> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let holds_addr = |line: &str| {
        let (lo, hi) = line.split_once(' ')?.0.split_once('-')?;
        let (lo, hi) = (usize::from_str_radix(lo, 16).ok()?, usize::from_str_radix(hi, 16).ok()?);
        Some((lo..hi).contains(&addr))
    };
    let lines = smaps.lines().skip_while(|l| holds_addr(l) != Some(true)).skip(1);
    // The block ends at the next mapping's header line.
    lines
        .take_while(|l| holds_addr(l).is_none())
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .map(|v| v.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(all(unix, not(miri)))]
    #[test]
    fn huge_mappings_are_aligned_zeroed_writable_and_unmap_whole() {
        for n in [1, 3] {
            let size = n * HUGE;
            let p = map_huge(size).expect("mapped");
            assert!((p.as_ptr() as usize).is_multiple_of(HUGE));
            // SAFETY: `size` bytes mapped by `map_huge`, used only here.
            let bytes = unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), size) };
            assert!(bytes.iter().step_by(4096).all(|&b| b == 0));
            bytes[0] = 1;
            bytes[size - 1] = 2;
            assert_eq!((bytes[0], bytes[size - 1]), (1, 2));
            unmap(p, size);
        }
    }

    /// A huge mapping is handed over untouched (the small page `map_huge` touches to set up
    /// the mapping's anonymous-memory record is in the part it gives back) and asks for huge
    /// pages (the `MADV_NOHUGEPAGE` for that touch is lifted).
    #[cfg(target_os = "linux")]
    #[test]
    fn huge_mappings_are_untouched_and_ask_for_huge_pages() {
        let size = 2 * HUGE;
        let p = map_huge(size).expect("mapped");
        let mut resident = vec![0u8; size / PAGE];
        // SAFETY: `size` bytes mapped by `map_huge`; `resident` has one byte per page.
        let rc = unsafe { libc::mincore(p.as_ptr().cast(), size, resident.as_mut_ptr()) };
        assert_eq!(rc, 0, "mincore: {}", std::io::Error::last_os_error());
        let touched = resident.iter().filter(|&&r| r & 1 == 1).count();
        assert_eq!(touched, 0, "{touched} pages of a new huge mapping resident");
        let flags = smaps_field(p.as_ptr() as usize, "VmFlags")
            .expect("the mapping's VmFlags in /proc/self/smaps");
        let flags: Vec<&str> = flags.split_whitespace().collect();
        assert!(flags.contains(&"hg") && !flags.contains(&"nh"), "VmFlags {flags:?}");
        unmap(p, size);
    }

    #[test]
    fn buffers_are_zeroed_page_aligned_and_writable_at_every_size() {
        for len in [0, 1, 4095, 4096, 5000, MAP_AT - 1, MAP_AT, MAP_AT + 1, 2 << 20] {
            let mut b = PageBuf::new(len);
            assert_eq!(b.len(), len);
            let aligned = (b.as_slice().as_ptr() as usize).is_multiple_of(PAGE);
            assert!(aligned || len == 0, "len {len}");
            assert!(b.as_slice().iter().all(|&x| x == 0), "len {len}");
            b.as_mut_slice().fill(0xA5);
            assert!(b.as_slice().iter().all(|&x| x == 0xA5), "len {len}");
            #[cfg(all(unix, not(miri)))]
            assert_eq!(matches!(b.mem, Mem::Mapped(_)), len >= MAP_AT, "len {len}");
            let small = PageBuf::aligned_to(len, 512);
            assert!((small.as_slice().as_ptr() as usize).is_multiple_of(512) || len == 0);
            assert_eq!(small.as_slice().len(), len);
        }
    }

    /// A dropped mapped buffer's pages leave the process at once (the point of mapping them):
    /// resident memory falls by about the buffer's size when it drops.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_dropped_large_buffer_goes_back_to_the_os() {
        fn rss_kb() -> Option<usize> {
            let s = std::fs::read_to_string("/proc/self/status").ok()?;
            let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
            line.split_whitespace().nth(1)?.parse().ok()
        }
        let mut b = PageBuf::new(64 << 20);
        b.as_mut_slice().fill(1);
        let Some(with) = rss_kb() else { return };
        drop(b);
        let without = rss_kb().unwrap();
        // Other tests' threads run beside this one: allow them 16 MiB of growth.
        assert!(with > without + (48 << 10), "RSS {with} KiB with the buffer, {without} KiB after");
    }
}
