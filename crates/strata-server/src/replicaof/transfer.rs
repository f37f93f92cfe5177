//! A full sync's transfer: the master's RDB into a file of the data directory, whole before
//! anything is loaded from it.
//!
//! The master announces it as `$<len>` (then exactly that many bytes) or, diskless, as
//! `$EOF:<40 bytes>` (then the RDB and those 40 bytes again at its end). A diskless master
//! sends nothing after the mark until the replica's first REPLCONF ACK; bytes after it are
//! kept for the stream all the same.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::wire::Wire;
use super::LinkError;
use crate::master_link::LinkState;
use crate::state::Shared;

/// The length of a diskless transfer's end mark.
const MARK_LEN: usize = 40;
/// How a received file's name begins (`<PREFIX><pid>-<ms>.rdb` in the data directory).
const PREFIX: &str = "temp-replica-";

/// Deletes the received files a process that stopped during a sync left in `dir`.
pub fn remove_leftovers(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(PREFIX) && name.ends_with(".rdb") {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// A received RDB file; dropped, it is deleted.
pub struct Received {
    path: PathBuf,
}

impl Received {
    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Received {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Receives the RDB that follows FULLRESYNC on `wire` into a file.
pub fn receive(sh: &Shared, link: &Arc<LinkState>, wire: &mut Wire) -> Result<Received, LinkError> {
    let head = wire.line()?;
    let Some(size) = head.strip_prefix('$') else {
        return Err(LinkError::Failed(format!("the master began the sync with {head:?}")));
    };
    let stamp = crate::types::keyspace::now_ms();
    let path = sh.config.dir.join(format!("{PREFIX}{}-{stamp}.rdb", std::process::id()));
    let received = Received { path };
    let mut file = File::create(received.path()).map_err(|e| {
        LinkError::Failed(format!("cannot create {}: {e}", received.path().display()))
    })?;
    let failed = |e: std::io::Error| {
        LinkError::Failed(format!("cannot write {}: {e}", received.path().display()))
    };
    match size.strip_prefix("EOF:") {
        Some(mark) if mark.len() == MARK_LEN => {
            link.sync_total.store(0, Ordering::Relaxed);
            until_mark(link, wire, mark.as_bytes(), &mut file).map_err(|e| match e {
                Step::Link(e) => e,
                Step::File(e) => failed(e),
            })?;
        }
        Some(_) => return Err(LinkError::Failed(format!("a diskless sync's mark {head:?}"))),
        None => {
            let len = size.parse::<u64>().map_err(|_| {
                LinkError::Failed(format!("the master announced an RDB of {head:?} bytes"))
            })?;
            link.sync_total.store(len, Ordering::Relaxed);
            exactly(link, wire, len, &mut file).map_err(|e| match e {
                Step::Link(e) => e,
                Step::File(e) => failed(e),
            })?;
        }
    }
    file.sync_all().map_err(failed)?;
    Ok(received)
}

/// A failure of the socket's side or of the file's.
enum Step {
    Link(LinkError),
    File(std::io::Error),
}

impl From<LinkError> for Step {
    fn from(e: LinkError) -> Self {
        Step::Link(e)
    }
}

/// Copies `len` bytes from `wire` to `file`; what comes after stays in the wire's buffer.
fn exactly(link: &LinkState, wire: &mut Wire, len: u64, file: &mut File) -> Result<(), Step> {
    let mut left = len;
    loop {
        let take = usize::try_from(left).unwrap_or(usize::MAX).min(wire.buf.len());
        file.write_all(&wire.buf[..take]).map_err(Step::File)?;
        wire.buf.drain(..take);
        left -= take as u64;
        link.sync_read.store(len - left, Ordering::Relaxed);
        if left == 0 {
            return Ok(());
        }
        wire.read_more()?;
    }
}

/// Copies from `wire` to `file` up to `mark`, which is not copied; what comes after it stays
/// in the wire's buffer. The last bytes are held back until it is sure they are no part of
/// the mark.
fn until_mark(link: &LinkState, wire: &mut Wire, mark: &[u8], file: &mut File) -> Result<(), Step> {
    let mut copied = 0u64;
    loop {
        if let Some(at) = wire.buf.windows(MARK_LEN).position(|w| w == mark) {
            file.write_all(&wire.buf[..at]).map_err(Step::File)?;
            wire.buf.drain(..at + MARK_LEN);
            link.sync_read.store(copied + at as u64, Ordering::Relaxed);
            return Ok(());
        }
        let safe = wire.buf.len().saturating_sub(MARK_LEN - 1);
        file.write_all(&wire.buf[..safe]).map_err(Step::File)?;
        wire.buf.drain(..safe);
        copied += safe as u64;
        link.sync_read.store(copied, Ordering::Relaxed);
        wire.read_more()?;
    }
}
