//! Opening and recovering a DB: process kills and power loss, damaged files, open errors and
//! interrupted creations, WAL replay, damage, recycling and zero-filled tails, read-only opens,
//! repair and verification. One module per behaviour (`tests/README.md`).

mod avoid_flush_during_recovery;
mod corruption;
mod crash_recovery;
mod open_errors;
mod read_only_open;
mod reopen_after_failed_open;
mod reopen_after_interrupted_create;
mod repair;
mod replay_after_partial_flush;
mod verify_finds_damage;
mod wal_damage_after_clean_close;
mod wal_recycling;
mod wal_zeros_ahead;
