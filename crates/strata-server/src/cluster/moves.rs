//! A node's side of a slot move (`super::ownership` has the steps and why they are safe):
//! the per-slot gate that keeps a write from landing behind its slot's freeze, and the steps
//! the controller asks of the leaders of the two partitions.
//!
//! **The gate.** A write command on a slot is admitted ([`Gates::admit`]) after its router
//! checks and holds the admission until its batch is in the group's proposal queue (the end
//! of the command). Freezing a slot raises its flag first, so no write is admitted after
//! that, waits until the admitted ones are gone and the group's queue is empty, and only
//! then proposes the freeze: every write the leader accepted is before the freeze in the
//! log. (A write a deposed leader proposed late is refused by the entry's apply instead.)

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata_replication::{Error as RaftError, GroupId, Role};

use super::node::ClusterNode;
use super::ownership::{encode_control, Op, State};
use crate::routing::Admission;
use crate::slots::SLOTS;
use crate::storage::pending::off_worker;

/// What a write refused by a slot being frozen gets (Redis Cluster's text for a key that
/// cannot be served during a move).
const TRYAGAIN: &str = "TRYAGAIN the slot is being moved; retry shortly";

/// How long a freeze waits for the writes already admitted to be proposed.
const DRAIN: Duration = Duration::from_secs(5);

/// How long a write to a frozen slot waits for the move to hand the slot off before it gets
/// `TRYAGAIN` (a slot's copy takes milliseconds to seconds).
const FREEZE_WAIT: Duration = Duration::from_secs(5);

/// Per slot: the admitted writes under way, and whether the slot is being frozen.
pub struct Gates {
    running: Box<[AtomicU32]>,
    freezing: Box<[AtomicBool]>,
}

impl Default for Gates {
    fn default() -> Self {
        let n = usize::from(SLOTS);
        Gates {
            running: (0..n).map(|_| AtomicU32::new(0)).collect(),
            freezing: (0..n).map(|_| AtomicBool::new(false)).collect(),
        }
    }
}

/// An admitted write (dropped when its command ends).
struct Admitted {
    gates: Arc<Gates>,
    slot: usize,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.gates.running[self.slot].fetch_sub(1, Ordering::SeqCst);
    }
}

impl Gates {
    /// Admits a write on `slot`, or refuses it while the slot is being frozen.
    pub fn admit(self: &Arc<Self>, slot: u16) -> Result<Admission, String> {
        let i = usize::from(slot).min(self.running.len() - 1);
        // Counted first, then the flag read (and the freezer does the reverse): a write
        // either sees the flag or is seen by the freezer's wait.
        self.running[i].fetch_add(1, Ordering::SeqCst);
        let admitted = Admitted { gates: self.clone(), slot: i };
        if self.freezing[i].load(Ordering::SeqCst) {
            return Err(TRYAGAIN.to_string());
        }
        Ok(Admission(Box::new(admitted)))
    }

    /// Raises `slot`'s flag and waits (at most [`DRAIN`]) until no admitted write is under
    /// way; false when some still were. The flag stays until [`Gates::open`].
    fn close(&self, slot: u16) -> bool {
        let i = usize::from(slot);
        self.freezing[i].store(true, Ordering::SeqCst);
        poll_until(DRAIN, || self.running[i].load(Ordering::SeqCst) == 0)
    }

    fn open(&self, slot: u16) {
        self.freezing[usize::from(slot)].store(false, Ordering::SeqCst);
    }
}

/// Checks `done` every millisecond or so until it holds (true) or `limit` has passed
/// (false). Blocks: an async worker hands its other tasks off first (the groups' entries are
/// driven on the same runtime).
fn poll_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    off_worker(|| loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    })
}

impl ClusterNode {
    /// Where a step for `partition` goes when this node does not lead it: `REDIRECT
    /// host:port` of the leader it knows.
    fn not_led_here(&self, partition: u16) -> String {
        match self.leader_addr(partition) {
            Some(addr) => format!("REDIRECT {addr}"),
            None => format!("CLUSTERDOWN partition {partition} has no known leader"),
        }
    }

    /// The replica of `partition` if this node leads it, else the error reply
    /// ([`ClusterNode::not_led_here`]).
    fn led(&self, partition: u16) -> Result<strata_replication::Replica, String> {
        self.leading(partition).ok_or_else(|| self.not_led_here(partition))
    }

    /// This node's replica of `partition`, if it leads it.
    fn leading(&self, partition: u16) -> Option<strata_replication::Replica> {
        let replica = self.raft().replica(GroupId(u32::from(partition)));
        replica.filter(|r| r.leadership().role == Role::Leader)
    }

    /// A step of a move on `partition` (`Router::move_step`).
    pub(super) fn move_step_here(
        &self,
        partition: u16,
        op: &str,
        slot: u16,
        peer: u16,
    ) -> Result<String, String> {
        if slot >= SLOTS {
            return Err(format!("ERR slot {slot} is out of range (0-16383)"));
        }
        if op.eq_ignore_ascii_case("state") {
            // The slot's state in the partition as its log has it (past a read barrier).
            let replica = self.led(partition)?;
            self.wait("a read barrier", replica.linearizable_read(false))
                .map_err(|e| format!("CLUSTERDOWN partition {partition}: {e}"))?;
            return Ok(self.ownership.describe(partition, slot));
        }
        let op = Op::named(op).ok_or_else(|| {
            format!(
                "ERR unknown move step '{op}' (state, import, copy, freeze, handoff, adopt, release, \
                 abort)"
            )
        })?;
        let replica = self.led(partition)?;
        let entry = encode_control(op, slot, peer);
        let propose = |entry: Vec<u8>| self.propose(partition, &replica, entry, "the move step");
        if op == Op::Freeze {
            // No write accepted before the freeze may land after it (module text).
            let group = GroupId(u32::from(partition));
            let drained = if !self.gates.close(slot) {
                Err(format!("TRYAGAIN writes to slot {slot} did not drain"))
            } else if !poll_until(DRAIN, || self.proposals.is_idle(group)) {
                Err(format!("TRYAGAIN partition {partition}'s proposals did not drain"))
            } else {
                Ok(())
            };
            let r = drained.and_then(|()| propose(entry));
            self.gates.open(slot);
            r
        } else {
            propose(entry)
        }
    }

    /// Proposes `entry` to `partition` (led here by `replica`) and waits for it to apply
    /// here; its reply's text, or the error reply (a reply starting with `-`, or `REDIRECT`
    /// when the lead moved, or the outcome unknown).
    fn propose(
        &self,
        partition: u16,
        replica: &strata_replication::Replica,
        entry: Vec<u8>,
        what: &str,
    ) -> Result<String, String> {
        let (_, reply) = self.wait(what, replica.write(entry)).map_err(|e| match e {
            RaftError::NotLeader { .. } => self.not_led_here(partition),
            other => format!("ERR {what}'s outcome is unknown: {other}"),
        })?;
        match reply.0.strip_prefix(b"-") {
            Some(err) => Err(String::from_utf8_lossy(err).into_owned()),
            None => Ok(String::from_utf8_lossy(&reply.0).into_owned()),
        }
    }

    /// Proposes an ingest entry of a slot's copy (`super::ingest`) to `partition`, which
    /// this node must lead (`Router::ingest_copy`); how many records it wrote.
    pub(super) fn ingest_copy_here(&self, partition: u16, entry: Vec<u8>) -> Result<usize, String> {
        let replica = self.led(partition)?;
        let text = self.propose(partition, &replica, entry, "the copy's ingestion")?;
        text.parse().map_err(|_| format!("ERR the ingestion replied `{text}`, not a count"))
    }

    /// Waits up to [`FREEZE_WAIT`] while `slot` is being frozen or is frozen in the
    /// partition that serves it here (`Router::wait_for_move`).
    pub(super) fn wait_for_move_here(&self, slot: u16) {
        poll_until(FREEZE_WAIT, || {
            let p = self.serving_partition(slot);
            let frozen = matches!(self.ownership.state(p, slot), Some(State::Frozen(_)));
            !frozen && !self.gates.freezing[usize::from(slot)].load(Ordering::SeqCst)
        });
    }

    /// Waits up to [`FREEZE_WAIT`] for a partition this node leads that is importing `slot`
    /// to adopt it (`Router::wait_for_adopt`); whether one did.
    pub(super) fn wait_for_adopt_here(&self, slot: u16) -> bool {
        let importing = self.ownership.find(slot, |p, state| {
            matches!(state, State::Importing(_) | State::Adopted(_)) && self.leading(p).is_some()
        });
        let Some(p) = importing else { return false };
        poll_until(FREEZE_WAIT, || matches!(self.ownership.state(p, slot), Some(State::Adopted(_))))
    }

    /// Whether this node may serve (`export`) or take in the copy of `slot` for `partition`
    /// (`Router::check_copy`).
    pub(super) fn check_copy_here(
        &self,
        partition: u16,
        slot: u16,
        export: bool,
    ) -> Result<(), String> {
        let replica = self.led(partition)?;
        // Everything committed before is applied: the state read below is the group's.
        self.wait("a read barrier", replica.linearizable_read(false))
            .map_err(|e| format!("CLUSTERDOWN partition {partition}: {e}"))?;
        let state = self.ownership.state(partition, slot);
        let fits = match state {
            Some(State::Copying(_) | State::Frozen(_) | State::HandedOff(_)) => export,
            Some(State::Importing(_)) => !export,
            _ => false,
        };
        if fits {
            Ok(())
        } else {
            let want = if export { "copied out of" } else { "imported into" };
            let now = self.ownership.describe(partition, slot);
            Err(format!("ERR slot {slot} is not being {want} partition {partition}: it is {now}"))
        }
    }
}
