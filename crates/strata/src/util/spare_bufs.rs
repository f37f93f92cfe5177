//! A thread's few spare block buffers: the bytes of a dropped block, kept for the next block
//! this thread decodes instead of going back to the allocator.
//!
//! A point read that misses the block cache allocates its block's buffer (a few KiB) and, by
//! inserting it, evicts and frees another of about the same size. With the C allocator both
//! cost cache misses on the chunk headers and free lists (neither buffer was touched
//! recently); handing the victim's buffer to the next decode skips both. The blocks a
//! compaction reads and drops one after the other reuse their buffers the same way.
//!
//! Contract: [`take`] returns an empty `Vec` whose capacity is at least the asked length and
//! at most an eighth over it (a spare that fits, or a new exact allocation), so a block's
//! charge (its capacity) stays within an eighth of its bytes. [`give`] keeps at most
//! [`KEEP`] buffers of [`MIN_CAP`]..=[`MAX_CAP`] bytes per thread and frees the rest: a thread
//! holds at most `KEEP * MAX_CAP` bytes it is not using.

use std::cell::RefCell;

/// Spare buffers a thread keeps.
pub const KEEP: usize = 4;
/// Buffers smaller than this are cheap to allocate: not kept.
pub const MIN_CAP: usize = 1 << 10;
/// Buffers larger than this are rare (large blocks): not kept.
pub const MAX_CAP: usize = 64 << 10;

thread_local! {
    static SPARE: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// An empty buffer with capacity in `len..=len + len / 8`.
pub fn take(len: usize) -> Vec<u8> {
    if (MIN_CAP..=MAX_CAP).contains(&len) {
        let found = SPARE
            .try_with(|s| {
                let mut s = s.try_borrow_mut().ok()?;
                let i = s.iter().position(|b| (len..=len + len / 8).contains(&b.capacity()))?;
                Some(s.swap_remove(i))
            })
            .ok()
            .flatten();
        if let Some(b) = found {
            return b;
        }
    }
    Vec::with_capacity(len)
}

/// Keeps `buf` for a later [`take`] on this thread, or frees it.
pub fn give(mut buf: Vec<u8>) {
    if !(MIN_CAP..=MAX_CAP).contains(&buf.capacity()) {
        return;
    }
    buf.clear();
    // During thread exit (`try_with` fails) or a reentrant call the buffer is simply freed.
    let _ = SPARE.try_with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            if s.len() < KEEP {
                if s.capacity() < KEEP {
                    s.reserve_exact(KEEP);
                }
                s.push(buf);
            }
        }
    });
}

#[cfg(test)]
fn kept() -> usize {
    SPARE.with(|s| s.borrow().len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_a_fitting_buffer_and_bounds_what_it_keeps() {
        std::thread::spawn(|| {
            let mut b = take(4000);
            assert!(b.capacity() >= 4000);
            b.extend_from_slice(&[7; 4000]);
            let p = b.as_ptr();
            give(b);
            assert_eq!(kept(), 1);
            // Too small for it: a new buffer; within an eighth: the same one, emptied.
            let larger = take(4001 + 4000 / 8 + 1);
            assert_ne!(larger.as_ptr(), p);
            assert_eq!(kept(), 1);
            let again = take(3600);
            assert_eq!(again.as_ptr(), p);
            assert!(again.is_empty() && again.capacity() <= 3600 + 3600 / 8);
            assert_eq!(kept(), 0);
            // A buffer over an eighth larger than asked is not handed out.
            give(again);
            let smaller = take(3000);
            assert_ne!(smaller.as_ptr(), p);
            // At most KEEP, and none outside MIN_CAP..=MAX_CAP.
            for _ in 0..KEEP + 3 {
                give(Vec::with_capacity(5000));
            }
            give(Vec::with_capacity(MIN_CAP - 1));
            give(Vec::with_capacity(MAX_CAP + 1));
            assert_eq!(kept(), KEEP);
            assert!(take(MAX_CAP + 1).capacity() > MAX_CAP);
            assert_eq!(kept(), KEEP);
        })
        .join()
        .unwrap();
    }
}
