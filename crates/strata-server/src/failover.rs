//! FAILOVER's state: a master handing its role to one of its replicas (Redis 6.2's
//! coordinated switchover; `commands::failover` runs it, the replication link finishes it).
//!
//! ```text
//! no-failover --FAILOVER--> waiting-for-sync    writes held (`pause`), the replicas'
//!                                               acknowledged offsets watched
//! waiting-for-sync --a replica (the target, when named) acknowledged the stream's end,
//!                    or the timeout passed under FORCE--> failover-in-progress
//!                                               this server follows that replica, its
//!                                               PSYNC saying FAILOVER: the replica becomes
//!                                               a master and resumes this server's stream
//! failover-in-progress --the PSYNC answered (CONTINUE or FULLRESYNC)--> no-failover
//!                                               a replica now; the held writes get READONLY
//! any --FAILOVER ABORT, the timeout without FORCE, the PSYNC refused--> no-failover
//!                                               a master again (from failover-in-progress
//!                                               as after REPLICAOF NO ONE)
//! ```

use std::time::Instant;

use parking_lot::Mutex;

use crate::master_link::Target;

/// Where a failover is (INFO's `master_failover_state` in [`Phase::info_word`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// None under way.
    Idle,
    /// Writes held until a replica acknowledges the stream's end.
    WaitForSync,
    /// Following the chosen replica, its PSYNC not yet answered.
    InProgress,
}

impl Phase {
    /// INFO replication's `master_failover_state`.
    pub fn info_word(self) -> &'static str {
        match self {
            Phase::Idle => "no-failover",
            Phase::WaitForSync => "waiting-for-sync",
            Phase::InProgress => "failover-in-progress",
        }
    }
}

/// What FAILOVER asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The replica named by `TO host port`; `None`: the first to catch up.
    pub target: Option<Target>,
    /// When waiting for it ends (`TIMEOUT`); `None`: never (ABORT ends it).
    pub deadline: Option<Instant>,
    /// `FORCE`: at the deadline, fail over to the target whether or not it caught up.
    pub force: bool,
}

/// The server's failover (module doc).
#[derive(Debug, Default)]
pub struct Failover {
    state: Mutex<Option<(Phase, Plan)>>,
}

impl Failover {
    /// Where it is.
    pub fn phase(&self) -> Phase {
        self.state.lock().as_ref().map_or(Phase::Idle, |(p, _)| *p)
    }

    /// Starts waiting for a replica under `plan`; false when a failover is under way.
    pub fn begin(&self, plan: Plan) -> bool {
        let mut st = self.state.lock();
        if st.is_some() {
            return false;
        }
        *st = Some((Phase::WaitForSync, plan));
        true
    }

    /// The plan while waiting for a replica, `None` otherwise.
    pub fn waiting(&self) -> Option<Plan> {
        match &*self.state.lock() {
            Some((Phase::WaitForSync, plan)) => Some(plan.clone()),
            _ => None,
        }
    }

    /// From waiting to in progress, failing over to `to`; false when it was no longer
    /// waiting (aborted meanwhile).
    pub fn proceed(&self, to: Target) -> bool {
        let mut st = self.state.lock();
        match st.as_mut() {
            Some((phase @ Phase::WaitForSync, plan)) => {
                *phase = Phase::InProgress;
                plan.target = Some(to);
                true
            }
            _ => false,
        }
    }

    /// Ends it, whatever the outcome: the phase it was in and its target, `None` when none
    /// was under way.
    pub fn end(&self) -> Option<(Phase, Option<Target>)> {
        self.state.lock().take().map(|(p, plan)| (p, plan.target))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> Target {
        Target { host: "127.0.0.1".into(), port: 7000 }
    }

    #[test]
    fn a_failover_waits_then_proceeds_once_and_ends() {
        let f = Failover::default();
        assert_eq!((f.phase(), f.phase().info_word()), (Phase::Idle, "no-failover"));
        let plan = Plan { target: None, deadline: None, force: false };
        assert!(f.begin(plan.clone()));
        assert!(!f.begin(plan.clone()), "one at a time");
        assert_eq!(f.waiting(), Some(plan));
        assert_eq!(f.phase().info_word(), "waiting-for-sync");
        assert!(f.proceed(target()));
        assert!(!f.proceed(target()), "no longer waiting");
        assert_eq!((f.waiting(), f.phase().info_word()), (None, "failover-in-progress"));
        assert_eq!(f.end(), Some((Phase::InProgress, Some(target()))));
        assert_eq!((f.end(), f.phase()), (None, Phase::Idle));
    }

    #[test]
    fn an_aborted_failover_does_not_proceed() {
        let f = Failover::default();
        assert!(f.begin(Plan { target: Some(target()), deadline: None, force: false }));
        assert_eq!(f.end(), Some((Phase::WaitForSync, Some(target()))));
        assert!(!f.proceed(target()));
        assert_eq!(f.phase(), Phase::Idle);
    }
}
