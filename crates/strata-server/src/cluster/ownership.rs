//! Which slots a partition serves while slots move between partitions (`move-slots`), as
//! the partition's own log decides: a move is a sequence of control entries in the logs of
//! its source S and target T, each applied by every replica in the batch that records the
//! new state, so replicas agree on ownership at every index of the log. The cluster map's
//! slot table (`super::map`) follows them: it is what clients are told, never what decides.
//!
//! ```text
//!  control entry:  0xFFFFFFFF u32LE | op u8 | slot u16LE | peer partition u16LE
//!    op: 1 import (T)  2 freeze (S)  3 handoff (S)  4 adopt (T)  5 release (S)  6 copy (S)
//!        7 abort (S and T)
//!  record (server family):  "owner\0" | partition u16BE | slot u16BE
//!                           -> state u8 | peer partition u16LE
//!    state: 1 importing  2 adopted  3 frozen  4 handed off  5 released  6 copying
//! ```
//!
//! A slot without a record belongs to its partition if it is in the partition's run
//! (`super::partitions`). The steps of a move, in order, each idempotent:
//! 1. `import` in T: T's range of the slot is cleared (what an abandoned import left), and T
//!    takes the copy's batches for it (`Importing`).
//! 2. `copy` in S: S goes on serving the slot, and from this entry on every write to it is
//!    also recorded in S's outbox (`super::outbox`), so the copy can run while clients write.
//!    The bulk copy: the slot's records as S holds them, re-keyed to T's partition, proposed
//!    to T in batches; then the outbox, replayed in T in S's order, until little is left.
//!    Repeating `copy` starts the outbox again (the controller repeats `import` first).
//! 3. `freeze` in S: S takes no write to the slot from that entry on (a write waits for the
//!    handoff, then goes to T with `ASK`; `TRYAGAIN` if the move stalls); its leader proposes
//!    it only once no write to the slot is on its way (`super::moves`), so no write lands
//!    behind it. Reads go on.
//!    (A move may also freeze straight from S's own state, and copy everything after it.)
//! 4. the rest of the outbox (final once the freeze is applied), replayed in T.
//! 5. `handoff` in S: S stops serving the slot; its clients are sent to T (`ASK`).
//! 6. `adopt` in T, proposed once the handoff is applied: T serves the slot. So at most one
//!    of S and T serves it at any time.
//! 7. the map gives the slot to T (clients get `MOVED` to T).
//! 8. `release` in S: S's range of the slot and its outbox are deleted.
//!
//! A move stopped before its handoff can be undone instead (`abort`, each idempotent): in
//! S a copying or frozen slot is S's again (its outbox deleted; the writes a freeze held go
//! on in S), in T an importing slot is dropped with what was copied into it (the slot was
//! never served there). After the handoff T may already serve the slot: only finishing the
//! move (or moving the slot back afterwards) is left.
//!
//! The records live in the group's snapshot ranges ([`ranges_of`]), so a replica that
//! installs a snapshot gets them with the data.

use std::collections::HashMap;

use parking_lot::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};
use strata::WriteBatch;

use super::outbox;
use super::partitions::Partitions;
use crate::filing::Filing;
use crate::storage::Store;

/// The first four bytes of a control entry (no family id is this large).
pub const CONTROL: [u8; 4] = [0xff; 4];

/// Bytes of a control entry.
const CONTROL_LEN: usize = 9;

/// The records' key prefix in the server family.
const PREFIX: &[u8] = b"owner\0";

/// A step of a move, as a control entry names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// T takes the copy of the slot from `peer` (S).
    Import,
    /// S refuses writes to the slot, moving to `peer` (T).
    Freeze,
    /// S stops serving the slot; its clients go to `peer` (T).
    Handoff,
    /// T serves the slot (moved from `peer`, S).
    Adopt,
    /// S deletes its records of the slot.
    Release,
    /// S records its writes to the slot in its outbox, moving to `peer` (T).
    Copy,
    /// The move to or from `peer` is undone (before its handoff: module doc).
    Abort,
}

impl Op {
    fn code(self) -> u8 {
        match self {
            Op::Import => 1,
            Op::Freeze => 2,
            Op::Handoff => 3,
            Op::Adopt => 4,
            Op::Release => 5,
            Op::Copy => 6,
            Op::Abort => 7,
        }
    }

    fn of(code: u8) -> Option<Op> {
        Some(match code {
            1 => Op::Import,
            2 => Op::Freeze,
            3 => Op::Handoff,
            4 => Op::Adopt,
            5 => Op::Release,
            6 => Op::Copy,
            7 => Op::Abort,
            _ => return None,
        })
    }

    /// The name the controller's command uses.
    pub fn name(self) -> &'static str {
        match self {
            Op::Import => "import",
            Op::Freeze => "freeze",
            Op::Handoff => "handoff",
            Op::Adopt => "adopt",
            Op::Release => "release",
            Op::Copy => "copy",
            Op::Abort => "abort",
        }
    }

    /// The op named `name` (case-insensitive).
    pub fn named(name: &str) -> Option<Op> {
        [Op::Import, Op::Copy, Op::Freeze, Op::Handoff, Op::Adopt, Op::Release, Op::Abort]
            .into_iter()
            .find(|o| o.name().eq_ignore_ascii_case(name))
    }
}

/// A slot's state in one partition, when it is not simply its run's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Taking the copy from `peer`; not served.
    Importing(u16),
    /// Moved in from `peer`, and served.
    Adopted(u16),
    /// Served for reads only, moving to `peer`.
    Frozen(u16),
    /// Not served: its clients go to `peer`, which serves it (or is about to).
    HandedOff(u16),
    /// Moved to `peer` and deleted here.
    Released(u16),
    /// Served, its writes also recorded in the outbox, being copied to `peer`.
    Copying(u16),
}

impl State {
    fn encode(self) -> [u8; 3] {
        let (code, peer) = match self {
            State::Importing(p) => (1, p),
            State::Adopted(p) => (2, p),
            State::Frozen(p) => (3, p),
            State::HandedOff(p) => (4, p),
            State::Released(p) => (5, p),
            State::Copying(p) => (6, p),
        };
        let [a, b] = peer.to_le_bytes();
        [code, a, b]
    }

    fn decode(b: &[u8]) -> Option<State> {
        let [code, a, b] = b.try_into().ok()?;
        let peer = u16::from_le_bytes([a, b]);
        Some(match code {
            1 => State::Importing(peer),
            2 => State::Adopted(peer),
            3 => State::Frozen(peer),
            4 => State::HandedOff(peer),
            5 => State::Released(peer),
            6 => State::Copying(peer),
            _ => return None,
        })
    }

    /// The other partition of the move.
    pub fn peer(self) -> u16 {
        match self {
            State::Importing(p)
            | State::Adopted(p)
            | State::Frozen(p)
            | State::HandedOff(p)
            | State::Released(p)
            | State::Copying(p) => p,
        }
    }
}

/// What an applied step does to a slot's record in a partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// The record says this state.
    Set(State),
    /// No record: the slot is the partition's if it is in its run, else not.
    Clear,
}

/// The control entry of `op` on `slot` with `peer`.
pub fn encode_control(op: Op, slot: u16, peer: u16) -> Vec<u8> {
    let mut out = CONTROL.to_vec();
    out.push(op.code());
    out.extend_from_slice(&slot.to_le_bytes());
    out.extend_from_slice(&peer.to_le_bytes());
    out
}

/// A control entry's parts: `Ok(None)` for an entry that is not one.
pub fn decode_control(entry: &[u8]) -> Result<Option<(Op, u16, u16)>, String> {
    if !entry.starts_with(&CONTROL) {
        return Ok(None);
    }
    if entry.len() != CONTROL_LEN {
        return Err(format!("a control entry of {} bytes, expected {CONTROL_LEN}", entry.len()));
    }
    let op = Op::of(entry[4]).ok_or_else(|| format!("a control entry with op {}", entry[4]))?;
    let slot = u16::from_le_bytes([entry[5], entry[6]]);
    let peer = u16::from_le_bytes([entry[7], entry[8]]);
    Ok(Some((op, slot, peer)))
}

fn record_key(partition: u16, slot: u16) -> Vec<u8> {
    let mut k = PREFIX.to_vec();
    k.extend_from_slice(&partition.to_be_bytes());
    k.extend_from_slice(&slot.to_be_bytes());
    k
}

/// The server family's range of partition `p`'s records: part of its snapshots.
pub fn ranges_of(p: u16) -> (Vec<u8>, Vec<u8>) {
    let mut start = PREFIX.to_vec();
    start.extend_from_slice(&p.to_be_bytes());
    let mut end = PREFIX.to_vec();
    end.extend_from_slice(&(u32::from(p) + 1).to_be_bytes()[2..]);
    if p == u16::MAX {
        end = b"owner\x01".to_vec();
    }
    (start, end)
}

/// Every partition's slot states on this node, as applied (kept in memory beside the
/// records, which are the truth: reloaded at start and after a snapshot install).
pub struct Ownership {
    runs: Partitions,
    /// By slot: the partitions with a state for it (few: a slot's moves).
    states: RwLock<HashMap<u16, Vec<(u16, State)>>>,
    /// Whether `states` holds any: every command's routing asks, without the lock.
    any: AtomicBool,
    /// Whether some slot is `Copying` in some partition: every applied entry asks
    /// ([`Ownership::copying`]), without the lock.
    any_copying: AtomicBool,
}

impl Ownership {
    /// The states stored in `store`, the slots in `runs`.
    pub fn load(store: &Store, runs: Partitions) -> Result<Ownership, String> {
        let o = Ownership {
            runs,
            states: RwLock::new(HashMap::new()),
            any: AtomicBool::new(false),
            any_copying: AtomicBool::new(false),
        };
        o.reload(store, None)?;
        Ok(o)
    }

    /// Reads the records again: every partition's (`None`), or one's.
    pub fn reload(&self, store: &Store, partition: Option<u16>) -> Result<(), String> {
        let prefix = match partition {
            Some(p) => ranges_of(p).0,
            None => PREFIX.to_vec(),
        };
        let records = store
            .server_records(&prefix)
            .map_err(|e| format!("slot ownership: cannot read it: {e}"))?;
        let mut states = self.states.write();
        for of_slot in states.values_mut() {
            of_slot.retain(|(p, _)| partition.is_some_and(|only| only != *p));
        }
        states.retain(|_, of_slot| !of_slot.is_empty());
        for (k, v) in records {
            // "owner\0" | partition u16BE | slot u16BE, nothing else.
            let rest = k.get(PREFIX.len()..).unwrap_or_default();
            let (Ok(p), Ok(s)) = (
                rest.get(..2).unwrap_or_default().try_into(),
                rest.get(2..).unwrap_or_default().try_into(),
            ) else {
                return Err(format!(
                    "slot ownership: a record key of {} bytes, expected {}",
                    k.len(),
                    PREFIX.len() + 4
                ));
            };
            let state = State::decode(&v)
                .ok_or_else(|| format!("slot ownership: record {v:?} is not a slot state"))?;
            let (p, s) = (u16::from_be_bytes(p), u16::from_be_bytes(s));
            states.entry(s).or_default().push((p, state));
        }
        self.any.store(!states.is_empty(), Ordering::Release);
        self.any_copying.store(has_copying(&states), Ordering::Release);
        Ok(())
    }

    /// Whether any slot is in a move here (else every question has its run's answer).
    pub fn any(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    /// The first partition with a state for `slot` that `f` accepts (given the partition
    /// and the state).
    pub fn find(&self, slot: u16, f: impl Fn(u16, State) -> bool) -> Option<u16> {
        let states = self.states.read();
        states.get(&slot)?.iter().find(|(p, st)| f(*p, *st)).map(|(p, _)| *p)
    }

    /// The state of `slot` in `partition`, when it is not simply its run's.
    pub fn state(&self, partition: u16, slot: u16) -> Option<State> {
        let states = self.states.read();
        states.get(&slot)?.iter().find(|(p, _)| *p == partition).map(|(_, st)| *st)
    }

    /// Whether `partition` takes written batches for `slot` (its run's and not moving away,
    /// adopted, or importing).
    pub fn takes_writes(&self, partition: u16, slot: u16) -> bool {
        match self.state(partition, slot) {
            None => self.runs.of_slot(slot) == partition,
            Some(State::Importing(_) | State::Adopted(_) | State::Copying(_)) => true,
            Some(State::Frozen(_) | State::HandedOff(_) | State::Released(_)) => false,
        }
    }

    /// The slots being copied out of `partition` (whose writes go to its outbox): none,
    /// without the lock or an allocation, unless some slot is being copied.
    pub fn copying(&self, partition: u16) -> Vec<u16> {
        if !self.any_copying.load(Ordering::Acquire) {
            return Vec::new();
        }
        let states = self.states.read();
        let of = |(s, v): (&u16, &Vec<(u16, State)>)| {
            v.iter().any(|(p, st)| *p == partition && matches!(st, State::Copying(_))).then_some(*s)
        };
        states.iter().filter_map(of).collect()
    }

    /// Every (partition, slot, state) of a partition in `partitions`.
    pub fn of_partitions(&self, partitions: &[u16]) -> Vec<(u16, u16, State)> {
        let mut v: Vec<(u16, u16, State)> = self
            .states
            .read()
            .iter()
            .flat_map(|(s, of_slot)| of_slot.iter().map(move |(p, st)| (*p, *s, *st)))
            .filter(|(p, _, _)| partitions.contains(p))
            .collect();
        v.sort_by_key(|(p, s, _)| (*p, *s));
        v
    }

    /// Applies `op` on `slot` (with `peer`) in `partition`: the record and any range deletion
    /// go into `batch`; the reply is `ok`, or an error reply for a step the slot's state
    /// does not allow (nothing written). The in-memory state follows once the batch is
    /// written ([`Ownership::settle`]).
    pub fn apply(
        &self,
        store: &Store,
        partition: u16,
        op: Op,
        slot: u16,
        peer: u16,
        batch: &mut WriteBatch,
    ) -> (Vec<u8>, Option<Change>) {
        if op == Op::Abort {
            return self.abort(store, partition, slot, peer, batch);
        }
        let now = self.state(partition, slot);
        let in_run = self.runs.of_slot(slot) == partition;
        let owns = match now {
            None => in_run,
            Some(State::Adopted(_)) => true,
            _ => false,
        };
        let next = match (op, now) {
            (Op::Import, Some(State::Importing(p))) if p == peer => State::Importing(peer),
            (Op::Import, None) if !in_run => State::Importing(peer),
            (Op::Import, Some(State::Released(_))) => State::Importing(peer),
            (Op::Copy, _) if owns => State::Copying(peer),
            (Op::Copy, Some(State::Copying(p))) if p == peer => State::Copying(peer),
            (Op::Freeze, _) if owns => State::Frozen(peer),
            (Op::Freeze, Some(State::Frozen(p) | State::Copying(p))) if p == peer => {
                State::Frozen(peer)
            }
            (Op::Handoff, Some(State::Frozen(p) | State::HandedOff(p))) if p == peer => {
                State::HandedOff(peer)
            }
            (Op::Adopt, Some(State::Importing(p) | State::Adopted(p))) if p == peer => {
                State::Adopted(peer)
            }
            (Op::Release, Some(State::HandedOff(p) | State::Released(p))) if p == peer => {
                State::Released(peer)
            }
            _ => {
                let reply = format!(
                    "-ERR cannot {} slot {slot} with partition {peer} in partition {partition}: \
                     it is {}",
                    op.name(),
                    describe(now, in_run, partition)
                );
                return (reply.into_bytes(), None);
            }
        };
        if matches!(op, Op::Import | Op::Release) {
            // Import starts from nothing (clearing what an abandoned copy left); release
            // deletes what moved away.
            clear_slot(store, partition, slot, op == Op::Release, batch);
        }
        if matches!(op, Op::Copy | Op::Release) {
            // A copy starts its outbox afresh; a release has no more use for it.
            drop_outbox(store, partition, slot, batch);
        }
        record(store, partition, slot, Change::Set(next), batch);
        (b"ok".to_vec(), Some(Change::Set(next)))
    }

    /// [`Op::Abort`] (module doc): S's copying or frozen slot back to S (its own again, or
    /// adopted as before the move when not in its run), its outbox deleted; T's importing
    /// slot and what was copied into it dropped (released to S again when in T's run). A
    /// slot in no move, or already back, is left as it is (`ok`); one past its handoff, or in
    /// a move with another partition, is refused.
    fn abort(
        &self,
        store: &Store,
        partition: u16,
        slot: u16,
        peer: u16,
        batch: &mut WriteBatch,
    ) -> (Vec<u8>, Option<Change>) {
        let now = self.state(partition, slot);
        let in_run = self.runs.of_slot(slot) == partition;
        let change = match now {
            Some(State::Copying(p) | State::Frozen(p)) if p == peer => {
                drop_outbox(store, partition, slot, batch);
                // Adopted from itself: the partition it came from is not recorded (module doc).
                if in_run {
                    Change::Clear
                } else {
                    Change::Set(State::Adopted(partition))
                }
            }
            Some(State::Importing(p)) if p == peer => {
                clear_slot(store, partition, slot, false, batch);
                if in_run {
                    Change::Set(State::Released(peer))
                } else {
                    Change::Clear
                }
            }
            None | Some(State::Released(_)) => return (b"ok".to_vec(), None),
            Some(State::Adopted(p)) if p != peer => return (b"ok".to_vec(), None),
            _ => {
                let reply = format!(
                    "-ERR cannot abort slot {slot}'s move with partition {peer} in partition \
                     {partition}: it is {} (a move past its handoff is finished, not aborted)",
                    describe(now, in_run, partition)
                );
                return (reply.into_bytes(), None);
            }
        };
        record(store, partition, slot, change, batch);
        (b"ok".to_vec(), Some(change))
    }

    /// The state of `slot` in `partition` in words: `its own`, `not its own`, `importing from
    /// partition 3`, `adopted from ...`, `frozen, moving to ...`, `handed off to ...`,
    /// `released to ...`, `copying to ...` (the controller reads it to resume a move).
    pub fn describe(&self, partition: u16, slot: u16) -> String {
        describe(self.state(partition, slot), self.runs.of_slot(slot) == partition, partition)
    }

    /// Records what an applied (and written) control entry did to `slot` in `partition`.
    pub fn settle(&self, partition: u16, slot: u16, change: Change) {
        let mut states = self.states.write();
        let of_slot = states.entry(slot).or_default();
        let at = of_slot.iter().position(|(p, _)| *p == partition);
        match (change, at) {
            (Change::Set(state), Some(i)) => of_slot[i].1 = state,
            (Change::Set(state), None) => of_slot.push((partition, state)),
            (Change::Clear, Some(i)) => {
                of_slot.remove(i);
            }
            (Change::Clear, None) => {}
        }
        states.retain(|_, of_slot| !of_slot.is_empty());
        self.any.store(!states.is_empty(), Ordering::Release);
        self.any_copying.store(has_copying(&states), Ordering::Release);
    }
}

/// Whether some partition is copying some slot out in `states`.
fn has_copying(states: &HashMap<u16, Vec<(u16, State)>>) -> bool {
    states.values().flatten().any(|(_, st)| matches!(st, State::Copying(_)))
}

/// Deletes `partition`'s records of `slot` in every data family: each family's range
/// (`always`), or only a range that holds something. A deletion over an empty range would
/// make a copy's table files overlap it, and the engine would flush to ingest them
/// (`super::ingest`); every replica reads the same records at the entry's index, so every
/// one writes the same batch.
fn clear_slot(store: &Store, partition: u16, slot: u16, always: bool, batch: &mut WriteBatch) {
    let (start, end) = Filing::Partition(partition).slot_span(slot, slot);
    for cf in store.families() {
        if always || holds_any(store, cf, &start, &end) {
            batch.delete_range_cf(&**cf, start.clone(), end.clone());
        }
    }
}

/// Writes `change` to the record of `slot` in `partition`.
fn record(store: &Store, partition: u16, slot: u16, change: Change, batch: &mut WriteBatch) {
    let key = record_key(partition, slot);
    match change {
        Change::Set(state) => batch.put_cf(&*store.server_cf, key, state.encode()),
        Change::Clear => batch.delete_cf(&*store.server_cf, key),
    }
}

/// Deletes `slot`'s outbox in `partition` (`super::outbox`).
fn drop_outbox(store: &Store, partition: u16, slot: u16, batch: &mut WriteBatch) {
    let (start, end) = outbox::slot_range(partition, slot);
    batch.delete_range_cf(&*store.server_cf, start, end);
}

/// Whether family `cf` of `store` holds a record in `[start, end)`. An engine error counts
/// as holding one: the range is cleared rather than trusted.
fn holds_any(store: &Store, cf: &strata::ColumnFamily, start: &[u8], end: &[u8]) -> bool {
    let ro = strata::ReadOptions {
        iterate_upper_bound: Some(end.to_vec()),
        ..strata::ReadOptions::default()
    };
    let mut it = store.db.raw_iterator_cf_opt(cf, &ro);
    it.seek(start);
    it.valid() || it.status().is_err()
}

fn describe(state: Option<State>, in_run: bool, partition: u16) -> String {
    match state {
        None if in_run => "its own".to_string(),
        None => "not its own".to_string(),
        Some(State::Importing(p)) => format!("importing from partition {p}"),
        // Adopted from itself: a move out of it was aborted (`abort`).
        Some(State::Adopted(p)) if p == partition => "its own (moved in earlier)".to_string(),
        Some(State::Adopted(p)) => format!("adopted from partition {p}"),
        Some(State::Frozen(p)) => format!("frozen, moving to partition {p}"),
        Some(State::HandedOff(p)) => format!("handed off to partition {p}"),
        Some(State::Released(p)) => format!("released to partition {p}"),
        Some(State::Copying(p)) => format!("copying to partition {p}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::cluster::testing::store;

    fn step(o: &Ownership, st: &Store, p: u16, op: Op, slot: u16, peer: u16) -> String {
        let mut b = WriteBatch::new();
        let (reply, next) = o.apply(st, p, op, slot, peer, &mut b);
        st.db.write(b).unwrap();
        if let Some(n) = next {
            o.settle(p, slot, n);
        }
        String::from_utf8(reply).unwrap()
    }

    #[test]
    fn a_copy_serves_the_slot_keeps_an_outbox_and_a_release_or_new_copy_drops_it() {
        let (_d, st) = store();
        let runs = Partitions::new(4).unwrap();
        let o = Ownership::load(&st, runs).unwrap();
        let (s, t, slot) = (0u16, 3u16, 10u16);
        assert!(step(&o, &st, t, Op::Copy, slot, s).contains("not its own"));
        assert_eq!(step(&o, &st, s, Op::Copy, slot, t), "ok");
        assert_eq!(o.describe(s, slot), "copying to partition 3");
        assert!(o.takes_writes(s, slot) && o.copying(s) == vec![slot] && o.copying(t).is_empty());
        assert!(step(&o, &st, s, Op::Copy, slot, 2).contains("copying to partition 3"));
        let outbox_len = || {
            let (lo, _) = outbox::slot_range(s, slot);
            st.server_records(&lo).unwrap().len()
        };
        let record = || {
            let mut b = WriteBatch::new();
            b.put_cf(&*st.server_cf, outbox::key(s, slot, 7), b"");
            b.put_cf(&*st.server_cf, outbox::key(s, slot + 1, 7), b"another slot's");
            st.db.write(b).unwrap();
        };
        record();
        assert_eq!(outbox_len(), 1);
        // Copying again starts the outbox afresh.
        assert_eq!(step(&o, &st, s, Op::Copy, slot, t), "ok");
        assert_eq!(outbox_len(), 0);
        record();
        assert!(step(&o, &st, s, Op::Freeze, slot, 2).starts_with("-ERR"));
        assert_eq!(step(&o, &st, s, Op::Freeze, slot, t), "ok");
        assert!(o.copying(s).is_empty() && !o.takes_writes(s, slot));
        assert!(step(&o, &st, s, Op::Copy, slot, t).contains("frozen"));
        assert_eq!(outbox_len(), 1, "the freeze keeps the outbox for the last copy");
        assert_eq!(step(&o, &st, s, Op::Handoff, slot, t), "ok");
        assert_eq!(step(&o, &st, s, Op::Release, slot, t), "ok");
        assert_eq!(outbox_len(), 0);
        let (lo, _) = outbox::slot_range(s, slot + 1);
        assert_eq!(st.server_records(&lo).unwrap().len(), 1, "another slot's outbox stays");
    }

    #[test]
    fn an_abort_before_the_handoff_gives_the_slot_back_and_drops_the_copy() {
        let (_d, st) = store();
        let runs = Partitions::new(4).unwrap();
        let o = Ownership::load(&st, runs).unwrap();
        // Slot 10 is partition 0's; a move to 3 is aborted while copying.
        let (s, t, slot) = (0u16, 3u16, 10u16);
        assert_eq!(step(&o, &st, t, Op::Import, slot, s), "ok");
        assert_eq!(step(&o, &st, s, Op::Copy, slot, t), "ok");
        let (lo, hi) = Filing::Partition(t).slot_span(slot, slot);
        let mut b = WriteBatch::new();
        b.put_cf(&*st.meta_cf, [&lo[..], b"copied"].concat(), b"record");
        b.put_cf(&*st.server_cf, outbox::key(s, slot, 7), b"change");
        st.db.write(b).unwrap();
        // Another partition's peer is refused.
        assert!(step(&o, &st, s, Op::Abort, slot, 2).contains("copying to partition 3"));
        for _ in 0..2 {
            assert_eq!(step(&o, &st, s, Op::Abort, slot, t), "ok");
            assert_eq!(step(&o, &st, t, Op::Abort, slot, s), "ok");
        }
        assert_eq!(o.describe(s, slot), "its own");
        assert_eq!(o.describe(t, slot), "not its own");
        assert!(o.takes_writes(s, slot) && !o.takes_writes(t, slot));
        assert!(!o.any() && o.copying(s).is_empty());
        let (olo, _) = outbox::slot_range(s, slot);
        assert!(st.server_records(&olo).unwrap().is_empty(), "the outbox is gone");
        let mut it = st.db.raw_iterator_cf(&*st.meta_cf);
        it.seek(&lo);
        assert!(it.item().is_none_or(|(k, _)| k >= &hi[..]), "the copy is gone");
        // Frozen, then aborted: served again; the records say so after a reload too.
        assert_eq!(step(&o, &st, t, Op::Import, slot, s), "ok");
        assert_eq!(step(&o, &st, s, Op::Freeze, slot, t), "ok");
        assert!(!o.takes_writes(s, slot));
        assert_eq!(step(&o, &st, s, Op::Abort, slot, t), "ok");
        assert_eq!(step(&o, &st, t, Op::Abort, slot, s), "ok");
        assert!(o.takes_writes(s, slot));
        assert!(!Ownership::load(&st, runs).unwrap().any());
        // Past the handoff: refused on both sides.
        assert_eq!(step(&o, &st, t, Op::Import, slot, s), "ok");
        assert_eq!(step(&o, &st, s, Op::Freeze, slot, t), "ok");
        assert_eq!(step(&o, &st, s, Op::Handoff, slot, t), "ok");
        assert_eq!(step(&o, &st, t, Op::Adopt, slot, s), "ok");
        let r = step(&o, &st, s, Op::Abort, slot, t);
        assert!(r.starts_with("-ERR cannot abort slot 10") && r.contains("handed off"), "{r}");
        assert!(step(&o, &st, t, Op::Abort, slot, s).contains("adopted from partition 0"));
        // A slot moved in and then out again, aborted: adopted here as before.
        assert_eq!(step(&o, &st, s, Op::Release, slot, t), "ok");
        assert_eq!(step(&o, &st, s, Op::Import, slot, t), "ok");
        assert_eq!(step(&o, &st, t, Op::Copy, slot, s), "ok");
        assert_eq!(step(&o, &st, t, Op::Abort, slot, s), "ok");
        assert_eq!(step(&o, &st, s, Op::Abort, slot, t), "ok");
        assert_eq!(o.describe(t, slot), "its own (moved in earlier)");
        assert_eq!(o.state(s, slot), Some(State::Released(t)), "in its run, released again");
        assert!(o.takes_writes(t, slot) && !o.takes_writes(s, slot));
    }

    #[test]
    fn control_entries_round_trip() {
        let e = encode_control(Op::Handoff, 12182, 7);
        assert_eq!(decode_control(&e), Ok(Some((Op::Handoff, 12182, 7))));
        assert_eq!(decode_control(b"\x01\0\0\0rest"), Ok(None));
        assert!(decode_control(&e[..8]).unwrap_err().contains("8 bytes"));
        let mut bad = e.clone();
        bad[4] = 9;
        assert!(decode_control(&bad).unwrap_err().contains("op 9"));
        assert_eq!(Op::named("ADOPT"), Some(Op::Adopt));
    }

    #[test]
    fn a_move_goes_through_its_steps_in_order_and_each_repeats_harmlessly() {
        let (_d, st) = store();
        let runs = Partitions::new(4).unwrap();
        let o = Ownership::load(&st, runs).unwrap();
        // Slot 10 is partition 0's; it moves to 3.
        let (s, t, slot) = (0u16, 3u16, 10u16);
        assert!(o.takes_writes(s, slot) && !o.takes_writes(t, slot) && !o.any());
        // Out of order: refused, naming the state, writing nothing.
        let r = step(&o, &st, t, Op::Adopt, slot, s);
        assert!(r.starts_with("-ERR cannot adopt slot 10") && r.contains("not its own"), "{r}");
        assert!(step(&o, &st, s, Op::Handoff, slot, t).contains("it is its own"));
        assert!(!o.any());
        for _ in 0..2 {
            assert_eq!(step(&o, &st, t, Op::Import, slot, s), "ok");
        }
        assert!(o.takes_writes(t, slot));
        assert!(step(&o, &st, s, Op::Import, slot, t).contains("its own"));
        for _ in 0..2 {
            assert_eq!(step(&o, &st, s, Op::Freeze, slot, t), "ok");
        }
        assert!(!o.takes_writes(s, slot));
        assert!(step(&o, &st, s, Op::Freeze, slot, 2).starts_with("-ERR"));
        for op in [Op::Handoff, Op::Handoff] {
            assert_eq!(step(&o, &st, s, op, slot, t), "ok");
        }
        for op in [Op::Adopt, Op::Adopt] {
            assert_eq!(step(&o, &st, t, op, slot, s), "ok");
        }
        for op in [Op::Release, Op::Release] {
            assert_eq!(step(&o, &st, s, op, slot, t), "ok");
        }
        assert_eq!(o.state(s, slot), Some(State::Released(t)));
        let stored = st.db.get_cf(&*st.server_cf, record_key(t, slot)).unwrap();
        assert_eq!(stored.as_deref().and_then(State::decode), Some(State::Adopted(s)));
        // Reloaded from the records alone, the same states; and it can move back.
        let again = Ownership::load(&st, runs).unwrap();
        assert_eq!(again.of_partitions(&[0, 3]), o.of_partitions(&[0, 3]));
        assert_eq!(step(&again, &st, s, Op::Import, slot, t), "ok");
        assert_eq!(step(&again, &st, t, Op::Freeze, slot, s), "ok");
        // A damaged record is an error naming what is wrong, not a panic.
        let mut b = WriteBatch::new();
        b.put_cf(&*st.server_cf, b"owner\0\x01", State::Frozen(1).encode());
        st.db.write(b).unwrap();
        let e = Ownership::load(&st, runs).err().expect("a short key is refused");
        assert!(e.contains("a record key of 7 bytes, expected 10"), "{e}");
        let mut b = WriteBatch::new();
        b.delete_cf(&*st.server_cf, b"owner\0\x01");
        b.put_cf(&*st.server_cf, record_key(2, 7), b"\x09\0\0");
        st.db.write(b).unwrap();
        assert!(Ownership::load(&st, runs).err().unwrap().contains("is not a slot state"));
        // The records are in the partition's snapshot range.
        let (lo, hi) = ranges_of(t);
        let k = record_key(t, slot);
        assert!(k >= lo && k < hi);
        assert!(record_key(t + 1, 0) >= hi && record_key(t - 1, u16::MAX) < lo);
    }
}
