//! The expected-state oracle: one record per key with its committed state, the last version
//! handed out, and the operation in flight.
//!
//! Protocol of a writer: [`ExpectedState::mark`] every key of a write *before* calling the
//! DB (the key is pending), [`ExpectedState::commit`] them *after* the DB acknowledged. A
//! key with a pending operation may legitimately be found in its old or its new state; a
//! key without one must be found exactly in its committed state. Keys of one write share a
//! batch id, so a verifier can check that a batch is all-old or all-new.
//!
//! File-backed states write each record with one `pwrite`: the bytes are in the OS's page
//! cache when the call returns, so they survive a SIGKILL of the writing process.
//!
//! ```text
//! header (64 bytes): magic "STRXSTAT" | format u32 = 1 | keys u32 | zero
//! record (48 bytes): version u64 | counter u64 | issued u64 | pending_version u64 | batch u64
//!                    | exists u8 | pending kind u8 (0 none, 1 put, 2 delete, 3 merge) | zero
//! ```

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use crate::value::{self, is_counter};

const MAGIC: &[u8; 8] = b"STRXSTAT";
const HEADER: u64 = 64;
const RECORD: u64 = 48;

/// A write's effect on one key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    Put = 1,
    Delete = 2,
    Merge = 3,
}

impl OpKind {
    fn from_u8(b: u8) -> Option<OpKind> {
        match b {
            1 => Some(OpKind::Put),
            2 => Some(OpKind::Delete),
            3 => Some(OpKind::Merge),
            _ => None,
        }
    }
}

/// What a key holds, as far as reads can tell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyState {
    pub exists: bool,
    /// Version of the write that produced the value (value keys are identified by it).
    pub version: u64,
    /// Counter value (counter keys).
    pub counter: u64,
}

/// What a read of a key returned, reduced to what identifies a state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Observed {
    Absent,
    /// A recognised value of a value key, at this version.
    Value(u64),
    /// A counter key's 8-byte value.
    Counter(u64),
    /// Bytes that are no value this harness ever wrote for the key.
    Garbage,
}

impl KeyState {
    /// The state after `op` at `version` on key `i`.
    pub fn apply(self, i: u32, op: OpKind, version: u64) -> KeyState {
        match op {
            OpKind::Delete => KeyState { exists: false, version, counter: 0 },
            OpKind::Put if is_counter(i) => {
                KeyState { exists: true, version, counter: value::operand(i, version) }
            }
            OpKind::Put => KeyState { exists: true, version, counter: 0 },
            OpKind::Merge => {
                let base = if self.exists { self.counter } else { 0 };
                KeyState {
                    exists: true,
                    version,
                    counter: base.wrapping_add(value::operand(i, version)),
                }
            }
        }
    }

    /// How this state reads back.
    pub fn observed(self, i: u32) -> Observed {
        match (self.exists, is_counter(i)) {
            (false, _) => Observed::Absent,
            (true, true) => Observed::Counter(self.counter),
            (true, false) => Observed::Value(self.version),
        }
    }
}

/// Classifies the bytes read for key `i`.
pub fn observe(i: u32, got: Option<&[u8]>) -> Observed {
    match got {
        None => Observed::Absent,
        Some(v) if is_counter(i) => match <[u8; 8]>::try_from(v) {
            Ok(b) => Observed::Counter(u64::from_le_bytes(b)),
            Err(_) => Observed::Garbage,
        },
        Some(v) => match value::decode_value(v) {
            Ok((k, ver)) if k == i => Observed::Value(ver),
            _ if value::decode_dead_value(v) == Some(i) => Observed::Absent,
            _ => Observed::Garbage,
        },
    }
}

/// One key's oracle record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Record {
    pub state: KeyState,
    /// Largest version handed out for this key (never reused, even if that write was lost).
    pub issued: u64,
    /// The operation in flight and its version.
    pub pending: Option<(OpKind, u64)>,
    /// Id of the write the pending operation belongs to.
    pub batch: u64,
}

impl Record {
    /// The state if the pending operation took effect.
    pub fn pending_state(&self, i: u32) -> Option<KeyState> {
        self.pending.map(|(op, v)| self.state.apply(i, op, v))
    }

    fn encode(&self) -> [u8; RECORD as usize] {
        let mut b = [0u8; RECORD as usize];
        let (pk, pv) = self.pending.map_or((0u8, 0u64), |(k, v)| (k as u8, v));
        b[0..8].copy_from_slice(&self.state.version.to_le_bytes());
        b[8..16].copy_from_slice(&self.state.counter.to_le_bytes());
        b[16..24].copy_from_slice(&self.issued.to_le_bytes());
        b[24..32].copy_from_slice(&pv.to_le_bytes());
        b[32..40].copy_from_slice(&self.batch.to_le_bytes());
        b[40] = u8::from(self.state.exists);
        b[41] = pk;
        b
    }

    fn decode(b: &[u8]) -> Record {
        let u = |r: std::ops::Range<usize>| u64::from_le_bytes(b[r].try_into().unwrap_or_default());
        Record {
            state: KeyState { exists: b[40] != 0, version: u(0..8), counter: u(8..16) },
            issued: u(16..24),
            pending: OpKind::from_u8(b[41]).map(|k| (k, u(24..32))),
            batch: u(32..40),
        }
    }
}

/// The oracle for `keys` keys, in memory or backed by a file.
pub struct ExpectedState {
    records: Vec<Mutex<Record>>,
    file: Option<File>,
}

impl ExpectedState {
    /// A fresh in-memory oracle: every key absent.
    pub fn in_memory(keys: u32) -> ExpectedState {
        ExpectedState { records: (0..keys).map(|_| Mutex::default()).collect(), file: None }
    }

    /// Creates the file for a fresh oracle (every key absent).
    pub fn create(path: &Path, keys: u32) -> io::Result<ExpectedState> {
        let file = File::options().read(true).write(true).create(true).truncate(true).open(path)?;
        let mut header = [0u8; HEADER as usize];
        header[..8].copy_from_slice(MAGIC);
        header[8..12].copy_from_slice(&1u32.to_le_bytes());
        header[12..16].copy_from_slice(&keys.to_le_bytes());
        file.write_all_at(&header, 0)?;
        let zero = vec![0u8; (RECORD * u64::from(keys)) as usize];
        file.write_all_at(&zero, HEADER)?;
        file.sync_all()?;
        Ok(ExpectedState {
            records: (0..keys).map(|_| Mutex::default()).collect(),
            file: Some(file),
        })
    }

    /// Opens an oracle file.
    pub fn open(path: &Path) -> io::Result<ExpectedState> {
        let file = File::options().read(true).write(true).open(path)?;
        let mut header = [0u8; HEADER as usize];
        file.read_exact_at(&mut header, 0)?;
        if &header[..8] != MAGIC {
            return Err(io::Error::other(format!(
                "{} is not an expected-state file",
                path.display()
            )));
        }
        let keys = u32::from_le_bytes(header[12..16].try_into().unwrap_or_default());
        let mut body = vec![0u8; (RECORD * u64::from(keys)) as usize];
        file.read_exact_at(&mut body, HEADER)?;
        let records =
            body.chunks_exact(RECORD as usize).map(|c| Mutex::new(Record::decode(c))).collect();
        Ok(ExpectedState { records, file: Some(file) })
    }

    pub fn keys(&self) -> u32 {
        self.records.len() as u32
    }

    fn lock(&self, i: u32) -> MutexGuard<'_, Record> {
        self.records[i as usize].lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn persist(&self, i: u32, r: &Record) -> io::Result<()> {
        match &self.file {
            Some(f) => f.write_all_at(&r.encode(), HEADER + RECORD * u64::from(i)),
            None => Ok(()),
        }
    }

    /// The record of key `i`.
    pub fn get(&self, i: u32) -> Record {
        *self.lock(i)
    }

    /// Marks `op` on key `i` as in flight (part of write `batch`); returns its version.
    pub fn mark(&self, i: u32, op: OpKind, batch: u64) -> io::Result<u64> {
        let mut r = self.lock(i);
        assert!(r.pending.is_none(), "key {i} already has a pending operation");
        r.issued += 1;
        r.pending = Some((op, r.issued));
        r.batch = batch;
        self.persist(i, &r)?;
        Ok(r.issued)
    }

    /// The DB acknowledged the pending operation of key `i`.
    pub fn commit(&self, i: u32) -> io::Result<KeyState> {
        let mut r = self.lock(i);
        if let Some(s) = r.pending_state(i) {
            r.state = s;
        }
        r.pending = None;
        r.batch = 0;
        self.persist(i, &r)?;
        Ok(r.state)
    }

    /// Sets key `i` to `state` with nothing pending (after verification found it so).
    pub fn resolve(&self, i: u32, state: KeyState) -> io::Result<()> {
        let mut r = self.lock(i);
        r.state = state;
        r.issued = r.issued.max(state.version);
        r.pending = None;
        r.batch = 0;
        self.persist(i, &r)
    }

    /// Makes the file durable.
    pub fn sync(&self) -> io::Result<()> {
        match &self.file {
            Some(f) => f.sync_all(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_roundtrip() {
        let dir = std::env::temp_dir().join(format!("strata-expected-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("state");
        let s = ExpectedState::create(&p, 8).unwrap();
        let v = s.mark(3, OpKind::Merge, 9).unwrap();
        s.commit(3).unwrap();
        s.mark(3, OpKind::Merge, 10).unwrap();
        s.mark(1, OpKind::Put, 10).unwrap();
        drop(s);
        let s = ExpectedState::open(&p).unwrap();
        let r = s.get(3);
        assert_eq!(r.state.counter, value::operand(3, v));
        assert_eq!(r.pending, Some((OpKind::Merge, 2)));
        assert_eq!(r.batch, 10);
        assert_eq!(s.get(1).pending, Some((OpKind::Put, 1)));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
