//! Merge operators: read-modify-write without a read. A `merge(key, operand)` records the
//! operand; reads, flushes and compactions combine the operands with the newest base value
//! (or none) through the operator.
//!
//! Built-ins carry db_bench's names: `uint64add`, `put`, `max`, `stringappend`, `bytesxor`,
//! `sortlist`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Combines merge operands. Implementations must be deterministic and associative in the sense
/// that `full_merge(base, [a, b]) == full_merge(base, [partial_merge([a, b])])` whenever
/// `partial_merge` returns `Some`.
pub trait MergeOperator: Send + Sync {
    /// The name stored with the data; reopening with a differently named operator is allowed
    /// but the caller is responsible for compatibility.
    fn name(&self) -> &str;

    /// The value after applying `operands` (oldest first) to `existing` (`None` when the key
    /// had no value or was deleted). `None` means the operands cannot be applied: the read
    /// fails with `Corruption`.
    fn full_merge(
        &self,
        key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>>;

    /// One operand equivalent to `operands` (oldest first, at least two), or `None` when
    /// they cannot be combined without a base value.
    fn partial_merge(&self, _key: &[u8], _operands: &[&[u8]]) -> Option<Vec<u8>> {
        None
    }
}

/// Looks up a built-in operator by its db_bench name (`stringappend` uses ',' as delimiter;
/// `stringappend:X` uses the string X).
pub fn builtin_merge_operator(name: &str) -> Option<Arc<dyn MergeOperator>> {
    let op: Arc<dyn MergeOperator> = match name {
        "uint64add" | "UInt64AddOperator" => Arc::new(UInt64AddOperator::default()),
        "put" | "PutOperator" => Arc::new(PutOperator),
        "max" | "MaxOperator" => Arc::new(MaxOperator),
        "bytesxor" | "BytesXOR" => Arc::new(BytesXorOperator),
        "stringappend" | "StringAppendOperator" => Arc::new(StringAppendOperator::new(b",")),
        "sortlist" | "MyTestSortList" => Arc::new(SortListOperator),
        _ => {
            let delim = name.strip_prefix("stringappend:")?;
            Arc::new(StringAppendOperator::new(delim.as_bytes()))
        }
    };
    Some(op)
}

/// Adds 8-byte little-endian unsigned counters, wrapping on overflow. An operand or base value
/// that is not exactly 8 bytes counts as 0 (as RocksDB's operator does); each such value is
/// counted in [`UInt64AddOperator::malformed`] and reported on stderr once per operator.
#[derive(Default)]
pub struct UInt64AddOperator {
    malformed: AtomicU64,
}

impl UInt64AddOperator {
    /// How many malformed values were treated as 0.
    pub fn malformed(&self) -> u64 {
        self.malformed.load(Ordering::Relaxed)
    }

    fn decode(&self, key: &[u8], v: &[u8]) -> u64 {
        if let Ok(b) = <[u8; 8]>::try_from(v) {
            u64::from_le_bytes(b)
        } else {
            if self.malformed.fetch_add(1, Ordering::Relaxed) == 0 {
                eprintln!(
                    "strata: uint64add: value of {} bytes for key {:?} is not an 8-byte counter; treated as 0",
                    v.len(),
                    String::from_utf8_lossy(key)
                );
            }
            0
        }
    }
}

impl MergeOperator for UInt64AddOperator {
    fn name(&self) -> &str {
        "UInt64AddOperator"
    }

    fn full_merge(
        &self,
        key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>> {
        let mut sum = existing.map_or(0, |v| self.decode(key, v));
        for op in operands {
            sum = sum.wrapping_add(self.decode(key, op));
        }
        Some(sum.to_le_bytes().to_vec())
    }

    fn partial_merge(&self, key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        self.full_merge(key, None, operands)
    }
}

/// The newest operand replaces the value (a merge behaves like a put).
pub struct PutOperator;

impl MergeOperator for PutOperator {
    fn name(&self) -> &str {
        "PutOperator"
    }

    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>> {
        operands.last().copied().or(existing).map(<[u8]>::to_vec).or_else(|| Some(Vec::new()))
    }

    fn partial_merge(&self, _key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        operands.last().map(|o| o.to_vec())
    }
}

/// Keeps the bytewise-largest of the value and the operands.
pub struct MaxOperator;

impl MergeOperator for MaxOperator {
    fn name(&self) -> &str {
        "MaxOperator"
    }

    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>> {
        let max = operands.iter().copied().chain(existing).max().unwrap_or(&[]);
        Some(max.to_vec())
    }

    fn partial_merge(&self, key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        self.full_merge(key, None, operands)
    }
}

/// Appends operands to the value, separated by a delimiter.
pub struct StringAppendOperator {
    delimiter: Vec<u8>,
}

impl StringAppendOperator {
    /// Joins operands with `delimiter`.
    pub fn new(delimiter: &[u8]) -> Self {
        StringAppendOperator { delimiter: delimiter.to_vec() }
    }

    fn join<'a>(&self, parts: impl Iterator<Item = &'a [u8]>) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, p) in parts.enumerate() {
            if i > 0 {
                out.extend_from_slice(&self.delimiter);
            }
            out.extend_from_slice(p);
        }
        out
    }
}

impl MergeOperator for StringAppendOperator {
    fn name(&self) -> &str {
        "StringAppendOperator"
    }

    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>> {
        Some(self.join(existing.into_iter().chain(operands.iter().copied())))
    }

    fn partial_merge(&self, _key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        Some(self.join(operands.iter().copied()))
    }
}

/// XORs operands into the value byte by byte; the shorter side is padded with zero bytes.
pub struct BytesXorOperator;

fn xor_into(acc: &mut Vec<u8>, v: &[u8]) {
    if acc.len() < v.len() {
        acc.resize(v.len(), 0);
    }
    for (a, b) in acc.iter_mut().zip(v) {
        *a ^= b;
    }
}

impl MergeOperator for BytesXorOperator {
    fn name(&self) -> &str {
        "BytesXOR"
    }

    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>> {
        let mut acc = existing.map(<[u8]>::to_vec).unwrap_or_default();
        for op in operands {
            xor_into(&mut acc, op);
        }
        Some(acc)
    }

    fn partial_merge(&self, key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        self.full_merge(key, None, operands)
    }
}

/// Merges ascending lists of integers, each written as decimal numbers separated by ','
/// (RocksDB's `sortlist`, db_bench's `getmergeoperands`): the value is every list's numbers
/// in one ascending list, duplicates kept. A value or operand that is not such a list (an
/// empty one is the empty list) cannot be merged: the read fails.
pub struct SortListOperator;

impl SortListOperator {
    /// Appends the integers of the list `v` to `into`; `None` when `v` is not such a list
    /// (RocksDB's `SortList::MakeVector`).
    pub fn numbers(v: &[u8], into: &mut Vec<i64>) -> Option<()> {
        if v.is_empty() {
            return Some(());
        }
        for n in std::str::from_utf8(v).ok()?.split(',') {
            into.push(n.parse().ok()?);
        }
        Some(())
    }
}

impl MergeOperator for SortListOperator {
    fn name(&self) -> &str {
        "MyTestSortList"
    }

    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>> {
        let mut all = Vec::new();
        for v in existing.into_iter().chain(operands.iter().copied()) {
            Self::numbers(v, &mut all)?;
        }
        // Equal integers are alike: any sort of the concatenation merges the lists.
        all.sort_unstable();
        let mut out = Vec::new();
        for (i, n) in all.iter().enumerate() {
            let sep = if i > 0 { "," } else { "" };
            // Writing into a vector cannot fail.
            let _ = std::io::Write::write_fmt(&mut out, format_args!("{sep}{n}"));
        }
        Some(out)
    }

    fn partial_merge(&self, key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        self.full_merge(key, None, operands)
    }
}

/// The operands of one merge, oldest first (the `rocksdb` crate's `MergeOperands`): what a
/// merge closure iterates.
#[derive(Clone, Copy, Debug)]
pub struct MergeOperands<'a> {
    operands: &'a [&'a [u8]],
}

impl<'a> MergeOperands<'a> {
    /// Operands `operands`, oldest first.
    pub fn new(operands: &'a [&'a [u8]]) -> Self {
        MergeOperands { operands }
    }

    /// How many operands there are.
    pub fn len(&self) -> usize {
        self.operands.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.operands.is_empty()
    }

    /// The operands, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &'a [u8]> + ExactSizeIterator + 'a {
        self.operands.iter().copied()
    }

    /// Operand `i` (0 = oldest), if it exists.
    pub fn get(&self, i: usize) -> Option<&'a [u8]> {
        self.operands.get(i).copied()
    }
}

impl<'a> IntoIterator for &MergeOperands<'a> {
    type Item = &'a [u8];
    type IntoIter = std::iter::Copied<std::slice::Iter<'a, &'a [u8]>>;

    fn into_iter(self) -> Self::IntoIter {
        self.operands.iter().copied()
    }
}

/// A merge function in the `rocksdb` crate's shape, `(key, existing value, operands)` to the
/// result (`None` fails the merge): every such closure is one (`rocksdb::merge_operator::MergeFn`).
pub trait MergeFn:
    Fn(&[u8], Option<&[u8]>, &MergeOperands<'_>) -> Option<Vec<u8>> + Send + Sync + 'static
{
}

impl<F> MergeFn for F where
    F: Fn(&[u8], Option<&[u8]>, &MergeOperands<'_>) -> Option<Vec<u8>> + Send + Sync + 'static
{
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(v: u64) -> Vec<u8> {
        v.to_le_bytes().to_vec()
    }

    #[test]
    fn uint64add_sums_and_tolerates_malformed() {
        let op = UInt64AddOperator::default();
        let r = op.full_merge(b"k", Some(&u(5)), &[&u(1), &u(2)]).unwrap();
        assert_eq!(r, u(8));
        let r = op.full_merge(b"k", None, &[&u(u64::MAX), &u(2)]).unwrap();
        assert_eq!(r, u(1), "wraps");
        let r = op.full_merge(b"k", Some(b"bad"), &[&u(3)]).unwrap();
        assert_eq!(r, u(3));
        assert_eq!(op.malformed(), 1);
        let p = op.partial_merge(b"k", &[&u(1), &u(1)]).unwrap();
        assert_eq!(op.full_merge(b"k", Some(&u(1)), &[&p]).unwrap(), u(3));
    }

    #[test]
    fn builtins_by_name() {
        for n in ["uint64add", "put", "max", "bytesxor", "stringappend", "stringappend:|"] {
            assert!(builtin_merge_operator(n).is_some(), "{n}");
        }
        assert!(builtin_merge_operator("nope").is_none());
        let sa = builtin_merge_operator("stringappend").unwrap();
        assert_eq!(sa.full_merge(b"k", Some(b"a"), &[b"b", b"c"]).unwrap(), b"a,b,c");
        assert_eq!(sa.full_merge(b"k", None, &[b"b"]).unwrap(), b"b");
        let p = sa.partial_merge(b"k", &[b"b", b"c"]).unwrap();
        assert_eq!(sa.full_merge(b"k", Some(b"a"), &[&p]).unwrap(), b"a,b,c");
        let max = builtin_merge_operator("max").unwrap();
        assert_eq!(max.full_merge(b"k", Some(b"b"), &[b"a", b"c"]).unwrap(), b"c");
        let put = builtin_merge_operator("put").unwrap();
        assert_eq!(put.full_merge(b"k", Some(b"old"), &[b"x", b"y"]).unwrap(), b"y");
        let x = builtin_merge_operator("bytesxor").unwrap();
        assert_eq!(x.full_merge(b"k", Some(&[1, 2]), &[&[1, 0, 4]]).unwrap(), vec![0, 2, 4]);
    }

    #[test]
    fn sortlist_merges_ascending_lists_and_refuses_what_is_not_one() {
        let op = builtin_merge_operator("sortlist").unwrap();
        assert_eq!(op.name(), "MyTestSortList");
        let r = op.full_merge(b"k", Some(b"2,9"), &[b"1,5", b"-3,5,10", b""]).unwrap();
        assert_eq!(r, b"-3,1,2,5,5,9,10");
        assert_eq!(op.full_merge(b"k", None, &[b""]).unwrap(), b"");
        let p = op.partial_merge(b"k", &[b"4", b"3,8"]).unwrap();
        assert_eq!(op.full_merge(b"k", Some(b"1"), &[&p]).unwrap(), b"1,3,4,8");
        for bad in [&b"1,,2"[..], b"x", b"1,2,", b"\xff"] {
            assert_eq!(op.full_merge(b"k", None, &[bad]), None, "{bad:?}");
        }
    }
}
