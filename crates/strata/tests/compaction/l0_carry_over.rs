//! L0 carry-over (`compaction/l0_batch.rs`): bursts of writes that fill L0 faster than L0 ->
//! base compactions drain it, each followed by a pause. The files a burst leaves in L0 are
//! merged there and go down with a later batch. The DB stays equal to a model (puts, deletes,
//! merges) after every pause, after the last compactions and across a reopen, and the info
//! LOG shows that carry-overs happened.

use std::collections::BTreeMap;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::merge_operator::builtin_merge_operator;
use strata::{CompressionType, Db, IteratorMode, Options};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const KEYS: u32 = 200_000;

fn opts() -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: 64 << 10,
        level0_file_num_compaction_trigger: 2,
        level0_slowdown_writes_trigger: 20,
        level0_stop_writes_trigger: 36,
        // Everything in one level (the base level), which each L0 compaction rewrites.
        max_bytes_for_level_base: 64 << 20,
        target_file_size_base: 512 << 10,
        compression: CompressionType::None,
        merge_operator: builtin_merge_operator("uint64add"),
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:07}").into_bytes()
}

/// Keys below 1000 are `uint64add` counters; the rest hold 100 random bytes.
fn write_one(db: &Db, model: &mut Model, rng: &mut StdRng) {
    let i = rng.gen_range(0..KEYS);
    let k = key(i);
    if i < 1000 {
        let add = rng.gen_range(1..100u64);
        db.merge(&k, add.to_le_bytes()).unwrap();
        let old = model.get(&k).map_or(0, |v| u64::from_le_bytes(v[..8].try_into().unwrap()));
        model.insert(k, (old + add).to_le_bytes().to_vec());
    } else if rng.gen_bool(0.1) {
        db.delete(&k).unwrap();
        model.remove(&k);
    } else {
        let v: Vec<u8> = (0..100).map(|_| rng.gen()).collect();
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
}

fn check(db: &Db, model: &Model, when: &str) {
    let got: Model = db
        .iterator(IteratorMode::Start)
        .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())))
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(got.len(), model.len(), "{when}: scan length");
    assert!(got == *model, "{when}: scan differs from the model");
    for (k, v) in model.iter().step_by(97) {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(&v[..]), "{when}: get {k:?}");
    }
}

#[test]
fn bursts_with_pauses_carry_l0_over_and_keep_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(0xca77);
    let mut model = Model::new();
    let db = Db::open(&opts(), dir.path()).unwrap();
    // A base level of ~22 MB, far more than L0's largest batch: rewriting it for a few files
    // costs more than merging them, and takes longer than a few flushes.
    for i in 1000..KEYS {
        let v: Vec<u8> = (0..100).map(|_| rng.gen()).collect();
        db.put(key(i), &v).unwrap();
        model.insert(key(i), v);
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    for burst in 0..8 {
        // Some 12 memtables' worth, as fast as the writes go.
        for _ in 0..6_000 {
            write_one(&db, &mut model, &mut rng);
        }
        // Flushes stop; after two of their mean intervals the batch ends.
        std::thread::sleep(Duration::from_millis(400));
        check(&db, &model, &format!("after burst {burst}"));
    }
    db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
    check(&db, &model, "after the last compactions");
    drop(db);
    let log = std::fs::read_to_string(dir.path().join("LOG")).unwrap();
    let carried = log.matches("L0 carry-over: writes paused").count();
    eprintln!("{carried} L0 carry-overs in 8 bursts");
    assert!(carried >= 1, "no L0 carry-over in 8 bursts; the LOG:\n{log}");
    let db = Db::open(&opts(), dir.path()).unwrap();
    check(&db, &model, "after reopening");
}
