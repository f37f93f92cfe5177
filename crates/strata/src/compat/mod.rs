//! The `rocksdb` crate's shapes that Strata's own API does not have: its thread-mode
//! generics, the `DBAccess` trait, and the names and signatures its users' programs call
//! (`docs/rocksdb-compat.md` lists every public item of the crate and Strata's status for
//! it). Everything here is a thin layer over Strata's own types: no engine behaviour lives in
//! this module.

mod access;
pub mod backup;
pub mod checkpoint;
pub mod properties;
mod thread_mode;

pub use access::DBAccess;
pub use thread_mode::{
    DBWithThreadMode, MultiThreaded, OptimisticTransactionDB, SingleThreaded, ThreadMode,
    TransactionDB, WithThreadMode,
};
