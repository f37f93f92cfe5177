//! The commands that open a DB (`docs/cli.md`), and the dispatch of every command.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use std::sync::Arc;
use strata::env::OsFs;
use strata::inspect::{all_intact, read_manifest, verify_db, EditItem};

use strata::{
    BackupEngine, Cache, Checkpoint, ColumnFamily, ColumnFamilyDescriptor, Db, Direction, Env,
    IteratorMode, Options, ReadOptions,
};

use crate::dump::{dump_blob, dump_manifest, dump_sst, dump_wal};
use crate::fmt::{json_string, Bytes};
use crate::{Cli, Command, Outcome};

pub fn run(cli: &Cli, out: &mut dyn Write) -> Result<Outcome> {
    let f = Bytes::from_flag(cli.hex);
    match &cli.command {
        Command::DumpSst { file, verify, no_entries } => {
            dump_sst(out, f, file, *verify, !no_entries)
        }
        Command::DumpWal { file } => dump_wal(out, f, file),
        Command::DumpBlob { file } => dump_blob(out, f, file),
        Command::DumpManifest { file: Some(file) } => dump_manifest(out, f, file),
        Command::DumpManifest { file: None } => {
            let db = db_path(cli)?;
            dump_manifest(out, f, &current_manifest(db)?)
        }
        Command::Get { key } => {
            let db = open_read_only(cli)?;
            let key = f.parse(key, "key")?;
            let value = match family(cli, &db)? {
                None => db.get(&key)?,
                Some(cf) => db.get_cf(&cf, &key)?,
            };
            match value {
                Some(v) => {
                    writeln!(out, "{}", f.show(&v))?;
                    Ok(Outcome::Ok)
                }
                None => {
                    eprintln!("strata: key '{}' not found", f.show(&key));
                    Ok(Outcome::Negative)
                }
            }
        }
        Command::Put { key, value } => {
            let db = open_read_write(cli)?;
            let (key, value) = (f.parse(key, "key")?, f.parse(value, "value")?);
            match family(cli, &db)? {
                None => db.put(key, value)?,
                Some(cf) => db.put_cf(&cf, key, value)?,
            }
            Ok(Outcome::Ok)
        }
        Command::Delete { key } => {
            let db = open_read_write(cli)?;
            let key = f.parse(key, "key")?;
            match family(cli, &db)? {
                None => db.delete(key)?,
                Some(cf) => db.delete_cf(&cf, key)?,
            }
            Ok(Outcome::Ok)
        }
        Command::Scan { from, to, limit, json } => {
            let from = from.as_deref().map(|k| f.parse(k, "--from")).transpose()?;
            let to = to.as_deref().map(|k| f.parse(k, "--to")).transpose()?;
            let db = open_read_only(cli)?;
            let cf = family(cli, &db)?;
            scan(out, f, &db, cf.as_ref(), from.as_deref(), to, *limit, *json)
        }
        Command::Lsm { json } => {
            let db = open_read_only(cli)?;
            lsm(out, f, &db, *json)
        }
        Command::Verify => verify(out, db_path(cli)?),
        Command::Repair => {
            let path = db_path(cli)?;
            let report = Db::repair(&Options::default(), path)?;
            write!(out, "{report}")?;
            Ok(Outcome::Ok)
        }
        Command::Checkpoint { dir } => {
            let db = open_read_write(cli)?;
            let cp = Checkpoint::create(&db, dir)?;
            writeln!(
                out,
                "checkpoint {} at sequence {}: {} tables linked, {} copied",
                dir.display(),
                cp.sequence,
                cp.tables_linked,
                cp.tables_copied
            )?;
            Ok(Outcome::Ok)
        }
        Command::Backup { backup_dir } => {
            let db = open_read_write(cli)?;
            let engine = BackupEngine::open(&Options::default(), backup_dir)?;
            let info = engine.create_new_backup(&db)?;
            writeln!(
                out,
                "backup {} at sequence {}: {} files, {} bytes",
                info.id, info.sequence, info.files, info.size
            )?;
            Ok(Outcome::Ok)
        }
        Command::ListBackups { backup_dir } => {
            let engine = open_backups(backup_dir)?;
            for info in engine.backups()? {
                writeln!(
                    out,
                    "backup {}: sequence {}, {} files, {} bytes, created {}",
                    info.id, info.sequence, info.files, info.size, info.timestamp
                )?;
            }
            Ok(Outcome::Ok)
        }
        Command::Restore { backup_dir, id } => {
            let target = db_path(cli)?;
            let engine = open_backups(backup_dir)?;
            let info = match id {
                Some(id) => engine.restore_from_backup(*id, target)?,
                None => engine.restore_from_latest_backup(target)?,
            };
            writeln!(
                out,
                "restored backup {} (sequence {}) into {}",
                info.id,
                info.sequence,
                target.display()
            )?;
            Ok(Outcome::Ok)
        }
        Command::Compact { from, to } => {
            let from = from.as_deref().map(|k| f.parse(k, "--from")).transpose()?;
            let to = to.as_deref().map(|k| f.parse(k, "--to")).transpose()?;
            let db = open_read_write(cli)?;
            match family(cli, &db)? {
                None => db.compact_range(from, to)?,
                Some(cf) => db.compact_range_cf(&cf, from, to)?,
            }
            writeln!(out, "compacted")?;
            Ok(Outcome::Ok)
        }
        Command::Properties { name } => {
            let db = open_read_only(cli)?;
            let value = match family(cli, &db)? {
                None => db.property_value(name)?,
                Some(cf) => db.property_value_cf(&cf, name)?,
            };
            match value {
                Some(v) => {
                    writeln!(out, "{}", v.trim_end())?;
                    Ok(Outcome::Ok)
                }
                None => bail!("unknown property {name:?}"),
            }
        }
    }
}

fn db_path(cli: &Cli) -> Result<&Path> {
    match &cli.db {
        Some(p) => Ok(p),
        None => bail!("this command needs --db DIR"),
    }
}

/// An existing backup directory (reading one must not create it).
fn open_backups(dir: &Path) -> Result<BackupEngine> {
    if !dir.is_dir() {
        bail!("{} is not a backup directory (it does not exist)", dir.display());
    }
    Ok(BackupEngine::open(&Options::default(), dir)?)
}

/// The options of the DB at `path` and of each of its families but `default`: those of its
/// newest OPTIONS file (`Options::load_latest`, options this build does not know skipped),
/// so a compaction writes tables as the DB's own opens do; defaults for a DB without one,
/// and for a family the MANIFEST has and the file does not (created just before a crash).
/// Each with enough levels: one more than the deepest level its MANIFEST adds a table to (a
/// universal or tiered DB keeps its sorted runs down to its `num_levels`, often 40, which an
/// open with the default 7 would refuse). No DB there yet: defaults, no families (the open
/// reports that).
fn db_options(path: &Path) -> Result<(Options, Vec<ColumnFamilyDescriptor>)> {
    if !path.join("CURRENT").is_file() {
        return Ok((Options::default(), Vec::new()));
    }
    let cache = Cache::new_lru_cache(Options::default().block_cache_size);
    let (mut opts, saved) = Options::load_latest(path, Env::new()?, true, cache)
        .with_context(|| format!("reading the options of {}", path.display()))?;
    let manifest = current_manifest(path)?;
    let records = read_manifest(&OsFs, &manifest)
        .with_context(|| format!("reading MANIFEST {}", manifest.display()))?;
    let deepest = records
        .iter()
        .flat_map(|(_, items)| items)
        .filter_map(|item| match item {
            EditItem::AddFile(t) => Some(t.level),
            _ => None,
        })
        .max();
    let fit = |o: &mut Options| {
        o.error_if_exists = false;
        // The I/O mode is the machine's, not the data's: buffered wherever the DB now is (a
        // copy on a file system without direct I/O opens too).
        o.use_direct_reads = false;
        o.use_direct_io_for_flush_and_compaction = false;
        if let Some(level) = deepest {
            o.num_levels = o.num_levels.max(level + 1);
        }
    };
    fit(&mut opts);
    let names = Db::list_cf(&opts, path)
        .with_context(|| format!("listing the column families of {}", path.display()))?;
    let families = names
        .into_iter()
        .filter(|n| n != "default")
        .map(|n| {
            let mut o = saved
                .iter()
                .find(|d| d.name() == n)
                .map_or_else(|| opts.clone(), |d| d.options().clone());
            fit(&mut o);
            ColumnFamilyDescriptor::new(n, o)
        })
        .collect();
    Ok((opts, families))
}

fn open_read_only(cli: &Cli) -> Result<Db> {
    let path = db_path(cli)?;
    let (opts, families) = db_options(path)?;
    Db::open_cf_descriptors_read_only(&opts, path, families, false)
        .with_context(|| format!("opening {} read-only", path.display()))
}

fn open_read_write(cli: &Cli) -> Result<Db> {
    let path = db_path(cli)?;
    let (opts, families) = db_options(path)?;
    Db::open_cf_descriptors(&opts, path, families)
        .with_context(|| format!("opening {}", path.display()))
}

/// The family `--cf` names (`None`: default), or an error listing the DB's families.
fn family(cli: &Cli, db: &Db) -> Result<Option<Arc<ColumnFamily>>> {
    match cli.cf.as_deref() {
        None | Some("default") => Ok(None),
        Some(name) => match db.cf_handle(name) {
            Some(cf) => Ok(Some(cf)),
            None => {
                let names = Db::list_cf(&Options::default(), db.path()).unwrap_or_default();
                bail!("--cf {name}: no such column family (the DB has: {})", names.join(", "))
            }
        },
    }
}

/// The MANIFEST CURRENT names.
fn current_manifest(db: &Path) -> Result<PathBuf> {
    let current = db.join("CURRENT");
    let text = std::fs::read_to_string(&current)
        .with_context(|| format!("reading {}", current.display()))?;
    let name = text.trim_end();
    if !name.starts_with("MANIFEST-") || name.contains('/') {
        bail!("{} does not name a MANIFEST", current.display());
    }
    Ok(db.join(name))
}

#[allow(clippy::too_many_arguments)] // the scan command's options, each one flag
fn scan(
    out: &mut dyn Write,
    f: Bytes,
    db: &Db,
    cf: Option<&Arc<ColumnFamily>>,
    from: Option<&[u8]>,
    to: Option<Vec<u8>>,
    limit: Option<usize>,
    json: bool,
) -> Result<Outcome> {
    let opts = ReadOptions { iterate_upper_bound: to, ..ReadOptions::default() };
    let mode = match from {
        Some(k) => IteratorMode::From(k, Direction::Forward),
        None => IteratorMode::Start,
    };
    let it = match cf {
        None => db.iterator_opt(mode, opts),
        Some(cf) => db.iterator_cf_opt(cf, opts, mode),
    };
    for item in it.take(limit.unwrap_or(usize::MAX)) {
        let (k, v) = item?;
        if json {
            writeln!(
                out,
                "{{\"key\":{},\"value\":{}}}",
                json_string(&f.show(&k)),
                json_string(&f.show(&v))
            )?;
        } else {
            writeln!(out, "{} => {}", f.show(&k), f.show(&v))?;
        }
    }
    Ok(Outcome::Ok)
}

fn lsm(out: &mut dyn Write, f: Bytes, db: &Db, json: bool) -> Result<Outcome> {
    let files = db.live_files_metadata();
    let levels = files.iter().map(|m| m.level + 1).max().unwrap_or(0);
    if json {
        let mut level_objs = Vec::new();
        for level in 0..levels {
            let on: Vec<_> = files.iter().filter(|m| m.level == level).collect();
            let file_objs: Vec<String> = on
                .iter()
                .map(|m| {
                    format!(
                        "{{\"name\":{},\"size\":{},\"smallest\":{},\"largest\":{},\"smallest_seqno\":{},\"largest_seqno\":{},\"entries\":{},\"deletions\":{}}}",
                        json_string(&m.name),
                        m.size,
                        json_string(&f.show(&m.smallest_key)),
                        json_string(&f.show(&m.largest_key)),
                        m.smallest_seqno,
                        m.largest_seqno,
                        m.num_entries,
                        m.num_deletions
                    )
                })
                .collect();
            level_objs.push(format!(
                "{{\"level\":{level},\"files\":[{}],\"bytes\":{}}}",
                file_objs.join(","),
                on.iter().map(|m| m.size).sum::<u64>()
            ));
        }
        writeln!(
            out,
            "{{\"last_sequence\":{},\"levels\":[{}]}}",
            db.latest_sequence_number(),
            level_objs.join(",")
        )?;
        return Ok(Outcome::Ok);
    }
    writeln!(out, "last sequence: {}", db.latest_sequence_number())?;
    for level in 0..levels {
        let on: Vec<_> = files.iter().filter(|m| m.level == level).collect();
        writeln!(
            out,
            "L{level}: {} files, {} bytes",
            on.len(),
            on.iter().map(|m| m.size).sum::<u64>()
        )?;
        for m in on {
            writeln!(
                out,
                "  {} {} bytes ['{}' .. '{}'] seq {}..{} entries {} deletions {}",
                m.name,
                m.size,
                f.show(&m.smallest_key),
                f.show(&m.largest_key),
                m.smallest_seqno,
                m.largest_seqno,
                m.num_entries,
                m.num_deletions
            )?;
        }
    }
    Ok(Outcome::Ok)
}

fn verify(out: &mut dyn Write, db: &Path) -> Result<Outcome> {
    let checks = verify_db(&Options::default(), db)?;
    for c in &checks {
        let name = c.path.strip_prefix(db).unwrap_or(&c.path).display().to_string();
        match &c.result {
            Ok(summary) => writeln!(out, "OK {name}: {summary}")?,
            Err(e) => writeln!(out, "DAMAGED {name}: {e}")?,
        }
    }
    if all_intact(&checks) {
        writeln!(out, "clean: {} files checked", checks.len())?;
        Ok(Outcome::Ok)
    } else {
        let bad = checks.iter().filter(|c| c.result.is_err()).count();
        writeln!(out, "damaged: {bad} of {} files", checks.len())?;
        Ok(Outcome::Negative)
    }
}
