//! Replication scenarios on in-process clusters (`harness.rs`): each node has its own Strata
//! `Db` in a temporary directory, all share an in-memory network whose links can be cut, and
//! every node holds several groups of the key-value application. In each scenario every
//! acknowledged write must be present exactly once on every surviving replica, and every
//! replica's data must be equal.

mod catch_up;
mod failover;
mod harness;
mod layering;
mod lost_disk;
mod membership;
mod removal;
mod tcp;
