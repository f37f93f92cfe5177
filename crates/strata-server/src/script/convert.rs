//! Between Redis replies and Lua values, as Redis 7.0's scripting converts them.
//!
//! A command's reply (RESP bytes, RESP2 or RESP3 as the script chose with `redis.setresp`)
//! becomes a Lua value ([`reply_to_lua`]): integer -> number, bulk -> string, null bulk and
//! null array -> false (RESP2) or nil (RESP3's null), array -> table, status -> `{ok=...}`,
//! error -> `{err=...}` (and the error flag), and in RESP3 map -> `{map={...}}`,
//! set -> `{set={...}}`, double -> `{double=n}`, boolean -> boolean, big number ->
//! `{big_number=s}`, verbatim -> `{verbatim_string={format=f, string=s}}`.
//!
//! The script's return value becomes the reply ([`lua_to_reply`]): string -> bulk,
//! number -> integer (truncated), true -> 1 (RESP2) or `#t`, false/nil -> null, a table with
//! `err` -> error, with `ok` -> status, else an array of its items 1.. up to the first nil.

use crate::resp::Out;
use mlua::{Lua, Table, Value};

/// A reply the parser could not read (the server wrote it, so this is a bug, reported as an
/// error to the script rather than a panic).
const GARBLED: &str = "ERR reply could not be read by the script engine";

/// Converts the RESP reply `bytes` to a Lua value; `true` with it when it is an error.
pub fn reply_to_lua(lua: &Lua, bytes: &[u8]) -> mlua::Result<(Value, bool)> {
    let mut at = 0;
    match value(lua, bytes, &mut at, 0) {
        Ok(Some(v)) => Ok(v),
        Ok(None) | Err(_) => Ok((Value::Table(err_table(lua, GARBLED)?), true)),
    }
}

/// The field marking an error table made from a command's error reply (Redis's name): it was
/// counted in the error statistics when the command failed, so not again when a script
/// returns or raises it.
pub const IGNORE_STATS: &str = "ignore_error_stats_update";

/// Whether the error table `t` is a command's error reply ([`IGNORE_STATS`]).
pub fn from_a_command(t: &Table) -> bool {
    matches!(t.raw_get::<Value>(IGNORE_STATS), Ok(Value::Boolean(true)))
}

/// `{err = msg}`.
pub fn err_table(lua: &Lua, msg: &str) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("err", msg)?;
    Ok(t)
}

fn line<'a>(b: &'a [u8], at: &mut usize) -> Option<&'a [u8]> {
    let rest = b.get(*at..)?;
    let end = rest.windows(2).position(|w| w == b"\r\n")?;
    *at += end + 2;
    Some(&rest[..end])
}

fn int(b: &[u8]) -> Option<i64> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// Nested replies deeper than this are refused (the server never nests that deep).
const MAX_DEPTH: usize = 64;

fn value(lua: &Lua, b: &[u8], at: &mut usize, depth: usize) -> mlua::Result<Option<(Value, bool)>> {
    if depth > MAX_DEPTH {
        return Ok(None);
    }
    let Some(l) = line(b, at) else { return Ok(None) };
    let Some((&tag, rest)) = l.split_first() else { return Ok(None) };
    let text = |s: &[u8]| lua.create_string(s).map(Value::String);
    let single = |k: &str, v: Value| -> mlua::Result<Value> {
        let t = lua.create_table()?;
        t.raw_set(k, v)?;
        Ok(Value::Table(t))
    };
    Ok(Some(match tag {
        b':' => {
            let Some(n) = int(rest) else { return Ok(None) };
            (Value::Number(n as f64), false)
        }
        b'+' => (single("ok", text(rest)?)?, false),
        b'-' => {
            let t = single("err", text(rest)?)?;
            if let Value::Table(t) = &t {
                t.raw_set(IGNORE_STATS, true)?;
            }
            (t, true)
        }
        b'_' => (Value::Nil, false),
        // An attribute (RESP3 `|`): its pairs are read past, and the reply after it is the
        // value (scripts are not shown attributes, as in Redis).
        b'|' => {
            let Some(n) = int(rest) else { return Ok(None) };
            for _ in 0..n.max(0) * 2 {
                if value(lua, b, at, depth + 1)?.is_none() {
                    return Ok(None);
                }
            }
            return value(lua, b, at, depth + 1);
        }
        b'#' => (Value::Boolean(rest == b"t"), false),
        b',' => {
            let s = String::from_utf8_lossy(rest);
            let n = match s.as_ref() {
                "inf" => f64::INFINITY,
                "-inf" => f64::NEG_INFINITY,
                other => other.parse().unwrap_or(f64::NAN),
            };
            (single("double", Value::Number(n))?, false)
        }
        b'(' => (single("big_number", text(rest)?)?, false),
        b'$' | b'=' => {
            let Some(n) = int(rest) else { return Ok(None) };
            if n < 0 {
                return Ok(Some((Value::Boolean(false), false)));
            }
            let n = n as usize;
            let Some(body) = b.get(*at..*at + n) else { return Ok(None) };
            *at += n + 2;
            if tag == b'$' {
                (text(body)?, false)
            } else {
                let (format, s) = if body.len() >= 4 { body.split_at(4) } else { (&b""[..], body) };
                let v = lua.create_table()?;
                v.raw_set("format", lua.create_string(&format[..format.len().saturating_sub(1)])?)?;
                v.raw_set("string", lua.create_string(s)?)?;
                (single("verbatim_string", Value::Table(v))?, false)
            }
        }
        b'*' | b'~' | b'>' => {
            let Some(n) = int(rest) else { return Ok(None) };
            if n < 0 {
                return Ok(Some((Value::Boolean(false), false)));
            }
            let t = lua.create_table()?;
            for i in 0..n {
                let Some((v, _)) = value(lua, b, at, depth + 1)? else { return Ok(None) };
                if tag == b'~' {
                    t.raw_set(v, true)?;
                } else {
                    t.raw_set(i + 1, v)?;
                }
            }
            if tag == b'~' {
                (single("set", Value::Table(t))?, false)
            } else {
                (Value::Table(t), false)
            }
        }
        b'%' => {
            let Some(n) = int(rest) else { return Ok(None) };
            let t = lua.create_table()?;
            for _ in 0..n.max(0) {
                let Some((k, _)) = value(lua, b, at, depth + 1)? else { return Ok(None) };
                let Some((v, _)) = value(lua, b, at, depth + 1)? else { return Ok(None) };
                t.raw_set(k, v)?;
            }
            (single("map", Value::Table(t))?, false)
        }
        _ => return Ok(None),
    }))
}

/// Writes the script's return value `v` as the reply (in `out`'s protocol; `script_resp3`:
/// the script chose RESP3, so a boolean stays a boolean).
/// Error tables the script made itself (not a command's error reply) are added to
/// `own_errors` as replied.
pub fn lua_to_reply(v: &Value, script_resp3: bool, out: &mut Out, own_errors: &mut Vec<String>) {
    to_reply(v, script_resp3, out, 0, own_errors);
}

fn to_reply(v: &Value, script_resp3: bool, out: &mut Out, depth: usize, errs: &mut Vec<String>) {
    if depth > MAX_DEPTH {
        out.error("ERR reached lua stack limit");
        return;
    }
    match v {
        Value::String(s) => out.bulk(&s.as_bytes()),
        // A script that chose RESP3 returns a boolean (`:1`/`:0` to a RESP2 client); under
        // RESP2 true is 1 and false nil, as Redis converts them.
        Value::Boolean(b) if script_resp3 => out.boolean(*b),
        Value::Boolean(true) => out.int(1),
        Value::Integer(n) => out.int(*n),
        Value::Number(n) => out.int(truncate(*n)),
        Value::Table(t) => table_reply(t, script_resp3, out, depth, errs),
        _ => out.null(),
    }
}

/// C's `(long long)` of a double, saturating where C leaves it undefined.
fn truncate(n: f64) -> i64 {
    if n.is_nan() {
        i64::MIN
    } else {
        n as i64
    }
}

fn table_reply(t: &Table, script_resp3: bool, out: &mut Out, depth: usize, errs: &mut Vec<String>) {
    if let Ok(Value::String(e)) = t.raw_get::<Value>("err") {
        let msg = String::from_utf8_lossy(&e.as_bytes()).replace(['\r', '\n'], " ");
        let msg = msg.strip_prefix('-').unwrap_or(&msg);
        out.error(msg);
        if !from_a_command(t) {
            errs.push(msg.to_string());
        }
        return;
    }
    if let Ok(Value::String(s)) = t.raw_get::<Value>("ok") {
        let msg = String::from_utf8_lossy(&s.as_bytes()).replace(['\r', '\n'], " ");
        out.simple(&msg);
        return;
    }
    // Typed tables (what RESP3 replies become) reply as their type, in either protocol.
    if let Ok(Value::Number(d)) = t.raw_get::<Value>("double") {
        out.double(d);
        return;
    }
    if let Ok(Value::String(n)) = t.raw_get::<Value>("big_number") {
        out.big_number(&n.as_bytes());
        return;
    }
    if let Ok(Value::Table(v)) = t.raw_get::<Value>("verbatim_string") {
        if let (Ok(Value::String(f)), Ok(Value::String(s))) =
            (v.raw_get::<Value>("format"), v.raw_get::<Value>("string"))
        {
            out.verbatim_as(&f.as_bytes(), &s.as_bytes());
            return;
        }
    }
    if let Ok(Value::Table(m)) = t.raw_get::<Value>("map") {
        let pairs: Vec<(Value, Value)> = m.pairs::<Value, Value>().filter_map(Result::ok).collect();
        out.map(pairs.len());
        for (k, v) in &pairs {
            to_reply(k, script_resp3, out, depth + 1, errs);
            to_reply(v, script_resp3, out, depth + 1, errs);
        }
        return;
    }
    if let Ok(Value::Table(s)) = t.raw_get::<Value>("set") {
        let keys: Vec<Value> =
            s.pairs::<Value, Value>().filter_map(Result::ok).map(|(k, _)| k).collect();
        out.set(keys.len());
        for k in &keys {
            to_reply(k, script_resp3, out, depth + 1, errs);
        }
        return;
    }
    let mut items = Vec::new();
    for i in 1.. {
        match t.raw_get::<Value>(i) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(v) => items.push(v),
        }
    }
    out.array(items.len());
    for v in &items {
        to_reply(v, script_resp3, out, depth + 1, errs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn back(lua: &Lua, bytes: &[u8], resp3: bool) -> Vec<u8> {
        let (v, _) = reply_to_lua(lua, bytes).unwrap();
        let mut out = Out { buf: Vec::new(), resp3 };
        lua_to_reply(&v, resp3, &mut out, &mut Vec::new());
        out.buf
    }

    #[test]
    fn replies_round_trip_as_redis_converts_them() {
        let lua = Lua::new();
        for (reply, want) in [
            (&b":42\r\n"[..], &b":42\r\n"[..]),
            (b"$3\r\nabc\r\n", b"$3\r\nabc\r\n"),
            (b"+OK\r\n", b"+OK\r\n"),
            (b"-ERR bad\r\n", b"-ERR bad\r\n"),
            // A null bulk is false to Lua, and false is a null bulk back.
            (b"$-1\r\n", b"$-1\r\n"),
            (b"*2\r\n:1\r\n$1\r\nx\r\n", b"*2\r\n:1\r\n$1\r\nx\r\n"),
            // An array stops at its first nil: RESP2's null inside one is false, kept.
            (b"*3\r\n:1\r\n$-1\r\n:3\r\n", b"*3\r\n:1\r\n$-1\r\n:3\r\n"),
        ] {
            assert_eq!(back(&lua, reply, false), want, "{}", String::from_utf8_lossy(reply));
        }
        let (_, is_err) = reply_to_lua(&lua, b"-WRONGTYPE x\r\n").unwrap();
        assert!(is_err);
        let (v, is_err) = reply_to_lua(&lua, b"*1\r\n").unwrap();
        assert!(is_err, "a truncated reply is an error, not a panic");
        assert!(matches!(v, Value::Table(_)));
    }

    #[test]
    fn resp3_types_take_their_tables() {
        let lua = Lua::new();
        assert_eq!(back(&lua, b"%1\r\n$1\r\nk\r\n:1\r\n", true), b"%1\r\n$1\r\nk\r\n:1\r\n");
        assert_eq!(back(&lua, b",1.5\r\n", true), b",1.5\r\n");
        assert_eq!(back(&lua, b"#t\r\n", true), b"#t\r\n");
        assert_eq!(back(&lua, b"#t\r\n", false), b":1\r\n");
        assert_eq!(back(&lua, b"_\r\n", true), b"_\r\n");
    }

    /// What DEBUG PROTOCOL's replies become through a RESP3 script, as redis-server's tests
    /// check them: a verbatim string keeps its format, a RESP3 script's false is 0 to a
    /// RESP2 client, an attribute is read past, a big number keeps to one line.
    fn back_to(lua: &Lua, bytes: &[u8], client_resp3: bool) -> Vec<u8> {
        let (v, _) = reply_to_lua(lua, bytes).unwrap();
        let mut out = Out { buf: Vec::new(), resp3: client_resp3 };
        lua_to_reply(&v, true, &mut out, &mut Vec::new());
        out.buf
    }

    #[test]
    fn resp3_replies_reach_either_client_as_redis_writes_them() {
        let lua = Lua::new();
        let verbatim = b"=29\r\ntxt:This is a verbatim\nstring\r\n";
        assert_eq!(back_to(&lua, verbatim, true), verbatim);
        assert_eq!(back_to(&lua, verbatim, false), b"$25\r\nThis is a verbatim\nstring\r\n");
        assert_eq!(back_to(&lua, b"#f\r\n", false), b":0\r\n");
        assert_eq!(back_to(&lua, b"#f\r\n", true), b"#f\r\n");
        let attrib = b"|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n$4\r\nreal\r\n";
        assert_eq!(back_to(&lua, attrib, true), b"$4\r\nreal\r\n");
        let v: Value = lua.load("return {big_number='123\\r\\n123'}").eval().unwrap();
        for (resp3, want) in [(true, &b"(123  123\r\n"[..]), (false, b"$8\r\n123  123\r\n")] {
            let mut out = Out { buf: Vec::new(), resp3 };
            lua_to_reply(&v, true, &mut out, &mut Vec::new());
            assert_eq!(out.buf, want);
        }
    }

    #[test]
    fn numbers_truncate_and_tables_nest() {
        let lua = Lua::new();
        let v: Value = lua.load("return {1.9, -2.5, 'x', {true, false}, nil, 7}").eval().unwrap();
        let mut out = Out::default();
        lua_to_reply(&v, false, &mut out, &mut Vec::new());
        assert_eq!(out.buf, b"*4\r\n:1\r\n:-2\r\n$1\r\nx\r\n*2\r\n:1\r\n$-1\r\n");
        let v: Value = lua.load("return {err='-MY code'}").eval().unwrap();
        let mut out = Out::default();
        lua_to_reply(&v, false, &mut out, &mut Vec::new());
        assert_eq!(out.buf, b"-MY code\r\n");
    }
}
