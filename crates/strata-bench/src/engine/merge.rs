//! Merge operators by db_bench name, for engines that take merge functions from the caller
//! (the memory engine, RocksDB through the Rust crate's callbacks, SQLite).

use anyhow::{bail, Result};

#[derive(Clone, Copy, Debug)]
pub enum MergeKind {
    Put,
    Uint64Add,
    Max,
    StringAppend,
    BytesXor,
    /// RocksDB's `sortlist`: ascending lists of integers merged into one.
    SortList,
}

impl MergeKind {
    pub fn parse(name: &str) -> Result<Self> {
        Ok(match name {
            "put" | "put_v1" | "PutOperator" => MergeKind::Put,
            "uint64add" | "UInt64AddOperator" => MergeKind::Uint64Add,
            "max" | "MaxOperator" => MergeKind::Max,
            "stringappend" | "StringAppendOperator" => MergeKind::StringAppend,
            "bytesxor" | "BytesXOR" => MergeKind::BytesXor,
            "sortlist" | "MyTestSortList" => MergeKind::SortList,
            _ => bail!("merge operator '{name}' is not supported by this engine"),
        })
    }

    /// The value after applying `operand` to `existing`; `None` when the operator cannot
    /// (a `sortlist` value or operand that is not a list of integers).
    pub fn apply(self, existing: Option<&[u8]>, operand: &[u8]) -> Option<Vec<u8>> {
        let fixed = |v: &[u8]| <[u8; 8]>::try_from(v).map_or(0, u64::from_le_bytes);
        match self {
            MergeKind::Uint64Add => {
                let sum = existing.map_or(0, fixed).wrapping_add(fixed(operand));
                return Some(sum.to_le_bytes().to_vec());
            }
            MergeKind::SortList => {
                let op = strata::merge_operator::SortListOperator;
                return strata::MergeOperator::full_merge(&op, b"", existing, &[operand]);
            }
            _ => {}
        }
        let Some(e) = existing else { return Some(operand.to_vec()) };
        Some(match self {
            MergeKind::Max => e.max(operand).to_vec(),
            MergeKind::StringAppend => [e, b",", operand].concat(),
            MergeKind::BytesXor => {
                let mut out = e.to_vec();
                out.resize(e.len().max(operand.len()), 0);
                for (o, b) in out.iter_mut().zip(operand) {
                    *o ^= b;
                }
                out
            }
            MergeKind::Put | MergeKind::Uint64Add | MergeKind::SortList => operand.to_vec(),
        })
    }

    /// The value after applying `operands` (oldest first) to `existing`; `None` as
    /// [`MergeKind::apply`]. A sort list merges all of them at once.
    pub fn apply_all<'a>(
        self,
        existing: Option<&[u8]>,
        operands: impl IntoIterator<Item = &'a [u8]>,
    ) -> Option<Vec<u8>> {
        if let MergeKind::SortList = self {
            let ops: Vec<&[u8]> = operands.into_iter().collect();
            let op = strata::merge_operator::SortListOperator;
            return strata::MergeOperator::full_merge(&op, b"", existing, &ops);
        }
        let mut acc = existing.map(<[u8]>::to_vec);
        for op in operands {
            acc = Some(self.apply(acc.as_deref(), op)?);
        }
        acc
    }
}

#[cfg(test)]
mod tests {
    use super::MergeKind;

    #[test]
    fn merges() {
        let one = 1u64.to_le_bytes();
        let two = 2u64.to_le_bytes();
        assert_eq!(MergeKind::Uint64Add.apply(None, &one), Some(one.to_vec()));
        assert_eq!(MergeKind::Uint64Add.apply(Some(&one), &one), Some(two.to_vec()));
        assert_eq!(MergeKind::Uint64Add.apply(Some(b"bad"), &one), Some(one.to_vec()));
        assert_eq!(MergeKind::Put.apply(Some(b"a"), b"b"), Some(b"b".to_vec()));
        assert_eq!(MergeKind::StringAppend.apply(Some(b"a"), b"b"), Some(b"a,b".to_vec()));
        assert_eq!(MergeKind::Max.apply(Some(b"a"), b"b"), Some(b"b".to_vec()));
        assert_eq!(MergeKind::Max.apply(None, b"b"), Some(b"b".to_vec()));
        assert_eq!(MergeKind::BytesXor.apply(Some(&[1, 2]), &[3]), Some(vec![2, 2]));
        assert_eq!(MergeKind::SortList.apply(Some(b"1,4"), b"2,3"), Some(b"1,2,3,4".to_vec()));
        assert_eq!(MergeKind::SortList.apply(Some(b"1,4"), b"x"), None);
        let ops: [&[u8]; 2] = [b"5", b"0,9"];
        assert_eq!(MergeKind::SortList.apply_all(Some(b"1"), ops), Some(b"0,1,5,9".to_vec()));
        let ops: [&[u8]; 2] = [b"b", b"c"];
        assert_eq!(MergeKind::StringAppend.apply_all(None, ops), Some(b"b,c".to_vec()));
    }
}
