//! List commands (`types::list`).

use super::args::{int_arg, pop_count};
use super::CmdResult;
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::types::list::{self, End};

fn push(sh: &Shared, a: &[Vec<u8>], end: End, out: &mut Out) -> CmdResult {
    let len = list::push(&sh.keyspace(), &a[1], end, &a[2..])?;
    out.int(len as i64);
    Ok(())
}

pub fn lpush(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    push(sh, a, End::Left, out)
}

pub fn rpush(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    push(sh, a, End::Right, out)
}

fn pop(sh: &Shared, a: &[Vec<u8>], end: End, out: &mut Out) -> CmdResult {
    let count = pop_count(a)?;
    match (list::pop(&sh.keyspace(), &a[1], end, count.unwrap_or(1))?, count) {
        (None, Some(_)) => out.null_array(),
        (None, None) => out.null(),
        (Some(vals), None) => out.opt_bulk(vals.first().map(|v| v.as_slice())),
        (Some(vals), Some(_)) => {
            out.array(vals.len());
            for v in &vals {
                out.bulk(v);
            }
        }
    }
    Ok(())
}

pub fn lpop(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    pop(sh, a, End::Left, out)
}

pub fn rpop(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    pop(sh, a, End::Right, out)
}

pub fn lrange(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let (start, stop) = (int_arg(&a[2])?, int_arg(&a[3])?);
    let vals = list::range(&sh.keyspace(), &a[1], start, stop)?;
    out.array(vals.len());
    for v in &vals {
        out.bulk(v);
    }
    Ok(())
}

pub fn llen(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let len = list::len(&sh.keyspace(), &a[1])?;
    out.int(len as i64);
    Ok(())
}

pub fn lindex(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let i = int_arg(&a[2])?;
    let v = list::index(&sh.keyspace(), &a[1], i)?;
    out.opt_bulk(v.as_deref());
    Ok(())
}
