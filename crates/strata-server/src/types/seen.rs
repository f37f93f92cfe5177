//! [`Seen`]: the names (fields, members, keys) one command has met so far, each with a value,
//! so that a name given twice counts once. A command names a few as a rule: up to
//! [`FEW`] are looked for among the earlier ones in turn, which costs less than a keyed hash
//! of each (`docs/measurements.md`, the server rows); past that they go into a hash map, so a
//! command naming thousands stays linear.

use std::collections::HashMap;

/// The most names [`Seen`] looks through in turn.
pub const FEW: usize = 16;

/// Names met so far with a value each (module doc).
pub enum Seen<'a, V = ()> {
    Few(Vec<(&'a [u8], V)>),
    Many(HashMap<&'a [u8], V>),
}

impl<'a, V> Seen<'a, V> {
    /// Room for `n` names, the most the caller will note (a command's count of them): a list
    /// up to [`FEW`], a map past it. A list is searched in turn whatever it grows to.
    pub fn with_capacity(n: usize) -> Self {
        if n <= FEW {
            Seen::Few(Vec::with_capacity(n))
        } else {
            Seen::Many(HashMap::with_capacity(n))
        }
    }

    /// The value noted for `name`.
    pub fn get(&self, name: &[u8]) -> Option<&V> {
        match self {
            Seen::Few(v) => v.iter().find(|(n, _)| *n == name).map(|(_, x)| x),
            Seen::Many(m) => m.get(name),
        }
    }

    /// Whether `name` was noted.
    pub fn contains(&self, name: &[u8]) -> bool {
        self.get(name).is_some()
    }

    /// Notes `name` with `value` (replacing its value if noted before); whether it is new.
    pub fn insert(&mut self, name: &'a [u8], value: V) -> bool {
        match self {
            Seen::Few(v) => match v.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => {
                    slot.1 = value;
                    false
                }
                None => {
                    v.push((name, value));
                    true
                }
            },
            Seen::Many(m) => m.insert(name, value).is_none(),
        }
    }

    /// How many names were noted.
    pub fn len(&self) -> usize {
        match self {
            Seen::Few(v) => v.len(),
            Seen::Many(m) => m.len(),
        }
    }

    /// Whether none was.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<'a> Seen<'a> {
    /// Notes `name`; whether it is new.
    pub fn note(&mut self, name: &'a [u8]) -> bool {
        self.insert(name, ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Both forms answer as a hash map of the same names would, below and past `FEW`.
        #[test]
        fn agrees_with_a_map(names in prop::collection::vec(prop::collection::vec(0u8..4, 0..3), 0..40)) {
            let mut model: HashMap<&[u8], usize> = HashMap::new();
            for cap in [0, names.len()] {
                let mut s = Seen::with_capacity(cap);
                model.clear();
                for (i, n) in names.iter().enumerate() {
                    prop_assert_eq!(s.contains(n), model.contains_key(&n[..]));
                    prop_assert_eq!(s.insert(n, i), model.insert(n, i).is_none());
                    prop_assert_eq!(s.get(n), Some(&i));
                    prop_assert_eq!(s.len(), model.len());
                }
            }
        }
    }

    #[test]
    fn a_list_up_to_few_then_a_map() {
        assert!(matches!(Seen::<()>::with_capacity(FEW), Seen::Few(_)));
        assert!(matches!(Seen::<()>::with_capacity(FEW + 1), Seen::Many(_)));
        let mut s = Seen::with_capacity(2);
        assert!(s.note(b"a") && s.note(b"b") && !s.note(b"a"));
        assert_eq!(s.len(), 2);
    }
}
