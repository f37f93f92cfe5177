//! The master's side of Redis's replication cron, a round a second
//! ([`ReplicationCron::round`]):
//!
//! - **PINGs**: every `repl-ping-replica-period` rounds, while the server is a master with a
//!   replica reading its stream, a PING goes into the stream (one for all the replicas, as
//!   redis-server sends it; none while a FAILOVER holds the writes, whose replica must
//!   acknowledge the very end). It keeps an idle link's offsets moving and its replica's
//!   `repl-timeout` from firing. A change of the period counts from the next round.
//! - **`repl-backlog-ttl`**: a master that had no replica for that many seconds frees its
//!   replication stream (`storage::backlog`, `Backlog::free_unless`), as redis-server frees
//!   its backlog; 0 keeps it for good. Only a master: a replica keeps its master's stream for
//!   the replicas and the failover it may serve later (redis-server's replicas never free
//!   theirs). Why: once a replica came, every write command is encoded into the stream for as
//!   long as it is on, and a clean restart keeps it on (`storage::repl_ids`), whether or not
//!   a replica comes back. The time counts from the last replica's leaving, or from when the
//!   stream was first seen without one: each round notes how many readers the stream has and
//!   how many it registered since the start, so a replica that came and went between two
//!   rounds starts the time again.

use std::time::{Duration, Instant};

use crate::state::Shared;

/// The setting's default (Redis's: an hour).
const DEFAULT_TTL: Duration = Duration::from_secs(3600);

/// What the rounds remember (module doc).
#[derive(Debug, Default)]
pub struct ReplicationCron {
    /// Rounds since the start (Redis's `replication_cron_loops`).
    loops: u64,
    /// Since when the stream has had no reader, and the registrations counted then.
    alone: Option<(Instant, u64)>,
}

impl ReplicationCron {
    /// One round at `now` (module doc). Blocking (freeing the stream waits for its gate):
    /// call it off the async workers.
    pub fn round(&mut self, sh: &Shared, now: Instant) {
        self.ping(sh);
        self.loops += 1;
        self.free_when_alone(sh, now);
    }

    /// A PING into the stream every `repl-ping-replica-period` rounds (module doc).
    fn ping(&self, sh: &Shared) {
        let backlog = &sh.engine().backlog;
        if !self.loops.is_multiple_of(ping_period(sh))
            || !backlog.is_active()
            || backlog.readers_seen().0 == 0
            || sh.master_link.following()
            || sh.failover.phase() != crate::failover::Phase::Idle
        {
            return;
        }
        backlog.append_raw(&[b"PING"]);
    }

    /// Frees the stream when the server, a master, had no replica for `repl-backlog-ttl`;
    /// whether it did.
    fn free_when_alone(&mut self, sh: &Shared, now: Instant) -> bool {
        let backlog = &sh.engine().backlog;
        let (reading, registered) = backlog.readers_seen();
        if !backlog.is_active() || reading > 0 || sh.master_link.following() {
            self.alone = None;
            return false;
        }
        let since = match self.alone {
            Some((since, seen)) if seen == registered => since,
            _ => {
                self.alone = Some((now, registered));
                now
            }
        };
        let Some(ttl) = ttl(sh) else { return false };
        if now.duration_since(since) < ttl {
            return false;
        }
        let freed = backlog.free_unless(|| sh.master_link.following());
        if freed {
            self.alone = None;
            eprintln!(
                "Replication backlog freed after {} seconds without connected replicas.",
                ttl.as_secs()
            );
        }
        freed
    }
}

/// `repl-ping-replica-period` as set now, in rounds (seconds), at least 1.
fn ping_period(sh: &Shared) -> u64 {
    let set = sh.params.read().get("repl-ping-replica-period").and_then(|v| v.parse().ok());
    set.unwrap_or(10u64).max(1)
}

/// `repl-backlog-ttl` as set now; `None` when 0 (never free).
fn ttl(sh: &Shared) -> Option<Duration> {
    let set = sh.params.read().get("repl-backlog-ttl").and_then(|v| v.parse::<u64>().ok());
    match set {
        Some(0) => None,
        Some(s) => Some(Duration::from_secs(s)),
        None => Some(DEFAULT_TTL),
    }
}
