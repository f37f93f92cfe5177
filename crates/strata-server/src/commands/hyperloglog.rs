//! HyperLogLog commands (`types::hll`): PFADD, PFCOUNT, PFMERGE, PFDEBUG and PFSELFTEST,
//! with redis-server 7.0's replies and error texts.

use super::args::is;
use super::errors::CmdError;
use super::CmdResult;
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::types::error::TypeError;
use crate::types::hll::{self, estimate, Encoding, Hll};
use std::sync::atomic::Ordering;

fn sparse_max(sh: &Shared) -> usize {
    sh.hll_sparse_max.load(Ordering::Relaxed)
}

/// PFADD key [element ...]
pub fn pfadd(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let changed = hll::add(&sh.keyspace(c.db), &a[1], &a[2..], sparse_max(sh))?;
    out.int(i64::from(changed));
    Ok(())
}

/// PFCOUNT key [key ...]
pub fn pfcount(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let ks = sh.keyspace(c.db);
    let n = if a.len() == 2 {
        // The count is cached in the value, as Redis does, but not through a replicated
        // store's log for a read.
        hll::count(&ks, &a[1], !ks.store.is_replicated())?
    } else {
        hll::count_union(&ks, &a[1..])?
    };
    out.int(n as i64);
    Ok(())
}

/// PFMERGE destkey [sourcekey ...]
pub fn pfmerge(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    hll::merge(&sh.keyspace(c.db), &a[1], &a[2..], sparse_max(sh))?;
    out.ok();
    Ok(())
}

/// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key
pub fn pfdebug(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let ks = sh.keyspace(c.db);
    let (sub, key) = (&a[1], &a[2]);
    let missing = |e: TypeError| match e {
        TypeError::NoSuchKey => CmdError::from("ERR The specified key does not exist"),
        e => e.into(),
    };
    if is(sub, "getreg") {
        let regs = hll::debug_registers(&ks, key, sparse_max(sh)).map_err(missing)?;
        out.array(regs.len());
        for r in regs {
            out.int(i64::from(r));
        }
    } else if is(sub, "decode") {
        let h = hll::debug_value(&ks, key).map_err(missing)?;
        if h.encoding() != Encoding::Sparse {
            return Err("ERR HLL encoding is not sparse".into());
        }
        out.bulk(hll::sparse::describe(h.sparse_opcodes()).as_bytes());
    } else if is(sub, "encoding") {
        let h = hll::debug_value(&ks, key).map_err(missing)?;
        out.simple(if h.encoding() == Encoding::Dense { "dense" } else { "sparse" });
    } else if is(sub, "todense") {
        let converted = hll::debug_to_dense(&ks, key, sparse_max(sh)).map_err(missing)?;
        out.int(i64::from(converted));
    } else {
        // Redis looks the key up first: a missing or wrong key answers before the name.
        hll::debug_value(&ks, key).map_err(missing)?;
        let name = String::from_utf8_lossy(sub);
        return Err(format!("ERR Unknown PFDEBUG subcommand '{name}'").into());
    }
    Ok(())
}

/// PFSELFTEST: checks the dense registers' layout and that sparse and dense values count
/// alike and within six standard errors, from 1 to 1,000,000 distinct elements.
pub fn pfselftest(sh: &Shared, _c: &mut Conn, _a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    match self_test(sparse_max(sh)) {
        Ok(()) => out.ok(),
        Err(why) => return Err(format!("TESTFAILED {why}").into()),
    }
    Ok(())
}

fn self_test(sparse_max: usize) -> Result<(), String> {
    use hll::value::{dense_get, dense_set};
    let mut d = vec![0u8; estimate::REGISTERS * 6 / 8];
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..100 {
        let want: Vec<u8> = (0..estimate::REGISTERS).map(|_| (next() & 0x3f) as u8).collect();
        for (i, &w) in want.iter().enumerate() {
            dense_set(&mut d, i, w);
        }
        for (i, &w) in want.iter().enumerate() {
            let got = dense_get(&d, i);
            if got != w {
                return Err(format!("Register {i} should be {w} but is {got}"));
            }
        }
    }
    let (mut dense, mut sparse) = (Hll::empty(), Hll::empty());
    dense.make_dense(sparse_max).map_err(|e| format!("{e:?}"))?;
    let seed = next();
    let rel_err = 1.04 / (estimate::REGISTERS as f64).sqrt();
    let mut checkpoint = 1u64;
    for j in 1..=1_000_000u64 {
        let e = [(j ^ seed).to_le_bytes().to_vec()];
        dense.add(&e, sparse_max).map_err(|e| format!("{e:?}"))?;
        sparse.add(&e, sparse_max).map_err(|e| format!("{e:?}"))?;
        if j != checkpoint {
            continue;
        }
        if j < sparse_max as u64 / 2 && sparse.encoding() != Encoding::Sparse {
            return Err("sparse encoding not used".into());
        }
        let n = dense.count().map_err(|e| format!("{e:?}"))?;
        if sparse.count().map_err(|e| format!("{e:?}"))? != n {
            return Err("dense/sparse disagree".into());
        }
        let max_err = if j == 10 { 1 } else { (rel_err * 6.0 * j as f64).ceil() as u64 };
        if n.abs_diff(j) > max_err {
            return Err(format!("Too big error. card:{j} abserr:{}", n.abs_diff(j)));
        }
        checkpoint *= 10;
    }
    Ok(())
}
