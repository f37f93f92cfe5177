//! The bodies of the fuzz targets in `fuzz/fuzz_targets/`, shared with the corpus replay test
//! (`tests/faults/fuzz_corpus.rs`), which runs every target over every committed corpus file on stable
//! Rust without cargo-fuzz. A target returns normally on any input; a panic is a finding.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use strata::env::{CrashMode, FaultFs, MemFs};
use strata::{fuzz_api, Db, IteratorMode, Options, WriteBatch, WriteOptions};

/// A fuzz target's body.
pub type Target = fn(&[u8]);

/// Every target, by the name of its `fuzz/fuzz_targets/*.rs` file and corpus directory.
pub const TARGETS: &[(&str, Target)] = &[
    ("wal_reader", wal_reader),
    ("block", block),
    ("table", table),
    ("version_edit", version_edit),
    ("manifest", manifest),
    ("write_batch", write_batch),
    ("db_ops", db_ops),
    ("blob_file", blob_file),
    ("db_blobs", db_blobs),
];

pub fn wal_reader(data: &[u8]) {
    let _ = fuzz_api::wal_reader(data);
}

pub fn block(data: &[u8]) {
    let _ = fuzz_api::block_decoder(data);
}

pub fn table(data: &[u8]) {
    let _ = fuzz_api::table_open(data);
}

pub fn version_edit(data: &[u8]) {
    let _ = fuzz_api::version_edit(data);
}

pub fn manifest(data: &[u8]) {
    let _ = fuzz_api::manifest(data);
}

pub fn write_batch(data: &[u8]) {
    let _ = fuzz_api::write_batch(data);
}

pub fn blob_file(data: &[u8]) {
    let _ = fuzz_api::blob_file(data);
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const VALUE_KEYS: u8 = 8;
const COUNTER_KEYS: u8 = 8;

fn fkey(b: u8) -> Vec<u8> {
    let i = b % (VALUE_KEYS + COUNTER_KEYS);
    if i < VALUE_KEYS {
        format!("v{i}").into_bytes()
    } else {
        format!("c{i}").into_bytes()
    }
}

fn is_counter(k: &[u8]) -> bool {
    k[0] == b'c'
}

fn opts(fs: &FaultFs, blobs: Option<u8>) -> Options {
    let mut o = Options {
        fs: Arc::new(fs.clone()),
        merge_operator: strata::merge_operator::builtin_merge_operator("uint64add"),
        write_buffer_size: 4096,
        block_size: 128,
        ..Options::default()
    };
    if let Some(bits) = blobs {
        let b = &mut o.blob;
        b.enable_blob_files = true;
        // Values of 0..40 bytes and of 3,000: some of each size on both sides of the bound.
        b.min_blob_size = 20;
        b.blob_file_size = if bits & 0x08 != 0 { 256 } else { 1 << 20 };
        b.write_blobs_at_commit = bits & 0x01 != 0;
        b.enable_blob_gc = bits & 0x02 != 0;
        b.blob_gc_age_cutoff = 1.0;
        if bits & 0x04 != 0 {
            b.blob_compression_type = Some(strata::CompressionType::Snappy);
        }
    }
    o
}

/// One write of the op sequence: a put, a deletion, a merge operand, or a wide-column entity
/// put (its default column the value, beside a column `x`).
enum Update {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    Merge(Vec<u8>, u64),
    Entity(Vec<u8>, Vec<u8>),
}

/// The columns an `Update::Entity` of default value `v` writes.
fn entity_columns(v: &[u8]) -> [(&[u8], &[u8]); 2] {
    [(b"", v), (b"x", b"side")]
}

fn apply(m: &mut Model, u: &Update) {
    match u {
        Update::Put(k, v) | Update::Entity(k, v) => {
            m.insert(k.clone(), v.clone());
        }
        Update::Delete(k) => {
            m.remove(k);
        }
        Update::Merge(k, x) => {
            let base = m.get(k).and_then(|v| <[u8; 8]>::try_from(v.as_slice()).ok());
            let base = base.map_or(0, u64::from_le_bytes);
            m.insert(k.clone(), base.wrapping_add(*x).to_le_bytes().to_vec());
        }
    }
}

fn read_model(db: &Db) -> Model {
    let mut m = Model::new();
    for item in db.iterator(IteratorMode::Start) {
        let (k, v) = item.expect("iterating a healthy DB");
        m.insert(k.to_vec(), v.to_vec());
    }
    m
}

/// Operation-sequence target: the bytes drive puts, wide-column entity puts (read through
/// their default column), deletes, `uint64add` merges, batches,
/// flushes, reads, clean reopens and simulated crashes (process kill, power loss, torn power
/// loss) of a DB on `MemFs`, checked against a `BTreeMap` model. After a crash the DB must
/// equal the model after some prefix of the writes that includes every synced one (every
/// acknowledged one for a process kill).
pub fn db_ops(data: &[u8]) {
    run_ops(data, None);
}

/// [`db_ops`] with blob files: the first byte picks how values of 20 bytes or more are kept
/// (bit 0: written at commit, else by flushes; bit 1: garbage collection of every file; bit 2:
/// Snappy; bit 3: files of 256 bytes), the rest are operations.
pub fn db_blobs(data: &[u8]) {
    let Some((&bits, ops)) = data.split_first() else { return };
    run_ops(ops, Some(bits));
}

fn run_ops(data: &[u8], blobs: Option<u8>) {
    let opts = |fs: &FaultFs| opts(fs, blobs);
    let mem = MemFs::new();
    let path = Path::new("/db");
    let mut view = FaultFs::new(Arc::new(mem.clone()), 1);
    let mut db = Db::open(&opts(&view), path).expect("open a fresh DB");
    let mut model = Model::new();
    // States after each write since the last crash or reopen (index 0 = before any).
    let mut history: Vec<Model> = vec![Model::new()];
    let mut last_synced = 0usize;
    let mut it = data.iter().copied();
    let mut steps = 0;
    while let Some(op) = it.next() {
        steps += 1;
        if steps > 300 {
            break;
        }
        let a = it.next().unwrap_or(0);
        let b = it.next().unwrap_or(0);
        let sync = op & 0x80 != 0;
        let wo = WriteOptions { sync, disable_wal: false, ..WriteOptions::default() };
        let mut updates = Vec::new();
        match op & 0x0f {
            0..=3 => {
                let k = fkey(a);
                let u = if is_counter(&k) {
                    if op & 0x40 != 0 {
                        Update::Put(k, u64::from(b).to_le_bytes().to_vec())
                    } else {
                        Update::Merge(k, u64::from(b) + 1)
                    }
                } else {
                    let len = if b > 250 { 3000 } else { usize::from(b % 40) };
                    Update::Put(k, vec![b'a' + b % 26; len])
                };
                updates.push(u);
            }
            4 | 5 => updates.push(Update::Delete(fkey(a))),
            6 | 7 => {
                for j in 0..(b % 5 + 2) {
                    let k = fkey(a.wrapping_add(j.wrapping_mul(3)));
                    if updates.iter().any(|u| matches!(u, Update::Put(x, _) | Update::Delete(x) | Update::Merge(x, _) | Update::Entity(x, _) if *x == k)) {
                        continue;
                    }
                    updates.push(match (is_counter(&k), j % 3) {
                        (_, 0) => Update::Delete(k),
                        (true, _) => Update::Merge(k, u64::from(j) + 7),
                        (false, 1) => Update::Put(k, vec![b'0' + j; usize::from(b % 17)]),
                        (false, _) => Update::Entity(k, vec![b'0' + j; usize::from(b % 13)]),
                    });
                }
            }
            8 => {
                let k = fkey(a);
                assert_eq!(db.get(&k).expect("get"), model.get(&k).cloned(), "get {k:?}");
            }
            9 => assert!(db.flush().is_ok(), "flush failed without faults"),
            10 => assert_eq!(read_model(&db), model, "full scan"),
            11 => {
                drop(db);
                view = FaultFs::new(Arc::new(mem.clone()), 2);
                db = Db::open(&opts(&view), path).expect("clean reopen");
                assert_eq!(read_model(&db), model, "after a clean reopen");
                history = vec![model.clone()];
                last_synced = 0;
            }
            15 => {
                let k = fkey(a);
                let v = if is_counter(&k) {
                    u64::from(b).to_le_bytes().to_vec()
                } else {
                    vec![b'A' + b % 26; usize::from(b % 40)]
                };
                updates.push(Update::Entity(k, v));
            }
            12..=14 => {
                let mode = match op & 0x0f {
                    12 => CrashMode::ProcessKill,
                    13 => CrashMode::PowerLoss,
                    _ => CrashMode::TornPowerLoss { seed: u64::from(a) << 8 | u64::from(b) },
                };
                view.kill();
                mem.crash(mode);
                drop(db);
                view = FaultFs::new(Arc::new(mem.clone()), 3);
                db = Db::open(&opts(&view), path).expect("recovery after a crash");
                let got = read_model(&db);
                let from =
                    if mode == CrashMode::ProcessKill { history.len() - 1 } else { last_synced };
                let p = (from..history.len()).rev().find(|&p| history[p] == got);
                let Some(p) = p else {
                    panic!(
                        "{mode:?}: recovered state is no prefix >= {from} of {} writes",
                        history.len() - 1
                    )
                };
                model = history[p].clone();
                history = vec![model.clone()];
                last_synced = 0;
            }
            _ => {}
        }
        if updates.is_empty() {
            continue;
        }
        let r = if updates.len() == 1 {
            match &updates[0] {
                Update::Put(k, v) => db.put_opt(k, v, &wo),
                Update::Delete(k) => db.delete_opt(k, &wo),
                Update::Merge(k, x) => db.merge_opt(k, x.to_le_bytes(), &wo),
                Update::Entity(k, v) => {
                    let mut batch = WriteBatch::new();
                    batch.put_entity(k, &entity_columns(v));
                    db.write_opt(batch, &wo)
                }
            }
        } else {
            let mut batch = WriteBatch::new();
            for u in &updates {
                match u {
                    Update::Put(k, v) => batch.put(k, v),
                    Update::Delete(k) => batch.delete(k),
                    Update::Merge(k, x) => batch.merge(k, x.to_le_bytes()),
                    Update::Entity(k, v) => batch.put_entity(k, &entity_columns(v)),
                }
            }
            db.write_opt(batch, &wo)
        };
        r.expect("write without faults");
        for u in &updates {
            apply(&mut model, u);
        }
        history.push(model.clone());
        if sync {
            last_synced = history.len() - 1;
        }
    }
}

/// Writes the seed corpus (a few small, well-formed inputs per target) under `dir`.
pub fn write_seed_corpus(dir: &Path) -> std::io::Result<()> {
    let put = |target: &str, name: &str, data: &[u8]| -> std::io::Result<()> {
        let d = dir.join(target);
        std::fs::create_dir_all(&d)?;
        std::fs::write(d.join(name), data)
    };
    let b1 = fuzz_api::build_write_batch(1, 1);
    let b2 = fuzz_api::build_write_batch(100, 5);
    put("write_batch", "seed-1", &b1)?;
    put("write_batch", "seed-5", &b2)?;
    put("write_batch", "seed-empty", &fuzz_api::build_write_batch(7, 0))?;
    put("wal_reader", "seed-two-batches", &fuzz_api::build_wal(&[&b1, &b2]))?;
    let big = vec![b'x'; 40_000];
    put("wal_reader", "seed-fragmented", &fuzz_api::build_wal(&[&b1, &big, &b2]))?;
    put("wal_reader", "seed-empty", &[])?;
    put("block", "seed-r1", &fuzz_api::build_block(10, 1))?;
    put("block", "seed-r4", &fuzz_api::build_block(20, 4))?;
    put("block", "seed-r16", &fuzz_api::build_block(40, 16))?;
    put("table", "seed-plain", &fuzz_api::build_table(30, 256, 0))?;
    put("table", "seed-snappy", &fuzz_api::build_table(60, 512, 1))?;
    put("table", "seed-one", &fuzz_api::build_table(1, 4096, 0))?;
    put("version_edit", "seed-first", &fuzz_api::build_version_edit(0, true))?;
    put("version_edit", "seed-files", &fuzz_api::build_version_edit(3, false))?;
    let paths = fuzz_api::build_version_edit_at(3, false, |i| i as u32 % 3);
    put("version_edit", "seed-paths", &paths)?;
    put("manifest", "seed-1", &fuzz_api::build_manifest(0))?;
    put("manifest", "seed-3", &fuzz_api::build_manifest(3))?;
    // db_ops: op byte, key byte, value byte (see `db_ops`).
    put("db_ops", "seed-puts-crash", &[0x80, 1, 5, 0, 2, 6, 0x06, 3, 4, 0x0d, 0, 0, 0x08, 1, 0])?;
    put("db_ops", "seed-merge-flush", &[0, 9, 3, 0, 9, 4, 0x09, 0, 0, 0x0a, 0, 0, 0x0c, 0, 0])?;
    put("db_ops", "seed-torn", &[0x80, 2, 255, 0x86, 5, 3, 0, 3, 1, 0x0e, 7, 9, 0x0b, 0, 0])?;
    put("blob_file", "seed-plain", &fuzz_api::build_blob_file(6, 0))?;
    put("blob_file", "seed-snappy", &fuzz_api::build_blob_file(8, 1))?;
    put("blob_file", "seed-zstd", &fuzz_api::build_blob_file(5, 7))?;
    put("blob_file", "seed-empty", &fuzz_api::build_blob_file(0, 0))?;
    // db_blobs: the options byte, then db_ops's operations.
    let big = [0, 1, 255, 0, 2, 30, 0x09, 0, 0, 0, 1, 255, 0x0a, 0, 0];
    for (name, bits) in [("seed-flush", 0x02), ("seed-commit", 0x01), ("seed-commit-gc", 0x0b)] {
        put("db_blobs", name, &[&[bits][..], &big, &[0x0c, 0, 0, 0x08, 1, 0]].concat())?;
    }
    put("db_blobs", "seed-torn", &[0x05, 0x80, 2, 255, 0x86, 5, 30, 0, 3, 35, 0x0e, 7, 9])?;
    Ok(())
}
