//! `Options::load_latest`: the options of an existing DB and its column families.
//!
//! RocksDB reads them from the newest `OPTIONS-<n>` file. Strata writes no OPTIONS file
//! (options are given at every open and never stored), so this reads what the DB does record:
//! the names of its column families, from the MANIFEST (as `Db::list_cf`). Each family gets
//! default options with `env`'s file system and `cache` as block cache, the same as the DB
//! options returned; options the DB was opened with before are not recovered.

use std::path::Path;

use super::{ColumnFamilyDescriptor, Db};
use crate::error::Result;
use crate::options::{Env, Options};
use crate::sstable::Cache;

impl Options {
    /// The DB options and the column families (one descriptor per family, `default` first)
    /// of the DB at `path`, as the module doc says: default options with `env`'s file system
    /// and `cache` as block cache. `ignore_unknown_options` has no use (there is no options
    /// file to hold unknown ones). Fails as `Db::list_cf` does when `path` holds no DB.
    pub fn load_latest<P: AsRef<Path>>(
        path: P,
        env: Env,
        ignore_unknown_options: bool,
        cache: Cache,
    ) -> Result<(Options, Vec<ColumnFamilyDescriptor>)> {
        let _ = ignore_unknown_options;
        let mut opts = Options::default();
        opts.set_env(&env);
        opts.block_cache = Some(cache);
        let names = Db::list_cf(&opts, path.as_ref())?;
        let cfs = names.into_iter().map(|n| ColumnFamilyDescriptor::new(n, opts.clone())).collect();
        Ok((opts, cfs))
    }
}
