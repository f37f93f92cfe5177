//! The dataset as one RDB file, as of one moment (what SYNC sends): every database's live
//! keys with their expiry times, and the function libraries, in the format
//! `types::rdb::file` draws (redis-server 7.0 loads it).
//!
//! The moment is an engine snapshot taken while the databases' map is pinned (so SWAPDB
//! cannot move a database between the snapshot and the stores read): every command's write
//! is one batch, so the file holds each command's effect whole or not at all, and the
//! connections go on writing while it is written (`storage::snapshot_view`). A key whose time
//! is up at that moment is left out, as Redis leaves it out of the RDB it saves. The reads
//! count as no use of the keys (OBJECT IDLETIME, LFU counters) and fill no cache; each
//! key's last use is written as Redis writes it by `maxmemory-policy` (IDLE under an LRU
//! policy, FREQ under an LFU one).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::state::Shared;
use crate::storage::{access, snapshot_view, Store};
use crate::types::keyspace::{now_ms, Keyspace};
use crate::types::metadata::Meta;
use crate::types::rdb::file::{FileWriter, Used};
use crate::types::rdb::key::read_of;

/// What the file holds (REPLCONF rdb-filter-only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Contents {
    /// The databases' keys.
    pub keys: bool,
    /// The function libraries.
    pub functions: bool,
}

/// What was written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// Keys written (of every database).
    pub keys: u64,
    /// Function libraries written.
    pub libraries: u64,
}

/// Why the file was not written whole.
#[derive(Debug)]
pub enum DatasetError {
    /// Writing to the destination failed.
    Io(std::io::Error),
    /// A key's records could not be read (which database and key, and the cause).
    Read { db: usize, key: Vec<u8>, cause: String },
    /// `stop` was set while it was being written (its reader left).
    Stopped,
}

impl std::fmt::Display for DatasetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DatasetError::Io(e) => write!(f, "writing the RDB: {e}"),
            DatasetError::Read { db, key, cause } => {
                write!(f, "reading key \"{}\" of database {db}: {cause}", key.escape_ascii())
            }
            DatasetError::Stopped => f.write_str("stopped: the transfer's reader left"),
        }
    }
}

impl From<std::io::Error> for DatasetError {
    fn from(e: std::io::Error) -> Self {
        DatasetError::Io(e)
    }
}

/// The dataset of one moment: an engine snapshot, the databases' stores at it, and the
/// function libraries.
pub struct Moment {
    snapshot: strata::Snapshot<'static>,
    stores: Vec<Option<Arc<Store>>>,
    libraries: Vec<crate::script::library::Library>,
    /// The database the replication stream has selected at this moment, written as the
    /// file's `repl-stream-db` ([`Moment::set_stream_db`]).
    stream_db: Option<usize>,
}

impl Moment {
    /// Says in the file which database the replication stream sent after it has selected
    /// (a replica's stream, which goes on as its master's came, `storage::backlog`); `None`:
    /// the stream selects one before its first command of a database.
    pub fn set_stream_db(&mut self, db: Option<usize>) {
        self.stream_db = db;
    }
}

/// The dataset as of now. For a replica's stream to start where it ends, the caller holds
/// every key lock (`storage::backlog`).
pub fn moment(sh: &Shared) -> Moment {
    let _pin = sh.dbs.pin(false);
    moment_pinned(sh)
}

/// [`moment`] by a caller that pinned the databases' map.
pub fn moment_pinned(sh: &Shared) -> Moment {
    let snapshot = sh.engine().db.snapshot();
    let stores: Vec<Option<Arc<Store>>> = (0..sh.config.databases)
        .map(|db| sh.dbs.store_of_set(sh.dbs.set_of(db)).cloned())
        .collect();
    Moment { snapshot, stores, libraries: sh.scripts.libraries(), stream_db: None }
}

/// Writes `what` of the dataset as of now to `w` (give it a buffered writer) and returns
/// the writer with what was written; stops with [`DatasetError::Stopped`] between keys once
/// `stop` is set.
pub fn write<W: Write>(
    sh: &Shared,
    w: W,
    what: Contents,
    stop: &AtomicBool,
) -> Result<(W, Written), DatasetError> {
    write_at(sh, moment(sh), w, what, stop)
}

/// Writes `what` of the dataset of `at`, as [`write`] does.
pub fn write_at<W: Write>(
    sh: &Shared,
    at: Moment,
    w: W,
    what: Contents,
    stop: &AtomicBool,
) -> Result<(W, Written), DatasetError> {
    let Moment { snapshot, stores, libraries, stream_db } = at;
    let now = now_ms();
    let ctime = (now / 1000).to_string();
    let stream_db = stream_db.map(|d| d.to_string());
    let mut aux: Vec<(&str, &[u8])> = vec![
        ("redis-ver", crate::config::REDIS_VERSION.as_bytes()),
        ("redis-bits", b"64"),
        ("ctime", ctime.as_bytes()),
        ("aof-base", b"0"),
    ];
    if let Some(db) = &stream_db {
        aux.push(("repl-stream-db", db.as_bytes()));
    }
    let mut file = FileWriter::new(w, &aux)?;
    let mut written = Written::default();
    if what.functions {
        for lib in &libraries {
            file.function(&lib.code)?;
            written.libraries += 1;
        }
    }
    if what.keys {
        let enc = crate::commands::dump::encodings(sh);
        let used = recorded_use(sh);
        snapshot_view::reading_at(snapshot.handle(), || {
            access::untouched(|| -> Result<(), DatasetError> {
                for (db, store) in stores.iter().enumerate() {
                    let Some(store) = store else { continue };
                    // No notifier, and expired keys left in place: the walk writes nothing.
                    let ks = Keyspace::new(store, &sh.hash_limits, now)
                        .with_stream_nodes(&sh.stream_nodes)
                        .holding_expiry(true)
                        .in_db(db);
                    let mut selected = false;
                    let mut failed = None;
                    let walked = store.scan_meta(b"", |_, key, raw| {
                        if stop.load(Ordering::Relaxed) {
                            failed = Some(DatasetError::Stopped);
                            return false;
                        }
                        let bad =
                            |cause: String| DatasetError::Read { db, key: key.to_vec(), cause };
                        let m = match Meta::decode(raw) {
                            Ok(m) => m,
                            Err(e) => {
                                failed = Some(bad(format!("metadata record: {e}")));
                                return false;
                            }
                        };
                        if m.expired(now) {
                            return true;
                        }
                        let expire = (m.expire_ms != 0).then_some(m.expire_ms);
                        let value = match read_of(&ks, key, m) {
                            Ok(v) => v,
                            Err(e) => {
                                failed = Some(bad(e.to_string()));
                                return false;
                            }
                        };
                        let put = (|| {
                            if !selected {
                                // The counts are sizing hints: a loader grows past them.
                                file.select_db(db as u64, 0, 0)?;
                                selected = true;
                            }
                            file.key_used(key, &value, expire, used(store, key), &enc)
                        })();
                        if let Err(e) = put {
                            failed = Some(DatasetError::Io(e));
                            return false;
                        }
                        written.keys += 1;
                        true
                    });
                    if let Some(e) = failed {
                        return Err(e);
                    }
                    walked.map_err(|e| DatasetError::Read {
                        db,
                        key: Vec::new(),
                        cause: format!("walking the keys: {e}"),
                    })?;
                }
                Ok(())
            })
        })?;
    }
    Ok((file.finish()?, written))
}

/// What the file records of each key's last use, by `maxmemory-policy`, as Redis saves it:
/// the idle time under an LRU policy, the LFU counter under an LFU one, nothing otherwise.
fn recorded_use(sh: &Shared) -> impl Fn(&Store, &[u8]) -> Used {
    let policy = sh.params.read().get("maxmemory-policy").cloned().unwrap_or_default();
    let (lru, lfu) = (policy.ends_with("-lru"), policy.ends_with("-lfu"));
    move |st: &Store, key: &[u8]| Used {
        idle_secs: lru.then(|| st.meta_cache.idle_secs(st.space, key)),
        freq: lfu.then(|| st.frequencies.of(st.space, key)),
    }
}
