//! The `VersionSet`: the current version plus the persistent counters, and the MANIFEST that
//! records every change to them.
//!
//! Protocol: a change is an edit appended to the MANIFEST and synced *before* the new version
//! is installed, so an installed version is always recoverable. A new MANIFEST starts with a
//! snapshot edit of the whole state; CURRENT is switched to it by writing a temporary file,
//! syncing it, renaming it over CURRENT and syncing the directory.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use super::edit::VersionEdit;
use super::levels::{TableFile, Version};
use super::paths::TablePaths;
use crate::column_family::DEFAULT_COLUMN_FAMILY_NAME;
use crate::env::FileSystem;
use crate::error::{Error, Result};
use crate::filename::{current_path, manifest_name, manifest_path, temp_path};
use crate::types::{FileNumber, SeqNo};
use crate::wal::{replay_log, tail_is_interrupted_append, LogWriter, TailRule, WalRecoveryMode};

/// The comparator name recorded in the MANIFEST; a DB written with another order is refused.
use crate::comparator::{KeyOrder, KnownOrders};

/// A MANIFEST larger than this is replaced by a fresh snapshot at the next change.
const MAX_MANIFEST_SIZE: u64 = 64 << 20;

pub(crate) struct VersionSet {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    /// The live column families by id (`default`, id 0, always among them).
    families: BTreeMap<u32, Family>,
    /// The largest family id ever handed out (ids are never reused).
    max_column_family: u32,
    /// Next file number not yet handed out, shared with the DB so that creating a WAL or a
    /// table never waits for the MANIFEST lock. Persisted in every edit as an upper bound.
    next_file: Arc<AtomicU64>,
    /// Largest sequence number persisted in a table (WAL replay may raise the DB's).
    last_sequence: SeqNo,
    /// WALs with a smaller number hold nothing of any family that is not in a table.
    log_number: FileNumber,
    manifest: Option<LogWriter>,
    manifest_number: FileNumber,
    /// Versions replaced since open (of every family, dropped ones included) that may still be
    /// read (by iterators through their super version): their files must not be deleted while
    /// they live.
    old_versions: Vec<Weak<Version>>,
    /// The key orders a family's recorded comparator name may name.
    orders: KnownOrders,
    /// Every blob file some version installed since open held: those no live version holds
    /// any more are obsolete ([`VersionSet::obsolete_blobs`]).
    blob_files_seen: BTreeSet<FileNumber>,
}

/// One column family as the MANIFEST knows it.
#[derive(Clone)]
pub(crate) struct Family {
    pub name: String,
    pub current: Arc<Version>,
    /// WALs below this hold nothing of the family that is not in its tables (the DB's log
    /// number, if that is higher, rules: see [`VersionSet::family_log_number`]).
    pub log_number: FileNumber,
    /// The family's `full_history_ts_low` (user-defined timestamps), if one was recorded.
    pub full_history_ts_low: Option<Vec<u8>>,
}

/// What a family's version is built with: its level count and table directories (the
/// options it is opened with).
#[derive(Clone, Debug)]
pub(crate) struct FamilyLayout {
    pub num_levels: usize,
    pub paths: TablePaths,
}

impl FamilyLayout {
    /// `num_levels` levels, tables in the DB directory (paths not known).
    pub fn levels(num_levels: usize) -> FamilyLayout {
        FamilyLayout { num_levels, paths: TablePaths::default() }
    }

    /// An empty version of this shape with keys in `order`.
    fn empty_version(&self, order: KeyOrder) -> Version {
        Version::new(self.num_levels, order).with_paths(self.paths.clone())
    }
}

/// A family's state as a new MANIFEST records it (checkpoints, backups, repair).
#[derive(Clone)]
pub(crate) struct FamilySnapshot {
    pub id: u32,
    pub name: String,
    pub version: Arc<Version>,
    pub log_number: FileNumber,
    pub full_history_ts_low: Option<Vec<u8>>,
}

impl FamilySnapshot {
    /// This family with every table at path 0: the state of a copy that holds all the
    /// tables in one directory (a checkpoint, a restored backup), which opens with default
    /// options.
    pub fn in_one_directory(&self) -> Result<FamilySnapshot> {
        let mut edit = self.version.snapshot_edit();
        if edit.new_files.iter().all(|(_, f)| f.path_id == 0) {
            return Ok(self.clone());
        }
        for (_, f) in &mut edit.new_files {
            f.path_id = 0;
        }
        let version =
            Version::new(self.version.levels.len(), self.version.order().clone()).apply(&edit)?;
        Ok(FamilySnapshot { version: Arc::new(version), ..self.clone() })
    }
}

impl VersionSet {
    /// An empty version set for a new DB (nothing written yet; call [`Self::write_new_manifest`])
    /// whose `default` family has the shape `default` and keys in `order`; families'
    /// recorded orders are found in `orders`.
    pub fn new(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        default: &FamilyLayout,
        order: KeyOrder,
        orders: KnownOrders,
    ) -> VersionSet {
        let default = Family {
            name: DEFAULT_COLUMN_FAMILY_NAME.to_string(),
            current: Arc::new(default.empty_version(order)),
            log_number: FileNumber(0),
            full_history_ts_low: None,
        };
        VersionSet {
            fs,
            dir: dir.to_path_buf(),
            families: BTreeMap::from([(0, default)]),
            max_column_family: 0,
            next_file: Arc::new(AtomicU64::new(1)),
            last_sequence: SeqNo::ZERO,
            log_number: FileNumber(0),
            manifest: None,
            manifest_number: FileNumber(0),
            old_versions: Vec::new(),
            orders,
            blob_files_seen: BTreeSet::new(),
        }
    }

    /// Reads CURRENT and replays the MANIFEST it names. `layout_of(name)` is the level count
    /// and table paths of family `name` (the options it is opened with). Each family's keys
    /// are in the order its records name (bytewise when they name none), found in `orders`:
    /// a name `orders` lacks is `InvalidArgument`.
    pub fn recover(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        layout_of: &dyn Fn(&str) -> FamilyLayout,
        orders: &KnownOrders,
    ) -> Result<VersionSet> {
        let (mpath, manifest_number, file) = open_current_manifest(fs.as_ref(), dir)?;
        let mut vs = VersionSet::new(
            fs.clone(),
            dir,
            &layout_of(DEFAULT_COLUMN_FAMILY_NAME),
            KeyOrder::Bytewise,
            orders.clone(),
        );
        let mut saw_comparator = false;
        let mut saw_next_file = false;
        // A torn last record was never acknowledged (edits are synced before they take
        // effect), so point-in-time is the right mode; damage before the tail is an error.
        let outcome = replay_log(&file, WalRecoveryMode::PointInTime, |offset, record| {
            let edit = VersionEdit::decode(record).map_err(|e| relocate(e, &mpath, offset))?;
            saw_comparator |= edit.comparator.is_some();
            vs.apply_families(&edit, layout_of).map_err(|e| relocate(e, &mpath, offset))?;
            if let Some(n) = edit.log_number {
                vs.log_number = n;
            }
            if let Some(n) = edit.next_file_number {
                vs.next_file.store(n.0, Ordering::SeqCst);
                saw_next_file = true;
            }
            if let Some(s) = edit.last_sequence {
                vs.last_sequence = s;
            }
            Ok(())
        })?;
        if outcome.torn_tail
            && !tail_is_interrupted_append(
                &file,
                outcome.last_valid_end,
                TailRule::EveryRecordSynced,
            )?
        {
            return Err(Error::corruption(
                &mpath,
                outcome.last_valid_end,
                "MANIFEST record is damaged (complete but fails its checksum)",
            ));
        }
        if !saw_comparator || !saw_next_file {
            return Err(Error::corruption(
                &mpath,
                0,
                "MANIFEST lacks its initial record (comparator and file counter)",
            ));
        }
        let max_file = vs
            .families
            .values()
            .flat_map(|f| f.current.file_numbers())
            .map(|n| n.0)
            .max()
            .unwrap_or(0);
        let next = vs.next_file.load(Ordering::SeqCst).max(max_file + 1).max(manifest_number.0 + 1);
        vs.next_file.store(next, Ordering::SeqCst);
        vs.old_versions.clear();
        // The MANIFEST read (a read-only DB keeps it; an open writes a new one).
        vs.manifest_number = manifest_number;
        Ok(vs)
    }

    /// The current version of family `cf`; `None` for a family that does not exist (dropped).
    pub fn current(&self, cf: u32) -> Option<&Arc<Version>> {
        self.families.get(&cf).map(|f| &f.current)
    }

    /// The live families by id.
    pub fn families(&self) -> &BTreeMap<u32, Family> {
        &self.families
    }

    /// The largest family id ever handed out.
    pub fn max_column_family(&self) -> u32 {
        self.max_column_family
    }

    /// WALs below this hold nothing of family `cf` that is not in its tables: its replay
    /// skips them.
    pub fn family_log_number(&self, cf: u32) -> FileNumber {
        self.families.get(&cf).map_or(self.log_number, |f| f.log_number.max(self.log_number))
    }

    /// The state of every family, for a new MANIFEST.
    pub fn snapshot(&self) -> Vec<FamilySnapshot> {
        self.families
            .iter()
            .map(|(&id, f)| FamilySnapshot {
                id,
                name: f.name.clone(),
                version: f.current.clone(),
                log_number: self.family_log_number(id),
                full_history_ts_low: f.full_history_ts_low.clone(),
            })
            .collect()
    }

    /// Applies `edit`'s family changes (creation, drop, files, family log number) to the
    /// families, replacing the changed family's version. On error nothing changes.
    fn apply_families(
        &mut self,
        edit: &VersionEdit,
        layout_of: &dyn Fn(&str) -> FamilyLayout,
    ) -> Result<()> {
        let cf = edit.column_family;
        if let Some(n) = edit.max_column_family {
            self.max_column_family = self.max_column_family.max(n);
        }
        // The order a record names for its family: on creation, or (`default`) in the first
        // record of a MANIFEST, before any file.
        let recorded = match &edit.comparator {
            None => None,
            Some(c) => {
                let family = match &edit.cf_add {
                    Some(name) => name.as_str(),
                    None => self.families.get(&cf).map_or("?", |f| f.name.as_str()),
                };
                Some(self.orders.find(Some(c)).ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "column family {family:?} keeps its keys in comparator {c:?}'s order, \
                         which the options do not give (Options::set_comparator)"
                    ))
                })?)
            }
        };
        if let Some(name) = &edit.cf_add {
            if cf == 0 || self.families.contains_key(&cf) {
                return Err(Error::corruption(
                    "",
                    0,
                    format!("edit creates column family {cf} ({name:?}), which exists"),
                ));
            }
            if let Some((id, _)) = self.families.iter().find(|(_, f)| f.name == *name) {
                return Err(Error::corruption(
                    "",
                    0,
                    format!("edit creates column family {name:?} as {cf}, but {id} has that name"),
                ));
            }
            let family = Family {
                name: name.clone(),
                current: Arc::new(
                    layout_of(name).empty_version(recorded.clone().unwrap_or_default()),
                ),
                log_number: FileNumber(0),
                full_history_ts_low: None,
            };
            self.families.insert(cf, family);
            self.max_column_family = self.max_column_family.max(cf);
        }
        let Some(family) = self.families.get(&cf) else {
            return Err(Error::corruption(
                "",
                0,
                format!("edit names column family {cf}, which does not exist"),
            ));
        };
        if let (Some(order), None) = (recorded, &edit.cf_add) {
            if family.current.order() != &order {
                if family.current.file_numbers().next().is_some() {
                    return Err(Error::corruption(
                        "",
                        0,
                        format!(
                            "edit changes the comparator of column family {:?} holding files",
                            family.name
                        ),
                    ));
                }
                let levels = family.current.levels.len();
                let paths = family.current.paths().clone();
                if let Some(f) = self.families.get_mut(&cf) {
                    f.current = Arc::new(Version::new(levels, order).with_paths(paths));
                }
            }
        }
        let Some(family) = self.families.get(&cf) else {
            return Err(Error::corruption("", 0, format!("column family {cf} vanished")));
        };
        if edit.cf_drop {
            if cf == 0 {
                return Err(Error::corruption("", 0, "edit drops the default column family"));
            }
            if let Some(old) = self.families.remove(&cf) {
                self.old_versions.push(Arc::downgrade(&old.current));
            }
            return Ok(());
        }
        let version = family.current.apply(edit).map_err(|e| match e {
            Error::InvalidArgument(m) => {
                Error::InvalidArgument(format!("column family {:?}: {m}", family.name))
            }
            other => other,
        })?;
        let log_number = edit.cf_log_number.unwrap_or(family.log_number);
        self.blob_files_seen.extend(edit.blob_files_added.iter().map(|b| b.number));
        if let Some(f) = self.families.get_mut(&cf) {
            let old = std::mem::replace(&mut f.current, Arc::new(version));
            f.log_number = log_number;
            if let Some(low) = &edit.full_history_ts_low {
                f.full_history_ts_low = Some(low.clone());
            }
            self.old_versions.retain(|w| w.strong_count() > 0);
            self.old_versions.push(Arc::downgrade(&old));
        }
        Ok(())
    }

    pub fn last_sequence(&self) -> SeqNo {
        self.last_sequence
    }

    pub fn log_number(&self) -> FileNumber {
        self.log_number
    }

    pub fn manifest_number(&self) -> FileNumber {
        self.manifest_number
    }

    /// Hands out a new file number.
    pub fn new_file_number(&self) -> FileNumber {
        FileNumber(self.next_file.fetch_add(1, Ordering::SeqCst))
    }

    /// Makes sure new file numbers are above `n`: files created after the last MANIFEST edit
    /// (WALs, unfinished tables) carry numbers the MANIFEST never recorded, and reusing one
    /// would overwrite it.
    pub fn mark_file_number_used(&self, n: FileNumber) {
        self.next_file.fetch_max(n.0 + 1, Ordering::SeqCst);
    }

    /// The shared file-number counter.
    pub fn file_counter(&self) -> Arc<AtomicU64> {
        self.next_file.clone()
    }

    /// Starts a new MANIFEST holding a snapshot of the whole state and points CURRENT at it.
    /// The previous MANIFEST becomes obsolete (the caller deletes it).
    pub fn write_new_manifest(&mut self) -> Result<()> {
        let number = self.new_file_number();
        let path = manifest_path(&self.dir, number);
        let mut writer = LogWriter::new(self.fs.create(&path)?);
        for record in self.snapshot_records() {
            writer.add_record(&record)?;
        }
        writer.sync()?;
        set_current(self.fs.as_ref(), &self.dir, number)?;
        self.manifest = Some(writer);
        self.manifest_number = number;
        Ok(())
    }

    /// The first records of a new MANIFEST: the whole state, an edit per family.
    fn snapshot_records(&self) -> Vec<Vec<u8>> {
        snapshot_records(&self.snapshot(), &self.counters())
    }

    /// The persistent counters as of now.
    pub fn counters(&self) -> Counters {
        Counters {
            log_number: self.log_number,
            next_file: FileNumber(self.next_file.load(Ordering::SeqCst)),
            last_sequence: self.last_sequence,
            max_column_family: self.max_column_family,
        }
    }

    /// Whether `name`, a MANIFEST found in `dir` while CURRENT is missing, is provably what an
    /// interrupted creation of a new DB left: its bytes (less trailing zeros) are a prefix of
    /// exactly what creation with the `default` family in `order` writes to that file. Only
    /// such a file may be deleted; anything else was not proven to be the engine's and the
    /// open must refuse.
    pub fn is_interrupted_creation(
        fs: &Arc<dyn FileSystem>,
        dir: &Path,
        number: FileNumber,
        order: &KeyOrder,
    ) -> Result<bool> {
        let data = fs.open(&manifest_path(dir, number))?.read_all()?;
        let end = data.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
        let fresh = VersionSet::new(
            fs.clone(),
            dir,
            &FamilyLayout::levels(1),
            order.clone(),
            KnownOrders::default(),
        );
        fresh.next_file.store(number.0 + 1, Ordering::SeqCst);
        // The same record framed as the log writer frames it, built in memory.
        let mem = crate::env::MemFs::new();
        let scratch = Path::new("/creation");
        mem.create_dir_all(scratch)?;
        let record_path = scratch.join("MANIFEST");
        let mut w = LogWriter::new(mem.create(&record_path)?);
        for record in fresh.snapshot_records() {
            w.add_record(&record)?;
        }
        w.flush()?;
        drop(w);
        let expected = mem.open(&record_path)?.read_all()?;
        Ok(expected.starts_with(&data[..end]))
    }

    /// The current versions and the replaced ones still alive (an iterator, a read, a job
    /// holds them).
    fn live_versions(&mut self) -> Vec<Arc<Version>> {
        self.old_versions.retain(|w| w.strong_count() > 0);
        self.families
            .values()
            .map(|f| f.current.clone())
            .chain(self.old_versions.iter().filter_map(Weak::upgrade))
            .collect()
    }

    /// Table and blob files referenced by the current version or by any replaced version
    /// still alive.
    pub fn live_files(&mut self) -> std::collections::HashSet<FileNumber> {
        let versions = self.live_versions();
        versions.iter().flat_map(|v| v.file_numbers().chain(v.blobs().numbers())).collect()
    }

    /// The blob files of the current versions and of replaced versions still alive.
    pub fn live_blob_files(&mut self) -> std::collections::BTreeSet<FileNumber> {
        self.live_versions().iter().flat_map(|v| v.blobs().numbers()).collect()
    }

    /// Whether some blob file was installed since open and not yet handed out as obsolete:
    /// without one, a purge with no obsolete table has nothing to do.
    pub fn holds_blob_files(&self) -> bool {
        !self.blob_files_seen.is_empty()
    }

    /// Blob files that left every version still alive (`live`, from [`Self::live_files`]):
    /// taken off the list, for the caller to delete.
    pub fn obsolete_blobs(
        &mut self,
        live: &std::collections::HashSet<FileNumber>,
    ) -> Vec<FileNumber> {
        let gone: Vec<FileNumber> =
            self.blob_files_seen.iter().copied().filter(|n| !live.contains(n)).collect();
        for n in &gone {
            self.blob_files_seen.remove(n);
        }
        gone
    }

    /// Every table file referenced by the current version or by any replaced version still
    /// alive, once each.
    pub fn live_tables(&mut self) -> Vec<Arc<TableFile>> {
        self.old_versions.retain(|w| w.strong_count() > 0);
        let old: Vec<Arc<Version>> = self.old_versions.iter().filter_map(Weak::upgrade).collect();
        let mut seen = std::collections::HashSet::new();
        self.families
            .values()
            .map(|f| &f.current)
            .chain(&old)
            .flat_map(|v| v.files().map(|(_, f)| f.clone()).collect::<Vec<_>>())
            .filter(|f| seen.insert(f.number))
            .collect()
    }

    /// Replaced versions still held by readers.
    pub fn live_old_versions(&mut self) -> usize {
        self.old_versions.retain(|w| w.strong_count() > 0);
        self.old_versions.len()
    }

    /// Persists `edit` and installs what it changes: a family's files and log number, a
    /// family created (`cf_add`, of shape `layout`) or dropped. Fills in the counters.
    /// Returns the family's new version (`None` for a drop). On error nothing is installed;
    /// the MANIFEST writer is then unusable and the caller must treat the error as a
    /// background error.
    pub fn log_and_apply(
        &mut self,
        edit: &mut VersionEdit,
        layout: &FamilyLayout,
    ) -> Result<Option<Arc<Version>>> {
        if let Some(n) = edit.log_number {
            debug_assert!(n >= self.log_number);
        }
        if let Some(s) = edit.last_sequence {
            self.last_sequence = self.last_sequence.max(s);
        }
        edit.last_sequence = Some(self.last_sequence);
        if edit.cf_add.is_some() {
            edit.max_column_family = Some(self.max_column_family.max(edit.column_family));
        }
        let before = (self.families.clone(), self.max_column_family, self.log_number);
        let restore = |vs: &mut VersionSet| {
            (vs.families, vs.max_column_family, vs.log_number) = before.clone();
        };
        let layout_of = |_: &str| layout.clone();
        if let Err(e) = self.apply_families(edit, &layout_of) {
            restore(self);
            // An edit the running DB made that would break an invariant: refused before any
            // byte of it reaches the MANIFEST, named by where it would have gone.
            let manifest = manifest_path(&self.dir, self.manifest_number);
            let offset = self.manifest.as_ref().map_or(0, LogWriter::file_size);
            return Err(match e {
                Error::Corruption { reason, .. } => Error::corruption(
                    manifest,
                    offset,
                    format!("version edit refused, nothing written: {reason}"),
                ),
                other => other,
            });
        }
        if let Some(n) = edit.log_number {
            self.log_number = n;
        }
        let roll = self.manifest.as_ref().is_none_or(|m| m.file_size() > MAX_MANIFEST_SIZE);
        if roll {
            // The snapshot includes this edit: it is installed above.
            if let Err(e) = self.write_new_manifest() {
                restore(self);
                return Err(e);
            }
            return Ok(self.current(edit.column_family).cloned());
        }
        edit.next_file_number = Some(FileNumber(self.next_file.load(Ordering::SeqCst)));
        if self.families.len() == 1 && edit.column_family == 0 {
            // With `default` alone its log number is the DB's: the MANIFEST stays readable by
            // builds without families.
            edit.cf_log_number = None;
        }
        let mut buf = Vec::new();
        edit.encode(&mut buf);
        let Some(writer) = self.manifest.as_mut() else {
            restore(self);
            return Err(Error::Background("MANIFEST writer missing".to_string()));
        };
        crate::kill_point!("manifest.append");
        let written = writer.add_record(&buf).and_then(|()| {
            crate::kill_point!("manifest.sync");
            writer.sync()
        });
        if let Err(e) = written {
            restore(self);
            return Err(e);
        }
        Ok(self.current(edit.column_family).cloned())
    }
}

/// The counters a MANIFEST records besides the files.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Counters {
    /// WALs numbered below this hold nothing that is not in a table (0: no WAL is needed).
    pub log_number: FileNumber,
    /// Above every file number in use.
    pub next_file: FileNumber,
    /// Above or at every sequence number in a table.
    pub last_sequence: SeqNo,
    /// The largest column family id ever handed out.
    pub max_column_family: u32,
}

/// A MANIFEST's first records: `default` whole with the comparator and `counters`, then
/// each other family whole, created.
fn snapshot_records(families: &[FamilySnapshot], counters: &Counters) -> Vec<Vec<u8>> {
    let mut out = Vec::with_capacity(families.len());
    let default_order = families
        .iter()
        .find(|f| f.id == 0)
        .map_or(KeyOrder::Bytewise, |f| f.version.order().clone());
    let mut first = VersionEdit {
        comparator: Some(default_order.name().to_string()),
        log_number: Some(counters.log_number),
        next_file_number: Some(counters.next_file),
        last_sequence: Some(counters.last_sequence),
        max_column_family: (counters.max_column_family > 0).then_some(counters.max_column_family),
        ..VersionEdit::default()
    };
    for f in families.iter().filter(|f| f.id == 0) {
        let snap = f.version.snapshot_edit();
        first.new_files = snap.new_files;
        first.blob_files_added = snap.blob_files_added;
        first.blob_garbage = snap.blob_garbage;
        first.full_history_ts_low.clone_from(&f.full_history_ts_low);
        if families.len() > 1 {
            first.cf_log_number = Some(f.log_number);
        }
    }
    let mut buf = Vec::new();
    first.encode(&mut buf);
    out.push(buf);
    for f in families.iter().filter(|f| f.id != 0) {
        let order = f.version.order();
        let snap = f.version.snapshot_edit();
        let edit = VersionEdit {
            column_family: f.id,
            cf_add: Some(f.name.clone()),
            comparator: (!order.is_bytewise()).then(|| order.name().to_string()),
            cf_log_number: Some(f.log_number),
            new_files: snap.new_files,
            blob_files_added: snap.blob_files_added,
            blob_garbage: snap.blob_garbage,
            full_history_ts_low: f.full_history_ts_low.clone(),
            ..VersionEdit::default()
        };
        let mut buf = Vec::new();
        edit.encode(&mut buf);
        out.push(buf);
    }
    out
}

/// The MANIFEST CURRENT names in `dir`: its path, number and open file.
fn open_current_manifest(
    fs: &dyn FileSystem,
    dir: &Path,
) -> Result<(PathBuf, FileNumber, Arc<dyn crate::env::RandomAccessFile>)> {
    let cur_path = current_path(dir);
    let cur = fs.open(&cur_path)?.read_all()?;
    let name = std::str::from_utf8(&cur)
        .ok()
        .and_then(|s| s.strip_suffix('\n'))
        .filter(|s| {
            crate::filename::parse_file_name(s)
                .is_some_and(|k| matches!(k, crate::filename::FileKind::Manifest(_)))
        })
        .ok_or_else(|| Error::corruption(&cur_path, 0, "CURRENT does not name a MANIFEST file"))?;
    let mpath = dir.join(name);
    let Some(crate::filename::FileKind::Manifest(manifest_number)) =
        crate::filename::parse_file_name(name)
    else {
        return Err(Error::corruption(&cur_path, 0, "CURRENT does not name a MANIFEST file"));
    };
    let file = fs.open(&mpath).map_err(|e| match e {
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            Error::corruption(&cur_path, 0, format!("CURRENT names missing {name}"))
        }
        other => other,
    })?;
    Ok((mpath, manifest_number, file))
}

/// The names of the live column families the MANIFEST of the DB in `dir` records, `default`
/// first, then by id: read from the family records alone (no version is built, so no key
/// order is needed).
pub(crate) fn family_names(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<String>> {
    let (mpath, _, file) = open_current_manifest(fs, dir)?;
    let mut names = BTreeMap::from([(0u32, DEFAULT_COLUMN_FAMILY_NAME.to_string())]);
    replay_log(&file, WalRecoveryMode::PointInTime, |offset, record| {
        let edit = VersionEdit::decode(record).map_err(|e| relocate(e, &mpath, offset))?;
        if let Some(name) = edit.cf_add {
            names.insert(edit.column_family, name);
        }
        if edit.cf_drop {
            names.remove(&edit.column_family);
        }
        Ok(())
    })?;
    Ok(names.into_values().collect())
}

/// Writes a DB's MANIFEST-`number` in `dir` holding `families` and `counters`, syncs it, and
/// points CURRENT at it (durably): for a DB made from table files (checkpoints, restored
/// backups, repair). `counters.next_file` must be above `number` and every table's number.
pub(crate) fn write_manifest_for(
    fs: &dyn FileSystem,
    dir: &Path,
    number: FileNumber,
    families: &[FamilySnapshot],
    counters: &Counters,
) -> Result<()> {
    let path = manifest_path(dir, number);
    let mut writer = LogWriter::new(fs.create(&path)?);
    for record in snapshot_records(families, counters) {
        writer.add_record(&record)?;
    }
    writer.sync()?;
    drop(writer);
    set_current(fs, dir, number)
}

/// Points CURRENT at MANIFEST-`number` atomically and durably.
pub(crate) fn set_current(fs: &dyn FileSystem, dir: &Path, number: FileNumber) -> Result<()> {
    let contents = format!("{}\n", manifest_name(number));
    crate::env::install_synced(
        fs,
        &temp_path(dir, number),
        &current_path(dir),
        contents.as_bytes(),
        ["current.rename", "current.sync_dir"],
    )
}

/// Gives a decoder's corruption the MANIFEST path and the record's offset.
fn relocate(e: Error, path: &Path, record_offset: u64) -> Error {
    match e {
        Error::Corruption { offset, reason, .. } => Error::Corruption {
            file: path.to_path_buf(),
            offset: record_offset,
            reason: format!(
                "bad version edit in the record at this offset (byte {offset}): {reason}"
            ),
        },
        other => other.with_file(path),
    }
}
