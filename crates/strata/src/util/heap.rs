//! Handing the C allocator's free pages back to the OS after a background job.
//!
//! A compaction allocates and frees tens of thousands of small buffers (input blocks, output
//! blocks, keys) across the allocator's arenas. glibc returns memory to the OS only from the top
//! of a heap; a free run of pages below a chunk still in use (a block the cache took, a table
//! reader's index) stays resident until a later allocation reuses it, so after large
//! compactions a process keeps megabytes of such pages for good (`docs/measurements.md`).
//! [`release_free_pages`] asks glibc (`malloc_trim(0)`) to give back every free page of every
//! arena (`madvise(MADV_DONTNEED)`; the address space stays, a later allocation that touches a
//! page again gets a zeroed one). It walks the arenas' free lists under each arena's lock,
//! well under a millisecond after a large compaction, during which an allocation in the arena
//! being walked waits.
//!
//! Written here rather than taken from a crate: it is one call, and which allocator a process
//! uses is its own choice (with another global allocator the call still reaches glibc's heap,
//! which then holds only what C code allocated, and costs as little).
//!
//! Contract: never changes what any live allocation holds; a no-op where the C library is not
//! glibc.

/// Gives the allocator's free pages back to the OS; `true` when it released any.
pub(crate) fn release_free_pages() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim takes no pointers and touches only the allocator's free memory,
        // under its own locks; it is safe to call from any thread at any time.
        unsafe { libc::malloc_trim(0) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::*;

    const PAGE: usize = 4096;

    /// The whole pages inside `[start, start + len)`, and how many of them are resident
    /// (`mincore`): these pages only, so other tests' memory in the same process does not move
    /// the count. A page no longer mapped counts as not resident.
    fn resident(start: usize, len: usize) -> (usize, usize) {
        let first = start.div_ceil(PAGE) * PAGE;
        let pages = (start + len).saturating_sub(first) / PAGE;
        let mut vec = vec![0u8; pages];
        // SAFETY: mincore only reads the page tables of the range and writes one byte per
        // page into `vec`, which has that many; an unmapped range is an error, not a fault.
        let r =
            unsafe { libc::mincore(first as *mut libc::c_void, pages * PAGE, vec.as_mut_ptr()) };
        let n = if r == 0 { vec.iter().filter(|&&b| b & 1 != 0).count() } else { 0 };
        (pages, n)
    }

    #[test]
    fn freed_buffers_between_live_ones_leave_the_process() {
        // In a thread of its own, so the heap is an arena no running test shares: 512
        // buffers of 64 KiB (under glibc's mapping threshold), every other one freed: those
        // that lay between their live neighbours stay free chunks inside the heap (none
        // joins the heap's top, which glibc trims by itself), and only they are counted.
        std::thread::spawn(|| {
            // Another test's compaction may trim every arena between the free and the first
            // count (`Options::trim_heap_after_compaction`), and a buffer may come from a
            // free chunk out of line: then the hole is made again.
            for _ in 0..5 {
                let bufs: Vec<Vec<u8>> = (0..512).map(|i| vec![i as u8 | 1; 64 << 10]).collect();
                let at: Vec<usize> = bufs.iter().map(|b| b.as_ptr() as usize).collect();
                // The even buffers that lie right between their two odd neighbours.
                let next_to = |a: usize, b: usize| b > a && b - a <= (64 << 10) + 64;
                let holes: Vec<usize> = (2..511)
                    .step_by(2)
                    .filter(|&i| next_to(at[i - 1], at[i]) && next_to(at[i], at[i + 1]))
                    .map(|i| at[i])
                    .collect();
                if holes.len() < 64 {
                    continue;
                }
                let mut live = Vec::new();
                for (i, b) in bufs.into_iter().enumerate() {
                    if i % 2 == 1 {
                        live.push(b);
                    }
                }
                let count = || {
                    let each = holes.iter().map(|&s| resident(s, 64 << 10));
                    each.fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
                };
                let (pages, before) = count();
                if before < pages * 3 / 4 {
                    continue;
                }
                assert!(release_free_pages(), "free chunks between live ones and nothing released");
                let (_, after) = count();
                assert!(after <= pages / 4, "{before} -> {after} of {pages} pages: they stayed");
                let intact = live
                    .iter()
                    .enumerate()
                    .all(|(i, b)| b.iter().all(|&x| x == (2 * i + 1) as u8 | 1));
                assert!(intact, "live buffers kept their bytes");
                return;
            }
            panic!("no run of freed buffers between live ones could be made");
        })
        .join()
        .unwrap();
    }
}
