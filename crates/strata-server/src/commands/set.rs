//! Set commands (`types::set`).

use super::args::pop_count;
use super::CmdResult;
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::types::set;

pub fn sadd(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let n = set::add(&sh.keyspace(), &a[1], &a[2..])?;
    out.int(n as i64);
    Ok(())
}

pub fn srem(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let n = set::remove(&sh.keyspace(), &a[1], &a[2..])?;
    out.int(n as i64);
    Ok(())
}

pub fn smembers(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let v = set::members(&sh.keyspace(), &a[1])?;
    out.set(v.len());
    for m in &v {
        out.bulk(m);
    }
    Ok(())
}

pub fn sismember(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let found = set::is_member(&sh.keyspace(), &a[1], &a[2])?;
    out.int(i64::from(found));
    Ok(())
}

pub fn scard(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let n = set::card(&sh.keyspace(), &a[1])?;
    out.int(n as i64);
    Ok(())
}

pub fn spop(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let count = pop_count(a)?.map(|c| c as usize);
    match (set::pop(&sh.keyspace(), &a[1], count.unwrap_or(1))?, count) {
        (None, Some(_)) => out.set(0),
        (None, None) => out.null(),
        (Some(v), None) => out.opt_bulk(v.first().map(|x| x.as_slice())),
        (Some(v), Some(_)) => {
            out.set(v.len());
            for mem in &v {
                out.bulk(mem);
            }
        }
    }
    Ok(())
}
