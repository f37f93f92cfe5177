//! `Options::load_latest`: the options of an existing DB and its column families, from its
//! newest OPTIONS file (`db/options_file.rs`), as RocksDB's `LoadLatestOptions`; and
//! `Options::load_from_file`, from a named OPTIONS file, as its `LoadOptionsFromFile`.
//!
//! The DB options start from the defaults with `env`'s file system and `cache` as block cache,
//! then take the file's `[DBOptions]` and the `default` family's sections (the crate's DB
//! options are also the default family's); each family's options start from those and take
//! its own sections. Objects made of code are the caller's to set again (the module doc of
//! `options_file`). A DB without an OPTIONS file (written before Strata wrote them) gives
//! its families' names from the MANIFEST, each with the starting options.

use std::path::Path;

use super::options_file;
use super::{ColumnFamilyDescriptor, Db};
use crate::error::Result;
use crate::options::{Env, Options};
use crate::sstable::Cache;

impl Options {
    /// The DB options and the column families (one descriptor per family, `default` first)
    /// of the DB at `path`, read from its newest OPTIONS file (module doc). With
    /// `ignore_unknown_options`, options this build does not know are skipped; without it
    /// they are `InvalidArgument` naming the file, line and option, as is a value of the
    /// wrong form either way. Fails as `Db::list_cf` does when `path` holds no DB.
    pub fn load_latest<P: AsRef<Path>>(
        path: P,
        env: Env,
        ignore_unknown_options: bool,
        cache: Cache,
    ) -> Result<(Options, Vec<ColumnFamilyDescriptor>)> {
        let opts = starting(&env, cache);
        let Some((file, text)) = options_file::read_latest(opts.fs.as_ref(), path.as_ref())? else {
            let names = Db::list_cf(&opts, path.as_ref())?;
            let cfs =
                names.into_iter().map(|n| ColumnFamilyDescriptor::new(n, opts.clone())).collect();
            return Ok((opts, cfs));
        };
        from_text(opts, &file, &text, ignore_unknown_options)
    }

    /// The DB options and the column families of the OPTIONS file `file` (RocksDB's
    /// `LoadOptionsFromFile`; a file of another DB, or one written by hand), read and applied
    /// as [`Options::load_latest`] applies a DB's newest (module doc). A file that is not one
    /// (no `[Version]` section first, a line that is neither a section nor `name=value`) is
    /// `InvalidArgument` naming the file and line.
    pub fn load_from_file<P: AsRef<Path>>(
        file: P,
        env: Env,
        ignore_unknown_options: bool,
        cache: Cache,
    ) -> Result<(Options, Vec<ColumnFamilyDescriptor>)> {
        let opts = starting(&env, cache);
        let file = file.as_ref();
        let text = options_file::read(opts.fs.as_ref(), file)?;
        from_text(opts, file, &text, ignore_unknown_options)
    }
}

/// The options a load starts from: the defaults, with `env`'s file system and `cache` as the
/// block cache (module doc).
fn starting(env: &Env, cache: Cache) -> Options {
    let mut opts = Options::default();
    opts.set_env(env);
    opts.block_cache = Some(cache);
    opts
}

/// `opts` with the options of `text` (the OPTIONS file `file`) applied: its `[DBOptions]` and
/// the `default` family's sections, and one descriptor per family (module doc).
fn from_text(
    mut opts: Options,
    file: &Path,
    text: &str,
    ignore_unknown_options: bool,
) -> Result<(Options, Vec<ColumnFamilyDescriptor>)> {
    let parsed = options_file::parse(file, text)?;
    options_file::apply(file, &mut opts, &parsed.db, ignore_unknown_options)?;
    let base = opts.clone();
    let mut cfs = Vec::with_capacity(parsed.families.len());
    for (name, pairs) in &parsed.families {
        let mut o = base.clone();
        options_file::apply(file, &mut o, pairs, ignore_unknown_options)?;
        if name == crate::column_family::DEFAULT_COLUMN_FAMILY_NAME {
            opts = o.clone();
        }
        cfs.push(ColumnFamilyDescriptor::new(name.clone(), o));
    }
    Ok((opts, cfs))
}
