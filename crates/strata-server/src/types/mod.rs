//! The Redis data types on the store, Kvrocks-style: what a key's records say and every
//! operation on them. One module per type ([`string`], [`hash`], [`list`], [`set`], [`zset`],
//! [`stream`]; the bit operations on strings: [`bitmap`]; geospatial indexes, sorted sets of
//! geohashes: [`geo`]; HyperLogLogs, strings in Redis's HLL layout: [`hll`]) holds its
//! operations: reads, and
//! writes built as one `WriteBatch` under the key's lock (with the index upkeep a type
//! needs: a sorted set's score index, a hash's encoding). Keys of any type: [`keys`], and
//! active expiry: [`expiry`]; a key's value in Redis's serialized form (DUMP, RESTORE):
//! [`rdb`]. Each write raises the keyspace notifications Redis raises for
//! it ([`notify`]) once it succeeded.
//!
//! Records: one metadata record per key ([`metadata`]) and one sub-key per field, member or
//! element ([`subkey`]), plus a score index for sorted sets ([`score`]); small hashes keep
//! their pairs inside the metadata record instead ([`compact_hash`]). Stale sub-keys are
//! collected by the store's compaction filter, with [`gc`]'s rule.
//!
//! Operations take a [`Keyspace`] (the store, the encoding settings and the time) and return
//! [`TypeError`]: they read and write the engine through `storage` and never format a reply.

pub mod bitmap;
pub mod compact_hash;
pub mod error;
pub mod expiry;
pub mod gc;
pub mod geo;
pub mod hash;
pub mod hash_delta;
pub mod hll;
pub mod keys;
pub mod keyspace;
pub mod list;
pub mod long_double;
pub mod metadata;
pub mod notify;
pub mod number;
pub mod rdb;
pub mod score;
pub mod seen;
pub mod set;
pub mod stream;
pub mod string;
pub mod subkey;
pub mod zset;

pub use error::{Result, TypeError};
pub use keyspace::{now_ms, Keyspace};
pub use metadata::{Kind, Meta, Payload};

use crate::storage::databases::Databases;
use crate::storage::{OpenError, Store, SyncPolicy};
use std::sync::Arc;

/// `opts` with what the types' records need of the engine: the metadata families' merge
/// operator (field deltas, [`hash_delta`]).
fn with_rules(mut opts: strata::Options) -> strata::Options {
    opts.merge_operator = Some(hash_delta::operator());
    opts
}

/// Gives an opened engine what reads the types' records: the due indexes' reader of a
/// metadata record's expiry.
fn with_readers(engine: &crate::storage::Engine) {
    engine.due.read_expiry_with(metadata::raw_expire_ms);
    engine.own_due.read_expiry_with(metadata::raw_expire_ms);
}

/// Opens (creating if needed) the store in `dir`, its compaction filter collecting stale
/// sub-keys by [`gc::is_stale`], its metadata merging field deltas ([`hash_delta`]).
pub fn open(
    opts: strata::Options,
    dir: &std::path::Path,
    policy: SyncPolicy,
) -> std::result::Result<Arc<Store>, OpenError> {
    let st = Store::open(with_rules(opts), dir, policy, gc::is_stale)?;
    with_readers(st.engine());
    Ok(st)
}

/// Opens (creating if needed) the store in `dir` with `count` databases (SELECT's range),
/// every one's compaction filter collecting stale sub-keys by [`gc::is_stale`].
pub fn open_databases(
    opts: strata::Options,
    dir: &std::path::Path,
    policy: SyncPolicy,
    count: usize,
) -> std::result::Result<Arc<Databases>, OpenError> {
    let dbs = Databases::open(with_rules(opts), dir, policy, gc::is_stale, count, false)?;
    with_readers(dbs.engine());
    Ok(dbs)
}

/// A test's store in `dir`: default options, no syncs, four databases.
#[cfg(test)]
pub(crate) fn open_test_databases(dir: &std::path::Path) -> Arc<Databases> {
    open_databases(strata::Options::default(), dir, SyncPolicy::No, 4).unwrap()
}

/// Opens (creating if needed) a cluster node's store in `dir`: one database, its keys filed
/// under their partitions (`crate::filing`), its compaction filter as [`open_databases`]'.
pub fn open_partitioned(
    opts: strata::Options,
    dir: &std::path::Path,
    policy: SyncPolicy,
) -> std::result::Result<Arc<Databases>, OpenError> {
    let dbs = Databases::open(with_rules(opts), dir, policy, gc::is_stale, 1, true)?;
    with_readers(dbs.engine());
    Ok(dbs)
}
