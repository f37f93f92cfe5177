//! Strata: an embedded, persistent LSM-tree key-value store.
#![allow(dead_code)] // bring-up only: removed once every module is wired into Db.

pub mod env;
pub mod error;
pub mod key;
pub mod types;
pub mod write_batch;

pub(crate) mod cache;
pub(crate) mod iterator;
pub(crate) mod memtable;
pub(crate) mod sstable;
pub(crate) mod util;
pub(crate) mod version;
pub(crate) mod wal;

pub use error::{Error, Result};
pub use types::{FileNumber, Level, SeqNo, ValueType};
pub use wal::WalRecoveryMode;
pub use write_batch::WriteBatch;
