//! Wide-column entities (RocksDB's `PutEntity`/`GetEntity`): a key whose value is a set of
//! named columns, stored as one entry of type `ValueType::Entity` whose value is the encoding
//! below. The column named "" is the *default column*: a plain `get` of an entity reads it
//! (empty when the entity has none), a merge applies to it, and a plain value read as an
//! entity is one default column.
//!
//! ```text
//! entity := version: u8 = 1 | count: varint32 | column{count} | value{count}
//! column := name_len: varint32 | name | value_len: varint32
//! value  := the column's value bytes, the columns' values in column order
//! ```
//!
//! Columns are in ascending bytewise order of their names, each name once. The names come
//! first so that a reader finds one column's value (the default column is always the first
//! when present) without walking the values. Mirrored in `docs/format/wide_columns.md`.
//! on-disk: never change version 1.

use crate::error::{Error, Result};
use crate::util::coding::{put_varint32, Reader};

/// The name of the default column (RocksDB's `kDefaultWideColumnName`).
pub const DEFAULT_COLUMN_NAME: &[u8] = b"";

/// The only version this build writes and reads.
const VERSION: u8 = 1;

/// An entity's columns, owned, in ascending order of their names, each name once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WideColumns {
    columns: Vec<(Vec<u8>, Vec<u8>)>,
}

impl WideColumns {
    /// No columns.
    pub fn new() -> WideColumns {
        WideColumns::default()
    }

    /// The columns given, sorted by name (as RocksDB's `PutEntity` sorts them).
    /// `InvalidArgument` when a name is given twice.
    pub fn from_columns<N: AsRef<[u8]>, V: AsRef<[u8]>>(columns: &[(N, V)]) -> Result<WideColumns> {
        let mut columns: Vec<(Vec<u8>, Vec<u8>)> =
            columns.iter().map(|(n, v)| (n.as_ref().to_vec(), v.as_ref().to_vec())).collect();
        columns.sort_by(|a, b| a.0.cmp(&b.0));
        if let Some(w) = columns.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(Error::InvalidArgument(format!(
                "wide columns: column {:?} given twice",
                String::from_utf8_lossy(&w[0].0)
            )));
        }
        Ok(WideColumns { columns })
    }

    /// These columns with the default column's value replaced by `value` (added first when
    /// there was none): what a merge onto an entity makes.
    pub(crate) fn with_default_value(mut self, value: Vec<u8>) -> WideColumns {
        match self.columns.first_mut() {
            Some((name, v)) if name.is_empty() => *v = value,
            _ => self.columns.insert(0, (DEFAULT_COLUMN_NAME.to_vec(), value)),
        }
        self
    }

    /// A plain value read as an entity: its one default column.
    pub fn from_plain_value(value: Vec<u8>) -> WideColumns {
        WideColumns { columns: vec![(DEFAULT_COLUMN_NAME.to_vec(), value)] }
    }

    /// Decodes an entity's encoding (as a DB, a table or a batch holds it).
    pub(crate) fn decode(entity: &[u8]) -> Result<WideColumns> {
        let columns = decode(entity)?.into_iter().map(|(n, v)| (n.to_vec(), v.to_vec())).collect();
        Ok(WideColumns { columns })
    }

    /// The number of columns.
    pub fn len(&self) -> usize {
        self.columns.len()
    }

    /// Whether there are no columns.
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// `(name, value)` of each column, in ascending order of the names.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&[u8], &[u8])> + '_ {
        self.columns.iter().map(|(n, v)| (n.as_slice(), v.as_slice()))
    }

    /// The value of the column named `name`.
    pub fn get(&self, name: &[u8]) -> Option<&[u8]> {
        self.columns
            .binary_search_by(|(n, _)| n.as_slice().cmp(name))
            .ok()
            .map(|i| self.columns[i].1.as_slice())
    }

    /// The default column's value, if the entity has one.
    pub fn default_value(&self) -> Option<&[u8]> {
        self.get(DEFAULT_COLUMN_NAME)
    }

    /// The columns, owned.
    pub fn into_vec(self) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.columns
    }

    /// The encoding of these columns.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let pairs: Vec<(&[u8], &[u8])> = self.iter().collect();
        encode(&pairs)
    }
}

/// The encoding of `columns`, which must be sorted by name without repeats.
pub(crate) fn encode(columns: &[(&[u8], &[u8])]) -> Vec<u8> {
    debug_assert!(columns.windows(2).all(|w| w[0].0 < w[1].0), "columns not sorted");
    let bytes: usize = columns.iter().map(|(n, v)| n.len() + v.len() + 10).sum();
    let mut out = Vec::with_capacity(1 + 5 + bytes);
    out.push(VERSION);
    put_varint32(&mut out, columns.len() as u32);
    for (n, v) in columns {
        put_varint32(&mut out, n.len() as u32);
        out.extend_from_slice(n);
        put_varint32(&mut out, v.len() as u32);
    }
    for (_, v) in columns {
        out.extend_from_slice(v);
    }
    out
}

fn malformed(reason: impl std::fmt::Display) -> Error {
    Error::corruption("", 0, format!("malformed wide-column entity: {reason}"))
}

/// The columns of an encoded entity, borrowed from it, checked: the version, every length
/// within the bytes, the names ascending without repeats and no bytes left over.
pub(crate) fn decode(entity: &[u8]) -> Result<Vec<(&[u8], &[u8])>> {
    let mut r = Reader::new(entity);
    let version = r.u8().ok_or_else(|| malformed("empty"))?;
    if version != VERSION {
        return Err(malformed(format!("version {version}, this build reads version {VERSION}")));
    }
    let count = r.varint32().ok_or_else(|| malformed("bad column count"))? as usize;
    // Each column takes at least two bytes of the index: a count above that is damage.
    if count > entity.len() / 2 {
        return Err(malformed(format!("{count} columns in {} bytes", entity.len())));
    }
    let mut index = Vec::with_capacity(count);
    for i in 0..count {
        let name = r
            .varint32()
            .and_then(|n| r.bytes(n as usize))
            .ok_or_else(|| malformed(format!("bad name of column {i}")))?;
        let len = r.varint32().ok_or_else(|| malformed(format!("bad size of column {i}")))?;
        index.push((name, len as usize));
    }
    let mut columns = Vec::with_capacity(count);
    for (i, (name, len)) in index.into_iter().enumerate() {
        let value = r
            .bytes(len)
            .ok_or_else(|| malformed(format!("value of column {i} runs past the end")))?;
        if let Some((prev, _)) = columns.last() {
            if *prev >= name {
                return Err(malformed(format!("column {i}'s name is not above the one before")));
            }
        }
        columns.push((name, value));
    }
    if !r.is_empty() {
        return Err(malformed(format!(
            "{} bytes after the last value",
            entity.len() - r.position()
        )));
    }
    Ok(columns)
}

/// The default column's value of an encoded entity: empty when it has none (what a plain
/// `get` of the entity returns).
pub(crate) fn default_value(entity: &[u8]) -> Result<&[u8]> {
    Ok(decode(entity)?.first().filter(|(n, _)| n.is_empty()).map_or(&[][..], |(_, v)| *v))
}

/// `entity` with its default column's value replaced by `value` (added when it had none):
/// what a merge onto an entity makes.
pub(crate) fn with_default_value(entity: &[u8], value: &[u8]) -> Result<Vec<u8>> {
    let mut columns = decode(entity)?;
    match columns.first_mut() {
        Some((&[], v)) => *v = value,
        _ => columns.insert(0, (DEFAULT_COLUMN_NAME, value)),
    }
    Ok(encode(&columns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_encode_sorted_and_decode_back() {
        let c = WideColumns::from_columns(&[("b", "2"), ("", "d"), ("a", "")]).unwrap();
        let names: Vec<&[u8]> = c.iter().map(|(n, _)| n).collect();
        assert_eq!(names, [&b""[..], b"a", b"b"]);
        let e = c.encode();
        assert_eq!(e, [1, 3, 0, 1, 1, b'a', 0, 1, b'b', 1, b'd', b'2']);
        assert_eq!(WideColumns::decode(&e).unwrap(), c);
        assert_eq!(default_value(&e).unwrap(), b"d");
        assert_eq!(c.get(b"b"), Some(&b"2"[..]));
        assert_eq!(c.get(b"c"), None);
    }

    #[test]
    fn a_name_given_twice_is_refused() {
        let e = WideColumns::from_columns(&[("x", "1"), ("x", "2")]).unwrap_err();
        assert!(e.to_string().contains("\"x\" given twice"), "{e}");
    }

    #[test]
    fn no_default_column_reads_as_empty_and_a_merge_adds_one() {
        let e = WideColumns::from_columns(&[("a", "1")]).unwrap().encode();
        assert_eq!(default_value(&e).unwrap(), b"");
        let m = with_default_value(&e, b"v").unwrap();
        let c = WideColumns::decode(&m).unwrap();
        assert_eq!(c.default_value(), Some(&b"v"[..]));
        assert_eq!(c.get(b"a"), Some(&b"1"[..]));
        let m2 = with_default_value(&m, b"w").unwrap();
        assert_eq!(WideColumns::decode(&m2).unwrap().len(), 2);
        assert_eq!(default_value(&m2).unwrap(), b"w");
        assert_eq!(decode(&encode(&[])).unwrap(), vec![]);
    }

    #[test]
    fn damage_is_an_error_naming_what_is_wrong() {
        let good = WideColumns::from_columns(&[("", "v"), ("n", "w")]).unwrap().encode();
        for cut in 0..good.len() {
            assert!(decode(&good[..cut]).is_err(), "a cut at {cut} decoded");
        }
        let mut extra = good.clone();
        extra.push(0);
        assert!(decode(&extra).unwrap_err().to_string().contains("after the last value"));
        let mut v2 = good.clone();
        v2[0] = 2;
        assert!(decode(&v2).unwrap_err().to_string().contains("version 2"));
        let unsorted = [1, 2, 1, b'b', 0, 1, b'a', 0];
        assert!(decode(&unsorted).unwrap_err().to_string().contains("not above"));
        let huge = [1, 0xff, 0xff, 0xff, 0xff, 0x0f];
        assert!(decode(&huge).unwrap_err().to_string().contains("columns in"));
    }
}
