//! Two-phase commit in the WAL: the engine's half of `TransactionDb`'s `prepare`, and the
//! commit or rollback of a prepared transaction (records: `wal/txn_record.rs`).
//!
//! - *Prepare* appends a prepare record (the transaction's name and writes) and remembers it
//!   in `WalState::prepared`. It takes no sequence number and nothing goes into a memtable.
//! - *Commit* is a write group of its own whose WAL record is a commit record: the name, and
//!   the writes with their sequence numbers. Replay applies it as any batch.
//! - *Rollback* appends a rollback record.
//!
//! Contract: while a transaction is prepared, its prepare record is in the newest WAL. Every
//! new WAL (a memtable switch, an open) starts with the prepare records of the transactions
//! still prepared, made durable (the retired WALs, the directory and the new WAL synced)
//! before any flush can let an older WAL go. So WALs are dropped by the usual rule (their
//! writes are in tables), and replay from the MANIFEST's log number finds every prepared
//! transaction: the newest WAL is never older than the log number.
//!
//! A prepare, commit or rollback needs the WAL (`disable_wal` is refused); each is synced when
//! its `WriteOptions` ask, as any write. A failed WAL write or sync is a background error.

use super::wal::{append_synced_event, sync_retired_wals, sync_wal_dir};
use super::{check_families, write_with};
use crate::db::{Db, DbInner, WalState};
use crate::error::{Error, Result};
use crate::options::WriteOptions;
use crate::wal::TxnRecord;
use crate::write_batch::WriteBatch;

fn needs_wal(opts: WriteOptions, what: &str) -> Result<()> {
    if opts.disable_wal {
        return Err(Error::InvalidArgument(format!(
            "a transaction's {what} is written to the WAL: disable_wal must be off"
        )));
    }
    Ok(())
}

/// What a marker does to the prepared set.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Marker {
    /// A prepare: `xid` must not be prepared; it is from then on.
    Prepare,
    /// An empty commit or a rollback: `xid` must be prepared; it no longer is.
    Resolve,
}

fn not_prepared(xid: &[u8]) -> Error {
    Error::InvalidArgument(format!(
        "transaction {:?} is not prepared",
        String::from_utf8_lossy(xid)
    ))
}

/// Appends `record` (a prepare, an empty commit or a rollback: no sequence number) for
/// transaction `xid`, checking and updating the prepared set under the same WAL lock, then
/// syncs if asked.
fn append_marker(
    inner: &DbInner,
    xid: &[u8],
    record: Vec<u8>,
    sync: bool,
    marker: Marker,
) -> Result<()> {
    if let Some(e) = inner.bg_error() {
        return Err(e);
    }
    let mut wal = inner.wal.lock();
    match (marker, wal.prepared.contains_key(xid)) {
        (Marker::Prepare, true) => {
            return Err(Error::InvalidArgument(format!(
                "transaction {:?} is already prepared",
                String::from_utf8_lossy(xid)
            )))
        }
        (Marker::Resolve, false) => return Err(not_prepared(xid)),
        _ => {}
    }
    crate::kill_point!("wal.append");
    let mut syncer = None;
    let logged = (|| {
        if sync {
            // As a synced write: nothing acknowledged earlier may be lost while this survives.
            sync_retired_wals(inner, None)?;
            sync_wal_dir(inner)?;
        }
        append_synced_event(inner, &mut wal)?;
        wal.writer.add_record(&record)?;
        crate::kill_point!("txn.marker");
        wal.writer.flush()?;
        if sync {
            match wal.writer.syncer()? {
                Some(s) => syncer = Some(s),
                None => wal.writer.sync()?,
            }
        }
        Ok(())
    })();
    if let Err(e) = logged {
        let mut st = inner.state.lock();
        inner.set_bg_error(&mut st, &e);
        return Err(e);
    }
    match marker {
        Marker::Prepare => {
            wal.prepared.insert(xid.to_vec(), record);
        }
        Marker::Resolve => {
            wal.prepared.remove(xid);
        }
    }
    drop(wal);
    if let Some(s) = syncer {
        if let Err(e) = s.sync() {
            let mut st = inner.state.lock();
            inner.set_bg_error(&mut st, &e);
            return Err(e);
        }
    }
    crate::kill_point!("wal.sync", when sync);
    Ok(())
}

/// Appends the commit record of `xid` with `batch` (its sequence number set) and forgets the
/// transaction as prepared. Called by the commit's group leader, holding the WAL lock.
pub(super) fn append_commit(wal: &mut WalState, xid: &[u8], batch: &WriteBatch) -> Result<()> {
    wal.writer.add_record(&TxnRecord::Commit { xid, batch: batch.data() }.encode())?;
    wal.prepared.remove(xid);
    Ok(())
}

/// Starts the new WAL `wal.writer` (its header written) with the prepare records of the
/// transactions still prepared, and makes them durable (module contract). Called holding the
/// WAL lock, at a memtable switch.
pub(super) fn carry_prepared(inner: &DbInner, wal: &mut WalState) -> Result<()> {
    if wal.prepared.is_empty() {
        return Ok(());
    }
    let WalState { writer, prepared, .. } = wal;
    for record in prepared.values() {
        writer.add_record(record)?;
    }
    writer.flush()?;
    sync_retired_wals(inner, None)?;
    sync_wal_dir(inner)?;
    writer.sync()
}

impl Db {
    /// Prepares transaction `xid` with `batch`: the WAL holds it, and it survives a crash
    /// as prepared until [`Db::commit_prepared`] or [`Db::rollback_prepared`]. Nothing of it
    /// is visible. `InvalidArgument` when `xid` is already prepared.
    pub(crate) fn prepare_in_wal(
        &self,
        xid: &[u8],
        batch: &WriteBatch,
        opts: WriteOptions,
    ) -> Result<()> {
        needs_wal(opts, "prepare")?;
        self.check_writable()?;
        batch.validate()?;
        check_families(&self.inner, batch)?;
        let record = TxnRecord::Prepare { xid, batch: batch.data() }.encode();
        append_marker(&self.inner, xid, record, opts.sync, Marker::Prepare)
    }

    /// Commits prepared transaction `xid`, writing `batch` (its writes) atomically with the
    /// commit record. `InvalidArgument` when `xid` is not prepared.
    pub(crate) fn commit_prepared(
        &self,
        xid: &[u8],
        batch: WriteBatch,
        opts: WriteOptions,
    ) -> Result<()> {
        needs_wal(opts, "commit")?;
        self.check_writable()?;
        if batch.is_empty() {
            let record = TxnRecord::Commit { xid, batch: batch.data() }.encode();
            return append_marker(&self.inner, xid, record, opts.sync, Marker::Resolve);
        }
        // A commit with writes is a write group of its own (`append_commit`); the check comes
        // before it is queued.
        if !self.inner.wal.lock().prepared.contains_key(xid) {
            return Err(not_prepared(xid));
        }
        write_with(&self.inner, batch, opts, Some(xid.to_vec()))
    }

    /// Rolls prepared transaction `xid` back. `InvalidArgument` when it is not prepared.
    pub(crate) fn rollback_prepared(&self, xid: &[u8], opts: WriteOptions) -> Result<()> {
        needs_wal(opts, "rollback")?;
        self.check_writable()?;
        append_marker(
            &self.inner,
            xid,
            TxnRecord::Rollback { xid }.encode(),
            opts.sync,
            Marker::Resolve,
        )
    }

    /// The transactions prepared and not yet resolved, with their writes, by name.
    pub(crate) fn prepared_in_wal(&self) -> Result<Vec<(Vec<u8>, WriteBatch)>> {
        let wal = self.inner.wal.lock();
        let mut out = Vec::with_capacity(wal.prepared.len());
        for (xid, record) in &wal.prepared {
            let batch = match crate::wal::decode_txn_record(record) {
                Some(Ok(TxnRecord::Prepare { batch, .. })) => WriteBatch::from_vec(batch.to_vec())?,
                _ => {
                    return Err(Error::Background(format!(
                        "prepared transaction {:?}: its record does not decode",
                        String::from_utf8_lossy(xid)
                    )))
                }
            };
            out.push((xid.clone(), batch));
        }
        Ok(out)
    }
}
