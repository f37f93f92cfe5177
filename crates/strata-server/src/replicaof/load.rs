//! Loading an RDB file (`types::rdb::file`) as the whole dataset: what a full sync does with
//! the master's file.
//!
//! The file is read through once before anything changes (every record decoded, the database
//! numbers checked against `databases`, the checksum verified), so a file this server cannot
//! load leaves the dataset as it was. Then every database is emptied, the function libraries
//! replaced by the file's, and each key written with its expiry time (one batch per key, as
//! RESTORE writes it); a key whose time has passed is not written.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;
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
    /// Keys left out: their expiry time had passed.
    pub expired: u64,
    /// Function libraries loaded.
    pub libraries: usize,
}

/// Loads a full sync's file.
pub fn load_synced(sh: &Shared, link: &Arc<LinkState>, file: &Received) -> Result<(), LinkError> {
    let loaded = load_file(sh, file.path(), Some(link));
    if link.stopped() {
        return Err(LinkError::Stopped);
    }
    let loaded = loaded?;
    eprintln!(
        "replication link to {}:{}: loaded {} keys ({} expired left out), {} function libraries",
        link.target.host, link.target.port, loaded.keys, loaded.expired, loaded.libraries
    );
    Ok(())
}

/// Replaces the whole dataset with the RDB file at `path` (module doc), with LOADING replied
/// to clients while it does (not while the file is checked: the dataset is still the old
/// one). `link`: a link whose stop ends the load early (the dataset is then what was loaded
/// so far).
pub fn load_file(sh: &Shared, path: &Path, link: Option<&LinkState>) -> Result<Loaded, String> {
    let check = read(sh, path, link, |_, _| Ok(()))?;
    sh.master_link.set_loading(true);
    let loaded = replace(sh, path, link, check);
    sh.master_link.set_loading(false);
    loaded
}

/// [`load_file`]'s second pass, over a file that read through.
fn replace(
    sh: &Shared,
    path: &Path,
    link: Option<&LinkState>,
    check: Checked,
) -> Result<Loaded, String> {
    let _pin = sh.dbs.pin(false);
    sh.dbs.flush_all().map_err(|e| format!("cannot empty the databases: {e}"))?;
    crate::commands::client_tracking::flushed(sh);
    let mut loaded = Loaded { libraries: check.libraries.len(), ..Loaded::default() };
    crate::commands::functions::replace_all(sh, &check.libraries)?;
    read(sh, path, link, |db, rec| {
        let Record::Key { key, value, expire_ms, .. } = rec else { return Ok(()) };
        // An expiry time of 0 is a time long past, not "none" (RESTORE's 0).
        let at = expire_ms.map_or(0, |t| t.max(1));
        let restored = key::restore(&sh.keyspace(db), &key, &value, at, true)
            .map_err(|e| format!("cannot write key {:?}: {e}", String::from_utf8_lossy(&key)))?;
        match restored {
            key::Restored::Expired(_) => loaded.expired += 1,
            _ => loaded.keys += 1,
        }
        Ok(())
    })?;
    sh.notifier.count_changes(loaded.keys);
    Ok(loaded)
}

/// What the checking pass found.
struct Checked {
    libraries: Vec<Vec<u8>>,
}

/// Reads the file at `path` through, calling `each` with every key record and its database;
/// the function libraries are gathered.
fn read(
    sh: &Shared,
    path: &Path,
    link: Option<&LinkState>,
    mut each: impl FnMut(usize, Record) -> Result<(), String>,
) -> Result<Checked, String> {
    let name = path.display().to_string();
    let f = File::open(path).map_err(|e| format!("cannot open {name}: {e}"))?;
    let size = f.metadata().map_err(|e| format!("cannot read {name}: {e}"))?.len();
    let mut r = FileReader::new(BufReader::with_capacity(1 << 20, f), &name, Some(size))
        .map_err(|e| e.to_string())?;
    let mut checked = Checked { libraries: Vec::new() };
    let mut db = 0usize;
    let mut n = 0u64;
    while let Some(rec) = r.next_record().map_err(|e| e.to_string())? {
        n += 1;
        if n.is_multiple_of(1024) && link.is_some_and(LinkState::stopped) {
            return Err("stopped".into());
        }
        match rec {
            Record::Db(d) => {
                let at = r.offset();
                db = usize::try_from(d).unwrap_or(usize::MAX);
                sh.dbs.ensure(db).map_err(|_| {
                    format!(
                        "{name}: offset {at}: database {d}, this server has {} (databases)",
                        sh.config.databases
                    )
                })?;
            }
            Record::Function(code) => checked.libraries.push(code),
            rec @ Record::Key { .. } => each(db, rec)?,
            Record::Aux { .. } | Record::Sizes { .. } => {}
        }
    }
    Ok(checked)
}
