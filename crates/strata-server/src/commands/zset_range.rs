//! Sorted-set ranges, Redis 7.0's one parser for all of them: ZRANGE (by rank, `BYSCORE`,
//! `BYLEX`, `REV`, `LIMIT`, `WITHSCORES`), ZRANGESTORE, and the older ZREVRANGE,
//! Z[REV]RANGEBYSCORE, Z[REV]RANGEBYLEX; ZLEXCOUNT and ZREMRANGEBYRANK/SCORE/LEX.

use super::args::{int_arg, is};
use super::errors::{CmdError, SYNTAX};
use super::zset::{parse_bound, reply_scored};
use super::CmdResult;
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::types::zset::{self, LexBound, Scored};
use crate::types::Keyspace;

#[derive(Clone, Copy, PartialEq, Eq)]
enum By {
    Rank,
    Score,
    Lex,
}

/// `-`, `+`, `[m` or `(m`, else `ERR min or max not valid string range item`.
fn parse_lex(b: &[u8]) -> Result<LexBound, CmdError> {
    match b.first() {
        Some(b'-') if b.len() == 1 => Ok(LexBound::Least),
        Some(b'+') if b.len() == 1 => Ok(LexBound::Greatest),
        Some(b'[') => Ok(LexBound::Incl(b[1..].to_vec())),
        Some(b'(') => Ok(LexBound::Excl(b[1..].to_vec())),
        _ => Err("ERR min or max not valid string range item".into()),
    }
}

/// A parsed range request: `min`/`max` are the arguments as given (the higher first for a
/// reverse score or lex range).
struct Request<'a> {
    by: By,
    rev: bool,
    withscores: bool,
    limit: Option<(i64, i64)>,
    min: &'a [u8],
    max: &'a [u8],
}

/// Parses `args` (min, max, then options) as Redis's zrangeGenericCommand does; `by` and
/// `rev` fixed by the command's name when `Some`; `store`: ZRANGESTORE (no WITHSCORES).
fn parse(
    args: &[Vec<u8>],
    by: Option<By>,
    rev: Option<bool>,
    store: bool,
) -> Result<Request<'_>, CmdError> {
    let (mut by_opt, mut rev_opt) = (by, rev);
    let (mut withscores, mut limit) = (false, None);
    let mut j = 2;
    while j < args.len() {
        let left = args.len() - j - 1;
        let a = &args[j];
        if !store && is(a, "withscores") {
            withscores = true;
        } else if is(a, "limit") && left >= 2 {
            limit = Some((int_arg(&args[j + 1])?, int_arg(&args[j + 2])?));
            j += 2;
        } else if rev_opt.is_none() && is(a, "rev") {
            rev_opt = Some(true);
        } else if by_opt.is_none() && is(a, "bylex") {
            by_opt = Some(By::Lex);
        } else if by_opt.is_none() && is(a, "byscore") {
            by_opt = Some(By::Score);
        } else {
            return Err(SYNTAX.into());
        }
        j += 1;
    }
    let (by, rev) = (by_opt.unwrap_or(By::Rank), rev_opt.unwrap_or(false));
    if limit.is_some_and(|(_, count)| count != -1) && by == By::Rank {
        return Err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
                .into(),
        );
    }
    if withscores && by == By::Lex {
        return Err("ERR syntax error, WITHSCORES not supported in combination with BYLEX".into());
    }
    let (min, max) = if rev && by != By::Rank {
        (&args[1][..], &args[0][..])
    } else {
        (&args[0][..], &args[1][..])
    };
    Ok(Request { by, rev, withscores, limit, min, max })
}

/// The members the request names in `key`.
fn items(ks: &Keyspace, key: &[u8], r: &Request<'_>) -> Result<Scored, CmdError> {
    Ok(match r.by {
        By::Rank => zset::range_by_rank(ks, key, int_arg(r.min)?, int_arg(r.max)?, r.rev)?,
        By::Score => {
            let (min, max) = (parse_bound(r.min)?, parse_bound(r.max)?);
            zset::range_by_score(ks, key, min, max, r.rev, r.limit)?
        }
        By::Lex => {
            let (min, max) = (parse_lex(r.min)?, parse_lex(r.max)?);
            zset::range_by_lex(ks, key, &min, &max, r.rev, r.limit)?
        }
    })
}

/// A reading range command: `a[1]` the key, `a[2..]` min, max and options.
fn read(
    sh: &Shared,
    db: usize,
    a: &[Vec<u8>],
    by: Option<By>,
    rev: Option<bool>,
    out: &mut Out,
) -> CmdResult {
    let r = parse(&a[2..], by, rev, false)?;
    let items = items(&sh.keyspace(db), &a[1], &r)?;
    reply_scored(out, &items, r.withscores);
    Ok(())
}

pub fn zrange(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    read(sh, c.db, a, None, None, out)
}

pub fn zrevrange(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    read(sh, c.db, a, Some(By::Rank), Some(true), out)
}

pub fn zrangebyscore(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    read(sh, c.db, a, Some(By::Score), Some(false), out)
}

pub fn zrevrangebyscore(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    read(sh, c.db, a, Some(By::Score), Some(true), out)
}

pub fn zrangebylex(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    read(sh, c.db, a, Some(By::Lex), Some(false), out)
}

pub fn zrevrangebylex(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    read(sh, c.db, a, Some(By::Lex), Some(true), out)
}

/// ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]: the range stored
/// as `dst` (deleted when empty); its size.
pub fn zrangestore(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let r = parse(&a[3..], None, None, true)?;
    let ks = sh.keyspace(c.db);
    let _g = sh.engine().locks.lock(&[&a[1], &a[2]]);
    let items = items(&ks, &a[2], &r)?;
    zset::replace(&ks, &a[1], &items, "zrangestore")?;
    out.int(items.len() as i64);
    Ok(())
}

pub fn zlexcount(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let (min, max) = (parse_lex(&a[2])?, parse_lex(&a[3])?);
    out.int(zset::range_by_lex(&sh.keyspace(c.db), &a[1], &min, &max, false, None)?.len() as i64);
    Ok(())
}

fn remove(sh: &Shared, db: usize, a: &[Vec<u8>], by: By, out: &mut Out) -> CmdResult {
    // The bounds are checked before anything is read.
    let key = &a[1];
    let n = match by {
        By::Rank => {
            let (start, stop) = (int_arg(&a[2])?, int_arg(&a[3])?);
            zset::remove_range(&sh.keyspace(db), key, "zremrangebyrank", |ks| {
                zset::range_by_rank(ks, key, start, stop, false)
            })?
        }
        By::Score => {
            let (min, max) = (parse_bound(&a[2])?, parse_bound(&a[3])?);
            zset::remove_range(&sh.keyspace(db), key, "zremrangebyscore", |ks| {
                zset::range_by_score(ks, key, min, max, false, None)
            })?
        }
        By::Lex => {
            let (min, max) = (parse_lex(&a[2])?, parse_lex(&a[3])?);
            zset::remove_range(&sh.keyspace(db), key, "zremrangebylex", |ks| {
                zset::range_by_lex(ks, key, &min, &max, false, None)
            })?
        }
    };
    out.int(n as i64);
    Ok(())
}

pub fn zremrangebyrank(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    remove(sh, c.db, a, By::Rank, out)
}

pub fn zremrangebyscore(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    remove(sh, c.db, a, By::Score, out)
}

pub fn zremrangebylex(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    remove(sh, c.db, a, By::Lex, out)
}
