//! A DB in a key order other than bytewise (`Options::set_comparator`) under a random workload
//! (puts, deletes, range deletes, merges, snapshots, flushes, compactions in each style,
//! reopens) stays equal to a model kept in that order: full scans both ways, seeks, bounded
//! scans, point reads and reads at snapshots. Two orders: reverse bytewise, and shortest key
//! first (numbers written in decimal sort as numbers), each far from bytewise.

use std::cmp::Ordering;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::comparator::KeyOrder;
use strata::env::MemFs;
use strata::merge_operator::StringAppendOperator;
use strata::{CompactionStyle, CompressionType, Db, IteratorMode, Options, ReadOptions};

#[derive(Clone, Copy, Debug)]
enum Kind {
    Reverse,
    ShortestFirst,
}

fn compare(kind: Kind, a: &[u8], b: &[u8]) -> Ordering {
    match kind {
        Kind::Reverse => b.cmp(a),
        Kind::ShortestFirst => a.len().cmp(&b.len()).then_with(|| a.cmp(b)),
    }
}

fn order(kind: Kind) -> KeyOrder {
    KeyOrder::custom(format!("test.{kind:?}"), Box::new(move |a, b| compare(kind, a, b)))
}

/// The model: live keys and values, kept sorted in the DB's order.
#[derive(Clone)]
struct Model {
    kind: Kind,
    entries: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Model {
    fn find(&self, k: &[u8]) -> Result<usize, usize> {
        self.entries.binary_search_by(|(e, _)| compare(self.kind, e, k))
    }

    fn put(&mut self, k: &[u8], v: &[u8]) {
        match self.find(k) {
            Ok(i) => self.entries[i].1 = v.to_vec(),
            Err(i) => self.entries.insert(i, (k.to_vec(), v.to_vec())),
        }
    }

    fn delete(&mut self, k: &[u8]) {
        if let Ok(i) = self.find(k) {
            self.entries.remove(i);
        }
    }

    fn merge(&mut self, k: &[u8], operand: &[u8]) {
        match self.find(k) {
            Ok(i) => {
                let v = &mut self.entries[i].1;
                v.push(b',');
                v.extend_from_slice(operand);
            }
            Err(i) => self.entries.insert(i, (k.to_vec(), operand.to_vec())),
        }
    }

    fn delete_range(&mut self, b: &[u8], e: &[u8]) {
        let kind = self.kind;
        self.entries.retain(|(k, _)| {
            !(compare(kind, b, k) != Ordering::Greater && compare(kind, k, e) == Ordering::Less)
        });
    }

    fn get(&self, k: &[u8]) -> Option<&[u8]> {
        self.find(k).ok().map(|i| self.entries[i].1.as_slice())
    }

    /// The entries in `[lo, hi)` (in the order).
    fn range(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Vec<(Vec<u8>, Vec<u8>)> {
        let kind = self.kind;
        self.entries
            .iter()
            .filter(|(k, _)| {
                lo.is_none_or(|l| compare(kind, l, k) != Ordering::Greater)
                    && hi.is_none_or(|h| compare(kind, k, h) == Ordering::Less)
            })
            .cloned()
            .collect()
    }
}

fn opts(fs: &MemFs, kind: Kind, style: CompactionStyle) -> Options {
    let mut o = Options {
        fs: Arc::new(fs.clone()),
        create_if_missing: true,
        write_buffer_size: 16 << 10,
        block_size: 256,
        index_block_restart_interval: 2,
        level0_file_num_compaction_trigger: 2,
        max_bytes_for_level_base: 48 << 10,
        max_bytes_for_level_multiplier: 4.0,
        target_file_size_base: 16 << 10,
        max_subcompactions: 2,
        compaction_style: style,
        merge_operator: Some(Arc::new(StringAppendOperator::new(b","))),
        compression: CompressionType::None,
        ..Options::default()
    };
    o.set_key_order(order(kind));
    o
}

fn key(rng: &mut StdRng) -> Vec<u8> {
    rng.gen_range(0..400u32).to_string().into_bytes()
}

fn scan(db: &Db, ro: &ReadOptions) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.iterator_opt(IteratorMode::Start, ro)
        .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
        .collect()
}

fn check(db: &Db, model: &Model, rng: &mut StdRng, step: usize) {
    let ro = ReadOptions::default();
    assert_eq!(scan(db, &ro), model.entries, "step {step}: forward scan");
    let back: Vec<(Vec<u8>, Vec<u8>)> = db
        .iterator(IteratorMode::End)
        .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
        .collect();
    let mut want = model.entries.clone();
    want.reverse();
    assert_eq!(back, want, "step {step}: backward scan");
    let mut it = db.raw_iterator();
    for _ in 0..20 {
        let t = key(rng);
        let at_or_after = model.range(Some(&t), None);
        it.seek(&t);
        assert_eq!(it.key(), at_or_after.first().map(|(k, _)| k.as_slice()), "step {step}: seek");
        let before = model.range(None, Some(&t));
        let at_or_before = match model.get(&t) {
            Some(_) => Some(t.as_slice()),
            None => before.last().map(|(k, _)| k.as_slice()),
        };
        it.seek_for_prev(&t);
        assert_eq!(it.key(), at_or_before, "step {step}: seek_for_prev {t:?}");
        assert_eq!(db.get(&t).unwrap().as_deref(), model.get(&t), "step {step}: get {t:?}");
    }
    let (a, b) = (key(rng), key(rng));
    let (lo, hi) = if compare(model.kind, &a, &b) == Ordering::Greater { (b, a) } else { (a, b) };
    let mut ro = ReadOptions::default();
    ro.set_iterate_lower_bound(lo.clone());
    ro.set_iterate_upper_bound(hi.clone());
    assert_eq!(scan(db, &ro), model.range(Some(&lo), Some(&hi)), "step {step}: bounded scan");
}

fn run(kind: Kind, style: CompactionStyle, seed: u64, steps: usize) {
    run_with(kind, style, seed, steps, |_| {});
}

fn run_with(
    kind: Kind,
    style: CompactionStyle,
    seed: u64,
    steps: usize,
    tune: impl FnOnce(&mut Options),
) {
    let mut rng = StdRng::seed_from_u64(seed);
    let fs = MemFs::new();
    let mut o = opts(&fs, kind, style);
    tune(&mut o);
    let mut db = Db::open(&o, "/db").unwrap();
    let mut model = Model { kind, entries: Vec::new() };
    let mut snapshot: Option<(strata::Snapshot<'static>, Model)> = None;
    for step in 0..steps {
        match rng.gen_range(0..100) {
            0..=59 => {
                let (k, v) = (key(&mut rng), format!("v{step}").into_bytes());
                db.put(&k, &v).unwrap();
                model.put(&k, &v);
            }
            60..=69 => {
                let k = key(&mut rng);
                db.delete(&k).unwrap();
                model.delete(&k);
            }
            70..=77 => {
                let (k, v) = (key(&mut rng), format!("m{step}").into_bytes());
                db.merge(&k, &v).unwrap();
                model.merge(&k, &v);
            }
            78..=81 => {
                let (b, e) = (key(&mut rng), key(&mut rng));
                if compare(kind, &b, &e) == Ordering::Greater {
                    let e = db.delete_range(&b, &e).unwrap_err();
                    assert!(e.to_string().contains("is after end key"), "{e}");
                } else {
                    db.delete_range(&b, &e).unwrap();
                    model.delete_range(&b, &e);
                }
            }
            82..=85 => db.flush().unwrap(),
            86..=87 => db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap(),
            88 => {
                let (b, e) = (key(&mut rng), key(&mut rng));
                let (b, e) =
                    if compare(kind, &b, &e) == Ordering::Greater { (e, b) } else { (b, e) };
                db.compact_range(Some(&b), Some(&e)).unwrap();
            }
            89..=90 => {
                drop(snapshot.take());
                drop(db);
                db = Db::open(&o, "/db").unwrap();
            }
            91..=93 => snapshot = Some((db.snapshot(), model.clone())),
            _ => {
                if let Some((s, at)) = &snapshot {
                    let mut ro = ReadOptions::default();
                    ro.set_snapshot(s);
                    assert_eq!(scan(&db, &ro), at.entries, "step {step}: snapshot scan");
                }
            }
        }
        if step % 97 == 0 || step + 1 == steps {
            check(&db, &model, &mut rng, step);
        }
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    check(&db, &model, &mut rng, steps);
    drop(snapshot);
    drop(db);
    let db = Db::open(&o, "/db").unwrap();
    check(&db, &model, &mut rng, steps + 1);
}

#[test]
fn reverse_order_leveled() {
    run(Kind::Reverse, CompactionStyle::Leveled, 1, 3000);
}

#[test]
fn shortest_first_order_leveled() {
    run(Kind::ShortestFirst, CompactionStyle::Leveled, 2, 3000);
}

#[test]
fn shortest_first_order_partitioned_index() {
    run_with(Kind::ShortestFirst, CompactionStyle::Universal, 5, 1500, |o| {
        o.index_type = strata::IndexType::TwoLevel;
        o.partition_filters = true;
        o.metadata_block_size = 256;
        o.bloom_bits_per_key = 10;
    });
}

#[test]
fn reverse_order_universal() {
    run(Kind::Reverse, CompactionStyle::Universal, 3, 2000);
}

#[test]
fn shortest_first_order_universal() {
    run(Kind::ShortestFirst, CompactionStyle::Universal, 4, 2000);
}
