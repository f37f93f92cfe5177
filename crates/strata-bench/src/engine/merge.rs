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
}

impl MergeKind {
    pub fn parse(name: &str) -> Result<Self> {
        Ok(match name {
            "put" | "put_v1" | "PutOperator" => MergeKind::Put,
            "uint64add" | "UInt64AddOperator" => MergeKind::Uint64Add,
            "max" | "MaxOperator" => MergeKind::Max,
            "stringappend" | "StringAppendOperator" => MergeKind::StringAppend,
            "bytesxor" | "BytesXOR" => MergeKind::BytesXor,
            _ => bail!("merge operator '{name}' is not supported by this engine"),
        })
    }

    /// The value after applying `operand` to `existing`.
    pub fn apply(self, existing: Option<&[u8]>, operand: &[u8]) -> Vec<u8> {
        let fixed = |v: &[u8]| <[u8; 8]>::try_from(v).map_or(0, u64::from_le_bytes);
        if let MergeKind::Uint64Add = self {
            return existing.map_or(0, fixed).wrapping_add(fixed(operand)).to_le_bytes().to_vec();
        }
        let Some(e) = existing else { return operand.to_vec() };
        match self {
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
            MergeKind::Put | MergeKind::Uint64Add => operand.to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::MergeKind;

    #[test]
    fn merges() {
        let one = 1u64.to_le_bytes();
        assert_eq!(MergeKind::Uint64Add.apply(None, &one), one.to_vec());
        assert_eq!(MergeKind::Uint64Add.apply(Some(&one), &one), 2u64.to_le_bytes().to_vec());
        assert_eq!(MergeKind::Uint64Add.apply(Some(b"bad"), &one), one.to_vec());
        assert_eq!(MergeKind::Put.apply(Some(b"a"), b"b"), b"b".to_vec());
        assert_eq!(MergeKind::StringAppend.apply(Some(b"a"), b"b"), b"a,b".to_vec());
        assert_eq!(MergeKind::Max.apply(Some(b"a"), b"b"), b"b".to_vec());
        assert_eq!(MergeKind::Max.apply(None, b"b"), b"b".to_vec());
        assert_eq!(MergeKind::BytesXor.apply(Some(&[1, 2]), &[3]), vec![2, 2]);
    }
}
