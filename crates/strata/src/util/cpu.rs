//! CPU time of the calling thread, for the compaction statistics' `CompMergeCPU(sec)`.
//!
//! Written with `libc` because the standard library has no per-thread CPU clock; where the OS
//! offers none (or the call fails) the time is 0, which the statistics show as such.

/// Microseconds of CPU (user + system) the calling thread has used.
#[cfg(unix)]
pub fn thread_cpu_micros() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `clock_gettime` writes one `timespec` through the valid, exclusive pointer it is
    // given and reads nothing else; CLOCK_THREAD_CPUTIME_ID needs no other set-up.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64).saturating_mul(1_000_000) + (ts.tv_nsec as u64) / 1_000
}

/// Microseconds of CPU the calling thread has used (not measured on this OS).
#[cfg(not(unix))]
pub fn thread_cpu_micros() -> u64 {
    0
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(unix)]
    fn grows_with_work() {
        let a = super::thread_cpu_micros();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(super::thread_cpu_micros() > a);
    }
}
