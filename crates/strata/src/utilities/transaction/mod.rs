//! Transactions (the `rocksdb` crate's `OptimisticTransactionDB` and `Transaction`):
//!
//! - `optimistic.rs`: [`OptimisticTransactionDb`], a `Db` whose transactions are checked for
//!   conflicts when they commit, and [`OptimisticTransactionOptions`];
//! - `txn.rs`: [`Transaction`] (writes gathered in a `WriteBatchWithIndex`, keys
//!   tracked for the commit's check, save points) and [`TransactionIterator`].

mod optimistic;
#[cfg(test)]
mod tests;
mod txn;

pub use optimistic::{OptimisticTransactionDb, OptimisticTransactionOptions};
pub use txn::{Transaction, TransactionIterator};
