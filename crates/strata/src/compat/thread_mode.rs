//! The `rocksdb` crate's thread modes. The crate builds each DB type twice: `SingleThreaded`
//! (column family handles borrowed from the DB, `create_cf` needing `&mut`) and
//! `MultiThreaded` (handles shared, `&self` everywhere). Strata's DB types are all of the
//! second kind, so a mode is only a marker: [`WithThreadMode<T, D>`] is `D` under the
//! crate's generic name, dereferencing to `D` for every method.

use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::path::Path;

use crate::cstr_like::CStrLike;
use crate::db::{ColumnFamilyDescriptor, Db};
use crate::error::Result;
use crate::options::Options;
use crate::utilities::{OptimisticTransactionDb, TransactionDb, TransactionDbOptions};

/// A thread mode of the `rocksdb` crate (sealed: [`SingleThreaded`] or [`MultiThreaded`]).
pub trait ThreadMode: sealed::Sealed {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::SingleThreaded {}
    impl Sealed for super::MultiThreaded {}
}

/// The `rocksdb` crate's default thread mode. In Strata both modes behave as the crate's
/// `MultiThreaded`: handles are `Arc`s and every method takes `&self`.
#[derive(Clone, Copy, Debug, Default)]
pub struct SingleThreaded;

/// The `rocksdb` crate's shared-handle thread mode.
#[derive(Clone, Copy, Debug, Default)]
pub struct MultiThreaded;

impl ThreadMode for SingleThreaded {}
impl ThreadMode for MultiThreaded {}

/// A DB of type `D` under a thread mode `T`: the crate's `DBWithThreadMode<T>`,
/// `TransactionDB<T>` and `OptimisticTransactionDB<T>`. It dereferences to `D`.
pub struct WithThreadMode<T, D> {
    db: D,
    mode: PhantomData<fn() -> T>,
}

/// The `rocksdb` crate's generic DB type: a [`Db`].
pub type DBWithThreadMode<T> = WithThreadMode<T, Db>;
/// The `rocksdb` crate's `TransactionDB<T>`: a [`TransactionDb`].
pub type TransactionDB<T = SingleThreaded> = WithThreadMode<T, TransactionDb>;
/// The `rocksdb` crate's `OptimisticTransactionDB<T>`: an [`OptimisticTransactionDb`].
pub type OptimisticTransactionDB<T = SingleThreaded> = WithThreadMode<T, OptimisticTransactionDb>;

impl<T: ThreadMode, D> WithThreadMode<T, D> {
    /// `db` under the mode `T`.
    pub fn new(db: D) -> Self {
        WithThreadMode { db, mode: PhantomData }
    }

    /// The DB itself.
    pub fn into_inner(self) -> D {
        self.db
    }
}

impl<T, D> Deref for WithThreadMode<T, D> {
    type Target = D;
    fn deref(&self) -> &D {
        &self.db
    }
}

impl<T, D> DerefMut for WithThreadMode<T, D> {
    fn deref_mut(&mut self) -> &mut D {
        &mut self.db
    }
}

impl<T, D: std::fmt::Debug> std::fmt::Debug for WithThreadMode<T, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.db.fmt(f)
    }
}

/// The constructors shared by `Db` and `OptimisticTransactionDb` (same arguments).
macro_rules! plain_constructors {
    ($d:ty) => {
        impl<T: ThreadMode> WithThreadMode<T, $d> {
            /// As the inner type's `open`.
            pub fn open(opts: &Options, path: impl AsRef<Path>) -> Result<Self> {
                <$d>::open(opts, path).map(Self::new)
            }

            /// As the inner type's `open_default`.
            pub fn open_default(path: impl AsRef<Path>) -> Result<Self> {
                <$d>::open_default(path).map(Self::new)
            }

            /// As the inner type's `open_cf`.
            pub fn open_cf<I, N>(opts: &Options, path: impl AsRef<Path>, names: I) -> Result<Self>
            where
                I: IntoIterator<Item = N>,
                N: AsRef<str>,
            {
                <$d>::open_cf(opts, path, names).map(Self::new)
            }

            /// As the inner type's `open_cf_descriptors`.
            pub fn open_cf_descriptors<I>(
                opts: &Options,
                path: impl AsRef<Path>,
                descriptors: I,
            ) -> Result<Self>
            where
                I: IntoIterator<Item = ColumnFamilyDescriptor>,
            {
                <$d>::open_cf_descriptors(opts, path, descriptors).map(Self::new)
            }
        }
    };
}

plain_constructors!(Db);
plain_constructors!(OptimisticTransactionDb);

impl<T: ThreadMode> WithThreadMode<T, TransactionDb> {
    /// As [`TransactionDb::open`].
    pub fn open(
        opts: &Options,
        txn_db_opts: &TransactionDbOptions,
        path: impl AsRef<Path>,
    ) -> Result<Self> {
        TransactionDb::open(opts, txn_db_opts, path).map(Self::new)
    }

    /// As [`TransactionDb::open_default`].
    pub fn open_default(path: impl AsRef<Path>) -> Result<Self> {
        TransactionDb::open_default(path).map(Self::new)
    }

    /// As [`TransactionDb::open_cf`].
    pub fn open_cf<I, N>(
        opts: &Options,
        txn_db_opts: &TransactionDbOptions,
        path: impl AsRef<Path>,
        names: I,
    ) -> Result<Self>
    where
        I: IntoIterator<Item = N>,
        N: AsRef<str>,
    {
        TransactionDb::open_cf(opts, txn_db_opts, path, names).map(Self::new)
    }

    /// As [`TransactionDb::open_cf_descriptors`].
    pub fn open_cf_descriptors<I>(
        opts: &Options,
        txn_db_opts: &TransactionDbOptions,
        path: impl AsRef<Path>,
        descriptors: I,
    ) -> Result<Self>
    where
        I: IntoIterator<Item = ColumnFamilyDescriptor>,
    {
        TransactionDb::open_cf_descriptors(opts, txn_db_opts, path, descriptors).map(Self::new)
    }
}

/// The `rocksdb` crate's `TransactionDB` has its family creation and dropping once per mode
/// (`&mut self` single-threaded, `&self` multi-threaded) and its property reads for the
/// multi-threaded mode only; programs that never name the mode get it inferred from those
/// calls (`let db = TransactionDB::open(..)?; db.create_cf(..)` is multi-threaded). The same
/// methods here give the same inference.
impl WithThreadMode<SingleThreaded, TransactionDb> {
    /// As [`Db::create_cf`]; `&mut self`, as the crate's single-threaded mode.
    pub fn create_cf<N: AsRef<str>>(&mut self, name: N, opts: &Options) -> Result<()> {
        Db::create_cf(self, name, opts)
    }

    /// As [`Db::drop_cf`]; `&mut self`, as the crate's single-threaded mode.
    pub fn drop_cf(&mut self, name: &str) -> Result<()> {
        Db::drop_cf(self, name)
    }
}

impl WithThreadMode<MultiThreaded, TransactionDb> {
    /// As [`Db::create_cf`]; `&self`, as the crate's multi-threaded mode.
    pub fn create_cf<N: AsRef<str>>(&self, name: N, opts: &Options) -> Result<()> {
        Db::create_cf(self, name, opts)
    }

    /// As [`Db::drop_cf`]; `&self`, as the crate's multi-threaded mode.
    pub fn drop_cf(&self, name: &str) -> Result<()> {
        Db::drop_cf(self, name)
    }

    /// As [`Db::property_value`].
    pub fn property_value(&self, name: impl CStrLike) -> Result<Option<String>> {
        Db::property_value(self, name)
    }

    /// As [`Db::property_int_value`].
    pub fn property_int_value(&self, name: impl CStrLike) -> Result<Option<u64>> {
        Db::property_int_value(self, name)
    }
}
