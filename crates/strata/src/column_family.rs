//! Column families as the layers below the DB see them: an id, a name rule, and the trait a
//! family handle implements. Everything else of column families (the handle users hold,
//! `ColumnFamily`; the descriptor a family is opened with; each family's live state; creating
//! and dropping families) is `db/cf/`; here is only what write batches and the MANIFEST need,
//! which sit below the DB.
//!
//! Ids are handed out in creation order and never reused (the MANIFEST records the largest
//! used); id 0 is the `default` family, which every DB has and which cannot be dropped.

use std::any::Any;

/// A column family's id, as write batches and the MANIFEST record it.
pub type ColumnFamilyId = u32;

/// The family every DB has, and that the calls without `_cf` use.
pub const DEFAULT_COLUMN_FAMILY_NAME: &str = "default";

/// The id of [`DEFAULT_COLUMN_FAMILY_NAME`].
pub const DEFAULT_COLUMN_FAMILY_ID: ColumnFamilyId = 0;

/// Longest family name accepted (bytes).
pub const MAX_COLUMN_FAMILY_NAME_LEN: usize = 255;

/// Anything that names a column family of an open DB: its handle, or a reference or `Arc`
/// of it (rust-rocksdb's `AsColumnFamilyRef`).
pub trait AsColumnFamilyRef {
    /// The family's id.
    fn cf_id(&self) -> ColumnFamilyId;
    /// The handle itself, for the DB to check it is one of its own.
    #[doc(hidden)]
    fn cf_any(&self) -> &dyn Any;
    /// Bytes of the family's user-defined timestamps (0: it has none).
    fn timestamp_size(&self) -> usize {
        0
    }
}

impl<T: AsColumnFamilyRef + ?Sized> AsColumnFamilyRef for &T {
    fn cf_id(&self) -> ColumnFamilyId {
        (**self).cf_id()
    }
    fn cf_any(&self) -> &dyn Any {
        (**self).cf_any()
    }
    fn timestamp_size(&self) -> usize {
        (**self).timestamp_size()
    }
}

impl<T: AsColumnFamilyRef + ?Sized> AsColumnFamilyRef for std::sync::Arc<T> {
    fn cf_id(&self) -> ColumnFamilyId {
        (**self).cf_id()
    }
    fn cf_any(&self) -> &dyn Any {
        (**self).cf_any()
    }
    fn timestamp_size(&self) -> usize {
        (**self).timestamp_size()
    }
}

/// Checks a family name: non-empty, at most [`MAX_COLUMN_FAMILY_NAME_LEN`] bytes.
pub(crate) fn check_name(name: &str) -> crate::error::Result<()> {
    if name.is_empty() || name.len() > MAX_COLUMN_FAMILY_NAME_LEN {
        return Err(crate::error::Error::InvalidArgument(format!(
            "column family name {name:?}: expected 1 to {MAX_COLUMN_FAMILY_NAME_LEN} bytes"
        )));
    }
    Ok(())
}
