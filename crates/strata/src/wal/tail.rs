//! Telling an interrupted append from damage at the end of a log.
//!
//! A log whose writer syncs every record before acting on it (the MANIFEST) can only end in a
//! record that was being appended when the process or machine stopped: its fragments are
//! intact but the last one is cut short (or the rest of the file is zeros the filesystem left
//! behind). A fragment that is complete yet fails its checksum is damage, and dropping it
//! silently could lose an edit that was acted on.

use std::sync::Arc;

use super::format::{decode_header, fragment_checksum, BLOCK_SIZE, HEADER_SIZE};
use crate::env::RandomAccessFile;
use crate::error::Result;

/// True when everything in `file` from `offset` (the end of the last valid record) is an
/// interrupted append.
pub(crate) fn tail_is_interrupted_append(
    file: &Arc<dyn RandomAccessFile>,
    offset: u64,
) -> Result<bool> {
    let len = file.len();
    let mut pos = offset;
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
            let rest = file.read_exact_at(pos, (len - pos) as usize)?;
            return Ok(rest.iter().all(|&b| b == 0));
        }
        let h = decode_header(&header);
        let end = pos + (HEADER_SIZE + h.length) as u64;
        if end > len {
            return Ok(true);
        }
        let payload = file.read_exact_at(pos + HEADER_SIZE as u64, h.length)?;
        if fragment_checksum(h.type_byte, &payload) != h.masked_crc {
            return Ok(false);
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
        tail_is_interrupted_append(&f, out.last_valid_end).unwrap()
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
}
