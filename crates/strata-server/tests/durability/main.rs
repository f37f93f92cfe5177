//! What survives: replies only after the covering sync, kill -9 under load, clean restarts,
//! hash encodings across a restart. One module per behaviour (`tests/README.md`).

#[path = "../common/mod.rs"]
mod common;

mod acknowledged_after_sync;
mod hash_encoding_restart;
mod kill_durability;
mod replica_restart;
mod replicated_partitions;
mod restart;
