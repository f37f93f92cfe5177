//! The WAL's own records, beside the write batches: the header that starts every WAL file,
//! and event records.
//!
//! The header names the WAL that came before, so recovery can tell a WAL that is missing
//! (deleted or lost with a damaged MANIFEST) from a gap in file numbers:
//!
//! ```text
//! header record = magic "STRATAWL" (8) | format version fixed32 (4) | previous WAL number fixed64 (8)
//!                 [ | flags u8 (1), version 4 only ]
//!                 flags bit 0 = written in recyclable fragments; bit 1 = zeros ahead: the
//!                 file was zero-filled ahead of its records, so zeros from a fragment
//!                 boundary to the end of the file are the log's end, not a torn write
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
//! write's, `db/write/wal.rs`), and "synced" events record when it was. A batch record starts with
//! its sequence number, fixed64 below 2^56, so its 8th byte is 0; an event's magic ends in
//! `'V'`: the two never mix up. 3 = version 2, written in recyclable fragments (the file may
//! be a reused one; `wal/format.rs`). 4 = version 2 or 3 (flag bit 0) with the flags byte,
//! written when zeros are written ahead (`wal/writer.rs`); an older build refuses it at its
//! header ("format version 4"). This build writes versions 2, 3 and 4 and reads 1 to 4.

use crate::error::{Error, Result};
use crate::types::FileNumber;
use crate::util::coding::{put_fixed32, put_fixed64, Reader};

const MAGIC: &[u8; 8] = b"STRATAWL";
const VERSION: u32 = 4;
/// The version of a WAL written in recyclable fragments, without zeros ahead.
const RECYCLABLE_VERSION: u32 = 3;
/// The version of a WAL written in legacy fragments, without zeros ahead.
const LEGACY_FRAGMENTS_VERSION: u32 = 2;
/// Version-4 flags.
const FLAG_RECYCLABLE: u8 = 1;
const FLAG_ZEROS_AHEAD: u8 = 2;
/// The oldest header version this build reads.
const OLDEST_VERSION: u32 = 1;
const EVENT_MAGIC: &[u8; 8] = b"STRATAEV";
const EVENT_SYNCED: u8 = 1;
const EVENT_CLOSED: u8 = 2;
/// Length of an encoded event record.
const EVENT_LEN: usize = 17;
/// Length of the encoded header record of versions 1 to 3.
const WAL_HEADER_LEN: usize = 20;
/// Length of the encoded header record of version 4.
const WAL_HEADER_V4_LEN: usize = 21;

/// Encodes the header record of a WAL whose predecessor is `prev`, written in recyclable
/// fragments or not, with zeros ahead of its records or not.
pub(crate) fn encode_wal_header(prev: FileNumber, recyclable: bool, zeros_ahead: bool) -> Vec<u8> {
    let mut b = Vec::with_capacity(WAL_HEADER_V4_LEN);
    b.extend_from_slice(MAGIC);
    let version = match (zeros_ahead, recyclable) {
        (true, _) => VERSION,
        (false, true) => RECYCLABLE_VERSION,
        (false, false) => LEGACY_FRAGMENTS_VERSION,
    };
    put_fixed32(&mut b, version);
    put_fixed64(&mut b, prev.0);
    if zeros_ahead {
        b.push(FLAG_ZEROS_AHEAD | if recyclable { FLAG_RECYCLABLE } else { 0 });
    }
    b
}

/// What a WAL's header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WalHeader {
    pub prev: FileNumber,
    pub version: u32,
    /// Zeros from a fragment boundary to the end of the file are the log's end.
    pub zeros_ahead: bool,
}

/// Whether `record`, a WAL's first record, is a header that says zeros were written ahead.
pub(crate) fn header_says_zeros_ahead(record: &[u8]) -> bool {
    record.len() == WAL_HEADER_V4_LEN && decode_wal_header(record).is_ok_and(|h| h.zeros_ahead)
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
    if record.len() != WAL_HEADER_LEN && record.len() != WAL_HEADER_V4_LEN {
        return bad(&format!(
            "{} bytes, expected {WAL_HEADER_LEN} (or {WAL_HEADER_V4_LEN} for version 4)",
            record.len()
        ));
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
    let expected_len = if version == VERSION { WAL_HEADER_V4_LEN } else { WAL_HEADER_LEN };
    if record.len() != expected_len {
        return bad(&format!(
            "{} bytes, a version-{version} header has {expected_len}",
            record.len()
        ));
    }
    let Some(prev) = r.fixed64() else { return bad("truncated") };
    let flags = if version == VERSION { r.u8().unwrap_or(0) } else { 0 };
    if flags & !(FLAG_RECYCLABLE | FLAG_ZEROS_AHEAD) != 0 {
        return bad(&format!("unknown flags {flags:#04x} (written by a newer version?)"));
    }
    Ok(WalHeader { prev: FileNumber(prev), version, zeros_ahead: flags & FLAG_ZEROS_AHEAD != 0 })
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
        let h = encode_wal_header(FileNumber(42), true, false);
        assert_eq!(h.len(), WAL_HEADER_LEN);
        assert_eq!(
            decode_wal_header(&h).unwrap(),
            WalHeader { prev: FileNumber(42), version: RECYCLABLE_VERSION, zeros_ahead: false }
        );
        let legacy = decode_wal_header(&encode_wal_header(FileNumber(42), false, false)).unwrap();
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
        // A 20-byte header claiming version 4 (which has 21 bytes) and an unknown version.
        let mut v4 = h.clone();
        v4[8..12].copy_from_slice(&4u32.to_le_bytes());
        let e = decode_wal_header(&v4).unwrap_err().to_string();
        assert!(e.contains("a version-4 header has 21"), "{e}");
        let mut v5 = h.clone();
        v5[8..12].copy_from_slice(&5u32.to_le_bytes());
        let e = decode_wal_header(&v5).unwrap_err().to_string();
        assert!(e.contains("format version 5"), "{e}");
    }

    #[test]
    fn version_4_carries_its_flags() {
        for recyclable in [false, true] {
            let h = encode_wal_header(FileNumber(7), recyclable, true);
            assert_eq!(h.len(), WAL_HEADER_V4_LEN);
            let d = decode_wal_header(&h).unwrap();
            assert_eq!(d, WalHeader { prev: FileNumber(7), version: 4, zeros_ahead: true });
            assert!(d.successor_may_outrun());
            assert!(header_says_zeros_ahead(&h));
            // Unknown flag bits are refused, naming them.
            let mut bad = h.clone();
            bad[20] |= 0x80;
            let e = decode_wal_header(&bad).unwrap_err().to_string();
            assert!(e.contains("unknown flags 0x"), "{e}");
            assert!(!header_says_zeros_ahead(&bad));
            // A version-3 header with a flags byte appended is not a header.
            let mut long = encode_wal_header(FileNumber(7), recyclable, false);
            long.push(FLAG_ZEROS_AHEAD);
            assert!(decode_wal_header(&long).is_err());
            assert!(!header_says_zeros_ahead(&long));
        }
        // Without zeros ahead, versions 2 and 3 are written as before.
        assert!(!header_says_zeros_ahead(&encode_wal_header(FileNumber(7), false, false)));
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
