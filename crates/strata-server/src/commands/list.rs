//! List commands. The metadata holds `head..tail`; element `i` is the sub-key whose field is
//! `i` as a big-endian u64. Pushing on the left decrements `head`, on the right increments
//! `tail`.

use super::{int_arg, CmdResult};
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::storage::{subkey, Kind};
use strata::WriteBatch;

fn elem_key(key: &[u8], version: u64, idx: u64) -> Vec<u8> {
    subkey::encode(key, version, &idx.to_be_bytes())
}

fn push(sh: &Shared, a: &[Vec<u8>], left: bool, out: &mut Out) -> CmdResult {
    let st = &sh.store;
    let _g = st.locks.lock(&[&a[1]]);
    let mut m = st.typed_or_new(&a[1], Kind::List)?;
    let mut b = WriteBatch::new();
    for v in &a[2..] {
        let idx = if left {
            m.head -= 1;
            m.head
        } else {
            m.tail += 1;
            m.tail - 1
        };
        b.put_cf(&*st.sub_cf, elem_key(&a[1], m.version, idx), v);
        m.size += 1;
    }
    st.put_meta(&mut b, &a[1], &m);
    st.write(b)?;
    out.int(m.size as i64);
    Ok(())
}

pub fn lpush(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    push(sh, a, true, out)
}

pub fn rpush(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    push(sh, a, false, out)
}

fn pop(sh: &Shared, a: &[Vec<u8>], left: bool, out: &mut Out) -> CmdResult {
    let count = super::pop_count(a)?;
    let st = &sh.store;
    let _g = st.locks.lock(&[&a[1]]);
    let Some(mut m) = st.typed(&a[1], Kind::List)? else {
        if count.is_some() {
            out.null_array();
        } else {
            out.null();
        }
        return Ok(());
    };
    let n = count.unwrap_or(1).min(m.size);
    let mut b = WriteBatch::new();
    let mut vals = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let idx = if left { m.head } else { m.tail - 1 };
        let k = elem_key(&a[1], m.version, idx);
        let v = st
            .db
            .get_cf(&*st.sub_cf, &k)
            .map_err(crate::storage::engine_err)?
            .ok_or("ERR corrupt list: missing element")?;
        b.delete_cf(&*st.sub_cf, &k);
        vals.push(v);
        if left {
            m.head += 1;
        } else {
            m.tail -= 1;
        }
        m.size -= 1;
    }
    st.put_or_delete_meta(&mut b, &a[1], &m);
    st.write(b)?;
    match count {
        None => out.opt_bulk(vals.first().map(|v| v.as_slice())),
        Some(_) => {
            out.array(vals.len());
            for v in &vals {
                out.bulk(v);
            }
        }
    }
    Ok(())
}

pub fn lpop(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    pop(sh, a, true, out)
}

pub fn rpop(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    pop(sh, a, false, out)
}

pub fn lrange(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let (start, stop) = (int_arg(&a[2])?, int_arg(&a[3])?);
    let st = &sh.store;
    let Some(m) = st.typed(&a[1], Kind::List)? else {
        out.array(0);
        return Ok(());
    };
    let len = m.size as i64;
    let start = if start < 0 { (len + start).max(0) } else { start };
    let stop = if stop < 0 { len + stop } else { stop.min(len - 1) };
    if start > stop || start >= len {
        out.array(0);
        return Ok(());
    }
    let n = (stop - start + 1) as usize;
    let mut vals = Vec::with_capacity(n);
    let from = (m.head + start as u64).to_be_bytes();
    st.scan(&st.sub_cf, &a[1], m.version, &from, false, |_, v| {
        vals.push(v.to_vec());
        vals.len() < n
    })?;
    out.array(vals.len());
    for v in &vals {
        out.bulk(v);
    }
    Ok(())
}

pub fn llen(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let m = sh.store.typed(&a[1], Kind::List)?;
    out.int(m.map_or(0, |m| m.size as i64));
    Ok(())
}

pub fn lindex(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let i = int_arg(&a[2])?;
    let st = &sh.store;
    let v = match st.typed(&a[1], Kind::List)? {
        Some(m) => {
            let len = m.size as i64;
            let i = if i < 0 { len + i } else { i };
            if i < 0 || i >= len {
                None
            } else {
                st.db
                    .get_cf(&*st.sub_cf, elem_key(&a[1], m.version, m.head + i as u64))
                    .map_err(crate::storage::engine_err)?
            }
        }
        None => None,
    };
    out.opt_bulk(v.as_deref());
    Ok(())
}
