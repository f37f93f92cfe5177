//! A table's data blocks compressed on helper threads while its builder goes on cutting
//! blocks (RocksDB's `compression_opts.parallel_threads`; `TableOptions::parallel_threads`).
//!
//! ```text
//!  builder:  cut block --> gathered into a job (until JOB_BYTES) --send--> shared queue
//!  workers:  take a job, compress and checksum each block, answer on the job's channel
//!  builder:  takes the answers back a job at a time, in the order it sent the jobs, and
//!            writes the blocks
//! ```
//!
//! Compression is a function of the block's bytes alone, so the file holds exactly the bytes
//! the builder writes when it compresses inline; only the time they are written moves. What
//! is in flight is bounded: past [`JOBS_PER_THREAD`] jobs per worker the builder waits for
//! the oldest before it sends more. The workers end once the queue's sender is gone (the
//! pool dropped), and dropping the pool joins them.

use std::collections::VecDeque;
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use crate::error::{Error, Result};
use crate::util::checksum::ChecksumType;

use super::compression::Compressor;
use super::format::{block_trailer, CompressionType, BLOCK_TRAILER_LEN};

/// Raw bytes gathered into one job: a worker's hand-off costs about as much as compressing a
/// few small blocks, so small blocks travel together.
const JOB_BYTES: usize = 64 << 10;

/// Jobs in flight per worker before the builder waits for the oldest.
const JOBS_PER_THREAD: usize = 2;

/// A block as it goes into the file.
pub(crate) struct Compressed {
    /// The stored bytes: the compressed block, or the raw block where compression did not pay.
    pub stored: Vec<u8>,
    /// The block's trailer (its compression type and checksum).
    pub trailer: [u8; BLOCK_TRAILER_LEN],
    /// The block's raw size.
    pub raw_len: usize,
}

struct Job {
    blocks: Vec<Vec<u8>>,
    done: mpsc::SyncSender<Vec<Compressed>>,
}

/// The helper threads of one table builder, and the blocks they hold.
pub(crate) struct CompressPool {
    queue: Option<mpsc::Sender<Job>>,
    workers: Vec<JoinHandle<()>>,
    /// Where the answers of the jobs sent come, oldest first.
    in_flight: VecDeque<mpsc::Receiver<Vec<Compressed>>>,
    /// The answer being handed out, front first.
    current: VecDeque<Compressed>,
    /// Blocks gathered for the next job, and their bytes.
    gathering: Vec<Vec<u8>>,
    gathered: usize,
    /// Raw bytes of the blocks given and not yet handed back.
    pending_raw: u64,
    max_jobs: usize,
}

impl CompressPool {
    /// Starts `threads` workers compressing with `ty` (never `None`) at `zstd_level`, and
    /// checksumming with `checksum`; `None` if not one could be started (the builder then
    /// compresses inline).
    pub(crate) fn start(
        threads: usize,
        ty: CompressionType,
        zstd_level: i32,
        checksum: ChecksumType,
    ) -> Option<CompressPool> {
        let (queue, jobs) = mpsc::channel::<Job>();
        let jobs = Arc::new(Mutex::new(jobs));
        let workers: Vec<_> = (0..threads)
            .filter_map(|i| {
                let jobs = jobs.clone();
                std::thread::Builder::new()
                    .name(format!("strata-compress-{i}"))
                    .spawn(move || work(&jobs, ty, zstd_level, checksum))
                    .ok()
            })
            .collect();
        if workers.is_empty() {
            return None;
        }
        Some(CompressPool {
            queue: Some(queue),
            max_jobs: workers.len() * JOBS_PER_THREAD,
            workers,
            in_flight: VecDeque::new(),
            current: VecDeque::new(),
            gathering: Vec::new(),
            gathered: 0,
            pending_raw: 0,
        })
    }

    /// Takes a raw block; it comes back from [`CompressPool::next`] after every block given
    /// before it.
    pub(crate) fn submit(&mut self, raw: Vec<u8>) {
        self.pending_raw += raw.len() as u64;
        self.gathered += raw.len();
        self.gathering.push(raw);
        if self.gathered >= JOB_BYTES {
            self.send();
        }
    }

    /// Sends the blocks gathered so far as a job (none: nothing).
    pub(crate) fn send(&mut self) {
        if self.gathering.is_empty() {
            return;
        }
        let blocks = std::mem::take(&mut self.gathering);
        self.gathered = 0;
        let (done, answer) = mpsc::sync_channel(1);
        // A queue without workers (all gone) answers as a worker that stopped: `next` says so.
        if let Some(q) = &self.queue {
            let _ = q.send(Job { blocks, done });
        }
        self.in_flight.push_back(answer);
    }

    /// The next block in the order given, if it is compressed: waiting for it when `wait` is
    /// set or more jobs than the bound are in flight, else `None` when it is not done yet (or
    /// nothing is in flight). Blocks still gathering come back only after [`Self::send`].
    pub(crate) fn next(&mut self, wait: bool) -> Result<Option<Compressed>> {
        loop {
            if let Some(c) = self.current.pop_front() {
                self.pending_raw -= c.raw_len as u64;
                return Ok(Some(c));
            }
            let Some(answer) = self.in_flight.front() else { return Ok(None) };
            let got = if wait || self.in_flight.len() > self.max_jobs {
                answer.recv().map_err(|_| stopped())?
            } else {
                match answer.try_recv() {
                    Ok(got) => got,
                    Err(mpsc::TryRecvError::Empty) => return Ok(None),
                    Err(mpsc::TryRecvError::Disconnected) => return Err(stopped()),
                }
            };
            self.in_flight.pop_front();
            self.current = got.into();
        }
    }

    /// Raw bytes of the blocks given and not yet handed back by [`Self::next`].
    pub(crate) fn pending_raw(&self) -> u64 {
        self.pending_raw
    }
}

impl Drop for CompressPool {
    fn drop(&mut self) {
        self.queue = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

fn stopped() -> Error {
    Error::Panic {
        thread: "strata-compress".into(),
        message: "a compression thread stopped before answering for its blocks".into(),
    }
}

/// A worker: takes jobs until the queue closes.
fn work(
    jobs: &Mutex<mpsc::Receiver<Job>>,
    ty: CompressionType,
    zstd_level: i32,
    checksum: ChecksumType,
) {
    let mut compressor = Compressor::new(ty, zstd_level);
    loop {
        let job = jobs.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok(Job { blocks, done }) = job else { return };
        let out = blocks
            .into_iter()
            .map(|raw| {
                let raw_len = raw.len();
                let (ty, stored) = match compressor.compress(&raw) {
                    (CompressionType::None, _) => (CompressionType::None, raw),
                    (ty, stored) => (ty, stored.to_vec()),
                };
                let trailer = block_trailer(&stored, ty, checksum);
                Compressed { stored, trailer, raw_len }
            })
            .collect();
        // The builder gone: nobody waits for the answer.
        let _ = done.send(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(i: usize, len: usize) -> Vec<u8> {
        (0..len).map(|j| ((i * 7 + j / 16) % 251) as u8).collect()
    }

    /// Blocks come back in the order given, each as the inline compressor stores it, whatever
    /// the sizes (jobs of many small blocks, blocks larger than a job) and however the waits
    /// fall; the pending count follows.
    #[test]
    fn blocks_come_back_in_order_as_inline_compression_makes_them() {
        for ty in [CompressionType::Snappy, CompressionType::Zstd, CompressionType::Lz4] {
            let mut pool = CompressPool::start(3, ty, 3, ChecksumType::Crc32c).unwrap();
            let mut inline = Compressor::new(ty, 3);
            let sizes = [100, 4096, 70_000, 10, 4096, 200_000, 1, 4000, 4000, 4000];
            let blocks: Vec<_> =
                (0..200).map(|i| block(i, sizes[i % sizes.len()])).collect::<Vec<_>>();
            let mut got = Vec::new();
            for (i, b) in blocks.iter().enumerate() {
                pool.submit(b.clone());
                while let Some(c) = pool.next(i % 3 == 0).unwrap() {
                    got.push(c);
                }
            }
            pool.send();
            while let Some(c) = pool.next(true).unwrap() {
                got.push(c);
            }
            assert_eq!(pool.pending_raw(), 0);
            assert_eq!(got.len(), blocks.len());
            for (b, c) in blocks.iter().zip(&got) {
                let (ty, stored) = inline.compress(b);
                assert_eq!((c.trailer[0], &c.stored[..], c.raw_len), (ty as u8, stored, b.len()));
                assert_eq!(c.trailer, block_trailer(stored, ty, ChecksumType::Crc32c));
            }
            assert!(got.iter().any(|c| c.trailer[0] != 0), "{ty:?} compressed");
        }
    }

    /// A job no worker answers (the workers gone, as after a panic in one) is an error for
    /// the builder waiting for it, never a hang.
    #[test]
    fn a_job_nobody_answers_is_an_error() {
        let mut pool = CompressPool::start(1, CompressionType::Snappy, 3, ChecksumType::Crc32c)
            .expect("threads");
        pool.queue = None;
        pool.submit(block(0, 100));
        pool.send();
        let e = pool.next(true).err().expect("an error");
        assert!(matches!(e, Error::Panic { .. }), "{e}");
    }

    /// A pool dropped with blocks in flight and gathering ends its workers.
    #[test]
    fn a_pool_dropped_midway_ends_its_workers() {
        let mut pool = CompressPool::start(2, CompressionType::Snappy, 3, ChecksumType::Crc32c)
            .expect("threads");
        for i in 0..50 {
            pool.submit(block(i, 30_000));
        }
        drop(pool);
    }
}
