//! kill -9 during a write load with `--appendfsync always`: every acknowledged write is there
//! after restart. Writers own disjoint keys and write increasing values; the oracle keeps, per
//! key, the last acknowledged value and the one in flight when the process died; after the
//! restart each key holds one of those two (never an older value, never a lost ack).
//! Odd writers write hashes instead of strings: field `v` holds the value, and each write to a
//! key adds a new filler field, so with `--hash-max-listpack-entries 8` a hash starts compact
//! (one entry) and converts to sub-keys after a few writes; kills land on either encoding and
//! on conversions.
//!
//! Twelve more writers use the other write paths, each against a model of its keys:
//! - the string commands that rewrite a value (SETRANGE, SETBIT, INCRBYFLOAT, GETEX, SET with
//!   KEEPTTL/GET, MSETNX);
//! - the list commands that change a list inside or move elements between two lists in one
//!   batch (LINSERT, LSET, LREM, LTRIM, LMOVE, RPOPLPUSH, LMPOP, LPUSHX/RPUSHX, SORT ...
//!   STORE);
//! - the set commands that move members or store a new generation of a set (SMOVE,
//!   SINTERSTORE, SUNIONSTORE, SDIFFSTORE, COPY, RESTORE of the other set's DUMP, beside SADD
//!   and SREM);
//! - the sorted-set commands that store or remove ranges (ZUNIONSTORE, ZINTERSTORE,
//!   ZDIFFSTORE, ZRANGESTORE, ZREMRANGEBYSCORE, ZMPOP, beside ZADD);
//! - transactions (MULTI, two SETs of a pair of keys, EXEC: after the restart the pair is
//!   never half written);
//! - scripts (EVAL and EVALSHA setting a pair of keys: never half written either);
//! - streams (XADD with MAXLEN trimming, XDEL, XTRIM, RESTORE of a stream's own DUMP);
//! - bitmaps (SETBIT, BITFIELD SET/INCRBY, BITOP into one of its keys);
//! - databases (SET after SELECT, MOVE, COPY ... DB ... REPLACE and SWAPDB over databases 1
//!   to 3: one model entry for all its keys, as a swap changes every one at once);
//! - compact hashes' field edits (HSET of one field, HMSET of two, HDEL, HINCRBY, HSETNX on
//!   hashes that stay compact: the writes the server stores as field deltas, merge operands
//!   of the hash's metadata);
//! - geospatial indexes (GEOADD, GEOSEARCHSTORE and GEORADIUS ... STORE between two keys);
//! - HyperLogLogs (PFADD of a few elements or of enough to turn a key dense, then stored as
//!   register deltas; PFMERGE between two keys; PFCOUNT, which caches its count in the
//!   value).
//!
//! Their oracle keeps the rendered state after the last acknowledged command and after the
//! one in flight; after the restart the keys read as one of the two. One more writer runs
//! DEBUG POPULATE with a new prefix each time (its batches of a thousand keys): every key of
//! every acknowledged run is there after the restart.

use crate::common::{field_deltas, Raw, Reply, Server};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const WRITERS: usize = 8;
const KEYS_PER_WRITER: u64 = 20;

/// Per key: (last acknowledged value, value in flight).
type Oracle = Vec<Mutex<(u64, u64)>>;

#[test]
fn acknowledged_writes_survive_kill_9() {
    let mut srv = Server::start(&[
        "--appendfsync",
        "always",
        "--hash-max-listpack-entries",
        "8",
        "--enable-debug-command",
        "yes",
    ]);
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
    // A string key, a stream and a bitmap start absent (""), a pair of lists or of sets
    // empty ("|").
    let empty = |i: usize| match i / MODEL_KEYS {
        0 | 6 | 7 | 8 | 9 => String::new(),
        _ => "|".to_string(),
    };
    let models: Arc<Models> =
        Arc::new((0..12 * MODEL_KEYS).map(|i| Mutex::new((empty(i), empty(i)))).collect());
    let writers: [fn(u16, usize, &Models, &AtomicBool); 12] = [
        string_writer,
        list_writer,
        set_writer,
        multi_writer,
        zset_writer,
        script_writer,
        stream_writer,
        bitmap_writer,
        database_writer,
        hash_edit_writer,
        geo_writer,
        hll_writer,
    ];
    let model_handles: Vec<_> = writers
        .into_iter()
        .enumerate()
        .map(|(w, f)| {
            let (models, stop) = (models.clone(), stop.clone());
            std::thread::spawn(move || f(port, w * MODEL_KEYS, &models, &stop))
        })
        .collect();
    let populated = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let populate_handle = {
        let (populated, stop) = (populated.clone(), stop.clone());
        std::thread::spawn(move || populate_writer(port, &populated, &stop))
    };
    std::thread::sleep(Duration::from_millis(1500));
    // The kill waits (up to 30 s more) until some hash has outgrown the listpack limit (8
    // entries: `v` and 8 fillers, written once its writer's count passes 9 rounds of its
    // keys), so the conversion to sub-keys is covered however slow the machine is.
    let converted = || {
        oracle.iter().enumerate().any(|(k, m)| {
            !(k as u64 / KEYS_PER_WRITER).is_multiple_of(2)
                && m.lock().unwrap().0 >= 9 * KEYS_PER_WRITER
        })
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !converted() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let deltas = field_deltas(&mut srv.raw());
    srv.child.kill().unwrap(); // SIGKILL
    srv.child.wait().unwrap();
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().unwrap();
    }
    for h in model_handles {
        h.join().unwrap();
    }
    populate_handle.join().unwrap();
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
    let mut wrong = 0;
    let mut written = 0;
    for (i, m) in models.iter().enumerate() {
        let (ack, pending) = &*m.lock().unwrap();
        written += usize::from(!ack.is_empty() && ack != "|");
        let got = match i / MODEL_KEYS {
            0 => read_string(&mut c, i),
            1 => read_lists(&mut c, i),
            2 => read_sets(&mut c, i),
            3 | 5 => read_pair(&mut c, i),
            4 => read_zsets(&mut c, zkeys(i)),
            6 => read_stream(&mut c, i),
            7 => read_bitmap(&mut c, i),
            8 => read_databases(&mut c, i),
            9 => read_hash_edits(&mut c, i),
            10 => read_zsets(&mut c, gkeys(i)),
            _ => read_hlls(&mut c, i),
        };
        if got != *ack && got != *pending {
            wrong += 1;
            eprintln!("model key {i}: acknowledged {ack:?}, in flight {pending:?}, found {got:?}");
        }
    }
    assert!(written > 0, "the model writers wrote nothing");
    let pairs = models[3 * MODEL_KEYS..4 * MODEL_KEYS]
        .iter()
        .filter(|m| m.lock().unwrap().0 != "|")
        .count();
    assert!(pairs > 0, "the transaction writer's EXECs were never acknowledged");
    let scripted = models[5 * MODEL_KEYS..6 * MODEL_KEYS]
        .iter()
        .filter(|m| m.lock().unwrap().0 != "|")
        .count();
    assert!(scripted > 0, "the script writer's EVALs were never acknowledged");
    let bitmaps = models[7 * MODEL_KEYS..8 * MODEL_KEYS]
        .iter()
        .filter(|m| !m.lock().unwrap().0.is_empty())
        .count();
    assert!(bitmaps > 0, "the bitmap writer's writes were never acknowledged");
    let geo = models[10 * MODEL_KEYS..11 * MODEL_KEYS]
        .iter()
        .filter(|m| m.lock().unwrap().0 != "|")
        .count();
    assert!(geo > 0, "the geo writer's writes were never acknowledged");
    let hlls = models[11 * MODEL_KEYS..12 * MODEL_KEYS]
        .iter()
        .filter(|m| m.lock().unwrap().0 != "|")
        .count();
    assert!(hlls > 0, "the HyperLogLog writer's writes were never acknowledged");
    assert!(
        !models[8 * MODEL_KEYS].lock().unwrap().0.is_empty(),
        "the database writer's writes were never acknowledged"
    );
    assert!(deltas > 0, "no write was stored as a field delta");
    let runs = populated.load(Ordering::Relaxed);
    assert!(runs > 0, "no DEBUG POPULATE was acknowledged");
    for run in 1..=runs {
        for j in [0, POPULATE_KEYS / 2, POPULATE_KEYS - 1] {
            let key = format!("pop{run}:{j}");
            assert_eq!(c.cmd(&["GET", &key]), Reply::bulk(&format!("value:{j}")), "{key}");
        }
    }
    assert_eq!(wrong, 0, "acknowledged effects of the model writers lost");
}

fn hedit_key(i: usize) -> String {
    format!("mhash{i}")
}

/// A hash as the model renders it: `field=value;` in field order ("" when absent).
fn render_hash(h: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    for (f, v) in h {
        let _ = write!(out, "{f}={v};");
    }
    out
}

fn read_hash_edits(c: &mut Raw, i: usize) -> String {
    let Reply::Array(items) = c.cmd(&["HGETALL", &hedit_key(i)]) else { panic!("HGETALL") };
    let text = |r: &Reply| match r {
        Reply::Bulk(b) => String::from_utf8(b.clone()).unwrap(),
        other => panic!("{other:?}"),
    };
    let h: BTreeMap<String, String> = items.chunks(2).map(|p| (text(&p[0]), text(&p[1]))).collect();
    render_hash(&h)
}

/// Field edits of compact hashes on keys `base..base + MODEL_KEYS`: HSET of one field, HMSET
/// of two, HDEL, HINCRBY and HSETNX over six fields, so that a hash stays compact (the
/// harness runs with `--hash-max-listpack-entries 8`) and its writes after the first are
/// field deltas.
fn hash_edit_writer(port: u16, base: usize, models: &Models, stop: &AtomicBool) {
    let mut c = Raw::connect(port);
    let mut state: Vec<BTreeMap<String, String>> = vec![BTreeMap::new(); MODEL_KEYS];
    let mut seq = 0usize;
    while !stop.load(Ordering::Relaxed) {
        seq += 1;
        let k = seq % MODEL_KEYS;
        let (key, slot) = (hedit_key(base + k), &models[base + k]);
        let mut next = state[k].clone();
        let (f, g) = (format!("f{}", seq % 5), format!("f{}", (seq / 5) % 5));
        let tag = format!("<{seq}>");
        let args: Vec<String> = match (seq / MODEL_KEYS) % 6 {
            0 | 1 => {
                next.insert(f.clone(), tag.clone());
                vec!["HSET".into(), key, f, tag]
            }
            2 => {
                next.insert(f.clone(), tag.clone());
                next.insert(g.clone(), format!("{tag}+"));
                vec!["HMSET".into(), key, f, tag.clone(), g, format!("{tag}+")]
            }
            3 if next.len() > 1 => {
                next.remove(&f);
                vec!["HDEL".into(), key, f]
            }
            4 => {
                let n: i64 = next.get("n").map_or(0, |v| v.parse().unwrap());
                next.insert("n".into(), (n + 3).to_string());
                vec!["HINCRBY".into(), key, "n".into(), "3".into()]
            }
            _ => {
                next.entry(f.clone()).or_insert_with(|| tag.clone());
                vec!["HSETNX".into(), key, f, tag]
            }
        };
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        if !step(&mut c, slot, render_hash(&next), &a) {
            return;
        }
        state[k] = next;
    }
}

/// Keys of each model writer.
const MODEL_KEYS: usize = 16;

type Models = Vec<Mutex<(String, String)>>;

/// Keys of each DEBUG POPULATE run (three of its batches).
const POPULATE_KEYS: u64 = 2500;

/// DEBUG POPULATE of `POPULATE_KEYS` keys under prefix `pop<run>`, run after run; `done` holds
/// the last acknowledged run (runs are acknowledged in order on one connection).
fn populate_writer(port: u16, done: &std::sync::atomic::AtomicU64, stop: &AtomicBool) {
    let mut c = Raw::connect(port);
    let count = POPULATE_KEYS.to_string();
    let mut run = 0u64;
    while !stop.load(Ordering::Relaxed) {
        run += 1;
        if !send(&mut c, &["DEBUG", "POPULATE", &count, &format!("pop{run}")]) {
            return;
        }
        done.store(run, Ordering::Relaxed);
    }
}

/// Sends `args`; whether the server acknowledged it (an error reply fails the test: the model
/// writers only send commands that succeed).
fn send(c: &mut Raw, args: &[&str]) -> bool {
    let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
    c.send_raw(&Raw::encode(&a));
    match c.try_read() {
        Some(Reply::Error(e)) => panic!("{args:?}: {e}"),
        Some(_) => true,
        None => false,
    }
}

/// Runs one command against the model: marks `after` in flight, sends, and marks it
/// acknowledged when the reply came.
fn step(c: &mut Raw, slot: &Mutex<(String, String)>, after: String, args: &[&str]) -> bool {
    slot.lock().unwrap().1.clone_from(&after);
    if !send(c, args) {
        return false;
    }
    slot.lock().unwrap().0 = after;
    true
}

/// DUMPs `src` (a read) and RESTOREs the payload onto `dst` with REPLACE as one step against
/// the model: `dst` then holds what `src` holds (`after`). The writer owns both keys, so the
/// payload is `src`'s acknowledged state.
fn restore_step(
    c: &mut Raw,
    slot: &Mutex<(String, String)>,
    after: String,
    src: &str,
    dst: &str,
) -> bool {
    c.send_raw(&Raw::encode(&[b"DUMP", src.as_bytes()]));
    let payload = match c.try_read() {
        Some(Reply::Bulk(p)) => p,
        None => return false,
        Some(other) => panic!("DUMP {src}: {other:?}"),
    };
    slot.lock().unwrap().1.clone_from(&after);
    c.send_raw(&Raw::encode(&[b"RESTORE", dst.as_bytes(), b"0", &payload, b"REPLACE"]));
    match c.try_read() {
        Some(Reply::Simple(ok)) if ok == "OK" => {}
        None => return false,
        Some(other) => panic!("RESTORE {dst}: {other:?}"),
    }
    slot.lock().unwrap().0 = after;
    true
}

fn skey(i: usize) -> String {
    format!("mstr{i}")
}

fn read_string(c: &mut Raw, i: usize) -> String {
    match c.cmd(&["GET", &skey(i)]) {
        Reply::Bulk(b) => String::from_utf8(b).unwrap(),
        Reply::Null => String::new(),
        other => panic!("{other:?}"),
    }
}

/// SETRANGE/INCRBYFLOAT/GETEX/SET KEEPTTL GET/MSETNX on keys `base..base + MODEL_KEYS`: even
/// keys hold text, odd keys numbers (INCRBYFLOAT by 1.5 keeps them exact).
fn string_writer(port: u16, base: usize, models: &Models, stop: &AtomicBool) {
    let mut c = Raw::connect(port);
    let mut state: Vec<String> = vec![String::new(); MODEL_KEYS];
    let mut seq = 0usize;
    while !stop.load(Ordering::Relaxed) {
        seq += 1;
        let k = seq % MODEL_KEYS;
        let (key, slot, cur) = (skey(base + k), &models[base + k], &mut state[k]);
        let tag = format!("<{seq}>");
        let acked = if k % 2 == 1 {
            let mut v: f64 = if cur.is_empty() { 0.0 } else { cur.parse().unwrap() };
            v += 1.5;
            let after = format!("{v}");
            let ok = step(&mut c, slot, after.clone(), &["INCRBYFLOAT", &key, "1.5"]);
            *cur = after;
            ok
        } else {
            match seq % 6 {
                5 if !cur.is_empty() => {
                    // SETBIT flips the 0x20 bit of one byte: the text stays ASCII.
                    let j = seq % cur.len();
                    let on = (seq / 6) % 2 == 1;
                    let mut b = cur.clone().into_bytes();
                    if on {
                        b[j] |= 0x20;
                    } else {
                        b[j] &= !0x20;
                    }
                    let after = String::from_utf8(b).unwrap();
                    let bit = (j * 8 + 2).to_string();
                    let ok = step(
                        &mut c,
                        slot,
                        after.clone(),
                        &["SETBIT", &key, &bit, if on { "1" } else { "0" }],
                    );
                    *cur = after;
                    ok
                }
                0 | 1 => {
                    let off = seq % 7;
                    let mut b = cur.clone().into_bytes();
                    if b.len() < off + tag.len() {
                        b.resize(off + tag.len(), 0);
                    }
                    b[off..off + tag.len()].copy_from_slice(tag.as_bytes());
                    let after = String::from_utf8(b).unwrap();
                    let ok = step(
                        &mut c,
                        slot,
                        after.clone(),
                        &["SETRANGE", &key, &off.to_string(), &tag],
                    );
                    *cur = after;
                    ok
                }
                2 => {
                    let ok =
                        step(&mut c, slot, tag.clone(), &["SET", &key, &tag, "KEEPTTL", "GET"]);
                    *cur = tag;
                    ok
                }
                3 => {
                    // GETEX with a long expiry rewrites the record; the value stays.
                    step(&mut c, slot, cur.clone(), &["GETEX", &key, "EX", "100000"])
                }
                _ => {
                    // MSETNX writes an unset key, and leaves a set one alone.
                    if cur.is_empty() {
                        let ok = step(&mut c, slot, tag.clone(), &["MSETNX", &key, &tag]);
                        *cur = tag;
                        ok
                    } else {
                        step(&mut c, slot, cur.clone(), &["MSETNX", &key, "never"])
                    }
                }
            }
        };
        if !acked {
            return;
        }
    }
}

fn lkeys(i: usize) -> (String, String) {
    (format!("mlist{i}a"), format!("mlist{i}b"))
}

fn render(a: &VecDeque<String>, b: &VecDeque<String>) -> String {
    let join = |l: &VecDeque<String>| l.iter().cloned().collect::<Vec<_>>().join(",");
    format!("{}|{}", join(a), join(b))
}

/// The elements `args` reads (an array of bulk strings).
fn read_all<C: FromIterator<String>>(c: &mut Raw, args: &[&str]) -> C {
    match c.cmd(args) {
        Reply::Array(v) | Reply::Set(v) => v
            .into_iter()
            .map(|r| match r {
                Reply::Bulk(b) => String::from_utf8(b).unwrap(),
                other => panic!("{other:?}"),
            })
            .collect(),
        other => panic!("{args:?}: {other:?}"),
    }
}

fn read_lists(c: &mut Raw, i: usize) -> String {
    let (ka, kb) = lkeys(i);
    let a: VecDeque<String> = read_all(c, &["LRANGE", &ka, "0", "-1"]);
    let b: VecDeque<String> = read_all(c, &["LRANGE", &kb, "0", "-1"]);
    render(&a, &b)
}

/// List commands on pairs of lists (`a`, `b`) of keys `base..base + MODEL_KEYS`: each
/// command's effect on both is one oracle entry.
fn list_writer(port: u16, base: usize, models: &Models, stop: &AtomicBool) {
    let mut c = Raw::connect(port);
    let mut state: Vec<(VecDeque<String>, VecDeque<String>)> =
        vec![(VecDeque::new(), VecDeque::new()); MODEL_KEYS];
    let mut seq = 0usize;
    while !stop.load(Ordering::Relaxed) {
        seq += 1;
        let k = seq % MODEL_KEYS;
        let (ka, kb) = lkeys(base + k);
        let slot = &models[base + k];
        let (a, b) = &mut state[k];
        let v = format!("e{seq}");
        let op = (seq / MODEL_KEYS) % 10;
        let args: Vec<String> = match op {
            0 => {
                a.push_back(v.clone());
                vec!["RPUSH".into(), ka, v]
            }
            1 => {
                if !b.is_empty() {
                    b.push_front(v.clone());
                }
                vec!["LPUSHX".into(), kb, v]
            }
            2 if !a.is_empty() => {
                let pivot = a[a.len() / 2].clone();
                let p = a.iter().position(|x| *x == pivot).unwrap();
                a.insert(p, v.clone());
                vec!["LINSERT".into(), ka, "BEFORE".into(), pivot, v]
            }
            3 if !a.is_empty() => {
                let i = a.len() - 1;
                a[i].clone_from(&v);
                vec!["LSET".into(), ka, "-1".into(), v]
            }
            4 => {
                if let Some(x) = a.pop_back() {
                    b.push_front(x);
                }
                vec!["LMOVE".into(), ka, kb, "RIGHT".into(), "LEFT".into()]
            }
            5 if !a.is_empty() => {
                let x = a[0].clone();
                a.retain(|y| *y != x);
                vec!["LREM".into(), ka, "0".into(), x]
            }
            6 => {
                b.truncate(3);
                vec!["LTRIM".into(), kb, "0".into(), "2".into()]
            }
            7 => {
                if let Some(x) = b.pop_back() {
                    a.push_front(x);
                }
                vec!["RPOPLPUSH".into(), kb, ka]
            }
            8 => {
                // The destination becomes a's elements in byte order (deleted when a is empty).
                let mut sorted: Vec<String> = a.iter().cloned().collect();
                sorted.sort();
                *b = sorted.into();
                vec!["SORT".into(), ka, "ALPHA".into(), "STORE".into(), kb]
            }
            _ => {
                let l = if a.is_empty() { &mut *b } else { &mut *a };
                l.pop_front();
                vec!["LMPOP".into(), "2".into(), ka, kb, "LEFT".into()]
            }
        };
        let after = render(a, b);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        if !step(&mut c, slot, after, &refs) {
            return;
        }
    }
}

fn setkeys(i: usize) -> (String, String) {
    (format!("mset{i}a"), format!("mset{i}b"))
}

fn render_sets(a: &BTreeSet<String>, b: &BTreeSet<String>) -> String {
    let join = |s: &BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>().join(",");
    format!("{}|{}", join(a), join(b))
}

fn read_sets(c: &mut Raw, i: usize) -> String {
    let (ka, kb) = setkeys(i);
    let a: BTreeSet<String> = read_all(c, &["SMEMBERS", &ka]);
    let b: BTreeSet<String> = read_all(c, &["SMEMBERS", &kb]);
    render_sets(&a, &b)
}

/// Set commands on pairs of sets (`a`, `b`) of keys `base..base + MODEL_KEYS`: each
/// command's effect on both is one oracle entry.
fn set_writer(port: u16, base: usize, models: &Models, stop: &AtomicBool) {
    let mut c = Raw::connect(port);
    let mut state: Vec<(BTreeSet<String>, BTreeSet<String>)> =
        vec![(BTreeSet::new(), BTreeSet::new()); MODEL_KEYS];
    let mut seq = 0usize;
    while !stop.load(Ordering::Relaxed) {
        seq += 1;
        let k = seq % MODEL_KEYS;
        let (ka, kb) = setkeys(base + k);
        let slot = &models[base + k];
        let (a, b) = &mut state[k];
        let m = format!("m{}", seq % 7);
        if (seq / MODEL_KEYS) % 9 == 8 && !a.is_empty() {
            // A copy through DUMP's payload: RESTORE writes `b` anew, replacing it.
            b.clone_from(a);
            if !restore_step(&mut c, slot, render_sets(a, b), &ka, &kb) {
                return;
            }
            continue;
        }
        let args: Vec<String> = match (seq / MODEL_KEYS) % 9 {
            0 => {
                a.insert(m.clone());
                vec!["SADD".into(), ka, m]
            }
            1 => {
                b.insert(m.clone());
                vec!["SADD".into(), kb, m]
            }
            2 => {
                a.remove(&m);
                vec!["SREM".into(), ka, m]
            }
            3 => {
                if a.remove(&m) {
                    b.insert(m.clone());
                }
                vec!["SMOVE".into(), ka, kb, m]
            }
            4 => {
                a.extend(b.iter().cloned());
                vec!["SUNIONSTORE".into(), ka.clone(), ka, kb]
            }
            5 => {
                b.retain(|x| a.contains(x));
                vec!["SINTERSTORE".into(), kb.clone(), ka, kb]
            }
            6 if !a.is_empty() => {
                // A copy at a new generation, replacing the other set.
                b.clone_from(a);
                vec!["COPY".into(), ka, kb, "REPLACE".into()]
            }
            _ => {
                a.retain(|x| !b.contains(x));
                vec!["SDIFFSTORE".into(), ka.clone(), ka, kb]
            }
        };
        let after = render_sets(a, b);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        if !step(&mut c, slot, after, &refs) {
            return;
        }
    }
}

fn pair_keys(i: usize) -> (String, String) {
    (format!("mtx{i}a"), format!("mtx{i}b"))
}

fn read_pair(c: &mut Raw, i: usize) -> String {
    let (a, b) = pair_keys(i);
    let mut get = |k: &str| match c.cmd(&["GET", k]) {
        Reply::Bulk(v) => String::from_utf8(v).unwrap(),
        Reply::Null => String::new(),
        other => panic!("{other:?}"),
    };
    let (va, vb) = (get(&a), get(&b));
    format!("{va}|{vb}")
}

/// MULTI, SET a v, SET b v, EXEC on pairs of keys `base..base + MODEL_KEYS`, pipelined: the
/// pair is written as one batch or not at all.
fn multi_writer(port: u16, base: usize, models: &Models, stop: &AtomicBool) {
    let mut c = Raw::connect(port);
    let mut seq = 0usize;
    while !stop.load(Ordering::Relaxed) {
        seq += 1;
        let k = seq % MODEL_KEYS;
        let ((a, b), slot, v) = (pair_keys(base + k), &models[base + k], seq.to_string());
        let after = format!("{v}|{v}");
        slot.lock().unwrap().1.clone_from(&after);
        for args in [&["MULTI"][..], &["SET", &a, &v], &["SET", &b, &v], &["EXEC"]] {
            let bytes: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
            c.send_raw(&Raw::encode(&bytes));
        }
        let replies: Vec<Option<Reply>> = (0..4).map(|_| c.try_read()).collect();
        match replies.last() {
            Some(Some(Reply::Array(r))) => assert_eq!(r.len(), 2, "{replies:?}"),
            Some(None) => return,
            other => panic!("EXEC: {other:?}"),
        }
        slot.lock().unwrap().0 = after;
    }
}

fn zkeys(i: usize) -> (String, String) {
    (format!("mz{i}a"), format!("mz{i}b"))
}

type ZModel = BTreeMap<String, i64>;

fn render_zsets(a: &ZModel, b: &ZModel) -> String {
    let join = |z: &ZModel| z.iter().map(|(m, s)| format!("{m}={s}")).collect::<Vec<_>>().join(",");
    format!("{}|{}", join(a), join(b))
}

fn read_zsets(c: &mut Raw, (ka, kb): (String, String)) -> String {
    let mut read = |k: &str| -> ZModel {
        let flat: Vec<String> = read_all(c, &["ZRANGE", k, "0", "-1", "WITHSCORES"]);
        flat.chunks(2).map(|p| (p[0].clone(), p[1].parse().unwrap())).collect()
    };
    let (a, b) = (read(&ka), read(&kb));
    render_zsets(&a, &b)
}

/// The members of `z` in score order (then member order), as a sorted set holds them.
fn by_score(z: &ZModel) -> Vec<(String, i64)> {
    let mut v: Vec<(String, i64)> = z.iter().map(|(m, s)| (m.clone(), *s)).collect();
    v.sort_by(|x, y| x.1.cmp(&y.1).then_with(|| x.0.cmp(&y.0)));
    v
}

/// Sorted-set commands on pairs (`a`, `b`) of keys `base..base + MODEL_KEYS`, integer
/// scores (sums stay exact): each command's effect on both is one oracle entry.
fn zset_writer(port: u16, base: usize, models: &Models, stop: &AtomicBool) {
    let mut c = Raw::connect(port);
    let mut state: Vec<(ZModel, ZModel)> = vec![(ZModel::new(), ZModel::new()); MODEL_KEYS];
    let mut seq = 0usize;
    while !stop.load(Ordering::Relaxed) {
        seq += 1;
        let k = seq % MODEL_KEYS;
        let (ka, kb) = zkeys(base + k);
        let slot = &models[base + k];
        let (a, b) = &mut state[k];
        let (m, score) = (format!("m{}", seq % 7), (seq % 5) as i64);
        let args: Vec<String> = match (seq / MODEL_KEYS) % 8 {
            0 => {
                a.insert(m.clone(), score);
                vec!["ZADD".into(), ka, score.to_string(), m]
            }
            1 => {
                b.insert(m.clone(), score);
                vec!["ZADD".into(), kb, score.to_string(), m]
            }
            2 => {
                for (x, s) in b.iter() {
                    *a.entry(x.clone()).or_insert(0) += s;
                }
                vec!["ZUNIONSTORE".into(), ka.clone(), "2".into(), ka, kb]
            }
            3 => {
                *b = b
                    .iter()
                    .filter_map(|(x, s)| a.get(x).map(|t| (x.clone(), *s.max(t))))
                    .collect();
                let agg = ["AGGREGATE".to_string(), "MAX".into()];
                [vec!["ZINTERSTORE".into(), kb.clone(), "2".into(), ka, kb], agg.to_vec()].concat()
            }
            4 => {
                a.retain(|x, _| !b.contains_key(x));
                vec!["ZDIFFSTORE".into(), ka.clone(), "2".into(), ka, kb]
            }
            5 => {
                *b = by_score(a).into_iter().take(2).collect();
                vec!["ZRANGESTORE".into(), kb, ka, "0".into(), "1".into()]
            }
            6 => {
                a.retain(|_, s| *s > 2);
                vec!["ZREMRANGEBYSCORE".into(), ka, "-inf".into(), "2".into()]
            }
            _ => {
                let from = if a.is_empty() { &mut *b } else { &mut *a };
                if let Some((x, _)) = by_score(from).first() {
                    from.remove(x);
                }
                vec!["ZMPOP".into(), "2".into(), ka, kb, "MIN".into()]
            }
        };
        let after = render_zsets(a, b);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        if !step(&mut c, slot, after, &refs) {
            return;
        }
    }
}

fn gkeys(i: usize) -> (String, String) {
    (format!("mg{i}a"), format!("mg{i}b"))
}

/// GEO commands on pairs (`a`, `b`) of keys `base..base + MODEL_KEYS`: GEOADD of members at
/// Palermo, Catania or far away, GEOSEARCHSTORE and GEORADIUS ... STORE of `a`'s members near
/// (15, 37) into `b` (Catania is 56 km from there, Palermo 190 km), and ZREM; the model holds
/// the members' geohash scores, read from the server once before the loop.
fn geo_writer(port: u16, base: usize, models: &Models, stop: &AtomicBool) {
    let mut c = Raw::connect(port);
    const PLACES: [(&str, &str); 3] =
        [("13.361389", "38.115556"), ("15.087269", "37.502669"), ("-100", "40")];
    let scores: Vec<i64> = PLACES
        .iter()
        .map(|(lon, lat)| {
            c.cmd(&["GEOADD", "mg-scores", lon, lat, "x"]);
            match c.cmd(&["ZSCORE", "mg-scores", "x"]) {
                Reply::Bulk(b) => String::from_utf8(b).unwrap().parse().unwrap(),
                other => panic!("{other:?}"),
            }
        })
        .collect();
    let near = |a: &ZModel, places: usize| -> ZModel {
        a.iter()
            .filter(|(_, s)| scores[..places].contains(s))
            .map(|(m, s)| (m.clone(), *s))
            .collect()
    };
    let mut state: Vec<(ZModel, ZModel)> = vec![(ZModel::new(), ZModel::new()); MODEL_KEYS];
    let mut seq = 0usize;
    while !stop.load(Ordering::Relaxed) {
        seq += 1;
        let k = seq % MODEL_KEYS;
        let (ka, kb) = gkeys(base + k);
        let (a, b) = &mut state[k];
        let (m, p) = (format!("m{}", seq % 5), seq % PLACES.len());
        let (lon, lat) = PLACES[p];
        let args: Vec<String> = match (seq / MODEL_KEYS) % 5 {
            0 | 1 => {
                a.insert(m.clone(), scores[p]);
                vec!["GEOADD".into(), ka, lon.into(), lat.into(), m]
            }
            2 => {
                *b = near(a, 2);
                let by = ["BYRADIUS", "250", "km"].map(String::from);
                [
                    vec![
                        "GEOSEARCHSTORE".into(),
                        kb,
                        ka,
                        "FROMLONLAT".into(),
                        "15".into(),
                        "37".into(),
                    ],
                    by.to_vec(),
                ]
                .concat()
            }
            3 => {
                *b = near(a, 2).into_iter().filter(|(_, s)| *s == scores[1]).collect();
                let at = ["15", "37", "100", "km", "STORE"].map(String::from);
                [vec!["GEORADIUS".into(), ka], at.to_vec(), vec![kb]].concat()
            }
            _ => {
                a.remove(&m);
                vec!["ZREM".into(), ka, m]
            }
        };
        let after = render_zsets(a, b);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        if !step(&mut c, &models[base + k], after, &refs) {
            return;
        }
    }
}

fn hkeys(i: usize) -> (String, String) {
    (format!("mp{i}a"), format!("mp{i}b"))
}

/// A HyperLogLog's registers as the model and the reads render them: "" when the key is
/// absent, else how many registers are set and an FNV-1a digest of all of them.
fn render_hll(regs: Option<&[u8]>) -> String {
    let Some(regs) = regs else { return String::new() };
    let digest = regs
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, &r| (h ^ u64::from(r)).wrapping_mul(0x100_0000_01b3));
    format!("hll:{}:{digest:016x}", regs.iter().filter(|&&r| r > 0).count())
}

fn read_hlls(c: &mut Raw, i: usize) -> String {
    let (ka, kb) = hkeys(i);
    let mut read = |k: &str| -> String {
        if c.cmd(&["EXISTS", k]) == Reply::Int(0) {
            return String::new();
        }
        let regs: Vec<u8> = match c.cmd(&["PFDEBUG", "GETREG", k]) {
            Reply::Array(v) => v
                .into_iter()
                .map(|r| match r {
                    Reply::Int(n) => n as u8,
                    other => panic!("{other:?}"),
                })
                .collect(),
            other => panic!("PFDEBUG GETREG {k}: {other:?}"),
        };
        render_hll(Some(&regs))
    };
    let (a, b) = (read(&ka), read(&kb));
    format!("{a}|{b}")
}

/// HyperLogLog commands on pairs (`a`, `b`) of keys `base..base + MODEL_KEYS`: PFADD of three
/// elements to `a` or one to `b`, PFADD of 600 to `a` (a few of those turn it dense), PFMERGE
/// of `a` into `b`, and PFCOUNT of `a` (its count cached in the value: a write that leaves
/// the registers). The model keeps each key's registers, placed as the server places
/// elements (`types::hll::estimate`).
fn hll_writer(port: u16, base: usize, models: &Models, stop: &AtomicBool) {
    use strata_server::types::hll::estimate::{place, REGISTERS};
    let mut c = Raw::connect(port);
    // Each pair's registers (`None`: the key is absent).
    type Regs = Option<Vec<u8>>;
    let mut state: Vec<(Regs, Regs)> = vec![(None, None); MODEL_KEYS];
    let add = |regs: &mut Option<Vec<u8>>, elements: &[String]| {
        let r = regs.get_or_insert_with(|| vec![0; REGISTERS]);
        for e in elements {
            let (i, v) = place(e.as_bytes());
            r[i] = r[i].max(v);
        }
    };
    let mut seq = 0usize;
    while !stop.load(Ordering::Relaxed) {
        seq += 1;
        let k = seq % MODEL_KEYS;
        let (ka, kb) = hkeys(base + k);
        let (a, b) = &mut state[k];
        let elements =
            |n: usize| -> Vec<String> { (0..n).map(|j| format!("e{seq}-{j}")).collect() };
        let args: Vec<String> = match (seq / MODEL_KEYS) % 6 {
            round @ 0..=2 => {
                let elements = elements(if round == 2 { 600 } else { 3 });
                add(a, &elements);
                [vec!["PFADD".into(), ka], elements].concat()
            }
            3 => {
                let merged = a.clone().unwrap_or_else(|| vec![0; REGISTERS]);
                let into = b.get_or_insert_with(|| vec![0; REGISTERS]);
                for (x, y) in into.iter_mut().zip(merged) {
                    *x = (*x).max(y);
                }
                vec!["PFMERGE".into(), kb, ka]
            }
            4 => vec!["PFCOUNT".into(), ka],
            _ => {
                let elements = elements(1);
                add(b, &elements);
                [vec!["PFADD".into(), kb], elements].concat()
            }
        };
        let after = format!("{}|{}", render_hll(a.as_deref()), render_hll(b.as_deref()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        if !step(&mut c, &models[base + k], after, &refs) {
            return;
        }
    }
}

/// EVAL (and EVALSHA of the same script) setting both keys of a pair, on pairs of keys
/// `base..base + MODEL_KEYS`: a script's writes are one batch, so the pair is never half
/// written after the restart.
fn script_writer(port: u16, base: usize, models: &Models, stop: &AtomicBool) {
    const SCRIPT: &str =
        "redis.call('set', KEYS[1], ARGV[1]) redis.call('set', KEYS[2], ARGV[1]) return 1";
    let mut c = Raw::connect(port);
    let sha = match c.cmd(&["SCRIPT", "LOAD", SCRIPT]) {
        Reply::Bulk(b) => String::from_utf8(b).unwrap(),
        other => panic!("SCRIPT LOAD: {other:?}"),
    };
    let mut seq = 0usize;
    while !stop.load(Ordering::Relaxed) {
        seq += 1;
        let k = seq % MODEL_KEYS;
        let ((a, b), v) = (pair_keys(base + k), seq.to_string());
        let after = format!("{v}|{v}");
        let (cmd, body) =
            if seq.is_multiple_of(2) { ("EVAL", SCRIPT) } else { ("EVALSHA", sha.as_str()) };
        if !step(&mut c, &models[base + k], after, &[cmd, body, "2", &a, &b, &v]) {
            return;
        }
    }
}

fn stream_key(i: usize) -> String {
    format!("mstream{i}")
}

/// The ids of a stream, in order, joined with commas ("" when it is absent).
fn read_stream(c: &mut Raw, i: usize) -> String {
    match c.cmd(&["EXISTS", &stream_key(i)]) {
        Reply::Int(0) => return String::new(),
        Reply::Int(1) => {}
        other => panic!("{other:?}"),
    }
    let Reply::Array(entries) = c.cmd(&["XRANGE", &stream_key(i), "-", "+"]) else {
        panic!("XRANGE")
    };
    let ids: Vec<String> = entries
        .iter()
        .map(|e| match e {
            Reply::Array(parts) => match &parts[0] {
                Reply::Bulk(id) => String::from_utf8(id.clone()).unwrap(),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        })
        .collect();
    format!("[{}]", ids.join(","))
}

/// XADD with explicit ids (and an exact MAXLEN now and then), XDEL and XTRIM on the streams
/// `base..base + MODEL_KEYS`, against a model of each stream's ids.
fn stream_writer(port: u16, base: usize, models: &Models, stop: &AtomicBool) {
    let mut c = Raw::connect(port);
    let mut streams: Vec<Option<VecDeque<String>>> = vec![None; MODEL_KEYS];
    let mut seq = 0usize;
    let render =
        |s: &VecDeque<String>| format!("[{}]", s.iter().cloned().collect::<Vec<_>>().join(","));
    while !stop.load(Ordering::Relaxed) {
        seq += 1;
        let k = seq % MODEL_KEYS;
        let key = stream_key(base + k);
        let mut model = streams[k].clone().unwrap_or_default();
        let v = seq.to_string();
        if seq % 11 == 10 && !model.is_empty() {
            // The stream rewritten whole from its own payload: a new generation of every
            // record in one batch, reading the same before and after.
            if !restore_step(&mut c, &models[base + k], render(&model), &key, &key) {
                return;
            }
            continue;
        }
        let args: Vec<String> = match seq % 7 {
            3 if !model.is_empty() => {
                let id = model.remove(model.len() / 2).unwrap();
                vec!["XDEL".into(), key.clone(), id]
            }
            5 => {
                while model.len() > 3 {
                    model.pop_front();
                }
                vec!["XTRIM".into(), key.clone(), "MAXLEN".into(), "3".into()]
            }
            6 => {
                let id = format!("{seq}-1");
                model.push_back(id.clone());
                while model.len() > 5 {
                    model.pop_front();
                }
                vec!["XADD".into(), key.clone(), "MAXLEN".into(), "5".into(), id, "f".into(), v]
            }
            _ => {
                let id = format!("{seq}-1");
                model.push_back(id.clone());
                vec!["XADD".into(), key.clone(), id, "f".into(), v]
            }
        };
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        if !step(&mut c, &models[base + k], render(&model), &args) {
            return;
        }
        streams[k] = Some(model);
    }
}

fn bitmap_key(i: usize) -> String {
    format!("mbits{i}")
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// A bitmap's bytes in hex ("" when it is absent).
fn read_bitmap(c: &mut Raw, i: usize) -> String {
    match c.cmd(&["GET", &bitmap_key(i)]) {
        Reply::Bulk(b) => hex(&b),
        Reply::Null => String::new(),
        other => panic!("{other:?}"),
    }
}

/// SETBIT, BITFIELD SET and INCRBY (u8, wrapping) and BITOP XOR of two other keys into one,
/// on the bitmaps `base..base + MODEL_KEYS`, against a model of each one's bytes.
fn bitmap_writer(port: u16, base: usize, models: &Models, stop: &AtomicBool) {
    let mut c = Raw::connect(port);
    let mut bits: Vec<Vec<u8>> = vec![Vec::new(); MODEL_KEYS];
    let mut seq = 0usize;
    while !stop.load(Ordering::Relaxed) {
        seq += 1;
        let k = seq % MODEL_KEYS;
        let key = bitmap_key(base + k);
        let mut model = bits[k].clone();
        let grow = |m: &mut Vec<u8>, len: usize| {
            if m.len() < len {
                m.resize(len, 0);
            }
        };
        // Every key sees every kind of write: the kind changes with each round of the keys.
        let args: Vec<String> = match (seq / MODEL_KEYS) % 4 {
            0 => {
                let (offset, on) = ((seq * 7) % 200, !seq.is_multiple_of(3));
                grow(&mut model, offset / 8 + 1);
                let mask = 0x80u8 >> (offset % 8);
                if on {
                    model[offset / 8] |= mask;
                } else {
                    model[offset / 8] &= !mask;
                }
                let v = if on { "1" } else { "0" };
                vec!["SETBIT".into(), key.clone(), offset.to_string(), v.into()]
            }
            1 => {
                let (byte, v) = ((seq * 5) % 24, (seq % 256) as u8);
                grow(&mut model, byte + 1);
                model[byte] = v;
                let (at, v) = (format!("#{byte}"), v.to_string());
                vec!["BITFIELD".into(), key.clone(), "SET".into(), "u8".into(), at, v]
            }
            2 => {
                let byte = (seq * 3) % 24;
                grow(&mut model, byte + 1);
                model[byte] = model[byte].wrapping_add(200);
                let at = format!("#{byte}");
                vec!["BITFIELD".into(), key.clone(), "INCRBY".into(), "u8".into(), at, "200".into()]
            }
            _ => {
                let (x, y) = ((k + 1) % MODEL_KEYS, (k + 2) % MODEL_KEYS);
                let (a, b) = (&bits[x], &bits[y]);
                model = (0..a.len().max(b.len()))
                    .map(|i| a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0))
                    .collect();
                let (kx, ky) = (bitmap_key(base + x), bitmap_key(base + y));
                vec!["BITOP".into(), "XOR".into(), key.clone(), kx, ky]
            }
        };
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        if !step(&mut c, &models[base + k], hex(&model), &args) {
            return;
        }
        bits[k] = model;
    }
}

/// The database writer's keys, and its databases (1 to 3: the other writers use 0).
const DB_KEYS: usize = 4;
const DBS: usize = 3;

/// Per database (1..=3), per key `mdb0..`: its value.
type DbModel = Vec<Vec<Option<String>>>;

fn render_databases(m: &DbModel) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for (d, keys) in m.iter().enumerate() {
        for (k, v) in keys.iter().enumerate() {
            if let Some(v) = v {
                let _ = write!(out, "{}:mdb{k}={v};", d + 1);
            }
        }
    }
    out
}

fn read_databases(c: &mut Raw, i: usize) -> String {
    if !i.is_multiple_of(MODEL_KEYS) {
        return String::new(); // the writer's one model entry is its first
    }
    let mut m: DbModel = vec![vec![None; DB_KEYS]; DBS];
    for (d, keys) in m.iter_mut().enumerate() {
        assert_eq!(c.cmd(&["SELECT", &(d + 1).to_string()]), Reply::Simple("OK".into()));
        for (k, v) in keys.iter_mut().enumerate() {
            *v = match c.cmd(&["GET", &format!("mdb{k}")]) {
                Reply::Bulk(b) => Some(String::from_utf8(b).unwrap()),
                Reply::Null => None,
                other => panic!("{other:?}"),
            };
        }
    }
    assert_eq!(c.cmd(&["SELECT", "0"]), Reply::Simple("OK".into()));
    render_databases(&m)
}

/// SET (after SELECT), MOVE, COPY ... DB ... REPLACE and SWAPDB 2 3 on keys `mdb0..mdb3` of
/// databases 1 to 3; the model entry `base` holds the rendering of all of them.
fn database_writer(port: u16, base: usize, models: &Models, stop: &AtomicBool) {
    let mut c = Raw::connect(port);
    let mut state: DbModel = vec![vec![None; DB_KEYS]; DBS];
    let mut selected = 0;
    let mut seq = 0usize;
    while !stop.load(Ordering::Relaxed) {
        seq += 1;
        let (k, db) = (seq % DB_KEYS, 1 + (seq / DB_KEYS) % DBS);
        let to = 1 + db % DBS;
        let key = format!("mdb{k}");
        if selected != db {
            if !send(&mut c, &["SELECT", &db.to_string()]) {
                return;
            }
            selected = db;
        }
        let mut next = state.clone();
        let (from_i, to_i) = (db - 1, to - 1);
        let args: Vec<String> = match seq % 5 {
            0 | 1 => {
                next[from_i][k] = Some(seq.to_string());
                vec!["SET".into(), key, seq.to_string()]
            }
            2 => {
                if next[from_i][k].is_some() && next[to_i][k].is_none() {
                    next[to_i][k] = next[from_i][k].take();
                }
                vec!["MOVE".into(), key, to.to_string()]
            }
            3 => {
                if let Some(v) = next[from_i][k].clone() {
                    next[to_i][k] = Some(v);
                }
                vec!["COPY".into(), key.clone(), key, "DB".into(), to.to_string(), "REPLACE".into()]
            }
            _ => {
                next.swap(1, 2);
                vec!["SWAPDB".into(), "2".into(), "3".into()]
            }
        };
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        if !step(&mut c, &models[base], render_databases(&next), &a) {
            return;
        }
        state = next;
    }
}
