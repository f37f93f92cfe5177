//! A comparator that panics during writes (the memtable's link runs it) fails the write that
//! ran it and becomes the background error, in every write mode, and leaves no writer
//! waiting: the panic reaches a thread whose write ran the comparator, every other write
//! returns (acknowledged, or refused with the error), later writes are refused, point reads
//! through the memtable the panic cut fail with the error rather than miss what it cut, and a
//! reopen keeps every acknowledged write (`db/write/panics.rs`, contract rule 12).
//! Regression: the panic went to the writer whose link ran it, and the DB went on
//! acknowledging writes into a memtable whose list the panic had cut mid-link; a flush then
//! wrote it without the entries that link had taken, and let their WAL go.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;

use strata::comparator::KeyOrder;
use strata::{Db, IteratorMode, Options, WriteOptions};

const WRITERS: usize = 4;
const WRITES: usize = 60;
/// The key the comparator refuses to compare while armed.
const BOOM: &[u8] = b"t0/boom";

#[derive(Clone, Copy, Debug)]
enum Mode {
    /// Unsynced, each write a group of its own (`write_alone`).
    Alone,
    /// Synced: groups with a leader and followers.
    Synced,
    /// The leader inserts every member's batch.
    LeaderInserts,
    Pipelined,
    Unordered,
}

#[derive(Debug, PartialEq)]
enum Outcome {
    Acknowledged,
    /// With the error's message.
    Refused(String),
    Panicked,
}

fn order(armed: Arc<AtomicBool>) -> KeyOrder {
    KeyOrder::custom(
        "test.panics-on-boom",
        Box::new(move |a: &[u8], b: &[u8]| {
            let refused = armed.load(Ordering::Relaxed) && (a == BOOM || b == BOOM);
            assert!(!refused, "the comparator refuses {}", String::from_utf8_lossy(BOOM));
            a.cmp(b)
        }),
    )
}

fn options(mode: Mode, armed: &Arc<AtomicBool>) -> Options {
    let mut o = Options {
        allow_concurrent_memtable_write: !matches!(mode, Mode::LeaderInserts),
        enable_pipelined_write: matches!(mode, Mode::Pipelined),
        unordered_write: matches!(mode, Mode::Unordered),
        ..Options::default()
    };
    o.create_if_missing(true);
    o.set_key_order(order(armed.clone()));
    o
}

fn key(w: usize, i: usize) -> Vec<u8> {
    format!("t{w}/{i:03}").into_bytes()
}

/// Writer `w`'s writes, each with its outcome; writer 0's tenth write is [`BOOM`].
fn write_all(db: &Db, w: usize, sync: bool) -> Vec<(Vec<u8>, Outcome)> {
    let mut opts = WriteOptions::default();
    opts.set_sync(sync);
    let mut out = Vec::new();
    for i in 0..WRITES {
        let k = if w == 0 && i == 10 { BOOM.to_vec() } else { key(w, i) };
        let outcome = match catch_unwind(AssertUnwindSafe(|| db.put_opt(&k, b"v", &opts))) {
            Ok(Ok(())) => Outcome::Acknowledged,
            Ok(Err(e)) => Outcome::Refused(e.to_string()),
            Err(_) => Outcome::Panicked,
        };
        out.push((k, outcome));
    }
    out
}

fn run(mode: Mode, dir: &Path) {
    let armed = Arc::new(AtomicBool::new(true));
    let db = Arc::new(Db::open(&options(mode, &armed), dir).unwrap());
    for i in 0..50 {
        // Keys for the armed comparator to meet `BOOM` among.
        db.put(format!("t0/{i:03}x"), "v").unwrap();
    }
    let sync = matches!(mode, Mode::Synced);
    let (tx, rx) = mpsc::channel();
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (db, tx) = (db.clone(), tx.clone());
            thread::spawn(move || tx.send(write_all(&db, w, sync)).unwrap())
        })
        .collect();
    let mut outcomes = Vec::new();
    for _ in 0..WRITERS {
        let r = rx.recv_timeout(Duration::from_secs(60));
        outcomes.extend(r.unwrap_or_else(|_| panic!("{mode:?}: a writer still waits after 60 s")));
    }
    for w in writers {
        w.join().unwrap();
    }
    let panicked = outcomes.iter().filter(|(_, o)| *o == Outcome::Panicked).count();
    assert!(panicked >= 1, "{mode:?}: the comparator's panic reached a writer");
    for (_, o) in &outcomes {
        if let Outcome::Refused(e) = o {
            assert!(e.contains("panic"), "{mode:?}: refused for the panic: {e}");
        }
    }
    armed.store(false, Ordering::Relaxed);
    let e = db.put("after", "v").unwrap_err();
    assert!(e.to_string().contains("panic"), "{e}");
    // The link the panic cut left entries unreachable: a read that could have missed one
    // (the newest version of its key among them) fails instead of answering.
    let e = db.get("t0/000x").unwrap_err();
    assert!(e.to_string().contains("key order panicked"), "{mode:?}: {e}");
    drop(db);

    let db = Db::open(&options(mode, &armed), dir).unwrap();
    for (k, o) in &outcomes {
        if *o == Outcome::Acknowledged {
            assert!(db.get(k).unwrap().is_some(), "{mode:?}: acknowledged {k:?} kept");
        }
    }
    db.put("after", "v").unwrap();
}

#[test]
fn a_comparator_panic_in_a_write_fails_writes_in_every_mode_and_no_writer_waits() {
    for mode in [Mode::Alone, Mode::Synced, Mode::LeaderInserts, Mode::Pipelined, Mode::Unordered] {
        let dir = tempfile::tempdir().unwrap();
        run(mode, dir.path());
    }
}

/// A read whose link of pending entries panics in the comparator poisons the memtable: its
/// iterators fail instead of ending early, so do point reads through it (one of the cut
/// entries is `BOOM`'s: a read of it would have answered "not found"), the flush fails (a
/// flush would drop the WAL that still holds the entries the link cut off), the next write
/// is refused instead of acknowledged unreachable, and a reopen has every acknowledged write.
#[test]
fn a_comparator_panic_in_a_read_refuses_writes_and_flushes_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let armed = Arc::new(AtomicBool::new(false));
    let db = Db::open(&options(Mode::Alone, &armed), dir.path()).unwrap();
    let mut written = Vec::new();
    for i in 0..20 {
        // Linked sixteen at a time: the last few, `BOOM` among them, wait for a link.
        let k = if i == 17 { BOOM.to_vec() } else { key(1, i) };
        db.put(&k, b"v").unwrap();
        written.push(k);
    }
    armed.store(true, Ordering::Relaxed);
    let read = catch_unwind(AssertUnwindSafe(|| db.iterator(IteratorMode::Start).count()));
    assert!(read.is_err(), "the iterator's link ran the comparator on BOOM");
    armed.store(false, Ordering::Relaxed);
    // An iterator over the memtable says so rather than end early.
    let e = db.iterator(IteratorMode::Start).find_map(Result::err).expect("an error");
    assert!(e.to_string().contains("key order panicked"), "{e}");
    for k in [BOOM, &key(1, 0)[..]] {
        let e = db.get(k).unwrap_err();
        assert!(e.to_string().contains("key order panicked"), "{e}");
    }
    let e = db.flush().unwrap_err();
    assert!(e.to_string().contains("key order panicked"), "{e}");
    let e = db.put("after", "v").unwrap_err();
    assert!(e.to_string().contains("key order panicked"), "{e}");
    drop(db);

    let db = Db::open(&options(Mode::Alone, &armed), dir.path()).unwrap();
    for k in &written {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(&b"v"[..]), "{k:?} kept");
    }
}
