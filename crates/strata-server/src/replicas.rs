//! The replicas following this server (`sync_source` serves each its dataset and then the
//! replication stream): what INFO replication, ROLE, WAIT and `min-replicas-to-write` read.
//! Each is known by its connection's client id, from its SYNC until its connection ends;
//! WAIT's clients are served again at each acknowledgement (`commands::server`).

use parking_lot::Mutex;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

/// Where a replica stands, as INFO names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaState {
    /// Its dataset is being written (`wait_bgsave`).
    WaitBgsave,
    /// Its dataset is being sent (`send_bulk`).
    SendBulk,
    /// It reads the stream (`online`).
    Online,
}

impl ReplicaState {
    /// INFO's word.
    pub fn name(self) -> &'static str {
        match self {
            ReplicaState::WaitBgsave => "wait_bgsave",
            ReplicaState::SendBulk => "send_bulk",
            ReplicaState::Online => "online",
        }
    }
}

/// One replica.
#[derive(Debug, Clone)]
pub struct Replica {
    /// Its connection's client id.
    pub id: u64,
    /// Its address as seen from here.
    pub ip: String,
    /// The port it listens on (`REPLCONF listening-port`; 0 when not told).
    pub port: u16,
    pub state: ReplicaState,
    /// The stream offset it acknowledged last (`REPLCONF ACK`).
    pub ack: u64,
    /// When it last acknowledged (or connected).
    pub ack_at: Instant,
}

/// The replicas of one server.
#[derive(Default)]
pub struct Replicas {
    list: Mutex<Vec<Replica>>,
    /// Full resynchronizations served (INFO's `sync_full`).
    pub full_syncs: AtomicU64,
    /// Partial resynchronizations accepted (INFO's `sync_partial_ok`).
    pub partial_syncs: AtomicU64,
    /// PSYNCs naming a history that got a full resynchronization (`sync_partial_err`).
    pub partial_refused: AtomicU64,
}

impl Replicas {
    /// CONFIG RESETSTAT: the sync counters start again (INFO's `sync_full`,
    /// `sync_partial_ok`, `sync_partial_err`), as Redis's do.
    pub fn reset_stats(&self) {
        for c in [&self.full_syncs, &self.partial_syncs, &self.partial_refused] {
            c.store(0, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Registers a replica.
    pub fn add(&self, r: Replica) {
        self.list.lock().push(r);
    }

    /// Forgets replica `id`.
    pub fn remove(&self, id: u64) {
        self.list.lock().retain(|r| r.id != id);
    }

    /// Sets replica `id`'s state.
    pub fn set_state(&self, id: u64, state: ReplicaState) {
        if let Some(r) = self.list.lock().iter_mut().find(|r| r.id == id) {
            r.state = state;
        }
    }

    /// Replica `id` acknowledged offset `ack`.
    pub fn ack(&self, id: u64, ack: u64) {
        if let Some(r) = self.list.lock().iter_mut().find(|r| r.id == id) {
            r.ack = r.ack.max(ack);
            r.ack_at = Instant::now();
        }
    }

    /// Whether connection `id` is a replica's.
    pub fn has(&self, id: u64) -> bool {
        self.list.lock().iter().any(|r| r.id == id)
    }

    /// The client ids of the replicas connected now.
    pub fn ids(&self) -> Vec<u64> {
        self.list.lock().iter().map(|r| r.id).collect()
    }

    /// Whether no replica is connected.
    pub fn is_empty(&self) -> bool {
        self.list.lock().is_empty()
    }

    /// The replicas, in the order they came.
    pub fn list(&self) -> Vec<Replica> {
        self.list.lock().clone()
    }

    /// How many online replicas acknowledged offset `at` or later.
    pub fn holding(&self, at: u64) -> usize {
        self.list.lock().iter().filter(|r| r.state == ReplicaState::Online && r.ack >= at).count()
    }

    /// How many online replicas acknowledged within `max_lag_secs` (Redis's good replicas).
    pub fn good(&self, max_lag_secs: u64) -> usize {
        self.list
            .lock()
            .iter()
            .filter(|r| {
                r.state == ReplicaState::Online && r.ack_at.elapsed().as_secs() <= max_lag_secs
            })
            .count()
    }
}
