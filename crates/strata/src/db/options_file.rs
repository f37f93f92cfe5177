//! OPTIONS files: the options a DB was last opened or changed with, kept beside it so that
//! `Options::load_latest` (RocksDB's `LoadLatestOptions`) gives them back and a person or
//! tool can read them. Laid out as RocksDB lays out its own, with its option names, so a
//! RocksDB OPTIONS file reads here too (the options Strata lacks skipped when asked); Strata's
//! own additions (`strata_version`, the tiered style and its options) are not RocksDB's.
//!
//! ```text
//! OPTIONS-NNNNNN         UTF-8 text, written whole (OPTIONS-NNNNNN.dbtmp, synced, renamed)
//!
//! # comment lines start with '#'; blank lines are skipped; blanks around names and values
//! [Version]
//!   strata_version=<the writing crate's version>
//!   options_file_version=1.1
//!
//! [DBOptions]
//!   <name>=<value>                         one line per DB-wide option
//!
//! [CFOptions "<family>"]                   "default" first, then the others by id
//!   <name>=<value>                         one line per family option
//!   <group>={<name>=<value>;...}           compaction_options_fifo, ..._universal
//!   comparator=<name>                      the objects below: what was in use, by name
//!   merge_operator=<name>|nullptr
//!   compaction_filter_factory=<name>|nullptr
//!   prefix_extractor=rocksdb.FixedPrefix.<n>|rocksdb.CappedPrefix.<n>|<other>|nullptr
//!   table_factory=BlockBasedTable
//!
//! [TableOptions/BlockBasedTable "<family>"]  right after its family's section
//!   <name>=<value>                         block_based_table_factory's options
//! ```
//!
//! A family name in quotes escapes `\` and `"` with `\`; a value escapes `\`, newline and
//! carriage return (`\\`, `\n`, `\r`). Names and value forms are `options/parse.rs`'s
//! (`OPTIONS`, its `Scope`s); an alias (`max_background_compactions`) is not written.
//!
//! Reading: `[Version]` must come first and say `options_file_version` 1.x. An option this
//! build does not know is an error naming the file, line and option, unless the caller
//! ignores unknown options; a value of the wrong form is always an error. Objects made of code
//! (comparators, merge operators, filters) cannot be rebuilt from a name: the bytewise
//! comparator and the fixed and capped prefix extractors are; any other comparator or
//! extractor is left as the caller's options have it (opening with the wrong comparator then
//! fails with the MANIFEST's name), and merge operators and compaction filters are always the
//! caller's to give again, as with RocksDB.
//!
//! Writing: at every read-write open, after each column family is created or dropped and
//! after `set_options`; the newest two files are kept, older ones deleted, as RocksDB does
//! (not while `disable_file_deletions` holds deletions back).
//! The number comes from the DB's file counter, which recovery raises past every OPTIONS file
//! it finds, as past every other file of the DB (a counter not yet recorded in the MANIFEST
//! when the process ended could otherwise give a new file a lower number than an old one). A
//! failure to write is the call's error (the call's own change is made: the open is refused,
//! a created family exists).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::comparator::{is_bytewise_name, KeyOrder, ROCKSDB_BYTEWISE_NAME};
use crate::env::{install_synced, FileSystem};
use crate::error::{Error, Result};
use crate::filename::{options_file_name, options_temp_path, parse_file_name, FileKind};
use crate::options::parse::{self, Scope, OPTIONS};
use crate::options::Options;
use crate::prefix::PrefixExtractor;
use crate::types::FileNumber;

/// How many OPTIONS files are kept.
const KEEP: usize = 2;

/// The major version of the file's layout this build reads and writes.
const FILE_VERSION: &str = "1.1";

/// The options files in `dir`, by number, oldest first.
fn list(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<(FileNumber, PathBuf)>> {
    let mut found: Vec<_> = fs
        .list(dir)?
        .into_iter()
        .filter_map(|name| match parse_file_name(&name) {
            Some(FileKind::Options(n)) => Some((n, dir.join(name))),
            _ => None,
        })
        .collect();
    found.sort();
    Ok(found)
}

/// The text of an OPTIONS file for DB options `db` and the families `families` (name and
/// options, `default` first).
pub(crate) fn render(db: &Options, families: &[(String, Options)]) -> String {
    let mut s = String::from(
        "# Strata's OPTIONS file: the options this DB was last opened or changed with.\n\
         # Names and values are RocksDB's; Options::load_latest reads the newest file.\n\n",
    );
    let _ = writeln!(s, "[Version]\n  strata_version={}", env!("CARGO_PKG_VERSION"));
    let _ = writeln!(s, "  options_file_version={FILE_VERSION}\n\n[DBOptions]");
    push_scope(&mut s, db, Scope::Db);
    for (name, o) in families {
        let _ = writeln!(s, "\n[CFOptions \"{}\"]", quote(name));
        push_scope(&mut s, o, Scope::Family);
        for (k, v) in objects(o) {
            let _ = writeln!(s, "  {k}={}", escape(&v));
        }
        let _ = writeln!(s, "\n[TableOptions/BlockBasedTable \"{}\"]", quote(name));
        push_scope(&mut s, o, Scope::Table);
    }
    s
}

/// The lines of one section: every option of `scope` with its getter, those of a nested
/// group (`group.name`) gathered into one `group={...}` line.
fn push_scope(s: &mut String, o: &Options, scope: Scope) {
    let mut groups: Vec<(&str, String)> = Vec::new();
    for e in OPTIONS.iter().filter(|e| e.scope == scope) {
        let Some(get) = e.get else { continue };
        let name = e.name.strip_prefix("block_based_table_factory.").unwrap_or(e.name);
        let value = get(o);
        match name.split_once('.') {
            Some((group, inner)) => {
                let line = format!("{inner}={value};");
                match groups.iter_mut().find(|(g, _)| *g == group) {
                    Some((_, body)) => body.push_str(&line),
                    None => groups.push((group, line)),
                }
            }
            None => {
                let _ = writeln!(s, "  {name}={}", escape(&value));
            }
        }
    }
    for (group, body) in groups {
        let _ = writeln!(s, "  {group}={{{}}}", escape(&body));
    }
}

/// The family's objects by name: written for the record, read back where a name makes one
/// (module doc).
fn objects(o: &Options) -> Vec<(&'static str, String)> {
    let comparator = match &o.comparator {
        KeyOrder::Bytewise => ROCKSDB_BYTEWISE_NAME.to_string(),
        order @ KeyOrder::Custom(_) => order.name().to_string(),
    };
    let merge = o.merge_operator.as_ref().map_or_else(|| "nullptr".into(), |m| m.name().into());
    let filter = o
        .compaction_filter_factory
        .as_ref()
        .map_or_else(|| "nullptr".into(), |f| f.name().to_string());
    let prefix = match o.prefix_extractor {
        None => "nullptr".to_string(),
        Some(PrefixExtractor::Fixed(n)) => format!("rocksdb.FixedPrefix.{n}"),
        Some(PrefixExtractor::Capped(n)) => format!("rocksdb.CappedPrefix.{n}"),
        Some(PrefixExtractor::Noop) => "rocksdb.Noop".to_string(),
        Some(PrefixExtractor::Custom { .. }) => "strata.CustomPrefix".to_string(),
    };
    vec![
        ("comparator", comparator),
        ("merge_operator", merge),
        ("compaction_filter_factory", filter),
        ("prefix_extractor", prefix),
        ("table_factory", "BlockBasedTable".to_string()),
    ]
}

fn quote(name: &str) -> String {
    name.replace('\\', "\\\\").replace('"', "\\\"")
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n").replace('\r', "\\r")
}

fn unescape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// Writes a new OPTIONS file into `dir` numbered from `next_file` (the DB's file counter) and,
/// with `prune`, deletes all but the newest [`KEEP`] (not while `disable_file_deletions` holds
/// deletions back: a later write prunes).
pub(crate) fn persist(
    fs: &dyn FileSystem,
    dir: &Path,
    next_file: &std::sync::atomic::AtomicU64,
    text: &str,
    prune: bool,
) -> Result<()> {
    use std::sync::atomic::Ordering;
    let n = FileNumber(next_file.fetch_add(1, Ordering::SeqCst));
    let path = dir.join(options_file_name(n));
    let tmp = options_temp_path(dir, n);
    install_synced(fs, &tmp, &path, text.as_bytes(), ["options.sync", "options.rename"])?;
    if !prune {
        return Ok(());
    }
    let all = list(fs, dir)?;
    for (_, old) in all.iter().take(all.len().saturating_sub(KEEP)) {
        // A file left behind is deleted by a later write.
        let _ = fs.remove(old);
    }
    Ok(())
}

/// Writes the options `inner` is open with as a new OPTIONS file (module doc); nothing for a
/// DB opened read-only. Writers are serialized, so the newest file has the newest options.
pub(crate) fn persist_options(inner: &super::DbInner) -> Result<()> {
    if inner.read_only {
        return Ok(());
    }
    let _one_writer = inner.options_file.lock();
    let families: Vec<(String, Options)> = {
        let state = inner.state.lock();
        state.cfs.values().map(|cs| (cs.cfd.name.clone(), (*cs.cfd.live_opts()).clone())).collect()
    };
    let text = render(&inner.opts, &families);
    let prune = !super::obsolete::deletions_disabled(inner);
    persist(inner.fs.as_ref(), &inner.dir, &inner.next_file, &text, prune)
}

/// A section's options: line number, name, value.
pub(crate) type Pairs = Vec<(usize, String, String)>;

/// A parsed OPTIONS file: DB option pairs, then per family (in file order) its name and its
/// option pairs (table options with the `block_based_table_factory.` prefix).
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    pub db: Pairs,
    pub families: Vec<(String, Pairs)>,
}

/// Parses `text`, read from `path` (named in errors with the line).
pub(crate) fn parse(path: &Path, text: &str) -> Result<Parsed> {
    let bad = |line: usize, why: String| {
        Error::InvalidArgument(format!("{} line {line}: {why}", path.display()))
    };
    #[derive(PartialEq)]
    enum Section {
        None,
        Version,
        Db,
        /// The family at this index of `families`.
        Family(usize),
        Table(usize),
        Other,
    }
    let mut parsed = Parsed::default();
    let mut section = Section::None;
    let mut version_seen = false;
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(head) = line.strip_prefix('[') {
            let Some(head) = head.strip_suffix(']') else {
                return Err(bad(line_no, format!("section header {line:?} has no closing ']'")));
            };
            let (kind, name) = match head.split_once(' ') {
                Some((k, rest)) => (
                    k,
                    Some(quoted(rest.trim()).ok_or_else(|| {
                        bad(line_no, format!("section {head:?}: expected a name in double quotes"))
                    })?),
                ),
                None => (head, None),
            };
            if section == Section::None && kind != "Version" {
                return Err(bad(line_no, "the first section must be [Version]".into()));
            }
            section = match (kind, name) {
                ("Version", None) => Section::Version,
                ("DBOptions", None) => Section::Db,
                ("CFOptions", Some(n)) => {
                    if parsed.families.iter().any(|(f, _)| *f == n) {
                        return Err(bad(line_no, format!("column family {n:?} listed twice")));
                    }
                    parsed.families.push((n, Vec::new()));
                    Section::Family(parsed.families.len() - 1)
                }
                ("TableOptions/BlockBasedTable", Some(n)) => {
                    let Some(i) = parsed.families.iter().position(|(f, _)| *f == n) else {
                        return Err(bad(
                            line_no,
                            format!("table options of {n:?} before its [CFOptions] section"),
                        ));
                    };
                    Section::Table(i)
                }
                // Another table kind's options: RocksDB's, which Strata does not build.
                (k, Some(_)) if k.starts_with("TableOptions/") => Section::Other,
                _ => return Err(bad(line_no, format!("unknown section [{head}]"))),
            };
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            return Err(bad(line_no, format!("{line:?} is not name=value")));
        };
        let (name, value) = (name.trim().to_string(), unescape(value.trim()));
        match &section {
            Section::None => {
                return Err(bad(line_no, "the first section must be [Version]".into()))
            }
            Section::Version => {
                if name == "options_file_version" {
                    if value.split('.').next() != Some("1") {
                        return Err(bad(
                            line_no,
                            format!("options_file_version {value:?}: this build reads 1.x"),
                        ));
                    }
                    version_seen = true;
                }
            }
            Section::Db => parsed.db.push((line_no, name, value)),
            Section::Family(i) | Section::Table(i) => {
                let name = if matches!(section, Section::Table(_)) {
                    format!("block_based_table_factory.{name}")
                } else {
                    name
                };
                if let Some((_, pairs)) = parsed.families.get_mut(*i) {
                    pairs.push((line_no, name, value));
                }
            }
            Section::Other => {}
        }
    }
    if !version_seen {
        return Err(Error::InvalidArgument(format!(
            "{}: no options_file_version in a [Version] section (not an OPTIONS file?)",
            path.display()
        )));
    }
    if parsed.families.first().map(|(n, _)| n.as_str()) != Some("default") {
        return Err(Error::InvalidArgument(format!(
            "{}: the first [CFOptions] section must be \"default\"",
            path.display()
        )));
    }
    Ok(parsed)
}

/// The name in `"..."` (escapes as the module doc says).
fn quoted(s: &str) -> Option<String> {
    let inner = s.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(chars.next()?),
            '"' => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

/// Applies one section's pairs to `o`: objects by name (module doc), nested values flattened
/// as option strings are, unknown names refused unless `ignore_unknown`.
pub(crate) fn apply(
    path: &Path,
    o: &mut Options,
    pairs: &[(usize, String, String)],
    ignore_unknown: bool,
) -> Result<()> {
    let at = |line: usize, e: Error| match e {
        Error::InvalidArgument(m) => {
            Error::InvalidArgument(format!("{} line {line}: {m}", path.display()))
        }
        e => e,
    };
    for (line, name, value) in pairs {
        match name.as_str() {
            "comparator" => {
                if is_bytewise_name(value) {
                    o.comparator = KeyOrder::Bytewise;
                }
                continue;
            }
            "prefix_extractor" => {
                if value == "nullptr" || value.is_empty() {
                    o.prefix_extractor = None;
                } else if let Some(p) = prefix_extractor_of(value) {
                    o.prefix_extractor = Some(p);
                }
                continue;
            }
            "merge_operator"
            | "compaction_filter"
            | "compaction_filter_factory"
            | "table_factory" => continue,
            _ => {}
        }
        let flat = if value.starts_with('{') {
            parse::split_pairs(&format!("{name}={value}")).map_err(|e| at(*line, e))?
        } else {
            vec![(name.clone(), value.clone())]
        };
        for (n, v) in flat {
            if parse::entry(&n).is_none() {
                if ignore_unknown {
                    continue;
                }
                return Err(Error::InvalidArgument(format!(
                    "{} line {line}: unknown option {n:?} (load with ignore_unknown_options to \
                     skip options this build does not know)",
                    path.display()
                )));
            }
            parse::apply_option(o, &n, &v, false).map_err(|e| at(*line, e))?;
        }
    }
    Ok(())
}

/// The extractor a name makes; `None` for a name that makes none here.
fn prefix_extractor_of(v: &str) -> Option<PrefixExtractor> {
    if v == "rocksdb.Noop" {
        return Some(PrefixExtractor::Noop);
    }
    let len = |rest: &str| rest.parse::<usize>().ok();
    if let Some(n) = v.strip_prefix("rocksdb.FixedPrefix.").and_then(len) {
        return Some(PrefixExtractor::Fixed(n));
    }
    v.strip_prefix("rocksdb.CappedPrefix.").and_then(len).map(PrefixExtractor::Capped)
}

/// The newest OPTIONS file in `dir`, by number; `None` when there is none.
pub(crate) fn newest(fs: &dyn FileSystem, dir: &Path) -> Result<Option<(FileNumber, PathBuf)>> {
    Ok(list(fs, dir)?.pop())
}

/// The newest OPTIONS file in `dir` and its text; `None` when there is none.
pub(crate) fn read_latest(fs: &dyn FileSystem, dir: &Path) -> Result<Option<(PathBuf, String)>> {
    let Some((_, path)) = newest(fs, dir)? else { return Ok(None) };
    let text = read(fs, &path)?;
    Ok(Some((path, text)))
}

/// The text of the OPTIONS file at `path`.
pub(crate) fn read(fs: &dyn FileSystem, path: &Path) -> Result<String> {
    let bytes = fs.open(path)?.read_all()?;
    String::from_utf8(bytes).map_err(|e| {
        Error::corruption(path, e.utf8_error().valid_up_to() as u64, "OPTIONS is not UTF-8 text")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::MemFs;

    /// Every written option set to a value other than its default, found by trying
    /// candidates; panics naming an option none of them changes.
    fn all_changed() -> Options {
        const CANDIDATES: &[&str] = &[
            "true",
            "false",
            "7",
            "3",
            "0.375",
            "-5",
            "kZSTD",
            "kLZ4Compression",
            "kSnappyCompression:kZSTD",
            "kCompactionStyleUniversal",
            "kAbsoluteConsistency",
            "kCompactionStopStyleSimilarSize",
            "VectorRepFactory",
            "kTwoLevelIndexSearch",
            "kXXH3",
            "bloomfilter:7:false",
            "FileChecksumGenCrc32cFactory",
        ];
        let mut o = Options::default();
        for e in OPTIONS {
            let Some(get) = e.get else { continue };
            let before = get(&o);
            let changed = CANDIDATES.iter().any(|v| {
                let mut t = o.clone();
                parse::apply_option(&mut t, e.name, v, false).is_ok()
                    && get(&t) != before
                    && parse::apply_option(&mut o, e.name, v, false).is_ok()
            });
            assert!(changed, "no candidate changes {}", e.name);
        }
        o
    }

    fn shown(o: &Options, scope: Scope) -> Vec<(&'static str, String)> {
        OPTIONS
            .iter()
            .filter(|e| e.scope == scope)
            .filter_map(|e| e.get.map(|g| (e.name, g(o))))
            .collect()
    }

    #[test]
    fn every_option_round_trips_through_a_file() {
        let changed = all_changed();
        let other = Options {
            write_buffer_size: 12345,
            prefix_extractor: Some(PrefixExtractor::Capped(4)),
            ..Options::default()
        };
        let odd_name = "a \"quoted\" \\ [name]";
        let families = vec![("default".to_string(), changed.clone()), (odd_name.into(), other)];
        let text = render(&changed, &families);
        let path = Path::new("/db/OPTIONS-000009");
        let parsed = parse(path, &text).unwrap();
        let names: Vec<&str> = parsed.families.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["default", odd_name]);
        let mut db = Options::default();
        apply(path, &mut db, &parsed.db, false).unwrap();
        assert_eq!(shown(&db, Scope::Db), shown(&changed, Scope::Db));
        for ((_, pairs), (_, want)) in parsed.families.iter().zip(&families) {
            let mut o = Options::default();
            apply(path, &mut o, pairs, false).unwrap();
            for scope in [Scope::Family, Scope::Table] {
                assert_eq!(shown(&o, scope), shown(want, scope));
            }
            assert_eq!(o.prefix_extractor, want.prefix_extractor);
        }
        // Defaults round-trip too (nothing written that reads back otherwise).
        let d = Options::default();
        let parsed = parse(path, &render(&d, &[("default".into(), d.clone())])).unwrap();
        let mut o = Options::default();
        apply(path, &mut o, &parsed.families[0].1, false).unwrap();
        assert_eq!(shown(&o, Scope::Family), shown(&d, Scope::Family));
    }

    #[test]
    fn values_with_line_breaks_and_objects_read_back_by_name() {
        assert_eq!(unescape(&escape("a\\b\nc\rd")), "a\\b\nc\rd");
        let o = Options { prefix_extractor: Some(PrefixExtractor::Fixed(3)), ..Options::default() };
        let text = render(&o, &[("default".into(), o.clone())]);
        assert!(text.contains("comparator=leveldb.BytewiseComparator"), "{text}");
        assert!(text.contains("prefix_extractor=rocksdb.FixedPrefix.3"), "{text}");
        assert!(text.contains("compaction_options_fifo={"), "{text}");
        assert!(!text.contains("max_background_compactions"), "aliases are not written");
        let parsed = parse(Path::new("OPTIONS-1"), &text).unwrap();
        let mut back = Options::default();
        apply(Path::new("OPTIONS-1"), &mut back, &parsed.families[0].1, false).unwrap();
        assert_eq!(back.prefix_extractor, Some(PrefixExtractor::Fixed(3)));
        // A comparator or extractor this build cannot make from its name is left alone.
        let pairs = vec![
            (1, "comparator".to_string(), "my.ReverseOrder".to_string()),
            (2, "prefix_extractor".to_string(), "my.Extractor".to_string()),
            (3, "merge_operator".to_string(), "my.Counter".to_string()),
        ];
        let mut kept =
            Options { prefix_extractor: Some(PrefixExtractor::Capped(2)), ..Options::default() };
        apply(Path::new("OPTIONS-1"), &mut kept, &pairs, false).unwrap();
        assert!(kept.comparator.is_bytewise());
        assert_eq!(kept.prefix_extractor, Some(PrefixExtractor::Capped(2)));
    }

    #[test]
    fn malformed_files_are_refused_naming_the_file_and_line() {
        let p = Path::new("/db/OPTIONS-000005");
        let head = "[Version]\n  options_file_version=1.1\n";
        let cases = [
            ("[DBOptions]\n", "line 1: the first section must be [Version]"),
            ("[Version]\n  options_file_version=2.0\n", "line 2: options_file_version"),
            ("[Version]\n", "no options_file_version"),
            (&*format!("{head}[Bogus]\n"), "line 3: unknown section [Bogus]"),
            (&*format!("{head}[DBOptions]\n  no_equals\n"), "line 4: \"no_equals\""),
            (&*format!("{head}[CFOptions \"default\"\n"), "line 3: section header"),
            (&*format!("{head}[CFOptions default]\n"), "line 3: section"),
            (&*format!("{head}[TableOptions/BlockBasedTable \"x\"]\n"), "line 3: table options"),
            (&*format!("{head}[CFOptions \"x\"]\n"), "must be \"default\""),
            (
                &*format!("{head}[CFOptions \"default\"]\n[CFOptions \"default\"]\n"),
                "line 4: column family \"default\" listed twice",
            ),
        ];
        for (text, want) in cases {
            let e = parse(p, text).unwrap_err().to_string();
            assert!(e.contains("/db/OPTIONS-000005") && e.contains(want), "{want:?}: {e}");
        }
        // Values: unknown names unless ignored, bad forms always.
        let text = format!(
            "{head}[DBOptions]\n  max_open_files=12\n  no_such_option=1\n\
             [CFOptions \"default\"]\n  write_buffer_size=lots\n"
        );
        let parsed = parse(p, &text).unwrap();
        let mut o = Options::default();
        let e = apply(p, &mut o, &parsed.db, false).unwrap_err().to_string();
        assert!(e.contains("line 5") && e.contains("no_such_option"), "{e}");
        apply(p, &mut o, &parsed.db, true).unwrap();
        assert_eq!(o.max_open_files, 12);
        let e = apply(p, &mut o, &parsed.families[0].1, true).unwrap_err().to_string();
        assert!(e.contains("line 7") && e.contains("write_buffer_size"), "{e}");
    }

    #[test]
    fn persisting_numbers_from_the_counter_and_keeps_the_two_newest() {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        // An older file, and a leftover of an interrupted write.
        let old = dir.join(options_file_name(FileNumber(4)));
        fs.create(&old).unwrap().append(b"old").unwrap();
        let tmp = dir.join("OPTIONS-000005.dbtmp");
        fs.create(&tmp).unwrap();
        let counter = std::sync::atomic::AtomicU64::new(7);
        for text in ["one", "two", "three"] {
            persist(&fs, dir, &counter, text, true).unwrap();
        }
        let names: Vec<_> = list(&fs, dir).unwrap().into_iter().map(|(n, _)| n.0).collect();
        assert_eq!(names, [8, 9]);
        assert_eq!(counter.load(std::sync::atomic::Ordering::SeqCst), 10);
        assert_eq!(read_latest(&fs, dir).unwrap().unwrap().1, "three");
        assert!(fs.exists(&tmp), "persist leaves other leftovers to the open");
    }
}
