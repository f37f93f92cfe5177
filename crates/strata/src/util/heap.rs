//! Handing the C allocator's free pages back to the OS after a background job.
//!
//! A compaction allocates and frees tens of thousands of small buffers (input blocks, output
//! blocks, keys) across the allocator's arenas. glibc returns memory to the OS only from the top
//! of a heap; a free run of pages below a chunk still in use (a block the cache took, a table
//! reader's index) stays resident until a later allocation reuses it. After one L0->L5
//! compaction of io.sh's 6M-key DB the process held about 3 MB of such pages for good.
//! [`release_free_pages`] asks glibc (`malloc_trim(0)`) to give back every free page of every
//! arena (`madvise(MADV_DONTNEED)`; the address space stays, a later allocation that touches a
//! page again gets a zeroed one). It walks the arenas' free lists under each arena's lock: a
//! tenth to a half of a millisecond after a compaction of that DB, during which an allocation in
//! the arena being walked waits.
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

    /// Resident pages of this process, in bytes (`/proc/self/statm`'s second field).
    fn rss() -> usize {
        let s = std::fs::read_to_string("/proc/self/statm").unwrap();
        let pages: usize = s.split_whitespace().nth(1).unwrap().parse().unwrap();
        pages * 4096
    }

    #[test]
    fn a_freed_run_of_small_buffers_below_a_live_one_leaves_the_process() {
        // In a thread of its own, so the heap is one arena the test harness's other threads
        // do not share: 32 MiB of 4 KiB buffers, written, then one buffer above them kept
        // alive so the freed ones cannot be trimmed from the heap's top.
        std::thread::spawn(|| {
            let bufs: Vec<Vec<u8>> = (0..8192).map(|i| vec![i as u8 | 1; 4096]).collect();
            let keep = vec![7u8; 4096];
            drop(bufs);
            let before = rss();
            assert!(release_free_pages(), "a 32 MiB hole and nothing released");
            let after = rss();
            assert!(
                before.saturating_sub(after) >= 16 << 20,
                "RSS {before} -> {after}: the freed 32 MiB stayed resident"
            );
            assert_eq!(keep.iter().map(|&b| b as usize).sum::<usize>(), 7 * 4096);
        })
        .join()
        .unwrap();
    }
}
