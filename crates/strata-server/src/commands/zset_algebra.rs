//! Sorted-set algebra, with Redis 7.0's options, order and replies: ZUNION, ZINTER, ZDIFF
//! (`numkeys key ... [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]`, ZDIFF without
//! weights or aggregate), their STORE forms (`dst numkeys key ...`, the result stored as a
//! sorted set, the destination deleted when it is empty, its size answered) and ZINTERCARD
//! (`numkeys key ... [LIMIT n]`).
//!
//! Inputs are sorted sets or sets (a set's members score 1); a missing key is empty. A score
//! is multiplied by its input's weight and the scores of one member combined by the aggregate;
//! a product or sum that is NaN (`inf * 0`, `inf + -inf`) counts as 0, as in Redis. ZDIFF keeps
//! the first input's members found in no other, with their scores. The result is in score
//! order, then member order. The keys (and the destination) are locked for the command.

use std::collections::HashMap;

use super::args::{int_arg, is};
use super::errors::{CmdError, SYNTAX};
use super::zset::reply_scored;
use super::CmdResult;
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::types::number::parse_float;
use crate::types::zset::{self, Scored};
use crate::types::Keyspace;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

fn nan_as_zero(x: f64) -> f64 {
    if x.is_nan() {
        0.0
    } else {
        x
    }
}

impl Aggregate {
    fn combine(self, a: f64, b: f64) -> f64 {
        match self {
            Aggregate::Sum => nan_as_zero(a + b),
            Aggregate::Min => a.min(b),
            Aggregate::Max => a.max(b),
        }
    }
}

/// What a command line asks for, with its inputs read.
struct Request {
    /// Each input's (score, member) pairs, in key order (a missing key is empty).
    inputs: Vec<Scored>,
    weights: Vec<f64>,
    aggregate: Aggregate,
    withscores: bool,
    limit: u64,
}

/// The input keys of `a[at..]` (numkeys, then the keys), with Redis's errors for `name`.
fn input_keys<'a>(a: &'a [Vec<u8>], at: usize, name: &str) -> Result<&'a [Vec<u8>], CmdError> {
    let n = int_arg(&a[at])?;
    if n < 1 {
        return Err(format!("ERR at least 1 input key is needed for '{name}' command").into());
    }
    if n as usize > a.len() - at - 1 {
        return Err(SYNTAX.into());
    }
    Ok(&a[at + 1..at + 1 + n as usize])
}

/// Parses `a[at..]` (numkeys, keys, options) for `name` as zunionInterDiffGenericCommand,
/// reading the inputs first (a key of another type is `WRONGTYPE` before any option is
/// looked at, as in Redis); the caller holds the keys' locks. `store`: a STORE form (no
/// WITHSCORES); `card`: ZINTERCARD (LIMIT only).
fn parse(
    ks: &Keyspace,
    a: &[Vec<u8>],
    at: usize,
    name: &str,
    op: Op,
    store: bool,
    card: bool,
) -> Result<Request, CmdError> {
    let keys = input_keys(a, at, name)?;
    let inputs = keys.iter().map(|k| zset::load_scored(ks, k)).collect::<Result<Vec<_>, _>>()?;
    let mut r = Request {
        inputs,
        weights: vec![1.0; keys.len()],
        aggregate: Aggregate::Sum,
        withscores: false,
        limit: 0,
    };
    let mut j = at + 1 + keys.len();
    while j < a.len() {
        let left = a.len() - j;
        let arg = &a[j];
        if op != Op::Diff && !card && left > keys.len() && is(arg, "weights") {
            for (i, w) in a[j + 1..=j + keys.len()].iter().enumerate() {
                r.weights[i] = parse_float(w).ok_or("ERR weight value is not a float")?;
            }
            j += 1 + keys.len();
        } else if op != Op::Diff && !card && left >= 2 && is(arg, "aggregate") {
            let v = &a[j + 1];
            r.aggregate = if is(v, "sum") {
                Aggregate::Sum
            } else if is(v, "min") {
                Aggregate::Min
            } else if is(v, "max") {
                Aggregate::Max
            } else {
                return Err(SYNTAX.into());
            };
            j += 2;
        } else if !store && !card && is(arg, "withscores") {
            r.withscores = true;
            j += 1;
        } else if card && left >= 2 && is(arg, "limit") {
            r.limit = match int_arg(&a[j + 1]) {
                Ok(l) if l >= 0 => l as u64,
                _ => return Err("ERR LIMIT can't be negative".into()),
            };
            j += 2;
        } else {
            return Err(SYNTAX.into());
        }
    }
    Ok(r)
}

/// The result of `op` over the request's inputs, in score then member order.
fn compute(op: Op, r: Request) -> Scored {
    let inputs = r.inputs.into_iter().zip(&r.weights).map(|(items, w)| {
        items.into_iter().map(|(s, m)| (m, nan_as_zero(s * w))).collect::<Vec<_>>()
    });
    let mut acc: HashMap<Vec<u8>, f64> = HashMap::new();
    match op {
        Op::Union => {
            for input in inputs {
                for (m, s) in input {
                    acc.entry(m).and_modify(|t| *t = r.aggregate.combine(*t, s)).or_insert(s);
                }
            }
        }
        Op::Inter => {
            let mut rest = inputs.into_iter();
            acc = rest.next().unwrap_or_default().into_iter().collect();
            for input in rest {
                let here: HashMap<Vec<u8>, f64> = input.into_iter().collect();
                acc.retain(|m, t| match here.get(m) {
                    Some(s) => {
                        *t = r.aggregate.combine(*t, *s);
                        true
                    }
                    None => false,
                });
            }
        }
        Op::Diff => {
            let mut rest = inputs.into_iter();
            acc = rest.next().unwrap_or_default().into_iter().collect();
            for input in rest {
                for (m, _) in input {
                    acc.remove(&m);
                }
            }
        }
    }
    let mut out: Scored = acc.into_iter().map(|(m, s)| (s, m)).collect();
    // Scores compare as numbers (-0 equals 0, as Redis's skiplist compares them); no NaN is
    // left.
    out.sort_by(|x, y| {
        x.0.partial_cmp(&y.0).unwrap_or(std::cmp::Ordering::Equal).then_with(|| x.1.cmp(&y.1))
    });
    out
}

// The read forms hold their keys' locks from `dispatch` (a reader of several keys).
fn read(sh: &Shared, db: usize, a: &[Vec<u8>], op: Op, out: &mut Out) -> CmdResult {
    let name = String::from_utf8_lossy(&a[0]).to_lowercase();
    let r = parse(&sh.keyspace(db), a, 1, &name, op, false, false)?;
    let withscores = r.withscores;
    reply_scored(out, &compute(op, r), withscores);
    Ok(())
}

fn store(sh: &Shared, db: usize, a: &[Vec<u8>], op: Op, out: &mut Out) -> CmdResult {
    let name = String::from_utf8_lossy(&a[0]).to_lowercase();
    let keys = input_keys(a, 2, &name)?;
    let mut locked: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    locked.push(&a[1]);
    let _g = sh.engine().locks.lock(&locked);
    let items = compute(op, parse(&sh.keyspace(db), a, 2, &name, op, true, false)?);
    let event = match op {
        Op::Union => "zunionstore",
        Op::Inter => "zinterstore",
        Op::Diff => "zdiffstore",
    };
    zset::replace(&sh.keyspace(db), &a[1], &items, event)?;
    out.int(items.len() as i64);
    Ok(())
}

pub fn zunion(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    read(sh, c.db, a, Op::Union, out)
}

pub fn zinter(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    read(sh, c.db, a, Op::Inter, out)
}

pub fn zdiff(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    read(sh, c.db, a, Op::Diff, out)
}

pub fn zunionstore(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    store(sh, c.db, a, Op::Union, out)
}

pub fn zinterstore(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    store(sh, c.db, a, Op::Inter, out)
}

pub fn zdiffstore(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    store(sh, c.db, a, Op::Diff, out)
}

pub fn zintercard(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let r = parse(&sh.keyspace(c.db), a, 1, "zintercard", Op::Inter, false, true)?;
    let limit = r.limit;
    let n = compute(Op::Inter, r).len() as u64;
    out.int(if limit > 0 { n.min(limit) } else { n } as i64);
    Ok(())
}
