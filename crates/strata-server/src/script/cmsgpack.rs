//! The `cmsgpack` library Redis gives scripts (lua-cmsgpack's functions): MessagePack
//! encoding of Lua values (`pack`) and decoding (`unpack`, `unpack_one`, `unpack_limit`).
//!
//! Encoding, as lua-cmsgpack's:
//! - nil `c0`; false `c2`, true `c3`;
//! - a number equal to a 64-bit integer: the smallest of positive fixint, `cc`-`cf`
//!   (unsigned 8-64 bits), negative fixint, `d0`-`d3` (signed 8-64 bits), big-endian; any
//!   other number: `ca` (float 32) when a float holds it exactly, else `cb` (float 64);
//! - a string: fixstr `a0|len` below 32 bytes, `d9` (8-bit length), `da` (16), `db` (32);
//! - a table whose keys are exactly the integers 1..n (n = 0 included): an array of its values
//!   in order (fixarray `90|n` up to 15, `dc` 16-bit count, `dd` 32-bit), any other table a
//!   map of its pairs in `next` order (`80|n`, `de`, `df`); tables nested 16 deep are encoded
//!   as nil (references are not followed: a cycle becomes 16 levels of copies);
//! - any other value (function, userdata, thread): nil.
//!
//! Decoding takes every MessagePack type but extensions: `bin` and `str` become strings,
//! arrays tables 1..n, maps tables; bad input fails with lua-cmsgpack's messages.

use mlua::{Lua, Table, Value, Variadic};

/// Tables nested deeper than this are encoded as nil.
const MAX_NESTING: usize = 16;

fn encode_int(out: &mut Vec<u8>, n: i64) {
    if n >= 0 {
        let u = n as u64;
        if u <= 0x7f {
            out.push(u as u8);
        } else if u <= 0xff {
            out.extend_from_slice(&[0xcc, u as u8]);
        } else if u <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(u as u16).to_be_bytes());
        } else if u <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(u as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&u.to_be_bytes());
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2_147_483_648 {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

// Exact comparisons are the point: a number is encoded as an integer or a float 32 only when
// that holds it exactly.
#[allow(clippy::float_cmp)]
fn encode_number(out: &mut Vec<u8>, n: f64) {
    // Equal to a 64-bit integer: the cast saturates, so the round trip checks the range too.
    if n.is_finite() && (n as i64) as f64 == n && n < 9_223_372_036_854_775_808.0 {
        encode_int(out, n as i64);
    } else if (n as f32) as f64 == n || n.is_infinite() {
        out.push(0xca);
        out.extend_from_slice(&(n as f32).to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_header(out: &mut Vec<u8>, n: usize, fix: u8, fix_max: usize, tag16: u8, tag32: u8) {
    if n <= fix_max {
        out.push(fix | n as u8);
    } else if n <= 0xffff {
        out.push(tag16);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(tag32);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

fn encode_bytes(out: &mut Vec<u8>, b: &[u8]) {
    let n = b.len();
    if n < 32 {
        out.push(0xa0 | n as u8);
    } else if n <= 0xff {
        out.extend_from_slice(&[0xd9, n as u8]);
    } else if n <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
    out.extend_from_slice(b);
}

/// The length n when `t`'s keys are exactly the integers 1..n.
#[allow(clippy::float_cmp)] // integers held exactly: an exact comparison
fn array_len(t: &Table) -> mlua::Result<Option<usize>> {
    let (mut count, mut max) = (0usize, 0f64);
    for pair in t.clone().pairs::<Value, Value>() {
        let (k, _) = pair?;
        match k {
            Value::Number(n) if n > 0.0 && n.fract() == 0.0 => max = max.max(n),
            Value::Integer(n) if n > 0 => max = max.max(n as f64),
            _ => return Ok(None),
        }
        count += 1;
    }
    Ok((max == count as f64).then_some(count))
}

fn encode(out: &mut Vec<u8>, v: &Value, level: usize) -> mlua::Result<()> {
    match v {
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(n) => encode_int(out, *n),
        Value::Number(n) => encode_number(out, *n),
        Value::String(s) => encode_bytes(out, &s.as_bytes()),
        Value::Table(t) if level < MAX_NESTING => match array_len(t)? {
            Some(n) => {
                encode_header(out, n, 0x90, 15, 0xdc, 0xdd);
                for i in 1..=n {
                    encode(out, &t.raw_get::<Value>(i)?, level + 1)?;
                }
            }
            None => {
                // Counted first, then encoded pair by pair: each value the binding hands out
                // holds a slot of a bounded stack until dropped, so they are not collected.
                let mut n = 0usize;
                for pair in t.clone().pairs::<Value, Value>() {
                    pair?;
                    n += 1;
                }
                encode_header(out, n, 0x80, 15, 0xde, 0xdf);
                for pair in t.clone().pairs::<Value, Value>() {
                    let (k, v) = pair?;
                    encode(out, &k, level + 1)?;
                    encode(out, &v, level + 1)?;
                }
            }
        },
        _ => out.push(0xc0),
    }
    Ok(())
}

/// Why decoding stopped.
enum DecodeError {
    /// The input ended inside an object.
    Eof,
    /// A byte no MessagePack object starts with (or an extension type).
    BadFormat,
    Lua(mlua::Error),
}

impl From<mlua::Error> for DecodeError {
    fn from(e: mlua::Error) -> Self {
        DecodeError::Lua(e)
    }
}

struct Decoder<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Decoder<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.b.len()).ok_or(DecodeError::Eof)?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn uint(&mut self, n: usize) -> Result<u64, DecodeError> {
        Ok(self.take(n)?.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    fn string(&mut self, lua: &Lua, n: usize) -> Result<Value, DecodeError> {
        let s = self.take(n)?;
        Ok(Value::String(lua.create_string(s)?))
    }

    fn array(&mut self, lua: &Lua, n: usize) -> Result<Value, DecodeError> {
        let t = lua.create_table()?;
        for i in 1..=n {
            let v = self.value(lua)?;
            t.raw_set(i, v)?;
        }
        Ok(Value::Table(t))
    }

    fn map(&mut self, lua: &Lua, n: usize) -> Result<Value, DecodeError> {
        let t = lua.create_table()?;
        for _ in 0..n {
            let k = self.value(lua)?;
            let v = self.value(lua)?;
            // A nil or NaN key cannot index a table: lua-cmsgpack's settable would raise.
            if matches!(k, Value::Nil) {
                return Err(mlua::Error::runtime("table index is nil").into());
            }
            t.raw_set(k, v)?;
        }
        Ok(Value::Table(t))
    }

    fn value(&mut self, lua: &Lua) -> Result<Value, DecodeError> {
        let tag = self.take(1)?[0];
        Ok(match tag {
            0x00..=0x7f => Value::Number(f64::from(tag)),
            0x80..=0x8f => return self.map(lua, usize::from(tag & 0x0f)),
            0x90..=0x9f => return self.array(lua, usize::from(tag & 0x0f)),
            0xa0..=0xbf => return self.string(lua, usize::from(tag & 0x1f)),
            0xc0 => Value::Nil,
            0xc2 => Value::Boolean(false),
            0xc3 => Value::Boolean(true),
            0xc4 | 0xd9 => {
                let n = self.uint(1)? as usize;
                return self.string(lua, n);
            }
            0xc5 | 0xda => {
                let n = self.uint(2)? as usize;
                return self.string(lua, n);
            }
            0xc6 | 0xdb => {
                let n = self.uint(4)? as usize;
                return self.string(lua, n);
            }
            0xca => Value::Number(f64::from(f32::from_bits(self.uint(4)? as u32))),
            0xcb => Value::Number(f64::from_bits(self.uint(8)?)),
            0xcc => Value::Number(self.uint(1)? as f64),
            0xcd => Value::Number(self.uint(2)? as f64),
            0xce => Value::Number(self.uint(4)? as f64),
            0xcf => Value::Number(self.uint(8)? as f64),
            0xd0 => Value::Number(f64::from(self.uint(1)? as u8 as i8)),
            0xd1 => Value::Number(f64::from(self.uint(2)? as u16 as i16)),
            0xd2 => Value::Number(f64::from(self.uint(4)? as u32 as i32)),
            0xd3 => Value::Number(self.uint(8)? as i64 as f64),
            0xdc => {
                let n = self.uint(2)? as usize;
                return self.array(lua, n);
            }
            0xdd => {
                let n = self.uint(4)? as usize;
                return self.array(lua, n);
            }
            0xde => {
                let n = self.uint(2)? as usize;
                return self.map(lua, n);
            }
            0xdf => {
                let n = self.uint(4)? as usize;
                return self.map(lua, n);
            }
            0xe0..=0xff => Value::Number(f64::from(tag as i8)),
            _ => return Err(DecodeError::BadFormat),
        })
    }
}

/// Decodes up to `limit` objects (0: all) of `b` from `offset`: the offset after them (-1 at
/// the end of the input) and the objects.
fn unpack_full(lua: &Lua, b: &[u8], limit: i64, offset: i64) -> mlua::Result<(i64, Vec<Value>)> {
    if offset < 0 || limit < 0 {
        return Err(mlua::Error::runtime(format!(
            "Invalid request to unpack with offset of {offset} and limit of {limit}."
        )));
    }
    if offset as u64 > b.len() as u64 {
        return Err(mlua::Error::runtime(format!(
            "Start offset {offset} greater than input length {}.",
            b.len()
        )));
    }
    let mut d = Decoder { b, at: offset as usize };
    let mut out = Vec::new();
    while d.at < b.len() && (limit == 0 || (out.len() as i64) < limit) {
        match d.value(lua) {
            Ok(v) => out.push(v),
            Err(DecodeError::Eof) => return Err(mlua::Error::runtime("Missing bytes in input.")),
            Err(DecodeError::BadFormat) => {
                return Err(mlua::Error::runtime("Bad data format in input."))
            }
            Err(DecodeError::Lua(e)) => return Err(e),
        }
    }
    let next = if d.at >= b.len() { -1 } else { d.at as i64 };
    Ok((next, out))
}

/// Installs `cmsgpack` in the interpreter's globals.
pub fn install(lua: &Lua) -> mlua::Result<()> {
    let m = lua.create_table()?;
    m.raw_set(
        "pack",
        lua.create_function(|lua, args: Variadic<Value>| {
            if args.is_empty() {
                return Err(mlua::Error::runtime("MessagePack pack needs input."));
            }
            let mut out = Vec::new();
            for v in args.iter() {
                encode(&mut out, v, 0)?;
            }
            lua.create_string(out)
        })?,
    )?;
    m.raw_set(
        "unpack",
        lua.create_function(|lua, s: mlua::LuaString| {
            let (_, values) = unpack_full(lua, &s.as_bytes(), 0, 0)?;
            Ok(Variadic::from_iter(values))
        })?,
    )?;
    m.raw_set(
        "unpack_one",
        lua.create_function(|lua, (s, offset): (mlua::LuaString, Option<f64>)| {
            let (next, values) = unpack_full(lua, &s.as_bytes(), 1, offset.unwrap_or(0.0) as i64)?;
            let mut out = vec![Value::Number(next as f64)];
            out.extend(values);
            Ok(Variadic::from_iter(out))
        })?,
    )?;
    m.raw_set(
        "unpack_limit",
        lua.create_function(
            |lua, (s, limit, offset): (mlua::LuaString, Option<f64>, Option<f64>)| {
                let (next, values) = unpack_full(
                    lua,
                    &s.as_bytes(),
                    limit.unwrap_or(0.0) as i64,
                    offset.unwrap_or(0.0) as i64,
                )?;
                let mut out = vec![Value::Number(next as f64)];
                out.extend(values);
                Ok(Variadic::from_iter(out))
            },
        )?,
    )?;
    m.raw_set("_NAME", "cmsgpack")?;
    m.raw_set("_VERSION", "lua-cmsgpack 0.4.0")?;
    m.raw_set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    lua.globals().raw_set("cmsgpack", m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(lua: &Lua, code: &str) -> String {
        let s: mlua::LuaString = lua.load(code).eval().unwrap();
        use std::fmt::Write;
        s.as_bytes().iter().fold(String::new(), |mut h, b| {
            let _ = write!(h, "{b:02x}");
            h
        })
    }

    #[test]
    fn packs_as_lua_cmsgpack() {
        let lua = Lua::new();
        install(&lua).unwrap();
        assert_eq!(hex(&lua, "return cmsgpack.pack(0.1)"), "cb3fb999999999999a");
        assert_eq!(hex(&lua, "return cmsgpack.pack(-1099511627776)"), "d3ffffff0000000000");
        assert_eq!(hex(&lua, "return cmsgpack.pack(1.5)"), "ca3fc00000");
        assert_eq!(hex(&lua, "return cmsgpack.pack(nil, true, false)"), "c0c3c2");
        assert_eq!(
            hex(&lua, "return cmsgpack.pack(5, 200, 65535, 65536, -5, -100, -200)"),
            "05ccc8cdffffce00010000fbd09cd1ff38"
        );
        assert_eq!(hex(&lua, "return cmsgpack.pack({1, 2, 'a'})"), "930102a161");
        assert_eq!(hex(&lua, "return cmsgpack.pack({})"), "90");
        assert_eq!(hex(&lua, "return cmsgpack.pack({[2] = 1})"), "810201");
        assert_eq!(hex(&lua, "return cmsgpack.pack(string.rep('x', 40)):sub(1, 2)"), "d928");
    }

    #[test]
    fn unpacks_what_it_packs_and_refuses_bad_input() {
        let lua = Lua::new();
        install(&lua).unwrap();
        lua.load(
            r"
            local t = {a = {1, 2, {b = 'c'}}, n = -3.25, big = 2^40, s = string.rep('y', 70000)}
            local m = {}
            for i = 1, 100000 do m[tostring(i)] = i end
            local um = cmsgpack.unpack(cmsgpack.pack(m))
            assert(um['99999'] == 99999)
            local u = cmsgpack.unpack(cmsgpack.pack(t))
            assert(u.a[3].b == 'c' and u.n == -3.25 and u.big == 2^40 and #u.s == 70000)
            local a, b, c = cmsgpack.unpack(cmsgpack.pack(1, 'two', false))
            assert(a == 1 and b == 'two' and c == false)
            local off, v = cmsgpack.unpack_one(cmsgpack.pack(7, 8), 0)
            assert(off == 1 and v == 7)
            off, v = cmsgpack.unpack_one(cmsgpack.pack(7, 8), off)
            assert(off == -1 and v == 8)
            assert(not pcall(cmsgpack.unpack, '\146\1'))
            local ok, e = pcall(cmsgpack.unpack, '\193')
            assert(not ok and string.find(tostring(e), 'Bad data format'))
            ok, e = pcall(cmsgpack.unpack_limit, 'ab', 1, 5)
            assert(not ok and string.find(tostring(e), 'greater than input length'))
            ok, e = pcall(cmsgpack.pack)
            assert(not ok and string.find(tostring(e), 'needs input'))
            ",
        )
        .exec()
        .unwrap();
    }
}
