//! kill -9 during a write load with `--appendfsync always`: every acknowledged write is there
//! after restart. Writers own disjoint keys and write increasing values; the oracle keeps, per
//! key, the last acknowledged value and the one in flight when the process died; after the
//! restart each key holds one of those two (never an older value, never a lost ack).

mod common;
use common::{Raw, Reply, Server};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const WRITERS: usize = 8;
const KEYS_PER_WRITER: u64 = 20;

/// Per key: (last acknowledged value, value in flight).
type Oracle = Vec<Mutex<(u64, u64)>>;

#[test]
fn acknowledged_writes_survive_kill_9() {
    let mut srv = Server::start(&["--appendfsync", "always"]);
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
                let (key, val) = (format!("key{k}"), seq.to_string());
                c.send_raw(&Raw::encode(&[b"SET", key.as_bytes(), val.as_bytes()]));
                match c.try_read() {
                    Some(Reply::Simple(s)) if s == "OK" => {
                        oracle[k as usize].lock().unwrap().0 = seq;
                    }
                    _ => return,
                }
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
    let srv = Server::start_in(dir.path(), &[]);
    let mut c = srv.raw();
    let mut lost = 0;
    for (k, m) in oracle.iter().enumerate() {
        let (ack, pending) = *m.lock().unwrap();
        let got = match c.cmd(&["GET", &format!("key{k}")]) {
            Reply::Bulk(b) => String::from_utf8(b).unwrap().parse::<u64>().unwrap(),
            Reply::Null => 0,
            other => panic!("{other:?}"),
        };
        if got != ack && got != pending {
            lost += 1;
            eprintln!("key{k}: acknowledged {ack}, in flight {pending}, found {got}");
        }
    }
    assert_eq!(lost, 0, "acknowledged writes lost");
}
