#![no_main]
//! Fuzz target `rdb_file`: the reader of whole RDB files (a replica's full sync, REPLICAOF)
//! never panics, hangs or allocates what the input does not hold, read whole (its size known)
//! and a few bytes a call (its size unknown, as a stream); what reads through is written again
//! and reads back with the same keys and expiry times (a value may come back in another
//! encoding's member order: a set written as an intset is sorted).

use libfuzzer_sys::fuzz_target;
use strata_server::types::rdb::file::{FileReader, FileWriter, Record};
use strata_server::types::rdb::Encodings;

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

fn records(r: impl std::io::Read, total: Option<u64>) -> Option<Vec<Record>> {
    let mut f = FileReader::new(r, "input", total).ok()?;
    let mut out = Vec::new();
    loop {
        match f.next_record() {
            Ok(Some(rec)) => out.push(rec),
            Ok(None) => return Some(out),
            Err(_) => return None,
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let whole = records(data, Some(data.len() as u64));
    let trickled = records(Trickle(data), None);
    assert_eq!(whole.is_some(), trickled.is_some());
    let Some(recs) = whole else { return };
    let mut w = FileWriter::new(Vec::new(), &[]).unwrap();
    let enc = Encodings::default();
    let mut kept = Vec::new();
    for rec in recs {
        match rec {
            Record::Db(db) => w.select_db(db, 0, 0).unwrap(),
            Record::Function(code) => w.function(&code).unwrap(),
            Record::Key { key, value, expire_ms, .. } => {
                w.key(&key, &value, expire_ms, &enc).unwrap();
                kept.push((key, expire_ms));
            }
            Record::Aux { .. } | Record::Sizes { .. } => {}
        }
    }
    let again = w.finish().unwrap();
    let back: Vec<_> = records(again.as_slice(), Some(again.len() as u64))
        .unwrap()
        .into_iter()
        .filter_map(|r| match r {
            Record::Key { key, expire_ms, .. } => Some((key, expire_ms)),
            _ => None,
        })
        .collect();
    assert_eq!(back, kept);
});
