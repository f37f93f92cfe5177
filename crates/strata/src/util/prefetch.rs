//! A software prefetch: asks the CPU to start loading the cache line at an address, so that a
//! later load of it does not wait for memory. Used where the addresses of several loads are
//! known before the first is needed (a memtable walk, a block seek, the block cache's clock
//! sweep).

/// Cache line size the prefetches assume.
pub const CACHE_LINE: usize = 64;

/// Starts loading the cache line holding `p` into every cache level. Only a hint: it never
/// faults and reads nothing into the program, whatever the address (null and dangling
/// included); a no-op off x86-64.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never dereferences its address in the program's sense: it cannot
    // fault or change the program's state. SSE is part of the x86-64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Starts loading every cache line that bytes `p..p + len` touch. Only hints, like
/// [`prefetch`]: the range may reach past an allocation (addresses are formed with wrapping
/// arithmetic and never dereferenced).
#[inline(always)]
pub fn prefetch_span(p: *const u8, len: usize) {
    prefetch_lines::<1>(p, len);
}

/// [`prefetch_span`] for ranges of a few KiB: eight lines a step, so the loop costs little
/// beside the hints. It may ask for up to seven lines past the range (hints only, as above).
#[inline(always)]
pub fn prefetch_span_wide(p: *const u8, len: usize) {
    prefetch_lines::<8>(p, len);
}

/// The lines `p..p + len` touch, `STEP` lines a step (rounded up to whole steps).
#[inline(always)]
fn prefetch_lines<const STEP: usize>(p: *const u8, len: usize) {
    let misalign = p as usize % CACHE_LINE;
    let line0 = p.wrapping_sub(misalign);
    let mut off = 0;
    while off < misalign + len {
        for i in 0..STEP {
            prefetch(line0.wrapping_add(off + i * CACHE_LINE));
        }
        off += STEP * CACHE_LINE;
    }
}
