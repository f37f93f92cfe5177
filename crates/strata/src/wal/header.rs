//! The WAL's own records, beside the write batches: the header that starts every WAL file,
//! and event records.
//!
//! The header names the WAL that came before, so recovery can tell a WAL that is missing
//! (deleted or lost with a damaged MANIFEST) from a gap in file numbers:
//!
//! ```text
//! header record = magic "STRATAWL" (8) | format version fixed32 (4) | previous WAL number fixed64 (8)
//! event record  = magic "STRATAEV" (8) | kind u8 (1) | WAL number fixed64 (8)
//!                 kind 1 = "synced": every WAL numbered up to and including the number was
//!                 synced whole before this record was written
//!                 kind 2 = "closed": the last record of a WAL that stopped taking writes at
//!                 a memtable switch; the number is the WAL's own
//! ```
//! on-disk: never change. "Previous" is the WAL whose memtable was active just before this
//! one, or 0 for the first WAL of a new DB.
//!
//! Versions: 1 = WALs synced whole when the next WAL starts; no event records. 2 = a WAL may
//! be left unsynced when the next starts (its sync is the flush job's, or the next synced
//! write's, `db/write.rs`), and "synced" events record when it was. A batch record starts with
//! its sequence number, fixed64 below 2^56, so its 8th byte is 0; an event's magic ends in
//! `'V'`: the two never mix up. 3 = version 2, written in recyclable fragments (the file may
//! be a reused one; `wal/format.rs`). This build writes versions 2 and 3 and reads all three.

use crate::error::{Error, Result};
use crate::types::FileNumber;
use crate::util::coding::{put_fixed32, put_fixed64, Reader};

const MAGIC: &[u8; 8] = b"STRATAWL";
const VERSION: u32 = 3;
/// The version of a WAL written in legacy fragments.
const LEGACY_FRAGMENTS_VERSION: u32 = 2;
/// The oldest header version this build reads.
const OLDEST_VERSION: u32 = 1;
const EVENT_MAGIC: &[u8; 8] = b"STRATAEV";
const EVENT_SYNCED: u8 = 1;
const EVENT_CLOSED: u8 = 2;
/// Length of an encoded event record.
const EVENT_LEN: usize = 17;
/// Length of the encoded header record.
pub(crate) const WAL_HEADER_LEN: usize = 20;

/// Encodes the header record of a WAL whose predecessor is `prev`, written in recyclable
/// fragments or not.
pub(crate) fn encode_wal_header(prev: FileNumber, recyclable: bool) -> Vec<u8> {
    let mut b = Vec::with_capacity(WAL_HEADER_LEN);
    b.extend_from_slice(MAGIC);
    put_fixed32(&mut b, if recyclable { VERSION } else { LEGACY_FRAGMENTS_VERSION });
    put_fixed64(&mut b, prev.0);
    b
}

/// What a WAL's header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WalHeader {
    pub prev: FileNumber,
    pub version: u32,
}

impl WalHeader {
    /// Whether this WAL may have been left unsynced when the next WAL started (version 2).
    pub fn successor_may_outrun(&self) -> bool {
        self.version >= 2
    }
}

/// Decodes a header record; the error names no file (the caller adds it).
pub(crate) fn decode_wal_header(record: &[u8]) -> Result<WalHeader> {
    let bad = |why: &str| Err(Error::corruption("", 0, format!("bad WAL header: {why}")));
    if record.len() != WAL_HEADER_LEN {
        return bad(&format!("{} bytes, expected {WAL_HEADER_LEN}", record.len()));
    }
    let mut r = Reader::new(record);
    if r.bytes(8) != Some(&MAGIC[..]) {
        return bad("magic number does not match (not a Strata WAL?)");
    }
    let version = match r.fixed32() {
        Some(v) if (OLDEST_VERSION..=VERSION).contains(&v) => v,
        Some(v) => {
            return bad(&format!(
                "format version {v}, this build reads versions {OLDEST_VERSION} to {VERSION}"
            ))
        }
        None => return bad("truncated"),
    };
    match r.fixed64() {
        Some(prev) => Ok(WalHeader { prev: FileNumber(prev), version }),
        None => bad("truncated"),
    }
}

/// An event record of a version-2 WAL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WalEvent {
    /// Every WAL numbered up to and including this one was synced whole.
    SyncedThrough(FileNumber),
    /// The last record of this WAL, written when it stopped taking writes.
    Closed(FileNumber),
}

/// Encodes an event record.
pub(crate) fn encode_wal_event(event: WalEvent) -> Vec<u8> {
    let (kind, n) = match event {
        WalEvent::SyncedThrough(n) => (EVENT_SYNCED, n),
        WalEvent::Closed(n) => (EVENT_CLOSED, n),
    };
    let mut b = Vec::with_capacity(EVENT_LEN);
    b.extend_from_slice(EVENT_MAGIC);
    b.push(kind);
    put_fixed64(&mut b, n.0);
    b
}

/// `None` for a record that is not an event (a write batch: its 8th byte is 0); an event
/// with an unknown kind or length is an error naming no file (the caller adds it).
pub(crate) fn decode_wal_event(record: &[u8]) -> Option<Result<WalEvent>> {
    if record.len() < 8 || record[7] == 0 {
        return None;
    }
    let bad = |why: String| Some(Err(Error::corruption("", 0, format!("bad WAL event: {why}"))));
    if &record[..8] != EVENT_MAGIC {
        return bad("neither a write batch nor an event (magic does not match)".into());
    }
    if record.len() != EVENT_LEN {
        return bad(format!("{} bytes, expected {EVENT_LEN}", record.len()));
    }
    let mut r = Reader::new(&record[8..]);
    match (r.u8(), r.fixed64()) {
        (Some(EVENT_SYNCED), Some(n)) => Some(Ok(WalEvent::SyncedThrough(FileNumber(n)))),
        (Some(EVENT_CLOSED), Some(n)) => Some(Ok(WalEvent::Closed(FileNumber(n)))),
        (Some(kind), _) => bad(format!("unknown kind {kind}")),
        _ => bad("truncated".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_rejects() {
        let h = encode_wal_header(FileNumber(42), true);
        assert_eq!(h.len(), WAL_HEADER_LEN);
        assert_eq!(
            decode_wal_header(&h).unwrap(),
            WalHeader { prev: FileNumber(42), version: VERSION }
        );
        let legacy = decode_wal_header(&encode_wal_header(FileNumber(42), false)).unwrap();
        assert_eq!(legacy.version, 2);
        assert!(legacy.successor_may_outrun());
        for i in 0..h.len() {
            let mut d = h.clone();
            d[i] ^= 0x10;
            if i < 12 {
                assert!(decode_wal_header(&d).unwrap_err().is_corruption());
            }
        }
        assert!(decode_wal_header(&h[..19]).is_err());
        // A version-1 header (written by older builds) still reads.
        let mut v1 = h.clone();
        v1[8..12].copy_from_slice(&1u32.to_le_bytes());
        let old = decode_wal_header(&v1).unwrap();
        assert!(!old.successor_may_outrun());
        assert!(decode_wal_header(&h).unwrap().successor_may_outrun());
        let mut v4 = h.clone();
        v4[8..12].copy_from_slice(&4u32.to_le_bytes());
        let e = decode_wal_header(&v4).unwrap_err().to_string();
        assert!(e.contains("format version 4"), "{e}");
    }

    #[test]
    fn events_roundtrip_and_never_pass_for_batches() {
        let e = encode_wal_event(WalEvent::SyncedThrough(FileNumber(7)));
        assert_eq!(e.len(), EVENT_LEN);
        assert_eq!(decode_wal_event(&e).unwrap().unwrap(), WalEvent::SyncedThrough(FileNumber(7)));
        let c = encode_wal_event(WalEvent::Closed(FileNumber(9)));
        assert_eq!(decode_wal_event(&c).unwrap().unwrap(), WalEvent::Closed(FileNumber(9)));
        // A write batch (sequence number below 2^56) is not an event.
        let mut batch = crate::write_batch::WriteBatch::new();
        batch.put(b"k", b"v");
        batch.set_sequence(crate::types::SeqNo((1 << 56) - 1));
        assert!(decode_wal_event(batch.data()).is_none());
        // Damaged events are errors, not batches.
        let mut kind = e.clone();
        kind[8] = 9;
        assert!(decode_wal_event(&kind).unwrap().is_err());
        assert!(decode_wal_event(&e[..16]).unwrap().is_err());
        let mut magic = e.clone();
        magic[0] = b'X';
        assert!(decode_wal_event(&magic).unwrap().is_err());
    }
}
