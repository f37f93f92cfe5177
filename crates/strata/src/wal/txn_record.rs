//! The WAL records of two-phase commit (`TransactionDb`'s `prepare`, and the commit or
//! rollback of a prepared transaction).
//!
//! ```text
//! +----------------+----------+---------------------------+-----------+------------------+
//! | magic (8)      | kind (1) | xid length (varint32)     | xid       | batch            |
//! | "STRATATX"     | 1, 2, 3  |                           |           | kinds 1, 2 only  |
//! +----------------+----------+---------------------------+-----------+------------------+
//! kind 1, "prepare": the transaction named xid is prepared with these writes; `batch` is a
//!         write batch (`write_batch.rs`) whose sequence number is 0 (none is assigned).
//! kind 2, "commit": the prepared transaction xid commits; `batch` is its writes with the
//!         sequence numbers they take, replayed as any batch.
//! kind 3, "rollback": the prepared transaction xid is rolled back.
//! ```
//!
//! A write batch's 8th byte is 0 (its sequence number is below 2^56) and an event's is `'V'`;
//! this record's is `'X'`. A build that predates it reads it as an event with a wrong magic:
//! damage, so the open fails instead of misreading it; so the WAL header's version stays (a WAL
//! without these records reads the same in every build). On-disk: never change.
//!
//! Replay keeps the set of prepared transactions: a prepare adds (or, repeated, replaces) its
//! xid, a commit or rollback removes it. Every new WAL starts with the prepare records of the
//! transactions still prepared (`db/write/two_phase.rs`), so the newest WAL always holds them
//! and older WALs can be dropped by the usual rule.

use crate::error::{Error, Result};
use crate::util::coding::{put_varint32, Reader};

const TXN_MAGIC: &[u8; 8] = b"STRATATX";
const KIND_PREPARE: u8 = 1;
const KIND_COMMIT: u8 = 2;
const KIND_ROLLBACK: u8 = 3;

/// A decoded two-phase-commit record; slices borrow the record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TxnRecord<'a> {
    /// Transaction `xid` is prepared with the write batch `batch`.
    Prepare { xid: &'a [u8], batch: &'a [u8] },
    /// Prepared transaction `xid` commits; `batch` holds its writes, sequence numbers assigned.
    Commit { xid: &'a [u8], batch: &'a [u8] },
    /// Prepared transaction `xid` is rolled back.
    Rollback { xid: &'a [u8] },
}

impl TxnRecord<'_> {
    /// The record's bytes.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let (kind, xid, batch): (u8, &[u8], &[u8]) = match *self {
            TxnRecord::Prepare { xid, batch } => (KIND_PREPARE, xid, batch),
            TxnRecord::Commit { xid, batch } => (KIND_COMMIT, xid, batch),
            TxnRecord::Rollback { xid } => (KIND_ROLLBACK, xid, &[]),
        };
        let mut b = Vec::with_capacity(8 + 1 + 5 + xid.len() + batch.len());
        b.extend_from_slice(TXN_MAGIC);
        b.push(kind);
        put_varint32(&mut b, xid.len() as u32);
        b.extend_from_slice(xid);
        b.extend_from_slice(batch);
        b
    }
}

/// `None` for a record that is not a two-phase-commit record; a damaged one is an error
/// naming no file (the caller adds it and the offset).
pub(crate) fn decode_txn_record(record: &[u8]) -> Option<Result<TxnRecord<'_>>> {
    if record.len() < 8 || &record[..8] != TXN_MAGIC {
        return None;
    }
    let bad = |why: String| {
        Some(Err(Error::corruption("", 0, format!("bad WAL transaction record: {why}"))))
    };
    let mut r = Reader::new(&record[8..]);
    let Some(kind) = r.u8() else { return bad("truncated after the magic".into()) };
    let Some(len) = r.varint32() else { return bad("bad xid length".into()) };
    let Some(xid) = r.bytes(len as usize) else {
        return bad(format!("xid of {len} bytes runs past the record's end"));
    };
    let rest = r.rest();
    Some(Ok(match kind {
        KIND_PREPARE => TxnRecord::Prepare { xid, batch: rest },
        KIND_COMMIT => TxnRecord::Commit { xid, batch: rest },
        KIND_ROLLBACK if rest.is_empty() => TxnRecord::Rollback { xid },
        KIND_ROLLBACK => return bad(format!("rollback with {} bytes after its xid", rest.len())),
        k => return bad(format!("unknown kind {k} (written by a newer version?)")),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wal::decode_wal_event;

    #[test]
    fn roundtrip_and_rejects() {
        let records = [
            TxnRecord::Prepare { xid: b"t1", batch: b"0123456789abcdef" },
            TxnRecord::Commit { xid: b"", batch: b"xyz" },
            TxnRecord::Rollback { xid: b"name" },
        ];
        for r in records {
            let enc = r.encode();
            assert_eq!(decode_txn_record(&enc).unwrap().unwrap(), r);
            // An older build's event decoder refuses it (8th byte 'X', wrong magic).
            assert!(decode_wal_event(&enc).unwrap().is_err());
        }
        let mut bad_kind = records[2].encode();
        bad_kind[8] = 9;
        assert!(decode_txn_record(&bad_kind).unwrap().is_err());
        let long_xid = TxnRecord::Rollback { xid: b"abc" }.encode();
        assert!(decode_txn_record(&long_xid[..long_xid.len() - 1]).unwrap().is_err());
        let mut trailing = long_xid.clone();
        trailing.push(0);
        assert!(decode_txn_record(&trailing).unwrap().is_err());
        assert!(decode_txn_record(b"STRATAEV\x01").is_none());
        assert!(decode_txn_record(&[0; 12]).is_none());
    }
}
