//! RDB files: the writer's output read back record for record (through a source that gives a
//! few bytes a call as well as through a slice), redis-server 7.0.15's own dump.rdb
//! (`testdata/dump-7.0.15.rdb`, made as `testdata/README.md` says) read value for value,
//! damaged files, and, when redis-server is on PATH, a written file loaded by it.

use super::*;
use crate::types::rdb::{
    listpack, PendingEntry, StreamConsumer, StreamGroup, StreamNode, StreamValue,
};
use crate::types::stream::entries::Entry;
use crate::types::stream::StreamId;
use std::io::{BufRead, BufReader, Cursor};

const GOLDEN: &[u8] = include_bytes!("testdata/dump-7.0.15.rdb");

/// A source that gives 1 to 7 bytes a call, so that every object crosses window edges.
struct Trickle<'a> {
    data: &'a [u8],
    calls: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.calls += 1;
        let n = (self.calls % 7 + 1).min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// Every record of a file, read to its end.
fn read_all<R: Read>(r: R, total: Option<u64>) -> Result<(u16, Vec<Record>), FileError> {
    let mut f = FileReader::new(r, "test.rdb", total)?;
    let mut out = Vec::new();
    while let Some(rec) = f.next_record()? {
        out.push(rec);
    }
    // Done stays done.
    assert_eq!(f.next_record(), Ok(None));
    Ok((f.version(), out))
}

/// Every way of reading `bytes`: a slice or a trickle, its size known or not.
fn read_every_way(bytes: &[u8]) -> Vec<Record> {
    let total = Some(bytes.len() as u64);
    let (version, first) = read_all(bytes, None).unwrap();
    for (i, got) in [
        read_all(bytes, total),
        read_all(Trickle { data: bytes, calls: 0 }, total),
        read_all(Trickle { data: bytes, calls: 3 }, None),
    ]
    .into_iter()
    .enumerate()
    {
        let (v, records) = got.unwrap_or_else(|e| panic!("way {i}: {e}"));
        assert_eq!(v, version);
        assert!(records == first, "way {i} reads other records");
    }
    first
}

fn s(v: &str) -> Vec<u8> {
    v.as_bytes().to_vec()
}

fn strs<'a>(v: impl IntoIterator<Item = &'a str>) -> Vec<Vec<u8>> {
    v.into_iter().map(s).collect()
}

/// A value as the reader gives it back: through the writer and the payload decoder.
fn canonical(v: Value) -> Value {
    reader::decode(&writer::encode(&v, &Encodings::default())).unwrap()
}

/// A value with its unordered parts sorted (a stream's groups and consumers too), to compare
/// values whatever order their encoding keeps.
fn sorted(v: &Value) -> Value {
    match v.clone() {
        Value::Set(mut m) => {
            m.sort();
            Value::Set(m)
        }
        Value::Hash(mut h) => {
            h.sort();
            Value::Hash(h)
        }
        Value::ZSet(mut z) => {
            z.sort_by(|a, b| a.0.cmp(&b.0));
            Value::ZSet(z)
        }
        Value::Stream(mut sv) => {
            sv.groups.sort_by(|a, b| a.name.cmp(&b.name));
            for g in &mut sv.groups {
                g.consumers.sort_by(|a, b| a.name.cmp(&b.name));
            }
            Value::Stream(sv)
        }
        v => v,
    }
}

/// A stream of `n` entries (one with fields of its own), a deleted id, a group with two
/// consumers and pending entries, and a second group with nothing read.
fn sample_stream(n: u64) -> Value {
    let entries: Vec<Entry> = (1..=n)
        .map(|i| {
            let pairs = if i == 2 {
                strs(["other", "x", "more", "y"])
            } else {
                vec![s("f"), i.to_string().into_bytes(), s("g"), s("v")]
            };
            Entry { id: StreamId::new(1000 + i, i % 3), pairs }
        })
        .collect();
    let last = entries.last().map_or(StreamId::MIN, |e| e.id);
    let pending = |id: u64, consumer: &str| PendingEntry {
        id: StreamId::new(1000 + id, id % 3),
        delivery_ms: 1_700_000_000_000 + id,
        deliveries: id,
        consumer: s(consumer),
    };
    canonical(Value::Stream(Box::new(StreamValue {
        nodes: vec![StreamNode {
            master: StreamId::new(1001, 1),
            master_fields: strs(["f", "g"]),
            entries,
            deleted: 0,
            last,
            body_bytes: 0,
        }],
        length: n,
        last_id: last,
        first_id: StreamId::new(1001, 1),
        max_deleted: StreamId::new(999, 0),
        entries_added: n + 1,
        groups: vec![
            StreamGroup {
                name: s("readers"),
                last_id: StreamId::new(1003, 0),
                entries_read: Some(3),
                pending: vec![pending(1, "ann"), pending(2, "bob"), pending(3, "ann")],
                consumers: vec![
                    StreamConsumer { name: s("ann"), seen_ms: 1_700_000_000_100 },
                    StreamConsumer { name: s("bob"), seen_ms: 1_700_000_000_200 },
                ],
            },
            StreamGroup {
                name: s("idle"),
                last_id: StreamId::MIN,
                entries_read: None,
                pending: vec![],
                consumers: vec![],
            },
        ],
    })))
}

/// A key of every kind and encoding the writer picks, small ones and large ones.
fn sample_keys(large: bool) -> Vec<(Vec<u8>, Value, Option<u64>)> {
    let mut keys = vec![
        (s("str"), Value::String(s("hello")), None),
        (s("str:int"), Value::String(s("-12345")), Some(4_102_444_800_000)),
        (s("str:empty"), Value::String(vec![]), None),
        (s("str:lzf"), Value::String(b"abcdefgh".repeat(20)), None),
        (s("list"), Value::List(strs(["a", "1", "", "-7"])), None),
        (s("set:ints"), Value::Set(strs(["3", "-1", "70000", "5000000000"])), None),
        (s("set:strs"), Value::Set(strs(["x", "y", "007"])), Some(4_102_444_800_001)),
        (
            s("zset"),
            Value::ZSet(vec![(s("a"), 1.5), (s("b"), f64::NEG_INFINITY), (s("c"), 0.1)]),
            None,
        ),
        (s("zset:long"), Value::ZSet(vec![(vec![b'm'; 70], 2.0), (s("n"), -3.25)]), None),
        (s("hash"), Value::Hash(vec![(s("f"), s("v")), (s("n"), s("12"))]), None),
        (s("hash:long"), Value::Hash(vec![(s("f"), vec![b'v'; 70]), (s("g"), s(""))]), None),
        (s("stream"), sample_stream(4), None),
        (b"\x00binary\xffkey".to_vec(), Value::String((0..=255).collect()), None),
    ];
    if large {
        keys.extend([
            (
                s("big:str"),
                Value::String((0..40_000u32).map(|i| (i * 7 % 251) as u8).collect()),
                None,
            ),
            (
                s("big:list"),
                Value::List((0..3000).map(|i| format!("element-{i}").into_bytes()).collect()),
                None,
            ),
            (
                s("big:set"),
                Value::Set((0..700).map(|i: i32| (i * 3).to_string().into_bytes()).collect()),
                None,
            ),
            (
                s("big:zset"),
                Value::ZSet(
                    (0..300).map(|i| (format!("m{i}").into_bytes(), f64::from(i) / 4.0)).collect(),
                ),
                None,
            ),
            (
                s("big:hash"),
                Value::Hash(
                    (0..300)
                        .map(|i| (format!("f{i}").into_bytes(), format!("value {i}").into_bytes()))
                        .collect(),
                ),
                None,
            ),
            (s("big:stream"), sample_stream(250), Some(4_102_444_800_002)),
        ]);
    }
    keys.into_iter().map(|(k, v, e)| (k, canonical(v), e)).collect()
}

const CODE: &str = concat!(
    "#!lua name=samplelib\n",
    "redis.register_function('sample_echo', function(keys, args) return args[1] end)"
);

/// A file of the sample keys, split over databases 0 and 7, and the records it holds.
fn sample_file(large: bool) -> (Vec<u8>, Vec<Record>) {
    let aux: [(&str, &[u8]); 3] =
        [("redis-ver", b"7.0.15"), ("redis-bits", b"64"), ("ctime", b"1700000000")];
    let mut expect: Vec<Record> =
        aux.iter().map(|(k, v)| Record::Aux { key: s(k), value: v.to_vec() }).collect();
    let mut w = FileWriter::new(Vec::new(), &aux).unwrap();
    w.function(CODE.as_bytes()).unwrap();
    expect.push(Record::Function(s(CODE)));
    let keys = sample_keys(large);
    let half = keys.len() / 2;
    for (db, part) in [(0, &keys[..half]), (7, &keys[half..])] {
        let expires = part.iter().filter(|k| k.2.is_some()).count() as u64;
        w.select_db(db, part.len() as u64, expires).unwrap();
        expect.push(Record::Db(db));
        expect.push(Record::Sizes { keys: part.len() as u64, expires });
        for (key, value, expire_ms) in part {
            w.key(key, value, *expire_ms, &Encodings::default()).unwrap();
            expect.push(Record::Key {
                key: key.clone(),
                value: value.clone(),
                expire_ms: *expire_ms,
                idle_secs: None,
                freq: None,
            });
        }
    }
    (w.finish().unwrap(), expect)
}

#[test]
fn the_writers_files_read_back_record_for_record() {
    for large in [false, true] {
        let (bytes, expect) = sample_file(large);
        assert!(bytes.starts_with(b"REDIS0010\xfa"));
        let got = read_every_way(&bytes);
        assert_eq!(got.len(), expect.len());
        for (g, e) in got.iter().zip(&expect) {
            assert_eq!(g, e);
        }
    }
}

#[test]
fn the_writer_writes_what_its_drawing_says() {
    let mut w = FileWriter::new(Vec::new(), &[("a", b"1")]).unwrap();
    w.select_db(3, 1, 1).unwrap();
    w.key(b"k", &Value::String(s("v")), Some(0x0102), &Encodings::default()).unwrap();
    let idle = Used { idle_secs: Some(7), freq: None };
    w.key_used(b"i", &Value::String(s("w")), None, idle, &Encodings::default()).unwrap();
    let freq = Used { idle_secs: None, freq: Some(200) };
    w.key_used(b"f", &Value::String(s("x")), None, freq, &Encodings::default()).unwrap();
    w.function(b"f").unwrap();
    let bytes = w.finish().unwrap();
    let body: &[u8] = &[
        b'R', b'E', b'D', b'I', b'S', b'0', b'0', b'1', b'0', // header
        0xfa, 1, b'a', 0xc0, 1, // AUX "a" = 1, integer-encoded
        0xfe, 3, 0xfb, 1, 1, // SELECTDB 3, RESIZEDB 1 1
        0xfc, 2, 1, 0, 0, 0, 0, 0, 0, 0, 1, b'k', 1, b'v', // expiry, type 0, key, value
        0xf8, 7, 0, 1, b'i', 1, b'w', // IDLE 7 seconds, then the key
        0xf9, 200, 0, 1, b'f', 1, b'x', // FREQ 200, then the key
        0xf5, 1, b'f', // FUNCTION2
        0xff,
    ];
    assert_eq!(&bytes[..body.len()], body);
    assert_eq!(bytes[body.len()..], crc64::crc64(body).to_le_bytes());
    assert_eq!(bytes.len(), body.len() + 8);
    let records = read_every_way(&bytes);
    let used: Vec<(Option<u64>, Option<u8>)> = records
        .iter()
        .filter_map(|r| match r {
            Record::Key { idle_secs, freq, .. } => Some((*idle_secs, *freq)),
            _ => None,
        })
        .collect();
    assert_eq!(used, vec![(None, None), (Some(7), None), (None, Some(200))]);
}

/// The values `testdata/README.md`'s commands load, by database and key, with their expiry.
fn golden_keys() -> Vec<(u64, Vec<u8>, Value, Option<u64>)> {
    let many = |n: u32, f: &dyn Fn(u32) -> String| (0..n).map(|i| f(i).into_bytes()).collect();
    let pairs = |items: &[(&str, &str)]| items.iter().map(|(a, b)| (s(a), s(b))).collect();
    let mut plain = vec![s("before"), b"plain-item".repeat(200), s("after")];
    let db0 = vec![
        ("string:short", Value::String(s("hello world")), None),
        ("string:int", Value::String(s("12345")), None),
        ("string:negative", Value::String(s("-98765432")), None),
        ("string:bigint", Value::String(s("12345678901234")), None),
        ("string:empty", Value::String(vec![]), None),
        ("string:lzf", Value::String(b"0123456789abcdef".repeat(64)), None),
        ("string:binary", Value::String((0..=255).collect()), None),
        ("list:small", Value::List(strs(["a", "b", "c", "1", "-2", "300"])), None),
        ("list:big", Value::List(many(1500, &|i| format!("element-{i:04}"))), None),
        ("list:plain", Value::List(std::mem::take(&mut plain)), None),
        ("set:intset", Value::Set(strs(["1", "2", "3", "-5", "100000", "4294967296"])), None),
        ("set:strings", Value::Set(strs(["apple", "banana", "cherry"])), None),
        ("set:bigint", Value::Set(many(600, &|i| i.to_string())), None),
        (
            "zset:small",
            Value::ZSet(vec![
                (s("one"), 1.0),
                (s("two"), 2.5),
                (s("minus"), f64::NEG_INFINITY),
                (s("three"), 3.0),
            ]),
            None,
        ),
        (
            "zset:big",
            Value::ZSet(
                (0..200)
                    .map(|i| (format!("member-{i}").into_bytes(), f64::from(i) * 1.5))
                    .collect(),
            ),
            None,
        ),
        ("hash:small", Value::Hash(pairs(&[("f1", "v1"), ("f2", "2"), ("f3", "")])), None),
        (
            "hash:big",
            Value::Hash(
                (0..200)
                    .map(|i| (format!("field-{i}").into_bytes(), format!("value-{i}").into_bytes()))
                    .collect(),
            ),
            None,
        ),
        ("hash:longvalue", Value::Hash(vec![(s("f"), b"long-value".repeat(10))]), None),
        ("expiring", Value::String(s("far future")), Some(4_102_444_800_000)),
        ("expiring:hash", Value::Hash(pairs(&[("a", "1")])), Some(4_102_444_800_123)),
    ];
    let db3 = vec![
        ("db3:string", Value::String(s("in db three")), None),
        ("db3:list", Value::List(strs(["x", "y", "z"])), None),
        ("db3:expiring", Value::String(s("v")), Some(4_102_444_800_999)),
    ];
    let mut out: Vec<_> = db0.into_iter().map(|(k, v, e)| (0, s(k), v, e)).collect();
    out.extend(db3.into_iter().map(|(k, v, e)| (3, s(k), v, e)));
    out
}

/// The stream the golden file's commands make (entries, counters, groups; its consumers'
/// seen times are the clock's when the file was made).
fn check_golden_stream(v: &StreamValue) {
    let mut want: Vec<Entry> = vec![
        Entry { id: StreamId::new(1, 1), pairs: strs(["name", "alice", "age", "30"]) },
        Entry { id: StreamId::new(1, 2), pairs: strs(["name", "bob", "age", "25"]) },
        Entry { id: StreamId::new(2, 0), pairs: strs(["city", "paris"]) },
    ];
    want.extend((3..=150).filter(|&i| i != 5).map(|i| Entry {
        id: StreamId::new(i, 0),
        pairs: vec![s("n"), i.to_string().into_bytes()],
    }));
    let got: Vec<Entry> = v.nodes.iter().flat_map(|n| n.entries.clone()).collect();
    assert_eq!(got, want);
    // Redis's nodes: at most 100 entries each, the deleted one counted in the first.
    let nodes: Vec<_> = v.nodes.iter().map(|n| (n.master, n.entries.len(), n.deleted)).collect();
    assert_eq!(nodes, [(StreamId::new(1, 1), 99, 1), (StreamId::new(100, 0), 51, 0)]);
    assert_eq!(
        (v.length, v.last_id, v.first_id, v.max_deleted, v.entries_added),
        (150, StreamId::new(150, 0), StreamId::new(1, 1), StreamId::new(5, 0), 151)
    );
    let pending = |ms, seq, consumer: &str, delivery_ms, deliveries| PendingEntry {
        id: StreamId::new(ms, seq),
        delivery_ms,
        deliveries,
        consumer: s(consumer),
    };
    let groups = vec![
        StreamGroup {
            name: s("g1"),
            last_id: StreamId::new(2, 0),
            entries_read: None,
            pending: vec![
                pending(1, 1, "alice", 1_700_000_000_000, 2),
                pending(1, 2, "alice", 1_700_000_000_000, 2),
                pending(2, 0, "bob", 1_700_000_001_000, 5),
            ],
            consumers: vec![
                StreamConsumer { name: s("alice"), seen_ms: 1_796_535_160_316 },
                StreamConsumer { name: s("bob"), seen_ms: 1_796_535_160_318 },
            ],
        },
        StreamGroup {
            name: s("g2"),
            last_id: StreamId::new(10, 0),
            entries_read: Some(9),
            pending: vec![],
            consumers: vec![],
        },
    ];
    assert_eq!(v.groups, groups);
}

#[test]
fn redis_7_0_15s_dump_reads_value_for_value() {
    let records = read_every_way(GOLDEN);
    let mut db = 0;
    let mut keys = Vec::new();
    let mut aux = Vec::new();
    let mut functions = Vec::new();
    let mut sizes = Vec::new();
    for r in records {
        match r {
            Record::Aux { key, value } => aux.push((key, value)),
            Record::Db(d) => db = d,
            Record::Sizes { keys, expires } => sizes.push((db, keys, expires)),
            Record::Function(code) => functions.push(code),
            Record::Key { key, value, expire_ms, idle_secs, freq } => {
                // Saved with maxmemory-policy allkeys-lfu: a FREQ before every key.
                assert!(freq.is_some() && idle_secs.is_none(), "{key:?}");
                keys.push((db, key, value, expire_ms));
            }
        }
    }
    assert_eq!(sizes, [(0, 22, 2), (3, 3, 1)]);
    let code = concat!(
        "#!lua name=mylib\n",
        "redis.register_function('myecho', function(keys, args) return args[1] end)"
    );
    assert_eq!(functions, [s(code)]);
    let aux_names: Vec<&[u8]> = aux.iter().map(|(k, _)| k.as_slice()).collect();
    assert_eq!(aux_names, [&b"redis-ver"[..], b"redis-bits", b"ctime", b"used-mem", b"aof-base"]);
    assert_eq!(aux[0].1, b"7.0.15");
    assert_eq!(aux[1].1, b"64");

    let streams: Vec<_> = keys.iter().filter(|k| k.1.starts_with(b"stream")).cloned().collect();
    keys.retain(|k| !k.1.starts_with(b"stream"));
    keys.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let mut want = golden_keys();
    want.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    assert_eq!(keys.len(), want.len());
    for (g, w) in keys.iter().zip(&want) {
        assert_eq!((g.0, &g.1, g.3), (w.0, &w.1, w.3));
        assert!(sorted(&g.2) == sorted(&w.2), "{}", String::from_utf8_lossy(&g.1));
    }

    assert_eq!(streams.len(), 2);
    for (db, key, value, expire) in streams {
        let Value::Stream(v) = value else { panic!("{key:?} is not a stream") };
        assert_eq!((db, expire), (0, None));
        if key == b"stream" {
            check_golden_stream(&v);
        } else {
            assert_eq!(key, b"stream:empty");
            let empty = StreamValue {
                nodes: vec![],
                length: 0,
                last_id: StreamId::MIN,
                first_id: StreamId::MIN,
                max_deleted: StreamId::MIN,
                entries_added: 0,
                groups: vec![StreamGroup {
                    name: s("g"),
                    last_id: StreamId::MIN,
                    entries_read: None,
                    pending: vec![],
                    consumers: vec![],
                }],
            };
            assert_eq!(*v, empty);
        }
    }
}

/// The error reading `bytes` gives, `total` its size or not given.
fn read_error(bytes: &[u8], total: Option<u64>) -> FileError {
    match read_all(bytes, total) {
        Ok(_) => panic!("{} bytes read without an error", bytes.len()),
        Err(e) => e,
    }
}

#[test]
fn every_prefix_is_an_error_naming_an_offset() {
    let (small, _) = sample_file(false);
    let golden_cuts =
        (0..400).chain((400..GOLDEN.len()).step_by(13)).chain(GOLDEN.len() - 20..GOLDEN.len());
    let cases: [(&[u8], Vec<usize>, bool); 2] =
        [(&small, (0..small.len()).collect(), true), (GOLDEN, golden_cuts.collect(), false)];
    for (bytes, cuts, trickle_unsized) in cases {
        for cut in cuts {
            let prefix = &bytes[..cut];
            let e = read_error(prefix, None);
            assert_eq!(e.offset, cut as u64, "cut at {cut}: {e}");
            assert!(e.what.starts_with("truncated"), "cut at {cut}: {e}");
            assert!(e.to_string().starts_with(&format!("test.rdb: offset {cut}: truncated")));
            // Told the size, the reader refuses what reaches past it where it starts.
            let e = read_error(prefix, Some(cut as u64));
            assert!(e.offset <= cut as u64, "cut at {cut}: {e}");
            assert!(e.what.contains("past the end"), "cut at {cut}: {e}");
            // A trickling source gives the same errors. (Of unknown size, it costs a decoding
            // of the object per read inside it: only the small file's are all tried.)
            let trickle = Trickle { data: prefix, calls: cut };
            let trickled = read_all(trickle, Some(cut as u64)).unwrap_err();
            assert_eq!(trickled, e);
            if trickle_unsized {
                let trickled = read_all(Trickle { data: prefix, calls: cut }, None).unwrap_err();
                assert_eq!(trickled.offset, cut as u64);
            }
        }
    }
}

#[test]
fn any_flipped_byte_is_an_error_never_a_panic() {
    let (bytes, _) = sample_file(false);
    assert!(bytes.len() < 4096, "{}", bytes.len());
    for i in 0..bytes.len() {
        for mask in [0x01u8, 0x10, 0x80, 0xff] {
            let mut b = bytes.clone();
            b[i] ^= mask;
            for total in [None, Some(b.len() as u64)] {
                let Err(e) = read_all(&b[..], total) else {
                    panic!("byte {i} ^ {mask:#x} reads without an error");
                };
                assert!(e.offset <= b.len() as u64);
            }
        }
    }
    // The checksum catches what decodes: a key's value changed in place.
    let at = bytes.windows(5).position(|w| w == b"hello").unwrap();
    let mut b = bytes.clone();
    b[at] = b'j';
    let e = read_error(&b, None);
    assert!(e.what.starts_with("checksum mismatch: the file says 0x"), "{e}");
    assert_eq!(e.offset, bytes.len() as u64 - 8);
    let stored = u64::from_le_bytes(bytes[bytes.len() - 8..].try_into().unwrap());
    let actual = crc64::crc64(&b[..b.len() - 8]);
    assert_eq!(
        e.what,
        format!("checksum mismatch: the file says {stored:#018x}, its bytes give {actual:#018x}")
    );
}

/// A file of version `version` holding `records` (bytes after the header, before EOF).
fn raw_file(version: u16, records: &[u8]) -> Vec<u8> {
    let mut b = format!("REDIS{version:04}").into_bytes();
    b.extend_from_slice(records);
    b.push(opcodes::EOF);
    if version >= 5 {
        let crc = crc64::crc64(&b);
        b.extend_from_slice(&crc.to_le_bytes());
    }
    b
}

/// The bytes of a key record of type `t` whose object body is `body`.
fn key_record(t: u8, key: &[u8], body: &[u8]) -> Vec<u8> {
    let mut b = vec![t];
    writer::put_string(&mut b, key);
    b.extend_from_slice(body);
    b
}

#[test]
fn huge_lengths_fail_without_allocating() {
    let huge = |prefix: &[u8]| {
        let mut rec = prefix.to_vec();
        rec.push(0x81);
        rec.extend_from_slice(&(1u64 << 60).to_be_bytes());
        rec.extend_from_slice(b"some bytes");
        raw_file(10, &rec)
    };
    for (file, what) in [
        (huge(&[0, 1, b'k']), "the value of key \"k\""), // a string of 2^60 bytes
        (huge(&[0]), "a key"),                           // a key of 2^60 bytes
        (huge(&[opcodes::AUX]), "an AUX field's name"),
        (huge(&[types::FUNCTION_2]), "a function library"),
        (huge(&[types::SET_LISTPACK, 1, b'k']), "the value of key"),
        (huge(&[types::HASH, 1, b'k', 0x81, 0, 0, 0, 0, 0, 0, 0, 2, 1, b'f']), "the value of key"),
    ] {
        for total in [Some(file.len() as u64), None] {
            let mut r = FileReader::new(&file[..], "huge", total).unwrap();
            let e = r.next_record().unwrap_err();
            assert!(e.what.starts_with(what) || e.what.contains(what), "{e}");
            if total.is_some() {
                assert!(e.what.contains("past the end of the file"), "{e}");
                assert_eq!(e.offset, file.iter().position(|&b| b == 0x81).unwrap() as u64);
            } else {
                assert!(e.what.starts_with("truncated"), "{e}");
                assert_eq!(e.offset, file.len() as u64);
            }
            // The window holds what was read, nothing of the size claimed.
            assert!(r.buf.len() <= 2 * MAX_READ as usize, "{}", r.buf.len());
        }
    }
    // A list claiming 2^60 elements and an LZF string claiming 2^40 bytes.
    let mut list = vec![types::LIST, 1, b'k', 0x81];
    list.extend_from_slice(&(1u64 << 60).to_be_bytes());
    list.extend_from_slice(&[1, b'a']);
    let mut lzf = vec![types::STRING, 1, b'k', 0xc3, 2, 0x81];
    lzf.extend_from_slice(&(1u64 << 40).to_be_bytes());
    lzf.extend_from_slice(&[0, b'a']);
    for rec in [list, lzf] {
        let file = raw_file(10, &rec);
        let mut r = FileReader::new(&file[..], "huge", Some(file.len() as u64)).unwrap();
        assert!(r.next_record().is_err());
        assert!(r.buf.len() <= 2 * MAX_READ as usize);
    }
}

#[test]
fn the_header_is_checked() {
    for v in 1..=NEWEST_VERSION {
        let (version, records) = read_all(&raw_file(v, &[])[..], None).unwrap();
        assert_eq!((version, records), (v, vec![]));
    }
    for (bytes, offset, what) in [
        (&b"REDIS0013\xff"[..], 5, "RDB version 13 is not read here (1 to 12 are)"),
        (b"REDIS0000\xff", 5, "RDB version 0 is not read here (1 to 12 are)"),
        (b"REDIS00a1\xff", 5, "the version \"00a1\" is not 4 digits"),
        (b"REDIS-001\xff", 5, "the version \"-001\" is not 4 digits"),
        (b"RIDES0010\xff", 0, "not an RDB file: it does not start with \"REDIS\""),
    ] {
        let e = FileReader::new(bytes, "h.rdb", None).err().unwrap();
        assert_eq!((e.offset, e.what.as_str()), (offset, what));
    }
    let e = FileReader::new(&b"REDIS00"[..], "h.rdb", None).err().unwrap();
    assert_eq!(e.offset, 7);
    assert!(e
        .to_string()
        .starts_with("h.rdb: offset 7: truncated: the file ends inside the header"));
}

#[test]
fn a_zero_checksum_is_not_checked_and_old_versions_have_none() {
    let rec = key_record(types::STRING, b"k", &[1, b'v']);
    let mut file = raw_file(9, &rec);
    let n = file.len();
    file[n - 8..].fill(0);
    let (_, records) = read_all(&file[..], None).unwrap();
    assert_eq!(records.len(), 1);
    // Version 4: nothing after EOF; what follows is the caller's.
    let mut file = raw_file(4, &rec);
    assert_eq!(file.last(), Some(&opcodes::EOF));
    file.extend_from_slice(b"+more");
    let mut r = FileReader::new(&file[..], "old", None).unwrap();
    assert!(matches!(r.next_record(), Ok(Some(Record::Key { .. }))));
    assert_eq!(r.next_record(), Ok(None));
    assert_eq!(r.offset(), file.len() as u64 - 5);
    assert_eq!(r.into_parts().1, b"+more");
}

#[test]
fn bytes_after_the_rdb_are_handed_back() {
    let (rdb, _) = sample_file(false);
    let mut stream = rdb.clone();
    stream.extend_from_slice(b"*1\r\n$4\r\nPING\r\n");
    // Size unknown: the reader reads ahead, and hands back what it read past the end.
    let mut r = FileReader::new(Cursor::new(&stream[..]), "stream", None).unwrap();
    while r.next_record().unwrap().is_some() {}
    assert_eq!(r.offset(), rdb.len() as u64);
    let (src, rest) = r.into_parts();
    let mut after = rest;
    after.extend_from_slice(&src.get_ref()[src.position() as usize..]);
    assert_eq!(after, b"*1\r\n$4\r\nPING\r\n");
    // Size known: nothing past it is read.
    let mut r =
        FileReader::new(Trickle { data: &stream, calls: 0 }, "stream", Some(rdb.len() as u64))
            .unwrap();
    while r.next_record().unwrap().is_some() {}
    let (src, rest) = r.into_parts();
    assert!(rest.is_empty());
    assert_eq!(src.data, b"*1\r\n$4\r\nPING\r\n");
}

#[test]
fn opcodes_before_a_key_apply_to_it_alone() {
    let mut rec = vec![opcodes::EXPIRETIME];
    rec.extend_from_slice(&2_000_000_000i32.to_le_bytes());
    rec.extend_from_slice(&[opcodes::IDLE, 0x40, 200, opcodes::FREQ, 7]);
    // Skipped: a slot's sizes (7.4) and a module's auxiliary data of every annotation.
    rec.extend_from_slice(&[opcodes::SLOT_INFO, 0x40, 100, 3, 1]);
    rec.extend_from_slice(&[opcodes::MODULE_AUX, 0x81, 1, 2, 3, 4, 5, 6, 7, 8, 2, 1]);
    rec.extend_from_slice(&[1, 5, 2, 0x40, 9, 3, 0, 0, 0x80, 0x3f, 4]);
    rec.extend_from_slice(&1.5f64.to_le_bytes());
    rec.extend_from_slice(&[5, 3, b'a', b'b', b'c', 0]);
    rec.extend(key_record(types::STRING, b"a", &[1, b'1']));
    rec.extend(key_record(types::STRING, b"b", &[1, b'2']));
    rec.push(opcodes::EXPIRETIME_MS);
    rec.extend_from_slice(&(-5i64).to_le_bytes());
    rec.extend(key_record(types::STRING, b"c", &[1, b'3']));
    let records = read_every_way(&raw_file(10, &rec));
    let key = |k: &str, v: &str, expire_ms, idle_secs, freq| Record::Key {
        key: s(k),
        value: Value::String(s(v)),
        expire_ms,
        idle_secs,
        freq,
    };
    assert_eq!(
        records,
        [
            key("a", "1", Some(2_000_000_000_000), Some(200), Some(7)),
            key("b", "2", None, None, None),
            key("c", "3", Some(0), None, None),
        ]
    );
    // A MODULE_AUX of an unknown annotation, or without its "when", is an error.
    for bad in [&[opcodes::MODULE_AUX, 1, 2, 3, 6][..], &[opcodes::MODULE_AUX, 1, 1, 3, 0]] {
        let e = read_error(&raw_file(10, bad), None);
        assert!(e.what.starts_with("MODULE_AUX"), "{e}");
    }
}

#[test]
fn redis_7_2s_set_listpack_and_stream_3_read_and_restore_refuses_them() {
    let mut lp = listpack::Writer::new();
    for m in ["a", "17", "-3"] {
        lp.push(m.as_bytes());
    }
    let mut body = Vec::new();
    writer::put_string(&mut body, &lp.finish());
    let mut rec = key_record(types::SET_LISTPACK, b"set", &body);
    // A stream of type 19 whose one consumer has an empty PEL: its seen time is the body's
    // last 8 bytes but one; type 21 adds the active time after it.
    let stream = sample_stream(3);
    let Value::Stream(mut sv) = stream else { unreachable!() };
    sv.groups.truncate(1);
    sv.groups[0].pending.clear();
    sv.groups[0].consumers.retain(|c| c.name == b"bob");
    let stream = canonical(Value::Stream(sv));
    let v2 = writer::encode(&stream, &Encodings::default());
    assert_eq!(v2[0], types::STREAM_LISTPACKS_2);
    assert_eq!(v2.last(), Some(&0));
    let mut v3 = v2[1..v2.len() - 1].to_vec();
    v3.extend_from_slice(&1_800_000_000_000u64.to_le_bytes());
    v3.push(0);
    rec.extend(key_record(types::STREAM_LISTPACKS_3, b"stream", &v3));
    let records = read_every_way(&raw_file(11, &rec));
    assert_eq!(records.len(), 2);
    let Record::Key { value: set, .. } = &records[0] else { panic!() };
    assert_eq!(set, &Value::Set(strs(["a", "17", "-3"])));
    let Record::Key { value: got, .. } = &records[1] else { panic!() };
    assert_eq!(got, &stream);
    // RESTORE takes RDB 10's types only, as redis-server 7.0 does.
    assert!(reader::decode(&[&[types::SET_LISTPACK][..], &body].concat()).is_err());
    assert!(reader::decode(&[&[types::STREAM_LISTPACKS_3][..], &v3].concat()).is_err());
    assert!(reader::decode_object(types::STREAM_LISTPACKS_3, &v3).is_ok());
}

#[test]
fn types_without_a_value_here_are_refused_where_they_start() {
    for (t, what) in [
        (6, "module values are not supported (type 6)"),
        (7, "module values are not supported (type 7)"),
        (8, "unknown record type (type 8)"),
        (22, "hashes with field expiries (Redis 7.4) are not supported (type 22)"),
        (25, "hashes with field expiries (Redis 7.4) are not supported (type 25)"),
        (26, "unknown record type (type 26)"),
        (0xf3, "unknown record type (type 243)"),
    ] {
        let mut rec = vec![opcodes::AUX, 1, b'a', 1, b'b'];
        rec.extend(key_record(t, b"k", &[0; 12]));
        let e = read_error(&raw_file(12, &rec), None);
        assert_eq!((e.offset, e.what.as_str()), (14, what));
    }
}

#[test]
fn an_error_stays_and_names_the_key() {
    // A hash listpack with a field twice.
    let mut lp = listpack::Writer::new();
    for m in ["f", "1", "f", "2"] {
        lp.push(m.as_bytes());
    }
    let mut body = Vec::new();
    writer::put_string(&mut body, &lp.finish());
    let file = raw_file(10, &key_record(types::HASH_LISTPACK, b"the\nkey", &body));
    let mut r = FileReader::new(&file[..], "dup.rdb", None).unwrap();
    let e = r.next_record().unwrap_err();
    let want =
        "dup.rdb: offset 18: the value of key \"the\\nkey\" (type 16): bad duplicate hash field";
    assert_eq!(e.to_string(), want);
    assert_eq!(r.next_record().unwrap_err(), e);
    assert_eq!(r.offset(), 18);
}

#[test]
fn a_release_candidate_function_record_reads_as_its_code() {
    let mut rec = vec![types::FUNCTION_PRE_GA];
    for part in [&b"lib"[..], b"LUA"] {
        writer::put_string(&mut rec, part);
    }
    writer::put_len(&mut rec, 1);
    writer::put_string(&mut rec, b"a description");
    writer::put_string(&mut rec, b"return 1");
    let records = read_every_way(&raw_file(10, &rec));
    assert_eq!(records, [Record::Function(s("#!LUA name=lib\nreturn 1"))]);
}

/// redis-server, killed when dropped.
struct Server {
    child: std::process::Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// redis-server on a free port, loading `dir`'s dump.rdb; None when it is not on PATH.
    fn start(dir: tempfile::TempDir) -> Option<Server> {
        let path = std::env::var_os("PATH")?;
        let exe =
            std::env::split_paths(&path).map(|d| d.join("redis-server")).find(|p| p.is_file())?;
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = std::process::Command::new(exe)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", ""])
            .args(["--appendonly", "no", "--daemonize", "no", "--dbfilename", "dump.rdb"])
            .args(["--sanitize-dump-payload", "yes", "--enable-debug-command", "no"])
            .arg("--dir")
            .arg(dir.path())
            .arg("--logfile")
            .arg(dir.path().join("redis.log"))
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        Some(Server { child, port, dir })
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("redis.log")).unwrap_or_default()
    }

    fn connect(&mut self) -> Resp {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("redis-server exited ({status}):\n{}", self.log());
            }
            if let Ok(c) = std::net::TcpStream::connect(("127.0.0.1", self.port)) {
                c.set_read_timeout(Some(std::time::Duration::from_secs(20))).unwrap();
                let mut r = Resp { r: BufReader::new(c.try_clone().unwrap()), w: c };
                // Up, and done loading.
                if r.cmd(&[b"PING"]) == Reply::Status(s("PONG")) {
                    return r;
                }
            }
            assert!(std::time::Instant::now() < deadline, "redis-server: {}", self.log());
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

#[derive(Debug, PartialEq)]
enum Reply {
    Status(Vec<u8>),
    Error(Vec<u8>),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Vec<Reply>),
}

impl Reply {
    fn bulks(self) -> Vec<Vec<u8>> {
        let Reply::Array(items) = self else { panic!("not an array: {self:?}") };
        items
            .into_iter()
            .map(|i| match i {
                Reply::Bulk(Some(b)) => b,
                i => panic!("not a bulk string: {i:?}"),
            })
            .collect()
    }
}

/// A minimal RESP2 client.
struct Resp {
    r: BufReader<std::net::TcpStream>,
    w: std::net::TcpStream,
}

impl Resp {
    fn cmd(&mut self, args: &[&[u8]]) -> Reply {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        self.w.write_all(&out).unwrap();
        self.reply()
    }

    fn reply(&mut self) -> Reply {
        let mut line = Vec::new();
        self.r.read_until(b'\n', &mut line).unwrap();
        assert!(line.ends_with(b"\r\n"), "{line:?}");
        let rest = line[1..line.len() - 2].to_vec();
        let n = || std::str::from_utf8(&rest).unwrap().parse::<i64>().unwrap();
        match line[0] {
            b'+' => Reply::Status(rest),
            b'-' => Reply::Error(rest),
            b':' => Reply::Int(n()),
            b'$' if n() < 0 => Reply::Bulk(None),
            b'$' => {
                let mut b = vec![0; n() as usize + 2];
                self.r.read_exact(&mut b).unwrap();
                b.truncate(b.len() - 2);
                Reply::Bulk(Some(b))
            }
            b'*' => Reply::Array((0..n()).map(|_| self.reply()).collect()),
            _ => panic!("bad reply line {line:?}"),
        }
    }
}

/// A file's keys as (database, key, value with its unordered parts sorted, expiry), by
/// database and key, and its functions.
type Contents = (Vec<(u64, Vec<u8>, Value, Option<u64>)>, Vec<Vec<u8>>);

fn contents(records: Vec<Record>) -> Contents {
    let (mut db, mut keys, mut functions) = (0, Vec::new(), Vec::new());
    for r in records {
        match r {
            Record::Db(d) => db = d,
            Record::Key { key, value, expire_ms, .. } => {
                keys.push((db, key, sorted(&value), expire_ms));
            }
            Record::Function(code) => functions.push(code),
            Record::Aux { .. } | Record::Sizes { .. } => {}
        }
    }
    keys.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    (keys, functions)
}

/// redis-server 7.0 loads a file of every kind of value the writer writes, answers for
/// them, and saves them back as the reader reads them.
#[test]
fn redis_server_loads_what_the_writer_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, records) = sample_file(true);
    std::fs::write(dir.path().join("dump.rdb"), &bytes).unwrap();
    let Some(mut server) = Server::start(dir) else {
        println!("skipped: redis-server is not on PATH");
        return;
    };
    let mut c = server.connect();
    let keys: Vec<(Vec<u8>, Value, Option<u64>)> = sample_keys(true);
    let in_db0 = keys.len() / 2;
    assert_eq!(c.cmd(&[b"DBSIZE"]), Reply::Int(in_db0 as i64));
    for (i, (key, value, expire_ms)) in keys.iter().enumerate() {
        let db = if i < in_db0 { b"0" } else { b"7" };
        assert_eq!(c.cmd(&[b"SELECT", db]), Reply::Status(s("OK")));
        let ty = match value {
            Value::String(_) => "string",
            Value::List(_) => "list",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
            Value::Hash(_) => "hash",
            Value::Stream(_) => "stream",
        };
        assert_eq!(c.cmd(&[b"TYPE", key]), Reply::Status(s(ty)), "{key:?}");
        let expire = expire_ms.map_or(-1, |ms| ms as i64);
        assert_eq!(c.cmd(&[b"PEXPIRETIME", key]), Reply::Int(expire), "{key:?}");
        match value {
            Value::String(v) => assert_eq!(c.cmd(&[b"GET", key]), Reply::Bulk(Some(v.clone()))),
            Value::List(items) => assert_eq!(&c.cmd(&[b"LRANGE", key, b"0", b"-1"]).bulks(), items),
            Value::Set(members) => {
                let mut got = c.cmd(&[b"SMEMBERS", key]).bulks();
                got.sort();
                let mut want = members.clone();
                want.sort();
                assert_eq!(got, want);
            }
            Value::ZSet(_) => {
                let got = c.cmd(&[b"ZRANGE", key, b"0", b"-1", b"WITHSCORES"]).bulks();
                let mut got: Vec<(Vec<u8>, f64)> = got
                    .chunks(2)
                    .map(|p| {
                        let score = std::str::from_utf8(&p[1]).unwrap().parse().unwrap();
                        (p[0].clone(), score)
                    })
                    .collect();
                got.sort_by(|a, b| a.0.cmp(&b.0));
                assert_eq!(sorted(&Value::ZSet(got)), sorted(value));
            }
            Value::Hash(_) => {
                let got = c.cmd(&[b"HGETALL", key]).bulks();
                let got = got.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect();
                assert_eq!(sorted(&Value::Hash(got)), sorted(value));
            }
            Value::Stream(sv) => {
                assert_eq!(c.cmd(&[b"XLEN", key]), Reply::Int(sv.length as i64));
                let Reply::Array(entries) = c.cmd(&[b"XRANGE", key, b"-", b"+"]) else { panic!() };
                let want: Vec<&Entry> = sv.nodes.iter().flat_map(|n| &n.entries).collect();
                assert_eq!(entries.len(), want.len());
                for (got, want) in entries.into_iter().zip(want) {
                    let Reply::Array(mut parts) = got else { panic!() };
                    let pairs = parts.pop().unwrap().bulks();
                    let id = format!("{}-{}", want.id.ms, want.id.seq).into_bytes();
                    assert_eq!(parts, [Reply::Bulk(Some(id))]);
                    assert_eq!(pairs, want.pairs);
                }
                let Reply::Array(summary) = c.cmd(&[b"XPENDING", key, b"readers"]) else {
                    panic!()
                };
                assert_eq!(summary[0], Reply::Int(3));
            }
        }
    }
    assert_eq!(c.cmd(&[b"FCALL", b"sample_echo", b"0", b"hi"]), Reply::Bulk(Some(s("hi"))));

    // Saved again by redis-server: the same values, read by the reader.
    assert_eq!(c.cmd(&[b"SAVE"]), Reply::Status(s("OK")));
    let saved = std::fs::read(server.dir.path().join("dump.rdb")).unwrap();
    let (want, got) = (contents(records), contents(read_every_way(&saved)));
    assert_eq!(got.1, want.1);
    assert_eq!(got.0.len(), want.0.len());
    for (g, w) in got.0.iter().zip(&want.0) {
        assert!(g == w, "redis-server saved {:?} otherwise", String::from_utf8_lossy(&w.1));
    }
    drop(c);
    drop(server);
}
