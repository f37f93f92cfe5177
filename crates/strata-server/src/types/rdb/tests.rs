//! The payload format against redis-server 7.0.15's own payloads and readings
//! (`testdata/golden.tsv`, made by `testdata/gen_golden.py`), round trips of every type
//! through the writer and through a store, and damaged payloads.

use super::*;
use crate::storage::SyncPolicy;
use crate::types::compact_hash::Limits;
use crate::types::keyspace::Keyspace;
use crate::types::metadata::Kind;
use key::Restored;
use std::fmt::Write as _;

/// A golden reading with its sorted-set scores (Redis's `%.17g` replies) in the form
/// [`render`] gives them (Rust's shortest form of the same double).
fn normalized(reading: &str) -> String {
    let Some(items) = reading.strip_prefix("zset ") else { return reading.to_string() };
    let items: Vec<String> = items
        .split(',')
        .map(|i| {
            let (m, s) = i.rsplit_once(':').unwrap();
            format!("{m}:{:?}", crate::types::number::parse_float(s.as_bytes()).unwrap())
        })
        .collect();
    format!("zset {}", items.join(","))
}

/// (name, payload, redis-server's reading) of each golden line.
fn golden() -> Vec<(String, Vec<u8>, String)> {
    include_str!("testdata/golden.tsv")
        .lines()
        .map(|line| {
            let mut cols = line.split('\t');
            let name = cols.next().unwrap().to_string();
            let hex = cols.next().unwrap();
            let payload = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            (name, payload, normalized(cols.next().unwrap()))
        })
        .collect()
}

/// An item as the golden file shows it: hex, `-` when empty, a digest when long.
fn item(b: &[u8]) -> String {
    if b.is_empty() {
        return "-".into();
    }
    if b.len() > 64 {
        return format!("sha1-{}-{}", b.len(), sha1_smol::Sha1::from(b).digest());
    }
    b.iter().fold(String::new(), |mut s, x| {
        let _ = write!(s, "{x:02x}");
        s
    })
}

fn id(i: StreamId) -> String {
    format!("{}-{}", i.ms, i.seq)
}

/// A value rendered as `gen_golden.py` renders redis-server's reading of it.
fn render(v: &Value) -> String {
    let join = |items: Vec<String>, sep: &str| items.join(sep);
    match v {
        Value::String(s) => format!("string {}", item(s)),
        Value::List(l) => format!("list {}", join(l.iter().map(|e| item(e)).collect(), ",")),
        Value::Set(s) => {
            let mut m = s.clone();
            m.sort();
            format!("set {}", join(m.iter().map(|e| item(e)).collect(), ","))
        }
        Value::ZSet(z) => {
            let mut z = z.clone();
            z.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap().then_with(|| a.0.cmp(&b.0)));
            let items = z.iter().map(|(m, s)| format!("{}:{s:?}", item(m)));
            format!("zset {}", join(items.collect(), ","))
        }
        Value::Hash(h) => {
            let mut h = h.clone();
            h.sort();
            let items = h.iter().map(|(f, v)| format!("{}={}", item(f), item(v)));
            format!("hash {}", join(items.collect(), ","))
        }
        Value::Stream(s) => {
            let mut out = format!(
                "stream len={} last={} first={} maxdel={} added={} entries=",
                s.length,
                id(s.last_id),
                id(s.first_id),
                id(s.max_deleted),
                s.entries_added
            );
            let entries = s.nodes.iter().flat_map(|n| &n.entries).map(|e| {
                format!("{}:{}", id(e.id), join(e.pairs.iter().map(|p| item(p)).collect(), ","))
            });
            out += &join(entries.collect(), "|");
            let mut groups: Vec<&StreamGroup> = s.groups.iter().collect();
            groups.sort_by(|a, b| a.name.cmp(&b.name));
            for g in groups {
                let read = g.entries_read.map_or("-".to_string(), |r| r.to_string());
                let _ = write!(out, " group={}@{}/{}", item(&g.name), id(g.last_id), read);
                let pel = g.pending.iter().map(|p| {
                    format!("{}:{}:{}:{}", id(p.id), item(&p.consumer), p.delivery_ms, p.deliveries)
                });
                let _ = write!(out, " pel={}", join(pel.collect(), "|"));
                let mut cs: Vec<&StreamConsumer> = g.consumers.iter().collect();
                cs.sort_by(|a, b| a.name.cmp(&b.name));
                let cs = cs.iter().map(|c| format!("{}:{}", item(&c.name), c.seen_ms));
                let _ = write!(out, " consumers={}", join(cs.collect(), "|"));
            }
            out
        }
    }
}

#[test]
fn redis_payloads_decode_as_redis_reads_them() {
    let cases = golden();
    assert!(cases.len() > 40);
    for (name, payload, want) in &cases {
        if name == "functions" {
            let codes = decode_functions(payload).unwrap();
            let mut shown: Vec<String> = codes.iter().map(|c| item(c)).collect();
            shown.sort();
            assert_eq!(format!("functions {}", shown.join(",")), *want);
            continue;
        }
        let got = decode_payload(payload);
        match want.strip_prefix("error ") {
            Some(e) if e.contains("version or checksum") => {
                assert_eq!(got, Err(PayloadError::VersionOrChecksum), "{name}");
            }
            Some(_) => assert!(matches!(got, Err(PayloadError::BadData(_))), "{name}: {got:?}"),
            None => {
                let v = got.unwrap_or_else(|e| panic!("{name}: {e:?}"));
                assert_eq!(render(&v), *want, "{name}");
            }
        }
    }
}

#[test]
fn every_decoded_value_round_trips_through_the_writer() {
    for (name, payload, want) in golden() {
        let Ok(v) = decode_payload(&payload) else { continue };
        for enc in [Encodings::default(), tiny_encodings()] {
            let again = encode_payload(&v, &enc);
            let back = decode_payload(&again).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            assert_eq!(render(&back), want, "{name}");
        }
    }
}

/// Thresholds that send every value to its other encoding.
fn tiny_encodings() -> Encodings {
    Encodings {
        set_max_intset_entries: 1,
        zset_max_listpack_entries: 1,
        zset_max_listpack_value: 1,
        hash_max_listpack_entries: 1,
        hash_max_listpack_value: 1,
        list_max_listpack_size: 3,
    }
}

#[test]
fn values_redis_writes_without_compression_are_written_byte_for_byte() {
    let same = [
        "str_short",
        "str_empty",
        "str_int8",
        "str_int16",
        "str_int32",
        "str_int64_text",
        "set_intset16",
        "set_intset32",
        "zset_skiplist",
        "hash_listpack",
        "stream_simple",
        "stream_empty",
    ];
    let cases = golden();
    for name in same {
        let (_, payload, _) = cases.iter().find(|(n, _, _)| n == name).unwrap();
        let v = decode_payload(payload).unwrap();
        assert_eq!(&encode_payload(&v, &Encodings::default()), payload, "{name}");
    }
}

#[test]
fn the_writer_picks_redis_encodings() {
    let enc = Encodings::default();
    let ty = |v: Value| encode_payload(&v, &enc)[0];
    let strs = |v: &[&str]| v.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
    assert_eq!(ty(Value::Set(strs(&["1", "-2"]))), types::SET_INTSET);
    assert_eq!(ty(Value::Set(strs(&["1", "01"]))), types::SET);
    let many: Vec<Vec<u8>> = (0..513).map(|i: i32| i.to_string().into_bytes()).collect();
    assert_eq!(ty(Value::Set(many)), types::SET);
    assert_eq!(ty(Value::ZSet(vec![(b"m".to_vec(), 1.0)])), types::ZSET_LISTPACK);
    assert_eq!(ty(Value::ZSet(vec![(vec![b'm'; 65], 1.0)])), types::ZSET_2);
    assert_eq!(ty(Value::Hash(vec![(b"f".to_vec(), vec![b'v'; 64])])), types::HASH_LISTPACK);
    assert_eq!(ty(Value::Hash(vec![(b"f".to_vec(), vec![b'v'; 65])])), types::HASH);
    assert_eq!(ty(Value::List(strs(&["a"]))), types::LIST_QUICKLIST_2);
    // A list of many elements spreads over listpacks of at most 8 KiB.
    let long: Vec<Vec<u8>> = (0..3000).map(|i| format!("element-{i}").into_bytes()).collect();
    let p = encode_payload(&Value::List(long.clone()), &enc);
    assert!(p[1] >= 4, "nodes: {}", p[1]);
    assert_eq!(decode_payload(&p).unwrap(), Value::List(long));
    // Long strings compressed when it pays, as Redis writes them.
    let p = encode_payload(&Value::String(b"abc".repeat(100)), &enc);
    assert_eq!(p[1], 0xc3);
    assert!(p.len() < 60);
    let p = encode_payload(&Value::String(b"abcdefghijklmnopqrstu".to_vec()), &enc);
    assert_eq!(p[1], 21);
    // Integers of 32 bits and less in their string encodings, larger ones as text.
    assert_eq!(encode_payload(&Value::String(b"-129".to_vec()), &enc)[..4], [0, 0xc1, 0x7f, 0xff]);
    assert_eq!(encode_payload(&Value::String(b"4294967296".to_vec()), &enc)[..2], [0, 10]);
}

#[test]
fn damaged_payloads_are_errors_never_panics() {
    for (name, payload, _) in golden() {
        if name == "functions" || name.starts_with("bad_") {
            continue;
        }
        let body = &payload[..payload.len() - 10];
        // Truncated bodies, resealed so that the body decoder sees them.
        let cuts: Vec<usize> = if body.len() <= 2048 {
            (0..body.len()).collect()
        } else {
            (0..body.len()).step_by(body.len() / 1500).collect()
        };
        for cut in cuts {
            assert!(decode_payload(&seal(body[..cut].to_vec())).is_err(), "{name} cut at {cut}");
            // Cut payloads that keep their footer fail the checksum.
            assert!(decode_payload(&payload[..cut]).is_err());
        }
        // Flipped bytes, resealed: anything but a panic.
        let step = (body.len() / 1500).max(1);
        for i in (0..body.len()).step_by(step) {
            for x in [0x01u8, 0x80, 0xff] {
                let mut b = body.to_vec();
                b[i] ^= x;
                let _ = decode_payload(&seal(b));
            }
        }
        // A flipped byte under the footer is a checksum error.
        let mut flipped = payload.clone();
        flipped[body.len() / 2] ^= 0x10;
        assert_eq!(decode_payload(&flipped), Err(PayloadError::VersionOrChecksum), "{name}");
    }
}

#[test]
fn huge_lengths_allocate_nothing_and_fail() {
    // A list of 2^64-1 elements, a string of 2^32-1 bytes, an LZF string that claims 4 GiB.
    for body in [
        vec![types::LIST, 0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
        vec![types::STRING, 0x80, 0xff, 0xff, 0xff, 0xff, b'x'],
        vec![types::STRING, 0xc3, 0x01, 0x80, 0xff, 0xff, 0xff, 0xff, 0x00],
        vec![types::STREAM_LISTPACKS_2, 0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
    ] {
        assert!(matches!(decode_payload(&seal(body)), Err(PayloadError::BadData(_))));
    }
}

#[test]
fn a_node_that_repeats_long_field_names_too_often_is_refused() {
    // A master entry of one 4000-byte field name, then entries that each repeat it for two
    // bytes of listpack: 2000 of them would decode into 8 MB from a 20 kB node.
    let node = |entries: i64| {
        let mut lp = listpack::Writer::new();
        for v in [entries, 0, 1] {
            lp.push_int(v);
        }
        lp.push_str(&vec![b'f'; 4000]);
        lp.push_int(0);
        for i in 0..entries {
            for v in [2, 0, i, 1, 4] {
                lp.push_int(v);
            }
        }
        let mut body = vec![types::STREAM_LISTPACKS_2, 1];
        writer::put_string(&mut body, &StreamId::new(0, 0).to_be_bytes());
        writer::put_string(&mut body, &lp.finish());
        for n in [entries as u64, 0, entries as u64 - 1, 0, 0, 0, 0, entries as u64, 0] {
            writer::put_len(&mut body, n);
        }
        seal(body)
    };
    assert!(decode_payload(&node(100)).is_ok());
    assert!(matches!(decode_payload(&node(2000)), Err(PayloadError::BadData(_))));
}

#[test]
fn the_footer_is_checked() {
    let p = encode_payload(&Value::String(b"v".to_vec()), &Encodings::default());
    assert_eq!(open(&p).map(|(b, v)| (b.len(), v)), Ok((3, RDB_VERSION)));
    assert_eq!(open(&p[..9]), Err(PayloadError::VersionOrChecksum));
    let mut older = p[..p.len() - 10].to_vec();
    older.extend_from_slice(&6u16.to_le_bytes());
    let crc = crc64::crc64(&older);
    older.extend_from_slice(&crc.to_le_bytes());
    assert_eq!(decode_payload(&older), Ok(Value::String(b"v".to_vec())));
}

#[test]
fn function_payloads_round_trip_and_the_release_candidate_form_reads() {
    let codes = [&b"#!lua name=a\nredis.register_function('f', function() return 1 end)"[..]];
    let p = encode_functions(codes);
    assert_eq!(decode_functions(&p).unwrap(), vec![codes[0].to_vec()]);
    assert_eq!(decode_functions(&encode_functions([])).unwrap(), Vec::<Vec<u8>>::new());
    // 0xF6: name, engine, a description, the code without its first line.
    let mut body = vec![types::FUNCTION_PRE_GA];
    for s in [&b"lib"[..], b"LUA"] {
        writer::put_string(&mut body, s);
    }
    writer::put_len(&mut body, 1);
    writer::put_string(&mut body, b"the description");
    writer::put_string(&mut body, b"return 1");
    assert_eq!(decode_functions(&seal(body)).unwrap(), vec![b"#!LUA name=lib\nreturn 1".to_vec()]);
    assert_eq!(decode_functions(&seal(vec![types::STRING, 0])), Err(FunctionsError::NotAFunction));
    assert_eq!(
        decode_functions(&seal(vec![types::FUNCTION_2, 5, b'x'])),
        Err(FunctionsError::Unreadable("Failed loading library payload"))
    );
    assert_eq!(decode_functions(b"short"), Err(FunctionsError::VersionOrChecksum));
}

/// Every golden value through a store: RESTORE's records, read back by DUMP's reader.
#[test]
fn every_value_round_trips_through_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::types::open(strata::Options::default(), dir.path(), SyncPolicy::No).unwrap();
    for limits in [Limits::default(), Limits::new(0, 0)] {
        let ks = Keyspace::new(&store, &limits, now_ms());
        for (name, payload, want) in golden() {
            let Ok(v) = decode_payload(&payload) else { continue };
            let key = format!("key-{name}");
            assert_eq!(key::restore(&ks, key.as_bytes(), &v, 0, true).unwrap(), Restored::Written);
            let back = key::read(&ks, key.as_bytes()).unwrap().unwrap();
            assert_eq!(render(&back), want, "{name}");
            // And once more through a payload of this server's.
            let again = decode_payload(&encode_payload(&back, &Encodings::default())).unwrap();
            assert_eq!(render(&again), want, "{name}");
        }
    }
}

fn now_ms() -> u64 {
    crate::types::now_ms()
}

#[test]
fn restore_keeps_existing_keys_and_honours_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::types::open(strata::Options::default(), dir.path(), SyncPolicy::No).unwrap();
    let limits = Limits::default();
    let ks = Keyspace::new(&store, &limits, now_ms());
    let v = Value::List(vec![b"a".to_vec()]);
    assert_eq!(key::restore(&ks, b"k", &v, 0, false).unwrap(), Restored::Written);
    assert_eq!(key::restore(&ks, b"k", &v, 0, false).unwrap(), Restored::Busy);
    let later = ks.now_ms + 60_000;
    let w = Value::Set(vec![b"m".to_vec()]);
    assert_eq!(key::restore(&ks, b"k", &w, later, true).unwrap(), Restored::Written);
    let m = ks.meta(b"k").unwrap().unwrap();
    assert_eq!((m.kind, m.expire_ms), (Kind::Set, later));
    // A time already past: the replaced key goes, and none is made.
    assert_eq!(key::restore(&ks, b"k", &v, ks.now_ms - 1, true).unwrap(), Restored::Expired(true));
    assert!(ks.meta(b"k").unwrap().is_none());
    assert_eq!(key::restore(&ks, b"k", &v, 1, false).unwrap(), Restored::Expired(false));
    assert!(key::read(&ks, b"k").unwrap().is_none());
}

#[test]
fn a_restored_stream_keeps_its_nodes_for_trimming() {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::types::open(strata::Options::default(), dir.path(), SyncPolicy::No).unwrap();
    let limits = Limits::default();
    let ks = Keyspace::new(&store, &limits, now_ms());
    let cases = golden();
    let (_, payload, _) = cases.iter().find(|(n, _, _)| n == "stream_nodes").unwrap();
    let Value::Stream(sv) = decode_payload(payload).unwrap() else { panic!() };
    assert!(sv.nodes.len() >= 2, "Redis's nodes: {}", sv.nodes.len());
    key::restore(&ks, b"s", &Value::Stream(sv.clone()), 0, false).unwrap();
    let s = crate::types::stream::load(&ks, b"s").unwrap().unwrap();
    assert_eq!(s.nodes, sv.nodes.iter().filter(|n| !n.entries.is_empty()).count() as u64);
    let Some(Value::Stream(back)) = key::read(&ks, b"s").unwrap() else { panic!() };
    let masters = |v: &StreamValue| v.nodes.iter().map(|n| n.master).collect::<Vec<_>>();
    assert_eq!(masters(&back), masters(&sv));
}

/// A bulk load (a full sync's or a dump's): every golden value among many strings, more than
/// one batch of them, read back as written; a key named twice keeps its last value, a time
/// past makes no key, and each key's expiry and last use are the file's.
#[test]
fn a_bulk_load_writes_every_value_in_batches_as_restore_would() {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::types::open(strata::Options::default(), dir.path(), SyncPolicy::No).unwrap();
    let limits = Limits::default();
    let ks = Keyspace::new(&store, &limits, now_ms());
    let mut bulk = key::BulkLoad::default();
    let mut values = Vec::new();
    for (name, payload, want) in golden() {
        let Ok(v) = decode_payload(&payload) else { continue };
        assert!(bulk.add(&ks, name.as_bytes(), &v, 0, (None, None)).unwrap());
        values.push((name, want));
    }
    let later = ks.now_ms + 60_000;
    for i in 0..2500u32 {
        let v = Value::String(format!("v{i}").into_bytes());
        assert!(bulk.add(&ks, format!("s{i}").as_bytes(), &v, later, (Some(100), None)).unwrap());
    }
    let twice = Value::List(vec![b"first".to_vec()]);
    assert!(bulk.add(&ks, b"twice", &twice, 0, (None, None)).unwrap());
    let last = Value::Set(vec![b"second".to_vec()]);
    assert!(bulk.add(&ks, b"twice", &last, 0, (None, None)).unwrap());
    let gone = Value::String(b"x".to_vec());
    assert!(!bulk.add(&ks, b"past", &gone, ks.now_ms - 1, (None, None)).unwrap());
    // The first batches went in as they filled; the last one at the finish.
    assert!(key::read(&ks, b"s0").unwrap().is_some());
    assert!(key::read(&ks, b"twice").unwrap().is_none());
    bulk.finish(&ks).unwrap();
    for (name, want) in values {
        let back = key::read(&ks, name.as_bytes()).unwrap().unwrap();
        assert_eq!(render(&back), want, "{name}");
    }
    for i in [0u32, 1023, 1024, 2499] {
        let m = ks.meta(format!("s{i}").as_bytes()).unwrap().unwrap();
        assert_eq!((m.value.into_vec(), m.expire_ms), (format!("v{i}").into_bytes(), later));
    }
    let idle = store.meta_cache.idle_secs(store.space, b"s7");
    assert!((100..110).contains(&idle), "{idle}");
    assert_eq!(key::read(&ks, b"twice").unwrap(), Some(last));
    assert!(ks.meta(b"past").unwrap().is_none());
}
