//! XINFO STREAM [FULL [COUNT n]], XINFO GROUPS, XINFO CONSUMERS and XINFO HELP
//! (`types::stream::info`), with Redis 7.0's fields in its order.

use super::args::{int_arg, is};
use super::errors::{subcommand_syntax, unknown_subcommand, CmdError};
use super::stream::{reply_entry, reply_help, reply_id, sub_arity};
use super::stream_group::no_such_group;
use super::CmdResult;
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::types::stream::info::{self, GroupInfo};
use crate::types::stream::{Stream, StreamError};
use crate::types::TypeError;

const HELP: &[&str] = &[
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
];

const NO_KEY: &str = "ERR no such key";

fn int_or_null(out: &mut Out, v: Option<i64>) {
    match v {
        Some(n) => out.int(n),
        None => out.null(),
    }
}

fn count(n: u64) -> i64 {
    n.min(i64::MAX as u64) as i64
}

/// The fields XINFO STREAM shows in both forms, first.
fn reply_counters(out: &mut Out, s: &Stream, tree_nodes: u64) {
    out.bulk(b"length");
    out.int(count(s.length));
    out.bulk(b"radix-tree-keys");
    out.int(count(s.nodes));
    out.bulk(b"radix-tree-nodes");
    out.int(count(tree_nodes));
    out.bulk(b"last-generated-id");
    reply_id(out, s.last_id);
    out.bulk(b"max-deleted-entry-id");
    reply_id(out, s.max_deleted);
    out.bulk(b"entries-added");
    out.int(count(s.entries_added));
    out.bulk(b"recorded-first-entry-id");
    reply_id(out, s.first_id);
}

fn stream(sh: &Shared, db: usize, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let ks = sh.keyspace(db);
    let key = &a[2];
    let opts = &a[3..];
    if opts.is_empty() {
        let s = info::stream(&ks, key)?.ok_or(CmdError::from(NO_KEY))?;
        out.map(10);
        reply_counters(out, &s.stream, s.tree_nodes);
        out.bulk(b"groups");
        out.int(count(s.stream.groups));
        for (name, e) in [(&b"first-entry"[..], &s.first), (b"last-entry", &s.last)] {
            out.bulk(name);
            match e {
                Some(e) => reply_entry(out, e.id, Some(&e.pairs)),
                None => out.null(),
            }
        }
        return Ok(());
    }
    // As Redis: the key is looked up before the options are read.
    if crate::types::stream::load(&ks, key)?.is_none() {
        return Err(NO_KEY.into());
    }
    if (opts.len() != 1 && opts.len() != 3) || !is(&opts[0], "full") {
        return Err(subcommand_syntax(a));
    }
    let mut n = 10;
    if opts.len() == 3 {
        if !is(&opts[1], "count") {
            return Err(subcommand_syntax(a));
        }
        n = int_arg(&opts[2])?;
        if n < 0 {
            n = 10;
        }
    }
    let f = info::stream_full(&ks, key, n as u64)?.ok_or(CmdError::from(NO_KEY))?;
    out.map(9);
    reply_counters(out, &f.stream, f.tree_nodes);
    out.bulk(b"entries");
    out.array(f.entries.len());
    for e in &f.entries {
        reply_entry(out, e.id, Some(&e.pairs));
    }
    out.bulk(b"groups");
    out.array(f.groups.len());
    for g in &f.groups {
        out.map(7);
        out.bulk(b"name");
        out.bulk(&g.info.name);
        out.bulk(b"last-delivered-id");
        reply_id(out, g.info.last_id);
        out.bulk(b"entries-read");
        int_or_null(out, g.info.entries_read);
        out.bulk(b"lag");
        int_or_null(out, g.info.lag);
        out.bulk(b"pel-count");
        out.int(count(g.info.pending));
        out.bulk(b"pending");
        out.array(g.pending.len());
        for (id, consumer, at, n) in &g.pending {
            out.array(4);
            reply_id(out, *id);
            out.bulk(consumer);
            out.int(count(*at));
            out.int(count(*n));
        }
        out.bulk(b"consumers");
        out.array(g.consumers.len());
        for c in &g.consumers {
            out.map(4);
            out.bulk(b"name");
            out.bulk(&c.name);
            out.bulk(b"seen-time");
            out.int(count(c.seen_ms));
            out.bulk(b"pel-count");
            out.int(count(c.pel_count));
            out.bulk(b"pending");
            out.array(c.pending.len());
            for (id, at, n) in &c.pending {
                out.array(3);
                reply_id(out, *id);
                out.int(count(*at));
                out.int(count(*n));
            }
        }
    }
    Ok(())
}

fn reply_group(out: &mut Out, g: &GroupInfo) {
    out.map(6);
    out.bulk(b"name");
    out.bulk(&g.name);
    out.bulk(b"consumers");
    out.int(count(g.consumers));
    out.bulk(b"pending");
    out.int(count(g.pending));
    out.bulk(b"last-delivered-id");
    reply_id(out, g.last_id);
    out.bulk(b"entries-read");
    int_or_null(out, g.entries_read);
    out.bulk(b"lag");
    int_or_null(out, g.lag);
}

/// XINFO CONSUMERS|GROUPS|STREAM|HELP ...
pub fn xinfo(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let sub = String::from_utf8_lossy(&a[1]).to_ascii_lowercase();
    let arity = match sub.as_str() {
        "consumers" => 4,
        "groups" => 3,
        "stream" => -3,
        "help" => 2,
        _ => return Err(unknown_subcommand(a)),
    };
    sub_arity(a, &format!("xinfo|{sub}"), arity)?;
    let ks = sh.keyspace(c.db);
    match sub.as_str() {
        "help" => reply_help(out, a, HELP),
        "groups" => {
            let groups = info::groups(&ks, &a[2])?.ok_or(CmdError::from(NO_KEY))?;
            out.array(groups.len());
            for g in &groups {
                reply_group(out, g);
            }
        }
        "consumers" => {
            let consumers = match info::consumers(&ks, &a[2], &a[3]) {
                Err(TypeError::Stream(StreamError::NoGroup)) => {
                    return Err(no_such_group(&a[2], &a[3]));
                }
                other => other?.ok_or(CmdError::from(NO_KEY))?,
            };
            out.array(consumers.len());
            for c in &consumers {
                out.map(3);
                out.bulk(b"name");
                out.bulk(&c.name);
                out.bulk(b"pending");
                out.int(count(c.pending));
                out.bulk(b"idle");
                out.int(count(c.idle));
            }
        }
        _ => stream(sh, c.db, a, out)?,
    }
    Ok(())
}
