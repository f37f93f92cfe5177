//! Consumer group commands (`types::stream::group`, `types::stream::info`): XGROUP and its
//! subcommands, XACK, XPENDING, XCLAIM, XAUTOCLAIM; with Redis's replies and errors, and
//! its order of checks (arguments, then the key and group, then the rest).

use super::args::{int_arg, is};
use super::errors::{subcommand_syntax, unknown_subcommand, CmdError, SYNTAX};
use super::stream::{
    interval, reply_entry, reply_help, reply_id, strict_id, sub_arity, INVALID_ID,
};
use super::CmdResult;
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::types::number::parse_int_strict;
use crate::types::stream::claim::{self, AutoClaim, ClaimOpts, Claimed};
use crate::types::stream::group::{self, Effects, GroupStart};
use crate::types::stream::id::{self, IdSyntax};
use crate::types::stream::info::{self, PendingQuery};
use crate::types::stream::StreamError;
use crate::types::TypeError;

fn lossy(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

/// `NOGROUP` as XPENDING, XCLAIM and XAUTOCLAIM word it.
fn no_key_or_group(key: &[u8], group: &[u8]) -> CmdError {
    format!("NOGROUP No such key '{}' or consumer group '{}'", lossy(key), lossy(group)).into()
}

/// `NOGROUP` as XGROUP and XINFO word it.
pub(super) fn no_such_group(key: &[u8], group: &[u8]) -> CmdError {
    format!("NOGROUP No such consumer group '{}' for key name '{}'", lossy(group), lossy(key))
        .into()
}

/// Puts `e`, what a group command changed in `group` of `key` (database `db`), in the
/// replication stream in the command's place, as Redis 7.0 does: the consumer a NOACK read
/// made as `XGROUP CREATECONSUMER`, each PEL entry as `XCLAIM key group consumer 0 id TIME
/// ms RETRYCOUNT n FORCE JUSTID LASTID last` (which a replica applies the same whatever its
/// PEL held, and which drops the entry there too when its stream entry is gone), a last id
/// moved without one as `XGROUP SETID key group id ENTRIESREAD n`. Nothing when nothing
/// changed. Call it once per stream, or after `propagated::replace_with_nothing` when
/// several.
pub(super) fn propagate(db: usize, key: &[u8], group: &[u8], consumer: &[u8], e: &Effects) {
    if !super::propagation::gathering() {
        return;
    }
    crate::storage::propagated::replace_with_nothing();
    if e.consumer_made {
        super::propagation::replace(db, &[b"XGROUP", b"CREATECONSUMER", key, group, consumer]);
    }
    for (id, nack, last) in &e.pel {
        let (id, last) = (id.to_string(), last.to_string());
        let (time, count) = (nack.delivery_ms.to_string(), nack.deliveries.to_string());
        super::propagation::replace(
            db,
            &[
                b"XCLAIM",
                key,
                group,
                &nack.consumer,
                b"0",
                id.as_bytes(),
                b"TIME",
                time.as_bytes(),
                b"RETRYCOUNT",
                count.as_bytes(),
                b"FORCE",
                b"JUSTID",
                b"LASTID",
                last.as_bytes(),
            ],
        );
    }
    if let Some((last, read)) = e.moved {
        let (last, read) = (last.to_string(), read.unwrap_or(-1).to_string());
        super::propagation::replace(
            db,
            &[b"XGROUP", b"SETID", key, group, last.as_bytes(), b"ENTRIESREAD", read.as_bytes()],
        );
    }
}

/// Replaces the data layer's `NoGroup` with `err`.
fn or_no_group<T>(r: Result<T, TypeError>, err: impl FnOnce() -> CmdError) -> Result<T, CmdError> {
    match r {
        Err(TypeError::Stream(StreamError::NoGroup)) => Err(err()),
        other => Ok(other?),
    }
}

const HELP: &[&str] = &[
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
];

const KEY_REQUIRED: &str = "ERR The XGROUP subcommand requires the key to exist. Note that for \
                            CREATE you may want to use the MKSTREAM option to create an empty \
                            stream automatically.";

/// XGROUP CREATE|SETID|DESTROY|CREATECONSUMER|DELCONSUMER|HELP ...
pub fn xgroup(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let sub = String::from_utf8_lossy(&a[1]).to_ascii_lowercase();
    let arity = match sub.as_str() {
        "create" | "setid" => -5,
        "destroy" => 4,
        "createconsumer" | "delconsumer" => 5,
        "help" => 2,
        _ => return Err(unknown_subcommand(a)),
    };
    sub_arity(a, &format!("xgroup|{sub}"), arity)?;
    if sub == "help" {
        reply_help(out, a, HELP);
        return Ok(());
    }
    let (mut mkstream, mut entries_read) = (false, None);
    let mut i = 5;
    while i < a.len() {
        if sub == "create" && is(&a[i], "mkstream") {
            mkstream = true;
            i += 1;
        } else if (sub == "create" || sub == "setid") && is(&a[i], "entriesread") && i + 1 < a.len()
        {
            let n = int_arg(&a[i + 1])?;
            if n < -1 {
                return Err("ERR value for ENTRIESREAD must be positive or -1".into());
            }
            entries_read = (n != -1).then_some(n);
            i += 2;
        } else {
            return Err(subcommand_syntax(a));
        }
    }
    let (key, name) = (&a[2], &a[3]);
    let ks = sh.keyspace(c.db);
    let exists = group::has_group(&ks, key, name)?;
    if !mkstream {
        match exists {
            None => return Err(KEY_REQUIRED.into()),
            Some(false) if matches!(sub.as_str(), "setid" | "createconsumer" | "delconsumer") => {
                return Err(no_such_group(key, name));
            }
            _ => {}
        }
    }
    let start = |loose: bool| -> Result<GroupStart, CmdError> {
        if a[4].as_slice() == b"$" {
            return Ok(GroupStart::Last);
        }
        let syn = if loose { IdSyntax::LOOSE } else { IdSyntax::STRICT };
        Ok(GroupStart::Id(id::parse(&a[4], syn).ok_or(INVALID_ID)?.id))
    };
    let missing = |e: TypeError| -> CmdError {
        match e {
            TypeError::NoSuchKey => KEY_REQUIRED.into(),
            TypeError::Stream(StreamError::NoGroup) => no_such_group(key, name),
            e => e.into(),
        }
    };
    match sub.as_str() {
        "create" if a.len() <= 8 => {
            group::create(&ks, key, name, start(false)?, mkstream, entries_read)
                .map_err(missing)?;
            out.ok();
        }
        "setid" if a.len() == 5 || a.len() == 7 => {
            group::set_id(&ks, key, name, start(true)?, entries_read).map_err(missing)?;
            out.ok();
        }
        "destroy" => {
            let done = group::destroy(&ks, key, name).map_err(missing)?;
            out.int(i64::from(done));
        }
        "createconsumer" => {
            let done = group::create_consumer(&ks, key, name, &a[4]).map_err(missing)?;
            out.int(i64::from(done));
        }
        "delconsumer" => {
            let n = group::delete_consumer(&ks, key, name, &a[4]).map_err(missing)?;
            out.int(n as i64);
        }
        _ => return Err(subcommand_syntax(a)),
    }
    Ok(())
}

/// XACK key group id [id ...]
pub fn xack(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let ks = sh.keyspace(c.db);
    // No key or group: nothing to acknowledge, whatever the ids.
    if group::has_group(&ks, &a[1], &a[2])? != Some(true) {
        out.int(0);
        return Ok(());
    }
    let ids = a[3..].iter().map(|x| strict_id(x)).collect::<Result<Vec<_>, _>>()?;
    out.int(group::ack(&ks, &a[1], &a[2], &ids)? as i64);
    Ok(())
}

/// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
pub fn xpending(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let argc = a.len();
    if argc != 3 && !(6..=9).contains(&argc) {
        return Err(SYNTAX.into());
    }
    let mut query = None;
    if argc >= 6 {
        let (mut at, mut min_idle) = (3, 0);
        if is(&a[3], "idle") {
            min_idle = int_arg(&a[4])?;
            if argc < 8 {
                return Err(SYNTAX.into());
            }
            at = 5;
        }
        let count = int_arg(&a[at + 2])?.max(0) as u64;
        let start = interval(&a[at], false)?;
        let end = interval(&a[at + 1], true)?;
        let consumer = a.get(at + 3).map(Vec::as_slice);
        query = Some(PendingQuery { start, end, count, min_idle, consumer });
    }
    let ks = sh.keyspace(c.db);
    let (key, name) = (&a[1], &a[2]);
    let Some(q) = query else {
        let s = or_no_group(info::pending_summary(&ks, key, name), || no_key_or_group(key, name))?;
        out.array(4);
        out.int(s.count as i64);
        match s.bounds {
            None => {
                out.null();
                out.null();
                out.null_array();
            }
            Some((first, last)) => {
                reply_id(out, first);
                reply_id(out, last);
                out.array(s.consumers.len());
                for (c, n) in &s.consumers {
                    out.array(2);
                    out.bulk(c);
                    out.bulk(n.to_string().as_bytes());
                }
            }
        }
        return Ok(());
    };
    let items =
        or_no_group(info::pending_range(&ks, key, name, &q), || no_key_or_group(key, name))?;
    out.array(items.len());
    for p in &items {
        out.array(4);
        reply_id(out, p.id);
        out.bulk(&p.consumer);
        out.int(p.idle.min(i64::MAX as u64) as i64);
        out.int(p.deliveries.min(i64::MAX as u64) as i64);
    }
    Ok(())
}

fn reply_claimed(out: &mut Out, claimed: &[Claimed]) {
    out.array(claimed.len());
    for (id, pairs) in claimed {
        match pairs {
            Some(p) => reply_entry(out, *id, Some(p)),
            None => reply_id(out, *id),
        }
    }
}

/// An integer option of XCLAIM/XAUTOCLAIM, with the command's own error text.
fn int_or(arg: &[u8], err: &'static str) -> Result<i64, CmdError> {
    parse_int_strict(arg).ok_or(err.into())
}

/// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-time-ms]
/// [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid]
pub fn xclaim(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let ks = sh.keyspace(c.db);
    let (key, name) = (&a[1], &a[2]);
    if group::has_group(&ks, key, name)? != Some(true) {
        return Err(no_key_or_group(key, name));
    }
    let min_idle = int_or(&a[4], "ERR Invalid min-idle-time argument for XCLAIM")?.max(0);
    let mut ids = Vec::new();
    let mut j = 5;
    while let Some(p) = a.get(j).and_then(|x| id::parse(x, IdSyntax::STRICT)) {
        ids.push(p.id);
        j += 1;
    }
    let mut o = ClaimOpts { min_idle: min_idle as u64, ..ClaimOpts::default() };
    let now = ks.now_ms as i64;
    while j < a.len() {
        let more = j + 1 < a.len();
        let opt = &a[j];
        if is(opt, "force") {
            o.force = true;
        } else if is(opt, "justid") {
            o.justid = true;
        } else if is(opt, "idle") && more {
            j += 1;
            let idle = int_or(&a[j], "ERR Invalid IDLE option argument for XCLAIM")?;
            o.delivery_ms = Some(now.wrapping_sub(idle));
        } else if is(opt, "time") && more {
            j += 1;
            o.delivery_ms = Some(int_or(&a[j], "ERR Invalid TIME option argument for XCLAIM")?);
        } else if is(opt, "retrycount") && more {
            j += 1;
            let n = int_or(&a[j], "ERR Invalid RETRYCOUNT option argument for XCLAIM")?;
            o.retry_count = u64::try_from(n).ok();
        } else if is(opt, "lastid") && more {
            j += 1;
            o.last_id = Some(strict_id(&a[j])?);
        } else {
            return Err(format!("ERR Unrecognized XCLAIM option '{}'", lossy(opt)).into());
        }
        j += 1;
    }
    let (claimed, effects) =
        or_no_group(claim::claim(&ks, key, name, &a[3], &ids, &o), || no_key_or_group(key, name))?;
    propagate(c.db, key, name, &a[3], &effects);
    reply_claimed(out, &claimed);
    Ok(())
}

/// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
pub fn xautoclaim(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    const COUNT_ERR: &str = "ERR COUNT must be > 0";
    // Redis's bound: COUNT times the size of an id must fit a long.
    const MAX_COUNT: i64 = i64::MAX / 16;
    let min_idle = int_or(&a[4], "ERR Invalid min-idle-time argument for XAUTOCLAIM")?.max(0);
    let start = interval(&a[5], false)?;
    let (mut count, mut justid) = (100u64, false);
    let mut j = 6;
    while j < a.len() {
        if is(&a[j], "count") && j + 1 < a.len() {
            let n = int_or(&a[j + 1], COUNT_ERR)?;
            if !(1..=MAX_COUNT).contains(&n) {
                return Err(COUNT_ERR.into());
            }
            count = n as u64;
            j += 1;
        } else if is(&a[j], "justid") {
            justid = true;
        } else {
            return Err(SYNTAX.into());
        }
        j += 1;
    }
    let ks = sh.keyspace(c.db);
    let (key, name) = (&a[1], &a[2]);
    if group::has_group(&ks, key, name)? != Some(true) {
        return Err(no_key_or_group(key, name));
    }
    let args = AutoClaim { min_idle: min_idle as u64, start, count, justid };
    let done = or_no_group(claim::auto_claim(&ks, key, name, &a[3], &args), || {
        no_key_or_group(key, name)
    })?;
    propagate(c.db, key, name, &a[3], &done.effects);
    out.array(3);
    reply_id(out, done.cursor);
    reply_claimed(out, &done.claimed);
    out.array(done.deleted.len());
    for id in &done.deleted {
        reply_id(out, *id);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nogroup_texts_name_key_and_group() {
        assert_eq!(
            no_key_or_group(b"k", b"g").reply_text(),
            "NOGROUP No such key 'k' or consumer group 'g'"
        );
        assert_eq!(
            no_such_group(b"k", b"g").reply_text(),
            "NOGROUP No such consumer group 'g' for key name 'k'"
        );
    }
}
