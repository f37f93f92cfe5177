//! Set commands: one sub-key per member, empty value.

use super::CmdResult;
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::storage::pop_hints::Family;
use crate::storage::{subkey, Kind};
use std::collections::HashSet;
use strata::WriteBatch;

pub fn sadd(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let st = &sh.store;
    let _g = st.locks.lock(&[&a[1]]);
    let mut m = st.typed_or_new(&a[1], Kind::Set)?;
    let mut b = WriteBatch::new();
    let mut added = HashSet::new();
    let prefix = subkey::prefix(&a[1], m.version);
    for mem in &a[2..] {
        if !added.contains(mem) && st.get_sub(&a[1], m.version, mem)?.is_none() {
            added.insert(mem);
            b.put_cf(&*st.sub_cf, subkey::encode(&a[1], m.version, mem), b"");
            st.pop_hints.inserted(Family::SetMembers, &prefix, mem);
        }
    }
    m.size += added.len() as u64;
    st.put_meta(&mut b, &a[1], &m);
    st.write(b)?;
    out.int(added.len() as i64);
    Ok(())
}

pub fn srem(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let st = &sh.store;
    let _g = st.locks.lock(&[&a[1]]);
    let Some(mut m) = st.typed(&a[1], Kind::Set)? else {
        out.int(0);
        return Ok(());
    };
    let mut b = WriteBatch::new();
    let mut gone = HashSet::new();
    for mem in &a[2..] {
        if !gone.contains(mem) && st.get_sub(&a[1], m.version, mem)?.is_some() {
            gone.insert(mem);
            b.delete_cf(&*st.sub_cf, subkey::encode(&a[1], m.version, mem));
        }
    }
    m.size -= gone.len() as u64;
    st.put_or_delete_meta(&mut b, &a[1], &m);
    st.write(b)?;
    out.int(gone.len() as i64);
    Ok(())
}

fn members(sh: &Shared, key: &[u8], limit: usize) -> Result<Vec<Vec<u8>>, String> {
    let st = &sh.store;
    let mut v = Vec::new();
    if let Some(m) = st.typed(key, Kind::Set)? {
        st.scan(&st.sub_cf, key, m.version, b"", false, |f, _| {
            v.push(f.to_vec());
            v.len() < limit
        })?;
    }
    Ok(v)
}

pub fn smembers(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let v = members(sh, &a[1], usize::MAX)?;
    out.set(v.len());
    for m in &v {
        out.bulk(m);
    }
    Ok(())
}

pub fn sismember(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let st = &sh.store;
    let found = match st.typed(&a[1], Kind::Set)? {
        Some(m) => st.get_sub(&a[1], m.version, &a[2])?.is_some(),
        None => false,
    };
    out.int(i64::from(found));
    Ok(())
}

pub fn scard(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let m = sh.store.typed(&a[1], Kind::Set)?;
    out.int(m.map_or(0, |m| m.size as i64));
    Ok(())
}

/// SPOP takes the first members in byte order (as Kvrocks): cheap, not random. It starts
/// where the previous pop of this key generation stopped (`pop_hints`), not over the
/// tombstones of the members popped before.
pub fn spop(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let count = super::pop_count(a)?.map(|c| c as usize);
    let st = &sh.store;
    let _g = st.locks.lock(&[&a[1]]);
    let Some(mut m) = st.typed(&a[1], Kind::Set)? else {
        if count.is_some() {
            out.set(0);
        } else {
            out.null();
        }
        return Ok(());
    };
    let n = count.unwrap_or(1);
    let mut v = Vec::new();
    let prefix = subkey::prefix(&a[1], m.version);
    if n > 0 {
        let from = st.pop_hints.low(Family::SetMembers, &prefix);
        st.scan(&st.sub_cf, &a[1], m.version, &from, false, |f, _| {
            v.push(f.to_vec());
            v.len() < n
        })?;
    }
    let mut b = WriteBatch::new();
    for mem in &v {
        b.delete_cf(&*st.sub_cf, subkey::encode(&a[1], m.version, mem));
    }
    m.size -= v.len() as u64;
    st.put_or_delete_meta(&mut b, &a[1], &m);
    st.write(b)?;
    if let (Some(last), true) = (v.last(), m.size > 0) {
        st.pop_hints.popped_low(Family::SetMembers, &prefix, last);
    }
    match count {
        None => out.opt_bulk(v.first().map(|x| x.as_slice())),
        Some(_) => {
            out.set(v.len());
            for mem in &v {
                out.bulk(mem);
            }
        }
    }
    Ok(())
}
