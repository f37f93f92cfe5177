//! `dump-sst`, `dump-wal`, `dump-manifest`, `dump-blob`: file contents as text (`docs/cli.md`). Only the
//! file name of a dumped file is printed, so output does not depend on where the DB lives.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use strata::env::{FileSystem, OsFs};
use strata::inspect::{
    blob_index, entity_columns, read_any_blob_file, read_manifest, read_wal, EditItem, Entry,
    Table, WalRecord,
};

use crate::fmt::Bytes;
use crate::Outcome;

fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// `key @ seq : KIND`, the form every dump writes an entry's key in.
pub fn show_key(f: Bytes, e: &Entry) -> String {
    if e.kind == "KEY" {
        // A user key with no sequence number (a version-3 index separator).
        return format!("'{}'", f.show(&e.key));
    }
    format!("'{}' @ {} : {}", f.show(&e.key), e.seq, e.kind)
}

/// An entry with its value (range deletions show their end, deletions nothing).
pub fn show_entry(f: Bytes, e: &Entry) -> String {
    match e.kind {
        "DEL" | "SDEL" => show_key(f, e),
        "RDEL" => format!("{} .. '{}'", show_key(f, e), f.show(&e.value)),
        "BLOB" => match blob_index(&e.value) {
            Ok((file, offset, size, c)) => {
                format!("{} => blob {file:06}.blob @{offset}, {size} bytes {c:?}", show_key(f, e))
            }
            Err(err) => format!("{} => bad blob index: {err}", show_key(f, e)),
        },
        "ENTITY" => match entity_columns(&e.value) {
            Ok(c) => {
                let cols: Vec<String> =
                    c.iter().map(|(n, v)| format!("'{}': '{}'", f.show(n), f.show(v))).collect();
                format!("{} => {{{}}}", show_key(f, e), cols.join(", "))
            }
            Err(err) => format!("{} => bad entity: {err}", show_key(f, e)),
        },
        _ => format!("{} => '{}'", show_key(f, e), f.show(&e.value)),
    }
}

fn exists(path: &Path) -> Result<()> {
    if !OsFs.exists(path) {
        anyhow::bail!("{} does not exist", path.display());
    }
    Ok(())
}

pub fn dump_sst(
    out: &mut dyn Write,
    f: Bytes,
    path: &Path,
    verify: bool,
    entries: bool,
) -> Result<Outcome> {
    exists(path)?;
    let table =
        Table::open(&OsFs, path).with_context(|| format!("reading table {}", path.display()))?;
    writeln!(out, "file: {}", file_name(path))?;
    writeln!(out, "file_size: {}", table.file_size())?;
    writeln!(out, "[properties]")?;
    for (name, value) in table.properties() {
        writeln!(out, "{name}: {value}")?;
    }
    let index = table.index()?;
    writeln!(out, "[index] {} data blocks", index.len())?;
    for (i, (sep, b)) in index.iter().enumerate() {
        writeln!(
            out,
            "block {i}: offset {} size {} separator {}",
            b.offset,
            b.size,
            show_key(f, sep)
        )?;
    }
    let rdels = table.range_deletions();
    writeln!(out, "[range deletions] {}", rdels.len())?;
    for e in &rdels {
        writeln!(out, "{}", show_entry(f, e))?;
    }
    if entries {
        writeln!(out, "[entries]")?;
        for (i, (_, b)) in index.iter().enumerate() {
            let list = table.block_entries(*b)?;
            writeln!(out, "block {i} ({} entries)", list.len())?;
            for e in &list {
                writeln!(out, "  {}", show_entry(f, e))?;
            }
        }
    }
    if verify {
        match table.verify() {
            Ok(n) => writeln!(out, "verify: OK ({n} data blocks)")?,
            Err(e) => {
                writeln!(out, "verify: DAMAGED: {e}")?;
                return Ok(Outcome::Negative);
            }
        }
    }
    Ok(Outcome::Ok)
}

/// Prints a blob file: its header's settings, each record (offset, key, value) and the
/// footer's counts, or, for a file still being written at commit, that it has no footer yet
/// and the bytes of any torn tail. Every record's checksum is checked; damage is an error
/// naming the offset.
pub fn dump_blob(out: &mut dyn Write, f: Bytes, path: &Path) -> Result<Outcome> {
    exists(path)?;
    let blob = read_any_blob_file(&OsFs, path)
        .with_context(|| format!("reading blob file {}", path.display()))?;
    writeln!(out, "file: {}", file_name(path))?;
    writeln!(out, "column family: {}, compression: {:?}", blob.column_family, blob.compression)?;
    for r in &blob.records {
        writeln!(
            out,
            "@{} '{}' => '{}' ({} bytes stored, {:?})",
            r.offset,
            f.show(&r.key),
            f.show(&r.value),
            r.stored_len,
            r.compression
        )?;
    }
    writeln!(out, "records: {}, record bytes: {}", blob.records.len(), blob.record_bytes)?;
    if !blob.finished {
        writeln!(out, "no footer yet (written at commit; its memtable's flush finishes it)")?;
    }
    if blob.torn_tail_bytes > 0 {
        writeln!(out, "torn tail: {} bytes after the last whole record", blob.torn_tail_bytes)?;
    }
    Ok(Outcome::Ok)
}

pub fn dump_wal(out: &mut dyn Write, f: Bytes, path: &Path) -> Result<Outcome> {
    exists(path)?;
    let dump = read_wal(&OsFs, path).with_context(|| format!("reading WAL {}", path.display()))?;
    writeln!(out, "file: {}", file_name(path))?;
    for r in &dump.records {
        match r {
            WalRecord::Header { offset, prev, version, zeros_ahead } => {
                let zeros = if *zeros_ahead { " (zeros ahead)" } else { "" };
                writeln!(out, "@{offset} header: version {version}{zeros}, previous WAL {prev}")?;
            }
            WalRecord::Event { offset, text } => writeln!(out, "@{offset} event: {text}")?,
            WalRecord::Transaction { offset, kind, xid, sequence, entries } => {
                let xid = String::from_utf8_lossy(xid);
                writeln!(
                    out,
                    "@{offset} transaction {kind} {xid:?}: sequence {sequence}, {} entries",
                    entries.len()
                )?;
                for e in entries {
                    writeln!(out, "  {}", show_entry(f, e))?;
                }
            }
            WalRecord::Batch { offset, sequence, entries } => {
                writeln!(out, "@{offset} batch: sequence {sequence}, {} entries", entries.len())?;
                for e in entries {
                    writeln!(out, "  {}", show_entry(f, e))?;
                }
            }
        }
    }
    writeln!(out, "records: {}", dump.records.len())?;
    if dump.torn_tail_bytes > 0 {
        writeln!(
            out,
            "torn tail: {} bytes (an interrupted write; recovery drops it)",
            dump.torn_tail_bytes
        )?;
    }
    if dump.records.is_empty() && dump.torn_tail_bytes > 0 {
        writeln!(out, "DAMAGED: no record decodes (not a WAL, or its first write was cut)")?;
        return Ok(Outcome::Negative);
    }
    if let Some(e) = dump.damage {
        writeln!(out, "DAMAGED: {e}")?;
        return Ok(Outcome::Negative);
    }
    Ok(Outcome::Ok)
}

pub fn dump_manifest(out: &mut dyn Write, f: Bytes, path: &Path) -> Result<Outcome> {
    exists(path)?;
    let records = read_manifest(&OsFs, path)
        .with_context(|| format!("reading MANIFEST {}", path.display()))?;
    writeln!(out, "file: {}", file_name(path))?;
    for (offset, items) in &records {
        writeln!(out, "@{offset} edit")?;
        for item in items {
            let line = match item {
                EditItem::Comparator(c) => format!("comparator {c}"),
                EditItem::LogNumber(n) => format!("log_number {n}"),
                EditItem::NextFile(n) => format!("next_file {n}"),
                EditItem::LastSequence(n) => format!("last_sequence {n}"),
                EditItem::DeleteFile { level, number } => format!("delete L{level} #{number}"),
                EditItem::AddFile(t) => format!(
                    "add L{} #{} size {} entries {} deletions {} [{} .. {}]{}{}{}{}{}",
                    t.level,
                    t.number,
                    t.size,
                    t.entries,
                    t.deletions,
                    show_key(f, &t.smallest),
                    show_key(f, &t.largest),
                    if t.global_seqno == 0 {
                        String::new()
                    } else {
                        format!(" global_seqno {}", t.global_seqno)
                    },
                    if t.data_time == 0 { String::new() } else { format!(" time {}", t.data_time) },
                    if t.path_id == 0 { String::new() } else { format!(" path {}", t.path_id) },
                    if t.blob_refs.is_empty() {
                        String::new()
                    } else {
                        let refs: Vec<String> = t.blob_refs.iter().map(u64::to_string).collect();
                        format!(" blobs {}", refs.join(","))
                    },
                    t.file_checksum.map_or(String::new(), |c| format!(" crc32c {c:08x}"))
                ),
                EditItem::BlobFile { number, records, bytes, file_checksum } => format!(
                    "blob_file #{number} records {records} bytes {bytes}{}",
                    file_checksum.map_or(String::new(), |c| format!(" crc32c {c:08x}"))
                ),
                EditItem::BlobGarbage { number, records, bytes } => {
                    format!("blob_garbage #{number} records {records} bytes {bytes}")
                }
                EditItem::CompactCursor { level, key } => {
                    format!("compact_cursor L{level} {}", show_key(f, key))
                }
            };
            writeln!(out, "  {line}")?;
        }
    }
    writeln!(out, "records: {}", records.len())?;
    Ok(Outcome::Ok)
}
