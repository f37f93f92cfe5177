//! XREAD and XREADGROUP (`types::stream::entries::read_after`, `types::stream::read`),
//! with BLOCK (`blocking`).
//!
//! A blocked XREAD is re-run with each `$` replaced by its stream's last id at the time it
//! blocked, so it then returns only entries added since; a blocked XREADGROUP (on `>`) is
//! re-run as it was. As in Redis, a re-run serves only the stream whose write woke it (the
//! ready key), at most 1000 entries without COUNT, and an XREADGROUP whose stream or group
//! went away meanwhile is told so with an error.

use super::args::{int_arg, is};
use super::blocking::{self, BlockRequest, TimeoutReply};
use super::errors::{CmdError, SYNTAX};
use super::stream::{reply_entry, strict_id};
use super::CmdResult;
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::types::stream::group::{self, delivered, Delivered};
use crate::types::stream::read::{read_group, GroupRead};
use crate::types::stream::{self, entries, StreamError, StreamId};
use crate::types::TypeError;
use std::time::Duration;

/// What a blocked read is given without COUNT (Redis's `XREAD_BLOCKED_DEFAULT_COUNT`).
const BLOCKED_DEFAULT_COUNT: u64 = 1000;

/// XREAD and XREADGROUP's arguments.
struct ReadArgs {
    /// Whether BLOCK was given.
    block: bool,
    /// BLOCK's timeout (`None`: forever).
    timeout: Option<Duration>,
    /// COUNT (0: no limit).
    count: u64,
    /// The index of the first key.
    keys_at: usize,
    /// The number of streams.
    n: usize,
    /// GROUP's group and consumer.
    group: Option<(Vec<u8>, Vec<u8>)>,
    noack: bool,
}

fn parse(a: &[Vec<u8>], grouped: bool) -> Result<ReadArgs, CmdError> {
    let mut r = ReadArgs {
        block: false,
        timeout: None,
        count: 0,
        keys_at: 0,
        n: 0,
        group: None,
        noack: false,
    };
    let mut i = 1;
    while i < a.len() {
        let more = a.len() - i - 1;
        let o = &a[i];
        if is(o, "block") && more > 0 {
            i += 1;
            r.timeout = blocking::ms_timeout_arg(&a[i])?;
            r.block = true;
        } else if is(o, "count") && more > 0 {
            i += 1;
            r.count = int_arg(&a[i])?.max(0) as u64;
        } else if is(o, "streams") && more > 0 {
            r.keys_at = i + 1;
            let rest = a.len() - r.keys_at;
            if !rest.is_multiple_of(2) {
                return Err("ERR Unbalanced XREAD list of streams: for each stream key an ID or \
                            '$' must be specified."
                    .into());
            }
            r.n = rest / 2;
            break;
        } else if is(o, "group") && more >= 2 {
            if !grouped {
                return Err("ERR The GROUP option is only supported by XREADGROUP. You called \
                            XREAD instead."
                    .into());
            }
            r.group = Some((a[i + 1].clone(), a[i + 2].clone()));
            i += 2;
        } else if is(o, "noack") {
            if !grouped {
                return Err("ERR The NOACK option is only supported by XREADGROUP. You called \
                            XREAD instead."
                    .into());
            }
            r.noack = true;
        } else {
            return Err(SYNTAX.into());
        }
        i += 1;
    }
    if r.keys_at == 0 {
        return Err(SYNTAX.into());
    }
    if grouped && r.group.is_none() {
        return Err("ERR Missing GROUP option for XREADGROUP".into());
    }
    Ok(r)
}

/// Where one stream is read from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    /// After this id (XREAD; `$` resolved).
    After(StreamId),
    /// A group read.
    Group(GroupRead),
}

fn no_group(key: &[u8], group: &[u8]) -> CmdError {
    format!(
        "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(group)
    )
    .into()
}

/// The ids of each stream, checking keys and groups as Redis does (in argument order).
fn resolve(sh: &Shared, db: usize, a: &[Vec<u8>], r: &ReadArgs) -> Result<Vec<Source>, CmdError> {
    let ks = sh.keyspace(db);
    let mut froms = Vec::with_capacity(r.n);
    for i in 0..r.n {
        let key = &a[r.keys_at + i];
        let arg = &a[r.keys_at + r.n + i];
        let s = stream::load(&ks, key)?;
        if let Some((g, _)) = &r.group {
            if s.is_none() || group::has_group(&ks, key, g)? != Some(true) {
                return Err(no_group(key, g));
            }
        }
        froms.push(match arg.as_slice() {
            b"$" if r.group.is_some() => {
                return Err("ERR The $ ID is meaningless in the context of XREADGROUP: you want \
                            to read the history of this consumer by specifying a proper ID, or \
                            use the > ID to get new messages. The $ ID would just return an \
                            empty result set."
                    .into());
            }
            b"$" => Source::After(s.map_or(StreamId::MIN, |s| s.last_id)),
            b">" if r.group.is_none() => {
                return Err("ERR The > ID can be specified only when calling XREADGROUP using \
                            the GROUP <group> <consumer> option."
                    .into());
            }
            b">" => Source::Group(GroupRead::New),
            // Redis stands for `>` with the greatest id: that id reads as `>` too.
            _ if r.group.is_some() => match strict_id(arg)? {
                StreamId::MAX => Source::Group(GroupRead::New),
                id => Source::Group(GroupRead::History(id)),
            },
            _ => Source::After(strict_id(arg)?),
        });
    }
    Ok(froms)
}

/// Reads one stream: `None` when it has nothing to give.
fn read_one(
    sh: &Shared,
    db: usize,
    key: &[u8],
    from: Source,
    r: &ReadArgs,
    count: Option<u64>,
) -> Result<Option<Vec<Delivered>>, CmdError> {
    let ks = sh.keyspace(db);
    match (from, &r.group) {
        (Source::After(after), _) => {
            Ok(entries::read_after(&ks, key, after, count)?.map(delivered))
        }
        (Source::Group(g), Some((group, consumer))) => {
            match read_group(&ks, key, group, consumer, g, count, r.noack) {
                Err(TypeError::Stream(StreamError::NoGroup)) => Err(no_group(key, group)),
                Ok(Some((items, effects))) => {
                    super::stream_group::propagate(db, key, group, consumer, &effects);
                    Ok(Some(items))
                }
                other => Ok(other?.map(|(items, _)| items)),
            }
        }
        (Source::Group(_), None) => Ok(None),
    }
}

fn reply(out: &mut Out, served: &[(&[u8], Vec<Delivered>)]) {
    if out.resp3 {
        out.map(served.len());
    } else {
        out.array(served.len());
    }
    for (key, items) in served {
        if !out.resp3 {
            out.array(2);
        }
        out.bulk(key);
        out.array(items.len());
        for (id, pairs) in items {
            reply_entry(out, *id, pairs.as_deref());
        }
    }
}

fn read(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out, grouped: bool) -> CmdResult {
    let r = parse(a, grouped)?;
    if grouped {
        // What it changed goes in its place, stream by stream (`read_one`): never its own
        // line.
        crate::storage::propagated::replace_with_nothing();
    }
    if blocking::is_retry(conn) {
        return reread(sh, conn, a, &r, out);
    }
    let froms = resolve(sh, conn.db, a, &r)?;
    let count = (r.count != 0).then_some(r.count);
    let mut served = Vec::new();
    for (i, from) in froms.iter().enumerate() {
        let key = a[r.keys_at + i].as_slice();
        if let Some(items) = read_one(sh, conn.db, key, *from, &r, count)? {
            served.push((key, items));
        }
    }
    if !served.is_empty() {
        reply(out, &served);
        return Ok(());
    }
    if !r.block {
        out.null_array();
        return Ok(());
    }
    let keys: Vec<Vec<u8>> = a[r.keys_at..r.keys_at + r.n].to_vec();
    // XREAD waits for entries after the ids it has now: `$` becomes the last id.
    let retry = (!grouped).then(|| {
        let mut line = a.to_vec();
        for (i, from) in froms.iter().enumerate() {
            if let Source::After(id) = from {
                line[r.keys_at + r.n + i] = id.to_string().into_bytes();
            }
        }
        line
    });
    let req = BlockRequest { keys, timeout: r.timeout, on_timeout: TimeoutReply::NullArray, retry };
    blocking::block(sh, conn, a, req, out)
}

/// A blocked read re-run because `ready_key` was written (module doc).
fn reread(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], r: &ReadArgs, out: &mut Out) -> CmdResult {
    let keys = &a[r.keys_at..r.keys_at + r.n];
    let ready = blocking::ready_key(conn).map(<[u8]>::to_vec);
    let i = ready.and_then(|k| keys.iter().position(|x| *x == k)).unwrap_or(0);
    let key = keys[i].as_slice();
    let arg = &a[r.keys_at + r.n + i];
    let count = Some(if r.count == 0 { BLOCKED_DEFAULT_COUNT } else { r.count });
    let from = match &r.group {
        None => match stream::load(&sh.keyspace(conn.db), key) {
            // A key of another type leaves the reader blocked.
            Err(TypeError::WrongType) => None,
            other => {
                other?;
                Some(Source::After(strict_id(arg)?))
            }
        },
        Some((g, _)) => {
            match group::has_group(&sh.keyspace(conn.db), key, g) {
                Ok(None) | Err(TypeError::WrongType) => {
                    return Err("UNBLOCKED the stream key no longer exists".into());
                }
                Ok(Some(false)) => {
                    return Err("NOGROUP the consumer group this client was blocked on no \
                                longer exists"
                        .into());
                }
                Ok(Some(true)) => {}
                Err(e) => return Err(e.into()),
            }
            Some(Source::Group(GroupRead::New))
        }
    };
    if let Some(from) = from {
        if let Some(items) = read_one(sh, conn.db, key, from, r, count)? {
            reply(out, &[(key, items)]);
            return Ok(());
        }
    }
    let req = BlockRequest {
        keys: keys.to_vec(),
        timeout: None,
        on_timeout: TimeoutReply::NullArray,
        retry: None,
    };
    blocking::block(sh, conn, a, req, out)
}

/// XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]
pub fn xread(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    read(sh, conn, a, out, false)
}

/// XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS key
/// [key ...] id [id ...]
pub fn xreadgroup(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    read(sh, conn, a, out, true)
}
