//! Decoding an object body (after the footer is checked, `super::open`) into a [`Value`]:
//! every object type Redis 7.0 loads from a payload of RDB version 10 or older (drawn in
//! `super`), and for RDB files (`super::file`) also the types of versions 11 and 12 that hold
//! values this server has (20: a set as a listpack, 21: a stream whose consumers carry an
//! active time). Redis's checks of its deep sanitization always apply, as this server keeps no
//! value it has not decoded whole: no empty container, no duplicate member or field, no NaN
//! score, a stream's entries in order and matching its counters, every pending entry owned
//! by exactly one consumer.
//!
//! A body may be given cut short (a file is read through a window): a decoder that runs out of
//! bytes says so ([`ObjectError::Short`], with how far the read wanted to go) apart from one
//! that finds bytes it cannot decode, so that the caller can read more and try again.

use super::listpack::{self, Elem};
use super::{intset, lzf, types, ziplist, BadData, FunctionsError};
use super::{PendingEntry, StreamConsumer, StreamGroup, StreamNode, StreamValue, Value};
use crate::types::number::parse_float;
use crate::types::stream::entries::Entry;
use crate::types::stream::{Stream, StreamId};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};

/// A length, or the tag of a string's special encoding.
enum Length {
    Plain(u64),
    Special(u8),
}

/// Why an object (or a length, a string, a function library) did not decode from the bytes
/// given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectError {
    /// The bytes end inside it: a read of `what` needed the bytes up to offset `until` of those
    /// given (saturating at `u64::MAX`). With them that read succeeds; later ones may need more.
    Short { until: u64, what: &'static str },
    /// The bytes do not decode; more of them would not help.
    Bad(BadData),
}

impl ObjectError {
    /// The error as a complete body's: running out of it is bad data too.
    pub fn into_bad(self) -> BadData {
        match self {
            ObjectError::Short { what, .. } => BadData(what),
            ObjectError::Bad(b) => b,
        }
    }
}

/// The body being read.
struct Input<'a> {
    b: &'a [u8],
    at: usize,
    /// Set by the first read that ran past the end: where it wanted to end and what it read.
    /// Every read's error is passed straight up, so an error returned with this set is that
    /// read's: the body was cut short, not wrong.
    short: Option<(u64, &'static str)>,
}

impl<'a> Input<'a> {
    fn new(b: &'a [u8]) -> Input<'a> {
        Input { b, at: 0, short: None }
    }

    fn left(&self) -> usize {
        self.b.len() - self.at
    }

    fn take(&mut self, n: u64, what: &'static str) -> Result<&'a [u8], BadData> {
        let end = (self.at as u64).saturating_add(n);
        if end > self.b.len() as u64 {
            self.short.get_or_insert((end, what));
            return Err(BadData(what));
        }
        let end = end as usize;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }

    /// A decoder's result with the bytes it consumed, or its error told apart as running out
    /// or bad data.
    fn outcome<T>(&self, r: Result<T, BadData>) -> Result<(T, usize), ObjectError> {
        match (r, self.short) {
            (Ok(v), _) => Ok((v, self.at)),
            (Err(_), Some((until, what))) => Err(ObjectError::Short { until, what }),
            (Err(e), None) => Err(ObjectError::Bad(e)),
        }
    }

    fn byte(&mut self, what: &'static str) -> Result<u8, BadData> {
        Ok(self.take(1, what)?[0])
    }

    fn length(&mut self) -> Result<Length, BadData> {
        let what = "length";
        let first = self.byte(what)?;
        Ok(match first >> 6 {
            0 => Length::Plain(u64::from(first & 0x3f)),
            1 => Length::Plain(u64::from(first & 0x3f) << 8 | u64::from(self.byte(what)?)),
            3 => Length::Special(first & 0x3f),
            _ => match first {
                0x80 => {
                    let b = self.take(4, what)?;
                    Length::Plain(u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])))
                }
                0x81 => {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(self.take(8, what)?);
                    Length::Plain(u64::from_be_bytes(a))
                }
                _ => return Err(BadData(what)),
            },
        })
    }

    /// A plain length.
    fn len(&mut self) -> Result<u64, BadData> {
        match self.length()? {
            Length::Plain(n) => Ok(n),
            Length::Special(_) => Err(BadData("length")),
        }
    }

    /// A count of items that take a byte or more each: the capacity to reserve for them is
    /// bounded by the bytes left.
    fn count(&mut self) -> Result<(u64, usize), BadData> {
        let n = self.len()?;
        Ok((n, usize::try_from(n).unwrap_or(usize::MAX).min(self.left())))
    }

    fn time_ms(&mut self) -> Result<u64, BadData> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8, "time")?);
        Ok(u64::from_le_bytes(a))
    }

    fn string(&mut self) -> Result<Cow<'a, [u8]>, BadData> {
        let what = "string";
        match self.length()? {
            Length::Plain(n) => Ok(Cow::Borrowed(self.take(n, what)?)),
            Length::Special(0) => Ok(text(i64::from(self.byte(what)? as i8))),
            Length::Special(1) => {
                let b = self.take(2, what)?;
                Ok(text(i64::from(i16::from_le_bytes([b[0], b[1]]))))
            }
            Length::Special(2) => {
                let b = self.take(4, what)?;
                Ok(text(i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))))
            }
            Length::Special(3) => {
                let compressed = self.len()?;
                let plain = self.len()?;
                let data = self.take(compressed, "compressed string")?;
                if plain == 0 {
                    return Ok(Cow::Owned(Vec::new()));
                }
                if plain > compressed.saturating_mul(lzf::MAX_EXPANSION) {
                    return Err(BadData("compressed string"));
                }
                let plain = usize::try_from(plain).map_err(|_| BadData("compressed string"))?;
                lzf::decompress(data, plain).map(Cow::Owned).ok_or(BadData("compressed string"))
            }
            Length::Special(_) => Err(BadData(what)),
        }
    }

    fn vec(&mut self) -> Result<Vec<u8>, BadData> {
        Ok(self.string()?.into_owned())
    }

    fn id(&mut self) -> Result<StreamId, BadData> {
        Ok(StreamId::new(self.len()?, self.len()?))
    }

    fn raw_id(&mut self) -> Result<StreamId, BadData> {
        StreamId::from_be_bytes(self.take(16, "stream id")?).ok_or(BadData("stream id"))
    }
}

fn text(v: i64) -> Cow<'static, [u8]> {
    Cow::Owned(v.to_string().into_bytes())
}

/// A score in a packed pair: an integer, or text as Redis writes it.
fn score_of(e: Elem) -> Result<f64, BadData> {
    match e {
        Elem::Int(v) => Ok(v as f64),
        Elem::Str(s) => parse_float(s).ok_or(BadData("score")),
    }
}

/// Pairs of a packed list (field, value or member, score), at least one.
fn pairs<'e>(elems: &'e [Elem<'e>]) -> Result<impl Iterator<Item = (Elem<'e>, Elem<'e>)>, BadData> {
    if elems.is_empty() || !elems.len().is_multiple_of(2) {
        return Err(BadData("packed pairs"));
    }
    Ok(elems.chunks_exact(2).map(|p| (p[0], p[1])))
}

fn hash_of(pairs: impl Iterator<Item = (Vec<u8>, Vec<u8>)>) -> Result<Value, BadData> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (f, v) in pairs {
        if !seen.insert(f.clone()) {
            return Err(BadData("duplicate hash field"));
        }
        out.push((f, v));
    }
    if out.is_empty() {
        return Err(BadData("empty hash"));
    }
    Ok(Value::Hash(out))
}

fn zset_of(pairs: impl Iterator<Item = Result<(Vec<u8>, f64), BadData>>) -> Result<Value, BadData> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for p in pairs {
        let (m, s) = p?;
        if s.is_nan() {
            return Err(BadData("NaN score"));
        }
        if !seen.insert(m.clone()) {
            return Err(BadData("duplicate sorted set member"));
        }
        out.push((m, s));
    }
    if out.is_empty() {
        return Err(BadData("empty sorted set"));
    }
    Ok(Value::ZSet(out))
}

fn set_of(members: Vec<Vec<u8>>) -> Result<Value, BadData> {
    let mut seen = HashSet::with_capacity(members.len());
    if members.is_empty() || !members.iter().all(|m| seen.insert(m.as_slice())) {
        return Err(BadData("empty set or duplicate member"));
    }
    Ok(Value::Set(members))
}

/// Decodes a RESTORE body: its type byte, then the value (bytes after it are ignored, as
/// Redis ignores them). Only the types of RDB version 10 and older: redis-server 7.0 refuses
/// the newer ones in a payload whatever its version says.
pub fn decode(body: &[u8]) -> Result<Value, BadData> {
    let (&t, rest) = body.split_first().ok_or(BadData("type"))?;
    if t > types::STREAM_LISTPACKS_2 {
        return Err(BadData("object type"));
    }
    decode_object(t, rest).map(|(v, _)| v).map_err(ObjectError::into_bad)
}

/// Decodes the body of an object of type `t` (any type an RDB file of version 12 or older
/// holds that maps to a [`Value`]) from the start of `body`: the value and the bytes it took.
pub fn decode_object(t: u8, body: &[u8]) -> Result<(Value, usize), ObjectError> {
    let mut r = Input::new(body);
    let v = object(&mut r, t);
    r.outcome(v)
}

/// A length (not a string's special encoding) from the start of `body`, and its size.
pub fn decode_len(body: &[u8]) -> Result<(u64, usize), ObjectError> {
    let mut r = Input::new(body);
    let v = r.len();
    r.outcome(v)
}

/// A string in any of its encodings from the start of `body` (an integer as its decimal
/// text, LZF data decompressed), and the bytes it took.
pub fn decode_string(body: &[u8]) -> Result<(Vec<u8>, usize), ObjectError> {
    let mut r = Input::new(body);
    let v = r.vec();
    r.outcome(v)
}

/// One function library record's body after its type byte `t` (0xF5, or 0xF6 in the release
/// candidates' form, read as the code Redis would make of it) from the start of `body`: the
/// library's code and the bytes it took.
pub fn decode_function(t: u8, body: &[u8]) -> Result<(Vec<u8>, usize), ObjectError> {
    let mut r = Input::new(body);
    let v = function(&mut r, t).map_err(|e| match e {
        FunctionsError::Unreadable(what) => BadData(what),
        _ => BadData("function library"),
    });
    r.outcome(v)
}

/// The value of an object of type `t`.
fn object(r: &mut Input, t: u8) -> Result<Value, BadData> {
    match t {
        types::STRING => Ok(Value::String(r.vec()?)),
        types::LIST | types::SET => {
            let (n, cap) = r.count()?;
            let mut items = Vec::with_capacity(cap);
            for _ in 0..n {
                items.push(r.vec()?);
            }
            if t == types::SET {
                return set_of(items);
            }
            if items.is_empty() {
                return Err(BadData("empty list"));
            }
            Ok(Value::List(items))
        }
        types::ZSET | types::ZSET_2 => {
            let (n, cap) = r.count()?;
            let mut items = Vec::with_capacity(cap);
            for _ in 0..n {
                let m = r.vec()?;
                let s = if t == types::ZSET_2 {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(r.take(8, "score")?);
                    f64::from_le_bytes(a)
                } else {
                    text_score(r)?
                };
                items.push(Ok((m, s)));
            }
            zset_of(items.into_iter())
        }
        types::HASH => {
            let (n, cap) = r.count()?;
            let mut items = Vec::with_capacity(cap);
            for _ in 0..n {
                items.push((r.vec()?, r.vec()?));
            }
            hash_of(items.into_iter())
        }
        types::MODULE | types::MODULE_2 => Err(BadData("module value")),
        types::HASH_ZIPMAP => {
            let blob = r.string()?;
            let pairs = ziplist::decode_zipmap(&blob)?;
            hash_of(pairs.into_iter().map(|(f, v)| (f.to_vec(), v.to_vec())))
        }
        types::LIST_ZIPLIST => {
            let blob = r.string()?;
            let items: Vec<Vec<u8>> =
                ziplist::decode(&blob)?.into_iter().map(Elem::to_vec).collect();
            if items.is_empty() {
                return Err(BadData("empty list"));
            }
            Ok(Value::List(items))
        }
        types::SET_INTSET => {
            let blob = r.string()?;
            let members = intset::decode(&blob)?;
            Ok(Value::Set(members.into_iter().map(|v| v.to_string().into_bytes()).collect()))
        }
        types::SET_LISTPACK => {
            let blob = r.string()?;
            set_of(listpack::decode(&blob)?.into_iter().map(Elem::to_vec).collect())
        }
        types::ZSET_ZIPLIST | types::ZSET_LISTPACK => {
            let blob = r.string()?;
            let elems = if t == types::ZSET_ZIPLIST {
                ziplist::decode(&blob)?
            } else {
                listpack::decode(&blob)?
            };
            let items: Vec<_> =
                pairs(&elems)?.map(|(m, s)| Ok((m.to_vec(), score_of(s)?))).collect();
            zset_of(items.into_iter())
        }
        types::HASH_ZIPLIST | types::HASH_LISTPACK => {
            let blob = r.string()?;
            let elems = if t == types::HASH_ZIPLIST {
                ziplist::decode(&blob)?
            } else {
                listpack::decode(&blob)?
            };
            let items: Vec<_> = pairs(&elems)?.map(|(f, v)| (f.to_vec(), v.to_vec())).collect();
            hash_of(items.into_iter())
        }
        types::LIST_QUICKLIST | types::LIST_QUICKLIST_2 => {
            let (n, _) = r.count()?;
            let mut items = Vec::new();
            for _ in 0..n {
                let container = if t == types::LIST_QUICKLIST_2 { r.len()? } else { 2 };
                if container != 1 && container != 2 {
                    return Err(BadData("quicklist container"));
                }
                let blob = r.string()?;
                if blob.is_empty() {
                    return Err(BadData("empty quicklist node"));
                }
                if container == 1 {
                    items.push(blob.into_owned());
                    continue;
                }
                let elems = if t == types::LIST_QUICKLIST {
                    ziplist::decode(&blob)?
                } else {
                    listpack::decode(&blob)?
                };
                items.extend(elems.into_iter().map(Elem::to_vec));
            }
            if items.is_empty() {
                return Err(BadData("empty list"));
            }
            Ok(Value::List(items))
        }
        types::STREAM_LISTPACKS => Ok(Value::Stream(Box::new(stream(r, 1)?))),
        types::STREAM_LISTPACKS_2 => Ok(Value::Stream(Box::new(stream(r, 2)?))),
        types::STREAM_LISTPACKS_3 => Ok(Value::Stream(Box::new(stream(r, 3)?))),
        _ => Err(BadData("object type")),
    }
}

/// A score of a type 3 sorted set: a length byte (253 NaN, 254 +inf, 255 -inf) and text.
fn text_score(r: &mut Input) -> Result<f64, BadData> {
    Ok(match r.byte("score")? {
        253 => f64::NAN,
        254 => f64::INFINITY,
        255 => f64::NEG_INFINITY,
        n => parse_float(r.take(u64::from(n), "score")?).ok_or(BadData("score"))?,
    })
}

/// Entry flags in a stream node (Redis's).
const FLAG_DELETED: i64 = 1;
const FLAG_SAME_FIELDS: i64 = 2;

/// The next element of a node as an integer.
fn next_int<'e>(it: &mut impl Iterator<Item = Elem<'e>>) -> Result<i64, BadData> {
    it.next().and_then(Elem::as_int).ok_or(BadData("stream node"))
}

/// The next element of a node as a count.
fn next_count<'e>(it: &mut impl Iterator<Item = Elem<'e>>) -> Result<u64, BadData> {
    u64::try_from(next_int(it)?).map_err(|_| BadData("stream node"))
}

/// How many bytes of master field names a node's entries may repeat, against its listpack's
/// size: an entry flagged with the master's fields names none itself, and each is stored
/// here with its names, so a crafted node of long names and many tiny entries would
/// otherwise decode into far more memory than the payload holds. Real nodes (at most
/// `stream-node-max-entries` entries, 100 by default) stay far below it.
fn repeat_budget(lp_len: usize) -> usize {
    lp_len.saturating_mul(64).saturating_add(1 << 20)
}

/// Decodes one stream node: its master entry, then every entry, live and deleted.
fn stream_node(master: StreamId, lp: &[u8]) -> Result<StreamNode, BadData> {
    let bad = BadData("stream node");
    let elems = listpack::decode(lp)?;
    let mut budget = repeat_budget(lp.len());
    let mut it = elems.iter().copied();
    let live = next_count(&mut it)?;
    let deleted = next_count(&mut it)?;
    let field_count = next_count(&mut it)?;
    let mut master_fields = Vec::with_capacity((field_count as usize).min(elems.len()));
    for _ in 0..field_count {
        master_fields.push(it.next().ok_or(bad)?.to_vec());
    }
    if next_int(&mut it)? != 0 {
        return Err(bad);
    }
    let (mut entries, mut gone, mut last) = (Vec::new(), 0u64, None::<StreamId>);
    for _ in 0..live.checked_add(deleted).ok_or(bad)? {
        let flags = next_int(&mut it)?;
        let ms = next_int(&mut it)? as u64;
        let seq = next_int(&mut it)? as u64;
        let id = StreamId::new(master.ms.wrapping_add(ms), master.seq.wrapping_add(seq));
        if id < master || last.is_some_and(|l| id <= l) {
            return Err(bad);
        }
        let mut pairs = Vec::new();
        let pieces = if flags & FLAG_SAME_FIELDS != 0 {
            let names: usize = master_fields.iter().map(Vec::len).sum();
            budget = budget.checked_sub(names).ok_or(BadData("stream node repeats too much"))?;
            for f in &master_fields {
                pairs.push(f.clone());
                pairs.push(it.next().ok_or(bad)?.to_vec());
            }
            field_count + 3
        } else {
            let n = next_count(&mut it)?;
            for _ in 0..n.checked_mul(2).ok_or(bad)? {
                pairs.push(it.next().ok_or(bad)?.to_vec());
            }
            2 * n + 4
        };
        if next_count(&mut it)? != pieces {
            return Err(bad);
        }
        last = Some(id);
        if flags & FLAG_DELETED != 0 {
            gone += 1;
        } else {
            entries.push(Entry { id, pairs });
        }
    }
    if it.next().is_some() || entries.len() as u64 != live || gone != deleted {
        return Err(bad);
    }
    let counters = listpack::int_entry_size(live as i64) + listpack::int_entry_size(deleted as i64);
    Ok(StreamNode {
        master,
        master_fields,
        entries,
        deleted,
        last: last.unwrap_or(master),
        body_bytes: lp.len().saturating_sub(counters) as u64,
    })
}

/// A stream of `format` 1 (type 15: its newer counters derived as Redis derives them), 2 (type
/// 19) or 3 (type 21: each consumer's active time follows its seen time, and is not kept).
fn stream(r: &mut Input, format: u8) -> Result<StreamValue, BadData> {
    let bad = BadData("stream");
    let v2 = format >= 2;
    let (n, cap) = r.count()?;
    let mut nodes = Vec::with_capacity(cap);
    for _ in 0..n {
        let key = r.string()?;
        if key.len() != 16 {
            return Err(BadData("stream node key"));
        }
        let master = StreamId::from_be_bytes(&key).ok_or(bad)?;
        let lp = r.string()?;
        nodes.push(stream_node(master, &lp)?);
    }
    nodes.sort_by_key(|n| n.master);
    // Node keys are unique and every entry sorts between its node's key and the next one's.
    for w in nodes.windows(2) {
        if w[0].master == w[1].master || w[0].last >= w[1].master {
            return Err(bad);
        }
    }
    let live: u64 = nodes.iter().map(|n| n.entries.len() as u64).sum();
    let top = nodes.iter().rev().find_map(|n| n.entries.last().map(|e| e.id));
    let length = r.len()?;
    let last_id = r.id()?;
    let (first_id, max_deleted, entries_added) = if v2 {
        (r.id()?, r.id()?, r.len()?)
    } else {
        let first = nodes.iter().find_map(|n| n.entries.first().map(|e| e.id));
        (first.unwrap_or(StreamId::MIN), StreamId::MIN, length)
    };
    if length != live || top.is_some_and(|t| t > last_id) {
        return Err(bad);
    }
    let counters = Stream {
        version: 0,
        expire_ms: 0,
        length,
        last_id,
        first_id,
        max_deleted,
        entries_added,
        nodes: 0,
        groups: 0,
    };
    let (ng, cap) = r.count()?;
    let mut groups: Vec<StreamGroup> = Vec::with_capacity(cap);
    let mut names = HashSet::new();
    for _ in 0..ng {
        let name = r.vec()?;
        if !names.insert(name.clone()) {
            return Err(BadData("duplicate consumer group"));
        }
        let last = r.id()?;
        let entries_read = if v2 {
            let v = r.len()? as i64;
            (v != -1).then_some(v)
        } else {
            counters.entries_read_at(last)
        };
        // id -> (delivery time, deliveries, owner)
        let mut pel: BTreeMap<StreamId, (u64, u64, Option<usize>)> = BTreeMap::new();
        let (np, _) = r.count()?;
        for _ in 0..np {
            let id = r.raw_id()?;
            let at = r.time_ms()?;
            let count = r.len()?;
            if pel.insert(id, (at, count, None)).is_some() {
                return Err(BadData("duplicate pending entry"));
            }
        }
        let (nc, cap) = r.count()?;
        let mut consumers: Vec<StreamConsumer> = Vec::with_capacity(cap);
        let mut cnames = HashSet::new();
        for ci in 0..nc {
            let cname = r.vec()?;
            if !cnames.insert(cname.clone()) {
                return Err(BadData("duplicate consumer"));
            }
            let seen_ms = r.time_ms()?;
            if format >= 3 {
                r.time_ms()?;
            }
            let (own, _) = r.count()?;
            for _ in 0..own {
                let id = r.raw_id()?;
                match pel.get_mut(&id) {
                    Some((_, _, owner @ None)) => *owner = Some(ci as usize),
                    _ => return Err(BadData("consumer pending entry")),
                }
            }
            consumers.push(StreamConsumer { name: cname, seen_ms });
        }
        let mut pending = Vec::with_capacity(pel.len());
        for (id, (delivery_ms, deliveries, owner)) in pel {
            let owner = owner.ok_or(BadData("pending entry without consumer"))?;
            pending.push(PendingEntry {
                id,
                delivery_ms,
                deliveries,
                consumer: consumers[owner].name.clone(),
            });
        }
        groups.push(StreamGroup { name, last_id: last, entries_read, pending, consumers });
    }
    Ok(StreamValue { nodes, length, last_id, first_id, max_deleted, entries_added, groups })
}

/// The libraries of a FUNCTION DUMP body, in order.
pub fn decode_functions(body: &[u8]) -> Result<Vec<Vec<u8>>, FunctionsError> {
    let mut r = Input::new(body);
    let mut out = Vec::new();
    while r.left() > 0 {
        let t = r.byte("type").map_err(|_| FunctionsError::Unreadable("can not read data type"))?;
        out.push(function(&mut r, t)?);
    }
    Ok(out)
}

/// One library's record after its type byte `t`: its code.
fn function(r: &mut Input, t: u8) -> Result<Vec<u8>, FunctionsError> {
    let fail = FunctionsError::Unreadable;
    match t {
        types::FUNCTION_2 => r.vec().map_err(|_| fail("Failed loading library payload")),
        types::FUNCTION_PRE_GA => {
            let name = r.vec().map_err(|_| fail("Failed loading library name"))?;
            let engine = r.vec().map_err(|_| fail("Failed loading engine name"))?;
            let has_desc =
                r.len().map_err(|_| fail("Failed loading library description indicator"))?;
            if has_desc != 0 {
                r.string().map_err(|_| fail("Failed loading library description"))?;
            }
            let blob = r.vec().map_err(|_| fail("Failed loading library blob"))?;
            let mut code = b"#!".to_vec();
            code.extend_from_slice(&engine);
            code.extend_from_slice(b" name=");
            code.extend_from_slice(&name);
            code.push(b'\n');
            code.extend_from_slice(&blob);
            Ok(code)
        }
        _ => Err(FunctionsError::NotAFunction),
    }
}
