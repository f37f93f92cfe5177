//! Whether the cores are contended, as the calling thread sees it: how long it waited on a
//! run queue against how long it ran, from the kernel's per-thread scheduler statistics
//! (`/proc/thread-self/schedstat`: nanoseconds on a CPU, nanoseconds waiting on a run queue,
//! time slices).
//!
//! Contract: [`contended`] is cheap to call often: each thread reads its statistics at most
//! every [`SAMPLE_EVERY`] and answers from its last reading in between. Where the statistics
//! cannot be read (not Linux, no schedstat, a malformed line), it answers `false`: the cores
//! are taken to be free, the behaviour of a machine without the probe.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// How often a thread reads its statistics at most.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(10);

/// A thread that waited on a run queue more than this many times as long as it ran since its
/// last reading finds the cores contended.
pub const WAIT_PER_RUN: u64 = 2;

#[derive(Clone, Copy)]
struct Reading {
    at: Instant,
    run_ns: u64,
    wait_ns: u64,
    contended: bool,
}

thread_local! {
    static LAST: Cell<Option<Reading>> = const { Cell::new(None) };
}

/// Whether the calling thread waited for a core more than [`WAIT_PER_RUN`] times as long as
/// it ran, between its last two readings (at least [`SAMPLE_EVERY`] apart).
pub fn contended() -> bool {
    let now = Instant::now();
    LAST.with(|last| {
        let prev = last.get();
        if let Some(p) = prev {
            if now.duration_since(p.at) < SAMPLE_EVERY {
                return p.contended;
            }
        }
        let Some((run_ns, wait_ns)) = read() else { return false };
        let contended = prev.is_some_and(|p| {
            let (ran, waited) =
                (run_ns.saturating_sub(p.run_ns), wait_ns.saturating_sub(p.wait_ns));
            judge(ran, waited)
        });
        last.set(Some(Reading { at: now, run_ns, wait_ns, contended }));
        contended
    })
}

/// Whether `waited` nanoseconds on a run queue against `ran` on a CPU mean contention.
fn judge(ran: u64, waited: u64) -> bool {
    waited > ran.saturating_mul(WAIT_PER_RUN)
}

/// The calling thread's nanoseconds on a CPU and waiting on a run queue.
fn read() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    parse(&text)
}

/// `run wait slices` as written by the kernel.
fn parse(text: &str) -> Option<(u64, u64)> {
    let mut fields = text.split_ascii_whitespace().map(str::parse::<u64>);
    match (fields.next(), fields.next()) {
        (Some(Ok(run)), Some(Ok(wait))) => Some((run, wait)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_kernels_line_and_refuses_others() {
        assert_eq!(parse("123456 7890 42\n"), Some((123456, 7890)));
        assert_eq!(parse(""), None);
        assert_eq!(parse("12 x 3"), None);
        assert_eq!(parse("-1 2 3"), None);
    }

    #[test]
    fn waiting_over_twice_the_run_time_is_contention() {
        assert!(!judge(1_000, 0));
        assert!(!judge(1_000, 2_000));
        assert!(judge(1_000, 2_001));
        assert!(judge(0, 1), "waited without running");
        assert!(!judge(0, 0), "neither ran nor waited: idle");
    }

    /// The reading follows the thread's own time: its run time grows while it works.
    #[test]
    fn a_working_thread_reads_its_run_time_growing() {
        let Some((run0, _)) = read() else {
            eprintln!("skipped: /proc/thread-self/schedstat cannot be read here");
            return;
        };
        let until = Instant::now() + Duration::from_millis(20);
        let mut x = 0u64;
        while Instant::now() < until {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let (run1, _) = read().expect("read once, read again");
        assert!(run1 > run0, "run time {run0} -> {run1} after 20 ms of work");
    }
}
