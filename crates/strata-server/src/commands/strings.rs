//! String commands (`types::string`).

use super::args::{int_arg, is};
use super::errors::{arity_err, CmdError, OVERFLOW, SYNTAX};
use super::{propagation, CmdResult};
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::storage::propagated;
use crate::types::string::{self, Condition, Expiry, ExpiryChange};

pub fn get(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let v = string::get(&sh.keyspace(c.db), &a[1])?;
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

/// The running SET, SETEX or PSETEX goes to the replicas as `SET key value PXAT at`.
fn set_pxat(db: usize, key: &[u8], value: &[u8], at: u64) {
    if propagation::gathering() {
        propagation::replace(db, &[b"SET", key, value, b"PXAT", at.to_string().as_bytes()]);
    }
}

/// The expiry option of SET or GETEX: which one, and its argument.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ExpireOpt {
    Ex,
    Px,
    ExAt,
    PxAt,
}

impl ExpireOpt {
    fn parse(arg: &[u8]) -> Option<ExpireOpt> {
        Some(if is(arg, "ex") {
            ExpireOpt::Ex
        } else if is(arg, "px") {
            ExpireOpt::Px
        } else if is(arg, "exat") {
            ExpireOpt::ExAt
        } else if is(arg, "pxat") {
            ExpireOpt::PxAt
        } else {
            return None;
        })
    }

    /// The absolute expiry in ms that `arg` gives, or Redis's error.
    fn at(self, arg: &[u8], cmd: &str, now_ms: u64) -> Result<u64, CmdError> {
        let unit = if matches!(self, ExpireOpt::Ex | ExpireOpt::ExAt) { 1000 } else { 1 };
        let absolute = matches!(self, ExpireOpt::ExAt | ExpireOpt::PxAt);
        expire_at(arg, unit, absolute, cmd, now_ms)
    }
}

/// The options SET and GETEX share, parsed as Redis's `parseExtendedStringArgumentsOrReply`
/// does: each option may repeat, but no two expiry options of different kinds (nor one with
/// KEEPTTL or PERSIST) combine; NX, XX, GET and KEEPTTL are SET's, PERSIST is GETEX's.
#[derive(Default)]
struct StringOpts<'a> {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    persist: bool,
    expire: Option<(ExpireOpt, &'a [u8])>,
}

fn string_opts(args: &[Vec<u8>], set: bool) -> Result<StringOpts<'_>, CmdError> {
    let mut o = StringOpts::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        let next = args.get(i + 1);
        let kind = ExpireOpt::parse(arg);
        if set && is(arg, "nx") && !o.xx {
            o.nx = true;
        } else if set && is(arg, "xx") && !o.nx {
            o.xx = true;
        } else if set && is(arg, "get") {
            o.get = true;
        } else if set && is(arg, "keepttl") && o.expire.is_none() {
            o.keepttl = true;
        } else if !set && is(arg, "persist") && o.expire.is_none() {
            o.persist = true;
        } else if let (Some(kind), Some(next)) = (kind, next) {
            if o.keepttl || o.persist || o.expire.is_some_and(|(k, _)| k != kind) {
                return Err(SYNTAX.into());
            }
            o.expire = Some((kind, next));
            i += 1;
        } else {
            return Err(SYNTAX.into());
        }
        i += 1;
    }
    Ok(o)
}

/// Whether command `name`'s line `a` writes without reading its keys, so its connection
/// need not wait for the keys' writes in flight before running it (`busy_stripe`): SET
/// without NX, XX, GET or KEEPTTL (`string::set`'s blind write; a line whose options do not
/// parse is not), SETEX, PSETEX and MSET (`string::set_expiring`, `string::set_many`). Each
/// still reads when `new` keyspace events are wanted, and then waits when it locks.
pub fn blind_write(name: &str, a: &[Vec<u8>]) -> bool {
    match name {
        "set" => {
            a.len() >= 3
                && string_opts(&a[3..], true).is_ok_and(|o| !(o.nx || o.xx || o.get || o.keepttl))
        }
        "setex" | "psetex" | "mset" => true,
        _ => false,
    }
}

pub fn set(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let ks = sh.keyspace(c.db);
    let o = string_opts(&a[3..], true)?;
    // The expiry is checked after every option is read, before the key is looked at.
    let expiry = match (o.expire, o.keepttl) {
        (Some((kind, arg)), _) => Expiry::At(kind.at(arg, "set", ks.now_ms)?),
        (None, true) => Expiry::Keep,
        (None, false) => Expiry::Never,
    };
    let condition = match (o.nx, o.xx) {
        (true, _) => Condition::IfAbsent,
        (_, true) => Condition::IfPresent,
        _ => Condition::Always,
    };
    let done = string::set(&ks, &a[1], a[2].clone(), condition, expiry, o.get)?;
    // Its replicas get the time it set, not one counted from when they read it; and a SET
    // without GET (as Redis 7.0 propagates it: the reply is not theirs).
    if let (true, Expiry::At(at)) = (done.written, expiry) {
        set_pxat(c.db, &a[1], &a[2], at);
    } else if done.written && o.get && propagation::gathering() {
        let kept: Vec<&[u8]> = a
            .iter()
            .enumerate()
            .filter(|(i, w)| *i < 3 || !is(w, "get"))
            .map(|(_, w)| &w[..])
            .collect();
        propagation::replace(c.db, &kept);
    }
    if o.get {
        out.opt_bulk(done.old.as_deref());
    } else if done.written {
        out.ok();
    } else {
        out.null();
    }
    Ok(())
}

/// GETEX key [EX s | PX ms | EXAT ts | PXAT ms-ts | PERSIST]
pub fn getex(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let ks = sh.keyspace(c.db);
    let o = string_opts(&a[2..], false)?;
    let change = match o.expire {
        // Redis checks the time after finding the key: an absent key replies nil first.
        Some((kind, arg)) => match kind.at(arg, "getex", ks.now_ms) {
            Ok(at) => ExpiryChange::At(at),
            Err(e) => {
                if string::get(&ks, &a[1])?.is_some() {
                    return Err(e);
                }
                out.null();
                return Ok(());
            }
        },
        None if o.persist => ExpiryChange::Persist,
        None => ExpiryChange::Keep,
    };
    let v = string::get_ex(&ks, &a[1], change)?;
    // Its replicas get what it changed: a PEXPIREAT of the time it set (a DEL for one that
    // had passed), a PERSIST, or nothing.
    match (v.is_some(), change) {
        (true, ExpiryChange::At(at)) => propagation::expire_at(c.db, &a[1], at, at <= ks.now_ms),
        (true, ExpiryChange::Persist) => propagation::replace(c.db, &[b"PERSIST", &a[1]]),
        _ => propagated::replace_with_nothing(),
    }
    out.opt_bulk(v.as_deref());
    Ok(())
}

/// GETRANGE key start end (and SUBSTR).
pub fn getrange(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let (start, end) = (int_arg(&a[2])?, int_arg(&a[3])?);
    let v = string::get_range(&sh.keyspace(c.db), &a[1], start, end)?;
    out.bulk(&v);
    Ok(())
}

/// SETRANGE key offset value
pub fn setrange(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let offset = int_arg(&a[2])?;
    if offset < 0 {
        return Err("ERR offset is out of range".into());
    }
    let max = sh.config.proto_max_bulk_len as u64;
    let len = string::set_range(&sh.keyspace(c.db), &a[1], offset as u64, &a[3], max)?;
    out.int(len as i64);
    Ok(())
}

/// A bit offset argument: 0 to 2^32 - 1 (Redis's 512 MB strings), else Redis's error.
fn bit_offset(b: &[u8]) -> Result<u64, CmdError> {
    crate::types::number::parse_int_strict(b)
        .filter(|n| (0..1i64 << 32).contains(n))
        .map(|n| n as u64)
        .ok_or_else(|| "ERR bit offset is not an integer or out of range".into())
}

/// GETBIT key offset
pub fn getbit(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let offset = bit_offset(&a[2])?;
    out.int(i64::from(string::get_bit(&sh.keyspace(c.db), &a[1], offset)?));
    Ok(())
}

/// SETBIT key offset value
pub fn setbit(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let offset = bit_offset(&a[2])?;
    let on = match a[3].as_slice() {
        b"0" => false,
        b"1" => true,
        _ => return Err("ERR bit is not an integer or out of range".into()),
    };
    let max = sh.config.proto_max_bulk_len as u64;
    let was = string::set_bit(&sh.keyspace(c.db), &a[1], offset, on, max)?;
    out.int(i64::from(was));
    Ok(())
}

/// INCRBYFLOAT key increment
pub fn incrbyfloat(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let v = string::incr_by_float(&sh.keyspace(c.db), &a[1], &a[2])?;
    // Its replicas get the value it made (their float arithmetic could differ).
    propagation::replace(c.db, &[b"SET", &a[1], &v, b"KEEPTTL"]);
    out.bulk(&v);
    Ok(())
}

/// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]
pub fn lcs(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    // Redis reads the keys before the options: a type error comes before a syntax error.
    let (x, y) = string::lcs_inputs(&sh.keyspace(c.db), &a[1], &a[2])?;
    let (mut len, mut idx, mut withlen, mut minlen) = (false, false, false, 0i64);
    let mut i = 3;
    while i < a.len() {
        let opt = &a[i];
        if is(opt, "idx") {
            idx = true;
        } else if is(opt, "len") {
            len = true;
        } else if is(opt, "withmatchlen") {
            withlen = true;
        } else if is(opt, "minmatchlen") && i + 1 < a.len() {
            minlen = int_arg(&a[i + 1])?.max(0);
            i += 1;
        } else {
            return Err(SYNTAX.into());
        }
        i += 1;
    }
    if len && idx {
        return Err("ERR If you want both the length and indexes, please just use IDX.".into());
    }
    if x.len() as u64 >= u64::from(u32::MAX - 1) || y.len() as u64 >= u64::from(u32::MAX - 1) {
        return Err("ERR String too long for LCS".into());
    }
    let cells = (x.len() as u64 + 1) * (y.len() as u64 + 1);
    if cells.saturating_mul(4) > sh.config.proto_max_bulk_len as u64 {
        return Err(
            "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len".into()
        );
    }
    let r = string::lcs(&x, &y);
    if idx {
        out.map(2);
        out.bulk(b"matches");
        let kept: Vec<_> =
            r.matches.iter().filter(|m| minlen == 0 || i64::from(m.run_len()) >= minlen).collect();
        out.array(kept.len());
        for m in kept {
            out.array(if withlen { 3 } else { 2 });
            out.array(2);
            out.int(i64::from(m.a.0));
            out.int(i64::from(m.a.1));
            out.array(2);
            out.int(i64::from(m.b.0));
            out.int(i64::from(m.b.1));
            if withlen {
                out.int(i64::from(m.run_len()));
            }
        }
        out.bulk(b"len");
        out.int(r.seq.len() as i64);
    } else if len {
        out.int(r.seq.len() as i64);
    } else {
        out.bulk(&r.seq);
    }
    Ok(())
}

pub fn setnx(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let ks = sh.keyspace(c.db);
    let done = string::set(&ks, &a[1], a[2].clone(), Condition::IfAbsent, Expiry::Never, false)?;
    out.int(i64::from(done.written));
    Ok(())
}

fn set_with_ttl(
    sh: &Shared,
    db: usize,
    a: &[Vec<u8>],
    out: &mut Out,
    unit: u64,
    cmd: &str,
) -> CmdResult {
    let ks = sh.keyspace(db);
    let at = expire_at(&a[2], unit, false, cmd, ks.now_ms)?;
    string::set_expiring(&ks, &a[1], a[3].clone(), at)?;
    set_pxat(db, &a[1], &a[3], at);
    out.ok();
    Ok(())
}

pub fn setex(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    set_with_ttl(sh, c.db, a, out, 1000, "setex")
}

pub fn psetex(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    set_with_ttl(sh, c.db, a, out, 1, "psetex")
}

pub fn getset(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let ks = sh.keyspace(c.db);
    let done = string::set(&ks, &a[1], a[2].clone(), Condition::Always, Expiry::Never, true)?;
    // As a SET, as Redis 7.0 propagates it.
    if done.written && propagation::gathering() {
        propagation::replace(c.db, &[b"SET", &a[1][..], &a[2][..]]);
    }
    out.opt_bulk(done.old.as_deref());
    Ok(())
}

pub fn getdel(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let old = string::get_del(&sh.keyspace(c.db), &a[1])?;
    if old.is_some() {
        propagation::replace(c.db, &[b"DEL", &a[1]]);
    }
    out.opt_bulk(old.as_deref());
    Ok(())
}

pub fn mget(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let ks = sh.keyspace(c.db);
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
fn set_many(
    sh: &Shared,
    db: usize,
    a: &[Vec<u8>],
    if_none_exist: bool,
    name: &str,
) -> Result<bool, CmdError> {
    if a.len() % 2 != 1 {
        return Err(arity_err(name).into());
    }
    let pairs: Vec<(&[u8], &[u8])> = a[1..].chunks(2).map(|p| (&p[0][..], &p[1][..])).collect();
    Ok(string::set_many(&sh.keyspace(db), &pairs, if_none_exist)?)
}

pub fn mset(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    set_many(sh, c.db, a, false, "mset")?;
    out.ok();
    Ok(())
}

pub fn msetnx(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let done = set_many(sh, c.db, a, true, "msetnx")?;
    out.int(i64::from(done));
    Ok(())
}

fn incr_by(sh: &Shared, db: usize, key: &[u8], by: i64, out: &mut Out) -> CmdResult {
    let new = string::incr_by(&sh.keyspace(db), key, by)?;
    out.int(new);
    Ok(())
}

pub fn incr(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    incr_by(sh, c.db, &a[1], 1, out)
}

pub fn decr(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    incr_by(sh, c.db, &a[1], -1, out)
}

pub fn incrby(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    incr_by(sh, c.db, &a[1], int_arg(&a[2])?, out)
}

pub fn decrby(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let by = int_arg(&a[2])?;
    let neg = by.checked_neg().ok_or(OVERFLOW)?;
    incr_by(sh, c.db, &a[1], neg, out)
}

pub fn append(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let max = sh.config.proto_max_bulk_len as u64;
    let len = string::append(&sh.keyspace(c.db), &a[1], &a[2], max)?;
    out.int(len as i64);
    Ok(())
}

pub fn strlen(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let len = string::len(&sh.keyspace(c.db), &a[1])?;
    out.int(len as i64);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::blind_write;

    fn line(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    #[test]
    fn a_set_is_blind_unless_it_reads_the_key() {
        for blind in [
            &["set", "k", "v"][..],
            &["set", "k", "v", "EX", "10"],
            &["SET", "k", "v", "pxat", "5"],
        ] {
            assert!(blind_write("set", &line(blind)), "{blind:?}");
        }
        for reads in [
            &["set", "k", "v", "NX"][..],
            &["set", "k", "v", "xx"],
            &["set", "k", "v", "GET"],
            &["set", "k", "v", "keepttl"],
            &["set", "k", "v", "EX"],
            &["set", "k"],
        ] {
            assert!(!blind_write("set", &line(reads)), "{reads:?}");
        }
    }

    #[test]
    fn setex_psetex_and_mset_are_blind_and_reading_writes_are_not() {
        assert!(blind_write("setex", &line(&["setex", "k", "10", "v"])));
        assert!(blind_write("psetex", &line(&["psetex", "k", "10", "v"])));
        assert!(blind_write("mset", &line(&["mset", "a", "1", "b", "2"])));
        for reads in ["msetnx", "getset", "setnx", "append", "setrange", "incr", "del"] {
            assert!(!blind_write(reads, &line(&[reads, "k", "v"])), "{reads}");
        }
    }
}
