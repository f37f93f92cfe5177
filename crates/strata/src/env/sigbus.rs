//! The guard that turns a failed read of a mapped file into an error ([`guard`]).
//!
//! Why: a read through a mapping of a file ([`super::mapped_read`]) that the kernel cannot
//! satisfy (the device fails the page's read, or the file was cut below the mapped range by
//! someone else) raises `SIGBUS` in the reading thread, which stops the process; `pread`
//! would have returned an error. The engine's contract is an error naming the file, never a
//! stopped process, so every mapping the engine reads through is registered here, and a
//! process-wide `SIGBUS` handler that finds the faulting address in a registered range:
//! 1. marks the range failed (before anything else, so a reader that then sees the page's
//!    new bytes also sees the mark);
//! 2. maps a page of zeros over the faulting page (`MAP_FIXED`), so the interrupted load
//!    completes when the handler returns;
//! 3. returns. The reader checks [`Guarded::failed`] after its read and reports an I/O error
//!    instead of the bytes it read; the mapping is not read again.
//!
//! A fault outside every registered range goes to the handler that was installed before
//! this one (Rust's own stack-overflow handler, for one), or, if that was the default
//! action, gets the default action back, and the fault repeats into it.
//!
//! The registry is a fixed table of [`SLOTS`] ranges the handler scans without locks or
//! allocation (the only things a signal handler may do). Each slot is a sequence lock: its
//! writer makes the sequence odd, writes the range, makes it even again; the handler takes a
//! range only when it read the same even sequence before and after it. A mapping that finds
//! no free slot is not made (the caller reads with `pread`).

use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// How many mappings can be guarded at once: each open table file holds one.
pub(crate) const SLOTS: usize = 4096;

struct Slot {
    /// Claimed by a live [`Guarded`].
    used: AtomicBool,
    /// Even when `start..end` is stable; odd while its owner writes it.
    seq: AtomicU32,
    start: AtomicUsize,
    end: AtomicUsize,
    failed: AtomicBool,
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            used: AtomicBool::new(false),
            seq: AtomicU32::new(0),
            start: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
            failed: AtomicBool::new(false),
        }
    }

    /// Writes the range under the sequence lock (only the slot's owner writes).
    fn set(&self, start: usize, end: usize) {
        self.seq.fetch_add(1, Ordering::AcqRel);
        self.start.store(start, Ordering::Release);
        self.end.store(end, Ordering::Release);
        self.seq.fetch_add(1, Ordering::AcqRel);
    }

    /// Whether `addr` lies in the slot's stable, non-empty range.
    fn holds(&self, addr: usize) -> bool {
        let s1 = self.seq.load(Ordering::Acquire);
        if s1 % 2 == 1 {
            return false;
        }
        let start = self.start.load(Ordering::Acquire);
        let end = self.end.load(Ordering::Acquire);
        fence(Ordering::Acquire);
        self.seq.load(Ordering::Relaxed) == s1 && start <= addr && addr < end
    }
}

static REGISTRY: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];

/// Where the next claim starts looking, so claims do not all scan from slot 0.
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// The memory page size, read once before the handler is installed (the handler may not
/// call `sysconf`).
static PAGE: AtomicUsize = AtomicUsize::new(4096);

/// The `SIGBUS` action before ours, to pass foreign faults on to.
struct Previous(libc::sigaction);
// SAFETY: a `sigaction` is plain data (a handler's address, flags, a mask); it is written once
// before the handler that reads it is installed, and never changed.
unsafe impl Send for Previous {}
// SAFETY: as above.
unsafe impl Sync for Previous {}
static PREVIOUS: OnceLock<Previous> = OnceLock::new();

/// Whether our handler is installed (false when the system refused it: no mapping is made).
fn installed() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(install)
}

fn install() -> bool {
    PAGE.store(super::mapped::page_size() as usize, Ordering::Relaxed);
    // SAFETY: a zeroed `sigaction` is a valid bit pattern for the plain-data struct.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: with a null new action, sigaction only writes the current one into `old`.
    if unsafe { libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut old) } != 0 {
        return false;
    }
    if PREVIOUS.set(Previous(old)).is_err() {
        return false;
    }
    // SAFETY: as above for the zeroed struct; `on_sigbus` has the three-argument signature
    // `SA_SIGINFO` asks for, and does only async-signal-safe things (atomics, `mmap`,
    // `sigaction`, calling the previous handler).
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = on_sigbus as *const () as usize;
        act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(libc::SIGBUS, &act, std::ptr::null_mut()) == 0
    }
}

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid `siginfo_t` to an `SA_SIGINFO` handler; `si_addr` is
    // the faulting address for a fault signal.
    let addr = unsafe { (*info).si_addr() } as usize;
    if let Some(slot) = REGISTRY.iter().find(|s| s.holds(addr)) {
        slot.failed.store(true, Ordering::SeqCst);
        let page = PAGE.load(Ordering::Relaxed);
        let at = addr & !(page - 1);
        // SAFETY: the page lies inside a live mapping the engine owns (its slot is held, and
        // a slot is released only after no read can reach the mapping); replacing it with a
        // private page of zeros leaves every other mapping untouched.
        let p = unsafe {
            libc::mmap(
                at as *mut libc::c_void,
                page,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if p != libc::MAP_FAILED {
            return;
        }
    }
    pass_on(sig, info, ctx);
}

/// Hands a fault that is not ours to the previous action.
fn pass_on(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let prev = PREVIOUS.get().map(|p| p.0);
    match prev {
        Some(p) if p.sa_sigaction != libc::SIG_DFL && p.sa_sigaction != libc::SIG_IGN => {
            if p.sa_flags & libc::SA_SIGINFO != 0 {
                // SAFETY: the previous action was installed with `SA_SIGINFO`, so its address
                // is a three-argument handler.
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    unsafe { std::mem::transmute(p.sa_sigaction) };
                f(sig, info, ctx);
            } else {
                // SAFETY: without `SA_SIGINFO` the address is a one-argument handler.
                let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(p.sa_sigaction) };
                f(sig);
            }
        }
        _ => {
            // The default action back; returning repeats the fault into it.
            // SAFETY: a zeroed `sigaction` with `SIG_DFL` (0) as its handler.
            unsafe {
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(libc::SIGBUS, &dfl, std::ptr::null_mut());
            }
        }
    }
}

/// A registered range: a fault inside it becomes [`Guarded::failed`] instead of a stopped
/// process. Released when dropped, which must happen only once nothing reads the range.
pub(crate) struct Guarded {
    slot: &'static Slot,
}

impl Guarded {
    /// Whether a read of the range faulted (its faulting page now reads as zeros).
    pub(crate) fn failed(&self) -> bool {
        self.slot.failed.load(Ordering::SeqCst)
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        // `failed` is reset by the next claim.
        self.slot.set(0, 0);
        self.slot.used.store(false, Ordering::Release);
    }
}

/// Registers `[start, start + len)`; `None` when every slot is taken or the handler could not
/// be installed (then the range must not be read through a mapping).
pub(crate) fn guard(start: usize, len: usize) -> Option<Guarded> {
    if !installed() {
        return None;
    }
    let first = NEXT.fetch_add(1, Ordering::Relaxed);
    for i in 0..SLOTS {
        let slot = &REGISTRY[(first + i) % SLOTS];
        if slot.used.compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            slot.failed.store(false, Ordering::Relaxed);
            slot.set(start, start.saturating_add(len));
            return Some(Guarded { slot });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registered(addr: usize) -> bool {
        REGISTRY.iter().any(|s| s.holds(addr))
    }

    /// A guarded range is found by the handler's lookup at its ends, not past them, and no
    /// longer once released.
    #[test]
    fn a_released_range_is_not_found() {
        // Addresses no mapping can have (the first page), so other tests' ranges never hold them.
        let g = guard(0x100, 0x200).unwrap();
        assert!(registered(0x100) && registered(0x2ff));
        assert!(!registered(0xff) && !registered(0x300));
        assert!(!g.failed());
        drop(g);
        assert!(!registered(0x100) && !registered(0x2ff));
    }
}
