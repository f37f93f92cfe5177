//! Keyspace commands (`types::keys`): DEL, EXISTS, expiry, TYPE, OBJECT, SCAN/KEYS, DBSIZE,
//! FLUSH*, RENAME, RANDOMKEY.
//!
//! In cluster mode the commands over the whole keyspace (KEYS, SCAN, DBSIZE, RANDOMKEY) see
//! the keys of the slots this node serves ([`Served`]), as on a Redis Cluster node: the
//! partitions it leads (each past its read barrier, so the answer holds every acknowledged
//! write), and on a READONLY connection also the partitions it holds a replica of (their
//! applied state, as a replica's reads). A node's replicas of partitions led elsewhere are
//! not its keys: summed over the nodes, DBSIZE counts each key once.

use super::args::{int_arg, is, scan_args, ScanArgs};
use super::errors::{arity_err, CmdError, NOT_INT, SYNTAX};
use super::{glob, CmdResult};
use crate::filing::Filing;
use crate::resp::Out;
use crate::routing::Router;
use crate::slots::key_slot;
use crate::state::{Conn, Shared};
use crate::storage::databases::serve_partition;
use crate::types::keys::{self, ExpireIf, Ttl};
use crate::types::{set, zset, Kind};

/// The slots whose keys this node's keyspace-wide commands see (module doc): every slot on
/// a standalone server.
enum Served<'a> {
    All,
    Ranges(Vec<(u16, u16)>, &'a dyn Router),
}

impl<'a> Served<'a> {
    /// What `conn` sees here now; passes the read barrier of each led partition first.
    fn now(sh: &'a Shared, conn: &Conn) -> Result<Served<'a>, CmdError> {
        let Some(router) = sh.router.as_ref() else { return Ok(Served::All) };
        let layout = router.layout();
        let mut ranges = Vec::new();
        for r in &layout.ranges {
            if r.leader == Some(layout.myself) {
                router.prepare(r.first, false, false)?;
                ranges.push((r.first, r.last));
            } else if conn.readonly && r.replicas.contains(&layout.myself) {
                ranges.push((r.first, r.last));
            }
        }
        Ok(Served::Ranges(ranges, &**router))
    }

    /// Whether `key`, stored at `at`, is seen: its slot is served here, and (on a cluster
    /// node's store) it is filed under the partition that serves the slot, not under one a
    /// move is taking it from or has left behind.
    fn has(&self, at: &[u8], key: &[u8]) -> bool {
        match self {
            Served::All => true,
            Served::Ranges(r, router) => {
                let slot = key_slot(key);
                r.iter().any(|(first, last)| (*first..=*last).contains(&slot))
                    && router.partition_of(slot).is_none_or(|p| Filing::partition_of(at) == Some(p))
            }
        }
    }
}

pub fn exists(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let n = keys::count_existing(&sh.keyspace(c.db), &a[1..])?;
    out.int(n as i64);
    Ok(())
}

fn expire_generic(
    sh: &Shared,
    db: usize,
    a: &[Vec<u8>],
    out: &mut Out,
    unit: u64,
    absolute: bool,
    name: &str,
) -> CmdResult {
    let v = int_arg(&a[2])?;
    let mut cond = ExpireIf::default();
    for f in &a[3..] {
        if is(f, "nx") {
            cond.nx = true;
        } else if is(f, "xx") {
            cond.xx = true;
        } else if is(f, "gt") {
            cond.gt = true;
        } else if is(f, "lt") {
            cond.lt = true;
        } else {
            return Err(format!("ERR Unsupported option {}", String::from_utf8_lossy(f)).into());
        }
    }
    if cond.nx && (cond.xx || cond.gt || cond.lt) {
        return Err("ERR NX and XX, GT or LT options at the same time are not compatible".into());
    }
    if cond.gt && cond.lt {
        return Err("ERR GT and LT options at the same time are not compatible".into());
    }
    let ks = sh.keyspace(db);
    let invalid = || format!("ERR invalid expire time in '{name}' command");
    let ms = v.checked_mul(unit as i64).ok_or_else(invalid)?;
    let at = if absolute { ms } else { ms.checked_add(ks.now_ms as i64).ok_or_else(invalid)? };
    let done = keys::expire(&ks, &a[1], at, cond)?;
    // Its replicas get the time it set (a DEL when that time had passed: the key went).
    if done {
        let ms = u64::try_from(at).unwrap_or(0).max(1);
        super::propagation::expire_at(db, &a[1], ms, crate::types::keyspace::past(ms, ks.now_ms));
    }
    out.int(i64::from(done));
    Ok(())
}

pub fn expire(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    expire_generic(sh, c.db, a, out, 1000, false, "expire")
}
pub fn pexpire(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    expire_generic(sh, c.db, a, out, 1, false, "pexpire")
}
pub fn expireat(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    expire_generic(sh, c.db, a, out, 1000, true, "expireat")
}
pub fn pexpireat(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    expire_generic(sh, c.db, a, out, 1, true, "pexpireat")
}

pub fn ttl(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    match keys::ttl(&sh.keyspace(c.db), &a[1])? {
        Ttl::NoKey => out.int(-2),
        Ttl::Never => out.int(-1),
        // Redis rounds the remaining seconds to the nearest.
        Ttl::Left(ms) => out.int(((ms + 500) / 1000) as i64),
    }
    Ok(())
}

pub fn pttl(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    match keys::ttl(&sh.keyspace(c.db), &a[1])? {
        Ttl::NoKey => out.int(-2),
        Ttl::Never => out.int(-1),
        Ttl::Left(ms) => out.int(ms.min(i64::MAX as u64) as i64),
    }
    Ok(())
}

/// EXPIRETIME: the Unix time in seconds (rounded to the nearest) at which the key expires;
/// -1 without an expiry, -2 without the key.
pub fn expiretime(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    expire_time(sh, c.db, a, out, false)
}

/// PEXPIRETIME: EXPIRETIME in milliseconds.
pub fn pexpiretime(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    expire_time(sh, c.db, a, out, true)
}

fn expire_time(sh: &Shared, db: usize, a: &[Vec<u8>], out: &mut Out, ms: bool) -> CmdResult {
    match sh.keyspace(db).meta(&a[1])? {
        None => out.int(-2),
        Some(m) if m.expire_ms == 0 => out.int(-1),
        Some(m) if ms => out.int(m.expire_ms.min(i64::MAX as u64) as i64),
        Some(m) => out.int(((m.expire_ms + 500) / 1000) as i64),
    }
    Ok(())
}

pub fn persist(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let done = keys::persist(&sh.keyspace(c.db), &a[1])?;
    out.int(i64::from(done));
    Ok(())
}

pub fn type_(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let kind = keys::kind(&sh.keyspace(c.db), &a[1])?;
    out.simple(kind.map_or("none", Kind::name));
    Ok(())
}

/// OBJECT ENCODING|REFCOUNT|FREQ|IDLETIME|HELP key.
pub fn object(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if a.len() == 2 && is(&a[1], "help") {
        let help = [
            "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "ENCODING <key>",
            "    Return the kind of internal representation used in order to store the value",
            "    associated with a <key>.",
            "FREQ <key>",
            "    Return the access frequency index of the <key>. Needs an LFU maxmemory policy,",
            "    which strata-server does not have.",
            "IDLETIME <key>",
            "    Return the idle time of the <key>, that is the approximated number",
            "    of seconds elapsed since the last access to the key.",
            "REFCOUNT <key>",
            "    Return the number of references of the value associated with the specified",
            "    <key>: always 1 here (values are never shared).",
            "HELP",
            "    Print this help.",
        ];
        super::args::reply_help(out, &help);
        return Ok(());
    }
    let sub = ["encoding", "refcount", "freq", "idletime"].into_iter().find(|s| is(&a[1], s));
    let Some(sub) = sub else {
        return Err(super::errors::unknown_subcommand(a));
    };
    if a.len() != 3 {
        return Err(arity_err(&format!("object|{sub}")).into());
    }
    let ks = sh.keyspace(c.db);
    let Some(m) = ks.meta(&a[2])? else {
        out.null();
        return Ok(());
    };
    match sub {
        "refcount" => out.int(1),
        "idletime" if ks.store.frequencies.counting() => {
            return Err("ERR An LFU maxmemory policy is selected, idle time not tracked. Please \
                        note that when switching between policies at runtime LRU and LFU data \
                        will take some time to adjust."
                .into())
        }
        "idletime" => out.int(ks.store.meta_cache.idle_secs(ks.store.space, &a[2]) as i64),
        "freq" if ks.store.frequencies.counting() => {
            out.int(i64::from(ks.store.frequencies.of(ks.store.space, &a[2])));
        }
        "freq" => {
            return Err("ERR An LFU maxmemory policy is not selected, access frequency not \
                        tracked. Please note that when switching between policies at runtime \
                        LRU and LFU data will take some time to adjust."
                .into())
        }
        _ => out.bulk(encoding_name(sh, &ks, &a[2], &m)?.as_bytes()),
    }
    Ok(())
}

/// The encoding OBJECT ENCODING names for `key` (its metadata `m`): Redis 7.0's names, by
/// its conversion rules applied to the value as it is now.
pub fn encoding_name(
    sh: &Shared,
    ks: &crate::types::Keyspace,
    key: &[u8],
    m: &crate::types::Meta,
) -> Result<&'static str, CmdError> {
    let limit = |name: &str, default: u64| {
        sh.params.read().get(name).and_then(|v| v.parse().ok()).unwrap_or(default)
    };
    Ok(match m.kind {
        Kind::Set if set::intset_shaped(ks, key, m, limit("set-max-intset-entries", 512))? => {
            "intset"
        }
        Kind::ZSet
            if zset::listpack_shaped(
                ks,
                key,
                m,
                limit("zset-max-listpack-entries", 128),
                limit("zset-max-listpack-value", 64),
            )? =>
        {
            "listpack"
        }
        _ => keys::encoding_of(m),
    })
}

/// The type TYPE names `name` (any case).
fn kind_by_name(name: &[u8]) -> Option<Kind> {
    [Kind::String, Kind::Hash, Kind::List, Kind::Set, Kind::ZSet, Kind::Stream]
        .into_iter()
        .find(|k| is(name, k.name()))
}

pub fn scan(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let ScanArgs { cursor, pattern, count, type_name } = scan_args(a, 1, true)?;
    // An unknown type matches nothing (as Redis).
    let kind = type_name.map(|t| kind_by_name(&t));
    let from =
        if cursor == 0 { Vec::new() } else { sh.cursors.lock().load(cursor).unwrap_or_default() };
    let served = Served::now(sh, conn)?;
    let keep = |at: &[u8], k: &[u8], k_kind: Kind| {
        let type_ok = match kind {
            None => true,
            Some(want) => want == Some(k_kind),
        };
        type_ok && pattern.as_ref().is_none_or(|p| glob::matches(p, k)) && served.has(at, k)
    };
    let page = keys::scan(&sh.keyspace(conn.db), &from, count, keep)?;
    let next = page.next.map_or(0, |k| sh.cursors.lock().save(k));
    out.array(2);
    out.bulk(next.to_string().as_bytes());
    out.array(page.items.len());
    for k in &page.items {
        out.bulk(k);
    }
    Ok(())
}

pub fn keys(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let served = Served::now(sh, conn)?;
    let keep = |at: &[u8], k: &[u8], _: Kind| served.has(at, k) && glob::matches(&a[1], k);
    let found = keys::scan(&sh.keyspace(conn.db), b"", usize::MAX, keep)?.items;
    out.array(found.len());
    for k in &found {
        out.bulk(k);
    }
    Ok(())
}

pub fn dbsize(sh: &Shared, conn: &mut Conn, _: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let served = Served::now(sh, conn)?;
    out.int(keys::count(&sh.keyspace(conn.db), |at, k| served.has(at, k))? as i64);
    Ok(())
}

pub fn flushdb(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if a.len() > 2 || (a.len() == 2 && !is(&a[1], "sync") && !is(&a[1], "async")) {
        return Err(SYNTAX.into());
    }
    match sh.router.as_ref() {
        None if is(&a[0], "flushall") => {
            sh.dbs.flush_all().map_err(crate::types::TypeError::from)?;
        }
        None => keys::flush(&sh.keyspace(c.db))?,
        // As on a Redis Cluster master: the keys of the slots this node serves (the
        // partitions it leads), each partition's deletion replicated through its group.
        Some(router) => {
            let layout = router.layout();
            for r in layout.ranges.iter().filter(|r| r.leader == Some(layout.myself)) {
                router.prepare(r.first, true, false)?;
                let _serving = serve_partition(router.partition_of(r.first));
                keys::flush_slots(&sh.keyspace(c.db), r.first, r.last)?;
            }
        }
    }
    // A change for INFO's count, as Redis counts one on top of the keys it removed (not
    // counted here: the deletion is a range, not key by key).
    sh.notifier.count_changes(1);
    super::client_tracking::flushed(sh);
    out.ok();
    Ok(())
}

fn rename_generic(
    sh: &Shared,
    db: usize,
    a: &[Vec<u8>],
    if_absent: bool,
) -> Result<bool, CmdError> {
    Ok(keys::rename(&sh.keyspace(db), &a[1], &a[2], if_absent)?)
}

/// COPY source destination [DB destination-db] [REPLACE].
pub fn copy(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let mut replace = false;
    let mut to = c.db;
    let mut i = 3;
    while i < a.len() {
        if is(&a[i], "replace") {
            replace = true;
            i += 1;
        } else if is(&a[i], "db") && i + 1 < a.len() {
            if sh.router.is_some() {
                if int_arg(&a[i + 1])? != 0 {
                    return Err(
                        "ERR Copying to another database is not allowed in cluster mode".into()
                    );
                }
            } else {
                to = super::databases::db_arg(sh, &a[i + 1], NOT_INT)?;
            }
            i += 2;
        } else {
            return Err(SYNTAX.into());
        }
    }
    if a[1] == a[2] && sh.dbs.set_of(to) == sh.dbs.set_of(c.db) {
        return Err("ERR source and destination objects are the same".into());
    }
    let copied = keys::copy(&sh.keyspace(c.db), &sh.keyspace(to), &a[1], &a[2], replace)?;
    if copied && to != c.db {
        // Clients blocked on the key in the target database (`blocking::signal`).
        c.touched.push(crate::blocked::waited_key(to, &a[2]));
    }
    out.int(i64::from(copied));
    Ok(())
}

pub fn rename(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    rename_generic(sh, c.db, a, false)?;
    out.ok();
    Ok(())
}

pub fn renamenx(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let done = rename_generic(sh, c.db, a, true)?;
    out.int(i64::from(done));
    Ok(())
}

pub fn randomkey(sh: &Shared, conn: &mut Conn, _: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let served = Served::now(sh, conn)?;
    let key = keys::random(&sh.keyspace(conn.db), |at, k| served.has(at, k))?;
    out.opt_bulk(key.as_deref());
    Ok(())
}
