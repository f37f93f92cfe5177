//! Sorted sets. Each member has a sub-key (value: its score as f64 bits, u64LE) and a
//! score-index entry (`zscore` family, keyed by encoded score then member; [`super::score`]).
//! Every write puts both into one batch (`put_member`, `del_member`), so they always agree;
//! reads by member use the sub-keys, reads in score order walk the index.

use super::error::{Result, TypeError};
use super::keyspace::{Keyspace, Page};
use super::metadata::{Kind, Meta};
use super::notify::{GENERIC, ZSET};
use super::seen::Seen;
use super::{score, subkey};
use crate::storage::pop_hints::Family;
use strata::WriteBatch;

/// (score, member) pairs in score order (or its reverse).
pub type Scored = Vec<(f64, Vec<u8>)>;

fn read_score(v: &[u8]) -> Result<f64> {
    let bits: [u8; 8] = v.try_into().map_err(|_| TypeError::Corrupt("sorted set score".into()))?;
    Ok(f64::from_bits(u64::from_le_bytes(bits)))
}

/// Whether a member's score `old` stays `new` (Redis compares scores with `==`: 0 and -0
/// are the same score).
fn same_score(old: f64, new: f64) -> bool {
    old.to_bits() == new.to_bits() || (old == 0.0 && new == 0.0)
}

fn member_score(ks: &Keyspace, key: &[u8], version: u64, member: &[u8]) -> Result<Option<f64>> {
    ks.get_sub(key, version, member)?.map(|v| read_score(&v)).transpose()
}

/// Puts `member` at score `new` into `b`: its sub-key and its index entry, replacing the
/// index entry of its `old` score.
fn put_member(
    ks: &Keyspace,
    b: &mut WriteBatch,
    key: &[u8],
    version: u64,
    member: &[u8],
    old: Option<f64>,
    new: f64,
) {
    let st = ks.store;
    if let Some(o) = old {
        b.delete_cf(&*st.score_cf, score::index_key(st.filing, key, version, o, member));
    }
    b.put_cf(
        &*st.sub_cf,
        subkey::encode(st.filing, key, version, member),
        new.to_bits().to_le_bytes(),
    );
    let ik = score::index_key(st.filing, key, version, new, member);
    let (prefix, suffix) = ik.split_at(subkey::prefix_len(st.filing, key));
    st.pop_hints.inserted(Family::ScoreIndex, prefix, suffix);
    b.put_cf(&*st.score_cf, &ik, b"");
}

/// Puts the removal of `member` (at score `old`) into `b`: its sub-key and its index entry.
fn del_member(
    ks: &Keyspace,
    b: &mut WriteBatch,
    key: &[u8],
    version: u64,
    member: &[u8],
    old: f64,
) {
    let st = ks.store;
    b.delete_cf(&*st.sub_cf, subkey::encode(st.filing, key, version, member));
    b.delete_cf(&*st.score_cf, score::index_key(st.filing, key, version, old, member));
}

/// ZADD's conditions.
#[derive(Debug, Clone, Copy, Default)]
pub struct AddFlags {
    /// Only add new members (NX).
    pub nx: bool,
    /// Only update existing members (XX).
    pub xx: bool,
    /// Only update to a greater score (GT).
    pub gt: bool,
    /// Only update to a lower score (LT).
    pub lt: bool,
    /// Add the given score to the member's (INCR).
    pub incr: bool,
}

/// What [`add`] did.
pub struct AddOutcome {
    /// Members added.
    pub added: u64,
    /// Existing members whose score changed.
    pub changed: u64,
    /// The score of the last pair that was applied or already held (INCR's reply).
    pub score: Option<f64>,
}

/// ZADD: applies each (score, member) of `pairs` in order under `flags`; a later pair sees
/// the earlier pairs of the same call. Raises `zadd` (`zincr` with INCR) when a member was
/// added or its score changed.
pub fn add(
    ks: &Keyspace,
    key: &[u8],
    flags: AddFlags,
    pairs: &[(f64, &[u8])],
) -> Result<AddOutcome> {
    let st = ks.store;
    let _g = st.locks.lock(&[key]);
    let old_meta = ks.typed(key, Kind::ZSet)?;
    let created = old_meta.is_none();
    let mut m = old_meta.unwrap_or_else(|| Meta::composite(Kind::ZSet, st.new_version()));
    let mut b = WriteBatch::new();
    let (mut added, mut changed) = (0, 0);
    let mut last = None;
    let mut pending: Seen<'_, Option<f64>> = Seen::with_capacity(pairs.len());
    for &(s, mem) in pairs {
        let old = match pending.get(mem) {
            Some(o) => *o,
            None => member_score(ks, key, m.version, mem)?,
        };
        if (flags.nx && old.is_some()) || (flags.xx && old.is_none()) {
            continue;
        }
        let new = if flags.incr { old.unwrap_or(0.0) + s } else { s };
        if new.is_nan() {
            return Err(TypeError::NanScore);
        }
        if let Some(o) = old {
            if (flags.gt && new <= o) || (flags.lt && new >= o) {
                continue;
            }
            if same_score(o, new) {
                last = Some(new);
                continue;
            }
            changed += 1;
        } else {
            added += 1;
            m.size += 1;
        }
        put_member(ks, &mut b, key, m.version, mem, old, new);
        pending.insert(mem, Some(new));
        last = Some(new);
    }
    if added + changed > 0 {
        ks.put_meta(&mut b, key, &m);
        ks.write(b)?;
        ks.notify_new(created, key);
        ks.notify(ZSET, if flags.incr { "zincr" } else { "zadd" }, key);
    }
    Ok(AddOutcome { added, changed, score: last })
}

/// ZINCRBY: adds `by` to `member`'s score (absent: 0); the new score. Raises `zincr` when
/// the member was added or its score changed.
pub fn incr_by(ks: &Keyspace, key: &[u8], member: &[u8], by: f64) -> Result<f64> {
    let st = ks.store;
    let _g = st.locks.lock(&[key]);
    let old_meta = ks.typed(key, Kind::ZSet)?;
    let created = old_meta.is_none();
    let mut m = old_meta.unwrap_or_else(|| Meta::composite(Kind::ZSet, st.new_version()));
    let old = member_score(ks, key, m.version, member)?;
    let new = old.unwrap_or(0.0) + by;
    if new.is_nan() {
        return Err(TypeError::NanScore);
    }
    if old.is_none() {
        m.size += 1;
    }
    let mut b = WriteBatch::new();
    put_member(ks, &mut b, key, m.version, member, old, new);
    ks.put_meta(&mut b, key, &m);
    ks.write(b)?;
    ks.notify_new(created, key);
    if old.is_none_or(|o| !same_score(o, new)) {
        ks.notify(ZSET, "zincr", key);
    }
    Ok(new)
}

/// ZREM: removes `members` (repeats count once); the number removed. An emptied sorted set
/// is deleted.
pub fn remove(ks: &Keyspace, key: &[u8], members: &[Vec<u8>]) -> Result<u64> {
    remove_members(ks, key, members, "zrem")
}

/// Removes `members` as [`remove`] does, raising `event` (then `del` when emptied) if any
/// was there.
fn remove_members(
    ks: &Keyspace,
    key: &[u8],
    members: &[Vec<u8>],
    event: &'static str,
) -> Result<u64> {
    let st = ks.store;
    let _g = st.locks.lock(&[key]);
    let Some(mut m) = ks.typed(key, Kind::ZSet)? else {
        return Ok(0);
    };
    let mut b = WriteBatch::new();
    let mut gone = Seen::with_capacity(members.len());
    for mem in members {
        if gone.contains(mem) {
            continue;
        }
        if let Some(o) = member_score(ks, key, m.version, mem)? {
            gone.note(mem);
            del_member(ks, &mut b, key, m.version, mem, o);
        }
    }
    m.size -= gone.len() as u64;
    ks.put_or_delete_meta(&mut b, key, &m);
    ks.write(b)?;
    if !gone.is_empty() {
        ks.notify_removal(ZSET, event, key, m.size == 0);
    }
    Ok(gone.len() as u64)
}

/// ZSCORE: `member`'s score.
pub fn score(ks: &Keyspace, key: &[u8], member: &[u8]) -> Result<Option<f64>> {
    match ks.typed(key, Kind::ZSet)? {
        Some(m) => member_score(ks, key, m.version, member),
        None => Ok(None),
    }
}

/// ZSCAN: one step of a walk over the members (in member order) from `from` (a member;
/// empty: the first): `count` members visited, those `keep` keeps returned with their
/// scores, and where the next step starts.
pub fn scan(
    ks: &Keyspace,
    key: &[u8],
    from: &[u8],
    count: usize,
    keep: impl FnMut(&[u8]) -> bool,
) -> Result<Page<(Vec<u8>, f64)>> {
    let Some(m) = ks.typed(key, Kind::ZSet)? else {
        return Ok(Page { items: Vec::new(), next: None });
    };
    let page = ks.scan_page(key, m.version, from, count, keep)?;
    let items = page
        .items
        .into_iter()
        .map(|(f, v)| Ok((f, read_score(&v)?)))
        .collect::<Result<Vec<_>>>()?;
    Ok(Page { items, next: page.next })
}

/// ZCARD: the number of members.
pub fn card(ks: &Keyspace, key: &[u8]) -> Result<u64> {
    Ok(ks.typed(key, Kind::ZSet)?.map_or(0, |m| m.size))
}

/// A bound of a score range.
#[derive(Debug, Clone, Copy)]
pub struct ScoreBound {
    /// The score.
    pub value: f64,
    /// Whether the score itself is outside (`(`).
    pub exclusive: bool,
}

impl ScoreBound {
    /// Whether `s` is at or above this bound as a minimum.
    fn admits_above(self, s: f64) -> bool {
        if self.exclusive {
            s > self.value
        } else {
            s >= self.value
        }
    }

    /// Whether `s` is at or below this bound as a maximum.
    fn admits_below(self, s: f64) -> bool {
        if self.exclusive {
            s < self.value
        } else {
            s <= self.value
        }
    }
}

/// Visits (score, member) of the sorted set in score order (or reverse), until `f` says stop.
pub(super) fn walk(
    ks: &Keyspace,
    key: &[u8],
    version: u64,
    from_score: Option<f64>,
    reverse: bool,
    f: impl FnMut(f64, &[u8]) -> bool,
) -> Result<()> {
    let from = from_score.map(|s| score::encode_score(s).to_vec()).unwrap_or_default();
    walk_from(ks, key, version, &from, reverse, f)
}

/// Like [`walk`], from an index-key suffix (`Keyspace::scan`'s `from`).
fn walk_from(
    ks: &Keyspace,
    key: &[u8],
    version: u64,
    from: &[u8],
    reverse: bool,
    mut f: impl FnMut(f64, &[u8]) -> bool,
) -> Result<()> {
    let mut corrupt = false;
    ks.scan(&ks.store.score_cf, key, version, from, reverse, |rest, _| {
        match score::split_index_suffix(rest) {
            Some((s, mem)) => f(s, mem),
            None => {
                corrupt = true;
                false
            }
        }
    })?;
    if corrupt {
        return Err(TypeError::Corrupt("sorted set index".into()));
    }
    Ok(())
}

/// A LIMIT's offset and count applied to a walk: [`Limit::take`] says whether to go on.
struct Limit {
    skip: i64,
    count: i64,
}

impl Limit {
    /// `None` when the LIMIT selects nothing (a negative offset or a count of 0).
    fn new(limit: Option<(i64, i64)>) -> Option<Limit> {
        let (skip, count) = limit.unwrap_or((0, -1));
        (skip >= 0 && count != 0).then_some(Limit { skip, count })
    }

    /// Keeps `(s, mem)` in `items` past the offset; whether the walk should go on.
    fn take(&mut self, items: &mut Scored, s: f64, mem: &[u8]) -> bool {
        if self.skip > 0 {
            self.skip -= 1;
            return true;
        }
        items.push((s, mem.to_vec()));
        self.count < 0 || (items.len() as i64) < self.count
    }
}

/// ZRANGEBYSCORE: the members with scores from `min` to `max`, in score order (`rev`:
/// reverse), skipping `limit`'s offset and taking at most its count (negative: all).
pub fn range_by_score(
    ks: &Keyspace,
    key: &[u8],
    min: ScoreBound,
    max: ScoreBound,
    rev: bool,
    limit: Option<(i64, i64)>,
) -> Result<Scored> {
    let mut items = Vec::new();
    let Some(m) = ks.typed(key, Kind::ZSet)? else {
        return Ok(items);
    };
    let Some(mut limit) = Limit::new(limit) else { return Ok(items) };
    let start = if rev { None } else { Some(min.value) };
    walk(ks, key, m.version, start, rev, |s, mem| {
        let (past_end, before_start) = if rev {
            (!min.admits_above(s), !max.admits_below(s))
        } else {
            (!max.admits_below(s), !min.admits_above(s))
        };
        if past_end {
            return false;
        }
        before_start || limit.take(&mut items, s, mem)
    })?;
    Ok(items)
}

/// A bound of a member range (ZRANGEBYLEX): `-`, `+`, `[member` or `(member`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LexBound {
    /// `-`: below every member.
    Least,
    /// `+`: above every member.
    Greatest,
    /// `[m`: `m` included.
    Incl(Vec<u8>),
    /// `(m`: `m` excluded.
    Excl(Vec<u8>),
}

impl LexBound {
    /// Whether `m` is at or above this bound as a minimum.
    fn admits_above(&self, m: &[u8]) -> bool {
        match self {
            LexBound::Least => true,
            LexBound::Greatest => false,
            LexBound::Incl(b) => m >= b.as_slice(),
            LexBound::Excl(b) => m > b.as_slice(),
        }
    }

    /// Whether `m` is at or below this bound as a maximum.
    fn admits_below(&self, m: &[u8]) -> bool {
        match self {
            LexBound::Least => false,
            LexBound::Greatest => true,
            LexBound::Incl(b) => m <= b.as_slice(),
            LexBound::Excl(b) => m < b.as_slice(),
        }
    }
}

/// ZRANGEBYLEX: the members from `min` to `max` as Redis finds them: in score order (`rev`:
/// reverse) from the first member in the range, while members stay in it. That is member
/// order when every score is equal, the case lex ranges are for; with other scores, as in
/// Redis, the result is whatever that walk meets. `limit` as in [`range_by_score`].
pub fn range_by_lex(
    ks: &Keyspace,
    key: &[u8],
    min: &LexBound,
    max: &LexBound,
    rev: bool,
    limit: Option<(i64, i64)>,
) -> Result<Scored> {
    let mut items = Vec::new();
    let Some(m) = ks.typed(key, Kind::ZSet)? else {
        return Ok(items);
    };
    let Some(mut limit) = Limit::new(limit) else { return Ok(items) };
    let mut started = false;
    walk(ks, key, m.version, None, rev, |s, mem| {
        let inside = min.admits_above(mem) && max.admits_below(mem);
        if !started {
            if !inside {
                return true;
            }
            started = true;
        } else if !inside {
            return false;
        }
        limit.take(&mut items, s, mem)
    })?;
    Ok(items)
}

/// The members of the sorted set or set at `key` with their scores (a set's members score 1),
/// for ZUNION, ZINTER and ZDIFF: empty when absent, `WrongType` for another type.
pub fn load_scored(ks: &Keyspace, key: &[u8]) -> Result<Scored> {
    let Some(m) = ks.meta(key)? else { return Ok(Vec::new()) };
    match m.kind {
        Kind::ZSet => range_by_rank(ks, key, 0, -1, false),
        Kind::Set => Ok(super::set::members(ks, key)?.into_iter().map(|mem| (1.0, mem)).collect()),
        _ => Err(TypeError::WrongType),
    }
}

/// ZRANGESTORE, ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE: makes `key` the sorted set of `items`
/// whatever it held (a new generation), raising `event` (the command's: `zrangestore`...),
/// or deletes it when `items` is empty (raising `del` if it existed).
pub fn replace(ks: &Keyspace, key: &[u8], items: &Scored, event: &'static str) -> Result<()> {
    let st = ks.store;
    let _g = st.locks.lock(&[key]);
    let mut b = WriteBatch::new();
    if items.is_empty() {
        if ks.meta(key)?.is_none() {
            return Ok(());
        }
        ks.delete_meta(&mut b, key);
        ks.write(b)?;
        ks.notify(GENERIC, "del", key);
        return Ok(());
    }
    let created = ks.would_create(key)?;
    let mut m = super::metadata::Meta::composite(Kind::ZSet, st.new_version());
    for (s, mem) in items {
        put_member(ks, &mut b, key, m.version, mem, None, *s);
    }
    m.size = items.len() as u64;
    ks.put_meta(&mut b, key, &m);
    ks.write(b)?;
    ks.notify_new(created, key);
    ks.notify(ZSET, event, key);
    Ok(())
}

/// ZREMRANGEBYSCORE, ZREMRANGEBYLEX, ZREMRANGEBYRANK: removes the members `range` returns
/// (read under the key's lock, so nothing comes between); the number removed. Raises
/// `event` (the command's: `zremrangebyscore`...) when it removed any.
pub fn remove_range(
    ks: &Keyspace,
    key: &[u8],
    event: &'static str,
    range: impl FnOnce(&Keyspace) -> Result<Scored>,
) -> Result<u64> {
    let _g = ks.store.locks.lock(&[key]);
    let members: Vec<Vec<u8>> = range(ks)?.into_iter().map(|(_, m)| m).collect();
    if members.is_empty() {
        return Ok(0);
    }
    remove_members(ks, key, &members, event)
}

/// ZCOUNT: the number of members with scores from `min` to `max`.
pub fn count(ks: &Keyspace, key: &[u8], min: ScoreBound, max: ScoreBound) -> Result<usize> {
    Ok(range_by_score(ks, key, min, max, false, None)?.len())
}

/// ZRANGE: the members from rank `start` to `stop` (inclusive; negative: from the end), in
/// score order (`rev`: reverse).
pub fn range_by_rank(
    ks: &Keyspace,
    key: &[u8],
    start: i64,
    stop: i64,
    rev: bool,
) -> Result<Scored> {
    let mut items = Vec::new();
    let Some(m) = ks.typed(key, Kind::ZSet)? else {
        return Ok(items);
    };
    let len = m.size as i64;
    let start = if start < 0 { (len + start).max(0) } else { start };
    let stop = if stop < 0 { len + stop } else { stop.min(len - 1) };
    if start > stop || start >= len {
        return Ok(items);
    }
    let mut idx = 0;
    walk(ks, key, m.version, None, rev, |s, mem| {
        if idx >= start {
            items.push((s, mem.to_vec()));
        }
        idx += 1;
        idx <= stop
    })?;
    Ok(items)
}

/// ZRANK: `member`'s rank in score order.
pub fn rank(ks: &Keyspace, key: &[u8], member: &[u8]) -> Result<Option<i64>> {
    let Some(m) = ks.typed(key, Kind::ZSet)? else {
        return Ok(None);
    };
    if member_score(ks, key, m.version, member)?.is_none() {
        return Ok(None);
    }
    let mut rank = 0i64;
    walk(ks, key, m.version, None, false, |_, mem| {
        if mem == member {
            return false;
        }
        rank += 1;
        true
    })?;
    Ok(Some(rank))
}

/// The end of the score order a pop takes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The lowest scores (ZPOPMIN).
    Min,
    /// The highest scores (ZPOPMAX).
    Max,
}

/// ZPOPMIN/ZPOPMAX: removes and returns up to `count` members from `end`, in pop order. It
/// starts where the previous pop from that end stopped (`pop_hints`), not over the
/// tombstones of the entries popped before. An emptied sorted set is deleted.
pub fn pop(ks: &Keyspace, key: &[u8], end: End, count: usize) -> Result<Scored> {
    let st = ks.store;
    let _g = st.locks.lock(&[key]);
    let mut items = Vec::new();
    let Some(mut m) = ks.typed(key, Kind::ZSet)? else {
        return Ok(items);
    };
    let max = end == End::Max;
    let prefix = subkey::prefix(st.filing, key, m.version);
    if count > 0 {
        let from = if max {
            st.pop_hints.high(Family::ScoreIndex, &prefix).unwrap_or_default()
        } else {
            st.pop_hints.low(Family::ScoreIndex, &prefix)
        };
        walk_from(ks, key, m.version, &from, max, |s, mem| {
            items.push((s, mem.to_vec()));
            items.len() < count
        })?;
    }
    let mut b = WriteBatch::new();
    for (s, mem) in &items {
        del_member(ks, &mut b, key, m.version, mem, *s);
    }
    m.size -= items.len() as u64;
    ks.put_or_delete_meta(&mut b, key, &m);
    ks.write_applied(b)?;
    if !items.is_empty() {
        ks.notify_removal(ZSET, if max { "zpopmax" } else { "zpopmin" }, key, m.size == 0);
    }
    if let (Some((s, mem)), true) = (items.last(), m.size > 0) {
        let ik = score::index_key(st.filing, key, m.version, *s, mem);
        let last = &ik[prefix.len()..];
        if max {
            st.pop_hints.popped_high(Family::ScoreIndex, &prefix, last);
        } else {
            st.pop_hints.popped_low(Family::ScoreIndex, &prefix, last);
        }
    }
    Ok(items)
}
/// ZRANDMEMBER: `n` random (score, member) pairs of the sorted set at `key`, distinct ones
/// (at most its size, in random order) or, when `distinct` is false, drawn with repeats;
/// `None` when the key is absent. Reads every member, as SRANDMEMBER does.
pub fn random_members(
    ks: &Keyspace,
    key: &[u8],
    n: usize,
    distinct: bool,
) -> Result<Option<Scored>> {
    use rand::seq::SliceRandom;
    if ks.typed(key, Kind::ZSet)?.is_none() {
        return Ok(None);
    }
    let mut all = range_by_rank(ks, key, 0, -1, false)?;
    let mut rng = rand::thread_rng();
    if distinct {
        all.shuffle(&mut rng);
        all.truncate(n);
        return Ok(Some(all));
    }
    Ok(Some((0..n).filter_map(|_| all.choose(&mut rng).cloned()).collect()))
}

/// Whether Redis 7.0 would keep the sorted set `m` as a listpack: at most `max_entries`
/// members, none longer than `max_value` bytes (the rule `OBJECT ENCODING` reports; reads at
/// most `max_entries` members).
pub fn listpack_shaped(
    ks: &Keyspace,
    key: &[u8],
    m: &Meta,
    max_entries: u64,
    max_value: u64,
) -> Result<bool> {
    if m.size > max_entries {
        return Ok(false);
    }
    let mut fits = true;
    ks.scan(&ks.store.sub_cf, key, m.version, b"", false, |member, _| {
        fits = member.len() as u64 <= max_value;
        fits
    })?;
    Ok(fits)
}
