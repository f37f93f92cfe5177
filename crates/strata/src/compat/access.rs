//! `DBAccess`: the `rocksdb` crate's trait of what every readable DB type offers (the DBs, the
//! thread-mode wrappers and a transaction), so programs can read generically, and the
//! crate's `SnapshotWithThreadMode::new(&db)`.

use crate::column_family::AsColumnFamilyRef;
use crate::db::{Db, DbPinnableSlice};
use crate::error::Result;
use crate::options::ReadOptions;
use crate::snapshot::{SnapshotHandle, SnapshotWithThreadMode};
use crate::utilities::{OptimisticTransactionDb, Transaction, TransactionDb};

use super::thread_mode::WithThreadMode;

/// Reads any DB type answers (the `rocksdb` crate's `DBAccess`, without its raw-pointer
/// methods).
pub trait DBAccess {
    /// A snapshot of what this reads now: the DB's current state, or a transaction's own
    /// snapshot when it took one.
    fn snapshot_handle(&self) -> SnapshotHandle;

    /// The value of `key` in the default column family.
    fn get_opt<K: AsRef<[u8]>>(&self, key: K, readopts: &ReadOptions) -> Result<Option<Vec<u8>>>;

    /// The value of `key` in `cf`.
    fn get_cf_opt<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        readopts: &ReadOptions,
    ) -> Result<Option<Vec<u8>>>;

    /// The value of `key` in the default column family, pinned where the DB can.
    fn get_pinned_opt<K: AsRef<[u8]>>(
        &self,
        key: K,
        readopts: &ReadOptions,
    ) -> Result<Option<DbPinnableSlice>>;

    /// The value of `key` in `cf`, pinned where the DB can.
    fn get_pinned_cf_opt<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        readopts: &ReadOptions,
    ) -> Result<Option<DbPinnableSlice>>;

    /// The values of `keys` in the default column family, in order.
    fn multi_get_opt<K, I>(&self, keys: I, readopts: &ReadOptions) -> Vec<Result<Option<Vec<u8>>>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = K>;

    /// The values of `(cf, key)` pairs, in order.
    fn multi_get_cf_opt<'b, K, I, W>(
        &self,
        keys_cf: I,
        readopts: &ReadOptions,
    ) -> Vec<Result<Option<Vec<u8>>>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (&'b W, K)>,
        W: AsColumnFamilyRef + 'b;
}

impl DBAccess for Db {
    fn snapshot_handle(&self) -> SnapshotHandle {
        self.snapshot().into_handle()
    }

    fn get_opt<K: AsRef<[u8]>>(&self, key: K, readopts: &ReadOptions) -> Result<Option<Vec<u8>>> {
        Db::get_opt(self, key, readopts)
    }

    fn get_cf_opt<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        readopts: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        Db::get_cf_opt(self, cf, key, readopts)
    }

    fn get_pinned_opt<K: AsRef<[u8]>>(
        &self,
        key: K,
        readopts: &ReadOptions,
    ) -> Result<Option<DbPinnableSlice>> {
        Db::get_pinned_opt(self, key, readopts)
    }

    fn get_pinned_cf_opt<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        readopts: &ReadOptions,
    ) -> Result<Option<DbPinnableSlice>> {
        Db::get_pinned_cf_opt(self, cf, key, readopts)
    }

    fn multi_get_opt<K, I>(&self, keys: I, readopts: &ReadOptions) -> Vec<Result<Option<Vec<u8>>>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = K>,
    {
        Db::multi_get_opt(self, keys, readopts)
    }

    fn multi_get_cf_opt<'b, K, I, W>(
        &self,
        keys_cf: I,
        readopts: &ReadOptions,
    ) -> Vec<Result<Option<Vec<u8>>>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (&'b W, K)>,
        W: AsColumnFamilyRef + 'b,
    {
        Db::multi_get_cf_opt(self, keys_cf, readopts)
    }
}

/// `DBAccess` for a type that reads as `inner(self)` does: the transaction DBs (through the
/// [`Db`] they dereference to) and the thread-mode wrappers (through the DB they hold).
macro_rules! access_through {
    ([$($g:tt)*] $t:ty, |$s:ident| $inner:expr) => {
        impl<$($g)*> DBAccess for $t {
            fn snapshot_handle(&self) -> SnapshotHandle {
                let $s = self;
                DBAccess::snapshot_handle($inner)
            }

            fn get_opt<K: AsRef<[u8]>>(
                &self,
                key: K,
                readopts: &ReadOptions,
            ) -> Result<Option<Vec<u8>>> {
                let $s = self;
                DBAccess::get_opt($inner, key, readopts)
            }

            fn get_cf_opt<K: AsRef<[u8]>>(
                &self,
                cf: &impl AsColumnFamilyRef,
                key: K,
                readopts: &ReadOptions,
            ) -> Result<Option<Vec<u8>>> {
                let $s = self;
                DBAccess::get_cf_opt($inner, cf, key, readopts)
            }

            fn get_pinned_opt<K: AsRef<[u8]>>(
                &self,
                key: K,
                readopts: &ReadOptions,
            ) -> Result<Option<DbPinnableSlice>> {
                let $s = self;
                DBAccess::get_pinned_opt($inner, key, readopts)
            }

            fn get_pinned_cf_opt<K: AsRef<[u8]>>(
                &self,
                cf: &impl AsColumnFamilyRef,
                key: K,
                readopts: &ReadOptions,
            ) -> Result<Option<DbPinnableSlice>> {
                let $s = self;
                DBAccess::get_pinned_cf_opt($inner, cf, key, readopts)
            }

            fn multi_get_opt<K, I>(
                &self,
                keys: I,
                readopts: &ReadOptions,
            ) -> Vec<Result<Option<Vec<u8>>>>
            where
                K: AsRef<[u8]>,
                I: IntoIterator<Item = K>,
            {
                let $s = self;
                DBAccess::multi_get_opt($inner, keys, readopts)
            }

            fn multi_get_cf_opt<'b, K, I, W>(
                &self,
                keys_cf: I,
                readopts: &ReadOptions,
            ) -> Vec<Result<Option<Vec<u8>>>>
            where
                K: AsRef<[u8]>,
                I: IntoIterator<Item = (&'b W, K)>,
                W: AsColumnFamilyRef + 'b,
            {
                let $s = self;
                DBAccess::multi_get_cf_opt($inner, keys_cf, readopts)
            }
        }
    };
}

access_through!([] TransactionDb, |s| s.db());
access_through!([] OptimisticTransactionDb, |s| s.db());
access_through!([T, D: DBAccess] WithThreadMode<T, D>, |s| &**s);

/// A transaction reads its own writes over its snapshot (or the latest state).
impl<DB> DBAccess for Transaction<'_, DB> {
    fn snapshot_handle(&self) -> SnapshotHandle {
        match self.read_snapshot() {
            Some(s) => s.clone(),
            None => DBAccess::snapshot_handle(self.base_db()),
        }
    }

    fn get_opt<K: AsRef<[u8]>>(&self, key: K, readopts: &ReadOptions) -> Result<Option<Vec<u8>>> {
        Transaction::get_opt(self, key, readopts)
    }

    fn get_cf_opt<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        readopts: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        Transaction::get_cf_opt(self, cf, key, readopts)
    }

    fn get_pinned_opt<K: AsRef<[u8]>>(
        &self,
        key: K,
        readopts: &ReadOptions,
    ) -> Result<Option<DbPinnableSlice>> {
        Ok(Transaction::get_opt(self, key, readopts)?.map(DbPinnableSlice::owned))
    }

    fn get_pinned_cf_opt<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        readopts: &ReadOptions,
    ) -> Result<Option<DbPinnableSlice>> {
        Ok(Transaction::get_cf_opt(self, cf, key, readopts)?.map(DbPinnableSlice::owned))
    }

    fn multi_get_opt<K, I>(&self, keys: I, readopts: &ReadOptions) -> Vec<Result<Option<Vec<u8>>>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = K>,
    {
        Transaction::multi_get_opt(self, keys, readopts)
    }

    fn multi_get_cf_opt<'b, K, I, W>(
        &self,
        keys_cf: I,
        readopts: &ReadOptions,
    ) -> Vec<Result<Option<Vec<u8>>>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (&'b W, K)>,
        W: AsColumnFamilyRef + 'b,
    {
        keys_cf.into_iter().map(|(cf, k)| Transaction::get_cf_opt(self, cf, k, readopts)).collect()
    }
}

impl<'a, D: DBAccess> SnapshotWithThreadMode<'a, D> {
    /// A snapshot of what `db` reads now (the `rocksdb` crate's constructor): for a DB its
    /// current state; for a transaction that took a snapshot, that snapshot.
    pub fn new(db: &'a D) -> Self {
        Self::from_handle(db.snapshot_handle())
    }
}
