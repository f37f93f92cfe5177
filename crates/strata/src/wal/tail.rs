//! Telling an interrupted append from damage at the end of a log: one rule for the MANIFEST
//! and the WAL, with one parameter, whether the log's writer synced every record before acting
//! on it.
//!
//! After the last valid record, a log may hold:
//! - nothing, a fragment cut short by the end of the file, or zeros to the end: an
//!   interrupted append (a torn tail), dropped by point-in-time recovery;
//! - a *complete* fragment (its length fits the file) that fails its checksum. That is damage
//!   when non-zero bytes follow it (something was written after it: a later record, or the
//!   close marker a clean close appends to the WAL), and, in a log whose every record is
//!   synced before it takes effect (the MANIFEST), always: such a record was acted on, and
//!   dropping it silently could lose it. In the WAL, the last record alone with nothing after
//!   it may be an unsynced write that power loss left half on disk, so it is a torn tail;
//! - with [`TailRule::EveryRecordSynced`], zeros followed by other bytes are damage too.

use std::sync::Arc;

use super::format::{decode_header, fragment_checksum, BLOCK_SIZE, HEADER_SIZE};
use crate::env::RandomAccessFile;
use crate::error::Result;

/// What the writer of a log promises about its tail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TailRule {
    /// Every record was synced before it took effect (the MANIFEST).
    EveryRecordSynced,
    /// The last records may not have been synced (the WAL).
    UnsyncedTailPossible,
}

/// True when everything in `file` from `offset` (the end of the last valid record) is an
/// interrupted append under `rule` (see the module documentation).
pub(crate) fn tail_is_interrupted_append(
    file: &Arc<dyn RandomAccessFile>,
    offset: u64,
    rule: TailRule,
) -> Result<bool> {
    let len = file.len();
    let mut pos = offset;
    let rest_is_zero = |from: u64| -> Result<bool> {
        if from >= len {
            return Ok(true);
        }
        let rest = file.read_exact_at(from, (len - from) as usize)?;
        Ok(rest.iter().all(|&b| b == 0))
    };
    loop {
        let in_block = (pos % BLOCK_SIZE as u64) as usize;
        if BLOCK_SIZE - in_block < HEADER_SIZE {
            pos += (BLOCK_SIZE - in_block) as u64; // block trailer padding
            continue;
        }
        if pos >= len || len - pos < HEADER_SIZE as u64 {
            return Ok(true);
        }
        let header = file.read_exact_at(pos, HEADER_SIZE)?;
        if header.iter().all(|&b| b == 0) {
            return match rule {
                TailRule::EveryRecordSynced => rest_is_zero(pos),
                TailRule::UnsyncedTailPossible => Ok(true),
            };
        }
        let h = decode_header(&header);
        let end = pos + (HEADER_SIZE + h.length) as u64;
        if end > len {
            return Ok(true);
        }
        let payload = file.read_exact_at(pos + HEADER_SIZE as u64, h.length)?;
        if fragment_checksum(h.type_byte, &payload) != h.masked_crc {
            return match rule {
                TailRule::EveryRecordSynced => Ok(false),
                TailRule::UnsyncedTailPossible => rest_is_zero(end),
            };
        }
        pos = end;
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::env::{FileSystem, MemFs};
    use crate::wal::{replay_log, LogWriter, WalRecoveryMode};

    fn log_with(records: &[&[u8]]) -> (MemFs, Vec<u8>) {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/d")).unwrap();
        let mut w = LogWriter::new(fs.create(Path::new("/d/log")).unwrap());
        for r in records {
            w.add_record(r).unwrap();
        }
        w.sync().unwrap();
        drop(w);
        let data = fs.read_file(Path::new("/d/log")).unwrap();
        (fs, data)
    }

    fn check(fs: &MemFs, data: &[u8]) -> bool {
        fs.write_file(Path::new("/d/log"), data);
        let f = fs.open(Path::new("/d/log")).unwrap();
        let out = replay_log(&f, WalRecoveryMode::PointInTime, |_, _| Ok(())).unwrap();
        tail_is_interrupted_append(&f, out.last_valid_end, TailRule::EveryRecordSynced).unwrap()
    }

    #[test]
    fn truncation_is_an_interrupted_append_but_a_bad_checksum_is_not() {
        let big = vec![7u8; 70_000];
        let (fs, data) = log_with(&[b"first", &big, b"last"]);
        for cut in [data.len() - 1, data.len() - 3, 40_000, 12] {
            assert!(check(&fs, &data[..cut]), "cut at {cut}");
        }
        let mut zeros = data.clone();
        zeros.extend_from_slice(&[0u8; 100]);
        assert!(check(&fs, &zeros));
        let mut flipped = data.clone();
        let n = flipped.len();
        flipped[n - 2] ^= 1; // inside the last record's payload
        assert!(!check(&fs, &flipped));
    }

    #[test]
    fn wal_rule_a_bad_last_record_is_torn_unless_bytes_follow() {
        let (fs, data) = log_with(&[b"first", b"second record", b"last one"]);
        let wal = |d: &[u8]| {
            fs.write_file(Path::new("/d/log"), d);
            let f = fs.open(Path::new("/d/log")).unwrap();
            let out = replay_log(&f, WalRecoveryMode::PointInTime, |_, _| Ok(())).unwrap();
            tail_is_interrupted_append(&f, out.last_valid_end, TailRule::UnsyncedTailPossible)
                .unwrap()
        };
        let mut flipped = data.clone();
        let n = flipped.len();
        flipped[n - 2] ^= 1;
        assert!(wal(&flipped), "a bad last record with nothing after it may be unsynced");
        let mut zero_padded = flipped.clone();
        zero_padded.extend_from_slice(&[0u8; 64]);
        assert!(wal(&zero_padded));
        let mut followed = flipped.clone();
        followed.extend_from_slice(&[0u8, 0, 9, 9, 9, 9, 9, 9, 9, 9]);
        assert!(!wal(&followed), "bytes after a complete bad record make it damage");
        assert!(wal(&data[..n - 3]), "a cut record is torn");
    }
}
