//! SORT and SORT_RO, with Redis 7.0's options, order and replies:
//! `SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA]
//! [STORE destination]` (SORT_RO: no STORE).
//!
//! The elements of a list, set or sorted set are sorted by their value as a number (strtod's
//! reading: a value that is not one fails the command), or with ALPHA as bytes; equal numbers
//! are ordered by the elements' bytes. `BY pattern` sorts by the string (or, `pattern->field`,
//! hash field) named by the pattern with the element in place of its first `*`; a missing one
//! counts as 0 (or, ALPHA, sorts first). A pattern without `*` means "do not sort": a list
//! and a sorted set keep their own order (DESC reversing it), a set too unless STORE (then it
//! is sorted as ALPHA, so that the stored list does not depend on the set's layout). `GET
//! pattern` replaces each element by the pattern's value (`#`: the element itself; missing:
//! nil, or "" when stored). STORE writes the result as a list (deleting the destination when
//! the result is empty) and answers its length.
//!
//! In cluster mode, BY with a pattern and GET are refused (the keys they name may be in
//! other slots), as Redis Cluster does; the destination is among the command's keys
//! (`KeySpec`'s `SortStore`), so the router refuses one in another slot. The source and
//! destination are locked for the command; pattern keys are read unlocked (each
//! read is of one consistent key). BY with a pattern and GET read keys the line does not
//! name, so they are refused, with Redis's words, to a user who may not read every key.

use std::cmp::Ordering;

use super::args::{int_arg, is};
use super::errors::SYNTAX;
use super::CmdResult;
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::types::{hash, list, set, string, zset, Keyspace, Kind, TypeError};

pub fn sort(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    run(sh, c, a, out, false)
}

pub fn sort_ro(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    run(sh, c, a, out, true)
}

struct Options<'a> {
    desc: bool,
    alpha: bool,
    limit: (i64, i64),
    store: Option<&'a [u8]>,
    by: Option<&'a [u8]>,
    dontsort: bool,
    gets: Vec<&'a [u8]>,
}

/// SORT's options; `reads_every_key`: whether the caller's user may read every key, as BY and
/// GET patterns need (Redis's refusal otherwise), asked only when they come.
fn parse<'a>(
    sh: &Shared,
    a: &'a [Vec<u8>],
    readonly: bool,
    reads_every_key: &dyn Fn() -> bool,
) -> CmdResultOf<Options<'a>> {
    let mut o = Options {
        desc: false,
        alpha: false,
        limit: (0, -1),
        store: None,
        by: None,
        dontsort: false,
        gets: Vec::new(),
    };
    let cluster = sh.router.is_some();
    let mut j = 2;
    while j < a.len() {
        let left = a.len() - j - 1;
        let arg = &a[j];
        if is(arg, "asc") {
            o.desc = false;
        } else if is(arg, "desc") {
            o.desc = true;
        } else if is(arg, "alpha") {
            o.alpha = true;
        } else if is(arg, "limit") && left >= 2 {
            let start = int_arg(&a[j + 1])?;
            let count = int_arg(&a[j + 2])?;
            o.limit = (start, count);
            j += 2;
        } else if !readonly && is(arg, "store") && left >= 1 {
            o.store = Some(&a[j + 1]);
            j += 1;
        } else if is(arg, "by") && left >= 1 {
            o.by = Some(&a[j + 1]);
            if !a[j + 1].contains(&b'*') {
                o.dontsort = true;
            } else if cluster {
                return Err("ERR BY option of SORT denied in Cluster mode.".into());
            } else if !reads_every_key() {
                return Err(
                    "ERR BY option of SORT denied due to insufficient ACL permissions.".into()
                );
            }
            j += 1;
        } else if is(arg, "get") && left >= 1 {
            if cluster {
                return Err("ERR GET option of SORT denied in Cluster mode.".into());
            }
            if !reads_every_key() {
                return Err(
                    "ERR GET option of SORT denied due to insufficient ACL permissions.".into()
                );
            }
            o.gets.push(&a[j + 1]);
            j += 1;
        } else {
            return Err(SYNTAX.into());
        }
        j += 1;
    }
    Ok(o)
}

/// The value `pattern` names for `elem` (Redis's lookupKeyByPattern): `#` is `elem`; else the
/// first `*` is replaced by `elem`, and a `->field` after it names a hash field. A pattern
/// without `*` names nothing.
fn lookup(ks: &Keyspace, pattern: &[u8], elem: &[u8]) -> CmdResultOf<Option<Vec<u8>>> {
    if pattern == b"#" {
        return Ok(Some(elem.to_vec()));
    }
    let Some(star) = pattern.iter().position(|&c| c == b'*') else { return Ok(None) };
    let after = &pattern[star + 1..];
    let field = after
        .windows(2)
        .position(|w| w == b"->")
        .filter(|&f| f + 2 < after.len())
        .map(|f| (&after[..f], &after[f + 2..]));
    let (suffix, field) = match field {
        Some((suffix, field)) => (suffix, Some(field)),
        None => (after, None),
    };
    let mut key = Vec::with_capacity(pattern.len() + elem.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(elem);
    key.extend_from_slice(suffix);
    let Some(meta) = ks.meta(&key)? else { return Ok(None) };
    Ok(match field {
        Some(f) if meta.kind == Kind::Hash => hash::get(ks, &key, f)?,
        Some(_) => None,
        None if meta.kind == Kind::String => string::get_if_string(ks, &key)?.map(|v| v.into_vec()),
        None => None,
    })
}

type CmdResultOf<T> = Result<T, super::errors::CmdError>;

/// strtod's reading of a whole value: leading white space, a number, nothing after; an empty
/// value is 0; a value out of range (strtod's ERANGE) or NaN is not a number.
fn score_of(v: &[u8]) -> Option<f64> {
    if v.is_empty() {
        return Some(0.0);
    }
    let s =
        std::str::from_utf8(v).ok()?.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let x: f64 = s.parse().ok()?;
    let lower = s.to_ascii_lowercase();
    let literal_inf = lower.trim_start_matches(['+', '-']).starts_with("inf");
    let mantissa = lower.split('e').next().unwrap_or("");
    let underflow = x == 0.0 && mantissa.bytes().any(|c| (b'1'..=b'9').contains(&c));
    if x.is_nan() || (x.is_infinite() && !literal_inf) || underflow {
        return None;
    }
    Some(x)
}

/// One element with what it sorts by.
struct Item {
    elem: Vec<u8>,
    score: f64,
    /// ALPHA with BY: the pattern's value (`None`: missing, sorts first).
    by: Option<Vec<u8>>,
}

fn run(sh: &Shared, c: &Conn, a: &[Vec<u8>], out: &mut Out, readonly: bool) -> CmdResult {
    let every = || {
        super::find(sh, &a[0])
            .is_some_and(|cmd| super::acl::reads_every_key(c.user.as_ref(), cmd, a))
    };
    let mut o = parse(sh, a, readonly, &every)?;
    let ks = sh.keyspace(c.db);
    let key = &a[1];
    let mut locked: Vec<&[u8]> = vec![key];
    locked.extend(o.store);
    let _g = o.store.map(|_| sh.engine().locks.lock(&locked));
    let kind = match ks.meta(key)? {
        None => None,
        Some(m) if matches!(m.kind, Kind::List | Kind::Set | Kind::ZSet) => Some(m.kind),
        Some(_) => return Err(TypeError::WrongType.into()),
    };
    if o.dontsort && kind == Some(Kind::Set) && o.store.is_some() {
        o.dontsort = false;
        o.alpha = true;
        o.by = None;
    }
    let len = match kind {
        Some(Kind::List) => list::len(&ks, key)? as i64,
        Some(Kind::Set) => set::card(&ks, key)? as i64,
        Some(Kind::ZSet) => zset::card(&ks, key)? as i64,
        _ => 0,
    };
    // Redis's LIMIT arithmetic.
    let mut start = o.limit.0.max(0).min(len);
    let count = o.limit.1.max(-1).min(len);
    let mut end = if count < 0 { len - 1 } else { start + count - 1 };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    if end >= len {
        end = len - 1;
    }
    // Lists and sorted sets not sorted: their own order, only the range asked for.
    let elems: Vec<Vec<u8>> = match kind {
        Some(Kind::List | Kind::ZSet) if o.dontsort => {
            let (from, to) = if o.desc { (-end - 1, -start - 1) } else { (start, end) };
            let mut v = if end < start {
                Vec::new()
            } else if kind == Some(Kind::List) {
                list::range(&ks, key, from, to)?
            } else {
                zset::range_by_rank(&ks, key, from, to, false)?
                    .into_iter()
                    .map(|(_, m)| m)
                    .collect()
            };
            if o.desc {
                v.reverse();
            }
            (start, end) = (0, v.len() as i64 - 1);
            v
        }
        Some(Kind::List) => list::range(&ks, key, 0, -1)?,
        Some(Kind::Set) => set::members(&ks, key)?,
        Some(Kind::ZSet) => {
            zset::range_by_rank(&ks, key, 0, -1, false)?.into_iter().map(|(_, m)| m).collect()
        }
        _ => Vec::new(),
    };
    let mut items: Vec<Item> =
        elems.into_iter().map(|elem| Item { elem, score: 0.0, by: None }).collect();
    if !o.dontsort {
        let mut not_a_number = false;
        for it in &mut items {
            let value = match o.by {
                Some(p) => match lookup(&ks, p, &it.elem)? {
                    Some(v) => v,
                    None => continue,
                },
                None => it.elem.clone(),
            };
            if o.alpha {
                if o.by.is_some() {
                    it.by = Some(value);
                }
            } else {
                match score_of(&value) {
                    Some(s) => it.score = s,
                    None => not_a_number = true,
                }
            }
        }
        if not_a_number {
            return Err("ERR One or more scores can't be converted into double".into());
        }
        let (alpha, by, desc) = (o.alpha, o.by.is_some(), o.desc);
        items.sort_by(|x, y| {
            let c = if !alpha {
                x.score
                    .partial_cmp(&y.score)
                    .unwrap_or(Ordering::Equal)
                    .then_with(|| x.elem.cmp(&y.elem))
            } else if by {
                x.by.cmp(&y.by) // None (missing) first
            } else {
                x.elem.cmp(&y.elem)
            };
            if desc {
                c.reverse()
            } else {
                c
            }
        });
    }
    let chosen: &[Item] = if end >= start { &items[start as usize..=end as usize] } else { &[] };
    match o.store {
        None => {
            let per = o.gets.len().max(1);
            out.array(chosen.len() * per);
            for it in chosen {
                if o.gets.is_empty() {
                    out.bulk(&it.elem);
                }
                for p in &o.gets {
                    out.opt_bulk(lookup(&ks, p, &it.elem)?.as_deref());
                }
            }
        }
        Some(dst) => {
            let mut values = Vec::with_capacity(chosen.len() * o.gets.len().max(1));
            for it in chosen {
                if o.gets.is_empty() {
                    values.push(it.elem.clone());
                }
                for p in &o.gets {
                    values.push(lookup(&ks, p, &it.elem)?.unwrap_or_default());
                }
            }
            list::replace(&ks, dst, &values)?;
            out.int(values.len() as i64);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::score_of;

    #[test]
    fn scores_are_read_as_strtod_reads_them() {
        assert_eq!(score_of(b""), Some(0.0));
        assert_eq!(score_of(b" 12"), Some(12.0));
        assert_eq!(score_of(b"-1.5e2"), Some(-150.0));
        assert_eq!(score_of(b"inf"), Some(f64::INFINITY));
        assert_eq!(score_of(b"-Infinity"), Some(f64::NEG_INFINITY));
        for bad in [&b"12 "[..], b"abc", b"nan", b"1e400", b"1e-400", b" ", b"1x"] {
            assert_eq!(score_of(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
        assert_eq!(score_of(b"0e5"), Some(0.0));
    }
}
