//! A group's state machine: the application's data in the node's `Db`, changed by applying
//! committed entries through the application's [`Apply`], and replaced by installing a
//! snapshot.
//!
//! What must hold, and how:
//! - Each entry is applied in one `WriteBatch` holding its data changes, the applied log id
//!   and (for a membership entry) the membership, written without a sync: a crash keeps the
//!   three together or loses them together. The log is the durable record: the WAL is one
//!   stream, so a batch that survives a power loss has every log append before it, and after
//!   a restart Raft re-applies from the applied id read back here.
//! - Entries are applied in index order, each once: an entry at or before the applied one is
//!   an error, never a second application.
//! - A snapshot older than (or equal to) what is applied is never installed.
//! - An install is crash-safe: (1) one synced batch records the install under way and deletes
//!   the group's ranges, (2) the files are ingested, (3) one synced batch records the applied
//!   id and membership and removes the record. An open that finds the record redoes (1)-(3)
//!   from the files it names, which are kept until then.
//! - Once fenced ([`GroupState::fence`], the replica being removed from the node), nothing
//!   is applied or installed: the group's records are about to be deleted, and a write after
//!   that would leave an applied id without the log that led to it.

use std::sync::Arc;

use strata::{Db, IngestExternalFileOptions, WriteBatch, WriteOptions};

use crate::error::{Error, Result};
use crate::log_format::{
    decode_installing, decode_log_id, decode_stored_membership, encode_installing, encode_log_id,
    encode_stored_membership, meta_key, MetaKind,
};
use crate::log_store::NodeStorage;
use crate::snapshot::build::SnapshotSource;
use crate::snapshot::{SnapshotData, SnapshotFiles};
use crate::types::{
    Entry, GroupId, KeyRange, LogId, Payload, Reply, SnapshotMeta, StoredMembership,
};

/// What the application supplies: how a command changes data, and which keys a group owns.
///
/// `apply` must be deterministic: given the same data and command it adds the same writes on
/// every replica (commands that depend on time or chance carry the leader's decision in the
/// command). Its reads see every earlier entry of the group applied.
pub trait Apply: Send + Sync + 'static {
    /// Executes the committed `command` of `group` at log `index`, reading through `db` as it
    /// needs and adding its writes to `batch`; returns the reply for the writer. An `Err` is
    /// a failure to apply (the group's state machine stops), not a command's error reply.
    fn apply(
        &self,
        db: &Db,
        group: GroupId,
        index: u64,
        command: &[u8],
        batch: &mut WriteBatch,
    ) -> Result<Vec<u8>, String>;

    /// The key ranges `group` owns: disjoint from every other group's and from the
    /// replication families. A snapshot copies exactly these, an install replaces them.
    fn ranges(&self, group: GroupId) -> Vec<KeyRange>;

    /// Called after each entry's batch (what `apply` added, and the applied id) was written,
    /// or failed to be (`written`), on the thread that called `apply`: an application that
    /// caches what it reads settles its caches here. Does nothing by default.
    fn after_write(&self, group: GroupId, written: bool) {
        let _ = (group, written);
    }

    /// Called after a snapshot replaced `group`'s data (also when an open finishes an
    /// install a crash interrupted): what the application cached of the group is stale.
    /// Does nothing by default.
    fn installed(&self, group: GroupId) {
        let _ = group;
    }

    /// Called after this node's replica of `group` was removed and its data deleted
    /// (`RaftNode::remove_group`): what the application cached of the group is stale. Does
    /// nothing by default.
    fn removed(&self, group: GroupId) {
        let _ = group;
    }
}

/// One group's state machine on a node. Blocking methods; the adapter runs them off the
/// Raft core's task.
pub struct GroupState {
    node: Arc<NodeStorage>,
    group: GroupId,
    app: Arc<dyn Apply>,
    applied: Option<LogId>,
    membership: StoredMembership,
    /// The last snapshot built or installed, kept for sending.
    current: Option<(SnapshotMeta, SnapshotData)>,
    /// Set when the replica is removed from this node ([`GroupState::fence`]).
    fenced: bool,
}

impl GroupState {
    /// Opens `group`'s state machine: finishes an install a crash interrupted, then reads the
    /// applied id and membership.
    pub fn open(node: Arc<NodeStorage>, group: GroupId, app: Arc<dyn Apply>) -> Result<Self> {
        let mut st = GroupState {
            node,
            group,
            app,
            applied: None,
            membership: StoredMembership::default(),
            current: None,
            fenced: false,
        };
        if let Some(v) = st.node.get_meta(group, MetaKind::Installing)? {
            let (meta, dir) =
                decode_installing(&v).map_err(|e| Error::corrupt(group, "install record", &e))?;
            let files = SnapshotFiles::load(group, std::path::Path::new(&dir))?;
            st.install_steps(&meta, &files)?;
            st.current = Some((meta, SnapshotData::of_files(group, files)));
        }
        st.applied = st
            .node
            .get_meta(group, MetaKind::Applied)?
            .map(|v| decode_log_id(&v).map_err(|e| Error::corrupt(group, "applied record", &e)))
            .transpose()?;
        st.membership = st
            .node
            .get_meta(group, MetaKind::Membership)?
            .map(|v| {
                decode_stored_membership(&v)
                    .map_err(|e| Error::corrupt(group, "membership record", &e))
            })
            .transpose()?
            .unwrap_or_default();
        Ok(st)
    }

    /// The group.
    pub fn group(&self) -> GroupId {
        self.group
    }

    /// Makes every later [`GroupState::apply`] and [`GroupState::install`] fail with
    /// [`Error::NoSuchGroup`], writing nothing, and lets go of the snapshot kept for sending.
    /// The replica's removal from this node calls it once Raft has stopped and before the
    /// group's records are deleted: Raft's state machine task outlives the stop and runs the
    /// applies and installs already queued to it, which would write the group's applied id,
    /// membership and data again after the deletion, and a replica of the group opened here
    /// later would start from them without the log they came from. Taken with the state's
    /// lock held, so an apply or install under way ends first. Building a snapshot is not
    /// fenced: it writes nothing to the engine.
    pub fn fence(&mut self) {
        self.fenced = true;
        self.current = None;
    }

    fn unless_fenced(&self) -> Result<()> {
        if self.fenced {
            return Err(Error::NoSuchGroup(self.group));
        }
        Ok(())
    }

    /// The last applied entry and the membership in force.
    pub fn applied(&self) -> (Option<LogId>, StoredMembership) {
        (self.applied, self.membership.clone())
    }

    /// The engine this state machine applies to.
    pub fn db(&self) -> &Arc<Db> {
        self.node.db()
    }

    /// Applies committed entries in order; returns one reply per entry (empty for blank and
    /// membership entries). Fails, applying nothing, once fenced.
    pub fn apply(&mut self, entries: &[Entry]) -> Result<Vec<Reply>> {
        self.unless_fenced()?;
        let g = self.group;
        let db = self.node.db().clone();
        let meta_cf = self.node.meta_cf().clone();
        let mut replies = Vec::with_capacity(entries.len());
        for e in entries {
            let index = e.log_id.index;
            if let Some(a) = self.applied {
                if index <= a.index {
                    return Err(Error::LogInvariant {
                        group: g,
                        reason: format!("entry {} is at or before the applied entry {a}", e.log_id),
                    });
                }
            }
            let mut batch = WriteBatch::new();
            let mut membership = None;
            let reply = match &e.payload {
                Payload::Blank => Vec::new(),
                Payload::Normal(cmd) => self
                    .app
                    .apply(&db, g, index, cmd, &mut batch)
                    .map_err(|reason| Error::Apply { group: g, index, reason })?,
                Payload::Membership(m) => {
                    let sm = StoredMembership { log_id: Some(e.log_id), membership: m.clone() };
                    batch.put_cf(
                        &meta_cf,
                        meta_key(g, MetaKind::Membership),
                        encode_stored_membership(&sm),
                    );
                    membership = Some(sm);
                    Vec::new()
                }
            };
            batch.put_cf(&meta_cf, meta_key(g, MetaKind::Applied), encode_log_id(&e.log_id));
            let written = db.write_opt(batch, &WriteOptions::default());
            self.app.after_write(g, written.is_ok());
            written.map_err(|err| {
                Error::engine(format!("{g}: apply the entry at index {index}"), err)
            })?;
            self.applied = Some(e.log_id);
            if let Some(m) = membership {
                self.membership = m;
            }
            replies.push(Reply(reply));
        }
        Ok(replies)
    }

    /// A point-in-time view of the group for a snapshot (cheap; build it elsewhere).
    pub fn snapshot_source(&self) -> SnapshotSource {
        SnapshotSource::new(self.node.clone(), self.group, self.app.ranges(self.group))
    }

    /// The last snapshot built or installed.
    pub fn current_snapshot(&self) -> Option<(SnapshotMeta, SnapshotData)> {
        self.current.clone()
    }

    /// Records a snapshot just built as the one to send (unless a newer one is kept).
    pub fn set_current_snapshot(&mut self, meta: SnapshotMeta, data: SnapshotData) {
        if self.current.as_ref().is_none_or(|(m, _)| m.last_log_id <= meta.last_log_id) {
            self.current = Some((meta, data));
        }
    }

    /// Replaces the group's data by the snapshot's; returns false (and changes nothing) when
    /// the snapshot is not newer than what is applied. Fails, changing nothing, once fenced.
    pub fn install(&mut self, meta: &SnapshotMeta, data: SnapshotData) -> Result<bool> {
        self.unless_fenced()?;
        if meta.last_log_id <= self.applied {
            return Ok(false);
        }
        self.install_steps(meta, &data.files()?)?;
        self.node.db().log_info(&format!(
            "Raft {}: installed a snapshot up to {} (was applied up to {})",
            self.group,
            meta.last_log_id.map_or("-".to_string(), |l| l.to_string()),
            self.applied.map_or("-".to_string(), |l| l.to_string()),
        ));
        self.applied = meta.last_log_id;
        self.membership = meta.membership.clone();
        self.current = Some((meta.clone(), data));
        Ok(true)
    }

    /// Steps (1)-(3) of an install (see the module doc); redone as a whole after a crash.
    fn install_steps(&mut self, meta: &SnapshotMeta, files: &SnapshotFiles) -> Result<()> {
        let g = self.group;
        let db = self.node.db().clone();
        let meta_cf = self.node.meta_cf().clone();
        let synced = WriteOptions { sync: true, ..WriteOptions::default() };
        let dir = files.path().to_str().ok_or_else(|| {
            Error::snapshot(
                g,
                format!("snapshot directory {} is not UTF-8", files.path().display()),
            )
        })?;
        let ranges = self.app.ranges(g);
        let handle = |name: &str| {
            db.cf_handle(name)
                .ok_or_else(|| Error::snapshot(g, format!("column family {name} does not exist")))
        };

        let mut begin = WriteBatch::new();
        begin.put_cf(&meta_cf, meta_key(g, MetaKind::Installing), encode_installing(meta, dir));
        for r in &ranges {
            begin.delete_range_cf(&handle(&r.cf)?, r.start.as_slice(), r.end.as_slice());
        }
        db.write_opt(begin, &synced).map_err(|e| {
            Error::engine(
                format!("{g}: begin installing the snapshot at {:?}", meta.last_log_id),
                e,
            )
        })?;

        let mut cfs: Vec<&str> = files.files().iter().map(|f| f.cf.as_str()).collect();
        cfs.sort_unstable();
        cfs.dedup();
        for cf in cfs {
            let paths: Vec<_> = files
                .files()
                .iter()
                .filter(|f| f.cf == cf)
                .map(|f| files.path().join(&f.name))
                .collect();
            db.ingest_external_file_cf_opts(
                &handle(cf)?,
                &IngestExternalFileOptions::default(),
                &paths,
            )
            .map_err(|e| {
                Error::engine(format!("{g}: ingest the snapshot's files of column family {cf}"), e)
            })?;
        }

        let mut end = WriteBatch::new();
        match meta.last_log_id {
            Some(id) => end.put_cf(&meta_cf, meta_key(g, MetaKind::Applied), encode_log_id(&id)),
            None => end.delete_cf(&meta_cf, meta_key(g, MetaKind::Applied)),
        }
        end.put_cf(
            &meta_cf,
            meta_key(g, MetaKind::Membership),
            encode_stored_membership(&meta.membership),
        );
        end.delete_cf(&meta_cf, meta_key(g, MetaKind::Installing));
        db.write_opt(end, &synced).map_err(|e| {
            Error::engine(
                format!("{g}: finish installing the snapshot at {:?}", meta.last_log_id),
                e,
            )
        })?;
        self.app.installed(g);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::{KvApp, KvCommand};
    use crate::log_format::encode_installing;
    use crate::snapshot::transfer::{ChunkReader, SnapshotReceiver};
    use crate::types::{Membership, Peer};

    fn open_node(dir: &std::path::Path) -> Arc<NodeStorage> {
        let db =
            crate::log_store::open_db(&strata::Options::default(), dir.join("db"), &[]).unwrap();
        NodeStorage::open(Arc::new(db), dir.join("snapshots")).unwrap()
    }

    fn close(node: Arc<NodeStorage>) {
        node.stop();
        drop(node);
    }

    fn id(index: u64) -> LogId {
        LogId { term: 2, leader: 1, index }
    }

    fn put(index: u64, k: &str, v: &str) -> Entry {
        let cmd = KvCommand::Put { key: k.into(), value: v.into() };
        Entry { log_id: id(index), payload: Payload::Normal(cmd.encode()) }
    }

    fn append(index: u64, k: &str, v: &str) -> Entry {
        let cmd = KvCommand::Append { key: k.into(), suffix: v.into() };
        Entry { log_id: id(index), payload: Payload::Normal(cmd.encode()) }
    }

    fn membership() -> Membership {
        Membership {
            configs: vec![[1, 2, 3].into()],
            nodes: (1..=3).map(|n| (n, Peer { addr: format!("n{n}") })).collect(),
        }
    }

    fn scan(node: &NodeStorage, g: u32) -> Vec<(Vec<u8>, Vec<u8>)> {
        KvApp::scan(node.db(), GroupId(g)).unwrap()
    }

    #[test]
    fn applied_id_membership_and_data_survive_reopen_together_and_nothing_applies_twice() {
        let dir = tempfile::tempdir().unwrap();
        let node = open_node(dir.path());
        let mut st = GroupState::open(node.clone(), GroupId(1), Arc::new(KvApp)).unwrap();
        let replies = st
            .apply(&[
                Entry { log_id: id(1), payload: Payload::Blank },
                Entry { log_id: id(2), payload: Payload::Membership(membership()) },
                put(3, "a", "x"),
                append(4, "a", "y"),
            ])
            .unwrap();
        assert_eq!(replies[3].0, b"xy");
        let e = st.apply(&[append(4, "a", "y")]).unwrap_err().to_string();
        assert!(
            e.contains("group 1") && e.contains("is at or before the applied entry T2-N1.4"),
            "{e}"
        );
        let e = st.apply(&[append(2, "a", "y")]).unwrap_err().to_string();
        assert!(e.contains("at or before"), "{e}");
        drop(st);
        close(node);

        let node = open_node(dir.path());
        let st = GroupState::open(node.clone(), GroupId(1), Arc::new(KvApp)).unwrap();
        let (applied, m) = st.applied();
        assert_eq!(applied, Some(id(4)));
        assert_eq!(m, StoredMembership { log_id: Some(id(2)), membership: membership() });
        assert_eq!(scan(&node, 1), [(b"a".to_vec(), b"xy".to_vec())]);
    }

    #[test]
    fn an_application_failure_names_group_and_index_and_applies_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let node = open_node(dir.path());
        let mut st = GroupState::open(node.clone(), GroupId(2), Arc::new(KvApp)).unwrap();
        let bad = Entry { log_id: id(1), payload: Payload::Normal(vec![9, 9]) };
        let e = st.apply(&[bad]).unwrap_err().to_string();
        assert!(
            e.starts_with("group 2: applying the entry at index 1: bad key-value command"),
            "{e}"
        );
        assert_eq!(st.applied().0, None);
    }

    /// Node `a` with groups 1 and 2 applied; returns a snapshot of group 1, its files cut
    /// after later entries were applied (keys `late` and `later`, not in the snapshot).
    fn source_snapshot(a: &Arc<NodeStorage>) -> (SnapshotMeta, SnapshotFiles) {
        let mut g1 = GroupState::open(a.clone(), GroupId(1), Arc::new(KvApp)).unwrap();
        let mut entries = vec![Entry { log_id: id(1), payload: Payload::Membership(membership()) }];
        entries.extend((2..200).map(|i| put(i, &format!("k{i:03}"), &"v".repeat(i as usize))));
        g1.apply(&entries).unwrap();
        let mut g2 = GroupState::open(a.clone(), GroupId(2), Arc::new(KvApp)).unwrap();
        g2.apply(&[put(1, "other", "group")]).unwrap();
        let source = g1.snapshot_source();
        // Applied after the engine snapshot: not in the snapshot.
        g1.apply(&[put(200, "late", "x")]).unwrap();
        let (meta, data) = source.build().unwrap();
        assert!(!data.is_cut());
        assert_eq!(std::fs::read_dir(a.snapshot_dir()).unwrap().count(), 0, "no file written");
        // Nor what is applied after the snapshot was made, before its files are cut.
        g1.apply(&[put(201, "later", "y"), put(202, "k002", "overwritten")]).unwrap();
        let files = data.files().unwrap();
        assert!(data.is_cut());
        assert_eq!(data.files().unwrap().path(), files.path(), "cut once");
        (meta, files)
    }

    /// Group 1's data on `a` as the snapshot of [`source_snapshot`] has it.
    fn at_snapshot(a: &NodeStorage) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut want = scan(a, 1);
        want.retain(|(k, _)| k != b"late" && k != b"later");
        for (k, v) in &mut want {
            if k == b"k002" {
                *v = b"vv".to_vec();
            }
        }
        want
    }

    /// The snapshot's files as another node receives them.
    fn receive(files: &SnapshotFiles, b: &NodeStorage) -> SnapshotData {
        let mut r = ChunkReader::new(files.clone(), 4096);
        let mut rx =
            SnapshotReceiver::new(b.snapshot_dir(), GroupId(1), files.files().to_vec()).unwrap();
        while let Some(c) = r.next_chunk().unwrap() {
            rx.accept(&c).unwrap();
        }
        SnapshotData::of_files(GroupId(1), rx.finish().unwrap())
    }

    #[test]
    fn a_snapshot_replaces_exactly_the_groups_ranges_and_an_older_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = open_node(&dir.path().join("a"));
        let (meta, files) = source_snapshot(&a);
        assert_eq!(
            meta.last_log_id,
            Some(id(199)),
            "the snapshot is at the engine snapshot's point"
        );
        assert_eq!(meta.membership.log_id, Some(id(1)));

        let b = open_node(&dir.path().join("b"));
        let mut b1 = GroupState::open(b.clone(), GroupId(1), Arc::new(KvApp)).unwrap();
        b1.apply(&[put(1, "stale", "gone after install"), put(2, "k002", "old")]).unwrap();
        let mut b2 = GroupState::open(b.clone(), GroupId(2), Arc::new(KvApp)).unwrap();
        b2.apply(&[put(1, "mine", "kept")]).unwrap();

        assert!(b1.install(&meta, receive(&files, &b)).unwrap());
        assert_eq!(scan(&b, 1), at_snapshot(&a));
        assert_eq!(
            scan(&b, 2),
            [(b"mine".to_vec(), b"kept".to_vec())],
            "another group's data is untouched"
        );
        assert_eq!(b1.applied(), (Some(id(199)), meta.membership.clone()));

        let older = SnapshotMeta { last_log_id: Some(id(150)), ..meta.clone() };
        assert!(!b1.install(&older, receive(&files, &b)).unwrap(), "older than applied: refused");
        assert!(!b1.install(&meta, receive(&files, &b)).unwrap(), "equal to applied: refused");
        b1.apply(&[put(200, "after", "snapshot")]).unwrap();
        assert_eq!(b1.applied().0, Some(id(200)));
    }

    #[test]
    fn a_fenced_state_machine_applies_and_installs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let a = open_node(&dir.path().join("a"));
        let (meta, files) = source_snapshot(&a);
        let b = open_node(&dir.path().join("b"));
        let mut b1 = GroupState::open(b.clone(), GroupId(1), Arc::new(KvApp)).unwrap();
        b1.apply(&[put(1, "k", "v")]).unwrap();
        b1.fence();
        let e = b1.apply(&[put(2, "k", "w")]).unwrap_err();
        assert!(matches!(e, Error::NoSuchGroup(GroupId(1))), "{e}");
        let e = b1.install(&meta, receive(&files, &b)).unwrap_err();
        assert!(matches!(e, Error::NoSuchGroup(GroupId(1))), "{e}");
        assert_eq!(b1.current_snapshot().map(|(m, _)| m), None);
        drop(b1);
        let b1 = GroupState::open(b.clone(), GroupId(1), Arc::new(KvApp)).unwrap();
        assert_eq!(b1.applied().0, Some(id(1)), "nothing applied or installed after the fence");
        assert_eq!(scan(&b, 1), [(b"k".to_vec(), b"v".to_vec())]);
    }

    #[test]
    fn an_install_interrupted_by_a_crash_is_finished_when_the_group_opens() {
        let dir = tempfile::tempdir().unwrap();
        let a = open_node(&dir.path().join("a"));
        let (meta, files) = source_snapshot(&a);
        let b = open_node(&dir.path().join("b"));
        let mut b1 = GroupState::open(b.clone(), GroupId(1), Arc::new(KvApp)).unwrap();
        b1.apply(&[put(1, "stale", "x")]).unwrap();
        drop(b1);
        let received = receive(&files, &b).files().unwrap();
        // Step (1) done, then the process dies: the record and deletion are durable, nothing
        // is ingested, and the received files stay (no destructor runs in a crash).
        let mut begin = WriteBatch::new();
        let dir_name = received.path().to_str().unwrap().to_string();
        begin.put_cf(
            b.meta_cf(),
            meta_key(GroupId(1), MetaKind::Installing),
            encode_installing(&meta, &dir_name),
        );
        let r = &KvApp.ranges(GroupId(1))[0];
        begin.delete_range(r.start.as_slice(), r.end.as_slice());
        b.db().write_opt(begin, &WriteOptions { sync: true, ..WriteOptions::default() }).unwrap();
        std::mem::forget(received);
        close(b);

        let b = open_node(&dir.path().join("b"));
        assert!(std::path::Path::new(&dir_name).exists(), "the open keeps the install's files");
        let b1 = GroupState::open(b.clone(), GroupId(1), Arc::new(KvApp)).unwrap();
        assert_eq!(b1.applied(), (Some(id(199)), meta.membership.clone()));
        assert_eq!(scan(&b, 1), at_snapshot(&a));
        assert!(b.get_meta(GroupId(1), MetaKind::Installing).unwrap().is_none());
        drop(b1);
        close(b);
        let b = open_node(&dir.path().join("b"));
        assert!(
            !std::path::Path::new(&dir_name).exists(),
            "finished installs leave no files behind"
        );
        drop(b);
    }
}
