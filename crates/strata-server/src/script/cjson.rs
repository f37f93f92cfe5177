//! The `cjson` library Redis gives scripts (lua-cjson's interface, written here): `encode`,
//! `decode`, `null`, and the settings `encode_max_depth`, `decode_max_depth`,
//! `encode_invalid_numbers`, `decode_invalid_numbers`, `encode_number_precision`,
//! `encode_sparse_array`, `encode_keep_buffer`.
//!
//! Encoding follows lua-cjson: a table whose keys are all positive integers is an array
//! (`null` in its holes; an excessively sparse one is refused), any other an object with
//! string or number keys; numbers with 14 significant digits; `/` escaped; NaN and the
//! infinities refused unless allowed. Decoding gives tables, numbers, strings, booleans and
//! `cjson.null`.

use mlua::{LightUserData, Lua, Table, Value, Variadic};
use parking_lot::Mutex;
use std::sync::Arc;

#[derive(Debug, Clone, Copy)]
struct Settings {
    encode_max_depth: usize,
    decode_max_depth: usize,
    encode_invalid_numbers: bool,
    decode_invalid_numbers: bool,
    precision: usize,
    sparse_convert: bool,
    sparse_ratio: usize,
    sparse_safe: usize,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            encode_invalid_numbers: false,
            decode_invalid_numbers: true,
            precision: 14,
            sparse_convert: false,
            sparse_ratio: 2,
            sparse_safe: 10,
        }
    }
}

fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

fn encode_string(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &b in s {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            b if b < 0x20 || b == 0x7f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            b => out.push(b),
        }
    }
    out.push(b'"');
}

fn encode_number(out: &mut Vec<u8>, n: f64, cfg: &Settings) -> Result<(), String> {
    if n.is_nan() || n.is_infinite() {
        if !cfg.encode_invalid_numbers {
            return Err("Cannot serialise number: must not be NaN or Inf".into());
        }
        let s = if n.is_nan() {
            "nan"
        } else if n > 0.0 {
            "inf"
        } else {
            "-inf"
        };
        out.extend_from_slice(s.as_bytes());
        return Ok(());
    }
    out.extend_from_slice(crate::resp::writer::format_g(n, cfg.precision).as_bytes());
    Ok(())
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Nil => "nil",
        Value::Boolean(_) => "boolean",
        Value::Function(_) => "function",
        Value::Thread(_) => "thread",
        Value::UserData(_) | Value::LightUserData(_) => "userdata",
        Value::Table(_) => "table",
        Value::String(_) => "string",
        _ => "number",
    }
}

fn encode_value(out: &mut Vec<u8>, v: &Value, cfg: &Settings, depth: usize) -> Result<(), String> {
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(u) if u.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(i) => out.extend_from_slice(i.to_string().as_bytes()),
        Value::Number(n) => encode_number(out, *n, cfg)?,
        Value::String(s) => encode_string(out, &s.as_bytes()),
        Value::Table(t) => encode_table(out, t, cfg, depth + 1)?,
        other => return Err(format!("Cannot serialise {}: type not supported", type_name(other))),
    }
    Ok(())
}

fn encode_table(out: &mut Vec<u8>, t: &Table, cfg: &Settings, depth: usize) -> Result<(), String> {
    if depth > cfg.encode_max_depth {
        return Err(format!("Cannot serialise, excessive nesting ({depth})"));
    }
    let pairs: Vec<(Value, Value)> =
        t.pairs::<Value, Value>().collect::<mlua::Result<_>>().map_err(|e| e.to_string())?;
    // An array: every key a positive integer.
    let mut max = 0usize;
    let mut array = !pairs.is_empty();
    for (k, _) in &pairs {
        let idx = match k {
            Value::Integer(i) if *i >= 1 => Some(*i as usize),
            Value::Number(n) if *n >= 1.0 && n.fract() == 0.0 && *n < 1e15 => Some(*n as usize),
            _ => None,
        };
        match idx {
            Some(i) => max = max.max(i),
            None => {
                array = false;
                break;
            }
        }
    }
    if array
        && max > cfg.sparse_safe
        && max > pairs.len() * cfg.sparse_ratio
        && cfg.sparse_ratio > 0
    {
        if !cfg.sparse_convert {
            return Err("Cannot serialise table: excessively sparse array".into());
        }
        array = false;
    }
    if array {
        out.push(b'[');
        for i in 1..=max {
            if i > 1 {
                out.push(b',');
            }
            let v: Value = t.raw_get(i).map_err(|e| e.to_string())?;
            encode_value(out, &v, cfg, depth)?;
        }
        out.push(b']');
        return Ok(());
    }
    out.push(b'{');
    for (n, (k, v)) in pairs.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        match k {
            Value::String(s) => encode_string(out, &s.as_bytes()),
            Value::Integer(i) => encode_string(out, i.to_string().as_bytes()),
            Value::Number(x) => {
                let mut num = Vec::new();
                encode_number(&mut num, *x, cfg)?;
                encode_string(out, &num);
            }
            other => {
                return Err(format!(
                    "Cannot serialise {}: table key must be a number or string",
                    type_name(other)
                ))
            }
        }
        out.push(b':');
        encode_value(out, v, cfg, depth)?;
    }
    out.push(b'}');
    Ok(())
}

struct Decoder<'a> {
    b: &'a [u8],
    at: usize,
    cfg: Settings,
}

impl Decoder<'_> {
    fn fail<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("Expected {what} but found invalid token at character {}", self.at + 1))
    }

    fn skip_ws(&mut self) {
        while self.at < self.b.len() && matches!(self.b[self.at], b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
    }

    fn value(&mut self, lua: &Lua, depth: usize) -> Result<Value, String> {
        self.skip_ws();
        let Some(&c) = self.b.get(self.at) else { return self.fail("value") };
        match c {
            b'{' | b'[' => {
                if depth + 1 > self.cfg.decode_max_depth {
                    return Err(format!(
                        "Found too many nested data structures ({}) at character {}",
                        depth + 1,
                        self.at + 1
                    ));
                }
                self.at += 1;
                let t = lua.create_table().map_err(|e| e.to_string())?;
                let close = if c == b'{' { b'}' } else { b']' };
                self.skip_ws();
                if self.b.get(self.at) == Some(&close) {
                    self.at += 1;
                    return Ok(Value::Table(t));
                }
                let mut i = 1;
                loop {
                    if c == b'{' {
                        self.skip_ws();
                        if self.b.get(self.at) != Some(&b'"') {
                            return self.fail("object key string");
                        }
                        let k = self.string()?;
                        self.skip_ws();
                        if self.b.get(self.at) != Some(&b':') {
                            return self.fail("colon");
                        }
                        self.at += 1;
                        let v = self.value(lua, depth + 1)?;
                        t.raw_set(lua.create_string(&k).map_err(|e| e.to_string())?, v)
                            .map_err(|e| e.to_string())?;
                    } else {
                        let v = self.value(lua, depth + 1)?;
                        t.raw_set(i, v).map_err(|e| e.to_string())?;
                        i += 1;
                    }
                    self.skip_ws();
                    match self.b.get(self.at) {
                        Some(b',') => self.at += 1,
                        Some(x) if *x == close => {
                            self.at += 1;
                            return Ok(Value::Table(t));
                        }
                        _ => {
                            return self.fail(if c == b'{' {
                                "comma or object end"
                            } else {
                                "comma or array end"
                            })
                        }
                    }
                }
            }
            b'"' => {
                let s = self.string()?;
                Ok(Value::String(lua.create_string(&s).map_err(|e| e.to_string())?))
            }
            b't' if self.b[self.at..].starts_with(b"true") => {
                self.at += 4;
                Ok(Value::Boolean(true))
            }
            b'f' if self.b[self.at..].starts_with(b"false") => {
                self.at += 5;
                Ok(Value::Boolean(false))
            }
            b'n' if self.b[self.at..].starts_with(b"null") => {
                self.at += 4;
                Ok(null())
            }
            _ => self.number(),
        }
    }

    fn number(&mut self) -> Result<Value, String> {
        let start = self.at;
        while self.at < self.b.len()
            && matches!(self.b[self.at], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9' | b'x' | b'X' | b'a'..=b'd' | b'f' | b'A'..=b'D' | b'F' | b'i' | b'n' | b'I' | b'N')
        {
            self.at += 1;
        }
        let text = std::str::from_utf8(&self.b[start..self.at]).unwrap_or("");
        let lower = text.to_ascii_lowercase();
        let special =
            matches!(lower.as_str(), "nan" | "-nan" | "inf" | "-inf" | "infinity" | "-infinity");
        if special && !self.cfg.decode_invalid_numbers {
            self.at = start;
            return self.fail("value");
        }
        match lower.parse::<f64>() {
            Ok(n) if !text.is_empty() => Ok(Value::Number(n)),
            _ => {
                self.at = start;
                self.fail("value")
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let h = self.b.get(self.at..self.at + 4).and_then(|h| std::str::from_utf8(h).ok());
        let Some(v) = h.and_then(|h| u32::from_str_radix(h, 16).ok()) else {
            return Err(format!(
                "Expected value but found invalid unicode escape code at character {}",
                self.at + 1
            ));
        };
        self.at += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<Vec<u8>, String> {
        self.at += 1;
        let mut s = Vec::new();
        loop {
            let Some(&c) = self.b.get(self.at) else {
                return Err(format!(
                    "Expected string but found unexpected end of string at character {}",
                    self.at + 1
                ));
            };
            self.at += 1;
            match c {
                b'"' => return Ok(s),
                b'\\' => {
                    let Some(&e) = self.b.get(self.at) else { return self.fail("string") };
                    self.at += 1;
                    match e {
                        b'"' | b'\\' | b'/' => s.push(e),
                        b'b' => s.push(0x08),
                        b'f' => s.push(0x0c),
                        b'n' => s.push(b'\n'),
                        b'r' => s.push(b'\r'),
                        b't' => s.push(b'\t'),
                        b'u' => {
                            let mut cp = self.hex4()?;
                            if (0xd800..0xdc00).contains(&cp)
                                && self.b[self.at..].starts_with(b"\\u")
                            {
                                self.at += 2;
                                let lo = self.hex4()?;
                                cp = 0x10000
                                    + ((cp - 0xd800) << 10)
                                    + (lo.wrapping_sub(0xdc00) & 0x3ff);
                            }
                            let ch = char::from_u32(cp).unwrap_or('\u{fffd}');
                            let mut buf = [0u8; 4];
                            s.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => {
                            return Err(format!(
                                "Expected value but found invalid escape code at character {}",
                                self.at
                            ))
                        }
                    }
                }
                c => s.push(c),
            }
        }
    }
}

/// Installs `cjson` in the interpreter's globals.
pub fn install(lua: &Lua) -> mlua::Result<()> {
    let cfg = Arc::new(Mutex::new(Settings::default()));
    let cj = lua.create_table()?;
    cj.raw_set("null", null())?;
    let c = cfg.clone();
    cj.raw_set(
        "encode",
        lua.create_function(move |_, v: Value| {
            let mut out = Vec::new();
            let settings = *c.lock();
            encode_value(&mut out, &v, &settings, 0).map_err(mlua::Error::runtime)?;
            Ok(mlua::BString::from(out))
        })?,
    )?;
    let c = cfg.clone();
    cj.raw_set(
        "decode",
        lua.create_function(move |lua, s: mlua::LuaString| {
            let bytes = s.as_bytes();
            let mut d = Decoder { b: &bytes, at: 0, cfg: *c.lock() };
            let v = d.value(lua, 0).map_err(mlua::Error::runtime)?;
            d.skip_ws();
            if d.at != bytes.len() {
                return Err(mlua::Error::runtime(format!(
                    "Expected the end but found invalid token at character {}",
                    d.at + 1
                )));
            }
            Ok(v)
        })?,
    )?;
    let depth_setter = |which: fn(&mut Settings) -> &mut usize| {
        let c = cfg.clone();
        move |_: &Lua, n: Option<f64>| {
            let mut s = c.lock();
            if let Some(n) = n {
                if n < 1.0 {
                    return Err(mlua::Error::runtime(
                        "bad argument #1 (expected integer between 1 and 2147483647)",
                    ));
                }
                *which(&mut s) = n as usize;
            }
            Ok(*which(&mut s) as f64)
        }
    };
    cj.raw_set(
        "encode_max_depth",
        lua.create_function(depth_setter(|s| &mut s.encode_max_depth))?,
    )?;
    cj.raw_set(
        "decode_max_depth",
        lua.create_function(depth_setter(|s| &mut s.decode_max_depth))?,
    )?;
    cj.raw_set(
        "encode_number_precision",
        lua.create_function(depth_setter(|s| &mut s.precision))?,
    )?;
    let flag_setter = |which: fn(&mut Settings) -> &mut bool| {
        let c = cfg.clone();
        move |_: &Lua, v: Value| {
            let mut s = c.lock();
            match v {
                Value::Boolean(b) => *which(&mut s) = b,
                Value::String(t) if t.as_bytes().as_ref() == b"on" => *which(&mut s) = true,
                Value::String(t) if t.as_bytes().as_ref() == b"off" => *which(&mut s) = false,
                _ => {}
            }
            Ok(*which(&mut s))
        }
    };
    cj.raw_set(
        "encode_invalid_numbers",
        lua.create_function(flag_setter(|s| &mut s.encode_invalid_numbers))?,
    )?;
    cj.raw_set(
        "decode_invalid_numbers",
        lua.create_function(flag_setter(|s| &mut s.decode_invalid_numbers))?,
    )?;
    // The encode buffer is not kept between calls here: nothing to switch.
    cj.raw_set("encode_keep_buffer", lua.create_function(|_, _: Variadic<Value>| Ok(true))?)?;
    let c = cfg;
    cj.raw_set(
        "encode_sparse_array",
        lua.create_function(
            move |_, (convert, ratio, safe): (Option<bool>, Option<f64>, Option<f64>)| {
                let mut s = c.lock();
                if let Some(v) = convert {
                    s.sparse_convert = v;
                }
                if let Some(r) = ratio {
                    s.sparse_ratio = r.max(0.0) as usize;
                }
                if let Some(v) = safe {
                    s.sparse_safe = v.max(0.0) as usize;
                }
                Ok((s.sparse_convert, s.sparse_ratio as f64, s.sparse_safe as f64))
            },
        )?,
    )?;
    lua.globals().raw_set("cjson", cj)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(lua: &Lua, code: &str) -> String {
        match lua.load(code).eval::<Value>() {
            Ok(v) => v.to_string().unwrap_or_default(),
            Err(e) => format!("error: {e}"),
        }
    }

    #[test]
    fn encodes_and_decodes_as_lua_cjson() {
        let lua = Lua::new();
        install(&lua).unwrap();
        assert_eq!(eval(&lua, "return cjson.encode({1, 2, 'x'})"), "[1,2,\"x\"]");
        assert_eq!(eval(&lua, "return cjson.encode({a = 1.5})"), "{\"a\":1.5}");
        assert_eq!(eval(&lua, "return cjson.encode('a/b\\n')"), "\"a\\/b\\n\"");
        assert_eq!(eval(&lua, "return cjson.encode({})"), "{}");
        assert_eq!(eval(&lua, "return cjson.encode(1/3)"), "0.33333333333333");
        assert_eq!(eval(&lua, "return cjson.encode({[1] = 1, [3] = 3})"), "[1,null,3]");
        assert!(eval(&lua, "return cjson.encode({[20] = 1})").contains("excessively sparse"));
        assert!(eval(&lua, "return cjson.encode(0/0)").contains("NaN or Inf"));
        assert!(eval(&lua, "return cjson.encode({[true] = 1})")
            .contains("table key must be a number or string"));
        assert_eq!(
            eval(
                &lua,
                "return table.concat(cjson.decode('[0.0, -5e3, -1, 0.3e-3, 1023.2, 0e10]'), ' ')"
            ),
            "0 -5000 -1 0.0003 1023.2 0"
        );
        assert_eq!(eval(&lua, "local d = cjson.decode('{\"a\": [true, null], \"b\": \"\\\\u00e9\"}') return tostring(d.a[1]) .. tostring(d.a[2] == cjson.null) .. d.b"), "truetrueé");
        assert!(eval(&lua, "return cjson.decode('[1,')").contains("Expected value"));
        assert!(eval(&lua, "return cjson.decode('{} x')").contains("Expected the end"));
        assert_eq!(eval(&lua, "cjson.decode_max_depth(1) local ok = pcall(cjson.decode, '[[1]]') cjson.decode_max_depth(1000) return tostring(ok)"), "false");
    }
}
