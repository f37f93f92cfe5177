//! Stream entry commands (`types::stream::entries`): XADD, XLEN, XRANGE, XREVRANGE, XDEL,
//! XTRIM, XSETID; and what every stream command shares: id arguments, entry replies,
//! the subcommand errors and help of XGROUP and XINFO. Consumer groups are in
//! `stream_group`, XREAD/XREADGROUP in `stream_read`, XINFO in `stream_info`.

use super::args::{int_arg, is};
use super::errors::{arity_err, CmdError, SYNTAX};
use super::CmdResult;
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::types::stream::entries::{self, Entry, NewId, Trim, TrimTo};
use crate::types::stream::id::{self, IdSyntax};
use crate::types::stream::{self, StreamId};

/// Redis's reply to an argument that is not a stream id.
pub const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

/// An exact id argument (`-` and `+` refused; `<ms>` alone is `<ms>-0`).
pub(super) fn strict_id(arg: &[u8]) -> Result<StreamId, CmdError> {
    id::parse(arg, IdSyntax::STRICT).map(|p| p.id).ok_or(INVALID_ID.into())
}

/// A bound of an interval argument (`(` for an exclusive one), made inclusive: the start
/// moves up past an exclusive id, the end down. Redis's errors when that leaves the ids.
pub(super) fn interval(arg: &[u8], is_end: bool) -> Result<StreamId, CmdError> {
    let (id, exclusive) =
        id::parse_interval(arg, if is_end { u64::MAX } else { 0 }).ok_or(INVALID_ID)?;
    if !exclusive {
        return Ok(id);
    }
    if is_end {
        id.decr().ok_or("ERR invalid end ID for the interval".into())
    } else {
        id.incr().ok_or("ERR invalid start ID for the interval".into())
    }
}

/// An id as a bulk string.
pub(super) fn reply_id(out: &mut Out, id: StreamId) {
    out.bulk(id.to_string().as_bytes());
}

/// An entry: `[id, [field, value, ...]]`; a missing one (`None` pairs) as `[id, nil]`.
pub(super) fn reply_entry(out: &mut Out, id: StreamId, pairs: Option<&[Vec<u8>]>) {
    out.array(2);
    reply_id(out, id);
    match pairs {
        Some(p) => {
            out.array(p.len());
            for x in p {
                out.bulk(x);
            }
        }
        None => out.null_array(),
    }
}

/// A list of entries.
pub(super) fn reply_entries(out: &mut Out, v: &[Entry]) {
    out.array(v.len());
    for e in v {
        reply_entry(out, e.id, Some(&e.pairs));
    }
}

/// Checks a subcommand's arity (Redis's: `n` exactly, `-n` at least) with its error.
pub(super) fn sub_arity(a: &[Vec<u8>], full_name: &str, arity: i32) -> Result<(), CmdError> {
    let n = a.len() as i32;
    let fits = if arity > 0 { n == arity } else { n >= -arity };
    if fits {
        Ok(())
    } else {
        Err(arity_err(full_name).into())
    }
}

/// A HELP reply: the header, `lines`, and HELP's own lines, as status replies.
pub(super) fn reply_help(out: &mut Out, a: &[Vec<u8>], lines: &[&str]) {
    out.array(lines.len() + 3);
    out.simple(&format!(
        "{} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        String::from_utf8_lossy(&a[0]).to_ascii_uppercase()
    ));
    for l in lines {
        out.simple(l);
    }
    out.simple("HELP");
    out.simple("    Prints this help.");
}

/// The options XADD and XTRIM share, parsed as Redis parses them.
struct AddTrimArgs {
    trim: Option<Trim>,
    /// XADD's id (`None`: not reached, an arity error).
    id: Option<NewId>,
    /// The index of XADD's id argument.
    id_at: usize,
    nomkstream: bool,
}

fn parse_add_trim(sh: &Shared, a: &[Vec<u8>], xadd: bool) -> Result<AddTrimArgs, CmdError> {
    const BOTH: &str =
        "ERR syntax error, MAXLEN and MINID options at the same time are not compatible";
    let mut to = None;
    let (mut approx, mut limit, mut limit_given) = (false, 0i64, false);
    let mut parsed = AddTrimArgs { trim: None, id: None, id_at: a.len(), nomkstream: false };
    let mut i = 2;
    while i < a.len() {
        let more = a.len() - 1 - i;
        let opt = &a[i];
        if xadd && opt.as_slice() == b"*" {
            parsed.id = Some(NewId::Auto);
            parsed.id_at = i;
            break;
        } else if (is(opt, "maxlen") || is(opt, "minid")) && more > 0 {
            if to.is_some() {
                return Err(BOTH.into());
            }
            approx = false;
            let next = a[i + 1].as_slice();
            if more >= 2 && next == b"~" {
                approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            to = Some(if is(opt, "maxlen") {
                let n = int_arg(&a[i + 1])?;
                if n < 0 {
                    return Err("ERR The MAXLEN argument must be >= 0.".into());
                }
                TrimTo::MaxLen(n as u64)
            } else {
                TrimTo::MinId(strict_id(&a[i + 1])?)
            });
            i += 1;
        } else if is(opt, "limit") && more > 0 {
            limit = int_arg(&a[i + 1])?;
            if limit < 0 {
                return Err("ERR The LIMIT argument must be >= 0.".into());
            }
            limit_given = true;
            i += 1;
        } else if xadd && is(opt, "nomkstream") {
            parsed.nomkstream = true;
        } else if xadd {
            let p = id::parse(opt, IdSyntax { seq_star: true, ..IdSyntax::STRICT })
                .ok_or(INVALID_ID)?;
            parsed.id =
                Some(if p.seq_given { NewId::Exact(p.id) } else { NewId::AutoSeq(p.id.ms) });
            parsed.id_at = i;
            break;
        } else {
            return Err(SYNTAX.into());
        }
        i += 1;
    }
    if limit != 0 && to.is_none() {
        return Err(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy".into(),
        );
    }
    if !xadd && to.is_none() {
        return Err("ERR syntax error, XTRIM must be called with a trimming strategy".into());
    }
    if limit_given && !approx {
        return Err("ERR syntax error, LIMIT cannot be used without the special ~ option".into());
    }
    let Some(to) = to else { return Ok(parsed) };
    if !limit_given {
        // Redis bounds a `~` trim's work to 100 nodes unless told otherwise.
        limit = if approx {
            let l = sh.stream_nodes.entries().saturating_mul(100);
            if l == 0 {
                10_000
            } else {
                l.min(1_000_000) as i64
            }
        } else {
            0
        };
    }
    parsed.trim = Some(Trim { to, approx, limit: limit as u64 });
    Ok(parsed)
}

/// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value ...
pub fn xadd(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let p = parse_add_trim(sh, a, true)?;
    let fields = a.len() as i64 - p.id_at as i64 - 1;
    if fields < 2 || fields % 2 == 1 {
        return Err(arity_err("xadd").into());
    }
    let Some(new) = p.id else { return Err(arity_err("xadd").into()) };
    if new == NewId::Exact(StreamId::MIN) {
        return Err("ERR The ID specified in XADD must be greater than 0-0".into());
    }
    let pairs = &a[p.id_at + 1..];
    let ks = sh.keyspace(c.db);
    match entries::add(&ks, &a[1], new, p.nomkstream, p.trim.as_ref(), pairs)? {
        Some(id) => {
            if super::propagation::gathering() {
                // Its replicas add the id it chose, and trim to the entry its trim kept
                // first (an approximate trim keeps what this server's nodes kept).
                let id = id.to_string();
                let first = p.trim.is_some().then(|| first_id(&ks, &a[1])).transpose()?;
                let mut words: Vec<&[u8]> = vec![b"XADD", &a[1]];
                if p.nomkstream {
                    words.push(b"NOMKSTREAM");
                }
                let first = first.flatten().map(|f| f.to_string());
                if let Some(f) = &first {
                    words.extend([b"MINID".as_slice(), b"=", f.as_bytes()]);
                }
                words.push(id.as_bytes());
                words.extend(pairs.iter().map(Vec::as_slice));
                super::propagation::replace(c.db, &words);
            }
            reply_id(out, id);
        }
        None => out.null(),
    }
    Ok(())
}

/// The id of `key`'s first entry, if it has one.
fn first_id(
    ks: &crate::types::keyspace::Keyspace,
    key: &[u8],
) -> Result<Option<StreamId>, CmdError> {
    let first = entries::range(ks, key, StreamId::MIN, StreamId::MAX, Some(1), false)?;
    Ok(first.and_then(|v| v.first().map(|e| e.id)))
}

/// XLEN key
pub fn xlen(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    out.int(entries::len(&sh.keyspace(c.db), &a[1])? as i64);
    Ok(())
}

fn range(sh: &Shared, db: usize, a: &[Vec<u8>], rev: bool, out: &mut Out) -> CmdResult {
    let (start_arg, end_arg) = if rev { (&a[3], &a[2]) } else { (&a[2], &a[3]) };
    let start = interval(start_arg, false)?;
    let end = interval(end_arg, true)?;
    let mut count = None;
    let mut j = 4;
    while j < a.len() {
        if is(&a[j], "count") && j + 1 < a.len() {
            count = Some(int_arg(&a[j + 1])?.max(0) as u64);
            j += 2;
        } else {
            return Err(SYNTAX.into());
        }
    }
    match entries::range(&sh.keyspace(db), &a[1], start, end, count, rev)? {
        None => out.array(0),
        Some(_) if count == Some(0) => out.null_array(),
        Some(v) => reply_entries(out, &v),
    }
    Ok(())
}

/// XRANGE key start end [COUNT count]
pub fn xrange(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    range(sh, c.db, a, false, out)
}

/// XREVRANGE key end start [COUNT count]
pub fn xrevrange(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    range(sh, c.db, a, true, out)
}

/// XDEL key id [id ...]
pub fn xdel(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let ks = sh.keyspace(c.db);
    // As Redis: the key is looked up before the ids are read.
    if stream::load(&ks, &a[1])?.is_none() {
        out.int(0);
        return Ok(());
    }
    let ids = a[2..].iter().map(|x| strict_id(x)).collect::<Result<Vec<_>, _>>()?;
    out.int(entries::delete(&ks, &a[1], &ids)? as i64);
    Ok(())
}

/// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]
pub fn xtrim(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let p = parse_add_trim(sh, a, false)?;
    let Some(t) = p.trim else { return Err(SYNTAX.into()) };
    let ks = sh.keyspace(c.db);
    let n = entries::trim(&ks, &a[1], &t)?;
    if n > 0 && super::propagation::gathering() {
        // Its replicas trim to the entry it kept first (or to nothing).
        match first_id(&ks, &a[1])?.map(|f| f.to_string()) {
            Some(f) => {
                super::propagation::replace(c.db, &[b"XTRIM", &a[1], b"MINID", b"=", f.as_bytes()]);
            }
            None => super::propagation::replace(c.db, &[b"XTRIM", &a[1], b"MAXLEN", b"=", b"0"]),
        }
    }
    out.int(n as i64);
    Ok(())
}

/// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]
pub fn xsetid(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let id = strict_id(&a[2])?;
    let (mut added, mut max_deleted) = (None, StreamId::MIN);
    let mut i = 3;
    while i < a.len() {
        let more = i + 1 < a.len();
        if is(&a[i], "entriesadded") && more {
            let n = int_arg(&a[i + 1])?;
            if n < 0 {
                return Err("ERR entries_added must be positive".into());
            }
            added = Some(n as u64);
        } else if is(&a[i], "maxdeletedid") && more {
            max_deleted = strict_id(&a[i + 1])?;
            if id < max_deleted {
                return Err("ERR The ID specified in XSETID is smaller than the provided \
                            max_deleted_entry_id"
                    .into());
            }
        } else {
            return Err(SYNTAX.into());
        }
        i += 2;
    }
    entries::set_id(&sh.keyspace(c.db), &a[1], id, added, max_deleted)?;
    out.ok();
    Ok(())
}
