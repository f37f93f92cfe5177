//! The `bit` library Redis gives scripts (LuaBitOp's functions): bitwise operations on
//! numbers taken as 32-bit integers, results signed 32-bit (`bit.tobit`, `bnot`, `band`,
//! `bor`, `bxor`, `lshift`, `rshift`, `arshift`, `rol`, `ror`, `bswap`, `tohex`).

use mlua::{Lua, Variadic};

/// A Lua number as LuaBitOp reads it: modulo 2^32, as a signed 32-bit integer.
fn tobit(n: f64) -> i32 {
    if !n.is_finite() {
        return 0;
    }
    let m = n.trunc().rem_euclid(4_294_967_296.0);
    (m as u64 as u32) as i32
}

fn fold(args: &Variadic<f64>, op: fn(i32, i32) -> i32) -> mlua::Result<f64> {
    let mut it = args.iter();
    let Some(first) = it.next() else {
        return Err(mlua::Error::runtime("bad argument #1 (number expected, got no value)"));
    };
    Ok(f64::from(it.fold(tobit(*first), |acc, v| op(acc, tobit(*v)))))
}

/// Installs `bit` in the interpreter's globals.
pub fn install(lua: &Lua) -> mlua::Result<()> {
    let bit = lua.create_table()?;
    bit.raw_set("tobit", lua.create_function(|_, n: f64| Ok(f64::from(tobit(n))))?)?;
    bit.raw_set("bnot", lua.create_function(|_, n: f64| Ok(f64::from(!tobit(n))))?)?;
    bit.raw_set("band", lua.create_function(|_, a: Variadic<f64>| fold(&a, |x, y| x & y))?)?;
    bit.raw_set("bor", lua.create_function(|_, a: Variadic<f64>| fold(&a, |x, y| x | y))?)?;
    bit.raw_set("bxor", lua.create_function(|_, a: Variadic<f64>| fold(&a, |x, y| x ^ y))?)?;
    let shift = |f: fn(u32, u32) -> u32| {
        move |_: &Lua, (x, n): (f64, f64)| {
            Ok(f64::from(f(tobit(x) as u32, tobit(n) as u32 & 31) as i32))
        }
    };
    bit.raw_set("lshift", lua.create_function(shift(|x, n| x << n))?)?;
    bit.raw_set("rshift", lua.create_function(shift(|x, n| x >> n))?)?;
    bit.raw_set("arshift", lua.create_function(shift(|x, n| ((x as i32) >> n) as u32))?)?;
    bit.raw_set("rol", lua.create_function(shift(|x, n| x.rotate_left(n)))?)?;
    bit.raw_set("ror", lua.create_function(shift(|x, n| x.rotate_right(n)))?)?;
    bit.raw_set(
        "bswap",
        lua.create_function(|_, n: f64| Ok(f64::from((tobit(n) as u32).swap_bytes() as i32)))?,
    )?;
    bit.raw_set(
        "tohex",
        lua.create_function(|_, (x, n): (f64, Option<f64>)| {
            let n = n.map_or(8, tobit);
            let (upper, width) = if n < 0 { (true, n.unsigned_abs()) } else { (false, n as u32) };
            let width = width.min(8) as usize;
            let v = tobit(x) as u32;
            let masked = if width == 8 { v } else { v & ((1u32 << (4 * width)) - 1) };
            let s = if upper { format!("{masked:0width$X}") } else { format!("{masked:0width$x}") };
            Ok(s)
        })?,
    )?;
    lua.globals().raw_set("bit", bit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_follow_luabitop() {
        let lua = Lua::new();
        install(&lua).unwrap();
        let eval = |code: &str| -> String {
            lua.load(code).eval::<mlua::Value>().unwrap().to_string().unwrap()
        };
        assert_eq!(eval("return bit.tobit(0xffffffff)"), "-1");
        assert_eq!(eval("return bit.tobit(0xffffffff + 1)"), "0");
        assert_eq!(eval("return bit.bnot(0)"), "-1");
        assert_eq!(eval("return bit.band(0x12345678, 0xff)"), "120");
        assert_eq!(eval("return bit.bor(1, 2, 4)"), "7");
        assert_eq!(eval("return bit.bxor(5, 3)"), "6");
        assert_eq!(eval("return bit.lshift(1, 31)"), "-2147483648");
        assert_eq!(eval("return bit.rshift(-1, 28)"), "15");
        assert_eq!(eval("return bit.arshift(-256, 4)"), "-16");
        assert_eq!(eval("return bit.rol(0x12345678, 12)"), "1164411171");
        assert_eq!(eval("return bit.bswap(0x12345678)"), "2018915346");
        assert_eq!(eval("return bit.tohex(1)"), "00000001");
        assert_eq!(eval("return bit.tohex(-1, -4)"), "FFFF");
    }
}
