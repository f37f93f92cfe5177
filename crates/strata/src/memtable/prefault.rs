//! Huge arena chunks faulted in ahead of need, by a helper thread.
//!
//! Why: a large memtable's chunks are fresh huge pages (`arena.rs`, `HUGE_CHUNK_SIZE`) until
//! dropped arenas leave spares, and the first write into each takes a page fault in which the
//! kernel zeroes 2 MiB: on the writing thread, inside a write group. The helper maps the next
//! chunk and faults it in (a write per page: `fault_in` says why not `MADV_POPULATE_WRITE`)
//! while the writers fill the current one, so the fault and the zeroing happen beside the
//! writes instead of in them.
//!
//! Contract: at most one chunk is kept ready in a process (resident memory no memtable counts,
//! as the spares); [`take`] hands it over, if there is one, and asks for the next; the helper
//! thread starts with the first request and sleeps whenever a chunk is ready or none is asked
//! for. Nobody waits for the helper: [`take`] never blocks on it, so a helper that failed to
//! start, or stopped, leaves every chunk to be mapped where it is needed. Where chunks are not
//! mapped (Miri, targets without mappings) there is no helper and [`take`] returns `None`.

use std::ptr::NonNull;

use super::arena::HUGE_CHUNK_SIZE;

/// A huge chunk nobody points into: mapped and faulted in by the helper, owned by whichever
/// thread takes it.
struct Ready(NonNull<u8>);

// SAFETY: see `Ready`: the pointer is to memory no other thread uses.
unsafe impl Send for Ready {}

struct State {
    ready: Option<Ready>,
    /// A chunk was taken (or asked for) since the helper last made one.
    wanted: bool,
    started: bool,
}

static STATE: parking_lot::Mutex<State> =
    parking_lot::Mutex::new(State { ready: None, wanted: false, started: false });
static WAKE: parking_lot::Condvar = parking_lot::Condvar::new();

/// The chunk the helper made ready (`HUGE_CHUNK_SIZE` bytes from `util::page_buf::map_huge`,
/// faulted in, zeroed), if there is one; either way the helper is asked to make the next.
#[cfg(all(unix, not(miri)))]
pub(super) fn take() -> Option<NonNull<u8>> {
    let mut s = STATE.lock();
    let got = s.ready.take().map(|r| r.0);
    s.wanted = true;
    if !s.started {
        s.started = true;
        // A helper that cannot start leaves every chunk to be mapped where it is needed.
        let _ = std::thread::Builder::new().name("strata-prefault".into()).spawn(helper);
    }
    WAKE.notify_one();
    got
}

#[cfg(not(all(unix, not(miri))))]
pub(super) fn take() -> Option<NonNull<u8>> {
    None
}

#[cfg(all(unix, not(miri)))]
fn helper() {
    loop {
        {
            let mut s = STATE.lock();
            while !s.wanted || s.ready.is_some() {
                WAKE.wait(&mut s);
            }
            s.wanted = false;
        }
        // Refused by the OS: nothing is made until the next request.
        let Some(p) = crate::util::page_buf::map_huge(HUGE_CHUNK_SIZE) else { continue };
        fault_in(p, HUGE_CHUNK_SIZE);
        STATE.lock().ready = Some(Ready(p));
    }
}

/// Faults `size` bytes from `p` in, writable (the pages are fresh and zero: a write of zero
/// leaves them as they are).
///
/// By page faults, one write per page (one fault per huge page), not `MADV_POPULATE_WRITE`:
/// Linux populates a range under the process's memory-map lock, held for reading until the
/// last page is zeroed, and every `mmap` and `munmap` of the process (the WAL's windows,
/// `env/mapped.rs`, mapped by the writers) waits for it; where a hypervisor backs guest memory
/// lazily a fresh huge page takes milliseconds to zero. A fault takes only its mapping's own
/// lock (Linux 6.4 on, where the mapping has its anonymous-memory record, which
/// `util::page_buf::map_huge` sets up), so the writers' mappings do not wait.
#[cfg(all(unix, not(miri)))]
fn fault_in(p: NonNull<u8>, size: usize) {
    for off in (0..size).step_by(crate::util::page_buf::PAGE) {
        // SAFETY: `off < size`, inside the mapping this thread owns; nothing else refers to it.
        unsafe { p.as_ptr().add(off).write_volatile(0) };
    }
}

#[cfg(all(test, unix, not(miri)))]
mod tests {
    use super::*;

    /// Asked for, the helper makes a chunk ready: a whole huge chunk, zeroed and writable.
    #[test]
    fn the_helper_makes_a_zeroed_chunk_ready() {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let p = loop {
            // Another test's memtable may take the chunk first: ask again until one comes.
            if let Some(p) = take() {
                break p;
            }
            assert!(std::time::Instant::now() < deadline, "no chunk was made ready in 20 s");
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        // SAFETY: the chunk is this test's, `HUGE_CHUNK_SIZE` bytes, unmapped once below.
        let chunk = unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), HUGE_CHUNK_SIZE) };
        assert!(chunk.iter().all(|&b| b == 0), "a ready chunk is zeroed");
        chunk[HUGE_CHUNK_SIZE - 1] = 7;
        assert_eq!(chunk[HUGE_CHUNK_SIZE - 1], 7);
        crate::util::page_buf::unmap(p, HUGE_CHUNK_SIZE);
    }
}
