//! SLOWLOG GET [count] | LEN | RESET | HELP over the server's log (`crate::slowlog`), with
//! Redis 7.0's replies and errors.

use super::args::{is, reply_help};
use super::errors::subcommand_syntax;
use super::CmdResult;
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::types::number::parse_int_strict;

/// How many entries GET without a count replies.
const DEFAULT_COUNT: usize = 10;

/// GET's error for a count that is not an integer of at least -1.
const BAD_COUNT: &str = "ERR count should be greater than or equal to -1";

/// SLOWLOG <subcommand> ...
pub fn slowlog(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let sub = &a[1];
    if is(sub, "help") && a.len() == 2 {
        let help = [
            "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "GET [<count>]",
            "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "    Entries are made of:",
            "    id, timestamp, time in microseconds, arguments array, client IP and port,",
            "    client name",
            "LEN",
            "    Return the length of the slowlog.",
            "RESET",
            "    Reset the slowlog.",
            "HELP",
            "    Prints this help.",
        ];
        reply_help(out, &help);
    } else if is(sub, "reset") && a.len() == 2 {
        sh.slowlog.reset();
        out.ok();
    } else if is(sub, "len") && a.len() == 2 {
        out.int(sh.slowlog.len() as i64);
    } else if is(sub, "get") && a.len() <= 3 {
        let count = match a.get(2).map(|c| parse_int_strict(c)) {
            None => Some(DEFAULT_COUNT),
            Some(Some(-1)) => None,
            Some(Some(n)) if n >= 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            Some(_) => return Err(BAD_COUNT.into()),
        };
        let entries = sh.slowlog.newest(count);
        out.array(entries.len());
        for e in entries {
            out.array(6);
            out.int(e.id as i64);
            out.int(e.time as i64);
            out.int(e.duration_us as i64);
            out.array(e.args.len());
            for arg in &e.args {
                out.bulk(arg);
            }
            out.bulk(e.client_addr.as_bytes());
            out.bulk(e.client_name.as_bytes());
        }
    } else {
        return Err(subcommand_syntax(a));
    }
    Ok(())
}
