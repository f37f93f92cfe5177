//! Creating, dropping and listing column families (`Db::create_cf`, `Db::drop_cf`,
//! `Db::list_cf`).
//!
//! Both changes hold the WAL lock, so no write group stages a batch meanwhile, and take the
//! MANIFEST lock for their edit (lock order `wal` -> `versions` -> `state`). A created family
//! starts with an empty memtable whose WAL is the current one. A dropped family leaves the
//! memtable set and the families map at once: writes naming it are refused from then on, and
//! records of it that a group staged earlier are skipped (`MemSet::add_batch`); its tables are
//! deleted once no super version (an iterator, a handle's read) holds them.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{CfState, Cfd, ColumnFamily, FamilyMem};
use crate::column_family::{check_name, DEFAULT_COLUMN_FAMILY_NAME};
use crate::db::{DbInner, SuperVersion};
use crate::error::{Error, Result};
use crate::options::Options;
use crate::version::edit::VersionEdit;
use crate::version::set::FamilyLayout;

pub(crate) fn create_cf(inner: &DbInner, name: &str, opts: &Options) -> Result<Arc<ColumnFamily>> {
    check_name(name)?;
    opts.validate()?;
    // A DB opened with a TTL stores every family's values with their write time; a family
    // made here never expires (RocksDB's `DBWithTTL::CreateColumnFamily`).
    let (mut fopts, suffix) = match &inner.ttl {
        Some(clock) => (
            super::super::ttl::ttl_options(opts, 0, clock).sanitized(),
            super::super::ttl::TTL_SUFFIX_LEN,
        ),
        None => (opts.sanitized(), 0),
    };
    let paths = crate::db::paths::family_paths(&fopts, &inner.opts, &inner.dir)?;
    crate::db::paths::sanitize_for_paths(&mut fopts, &paths);
    crate::db::paths::create_dirs(inner.fs.as_ref(), &paths)?;
    let layout = FamilyLayout { num_levels: fopts.num_levels, paths };
    let mut wal = inner.wal.lock();
    if let Some(e) = inner.bg_error() {
        return Err(e);
    }
    let mut versions = inner.versions.lock();
    if versions.families().values().any(|f| f.name == name) {
        return Err(Error::InvalidArgument(format!("column family {name:?} already exists")));
    }
    let id = versions.max_column_family() + 1;
    // Tables and the MANIFEST name the family's order; readers find it by that name.
    inner.table_cache.orders().add(&fopts.comparator);
    if fopts.timestamps.is_some() {
        inner.any_timestamps.store(true, Ordering::Release);
    }
    let mut edit = VersionEdit {
        column_family: id,
        cf_add: Some(name.to_string()),
        comparator: (!fopts.comparator.is_bytewise()).then(|| fopts.comparator.name().to_string()),
        cf_log_number: Some(wal.number),
        ..VersionEdit::default()
    };
    let version = match versions.log_and_apply(&mut edit, &layout) {
        Ok(Some(v)) => v,
        Ok(None) => return Err(Error::Background("created column family has no version".into())),
        Err(e) => {
            let mut st = inner.state.lock();
            inner.set_bg_error(&mut st, &e);
            return Err(e);
        }
    };
    let mem = super::new_memtable(&fopts, &inner.opts, None);
    // A new family has no write before now: the first ones go to this memtable.
    mem.set_earliest(crate::types::SeqNo(0));
    let imm = std::collections::VecDeque::new();
    let sv = SuperVersion::build(&fopts, &mem, &imm, version, 1);
    let stats = Arc::new(crate::stats::Stats::new(fopts.num_levels, inner.opts.statistics.clone()));
    // A DB-wide option (RocksDB's `file_checksum_gen_factory` is a DB option).
    let fopts = Options { file_checksums: inner.opts.file_checksums, ..fopts };
    let cfd = Arc::new(Cfd::new(inner.instance, id, name, fopts, sv, stats, suffix));
    let mut st = inner.state.lock();
    st.cfs.insert(
        id,
        CfState {
            cfd: cfd.clone(),
            mem: mem.clone(),
            mem_log: wal.number,
            imm,
            memtables_switched: 0,
            memtables_flushed: 0,
            memtables_retired: 0,
            flush_requested: 0,
            l0_pace: crate::compaction::l0_batch::L0Pace::default(),
        },
    );
    wal.mems = Arc::new(wal.mems.with(FamilyMem { cfd: cfd.clone(), mem }));
    drop(st);
    drop(versions);
    drop(wal);
    inner.info_log.log(&format!("Created column family [{name}] (ID {id})"));
    Ok(Arc::new(ColumnFamily { cfd }))
}

pub(crate) fn drop_cf(inner: &DbInner, name: &str) -> Result<()> {
    if name == DEFAULT_COLUMN_FAMILY_NAME {
        return Err(Error::InvalidArgument("the default column family cannot be dropped".into()));
    }
    let mut wal = inner.wal.lock();
    if let Some(e) = inner.bg_error() {
        return Err(e);
    }
    // No group may still insert into the family's memtable once it is gone.
    crate::db::write::drain_pipeline(inner);
    let mut versions = inner.versions.lock();
    let Some((&id, family)) = versions.families().iter().find(|(_, f)| f.name == name) else {
        return Err(Error::InvalidArgument(format!("column family {name:?} does not exist")));
    };
    let files: Vec<_> =
        family.current.files().map(|(_, f)| (f.number, f.path_in(&inner.dir))).collect();
    let mut edit = VersionEdit { column_family: id, cf_drop: true, ..VersionEdit::default() };
    if let Err(e) = versions.log_and_apply(&mut edit, &FamilyLayout::levels(1)) {
        let mut st = inner.state.lock();
        inner.set_bg_error(&mut st, &e);
        return Err(e);
    }
    let mut st = inner.state.lock();
    if let Some(cs) = st.cfs.remove(&id) {
        cs.cfd.dropped.store(true, Ordering::Release);
        // The blob files of its values written at commit go with its memtables.
        for m in std::iter::once(&cs.mem).chain(cs.imm.iter().map(|(m, _)| m)) {
            if let Some(l) = crate::db::blob_log::log_of(m) {
                l.discard();
            }
        }
    }
    st.obsolete_tables.extend(files);
    wal.mems = Arc::new(wal.mems.without(id));
    inner.bg_cv.notify_all();
    drop(st);
    drop(versions);
    drop(wal);
    inner.info_log.log(&format!("Dropped column family [{name}] (ID {id})"));
    crate::db::obsolete::purge_obsolete_tables(inner);
    Ok(())
}

/// The names of the DB's families in `path`, `default` first (ids ascending), read from its
/// MANIFEST without opening the DB.
pub(crate) fn list_cf(opts: &Options, path: &Path) -> Result<Vec<String>> {
    if !opts.fs.exists(&crate::filename::current_path(path)) {
        return Err(Error::InvalidArgument(format!(
            "{} holds no DB (no CURRENT file)",
            path.display()
        )));
    }
    crate::version::set::family_names(opts.fs.as_ref(), path)
}

/// The handle of family `name`, if it exists.
pub(crate) fn cf_handle(inner: &DbInner, name: &str) -> Option<Arc<ColumnFamily>> {
    let st = inner.state.lock();
    st.cfs
        .values()
        .find(|c| c.cfd.name == name)
        .map(|c| Arc::new(ColumnFamily { cfd: c.cfd.clone() }))
}
