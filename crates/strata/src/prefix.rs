//! Prefix extractors: how a key's prefix is taken, for `ReadOptions::prefix_same_as_start`
//! (and, later, prefix Bloom filters). A leaf module: options and iterators both use it.

/// How a key's prefix is taken (RocksDB's `SliceTransform`).
#[derive(Clone, Copy, Debug)]
pub enum PrefixExtractor {
    /// The first `n` bytes; a shorter key is its own prefix.
    Fixed(usize),
    /// At most the first `n` bytes.
    Capped(usize),
    /// A user's function (the `rocksdb` crate's `SliceTransform::create`): `transform` is
    /// called only on keys `in_domain` accepts (every key without it); a key outside the
    /// domain is its own prefix.
    Custom {
        /// The prefix of a key in the domain.
        transform: fn(&[u8]) -> &[u8],
        /// Which keys have a prefix.
        in_domain: Option<fn(&[u8]) -> bool>,
    },
    /// Every key is its own prefix (`SliceTransform::create_noop`).
    Noop,
}

/// Two extractors are equal when they take the same prefixes: the same kind and length, or
/// the same functions.
impl PartialEq for PrefixExtractor {
    fn eq(&self, other: &PrefixExtractor) -> bool {
        use PrefixExtractor::{Capped, Custom, Fixed, Noop};
        match (*self, *other) {
            (Fixed(a), Fixed(b)) | (Capped(a), Capped(b)) => a == b,
            (Noop, Noop) => true,
            (Custom { transform: t1, in_domain: d1 }, Custom { transform: t2, in_domain: d2 }) => {
                std::ptr::fn_addr_eq(t1, t2)
                    && match (d1, d2) {
                        (None, None) => true,
                        (Some(a), Some(b)) => std::ptr::fn_addr_eq(a, b),
                        _ => false,
                    }
            }
            _ => false,
        }
    }
}

impl PrefixExtractor {
    /// The prefix of `key`.
    pub fn prefix(self, key: &[u8]) -> &[u8] {
        match self {
            PrefixExtractor::Fixed(n) | PrefixExtractor::Capped(n) => &key[..n.min(key.len())],
            PrefixExtractor::Custom { transform, in_domain } => {
                if in_domain.is_none_or(|f| f(key)) {
                    transform(key)
                } else {
                    key
                }
            }
            PrefixExtractor::Noop => key,
        }
    }
}
