//! kill -9 during a write load with `--appendfsync always`: every acknowledged write is there
//! after restart. Writers own disjoint keys and write increasing values; the oracle keeps, per
//! key, the last acknowledged value and the one in flight when the process died; after the
//! restart each key holds one of those two (never an older value, never a lost ack).
//! Odd writers write hashes instead of strings: field `v` holds the value, and each write to a
//! key adds a new filler field, so with `--hash-max-listpack-entries 8` a hash starts compact
//! (one entry) and converts to sub-keys after a few writes; kills land on either encoding and
//! on conversions.

use crate::common::{Raw, Reply, Server};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const WRITERS: usize = 8;
const KEYS_PER_WRITER: u64 = 20;

/// Per key: (last acknowledged value, value in flight).
type Oracle = Vec<Mutex<(u64, u64)>>;

#[test]
fn acknowledged_writes_survive_kill_9() {
    let mut srv = Server::start(&["--appendfsync", "always", "--hash-max-listpack-entries", "8"]);
    let dir = srv.keep_dir();
    let port = srv.port;
    let oracle: Arc<Oracle> =
        Arc::new((0..WRITERS as u64 * KEYS_PER_WRITER).map(|_| Mutex::new((0, 0))).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    for w in 0..WRITERS {
        let oracle = oracle.clone();
        let stop = stop.clone();
        handles.push(std::thread::spawn(move || {
            let mut c = Raw::connect(port);
            let mut seq = 0u64;
            while !stop.load(Ordering::Relaxed) {
                seq += 1;
                let k = w as u64 * KEYS_PER_WRITER + seq % KEYS_PER_WRITER;
                oracle[k as usize].lock().unwrap().1 = seq;
                let val = seq.to_string();
                let acked = if w.is_multiple_of(2) {
                    let key = format!("key{k}");
                    c.send_raw(&Raw::encode(&[b"SET", key.as_bytes(), val.as_bytes()]));
                    matches!(c.try_read(), Some(Reply::Simple(s)) if s == "OK")
                } else {
                    let (key, filler) = (format!("hkey{k}"), format!("f{}", seq / KEYS_PER_WRITER));
                    c.send_raw(&Raw::encode(&[
                        b"HSET",
                        key.as_bytes(),
                        b"v",
                        val.as_bytes(),
                        filler.as_bytes(),
                        b"x",
                    ]));
                    matches!(c.try_read(), Some(Reply::Int(_)))
                };
                if !acked {
                    return;
                }
                oracle[k as usize].lock().unwrap().0 = seq;
            }
        }));
    }
    std::thread::sleep(Duration::from_millis(1500));
    srv.child.kill().unwrap(); // SIGKILL
    srv.child.wait().unwrap();
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().unwrap();
    }
    let acked: u64 = oracle.iter().map(|m| u64::from(m.lock().unwrap().0 > 0)).sum();
    assert!(acked > 0, "no write was acknowledged");
    let srv = Server::start_in(dir.path(), &["--hash-max-listpack-entries", "8"]);
    let mut c = srv.raw();
    let mut encodings = std::collections::BTreeSet::new();
    for k in 0..WRITERS as u64 * KEYS_PER_WRITER {
        if !(k / KEYS_PER_WRITER).is_multiple_of(2) {
            if let Reply::Bulk(e) = c.cmd(&["OBJECT", "ENCODING", &format!("hkey{k}")]) {
                encodings.insert(String::from_utf8(e).unwrap());
            }
        }
    }
    assert!(encodings.contains("hashtable"), "no hash converted to sub-keys: {encodings:?}");
    let mut lost = 0;
    for (k, m) in oracle.iter().enumerate() {
        let (ack, pending) = *m.lock().unwrap();
        let writer = k / KEYS_PER_WRITER as usize;
        let read = if writer.is_multiple_of(2) {
            c.cmd(&["GET", &format!("key{k}")])
        } else {
            c.cmd(&["HGET", &format!("hkey{k}"), "v"])
        };
        let got = match read {
            Reply::Bulk(b) => String::from_utf8(b).unwrap().parse::<u64>().unwrap(),
            Reply::Null => 0,
            other => panic!("{other:?}"),
        };
        if got != ack && got != pending {
            lost += 1;
            eprintln!("key {k}: acknowledged {ack}, in flight {pending}, found {got}");
        }
    }
    assert_eq!(lost, 0, "acknowledged writes lost");
}
