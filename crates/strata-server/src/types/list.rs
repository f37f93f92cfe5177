//! Lists. The metadata holds `head..tail`; element `i` is the sub-key whose field is `i` as a
//! big-endian u64. Pushing on the left decrements `head`, on the right increments `tail`.

use super::error::{Result, TypeError};
use super::keyspace::Keyspace;
use super::metadata::Kind;
use super::subkey;
use strata::WriteBatch;

/// An end of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The head (LPUSH, LPOP).
    Left,
    /// The tail (RPUSH, RPOP).
    Right,
}

fn elem_key(key: &[u8], version: u64, idx: u64) -> Vec<u8> {
    subkey::encode(key, version, &idx.to_be_bytes())
}

/// LPUSH/RPUSH: pushes `values` one by one at `end`; the new length.
pub fn push(ks: &Keyspace, key: &[u8], end: End, values: &[Vec<u8>]) -> Result<u64> {
    let st = ks.store;
    let _g = st.locks.lock(&[key]);
    let mut m = ks.typed_or_new(key, Kind::List)?;
    let mut b = WriteBatch::new();
    for v in values {
        let idx = match end {
            End::Left => {
                m.head -= 1;
                m.head
            }
            End::Right => {
                m.tail += 1;
                m.tail - 1
            }
        };
        b.put_cf(&*st.sub_cf, elem_key(key, m.version, idx), v);
        m.size += 1;
    }
    ks.put_meta(&mut b, key, &m);
    ks.write(b)?;
    Ok(m.size)
}

/// LPOP/RPOP: removes up to `count` elements from `end`, returning them in pop order
/// (`None`: the key is absent). An emptied list is deleted.
pub fn pop(ks: &Keyspace, key: &[u8], end: End, count: u64) -> Result<Option<Vec<Vec<u8>>>> {
    let st = ks.store;
    let _g = st.locks.lock(&[key]);
    let Some(mut m) = ks.typed(key, Kind::List)? else {
        return Ok(None);
    };
    let n = count.min(m.size);
    let mut b = WriteBatch::new();
    let mut vals = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let idx = match end {
            End::Left => m.head,
            End::Right => m.tail - 1,
        };
        let k = elem_key(key, m.version, idx);
        let v = st
            .get(&st.sub_cf, &k)?
            .ok_or_else(|| TypeError::Corrupt("list: missing element".into()))?;
        b.delete_cf(&*st.sub_cf, &k);
        vals.push(v);
        match end {
            End::Left => m.head += 1,
            End::Right => m.tail -= 1,
        }
        m.size -= 1;
    }
    ks.put_or_delete_meta(&mut b, key, &m);
    ks.write(b)?;
    Ok(Some(vals))
}

/// LRANGE: the elements from `start` to `stop` (inclusive; negative: from the end).
pub fn range(ks: &Keyspace, key: &[u8], start: i64, stop: i64) -> Result<Vec<Vec<u8>>> {
    let Some(m) = ks.typed(key, Kind::List)? else {
        return Ok(Vec::new());
    };
    let len = m.size as i64;
    let start = if start < 0 { (len + start).max(0) } else { start };
    let stop = if stop < 0 { len + stop } else { stop.min(len - 1) };
    if start > stop || start >= len {
        return Ok(Vec::new());
    }
    let n = (stop - start + 1) as usize;
    let mut vals = Vec::with_capacity(n);
    let from = (m.head + start as u64).to_be_bytes();
    ks.scan(&ks.store.sub_cf, key, m.version, &from, false, |_, v| {
        vals.push(v.to_vec());
        vals.len() < n
    })?;
    Ok(vals)
}

/// LLEN: the number of elements.
pub fn len(ks: &Keyspace, key: &[u8]) -> Result<u64> {
    Ok(ks.typed(key, Kind::List)?.map_or(0, |m| m.size))
}

/// LINDEX: the element at `i` (negative: from the end).
pub fn index(ks: &Keyspace, key: &[u8], i: i64) -> Result<Option<Vec<u8>>> {
    let Some(m) = ks.typed(key, Kind::List)? else {
        return Ok(None);
    };
    let len = m.size as i64;
    let i = if i < 0 { len + i } else { i };
    if i < 0 || i >= len {
        return Ok(None);
    }
    let st = ks.store;
    Ok(st.get(&st.sub_cf, &elem_key(key, m.version, m.head + i as u64))?)
}
