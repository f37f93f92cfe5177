//! Sorted-set commands. Each member has a sub-key (value: its score as f64 bits, u64LE) and a
//! score-index entry (`zscore` family, keyed by encoded score then member), written together
//! in one batch so they always agree.

use super::{float_arg, int_arg, is, parse_float, CmdResult, SYNTAX};
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::storage::pop_hints::Family;
use crate::storage::{score, subkey, Kind, Store};
use strata::WriteBatch;

fn read_score(v: &[u8]) -> Result<f64, String> {
    let bits: [u8; 8] = v.try_into().map_err(|_| "ERR corrupt sorted set score".to_string())?;
    Ok(f64::from_bits(u64::from_le_bytes(bits)))
}

fn member_score(
    st: &Store,
    key: &[u8],
    version: u64,
    member: &[u8],
) -> Result<Option<f64>, String> {
    st.get_sub(key, version, member)?.map(|v| read_score(&v)).transpose()
}

fn put_member(
    st: &Store,
    b: &mut WriteBatch,
    key: &[u8],
    version: u64,
    member: &[u8],
    old: Option<f64>,
    new: f64,
) {
    if let Some(o) = old {
        b.delete_cf(&*st.score_cf, score::index_key(key, version, o, member));
    }
    b.put_cf(&*st.sub_cf, subkey::encode(key, version, member), new.to_bits().to_le_bytes());
    let ik = score::index_key(key, version, new, member);
    let (prefix, suffix) = ik.split_at(subkey::prefix_len(key));
    st.pop_hints.inserted(Family::ScoreIndex, prefix, suffix);
    b.put_cf(&*st.score_cf, &ik, b"");
}

fn del_member(st: &Store, b: &mut WriteBatch, key: &[u8], version: u64, member: &[u8], old: f64) {
    b.delete_cf(&*st.sub_cf, subkey::encode(key, version, member));
    b.delete_cf(&*st.score_cf, score::index_key(key, version, old, member));
}

pub fn zadd(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let (mut nx, mut xx, mut gt, mut lt, mut ch, mut incr) =
        (false, false, false, false, false, false);
    let mut i = 2;
    while i < a.len() {
        let f = &a[i];
        if is(f, "nx") {
            nx = true;
        } else if is(f, "xx") {
            xx = true;
        } else if is(f, "gt") {
            gt = true;
        } else if is(f, "lt") {
            lt = true;
        } else if is(f, "ch") {
            ch = true;
        } else if is(f, "incr") {
            incr = true;
        } else {
            break;
        }
        i += 1;
    }
    let rest = &a[i..];
    if rest.is_empty() || !rest.len().is_multiple_of(2) {
        return Err(SYNTAX.into());
    }
    if nx && xx {
        return Err("ERR XX and NX options at the same time are not compatible".into());
    }
    if (nx && (gt || lt)) || (gt && lt) {
        return Err("ERR GT, LT, and/or NX options at the same time are not compatible".into());
    }
    if incr && rest.len() > 2 {
        return Err("ERR INCR option supports a single increment-element pair".into());
    }
    let mut pairs = Vec::with_capacity(rest.len() / 2);
    for p in rest.chunks(2) {
        pairs.push((float_arg(&p[0])?, &p[1]));
    }
    let st = &sh.store;
    let _g = st.locks.lock(&[&a[1]]);
    let mut m = st.typed_or_new(&a[1], Kind::ZSet)?;
    let mut b = WriteBatch::new();
    let (mut added, mut changed) = (0i64, 0i64);
    let mut incr_result = None;
    // Later pairs see earlier pairs of the same command.
    let mut pending: std::collections::HashMap<&[u8], Option<f64>> =
        std::collections::HashMap::new();
    for (s, mem) in pairs {
        let old = match pending.get(mem.as_slice()) {
            Some(o) => *o,
            None => member_score(st, &a[1], m.version, mem)?,
        };
        if (nx && old.is_some()) || (xx && old.is_none()) {
            continue;
        }
        let new = if incr { old.unwrap_or(0.0) + s } else { s };
        if new.is_nan() {
            return Err("ERR resulting score is not a number (NaN)".into());
        }
        if let Some(o) = old {
            if (gt && new <= o) || (lt && new >= o) {
                continue;
            }
            if o.to_bits() == new.to_bits() || (o == 0.0 && new == 0.0) {
                incr_result = Some(new);
                continue;
            }
            changed += 1;
        } else {
            added += 1;
            m.size += 1;
        }
        put_member(st, &mut b, &a[1], m.version, mem, old, new);
        pending.insert(mem.as_slice(), Some(new));
        incr_result = Some(new);
    }
    if added + changed > 0 {
        st.put_meta(&mut b, &a[1], &m);
        st.write(b)?;
    }
    if incr {
        match incr_result {
            Some(v) => out.double(v),
            None => out.null(),
        }
    } else {
        out.int(if ch { added + changed } else { added });
    }
    Ok(())
}

pub fn zincrby(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let by = float_arg(&a[2])?;
    let st = &sh.store;
    let _g = st.locks.lock(&[&a[1]]);
    let mut m = st.typed_or_new(&a[1], Kind::ZSet)?;
    let old = member_score(st, &a[1], m.version, &a[3])?;
    let new = old.unwrap_or(0.0) + by;
    if new.is_nan() {
        return Err("ERR resulting score is not a number (NaN)".into());
    }
    if old.is_none() {
        m.size += 1;
    }
    let mut b = WriteBatch::new();
    put_member(st, &mut b, &a[1], m.version, &a[3], old, new);
    st.put_meta(&mut b, &a[1], &m);
    st.write(b)?;
    out.double(new);
    Ok(())
}

pub fn zrem(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let st = &sh.store;
    let _g = st.locks.lock(&[&a[1]]);
    let Some(mut m) = st.typed(&a[1], Kind::ZSet)? else {
        out.int(0);
        return Ok(());
    };
    let mut b = WriteBatch::new();
    let mut gone = std::collections::HashSet::new();
    for mem in &a[2..] {
        if gone.contains(mem) {
            continue;
        }
        if let Some(o) = member_score(st, &a[1], m.version, mem)? {
            gone.insert(mem);
            del_member(st, &mut b, &a[1], m.version, mem, o);
        }
    }
    m.size -= gone.len() as u64;
    st.put_or_delete_meta(&mut b, &a[1], &m);
    st.write(b)?;
    out.int(gone.len() as i64);
    Ok(())
}

pub fn zscore(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let st = &sh.store;
    let s = match st.typed(&a[1], Kind::ZSet)? {
        Some(m) => member_score(st, &a[1], m.version, &a[2])?,
        None => None,
    };
    match s {
        Some(s) => out.double(s),
        None => out.null(),
    }
    Ok(())
}

pub fn zcard(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let m = sh.store.typed(&a[1], Kind::ZSet)?;
    out.int(m.map_or(0, |m| m.size as i64));
    Ok(())
}

/// A score bound: value and whether it is exclusive (`(`).
#[derive(Clone, Copy)]
struct Bound {
    v: f64,
    excl: bool,
}

fn parse_bound(b: &[u8]) -> Result<Bound, String> {
    let err = || "ERR min or max is not a float".to_string();
    let (excl, rest) = match b.first() {
        Some(b'(') => (true, &b[1..]),
        _ => (false, b),
    };
    let v = parse_float(rest).ok_or_else(err)?;
    Ok(Bound { v, excl })
}

fn above_min(s: f64, min: Bound) -> bool {
    if min.excl {
        s > min.v
    } else {
        s >= min.v
    }
}

fn below_max(s: f64, max: Bound) -> bool {
    if max.excl {
        s < max.v
    } else {
        s <= max.v
    }
}

/// Visits (score, member) of the sorted set in score order (or reverse), until `f` says stop.
fn walk(
    st: &Store,
    key: &[u8],
    version: u64,
    from_score: Option<f64>,
    reverse: bool,
    f: impl FnMut(f64, &[u8]) -> bool,
) -> CmdResult {
    let from = from_score.map(|s| score::encode_score(s).to_vec()).unwrap_or_default();
    walk_from(st, key, version, &from, reverse, f)
}

/// Like [`walk`], from an index-key suffix (`Store::scan`'s `from`).
fn walk_from(
    st: &Store,
    key: &[u8],
    version: u64,
    from: &[u8],
    reverse: bool,
    mut f: impl FnMut(f64, &[u8]) -> bool,
) -> CmdResult {
    let mut err = None;
    st.scan(&st.score_cf, key, version, from, reverse, |rest, _| match score::split_index_suffix(
        rest,
    ) {
        Some((s, mem)) => f(s, mem),
        None => {
            err = Some("ERR corrupt sorted set index".to_string());
            false
        }
    })?;
    err.map_or(Ok(()), Err)
}

fn reply_scored(out: &mut Out, items: &[(f64, Vec<u8>)], withscores: bool) {
    if !withscores {
        out.array(items.len());
        for (_, m) in items {
            out.bulk(m);
        }
    } else if out.resp3 {
        out.array(items.len());
        for (s, m) in items {
            out.array(2);
            out.bulk(m);
            out.double(*s);
        }
    } else {
        out.array(items.len() * 2);
        for (s, m) in items {
            out.bulk(m);
            out.bulk_double(*s);
        }
    }
}

struct RangeArgs {
    byscore: bool,
    rev: bool,
    withscores: bool,
    limit: Option<(i64, i64)>,
}

fn parse_range_opts(a: &[Vec<u8>], allow_by: bool) -> Result<RangeArgs, String> {
    let mut r = RangeArgs { byscore: false, rev: false, withscores: false, limit: None };
    let mut i = 0;
    while i < a.len() {
        if is(&a[i], "withscores") {
            r.withscores = true;
        } else if allow_by && is(&a[i], "byscore") {
            r.byscore = true;
        } else if allow_by && is(&a[i], "rev") {
            r.rev = true;
        } else if is(&a[i], "limit") && i + 2 < a.len() {
            r.limit = Some((int_arg(&a[i + 1])?, int_arg(&a[i + 2])?));
            i += 2;
        } else {
            return Err(SYNTAX.into());
        }
        i += 1;
    }
    Ok(r)
}

fn range_by_score(
    st: &Store,
    key: &[u8],
    min: Bound,
    max: Bound,
    rev: bool,
    limit: Option<(i64, i64)>,
) -> Result<Vec<(f64, Vec<u8>)>, String> {
    let mut items = Vec::new();
    let Some(m) = st.typed(key, Kind::ZSet)? else {
        return Ok(items);
    };
    let (offset, count) = limit.unwrap_or((0, -1));
    if offset < 0 || count == 0 {
        return Ok(items);
    }
    let mut skip = offset;
    let start = if rev { None } else { Some(min.v) };
    walk(st, key, m.version, start, rev, |s, mem| {
        let (past_end, before_start) = if rev {
            (!above_min(s, min), !below_max(s, max))
        } else {
            (!below_max(s, max), !above_min(s, min))
        };
        if past_end {
            return false;
        }
        if before_start {
            return true;
        }
        if skip > 0 {
            skip -= 1;
            return true;
        }
        items.push((s, mem.to_vec()));
        count < 0 || (items.len() as i64) < count
    })?;
    Ok(items)
}

fn range_by_rank(
    st: &Store,
    key: &[u8],
    start: i64,
    stop: i64,
    rev: bool,
) -> Result<Vec<(f64, Vec<u8>)>, String> {
    let mut items = Vec::new();
    let Some(m) = st.typed(key, Kind::ZSet)? else {
        return Ok(items);
    };
    let len = m.size as i64;
    let start = if start < 0 { (len + start).max(0) } else { start };
    let stop = if stop < 0 { len + stop } else { stop.min(len - 1) };
    if start > stop || start >= len {
        return Ok(items);
    }
    let mut idx = 0;
    walk(st, key, m.version, None, rev, |s, mem| {
        if idx >= start {
            items.push((s, mem.to_vec()));
        }
        idx += 1;
        idx <= stop
    })?;
    Ok(items)
}

pub fn zrange(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let r = parse_range_opts(&a[4..], true)?;
    if r.limit.is_some() && !r.byscore {
        return Err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
                .into(),
        );
    }
    let items = if r.byscore {
        let (lo, hi) = if r.rev { (&a[3], &a[2]) } else { (&a[2], &a[3]) };
        range_by_score(&sh.store, &a[1], parse_bound(lo)?, parse_bound(hi)?, r.rev, r.limit)?
    } else {
        range_by_rank(&sh.store, &a[1], int_arg(&a[2])?, int_arg(&a[3])?, r.rev)?
    };
    reply_scored(out, &items, r.withscores);
    Ok(())
}

pub fn zrevrange(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let r = parse_range_opts(&a[4..], false)?;
    if r.limit.is_some() {
        return Err(SYNTAX.into());
    }
    let items = range_by_rank(&sh.store, &a[1], int_arg(&a[2])?, int_arg(&a[3])?, true)?;
    reply_scored(out, &items, r.withscores);
    Ok(())
}

pub fn zrangebyscore(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let r = parse_range_opts(&a[4..], false)?;
    let items =
        range_by_score(&sh.store, &a[1], parse_bound(&a[2])?, parse_bound(&a[3])?, false, r.limit)?;
    reply_scored(out, &items, r.withscores);
    Ok(())
}

pub fn zrevrangebyscore(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let r = parse_range_opts(&a[4..], false)?;
    let items =
        range_by_score(&sh.store, &a[1], parse_bound(&a[3])?, parse_bound(&a[2])?, true, r.limit)?;
    reply_scored(out, &items, r.withscores);
    Ok(())
}

pub fn zcount(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let items =
        range_by_score(&sh.store, &a[1], parse_bound(&a[2])?, parse_bound(&a[3])?, false, None)?;
    out.int(items.len() as i64);
    Ok(())
}

pub fn zrank(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let st = &sh.store;
    let Some(m) = st.typed(&a[1], Kind::ZSet)? else {
        out.null();
        return Ok(());
    };
    if member_score(st, &a[1], m.version, &a[2])?.is_none() {
        out.null();
        return Ok(());
    }
    let mut rank = 0i64;
    walk(st, &a[1], m.version, None, false, |_, mem| {
        if mem == a[2].as_slice() {
            return false;
        }
        rank += 1;
        true
    })?;
    out.int(rank);
    Ok(())
}

fn pop(sh: &Shared, a: &[Vec<u8>], max: bool, out: &mut Out) -> CmdResult {
    if a.len() > 3 {
        return Err(SYNTAX.into());
    }
    let count = match a.get(2) {
        Some(c) => {
            let c = int_arg(c)?;
            if c < 0 {
                return Err("ERR value is out of range, must be positive".into());
            }
            Some(c as usize)
        }
        None => None,
    };
    let st = &sh.store;
    let _g = st.locks.lock(&[&a[1]]);
    let mut items = Vec::new();
    if let Some(mut m) = st.typed(&a[1], Kind::ZSet)? {
        let n = count.unwrap_or(1);
        // Start where the previous pop from this end stopped (`pop_hints`), not over the
        // tombstones of the entries popped before.
        let prefix = subkey::prefix(&a[1], m.version);
        if n > 0 {
            let from = if max {
                st.pop_hints.high(Family::ScoreIndex, &prefix).unwrap_or_default()
            } else {
                st.pop_hints.low(Family::ScoreIndex, &prefix)
            };
            walk_from(st, &a[1], m.version, &from, max, |s, mem| {
                items.push((s, mem.to_vec()));
                items.len() < n
            })?;
        }
        let mut b = WriteBatch::new();
        for (s, mem) in &items {
            del_member(st, &mut b, &a[1], m.version, mem, *s);
        }
        m.size -= items.len() as u64;
        st.put_or_delete_meta(&mut b, &a[1], &m);
        st.write(b)?;
        if let (Some((s, mem)), true) = (items.last(), m.size > 0) {
            let ik = score::index_key(&a[1], m.version, *s, mem);
            let last = &ik[prefix.len()..];
            if max {
                st.pop_hints.popped_high(Family::ScoreIndex, &prefix, last);
            } else {
                st.pop_hints.popped_low(Family::ScoreIndex, &prefix, last);
            }
        }
    }
    if count.is_none() || !out.resp3 {
        // Flat member, score list.
        out.array(items.len() * 2);
        for (s, mem) in &items {
            out.bulk(mem);
            out.double(*s);
        }
    } else {
        reply_scored(out, &items, true);
    }
    Ok(())
}

pub fn zpopmin(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    pop(sh, a, false, out)
}

pub fn zpopmax(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    pop(sh, a, true, out)
}
