//! Transactions (the `rocksdb` crate's `OptimisticTransactionDB`, `TransactionDB` and
//! `Transaction`):
//!
//! - `optimistic.rs`: [`OptimisticTransactionDb`], a `Db` whose transactions are checked for
//!   conflicts when they commit, and [`OptimisticTransactionOptions`];
//! - `pessimistic.rs`: [`TransactionDb`], a `Db` whose transactions lock keys as they go, with
//!   [`TransactionDbOptions`] and [`TransactionOptions`];
//! - `lock.rs`: the point-lock table (timeouts, deadlock detection, expiration);
//! - `txn.rs`: [`Transaction`] of either kind (writes gathered in a `WriteBatchWithIndex`,
//!   keys tracked or locked, save points, two-phase commit) and [`TransactionIterator`].

mod lock;
mod optimistic;
mod pessimistic;
#[cfg(test)]
mod pessimistic_tests;
#[cfg(test)]
mod tests;
mod txn;

pub use optimistic::{OptimisticTransactionDb, OptimisticTransactionOptions};
pub use pessimistic::{TransactionDb, TransactionDbOptions, TransactionOptions};
pub use txn::{Transaction, TransactionIterator, TransactionSnapshot};
