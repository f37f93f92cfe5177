//! The OPTIONS file RocksDB's loader reads for `--options_file` with `--engine=rocksdb`: the
//! named file's text made into one for the families the run opens (db_bench gives every family
//! the file's first family's options, `cf_descs[0].options`), with what db_bench's set-up puts
//! over a file (a Bloom filter where the family has none, the merge operator).
//!
//! The file is RocksDB's INI-like text (`docs/format/options.md`):
//!
//! ```text
//! [Version]                                  comments start with '#'
//!   rocksdb_version=11.8.1
//! [DBOptions]
//!   max_open_files=-1                        name=value, one a line
//! [CFOptions "default"]                      the default family's section comes first
//!   merge_operator=nullptr
//! [TableOptions/BlockBasedTable "default"]   the table options of the family just above
//!   filter_policy=nullptr
//! [CFOptions "other"]
//!   ...
//! ```
//!
//! Only section headers and the two statements replaced are read here; the values are left to
//! RocksDB's own parser, which reads the named file first, unchanged, so that its errors name
//! the lines of the file the user gave.

/// What the run puts over the file's first family, for every family it opens.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct OverFile {
    /// A filter policy (`bloomfilter:10`) for a block-based table whose options give none
    /// (db_bench's `--bloom_bits` when `filter_policy` is null after the load).
    pub filter: Option<String>,
    /// A merge operator's registered name (`uint64add`), over the file's.
    pub merge_operator: Option<String>,
}

/// One `[...]` section: its header line (trimmed) and the lines up to the next one.
struct Section<'a> {
    header: &'a str,
    lines: Vec<&'a str>,
}

/// The text of an OPTIONS file holding `text`'s sections other than its families', then, for
/// each of `families` (the default family first), `text`'s first family's options and table
/// options with `over` applied. An error names what is missing: a file without a
/// `[CFOptions ...]` section has no options for a family.
pub fn for_families(text: &str, families: &[String], over: &OverFile) -> Result<String, String> {
    let (preamble, sections) = split(text);
    let first = sections
        .iter()
        .position(|s| title(s.header) == "CFOptions")
        .ok_or("it has no [CFOptions \"default\"] section")?;
    let family = argument(sections[first].header);
    let table = sections[first + 1..]
        .iter()
        .take_while(|s| title(s.header) != "CFOptions")
        .find(|s| title(s.header).starts_with("TableOptions/") && argument(s.header) == family);
    let mut out = String::new();
    for line in preamble {
        push_line(&mut out, line);
    }
    for s in sections.iter().filter(|s| !is_family_section(s.header)) {
        push_section(&mut out, s.header, &s.lines);
    }
    for name in families {
        let escaped = escape(name);
        let lines =
            with_value(&sections[first].lines, "merge_operator", |_| over.merge_operator.clone());
        push_section(&mut out, &format!("[CFOptions \"{escaped}\"]"), &lines);
        if let Some(t) = table {
            let kind = title(t.header);
            let lines = if kind == "TableOptions/BlockBasedTable" {
                with_value(&t.lines, "filter_policy", |old| match old {
                    Some(v) if !gives_no_filter(v) => None,
                    _ => over.filter.clone(),
                })
            } else {
                t.lines.iter().map(|l| l.to_string()).collect()
            };
            push_section(&mut out, &format!("[{kind} \"{escaped}\"]"), &lines);
        }
    }
    Ok(out)
}

/// Whether RocksDB 11's loader leaves a block-based table's filter unset for `value`: null,
/// empty, or a Bloom or Ribbon filter named without its bits per key (which is how RocksDB 11
/// writes its own filters into OPTIONS files; its factories need the bits).
fn gives_no_filter(value: &str) -> bool {
    matches!(
        value,
        "" | "nullptr"
            | "bloomfilter"
            | "rocksdb.BloomFilter"
            | "ribbonfilter"
            | "rocksdb.RibbonFilter"
    )
}

/// The text before the first section, and the sections.
fn split(text: &str) -> (Vec<&str>, Vec<Section<'_>>) {
    let mut preamble = Vec::new();
    let mut sections: Vec<Section<'_>> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') && t.ends_with(']') {
            sections.push(Section { header: t, lines: Vec::new() });
        } else if let Some(s) = sections.last_mut() {
            s.lines.push(line);
        } else {
            preamble.push(line);
        }
    }
    (preamble, sections)
}

fn is_family_section(header: &str) -> bool {
    let t = title(header);
    t == "CFOptions" || t.starts_with("TableOptions/")
}

/// A header's title: `CFOptions` of `[CFOptions "default"]`.
fn title(header: &str) -> &str {
    let inner = header.trim_start_matches('[').trim_end_matches(']');
    inner.split('"').next().unwrap_or_default().trim()
}

/// A header's quoted argument as written (escaped): `default` of `[CFOptions "default"]`.
fn argument(header: &str) -> &str {
    match (header.find('"'), header.rfind('"')) {
        (Some(a), Some(b)) if a < b => &header[a + 1..b],
        _ => "",
    }
}

/// `lines` with statement `name`'s value replaced by what `new` gives for the old value (None
/// as the old value when the statement is absent; the statement is added then); `new` giving
/// None keeps the lines as they are.
fn with_value(
    lines: &[&str],
    name: &str,
    new: impl Fn(Option<&str>) -> Option<String>,
) -> Vec<String> {
    let at = lines.iter().position(|l| statement(l).is_some_and(|(n, _)| n == name));
    let old = at.and_then(|i| statement(lines[i])).map(|(_, v)| v);
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    if let Some(value) = new(old) {
        let line = format!("  {name}={value}");
        match at {
            Some(i) => out[i] = line,
            None => out.push(line),
        }
    }
    out
}

/// A statement's name and value, trimmed, without a trailing comment (`#` not escaped).
fn statement(line: &str) -> Option<(&str, &str)> {
    let mut end = line.len();
    let bytes = line.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'#' && (i == 0 || bytes[i - 1] != b'\\') {
            end = i;
            break;
        }
    }
    let (name, value) = line[..end].split_once('=')?;
    Some((name.trim(), value.trim()))
}

/// A family's name as RocksDB writes it in a header (`EscapeOptionString`).
fn escape(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '\\' | '#' | ':' => {
                out.push('\\');
                out.push(c);
            }
            '\r' => out.push_str("\\r"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn push_line(out: &mut String, line: &str) {
    out.push_str(line);
    out.push('\n');
}

fn push_section<S: AsRef<str>>(out: &mut String, header: &str, lines: &[S]) {
    push_line(out, header);
    for l in lines {
        push_line(out, l.as_ref());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# written by RocksDB\n[Version]\n  rocksdb_version=11.8.1\n\
        [DBOptions]\n  max_open_files=77\n\
        [CFOptions \"default\"]\n  write_buffer_size=4194304\n  merge_operator=nullptr\n\
        [TableOptions/BlockBasedTable \"default\"]\n  block_size=8192\n  filter_policy=nullptr\n\
        [CFOptions \"old\"]\n  write_buffer_size=1\n\
        [TableOptions/BlockBasedTable \"old\"]\n  block_size=1\n";

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn every_family_gets_the_first_familys_options_with_the_runs_over_them() {
        let over = OverFile {
            filter: Some("bloomfilter:12".into()),
            merge_operator: Some("uint64add".into()),
        };
        let t = for_families(FILE, &names(&["default", "a:b"]), &over).unwrap();
        let want = "# written by RocksDB\n[Version]\n  rocksdb_version=11.8.1\n\
            [DBOptions]\n  max_open_files=77\n\
            [CFOptions \"default\"]\n  write_buffer_size=4194304\n  merge_operator=uint64add\n\
            [TableOptions/BlockBasedTable \"default\"]\n  block_size=8192\n  \
            filter_policy=bloomfilter:12\n\
            [CFOptions \"a\\:b\"]\n  write_buffer_size=4194304\n  merge_operator=uint64add\n\
            [TableOptions/BlockBasedTable \"a\\:b\"]\n  block_size=8192\n  \
            filter_policy=bloomfilter:12\n";
        assert_eq!(t, want);
    }

    #[test]
    fn the_files_own_filter_and_merge_operator_stay_without_the_runs() {
        let file = FILE
            .replace("filter_policy=nullptr", "filter_policy=bloomfilter:10 # kept")
            .replace("merge_operator=nullptr", "merge_operator=max");
        let over = OverFile { filter: Some("bloomfilter:12".into()), merge_operator: None };
        let t = for_families(&file, &names(&["default"]), &over).unwrap();
        assert!(t.contains("filter_policy=bloomfilter:10 # kept\n"), "{t}");
        assert!(t.contains("merge_operator=max\n") && !t.contains(":12"), "{t}");
        assert!(!t.contains("\"old\""), "only the families opened: {t}");
        // A filter RocksDB 11 writes without its bits loads as none: the run's goes over it;
        // an absent statement is added.
        let file = FILE.replace("filter_policy=nullptr", "filter_policy=bloomfilter");
        let t = for_families(&file, &names(&["default"]), &over).unwrap();
        assert!(t.contains("  filter_policy=bloomfilter:12\n"), "{t}");
        let file = FILE.replace("  filter_policy=nullptr\n", "");
        let t = for_families(&file, &names(&["default"]), &over).unwrap();
        assert!(t.contains("  block_size=8192\n  filter_policy=bloomfilter:12\n"), "{t}");
        // Nothing to put over it: the first family's sections as they were.
        let t = for_families(FILE, &names(&["default"]), &OverFile::default()).unwrap();
        assert!(t.ends_with("merge_operator=nullptr\n[TableOptions/BlockBasedTable \"default\"]\n  block_size=8192\n  filter_policy=nullptr\n"), "{t}");
    }

    #[test]
    fn other_table_kinds_keep_their_options_and_a_file_without_families_is_refused() {
        let file = "[DBOptions]\n[CFOptions \"default\"]\n  table_factory=PlainTable\n\
            [TableOptions/PlainTable \"default\"]\n  user_key_len=16\n";
        let over = OverFile { filter: Some("bloomfilter:10".into()), merge_operator: None };
        let t = for_families(file, &names(&["default", "b"]), &over).unwrap();
        assert!(t.contains("[TableOptions/PlainTable \"b\"]\n  user_key_len=16\n"), "{t}");
        assert!(!t.contains("filter_policy"), "{t}");
        let e = for_families("[Version]\n[DBOptions]\n", &names(&["default"]), &over);
        assert!(e.unwrap_err().contains("no [CFOptions"));
    }
}
