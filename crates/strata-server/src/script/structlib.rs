//! The `struct` library Redis gives scripts (Roberto Ierusalimschy's struct 0.2): binary
//! packing of Lua values by a format string (`pack`, `unpack`, `size`).
//!
//! Format options, each optionally followed by a count where noted:
//! - `>` big endian, `<` little endian (the default: this machine's order), `=` native;
//!   `!n` aligns each later item to min(its size, n) bytes (`!` alone: 8), a power of 2;
//! - `x` one padding byte; `b`/`B` signed/unsigned char, `h`/`H` short (2 bytes), `l`/`L`
//!   long and `T` size_t (8 bytes), `in`/`In` an integer of n bytes (default 4, at most 8);
//! - `f` float, `d` double;
//! - `s` a zero-terminated string; `cn` n characters (`c0` in `pack`: the whole string; in
//!   `unpack`: as many as the number unpacked just before);
//! - spaces are ignored.
//!
//! `unpack(fmt, data [, init])` returns the values and then the position after them.

use mlua::{Lua, Value, Variadic};

/// The largest integer size.
const MAX_INT: usize = 8;
/// `!` without a count.
const NATIVE_ALIGN: usize = 8;

struct Format<'a> {
    f: &'a [u8],
    at: usize,
    little: bool,
    align: usize,
}

/// One option of a format: its letter and size.
struct Item {
    opt: u8,
    size: usize,
}

fn err(msg: impl Into<String>) -> mlua::Error {
    mlua::Error::runtime(msg.into())
}

impl Format<'_> {
    fn new(f: &[u8]) -> Format<'_> {
        Format { f, at: 0, little: cfg!(target_endian = "little"), align: 1 }
    }

    fn number(&mut self, default: usize) -> usize {
        let start = self.at;
        let mut n = 0usize;
        while let Some(d) = self.f.get(self.at).filter(|c| c.is_ascii_digit()) {
            n = n.saturating_mul(10).saturating_add(usize::from(d - b'0'));
            self.at += 1;
        }
        if self.at == start {
            default
        } else {
            n
        }
    }

    /// The next item (settings like `>` and `!` applied on the way), or None at the end.
    fn next(&mut self) -> mlua::Result<Option<Item>> {
        loop {
            let Some(&opt) = self.f.get(self.at) else { return Ok(None) };
            self.at += 1;
            let size = match opt {
                b' ' => continue,
                b'>' => {
                    self.little = false;
                    continue;
                }
                b'<' => {
                    self.little = true;
                    continue;
                }
                b'=' => {
                    self.little = cfg!(target_endian = "little");
                    continue;
                }
                b'!' => {
                    let a = self.number(NATIVE_ALIGN);
                    if !a.is_power_of_two() {
                        return Err(err(format!("alignment {a} is not a power of 2")));
                    }
                    self.align = a;
                    continue;
                }
                b'x' | b'b' | b'B' => 1,
                b'h' | b'H' => 2,
                b'l' | b'L' | b'T' | b'd' => 8,
                b'f' => 4,
                b's' => 0,
                b'c' => self.number(1),
                b'i' | b'I' => {
                    let n = self.number(4);
                    if n > MAX_INT {
                        return Err(err(format!(
                            "integral size {n} is larger than limit of {MAX_INT}"
                        )));
                    }
                    n
                }
                _ => return Err(err(format!("invalid format option '{}'", opt as char))),
            };
            return Ok(Some(Item { opt, size }));
        }
    }

    /// Padding before an item of `size` at offset `len`.
    fn padding(&self, item: &Item, len: usize) -> usize {
        if item.size == 0 || item.opt == b'c' {
            return 0;
        }
        let a = item.size.min(self.align);
        if !a.is_power_of_two() {
            return 0;
        }
        (a - (len & (a - 1))) & (a - 1)
    }
}

fn put_int(out: &mut Vec<u8>, v: u64, size: usize, little: bool) {
    let bytes = v.to_le_bytes();
    if little {
        out.extend_from_slice(&bytes[..size]);
    } else {
        out.extend(bytes[..size].iter().rev());
    }
}

fn get_int(b: &[u8], little: bool, signed: bool) -> f64 {
    let mut v: u64 = 0;
    for i in 0..b.len() {
        let byte = if little { b[b.len() - 1 - i] } else { b[i] };
        v = (v << 8) | u64::from(byte);
    }
    if signed && b.len() < 8 {
        let shift = 64 - 8 * b.len() as u32;
        (((v << shift) as i64) >> shift) as f64
    } else if signed {
        v as i64 as f64
    } else {
        v as f64
    }
}

fn number_arg(args: &[Value], i: usize) -> mlua::Result<f64> {
    match args.get(i) {
        Some(Value::Number(n)) => Ok(*n),
        Some(Value::Integer(n)) => Ok(*n as f64),
        Some(Value::String(s)) => {
            s.to_str().ok().and_then(|t| t.trim().parse().ok()).ok_or_else(|| {
                err(format!("bad argument #{} to 'pack' (number expected, got string)", i + 1))
            })
        }
        other => Err(err(format!(
            "bad argument #{} to 'pack' (number expected, got {})",
            i + 1,
            other.map_or("no value", Value::type_name)
        ))),
    }
}

/// A string argument; a number becomes its Lua text, as `luaL_checklstring` converts it.
fn string_arg(lua: &Lua, args: &[Value], i: usize) -> mlua::Result<Vec<u8>> {
    match args.get(i) {
        Some(Value::String(s)) => Ok(s.as_bytes().to_vec()),
        Some(v @ (Value::Number(_) | Value::Integer(_))) => lua
            .coerce_string(v.clone())?
            .map(|s| s.as_bytes().to_vec())
            .ok_or_else(|| err(format!("bad argument #{} to 'pack' (string expected)", i + 1))),
        other => Err(err(format!(
            "bad argument #{} to 'pack' (string expected, got {})",
            i + 1,
            other.map_or("no value", Value::type_name)
        ))),
    }
}

fn pack(lua: &Lua, fmt: &[u8], args: &[Value]) -> mlua::Result<Vec<u8>> {
    let mut f = Format::new(fmt);
    let mut out = Vec::new();
    // Argument 1 is the format.
    let mut arg = 1;
    while let Some(item) = f.next()? {
        out.resize(out.len() + f.padding(&item, out.len()), 0);
        match item.opt {
            b'x' => out.push(0),
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = number_arg(args, arg)?;
                arg += 1;
                let v = if n < 0.0 { n as i64 as u64 } else { n as u64 };
                put_int(&mut out, v, item.size, f.little);
            }
            b'f' => {
                let bits = (number_arg(args, arg)? as f32).to_bits();
                arg += 1;
                put_int(&mut out, u64::from(bits), 4, f.little);
            }
            b'd' => {
                let bits = number_arg(args, arg)?.to_bits();
                arg += 1;
                put_int(&mut out, bits, 8, f.little);
            }
            b'c' | b's' => {
                let s = string_arg(lua, args, arg)?;
                arg += 1;
                let n = if item.opt == b's' || item.size == 0 { s.len() } else { item.size };
                if s.len() < n {
                    return Err(err(format!("bad argument #{arg} to 'pack' (string too short)")));
                }
                out.extend_from_slice(&s[..n]);
                if item.opt == b's' {
                    out.push(0);
                }
            }
            _ => unreachable!("options are checked by Format::next"),
        }
    }
    Ok(out)
}

fn unpack(lua: &Lua, fmt: &[u8], data: &[u8], init: usize) -> mlua::Result<Vec<Value>> {
    let mut f = Format::new(fmt);
    let mut pos = init;
    let mut out = Vec::new();
    let short = || err("bad argument #2 to 'unpack' (data string too short)");
    while let Some(item) = f.next()? {
        pos += f.padding(&item, pos);
        let take = |pos: usize, n: usize| data.get(pos..pos + n).ok_or_else(short);
        match item.opt {
            b'x' => {
                take(pos, 1)?;
                pos += 1;
            }
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let b = take(pos, item.size)?;
                out.push(Value::Number(get_int(b, f.little, item.opt.is_ascii_lowercase())));
                pos += item.size;
            }
            b'f' => {
                let b = take(pos, 4)?;
                let bits = get_int(b, f.little, false) as u32;
                out.push(Value::Number(f64::from(f32::from_bits(bits))));
                pos += 4;
            }
            b'd' => {
                let b = take(pos, 8)?;
                let mut v: u64 = 0;
                for i in 0..8 {
                    let byte = if f.little { b[7 - i] } else { b[i] };
                    v = (v << 8) | u64::from(byte);
                }
                out.push(Value::Number(f64::from_bits(v)));
                pos += 8;
            }
            b'c' => {
                let n = if item.size == 0 {
                    match out.pop() {
                        Some(Value::Number(n)) if n >= 0.0 => n as usize,
                        _ => return Err(err("format 'c0' needs a previous size")),
                    }
                } else {
                    item.size
                };
                out.push(Value::String(lua.create_string(take(pos, n)?)?));
                pos += n;
            }
            b's' => {
                let rest = data.get(pos..).ok_or_else(short)?;
                let end = rest.iter().position(|&b| b == 0).ok_or_else(|| {
                    err("bad argument #2 to 'unpack' (unfinished string in data)")
                })?;
                out.push(Value::String(lua.create_string(&rest[..end])?));
                pos += end + 1;
            }
            _ => unreachable!("options are checked by Format::next"),
        }
    }
    out.push(Value::Number((pos + 1) as f64));
    Ok(out)
}

fn size(fmt: &[u8]) -> mlua::Result<usize> {
    let mut f = Format::new(fmt);
    let mut len = 0;
    while let Some(item) = f.next()? {
        if item.opt == b's' {
            return Err(err("bad argument #1 to 'size' (options 's' has no fixed size)"));
        }
        if item.opt == b'c' && item.size == 0 {
            return Err(err("bad argument #1 to 'size' (options 'c0' has no fixed size)"));
        }
        len += f.padding(&item, len) + item.size;
    }
    Ok(len)
}

/// Installs `struct` in the interpreter's globals.
pub fn install(lua: &Lua) -> mlua::Result<()> {
    let t = lua.create_table()?;
    t.raw_set(
        "pack",
        lua.create_function(|lua, args: Variadic<Value>| {
            let fmt = match args.first() {
                Some(Value::String(s)) => s.as_bytes().to_vec(),
                _ => return Err(err("bad argument #1 to 'pack' (string expected)")),
            };
            lua.create_string(pack(lua, &fmt, &args)?)
        })?,
    )?;
    t.raw_set(
        "unpack",
        lua.create_function(
            |lua, (fmt, data, init): (mlua::LuaString, mlua::LuaString, Option<f64>)| {
                let data = data.as_bytes();
                let init = match init {
                    Some(i) if i >= 1.0 => i as usize - 1,
                    Some(_) => {
                        return Err(err(
                            "bad argument #3 to 'unpack' (offset must be 1 or greater)",
                        ))
                    }
                    None => 0,
                };
                if init > data.len() {
                    return Err(err("bad argument #3 to 'unpack' (offset out of bounds)"));
                }
                Ok(Variadic::from_iter(unpack(lua, &fmt.as_bytes(), &data, init)?))
            },
        )?,
    )?;
    t.raw_set(
        "size",
        lua.create_function(|_, fmt: mlua::LuaString| Ok(size(&fmt.as_bytes())? as f64))?,
    )?;
    lua.globals().raw_set("struct", t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_unpacks_and_sizes_as_struct_0_2() {
        let lua = Lua::new();
        install(&lua).unwrap();
        lua.load(
            r"
            assert(struct.pack('>I2', 258) == '\1\2')
            assert(struct.pack('<i4', -2) == '\254\255\255\255')
            assert(struct.pack('>b B h', -1, 255, 1) == '\255\255\0\1')
            assert(struct.pack('s', 'ab') == 'ab\0' and struct.pack('s', 12) == '12\0')
            assert(struct.pack('c3', 'abcdef') == 'abc')
            assert(struct.pack('c0', 'xyz') == 'xyz')
            assert(struct.size('>!4 b i4') == 8 and struct.size('b d') == 9)
            assert(struct.size('!8 b d') == 16)
            local a, b, c, nxt = struct.unpack('>i2 s c2', struct.pack('>i2 s c2', -300, 'hi', 'zz'))
            assert(a == -300 and b == 'hi' and c == 'zz' and nxt == 8)
            local n, s = struct.unpack('B c0', '\3abcd')
            assert(n == 'abc' and s == 5)
            local d, f = struct.unpack('<d f', struct.pack('<d f', 0.1, 1.5))
            assert(d == 0.1 and f == 1.5)
            local x, p = struct.unpack('>I2', '\0\0\1\2', 3)
            assert(x == 258 and p == 5)
            assert(not pcall(struct.unpack, '>i4', 'ab'))
            assert(not pcall(struct.pack, 'q', 1))
            assert(not pcall(struct.pack, 'i9', 1))
            assert(not pcall(struct.size, '!3 i'))
            ",
        )
        .exec()
        .unwrap();
    }
}
