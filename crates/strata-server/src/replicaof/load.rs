//! Loading an RDB file (`types::rdb::file`) as the whole dataset: what a full sync does with
//! the master's file, and what a new server does with a Redis dump it finds in its data
//! directory ([`dump_to_import`]).
//!
//! The file is read through once before anything changes (every record decoded, the database
//! numbers checked against `databases`, the checksum verified), so a file this server cannot
//! load leaves the dataset as it was. Then every database is emptied, the function libraries
//! replaced by the file's, and each key written with its expiry time, many keys a batch
//! (`types::rdb::key::BulkLoad`: none is looked for, no event is raised, as in Redis's load);
//! a key whose time has passed is not written, but by a full sync, which keeps it for the
//! master's DEL ([`load_synced`]).

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::transfer::Received;
use super::LinkError;
use crate::master_link::LinkState;
use crate::state::Shared;
use crate::types::rdb::file::{FileReader, Record};
use crate::types::rdb::key;

/// What a load wrote.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Loaded {
    /// Keys written.
    pub keys: u64,
    /// Keys left out: their expiry time had passed (a dump at start; a full sync keeps them).
    pub expired: u64,
    /// The file's `repl-stream-db` (a replication file: the database its master's stream
    /// has selected where the file was taken), when it has one below `databases`.
    pub stream_db: Option<usize>,
    /// Function libraries loaded.
    pub libraries: usize,
}

/// Loads a full sync's file: every key of it, one whose time is up included (the master
/// deletes it with a DEL of its own: `types::keyspace::as_master`).
/// The database the master's stream has selected where the file was taken (its
/// `repl-stream-db`) comes back with what was loaded.
pub fn load_synced(
    sh: &Shared,
    link: &Arc<LinkState>,
    file: &Received,
) -> Result<Loaded, LinkError> {
    let loaded = crate::types::keyspace::as_master(|| load_file(sh, file.path(), Some(link)));
    if link.stopped() {
        return Err(LinkError::Stopped);
    }
    let loaded = loaded?;
    eprintln!(
        "replication link to {}:{}: loaded {} keys ({} expired left out), {} function libraries",
        link.target.host, link.target.port, loaded.keys, loaded.expired, loaded.libraries
    );
    Ok(loaded)
}

/// Replaces the whole dataset with the RDB file at `path` (module doc), with LOADING replied
/// to clients while it does (not while the file is checked: the dataset is still the old
/// one). `link`: a link whose stop ends the check early; once the databases are emptied the
/// load runs to its end whatever happens to the link (REPLICAOF NO ONE meanwhile keeps the
/// whole dataset, never a part of it).
pub fn load_file(sh: &Shared, path: &Path, link: Option<&LinkState>) -> Result<Loaded, String> {
    let checked = check_file(path, sh.config.databases, link)?;
    load_checked(sh, path, checked)
}

/// The first pass of [`load_file`]: the file at `path` read through (every record decoded,
/// its databases below `databases`, the checksum right), nothing written.
pub fn check_file(
    path: &Path,
    databases: usize,
    link: Option<&LinkState>,
) -> Result<Checked, String> {
    read(path, databases, link, |_| Ok(()), |_, _| Ok(()))
}

/// The second pass of [`load_file`], over a file [`check_file`] read through.
pub fn load_checked(sh: &Shared, path: &Path, checked: Checked) -> Result<Loaded, String> {
    /// Clears LOADING however the load ends (a panic in it included: clients never wait
    /// for a load that is gone), after the metadata cache: the loaded keys have no entries
    /// there (`types::rdb::key::BulkLoad`), and none a read filled meanwhile may stay.
    struct Loading<'a>(&'a Shared);
    impl Drop for Loading<'_> {
        fn drop(&mut self) {
            self.0.engine().meta_cache.clear();
            self.0.master_link.set_loading(false);
        }
    }
    sh.master_link.set_loading(true);
    let _loading = Loading(sh);
    replace(sh, path, checked)
}

/// [`load_checked`]'s writes.
fn replace(sh: &Shared, path: &Path, check: Checked) -> Result<Loaded, String> {
    let _pin = sh.dbs.pin(false);
    sh.dbs.flush_all().map_err(|e| format!("cannot empty the databases: {e}"))?;
    crate::commands::client_tracking::flushed(sh);
    let mut loaded = Loaded {
        libraries: check.libraries.len(),
        stream_db: check.stream_db,
        ..Loaded::default()
    };
    crate::commands::functions::replace_all(sh, &check.libraries)?;
    let ensure = |db: usize| sh.dbs.ensure(db).map_err(|e| format!("database {db}: {e}"));
    let mut bulk = key::BulkLoad::default();
    // The database whose keys the batch holds.
    let mut batch_db = None;
    let written = |r: crate::types::Result<()>| r.map_err(|e| format!("cannot write keys: {e}"));
    read(path, sh.config.databases, None, ensure, |db, rec| {
        let Record::Key { key, value, expire_ms, idle_secs, freq } = rec else { return Ok(()) };
        if let Some(before) = batch_db.filter(|&d| d != db) {
            written(bulk.finish(&sh.keyspace(before)))?;
        }
        batch_db = Some(db);
        // An expiry time of 0 is a time long past, not "none" (RESTORE's 0).
        let at = expire_ms.map_or(0, |t| t.max(1));
        let ks = sh.keyspace(db);
        // OBJECT IDLETIME / FREQ as the master's file says (RESTORE's rule).
        let added = bulk
            .add(&ks, &key, &value, at, (idle_secs, freq))
            .map_err(|e| format!("cannot write key {:?}: {e}", String::from_utf8_lossy(&key)))?;
        if added {
            loaded.keys += 1;
        } else {
            loaded.expired += 1;
        }
        Ok(())
    })?;
    if let Some(db) = batch_db {
        written(bulk.finish(&sh.keyspace(db)))?;
    }
    sh.notifier.count_changes(loaded.keys);
    Ok(loaded)
}

/// Stands in the data directory from before an import of a dump writes anything until the
/// imported dataset is durable ([`finish_import`]): a start that finds it (the process died
/// during the import) imports again, the load emptying the databases first.
const IMPORTING: &str = "IMPORTING-DUMP";

/// The Redis dump a starting server takes as its first dataset, checked: `dbfilename`
/// (`dump.rdb`) in the data directory, when that directory holds no DB yet (no `CURRENT`:
/// a DB that exists is newer than any dump beside it, and is kept) or holds one an import
/// left unfinished ([`IMPORTING`]), and the server is not in cluster mode. Called before the
/// DB is opened, so a dump that does not read stops the start and leaves the directory as it
/// was; one that reads is marked as being imported before anything is written.
pub fn dump_to_import(cfg: &crate::config::Config) -> Result<Option<(PathBuf, Checked)>, String> {
    let name = cfg.extra.get("dbfilename").map_or("dump.rdb", String::as_str);
    let path = cfg.dir.join(name);
    if cfg.cluster.enabled || !path.is_file() {
        return Ok(None);
    }
    let marker = cfg.dir.join(IMPORTING);
    if cfg.dir.join("CURRENT").exists() && !marker.exists() {
        eprintln!("{} left as it is: the DB in {} is kept", path.display(), cfg.dir.display());
        return Ok(None);
    }
    let checked = check_file(&path, cfg.databases, None)
        .map_err(|e| format!("cannot import the Redis dump: {e}"))?;
    let marked = File::create(&marker)
        .and_then(|f| f.sync_all())
        .and_then(|()| File::open(&cfg.dir)?.sync_all());
    marked.map_err(|e| format!("cannot write {}: {e}", marker.display()))?;
    Ok(Some((path, checked)))
}

/// After an import's load: the dataset made durable (SAVE's work), then the mark of an
/// import in progress removed.
pub fn finish_import(sh: &Shared) -> Result<(), String> {
    sh.dbs.save().map_err(|e| format!("cannot make the imported dump durable: {e}"))?;
    let marker = sh.config.dir.join(IMPORTING);
    std::fs::remove_file(&marker)
        .and_then(|()| File::open(&sh.config.dir)?.sync_all())
        .map_err(|e| format!("cannot remove {}: {e}", marker.display()))
}

/// What the checking pass found: a file that reads through.
#[derive(Debug)]
pub struct Checked {
    libraries: Vec<Vec<u8>>,
    /// The `repl-stream-db` aux field, when it names a database below `databases`.
    stream_db: Option<usize>,
}

/// Reads the file at `path` through: `on_db` with each database it selects (below
/// `databases`, or an error naming the offset), `each` with every key record and its
/// database; the function libraries are gathered.
fn read(
    path: &Path,
    databases: usize,
    link: Option<&LinkState>,
    mut on_db: impl FnMut(usize) -> Result<(), String>,
    mut each: impl FnMut(usize, Record) -> Result<(), String>,
) -> Result<Checked, String> {
    let name = path.display().to_string();
    let f = File::open(path).map_err(|e| format!("cannot open {name}: {e}"))?;
    let size = f.metadata().map_err(|e| format!("cannot read {name}: {e}"))?.len();
    let mut r = FileReader::new(BufReader::with_capacity(1 << 20, f), &name, Some(size))
        .map_err(|e| e.to_string())?;
    let mut checked = Checked { libraries: Vec::new(), stream_db: None };
    let mut db = 0usize;
    let mut n = 0u64;
    while let Some(rec) = r.next_record().map_err(|e| e.to_string())? {
        n += 1;
        if n.is_multiple_of(1024) && link.is_some_and(LinkState::stopped) {
            return Err("stopped".into());
        }
        match rec {
            Record::Db(d) => {
                db = usize::try_from(d).ok().filter(|&d| d < databases).ok_or_else(|| {
                    format!(
                        "{name}: offset {}: database {d}, this server has {databases} (databases)",
                        r.offset()
                    )
                })?;
                on_db(db)?;
            }
            Record::Function(code) => checked.libraries.push(code),
            rec @ Record::Key { .. } => each(db, rec)?,
            // Redis writes -1 for "none selected"; anything not a database here is ignored
            // (the stream then selects one before its first command of a database).
            Record::Aux { key, value } if key == b"repl-stream-db" => {
                checked.stream_db = std::str::from_utf8(&value)
                    .ok()
                    .and_then(|v| v.parse::<usize>().ok())
                    .filter(|&d| d < databases);
            }
            Record::Aux { .. } | Record::Sizes { .. } => {}
        }
    }
    Ok(checked)
}
