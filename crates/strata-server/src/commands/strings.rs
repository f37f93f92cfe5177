//! String commands (`types::string`).

use super::args::{int_arg, is};
use super::errors::{arity_err, CmdError, OVERFLOW, SYNTAX};
use super::CmdResult;
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::types::string::{self, Condition, Expiry};

pub fn get(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let v = string::get(&sh.keyspace(), &a[1])?;
    out.opt_bulk(v.as_deref());
    Ok(())
}

/// Expiry given as a relative or absolute time in `unit_ms` units, read at `now_ms`: the
/// absolute ms, or the "invalid expire time" error.
pub fn expire_at(
    arg: &[u8],
    unit_ms: u64,
    absolute: bool,
    cmd: &str,
    now_ms: u64,
) -> Result<u64, CmdError> {
    let v = int_arg(arg)?;
    let invalid = || format!("ERR invalid expire time in '{cmd}' command");
    if v <= 0 {
        return Err(invalid().into());
    }
    let ms = (v as u64).checked_mul(unit_ms).ok_or_else(invalid)?;
    let at = if absolute { ms } else { ms.checked_add(now_ms).ok_or_else(invalid)? };
    if at > i64::MAX as u64 {
        return Err(invalid().into());
    }
    Ok(at)
}

pub fn set(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let ks = sh.keyspace();
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
            let arg = next.map_or(&[][..], |v| v);
            expire = Some(expire_at(arg, unit, abs, "set", ks.now_ms)?);
            i += 1;
        } else {
            return Err(SYNTAX.into());
        }
        i += 1;
    }
    let condition = match (nx, xx) {
        (true, _) => Condition::IfAbsent,
        (_, true) => Condition::IfPresent,
        _ => Condition::Always,
    };
    let expiry = match (expire, keepttl) {
        (Some(at), _) => Expiry::At(at),
        (None, true) => Expiry::Keep,
        (None, false) => Expiry::Never,
    };
    let done = string::set(&ks, &a[1], a[2].clone(), condition, expiry, get)?;
    if get {
        out.opt_bulk(done.old.as_deref());
    } else if done.written {
        out.ok();
    } else {
        out.null();
    }
    Ok(())
}

pub fn setnx(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let ks = sh.keyspace();
    let done = string::set(&ks, &a[1], a[2].clone(), Condition::IfAbsent, Expiry::Never, false)?;
    out.int(i64::from(done.written));
    Ok(())
}

fn set_with_ttl(sh: &Shared, a: &[Vec<u8>], out: &mut Out, unit: u64, cmd: &str) -> CmdResult {
    let ks = sh.keyspace();
    let at = expire_at(&a[2], unit, false, cmd, ks.now_ms)?;
    string::set_expiring(&ks, &a[1], a[3].clone(), at)?;
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
    let ks = sh.keyspace();
    let done = string::set(&ks, &a[1], a[2].clone(), Condition::Always, Expiry::Never, true)?;
    out.opt_bulk(done.old.as_deref());
    Ok(())
}

pub fn getdel(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let old = string::get_del(&sh.keyspace(), &a[1])?;
    out.opt_bulk(old.as_deref());
    Ok(())
}

pub fn mget(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let ks = sh.keyspace();
    let mut values = Vec::with_capacity(a.len() - 1);
    for k in &a[1..] {
        values.push(string::get_if_string(&ks, k)?);
    }
    out.array(values.len());
    for v in &values {
        out.opt_bulk(v.as_deref());
    }
    Ok(())
}

/// MSET and MSETNX: whether they wrote.
fn set_many(sh: &Shared, a: &[Vec<u8>], if_none_exist: bool, name: &str) -> Result<bool, CmdError> {
    if a.len() % 2 != 1 {
        return Err(arity_err(name).into());
    }
    let pairs: Vec<(&[u8], &[u8])> = a[1..].chunks(2).map(|p| (&p[0][..], &p[1][..])).collect();
    Ok(string::set_many(&sh.keyspace(), &pairs, if_none_exist)?)
}

pub fn mset(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    set_many(sh, a, false, "mset")?;
    out.ok();
    Ok(())
}

pub fn msetnx(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let done = set_many(sh, a, true, "msetnx")?;
    out.int(i64::from(done));
    Ok(())
}

fn incr_by(sh: &Shared, key: &[u8], by: i64, out: &mut Out) -> CmdResult {
    let new = string::incr_by(&sh.keyspace(), key, by)?;
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
    let len = string::append(&sh.keyspace(), &a[1], &a[2])?;
    out.int(len as i64);
    Ok(())
}

pub fn strlen(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let len = string::len(&sh.keyspace(), &a[1])?;
    out.int(len as i64);
    Ok(())
}
