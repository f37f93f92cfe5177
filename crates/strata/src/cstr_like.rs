//! Names given as any string type (the `rocksdb` crate's `CStrLike`): `&str`, `String`,
//! `&CStr`, `CString` and the crate's property names. A name is text without NUL bytes.

use std::borrow::Cow;
use std::ffi::{CStr, CString};

use crate::error::{Error, Result};

/// A string usable as a name (of a property, a column family, a transform).
pub trait CStrLike {
    /// The name as text: `InvalidArgument` when it holds a NUL byte or is not UTF-8.
    fn to_name(&self) -> Result<Cow<'_, str>>;
}

fn checked(s: &str) -> Result<Cow<'_, str>> {
    if s.contains('\0') {
        return Err(Error::InvalidArgument(format!("name {s:?} must not contain NUL bytes")));
    }
    Ok(Cow::Borrowed(s))
}

fn from_c(c: &CStr) -> Result<Cow<'_, str>> {
    c.to_str().map(Cow::Borrowed).map_err(|e| {
        Error::InvalidArgument(format!("name {c:?} is not UTF-8 (byte {})", e.valid_up_to()))
    })
}

impl CStrLike for str {
    fn to_name(&self) -> Result<Cow<'_, str>> {
        checked(self)
    }
}

impl CStrLike for String {
    fn to_name(&self) -> Result<Cow<'_, str>> {
        checked(self)
    }
}

impl CStrLike for CStr {
    fn to_name(&self) -> Result<Cow<'_, str>> {
        from_c(self)
    }
}

impl CStrLike for CString {
    fn to_name(&self) -> Result<Cow<'_, str>> {
        from_c(self)
    }
}

impl<T: CStrLike + ?Sized> CStrLike for &T {
    fn to_name(&self) -> Result<Cow<'_, str>> {
        (**self).to_name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!("a.b".to_name().unwrap(), "a.b");
        assert_eq!(String::from("x").to_name().unwrap(), "x");
        assert_eq!(c"rocksdb.stats".to_name().unwrap(), "rocksdb.stats");
        assert_eq!((&&CString::new("y").unwrap()).to_name().unwrap(), "y");
        let e = "a\0b".to_name().unwrap_err().to_string();
        assert!(e.contains("must not contain NUL"), "{e}");
        assert!(c"\xff".to_name().is_err());
    }
}
