//! Building a group's snapshot: one engine snapshot, read once for the applied id and
//! membership when the snapshot is made ([`SnapshotSource::build`]), and once per key range
//! into an SST file (`SstFileWriter`) when its files are first needed
//! ([`SnapshotSource::cut`]), so the files and the metadata describe the same point of the log
//! even while entries keep being applied.
//!
//! Why the files wait: Raft makes a snapshot every few thousand entries of a group to purge
//! its log behind it, and a follower needs one only when it is too far behind for the log (or
//! new). The state machine is the engine itself, so the engine snapshot already holds the
//! data; writing every snapshot out would rewrite the group's whole data set every few
//! thousand writes. Held instead, it costs the versions it keeps from compaction's drop until
//! the next snapshot replaces it.

use std::path::PathBuf;
use std::sync::Arc;

use strata::{ReadOptions, SstFileWriter};

use crate::error::{Error, Result};
use crate::log_format::{decode_log_id, decode_stored_membership, meta_key, MetaKind};
use crate::log_store::NodeStorage;
use crate::snapshot::{fresh_dir, sync_dir, SnapshotData, SnapshotFile, SnapshotFiles};
use crate::types::{GroupId, KeyRange, SnapshotMeta, StoredMembership};

/// A point-in-time view of one group, taken cheaply on the state machine's task, its metadata
/// read by [`SnapshotSource::build`] and its files cut by [`SnapshotSource::cut`] elsewhere.
pub struct SnapshotSource {
    node: Arc<NodeStorage>,
    group: GroupId,
    ranges: Vec<KeyRange>,
    snap: strata::Snapshot<'static>,
}

impl SnapshotSource {
    /// Takes the engine snapshot now.
    pub fn new(node: Arc<NodeStorage>, group: GroupId, ranges: Vec<KeyRange>) -> Self {
        let snap = node.db().snapshot();
        SnapshotSource { node, group, ranges, snap }
    }

    /// The group it views.
    pub fn group(&self) -> GroupId {
        self.group
    }

    fn at_snapshot(&self) -> ReadOptions {
        ReadOptions {
            snapshot: Some(self.snap.handle().clone()),
            fill_cache: false,
            ..ReadOptions::default()
        }
    }

    /// The snapshot's metadata, read now, and its data, whose files are cut when first
    /// asked for ([`SnapshotData::files`]). Blocking (two point reads).
    pub fn build(self) -> Result<(SnapshotMeta, SnapshotData)> {
        let g = self.group;
        let db = self.node.db().clone();
        let meta_cf = self.node.meta_cf().clone();
        let read = |kind| {
            db.get_cf_opt(&meta_cf, meta_key(g, kind), &self.at_snapshot())
                .map_err(|e| Error::engine(format!("{g}: read {kind:?} at the snapshot"), e))
        };
        let last_log_id = read(MetaKind::Applied)?
            .map(|v| decode_log_id(&v).map_err(|e| Error::corrupt(g, "applied record", &e)))
            .transpose()?;
        let membership = read(MetaKind::Membership)?
            .map(|v| {
                decode_stored_membership(&v).map_err(|e| Error::corrupt(g, "membership record", &e))
            })
            .transpose()?
            .unwrap_or_else(StoredMembership::default);
        Ok((SnapshotMeta { last_log_id, membership }, SnapshotData::pending(self)))
    }

    /// Writes the files: each key range at the engine snapshot. Blocking.
    pub(crate) fn cut(&self) -> Result<SnapshotFiles> {
        let g = self.group;
        let dir = fresh_dir(self.node.snapshot_dir(), g, "built");
        std::fs::create_dir(&dir)
            .map_err(|e| Error::io(format!("{g}: create a snapshot directory"), &dir, e))?;
        // Until sealed, a failure removes the partial directory.
        let mut guard = RemoveOnDrop(Some(dir.clone()));
        let mut files = Vec::new();
        for (i, range) in self.ranges.iter().enumerate() {
            if let Some(f) = self.write_range(i, range, &dir)? {
                files.push(f);
            }
        }
        sync_dir(&dir)
            .map_err(|e| Error::io(format!("{g}: sync the snapshot directory"), &dir, e))?;
        let sealed = SnapshotFiles::seal(g, dir, files)?;
        guard.0 = None;
        Ok(sealed)
    }

    /// Writes one range's keys at the snapshot into `dir/<i>.sst`; `None` when it is empty.
    fn write_range(
        &self,
        i: usize,
        range: &KeyRange,
        dir: &std::path::Path,
    ) -> Result<Option<SnapshotFile>> {
        let g = self.group;
        let db = self.node.db();
        let cf = db.cf_handle(&range.cf).ok_or_else(|| {
            Error::snapshot(
                g,
                format!("the group's range names column family {} which does not exist", range.cf),
            )
        })?;
        let opts = ReadOptions {
            iterate_lower_bound: Some(range.start.clone()),
            iterate_upper_bound: Some(range.end.clone()),
            ..self.at_snapshot()
        };
        let mut it = db.raw_iterator_cf_opt(&cf, opts);
        it.seek_to_first();
        if it.item().is_none() {
            it.status()
                .map_err(|e| Error::engine(format!("{g}: read range {i} for a snapshot"), e))?;
            return Ok(None);
        }
        let name = format!("{i}.sst");
        let path = dir.join(&name);
        let what = |step: &str| format!("{g}: snapshot file {}: {step}", path.display());
        let mut w = SstFileWriter::create(&strata::Options::default());
        w.open(&path).map_err(|e| Error::engine(what("create"), e))?;
        while let Some((k, v)) = it.item() {
            w.put(k, v).map_err(|e| Error::engine(what("add a key"), e))?;
            it.next();
        }
        it.status().map_err(|e| Error::engine(what("read the range"), e))?;
        w.finish().map_err(|e| Error::engine(what("finish"), e))?;
        let data = std::fs::read(&path).map_err(|e| Error::io(what("read back"), &path, e))?;
        std::fs::File::open(&path)
            .and_then(|f| f.sync_data())
            .map_err(|e| Error::io(what("sync"), &path, e))?;
        Ok(Some(SnapshotFile {
            name,
            cf: range.cf.clone(),
            size: data.len() as u64,
            crc32c: crc32c::crc32c(&data),
        }))
    }
}

/// Removes a directory unless forgotten.
pub(crate) struct RemoveOnDrop(pub(crate) Option<PathBuf>);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}
