//! Lists. The metadata holds `head..tail`; element `i` (from the head, 0-based) is the
//! sub-key whose field is `head + i` as a big-endian u64: the indexes are dense, so LINDEX,
//! LSET and the start of LRANGE are one lookup or seek. Pushing on the left decrements
//! `head`, on the right increments `tail`; pops delete at the ends.
//!
//! Changes inside a list keep the indexes dense by moving elements, as Kvrocks does: LINSERT
//! shifts the shorter side of the insertion point one step outwards (rewriting
//! min(position, length - position) elements), LREM rewrites the survivors on the side of
//! the removed ones that moves fewer (it reads the whole list, as Redis walks it). Both are
//! O(N) in the worst case, like Redis's, but each element moved is a sub-key write, so they
//! cost more than Redis's in-memory moves: fine for the lists they are used on, not for
//! LINSERT at the middle of a million-element list.

use super::error::{Result, TypeError};
use super::keyspace::Keyspace;
use super::metadata::{Kind, Meta};
use super::notify::{GENERIC, LIST};
use super::subkey;
use crate::filing::Filing;
use strata::WriteBatch;

/// An end of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The head (LPUSH, LPOP).
    Left,
    /// The tail (RPUSH, RPOP).
    Right,
}

impl End {
    /// The event a push at this end raises.
    fn push_event(self) -> &'static str {
        match self {
            End::Left => "lpush",
            End::Right => "rpush",
        }
    }

    /// The event a pop from this end raises.
    fn pop_event(self) -> &'static str {
        match self {
            End::Left => "lpop",
            End::Right => "rpop",
        }
    }
}

fn elem_key(f: Filing, key: &[u8], version: u64, idx: u64) -> Vec<u8> {
    subkey::encode(f, key, version, &idx.to_be_bytes())
}

/// Pushes `values` one by one at `end` of the list `m` into `b`.
fn push_into(
    ks: &Keyspace,
    b: &mut WriteBatch,
    key: &[u8],
    m: &mut Meta,
    end: End,
    values: &[Vec<u8>],
) {
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
        b.put_cf(&*ks.store.sub_cf, elem_key(ks.store.filing, key, m.version, idx), v);
        m.size += 1;
    }
}

/// Pops up to `count` elements from `end` of the list `m` into `b`, in pop order.
fn pop_into(
    ks: &Keyspace,
    b: &mut WriteBatch,
    key: &[u8],
    m: &mut Meta,
    end: End,
    count: u64,
) -> Result<Vec<Vec<u8>>> {
    let st = ks.store;
    let n = count.min(m.size);
    let mut vals = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let idx = match end {
            End::Left => m.head,
            End::Right => m.tail - 1,
        };
        let k = elem_key(st.filing, key, m.version, idx);
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
    Ok(vals)
}

/// LPUSH/RPUSH: pushes `values` one by one at `end`; the new length.
pub fn push(ks: &Keyspace, key: &[u8], end: End, values: &[Vec<u8>]) -> Result<u64> {
    let _g = ks.store.locks.lock(&[key]);
    let old = ks.typed(key, Kind::List)?;
    let created = old.is_none();
    let mut m = old.unwrap_or_else(|| Meta::composite(Kind::List, ks.store.new_version()));
    let mut b = WriteBatch::new();
    push_into(ks, &mut b, key, &mut m, end, values);
    ks.put_meta(&mut b, key, &m);
    ks.write(b)?;
    ks.notify_new(created, key);
    ks.notify(LIST, end.push_event(), key);
    Ok(m.size)
}

/// SORT ... STORE: makes `key` the list of `values` whatever it held (a new generation: the
/// sub-keys of what it held are left to the compaction filter), or deletes it when `values`
/// is empty. Returns whether an existing key was deleted.
pub fn replace(ks: &Keyspace, key: &[u8], values: &[Vec<u8>]) -> Result<bool> {
    let _g = ks.store.locks.lock(&[key]);
    let mut b = WriteBatch::new();
    if values.is_empty() {
        if ks.meta(key)?.is_none() {
            return Ok(false);
        }
        ks.delete_meta(&mut b, key);
        ks.write(b)?;
        ks.notify(GENERIC, "del", key);
        return Ok(true);
    }
    let created = ks.would_create(key)?;
    let mut m = Meta::composite(Kind::List, ks.store.new_version());
    push_into(ks, &mut b, key, &mut m, End::Right, values);
    ks.put_meta(&mut b, key, &m);
    ks.write(b)?;
    ks.notify_new(created, key);
    ks.notify(LIST, "sortstore", key);
    Ok(false)
}

/// LPUSHX/RPUSHX: like [`push`] but only onto an existing list; 0 when the key is absent.
pub fn push_existing(ks: &Keyspace, key: &[u8], end: End, values: &[Vec<u8>]) -> Result<u64> {
    let _g = ks.store.locks.lock(&[key]);
    let Some(mut m) = ks.typed(key, Kind::List)? else {
        return Ok(0);
    };
    let mut b = WriteBatch::new();
    push_into(ks, &mut b, key, &mut m, end, values);
    ks.put_meta(&mut b, key, &m);
    ks.write(b)?;
    ks.notify(LIST, end.push_event(), key);
    Ok(m.size)
}

/// LPOP/RPOP: removes up to `count` elements from `end`, returning them in pop order
/// (`None`: the key is absent). An emptied list is deleted.
pub fn pop(ks: &Keyspace, key: &[u8], end: End, count: u64) -> Result<Option<Vec<Vec<u8>>>> {
    let _g = ks.store.locks.lock(&[key]);
    let Some(mut m) = ks.typed(key, Kind::List)? else {
        return Ok(None);
    };
    let mut b = WriteBatch::new();
    let vals = pop_into(ks, &mut b, key, &mut m, end, count)?;
    ks.put_or_delete_meta(&mut b, key, &m);
    ks.write(b)?;
    if !vals.is_empty() {
        ks.notify_removal(LIST, end.pop_event(), key, m.size == 0);
    }
    Ok(Some(vals))
}

/// What [`pop_first`] popped: the key and its elements.
pub type Popped = (Vec<u8>, Vec<Vec<u8>>);

/// LMPOP: pops up to `count` elements from `end` of the first non-empty list of `keys`;
/// that key and the elements, or `None` when every key is absent. A key of another type met
/// before a list is [`TypeError::WrongType`].
pub fn pop_first(ks: &Keyspace, keys: &[Vec<u8>], end: End, count: u64) -> Result<Option<Popped>> {
    let _g = ks.store.locks.lock(keys);
    for key in keys {
        let Some(mut m) = ks.typed(key, Kind::List)? else {
            continue;
        };
        let mut b = WriteBatch::new();
        let vals = pop_into(ks, &mut b, key, &mut m, end, count)?;
        ks.put_or_delete_meta(&mut b, key, &m);
        ks.write(b)?;
        if !vals.is_empty() {
            ks.notify_removal(LIST, end.pop_event(), key, m.size == 0);
        }
        return Ok(Some((key.clone(), vals)));
    }
    Ok(None)
}

/// LMOVE/RPOPLPUSH: pops one element from `from` of `src` and pushes it at `to` of `dst`
/// (which may be `src`), in one batch; the element, or `None` when `src` is absent. A `dst`
/// of another type is [`TypeError::WrongType`] and nothing moves.
pub fn move_one(
    ks: &Keyspace,
    src: &[u8],
    dst: &[u8],
    from: End,
    to: End,
) -> Result<Option<Vec<u8>>> {
    let _g = ks.store.locks.lock(&[src, dst]);
    let Some(mut sm) = ks.typed(src, Kind::List)? else {
        return Ok(None);
    };
    let mut b = WriteBatch::new();
    // Redis's order: the push on `dst` (created first if need be), then the pop from `src`.
    if src == dst {
        let v = pop_into(ks, &mut b, src, &mut sm, from, 1)?;
        push_into(ks, &mut b, src, &mut sm, to, &v);
        ks.put_meta(&mut b, src, &sm);
        ks.write(b)?;
        if !v.is_empty() {
            ks.notify(LIST, to.push_event(), dst);
            ks.notify(LIST, from.pop_event(), src);
        }
        return Ok(v.into_iter().next());
    }
    let old_dst = ks.typed(dst, Kind::List)?;
    let created = old_dst.is_none();
    let mut dm = old_dst.unwrap_or_else(|| Meta::composite(Kind::List, ks.store.new_version()));
    let v = pop_into(ks, &mut b, src, &mut sm, from, 1)?;
    push_into(ks, &mut b, dst, &mut dm, to, &v);
    ks.put_or_delete_meta(&mut b, src, &sm);
    ks.put_meta(&mut b, dst, &dm);
    ks.write(b)?;
    if !v.is_empty() {
        ks.notify_new(created, dst);
        ks.notify(LIST, to.push_event(), dst);
        ks.notify_removal(LIST, from.pop_event(), src, sm.size == 0);
    }
    Ok(v.into_iter().next())
}

/// The elements at positions `from..from + n` of the list `m` (fewer if it is shorter).
fn read_range(ks: &Keyspace, key: &[u8], m: &Meta, from: u64, n: u64) -> Result<Vec<Vec<u8>>> {
    let mut vals = Vec::with_capacity(n.min(1 << 16) as usize);
    if n == 0 {
        return Ok(vals);
    }
    let start = (m.head + from).to_be_bytes();
    ks.scan(&ks.store.sub_cf, key, m.version, &start, false, |_, v| {
        vals.push(v.to_vec());
        (vals.len() as u64) < n
    })?;
    Ok(vals)
}

/// LINSERT: inserts `elem` before (or after) the first element equal to `pivot`; the new
/// length, -1 when there is no such element, 0 when the key is absent.
pub fn insert(ks: &Keyspace, key: &[u8], before: bool, pivot: &[u8], elem: &[u8]) -> Result<i64> {
    let st = ks.store;
    let _g = st.locks.lock(&[key]);
    let Some(mut m) = ks.typed(key, Kind::List)? else {
        return Ok(0);
    };
    // The elements up to the pivot, kept for a shift to the left.
    let mut left: Vec<Vec<u8>> = Vec::new();
    let mut found = false;
    let start = m.head.to_be_bytes();
    ks.scan(&st.sub_cf, key, m.version, &start, false, |_, v| {
        left.push(v.to_vec());
        found = v == pivot;
        !found
    })?;
    if !found {
        return Ok(-1);
    }
    let p = left.len() as u64 - 1; // the pivot's position
    let pos = if before { p } else { p + 1 }; // the new element's position
    let mut b = WriteBatch::new();
    if pos <= m.size - pos {
        // Shift positions 0..pos one index towards the head.
        for (i, v) in left.iter().take(pos as usize).enumerate() {
            b.put_cf(&*st.sub_cf, elem_key(st.filing, key, m.version, m.head + i as u64 - 1), v);
        }
        b.put_cf(&*st.sub_cf, elem_key(st.filing, key, m.version, m.head + pos - 1), elem);
        m.head -= 1;
    } else {
        // Shift positions pos..size one index towards the tail.
        let right = read_range(ks, key, &m, pos, m.size - pos)?;
        for (i, v) in right.iter().enumerate() {
            b.put_cf(
                &*st.sub_cf,
                elem_key(st.filing, key, m.version, m.head + pos + i as u64 + 1),
                v,
            );
        }
        b.put_cf(&*st.sub_cf, elem_key(st.filing, key, m.version, m.head + pos), elem);
        m.tail += 1;
    }
    m.size += 1;
    ks.put_meta(&mut b, key, &m);
    ks.write(b)?;
    ks.notify(LIST, "linsert", key);
    Ok(m.size as i64)
}

/// LSET: replaces the element at `index` (negative: from the end). `index` is `None` when the
/// argument was not an integer: Redis looks the key up first, so an absent key is
/// [`TypeError::NoSuchKey`] and a key of another type [`TypeError::WrongType`] before the
/// index is [`TypeError::NotAnInteger`] or [`TypeError::IndexOutOfRange`].
pub fn set(ks: &Keyspace, key: &[u8], index: Option<i64>, elem: &[u8]) -> Result<()> {
    let st = ks.store;
    let _g = st.locks.lock(&[key]);
    let m = ks.typed(key, Kind::List)?.ok_or(TypeError::NoSuchKey)?;
    let i = index.ok_or(TypeError::NotAnInteger)?;
    let len = m.size as i64;
    let i = if i < 0 { len + i } else { i };
    if i < 0 || i >= len {
        return Err(TypeError::IndexOutOfRange);
    }
    let mut b = WriteBatch::new();
    b.put_cf(&*st.sub_cf, elem_key(st.filing, key, m.version, m.head + i as u64), elem);
    ks.write(b)?;
    ks.notify(LIST, "lset", key);
    Ok(())
}

/// LREM: removes the first `count` elements equal to `elem` from the head (negative: the
/// last `-count` from the tail; 0: all); the number removed. An emptied list is deleted.
pub fn remove(ks: &Keyspace, key: &[u8], count: i64, elem: &[u8]) -> Result<u64> {
    let st = ks.store;
    let _g = st.locks.lock(&[key]);
    let Some(mut m) = ks.typed(key, Kind::List)? else {
        return Ok(0);
    };
    let all = read_range(ks, key, &m, 0, m.size)?;
    if all.len() as u64 != m.size {
        return Err(TypeError::Corrupt("list: missing element".into()));
    }
    let limit = if count == 0 { usize::MAX } else { count.unsigned_abs() as usize };
    let mut gone = vec![false; all.len()];
    let mut removed = 0usize;
    let order: Box<dyn Iterator<Item = usize>> =
        if count >= 0 { Box::new(0..all.len()) } else { Box::new((0..all.len()).rev()) };
    for i in order {
        if removed == limit {
            break;
        }
        if all[i] == elem {
            gone[i] = true;
            removed += 1;
        }
    }
    if removed == 0 {
        return Ok(0);
    }
    let mut b = WriteBatch::new();
    if removed == all.len() {
        ks.delete_meta(&mut b, key);
        ks.write(b)?;
        ks.notify_removal(LIST, "lrem", key, true);
        return Ok(removed as u64);
    }
    let first = gone.iter().position(|&g| g).unwrap_or(0);
    let last = gone.iter().rposition(|&g| g).unwrap_or(0);
    let removed = removed as u64;
    if last < all.len() - first {
        // Keep the tail in place: the survivors before `last` move towards it.
        let mut to = m.head + last as u64;
        for i in (0..=last).rev() {
            if !gone[i] {
                b.put_cf(&*st.sub_cf, elem_key(st.filing, key, m.version, to), &all[i]);
                to -= 1;
            }
        }
        for i in 0..removed {
            b.delete_cf(&*st.sub_cf, elem_key(st.filing, key, m.version, m.head + i));
        }
        m.head += removed;
    } else {
        // Keep the head in place: the survivors after `first` move towards it.
        let mut to = m.head + first as u64;
        for i in first..all.len() {
            if !gone[i] {
                b.put_cf(&*st.sub_cf, elem_key(st.filing, key, m.version, to), &all[i]);
                to += 1;
            }
        }
        for i in 0..removed {
            b.delete_cf(&*st.sub_cf, elem_key(st.filing, key, m.version, m.tail - 1 - i));
        }
        m.tail -= removed;
    }
    m.size -= removed;
    ks.put_meta(&mut b, key, &m);
    ks.write(b)?;
    ks.notify(LIST, "lrem", key);
    Ok(removed)
}

/// LTRIM: keeps the elements from `start` to `stop` (inclusive; negative: from the end), as
/// Redis clamps them; a list left empty is deleted. Raises `ltrim` on an existing list even
/// when nothing is trimmed, as Redis.
pub fn trim(ks: &Keyspace, key: &[u8], start: i64, stop: i64) -> Result<()> {
    let st = ks.store;
    let _g = st.locks.lock(&[key]);
    let Some(mut m) = ks.typed(key, Kind::List)? else {
        return Ok(());
    };
    let len = m.size as i64;
    let start = if start < 0 { (len + start).max(0) } else { start };
    let stop = if stop < 0 { len + stop } else { stop };
    let (ltrim, rtrim) =
        if start > stop || start >= len { (len, 0) } else { (start, len - stop.min(len - 1) - 1) };
    if ltrim == 0 && rtrim == 0 {
        ks.notify(LIST, "ltrim", key);
        return Ok(());
    }
    let mut b = WriteBatch::new();
    if ltrim == len {
        ks.delete_meta(&mut b, key);
        ks.write(b)?;
        ks.notify_removal(LIST, "ltrim", key, true);
        return Ok(());
    }
    for i in 0..ltrim as u64 {
        b.delete_cf(&*st.sub_cf, elem_key(st.filing, key, m.version, m.head + i));
    }
    for i in 0..rtrim as u64 {
        b.delete_cf(&*st.sub_cf, elem_key(st.filing, key, m.version, m.tail - 1 - i));
    }
    m.head += ltrim as u64;
    m.tail -= rtrim as u64;
    m.size -= (ltrim + rtrim) as u64;
    ks.put_meta(&mut b, key, &m);
    ks.write(b)?;
    ks.notify(LIST, "ltrim", key);
    Ok(())
}

/// LPOS: the positions (0-based from the head) of the elements equal to `elem`, skipping
/// the first `rank - 1` matches (negative rank: searching from the tail), at most `count`
/// of them (0: all) among the first `maxlen` elements walked (0: all). `None`: the key is
/// absent.
pub fn positions(
    ks: &Keyspace,
    key: &[u8],
    elem: &[u8],
    rank: i64,
    count: u64,
    maxlen: u64,
) -> Result<Option<Vec<u64>>> {
    let Some(m) = ks.typed(key, Kind::List)? else {
        return Ok(None);
    };
    let reverse = rank < 0;
    let skip = rank.unsigned_abs() - 1;
    let mut found = Vec::new();
    let (mut walked, mut matches) = (0u64, 0u64);
    let from = if reverse { m.tail.to_be_bytes() } else { m.head.to_be_bytes() };
    ks.scan(&ks.store.sub_cf, key, m.version, &from, reverse, |_, v| {
        if maxlen != 0 && walked >= maxlen {
            return false;
        }
        if v == elem {
            matches += 1;
            if matches > skip {
                found.push(if reverse { m.size - 1 - walked } else { walked });
                if count != 0 && found.len() as u64 >= count {
                    return false;
                }
            }
        }
        walked += 1;
        true
    })?;
    Ok(Some(found))
}

/// LRANGE: the elements from `start` to `stop` (inclusive; negative: from the end).
pub fn range(ks: &Keyspace, key: &[u8], start: i64, stop: i64) -> Result<Vec<Vec<u8>>> {
    let mut vals = Vec::new();
    range_each(ks, key, start, stop, |n, v| {
        if vals.is_empty() {
            vals.reserve_exact(n);
        }
        vals.push(v.to_vec());
    })?;
    Ok(vals)
}

/// As [`range`], each element handed to `each` in order, borrowed, with the range's length
/// (the same on every call); no call for an empty range. An error names the key when the
/// list holds fewer elements there than its metadata counts: then what `each` was handed is
/// not the range.
pub fn range_each(
    ks: &Keyspace,
    key: &[u8],
    start: i64,
    stop: i64,
    mut each: impl FnMut(usize, &[u8]),
) -> Result<()> {
    let Some(m) = ks.typed(key, Kind::List)? else {
        return Ok(());
    };
    let len = m.size as i64;
    let start = if start < 0 { (len + start).max(0) } else { start };
    let stop = if stop < 0 { len + stop } else { stop.min(len - 1) };
    if start > stop || start >= len {
        return Ok(());
    }
    let n = (stop - start + 1) as usize;
    let from = (m.head + start as u64).to_be_bytes();
    let mut got = 0;
    ks.scan(&ks.store.sub_cf, key, m.version, &from, false, |_, v| {
        each(n, v);
        got += 1;
        got < n
    })?;
    if got < n {
        return Err(TypeError::Corrupt(format!(
            "the list {:?} counts {len} elements, but only {got} of the {n} from index {start} \
             are stored",
            String::from_utf8_lossy(key)
        )));
    }
    Ok(())
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
    Ok(st.get(&st.sub_cf, &elem_key(st.filing, key, m.version, m.head + i as u64))?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::SyncPolicy;
    use crate::types::compact_hash::Limits;

    /// A range the metadata counts but whose elements are partly missing (a damaged store) is
    /// an error naming the key, never a shorter answer.
    #[test]
    fn a_range_with_missing_elements_is_an_error_not_a_shorter_list() {
        let dir = tempfile::tempdir().unwrap();
        let dbs =
            crate::types::open_databases(strata::Options::default(), dir.path(), SyncPolicy::No, 1)
                .unwrap();
        let store = dbs.store(0).clone();
        let limits = Limits::default();
        let ks = Keyspace::new(&store, &limits, 0);
        let values: Vec<Vec<u8>> =
            ["a", "b", "c", "d"].iter().map(|v| v.as_bytes().to_vec()).collect();
        push(&ks, b"l", End::Right, &values).unwrap();
        assert_eq!(range(&ks, b"l", 0, -1).unwrap(), values);
        let mut seen = Vec::new();
        range_each(&ks, b"l", 1, 2, |n, v| seen.push((n, v.to_vec()))).unwrap();
        assert_eq!(seen, vec![(2, b"b".to_vec()), (2, b"c".to_vec())]);
        range_each(&ks, b"l", 3, 1, |_, _| panic!("an empty range hands nothing over")).unwrap();

        let m = ks.typed(b"l", Kind::List).unwrap().unwrap();
        let mut b = WriteBatch::new();
        b.delete_cf(&*store.sub_cf, elem_key(store.filing, b"l", m.version, m.head + 3));
        store.write(b).unwrap();
        let err = range(&ks, b"l", 0, -1).unwrap_err();
        assert!(
            matches!(&err, TypeError::Corrupt(text) if text.contains("\"l\"") && text.contains("3 of the 4")),
            "{err}"
        );
        assert_eq!(range(&ks, b"l", 0, 2).unwrap(), values[..3].to_vec());
    }
}
