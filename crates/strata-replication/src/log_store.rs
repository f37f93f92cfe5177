//! The Raft log of every group on a node, in the node's one Strata `Db`
//! (`log_format.rs` draws the records).
//!
//! [`NodeStorage`] is the node's share: the `Db`, its `raft_log` and `raft_meta` families, the
//! node-wide [`SyncGroup`] and the snapshot directory. [`GroupLog`] is one group's log on it.
//! Its methods are blocking engine calls; the adapter runs them off the Raft core's task.
//!
//! What must hold, and how:
//! - Appends are written without a sync; the caller asks the node's `SyncGroup` for a sync
//!   that began after the write and completes the append only then. One fdatasync so serves
//!   the appends of every group (and the votes) made before it began. Where the application
//!   chose so ([`NodeStorage::sync_appends_when`], strata-server's `appendfsync everysec`),
//!   an append completes once written instead, and the application syncs the WAL on its own
//!   schedule: power loss may then take the newest acknowledged entries, a crash of the
//!   process takes none (they are in the OS's page cache).
//! - A vote is written, then a sync that began after it is awaited before the vote is
//!   reported saved (`docs/contract.md` rule 1 through the shared WAL).
//! - `last_purged` is kept in `raft_meta` and reported even when no entry is left.
//! - Truncation and purge are one range deletion of the group's key range (the purge mark in
//!   the same batch); neither needs a sync: losing one on power loss brings back entries
//!   Raft allows to be there, and the single WAL orders them before any later write.
//! - A read returns consecutive entries or fails naming the group and the missing index.
//! - The newest entries are also kept in memory ([`LogTail`]), changed after the engine
//!   accepted each append, truncation and purge: [`GroupLog::read_tail`] answers the reads
//!   that Raft makes right after an append without the engine.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use strata::{ColumnFamily, Db, ReadOptions, WriteBatch, WriteOptions};

use crate::error::{Error, Result};
use crate::log_format::{
    decode_entry, decode_entry_log_id, decode_log_id, decode_vote, encode_entry, encode_log_id,
    encode_vote, log_key, log_key_index, meta_key, MetaKind, LOG_CF, META_CF,
};
use crate::log_tail::LogTail;
use crate::sync_group::SyncGroup;
use crate::types::{Entry, GroupId, LogId, Vote};

/// The replication families, which an application opening the node's `Db` itself must name
/// with [`family_options`] (else [`NodeStorage::open`] creates them with the engine's
/// defaults).
pub const FAMILIES: [&str; 2] = [LOG_CF, META_CF];

/// The smallest memtable of the Raft log family ([`family_options`]).
pub const LOG_WRITE_BUFFER: usize = 64 << 20;

/// The options of the family `name` on a node whose other families take `base`: `base`, but
/// for the Raft log, whose entries live only until the next snapshot of their group purges
/// them (a few hundred writes): no compression (it would spend CPU on bytes soon deleted), a
/// memtable of at least [`LOG_WRITE_BUFFER`] (every table of the log spans every group's
/// range, so each L0 compaction rewrites all of the level below: fewer, larger tables are
/// compacted less often), and not kept for snapshots (`snapshot_reads` off: the log is only
/// read at its latest state, so the groups' snapshots, each holding an engine snapshot, must
/// not keep purged entries alive into the log's tables). Any other name gets `base`.
pub fn family_options(name: &str, base: &strata::Options) -> strata::Options {
    let mut o = base.clone();
    if name == LOG_CF {
        o.compression = strata::CompressionType::None;
        o.compression_per_level.clear();
        o.bottommost_compression = None;
        o.write_buffer_size = o.write_buffer_size.max(LOG_WRITE_BUFFER);
        o.snapshot_reads = false;
    }
    o
}

/// Opens (creating what is missing) the `Db` at `path` with the replication families and the
/// application's `app_families` (the `default` family is always there), all with `opts`
/// ([`family_options`] for the replication families).
pub fn open_db(
    opts: &strata::Options,
    path: impl AsRef<Path>,
    app_families: &[&str],
) -> Result<Db> {
    let mut opts = opts.clone();
    opts.create_if_missing = true;
    opts.create_missing_column_families = true;
    let families = app_families.iter().copied().chain(FAMILIES);
    let descriptors: Vec<_> = families
        .map(|n| strata::ColumnFamilyDescriptor::new(n, family_options(n, &opts)))
        .collect();
    Db::open_cf_descriptors(&opts, path.as_ref(), descriptors)
        .map_err(|e| Error::engine(format!("open the node's db in {}", path.as_ref().display()), e))
}

/// A node's replication storage: its `Db` with the replication families, the shared syncer
/// and the directory snapshots are built and received in.
pub struct NodeStorage {
    db: Arc<Db>,
    log_cf: Arc<ColumnFamily>,
    meta_cf: Arc<ColumnFamily>,
    syncs: Arc<SyncGroup>,
    snapshot_dir: PathBuf,
    /// Whether an append completes only after a sync (unset: always).
    appends_synced: OnceLock<AppendsSynced>,
}

/// Answers, at each append, whether it completes only after an fdatasync.
type AppendsSynced = Box<dyn Fn() -> bool + Send + Sync>;

impl NodeStorage {
    /// Takes the node's `Db`, creating the `raft_log` and `raft_meta` families if missing (with
    /// [`family_options`] over the engine's defaults: an application names them when it opens
    /// the `Db`, [`FAMILIES`], to give them its own), and
    /// `snapshot_dir` (which must belong to this node alone). Leftover snapshot directories of
    /// an earlier run are removed, except one a snapshot install under way still needs.
    pub fn open(db: Arc<Db>, snapshot_dir: impl AsRef<Path>) -> Result<Arc<NodeStorage>> {
        let family = |name: &'static str| -> Result<Arc<ColumnFamily>> {
            if let Some(cf) = db.cf_handle(name) {
                return Ok(cf);
            }
            db.create_cf_handle(name, &family_options(name, &strata::Options::default()))
                .map_err(|e| Error::engine(format!("create column family {name}"), e))
        };
        let (log_cf, meta_cf) = (family(LOG_CF)?, family(META_CF)?);
        let snapshot_dir = snapshot_dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&snapshot_dir)
            .map_err(|e| Error::io("create the snapshot directory", &snapshot_dir, e))?;
        let node = Arc::new(NodeStorage {
            db,
            log_cf,
            meta_cf,
            syncs: Arc::new(SyncGroup::default()),
            snapshot_dir,
            appends_synced: OnceLock::new(),
        });
        node.remove_stale_snapshots()?;
        Ok(node)
    }

    /// The node's `Db`.
    pub fn db(&self) -> &Arc<Db> {
        &self.db
    }

    /// The `raft_log` family.
    pub fn log_cf(&self) -> &Arc<ColumnFamily> {
        &self.log_cf
    }

    /// The `raft_meta` family.
    pub fn meta_cf(&self) -> &Arc<ColumnFamily> {
        &self.meta_cf
    }

    /// The node-wide syncer.
    pub fn syncs(&self) -> &Arc<SyncGroup> {
        &self.syncs
    }

    /// Makes each append ask `synced` whether it completes only after an fdatasync (`true`,
    /// the default without this call: an acknowledged entry survives power loss on the
    /// replicas that counted toward its commit) or once written to the engine (`false`: the
    /// caller syncs the WAL on its own schedule, and votes are synced all the same). Asked
    /// at every append, so a policy changed at run time takes effect at the next one. Set
    /// once, before the node's groups open; a second call is refused (`false`).
    pub fn sync_appends_when(&self, synced: impl Fn() -> bool + Send + Sync + 'static) -> bool {
        self.appends_synced.set(Box::new(synced)).is_ok()
    }

    /// Whether an append made now completes only after an fdatasync
    /// ([`NodeStorage::sync_appends_when`]).
    pub fn appends_synced(&self) -> bool {
        self.appends_synced.get().is_none_or(|f| f())
    }

    /// Where snapshots are built and received.
    pub fn snapshot_dir(&self) -> &Path {
        &self.snapshot_dir
    }

    /// Stops the syncer thread (after the syncs asked for). The `Db` closes when the last
    /// handle to it is dropped.
    pub fn stop(&self) {
        self.syncs.stop();
    }

    /// The groups that have records in `raft_meta` (a replica was opened here once and not
    /// dropped since).
    pub fn stored_groups(&self) -> Result<Vec<GroupId>> {
        let mut groups = Vec::new();
        let mut it = self.db.raw_iterator_cf(&self.meta_cf);
        it.seek_to_first();
        while let Some(k) = it.key() {
            let Some((group, _)) = crate::log_format::parse_meta_key(k) else {
                let what = format!("a raft_meta key of {} bytes, expected 5", k.len());
                return Err(Error::corrupt(
                    GroupId(0),
                    "raft_meta key",
                    &crate::codec::DecodeError { what, offset: 0 },
                ));
            };
            groups.push(group);
            // Past this group's records.
            it.seek(group_end(group));
        }
        it.status().map_err(|e| Error::engine("list the groups in raft_meta", e))?;
        Ok(groups)
    }

    /// Deletes everything this node stores of `group`: its log, votes, applied id and
    /// membership, and the application's `ranges`, in one synced batch. The replica must be
    /// stopped.
    pub fn drop_group(&self, group: GroupId, ranges: &[crate::types::KeyRange]) -> Result<()> {
        let start = group.0.to_be_bytes();
        let end = group_end(group);
        let mut batch = strata::WriteBatch::new();
        batch.delete_range_cf(&self.log_cf, &start[..], &end[..]);
        batch.delete_range_cf(&self.meta_cf, &start[..], &end[..]);
        for r in ranges {
            let cf = self.db.cf_handle(&r.cf).ok_or_else(|| Error::Raft {
                group,
                reason: format!("drop: column family {} is missing", r.cf),
            })?;
            batch.delete_range_cf(&cf, &r.start, &r.end);
        }
        let wo = strata::WriteOptions { sync: true, ..strata::WriteOptions::default() };
        self.db.write_opt(batch, &wo).map_err(|e| Error::engine(format!("{group}: drop"), e))
    }

    /// Reads a `raft_meta` record.
    pub(crate) fn get_meta(&self, group: GroupId, kind: MetaKind) -> Result<Option<Vec<u8>>> {
        self.db
            .get_cf(&self.meta_cf, meta_key(group, kind))
            .map_err(|e| Error::engine(format!("{group}: read {kind:?} record"), e))
    }

    /// Removes snapshot directories left by an earlier run, keeping the ones named by an
    /// install record (`state_machine.rs` finishes those installs when the group opens).
    fn remove_stale_snapshots(&self) -> Result<()> {
        let mut keep = Vec::new();
        let mut it = self.db.raw_iterator_cf(&self.meta_cf);
        it.seek_to_first();
        while let Some((k, v)) = it.item() {
            if let Some((group, kind)) = crate::log_format::parse_meta_key(k) {
                if kind == MetaKind::Installing as u8 {
                    let (_, dir) = crate::log_format::decode_installing(v)
                        .map_err(|e| Error::corrupt(group, "install record", &e))?;
                    keep.push(PathBuf::from(dir));
                }
            }
            it.next();
        }
        it.status().map_err(|e| Error::engine("scan raft_meta for installs under way", e))?;
        let entries = std::fs::read_dir(&self.snapshot_dir)
            .map_err(|e| Error::io("list the snapshot directory", &self.snapshot_dir, e))?;
        for entry in entries {
            let path = entry.map_err(|e| Error::io("list", &self.snapshot_dir, e))?.path();
            if !keep.contains(&path) {
                let r = if path.is_dir() {
                    std::fs::remove_dir_all(&path)
                } else {
                    std::fs::remove_file(&path)
                };
                r.map_err(|e| Error::io("remove a stale snapshot", &path, e))?;
            }
        }
        Ok(())
    }
}

/// A key after every key of `group` in both families (their keys are the group's 4 bytes,
/// then at most 8 more).
fn group_end(group: GroupId) -> [u8; 13] {
    let mut k = [0xFF; 13];
    k[..4].copy_from_slice(&group.0.to_be_bytes());
    k
}

/// What a group's log remembers between calls (kept equal to what is stored).
#[derive(Clone, Copy, Debug, Default)]
struct LogMemo {
    /// The last vote made durable.
    vote: Option<Vote>,
    /// The last purged entry.
    purged: Option<LogId>,
    /// The last entry present, or `purged` when none is.
    last: Option<LogId>,
}

/// One group's Raft log on a node. Cheap to clone; clones share the remembered state.
#[derive(Clone)]
pub struct GroupLog {
    node: Arc<NodeStorage>,
    group: GroupId,
    memo: Arc<Mutex<LogMemo>>,
    tail: Arc<Mutex<LogTail>>,
}

/// The two ends of a group's log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogState {
    /// The last purged entry (kept after every entry is gone).
    pub last_purged: Option<LogId>,
    /// The last entry present, or `last_purged` when none is.
    pub last: Option<LogId>,
}

impl GroupLog {
    /// Opens `group`'s log: reads its vote, purge mark and last entry.
    pub fn open(node: Arc<NodeStorage>, group: GroupId) -> Result<GroupLog> {
        let vote = node
            .get_meta(group, MetaKind::Vote)?
            .map(|v| decode_vote(&v).map_err(|e| Error::corrupt(group, "vote record", &e)))
            .transpose()?;
        let purged = node
            .get_meta(group, MetaKind::Purged)?
            .map(|v| decode_log_id(&v).map_err(|e| Error::corrupt(group, "purge record", &e)))
            .transpose()?;
        let log = GroupLog {
            node,
            group,
            memo: Arc::new(Mutex::new(LogMemo::default())),
            tail: Arc::new(Mutex::new(LogTail::default())),
        };
        let last_entry = log.last_entry_id()?;
        *log.memo.lock() = LogMemo { vote, purged, last: last_entry.max(purged) };
        Ok(log)
    }

    /// The group.
    pub fn group(&self) -> GroupId {
        self.group
    }

    /// The node storage the log lives on.
    pub fn node(&self) -> &Arc<NodeStorage> {
        &self.node
    }

    /// The log's ends.
    pub fn state(&self) -> LogState {
        let m = self.memo.lock();
        LogState { last_purged: m.purged, last: m.last }
    }

    /// The last vote made durable.
    pub fn vote(&self) -> Option<Vote> {
        self.memo.lock().vote
    }

    fn read_opts(&self, start: u64, end: u64) -> ReadOptions {
        ReadOptions {
            iterate_lower_bound: Some(log_key(self.group, start).to_vec()),
            iterate_upper_bound: Some(log_key(self.group, end).to_vec()),
            ..ReadOptions::default()
        }
    }

    /// The id of the last entry stored, read from the engine.
    fn last_entry_id(&self) -> Result<Option<LogId>> {
        let g = self.group;
        let mut it =
            self.node.db.raw_iterator_cf_opt(&self.node.log_cf, self.read_opts(0, u64::MAX));
        it.seek_to_last();
        let found = match it.item() {
            None => None,
            Some((k, v)) => {
                let index = log_key_index(g, k).map_err(|e| Error::corrupt(g, "log key", &e))?;
                let id = decode_entry_log_id(index, v)
                    .map_err(|e| Error::corrupt(g, format!("log entry at index {index}"), &e))?;
                Some(id)
            }
        };
        it.status().map_err(|e| Error::engine(format!("{g}: find the last log entry"), e))?;
        Ok(found)
    }

    /// The entries with index in `[start, end)` that the log holds, consecutive and in order;
    /// with `max_bytes`, it stops after the entry that reaches that many value bytes (always
    /// returning at least one when any is there). Entries missing at the start (purged) or at
    /// the end (not written) are left out; a hole in between is an error naming the index.
    pub fn read(&self, start: u64, end: u64, max_bytes: Option<usize>) -> Result<Vec<Entry>> {
        let g = self.group;
        if start >= end {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        let mut bytes = 0usize;
        let mut it =
            self.node.db.raw_iterator_cf_opt(&self.node.log_cf, self.read_opts(start, end));
        it.seek_to_first();
        while let Some((k, v)) = it.item() {
            let index = log_key_index(g, k).map_err(|e| Error::corrupt(g, "log key", &e))?;
            if let Some(prev) = out.last().map(|e: &Entry| e.log_id.index) {
                if index != prev + 1 {
                    return Err(Error::LogInvariant {
                        group: g,
                        reason: format!("entry {} is missing (next present is {index})", prev + 1),
                    });
                }
            }
            let entry = decode_entry(index, v)
                .map_err(|e| Error::corrupt(g, format!("log entry at index {index}"), &e))?;
            bytes += v.len();
            out.push(entry);
            if max_bytes.is_some_and(|m| bytes >= m) {
                break;
            }
            it.next();
        }
        it.status()
            .map_err(|e| Error::engine(format!("{g}: read log entries {start}..{end}"), e))?;
        Ok(out)
    }

    /// What [`GroupLog::read`] would return, when the in-memory tail holds it (no engine
    /// call: safe on any thread); `None` sends the caller to [`GroupLog::read`].
    pub fn read_tail(&self, start: u64, end: u64, max_bytes: Option<usize>) -> Option<Vec<Entry>> {
        self.tail.lock().read(start, end, max_bytes)
    }

    /// Writes `entries` (consecutive, following the last entry or replacing a truncated
    /// tail) without a sync; they are readable when this returns. The caller makes them
    /// durable through the node's syncer.
    pub fn write_entries(&self, entries: &[Entry]) -> Result<()> {
        let g = self.group;
        let (Some(first), Some(last)) = (entries.first(), entries.last()) else {
            return Ok(());
        };
        for w in entries.windows(2) {
            if w[1].log_id.index != w[0].log_id.index + 1 {
                return Err(Error::LogInvariant {
                    group: g,
                    reason: format!(
                        "appended entries are not consecutive: {} then {}",
                        w[0].log_id, w[1].log_id
                    ),
                });
            }
        }
        let mut batch = WriteBatch::new();
        let mut value = Vec::new();
        for e in entries {
            value.clear();
            encode_entry(e, &mut value);
            batch.put_cf(&self.node.log_cf, log_key(g, e.log_id.index), &value);
        }
        let what = || format!("{g}: append entries {}..={}", first.log_id.index, last.log_id.index);
        self.node
            .db
            .write_opt(batch, &WriteOptions::default())
            .map_err(|e| Error::engine(what(), e))?;
        self.memo.lock().last = Some(last.log_id);
        self.tail.lock().appended(entries);
        Ok(())
    }

    /// Deletes every entry after `after` (all of them for `None`). Not synced (see the
    /// module doc).
    pub fn truncate_after(&self, after: Option<LogId>) -> Result<()> {
        let g = self.group;
        let from = after.map_or(0, |a| a.index + 1);
        self.node
            .db
            .delete_range_cf(&self.node.log_cf, log_key(g, from), log_key(g, u64::MAX))
            .map_err(|e| Error::engine(format!("{g}: truncate the log from index {from}"), e))?;
        // Truncating past the end leaves the log as it is; never below the purge mark.
        self.tail.lock().truncated_after(after);
        let mut m = self.memo.lock();
        if after < m.last {
            m.last = after.max(m.purged);
        }
        Ok(())
    }

    /// Deletes every entry up to and including `upto` and records it as the last purged,
    /// in one batch. Not synced (see the module doc).
    pub fn purge(&self, upto: LogId) -> Result<()> {
        let g = self.group;
        let mut batch = WriteBatch::new();
        batch.put_cf(&self.node.meta_cf, meta_key(g, MetaKind::Purged), encode_log_id(&upto));
        batch.delete_range_cf(&self.node.log_cf, log_key(g, 0), log_key(g, upto.index + 1));
        self.node
            .db
            .write_opt(batch, &WriteOptions::default())
            .map_err(|e| Error::engine(format!("{g}: purge the log up to {upto}"), e))?;
        self.tail.lock().purged(upto);
        let mut m = self.memo.lock();
        m.purged = m.purged.max(Some(upto));
        if m.last < m.purged {
            m.last = m.purged;
        }
        Ok(())
    }

    /// Writes `vote` without a sync. The caller makes it durable through the node's syncer
    /// and then calls [`GroupLog::vote_durable`].
    pub fn write_vote(&self, vote: &Vote) -> Result<()> {
        let g = self.group;
        self.node
            .db
            .put_cf_opt(
                &self.node.meta_cf,
                meta_key(g, MetaKind::Vote),
                encode_vote(vote),
                &WriteOptions::default(),
            )
            .map_err(|e| Error::engine(format!("{g}: save the vote of term {}", vote.term), e))
    }

    /// Records that `vote` is on the device: it is what [`GroupLog::vote`] answers from now.
    pub fn vote_durable(&self, vote: Vote) {
        self.memo.lock().vote = Some(vote);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::types::Payload;

    pub(crate) fn node_in(dir: &Path) -> Arc<NodeStorage> {
        let db = Arc::new(open_db(&strata::Options::default(), dir.join("db"), &[]).unwrap());
        NodeStorage::open(db, dir.join("snapshots")).unwrap()
    }

    fn entry(term: u64, index: u64) -> Entry {
        Entry {
            log_id: LogId { term, leader: 1, index },
            payload: Payload::Normal(vec![index as u8; 3]),
        }
    }

    /// The Raft log's tables are written uncompressed from a memtable of at least 64 MiB (its
    /// entries are soon purged), every other family as the base options say: compressible
    /// entries flushed take their whole size in `raft_log` and a fraction of it in `raft_meta`.
    #[test]
    fn the_raft_log_family_is_not_compressed_and_the_others_keep_the_base_options() {
        let base = strata::Options::default();
        assert_eq!(family_options(LOG_CF, &base).compression, strata::CompressionType::None);
        let small = strata::Options { write_buffer_size: 1 << 20, ..base.clone() };
        assert_eq!(family_options(LOG_CF, &small).write_buffer_size, LOG_WRITE_BUFFER);
        assert_eq!(family_options(META_CF, &small).write_buffer_size, 1 << 20);
        let large = strata::Options { write_buffer_size: 256 << 20, ..base.clone() };
        assert_eq!(family_options(LOG_CF, &large).write_buffer_size, 256 << 20);
        assert_eq!(family_options(META_CF, &base).compression, base.compression);
        assert_eq!(family_options("data", &base).compression, base.compression);
        assert_ne!(base.compression, strata::CompressionType::None, "the test needs a codec");
        let dir = tempfile::tempdir().unwrap();
        let node = node_in(dir.path());
        let log = GroupLog::open(node.clone(), GroupId(1)).unwrap();
        let big = |i: u64| Entry {
            log_id: LogId { term: 1, leader: 1, index: i },
            payload: Payload::Normal(vec![b'x'; 64 << 10]),
        };
        log.write_entries(&(1..=16).map(big).collect::<Vec<_>>()).unwrap();
        for i in 0..16u32 {
            node.db().put_cf(node.meta_cf(), i.to_be_bytes(), vec![b'y'; 64 << 10]).unwrap();
        }
        let size = |cf: &Arc<ColumnFamily>| -> u64 {
            node.db().flush_cf(cf).unwrap();
            let v = node.db().property_value_cf(cf, "rocksdb.total-sst-files-size").unwrap();
            v.unwrap().parse().unwrap()
        };
        let written = 16 * (64 << 10);
        assert!(size(node.log_cf()) >= written, "raft_log tables hold the entries as they are");
        assert!(size(node.meta_cf()) < written / 4, "raft_meta tables are compressed");
        node.stop();
    }

    /// Regression: each group's snapshot holds an engine snapshot for as long as it is the
    /// group's latest, and every entry it saw alive was then flushed into the log's tables
    /// after its purge, as snapshot after snapshot of the node's groups came between the
    /// entries' writes and their purges. The log's family is not kept for snapshots.
    #[test]
    fn entries_purged_before_a_flush_reach_no_table_whatever_snapshots_are_held() {
        let dir = tempfile::tempdir().unwrap();
        let node = node_in(dir.path());
        let log = GroupLog::open(node.clone(), GroupId(1)).unwrap();
        log.write_entries(&(1..=100).map(|i| entry(1, i)).collect::<Vec<_>>()).unwrap();
        let held = node.db().snapshot();
        log.purge(LogId { term: 1, leader: 1, index: 90 }).unwrap();
        node.db().flush_cf(node.log_cf()).unwrap();
        let in_tables: u64 = node
            .db()
            .live_files_metadata()
            .iter()
            .filter(|f| f.column_family_name == LOG_CF)
            .map(|f| f.num_entries)
            .sum();
        assert_eq!(in_tables, 10, "only the entries after the purge are flushed");
        assert_eq!(log.read(0, 200, None).unwrap().len(), 10);
        drop(held);
        node.stop();
    }

    #[test]
    fn a_dropped_group_leaves_nothing_and_its_neighbours_everything() {
        let dir = tempfile::tempdir().unwrap();
        let node = node_in(dir.path());
        let data = node.db().create_cf_handle("data", &strata::Options::default()).unwrap();
        // The last group id too: its key range ends at the end of the key space.
        let groups = [GroupId(1), GroupId(2), GroupId(u32::MAX)];
        for g in groups {
            let log = GroupLog::open(node.clone(), g).unwrap();
            log.write_entries(&(1..=5).map(|i| entry(1, i)).collect::<Vec<_>>()).unwrap();
            log.write_vote(&Vote { term: 1, node: 1, committed: false }).unwrap();
            node.db().put_cf(&data, [g.0.to_be_bytes().as_slice(), b"k"].concat(), b"v").unwrap();
        }
        assert_eq!(node.stored_groups().unwrap(), groups);
        let range = |g: GroupId| crate::types::KeyRange {
            cf: "data".into(),
            start: g.0.to_be_bytes().to_vec(),
            end: [g.0.to_be_bytes().as_slice(), &[0xFF]].concat(),
        };
        for g in [GroupId(1), GroupId(u32::MAX)] {
            node.drop_group(g, &[range(g)]).unwrap();
        }
        assert_eq!(node.stored_groups().unwrap(), [GroupId(2)]);
        let left: Vec<Vec<u8>> = {
            let mut it = node.db().raw_iterator_cf(&data);
            it.seek_to_first();
            let mut keys = Vec::new();
            while let Some(k) = it.key() {
                keys.push(k.to_vec());
                it.next();
            }
            keys
        };
        assert_eq!(left, [[2u32.to_be_bytes().as_slice(), b"k"].concat()]);
        let reopened = GroupLog::open(node.clone(), GroupId(1)).unwrap();
        assert!(reopened.read(0, 100, None).unwrap().is_empty());
        assert_eq!(reopened.vote(), None);
        let kept = GroupLog::open(node.clone(), GroupId(2)).unwrap();
        assert_eq!(kept.read(0, 100, None).unwrap().len(), 5);
        // A missing family is named.
        let gone = crate::types::KeyRange { cf: "nope".into(), start: vec![], end: vec![1] };
        assert!(node.drop_group(GroupId(2), &[gone]).unwrap_err().to_string().contains("nope"));
        node.stop();
    }

    #[test]
    fn groups_keep_separate_logs_and_purge_is_reported_with_an_empty_log() {
        let dir = tempfile::tempdir().unwrap();
        let node = node_in(dir.path());
        let a = GroupLog::open(node.clone(), GroupId(1)).unwrap();
        let b = GroupLog::open(node.clone(), GroupId(2)).unwrap();
        a.write_entries(&(1..=10).map(|i| entry(1, i)).collect::<Vec<_>>()).unwrap();
        b.write_entries(&(1..=3).map(|i| entry(2, i)).collect::<Vec<_>>()).unwrap();
        assert_eq!(a.read(0, 100, None).unwrap().len(), 10);
        assert_eq!(
            b.read(2, 100, None).unwrap().iter().map(|e| e.log_id.index).collect::<Vec<_>>(),
            [2, 3]
        );
        assert_eq!(a.read(1, 100, Some(1)).unwrap().len(), 1, "a byte budget still returns one");

        let upto = LogId { term: 1, leader: 1, index: 10 };
        a.purge(upto).unwrap();
        assert!(a.read(0, 100, None).unwrap().is_empty());
        assert_eq!(a.state(), LogState { last_purged: Some(upto), last: Some(upto) });
        assert_eq!(b.read(0, 100, None).unwrap().len(), 3, "the other group is untouched");

        // Reopened: the purge mark is still reported with no entry left.
        drop((a, b));
        node.stop();
        drop(node);
        let node = node_in(dir.path());
        let a = GroupLog::open(node.clone(), GroupId(1)).unwrap();
        assert_eq!(a.state(), LogState { last_purged: Some(upto), last: Some(upto) });
        let b = GroupLog::open(node, GroupId(2)).unwrap();
        assert_eq!(b.state().last.map(|l| l.index), Some(3));
    }

    #[test]
    fn truncate_keeps_the_prefix_and_a_purge_beyond_the_last_entry_empties_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let log = GroupLog::open(node_in(dir.path()), GroupId(7)).unwrap();
        log.write_entries(&(0..=9).map(|i| entry(1, i)).collect::<Vec<_>>()).unwrap();
        log.truncate_after(Some(LogId { term: 1, leader: 1, index: 4 })).unwrap();
        assert_eq!(log.state().last.map(|l| l.index), Some(4));
        assert_eq!(log.read(0, 100, None).unwrap().len(), 5);
        log.write_entries(&(5..=6).map(|i| entry(2, i)).collect::<Vec<_>>()).unwrap();
        assert_eq!(log.read(5, 7, None).unwrap()[0].log_id.term, 2);
        let beyond = LogId { term: 3, leader: 2, index: 20 };
        log.purge(beyond).unwrap();
        assert_eq!(log.state(), LogState { last_purged: Some(beyond), last: Some(beyond) });
        log.truncate_after(None).unwrap();
        assert_eq!(log.state().last, Some(beyond), "never below the purge mark");
        log.write_entries(&[entry(3, 21)]).unwrap();
        log.truncate_after(Some(LogId { term: 3, leader: 1, index: 30 })).unwrap();
        assert_eq!(
            log.state().last.map(|l| l.index),
            Some(21),
            "truncating past the end changes nothing"
        );
    }

    #[test]
    fn a_hole_and_a_corrupt_record_are_errors_naming_group_and_index() {
        let dir = tempfile::tempdir().unwrap();
        let node = node_in(dir.path());
        let log = GroupLog::open(node.clone(), GroupId(3)).unwrap();
        log.write_entries(&(1..=5).map(|i| entry(1, i)).collect::<Vec<_>>()).unwrap();
        node.db().delete_cf(node.log_cf(), log_key(GroupId(3), 3)).unwrap();
        let e = log.read(1, 6, None).unwrap_err().to_string();
        assert!(e.contains("group 3") && e.contains("entry 3 is missing"), "{e}");
        node.db().put_cf(node.log_cf(), log_key(GroupId(3), 3), [1u8, 2, 3]).unwrap();
        let e = log.read(1, 6, None).unwrap_err().to_string();
        assert!(e.contains("group 3: corrupt log entry at index 3"), "{e}");
        let e = log.write_entries(&[entry(1, 6), entry(1, 8)]).unwrap_err().to_string();
        assert!(e.contains("not consecutive"), "{e}");
    }

    #[test]
    fn a_synced_vote_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let node = node_in(dir.path());
        let log = GroupLog::open(node.clone(), GroupId(1)).unwrap();
        let vote = Vote { term: 5, node: 2, committed: false };
        log.write_vote(&vote).unwrap();
        let need = node.syncs().request(node.db());
        node.syncs().wait_blocking(need).unwrap();
        log.vote_durable(vote);
        assert_eq!(log.vote(), Some(vote));
        drop(log);
        node.stop();
        drop(node);
        let log = GroupLog::open(node_in(dir.path()), GroupId(1)).unwrap();
        assert_eq!(log.vote(), Some(vote));
    }
}
