//! The body of the `rdb_file` fuzz target (`fuzz/fuzz_targets/rdb_file.rs`), shared with the
//! corpus replay test (`tests/protocol/fuzz_corpus.rs`): the bytes read by the RDB file
//! reader (`types::rdb::file`) with their size known and a few bytes a call (the size
//! unknown, as a stream), with the same outcome either way and never a panic; a file that
//! reads through is written again and reads back with the same keys and expiry times (a
//! value may come back in another encoding's member order: a set written as an intset is
//! sorted).

use crate::types::rdb::file::{FileReader, FileWriter, Record};
use crate::types::rdb::Encodings;

/// A source that gives at most 61 bytes a call.
struct Trickle<'a>(&'a [u8]);

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.0.len()).min(61);
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

/// Every record of the file `r` holds, or `None` where it does not read.
fn records(r: impl std::io::Read, total: Option<u64>) -> Option<Vec<Record>> {
    let mut f = FileReader::new(r, "input", total).ok()?;
    let mut out = Vec::new();
    while let Some(rec) = f.next_record().ok()? {
        out.push(rec);
    }
    Some(out)
}

/// The keys and expiry times among `recs`, by database.
fn keys(recs: Vec<Record>) -> Vec<(u64, Vec<u8>, Option<u64>)> {
    let mut db = 0;
    let mut out = Vec::new();
    for rec in recs {
        match rec {
            Record::Db(d) => db = d,
            Record::Key { key, expire_ms, .. } => out.push((db, key, expire_ms)),
            _ => {}
        }
    }
    out
}

/// Runs the checks of the module doc on `data`; whether it read through.
///
/// # Panics
/// When a check fails: that is the finding.
pub fn rdb_file(data: &[u8]) -> bool {
    let whole = records(data, Some(data.len() as u64));
    let trickled = records(Trickle(data), None);
    assert_eq!(whole, trickled, "read whole and a few bytes a call");
    let Some(recs) = whole else { return false };
    let mut w = FileWriter::new(Vec::new(), &[]).expect("writes to memory");
    for rec in &recs {
        let written = match rec {
            Record::Db(db) => w.select_db(*db, 0, 0),
            Record::Function(code) => w.function(code),
            Record::Key { key, value, expire_ms, .. } => {
                w.key(key, value, *expire_ms, &Encodings::default())
            }
            Record::Aux { .. } | Record::Sizes { .. } => Ok(()),
        };
        written.expect("writes to memory");
    }
    let again = w.finish().expect("writes to memory");
    let back = records(again.as_slice(), Some(again.len() as u64)).expect("its own file reads");
    assert_eq!(keys(back), keys(recs), "the keys written again");
    true
}
