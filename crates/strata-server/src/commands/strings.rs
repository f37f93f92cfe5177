//! String commands. A string's value lives inline in its metadata entry.

use super::{int_arg, is, parse_int_strict, CmdResult, NOT_INT, OVERFLOW, SYNTAX, WRONGTYPE};
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::storage::{now_ms, Kind, Meta, Store};
use strata::WriteBatch;

/// The live string at `key`: `Ok(None)` when absent, WRONGTYPE for another type.
pub fn get_string(st: &Store, key: &[u8]) -> Result<Option<Meta>, String> {
    match st.meta(key)? {
        None => Ok(None),
        Some(m) if m.kind == Kind::String => Ok(Some(m)),
        Some(_) => Err(WRONGTYPE.into()),
    }
}

fn put_string(st: &Store, key: &[u8], value: Vec<u8>, expire_ms: u64) -> Result<(), String> {
    let mut b = WriteBatch::new();
    st.put_meta(&mut b, key, &Meta::string(value, expire_ms));
    st.write(b)
}

pub fn get(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let m = get_string(&sh.store, &a[1])?;
    out.opt_bulk(m.as_ref().map(|m| m.value.as_slice()));
    Ok(())
}

/// Expiry given as a relative or absolute time in `unit_ms` units: the absolute ms, or the
/// "invalid expire time" error.
pub fn expire_at(arg: &[u8], unit_ms: u64, absolute: bool, cmd: &str) -> Result<u64, String> {
    let v = int_arg(arg)?;
    let invalid = || format!("ERR invalid expire time in '{cmd}' command");
    if v <= 0 && !absolute {
        return Err(invalid());
    }
    if v <= 0 {
        return Err(invalid());
    }
    let ms = (v as u64).checked_mul(unit_ms).ok_or_else(invalid)?;
    let at = if absolute { ms } else { ms.checked_add(now_ms()).ok_or_else(invalid)? };
    if at > i64::MAX as u64 {
        return Err(invalid());
    }
    Ok(at)
}

pub fn set(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let (mut nx, mut xx, mut get, mut keepttl) = (false, false, false, false);
    let mut expire: Option<u64> = None;
    let mut i = 3;
    while i < a.len() {
        let arg = &a[i];
        let next = a.get(i + 1);
        if is(arg, "nx") && !xx {
            nx = true;
        } else if is(arg, "xx") && !nx {
            xx = true;
        } else if is(arg, "get") {
            get = true;
        } else if is(arg, "keepttl") && expire.is_none() {
            keepttl = true;
        } else if (is(arg, "ex") || is(arg, "px") || is(arg, "exat") || is(arg, "pxat"))
            && expire.is_none()
            && !keepttl
            && next.is_some()
        {
            let unit = if is(arg, "ex") || is(arg, "exat") { 1000 } else { 1 };
            let abs = is(arg, "exat") || is(arg, "pxat");
            expire = Some(expire_at(next.map_or(&[][..], |v| v), unit, abs, "set")?);
            i += 1;
        } else {
            return Err(SYNTAX.into());
        }
        i += 1;
    }
    let st = &sh.store;
    let _g = st.locks.lock(&[&a[1]]);
    let old = st.meta(&a[1])?;
    if get {
        if let Some(m) = &old {
            if m.kind != Kind::String {
                return Err(WRONGTYPE.into());
            }
        }
    }
    let exists = old.is_some();
    if (nx && exists) || (xx && !exists) {
        if get {
            out.opt_bulk(old.as_ref().map(|m| m.value.as_slice()));
        } else {
            out.null();
        }
        return Ok(());
    }
    let exp = match (expire, keepttl, &old) {
        (Some(e), _, _) => e,
        (None, true, Some(m)) => m.expire_ms,
        _ => 0,
    };
    put_string(st, &a[1], a[2].clone(), exp)?;
    if get {
        out.opt_bulk(old.as_ref().map(|m| m.value.as_slice()));
    } else {
        out.ok();
    }
    Ok(())
}

pub fn setnx(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let st = &sh.store;
    let _g = st.locks.lock(&[&a[1]]);
    if st.meta(&a[1])?.is_some() {
        out.int(0);
    } else {
        put_string(st, &a[1], a[2].clone(), 0)?;
        out.int(1);
    }
    Ok(())
}

fn set_with_ttl(sh: &Shared, a: &[Vec<u8>], out: &mut Out, unit: u64, cmd: &str) -> CmdResult {
    let at = expire_at(&a[2], unit, false, cmd)?;
    let st = &sh.store;
    let _g = st.locks.lock(&[&a[1]]);
    put_string(st, &a[1], a[3].clone(), at)?;
    out.ok();
    Ok(())
}

pub fn setex(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    set_with_ttl(sh, a, out, 1000, "setex")
}

pub fn psetex(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    set_with_ttl(sh, a, out, 1, "psetex")
}

pub fn getset(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let st = &sh.store;
    let _g = st.locks.lock(&[&a[1]]);
    let old = get_string(st, &a[1])?;
    put_string(st, &a[1], a[2].clone(), 0)?;
    out.opt_bulk(old.as_ref().map(|m| m.value.as_slice()));
    Ok(())
}

pub fn getdel(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let st = &sh.store;
    let _g = st.locks.lock(&[&a[1]]);
    let old = get_string(st, &a[1])?;
    if old.is_some() {
        let mut b = WriteBatch::new();
        st.delete_meta(&mut b, &a[1]);
        st.write(b)?;
    }
    out.opt_bulk(old.as_ref().map(|m| m.value.as_slice()));
    Ok(())
}

pub fn mget(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    out.array(a.len() - 1);
    for k in &a[1..] {
        match sh.store.meta(k)? {
            Some(m) if m.kind == Kind::String => out.bulk(&m.value),
            _ => out.null(),
        }
    }
    Ok(())
}

fn mset_inner(sh: &Shared, a: &[Vec<u8>], nx: bool, name: &str) -> Result<bool, String> {
    if a.len() % 2 != 1 {
        return Err(super::arity_err(name));
    }
    let st = &sh.store;
    let keys: Vec<&Vec<u8>> = a[1..].iter().step_by(2).collect();
    let _g = st.locks.lock(&keys);
    if nx {
        for k in &keys {
            if st.meta(k)?.is_some() {
                return Ok(false);
            }
        }
    }
    let mut b = WriteBatch::new();
    for pair in a[1..].chunks(2) {
        st.put_meta(&mut b, &pair[0], &Meta::string(pair[1].clone(), 0));
    }
    st.write(b)?;
    Ok(true)
}

pub fn mset(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    mset_inner(sh, a, false, "mset")?;
    out.ok();
    Ok(())
}

pub fn msetnx(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let done = mset_inner(sh, a, true, "msetnx")?;
    out.int(i64::from(done));
    Ok(())
}

fn incr_by(sh: &Shared, key: &[u8], by: i64, out: &mut Out) -> CmdResult {
    let st = &sh.store;
    let _g = st.locks.lock(&[key]);
    let old = get_string(st, key)?;
    let (cur, exp) = match &old {
        Some(m) => (parse_int_strict(&m.value).ok_or(NOT_INT)?, m.expire_ms),
        None => (0, 0),
    };
    let new = cur.checked_add(by).ok_or(OVERFLOW)?;
    put_string(st, key, new.to_string().into_bytes(), exp)?;
    out.int(new);
    Ok(())
}

pub fn incr(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    incr_by(sh, &a[1], 1, out)
}

pub fn decr(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    incr_by(sh, &a[1], -1, out)
}

pub fn incrby(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    incr_by(sh, &a[1], int_arg(&a[2])?, out)
}

pub fn decrby(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let by = int_arg(&a[2])?;
    let neg = by.checked_neg().ok_or(OVERFLOW)?;
    incr_by(sh, &a[1], neg, out)
}

pub fn append(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let st = &sh.store;
    let _g = st.locks.lock(&[&a[1]]);
    let old = get_string(st, &a[1])?;
    let (mut v, exp) = old.map_or((Vec::new(), 0), |m| (m.value, m.expire_ms));
    v.extend_from_slice(&a[2]);
    let len = v.len();
    put_string(st, &a[1], v, exp)?;
    out.int(len as i64);
    Ok(())
}

pub fn strlen(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let m = get_string(&sh.store, &a[1])?;
    out.int(m.map_or(0, |m| m.value.len() as i64));
    Ok(())
}
