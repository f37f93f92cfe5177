//! The DB's identity (RocksDB's `IDENTITY` file): a text id made when the DB directory is
//! first opened for writing, kept for the DB's life and carried by checkpoints, so a copy
//! can be told apart from an unrelated DB (`Db::get_db_identity`).
//!
//! ```text
//! IDENTITY    the id as text, no newline: 36 characters in the form of a random (v4) UUID
//! ```
//! A DB written by another program may hold any non-empty text there; it is kept as it is.
//! An empty file (a creation cut short before its bytes reached the disk) is replaced.

use std::hash::{BuildHasher, Hasher};
use std::path::Path;

use crate::env::FileSystem;
use crate::error::{Error, Result};
use crate::filename::identity_path;

/// Makes `dir`'s IDENTITY when it has none (or an empty one); its contents otherwise.
pub(crate) fn ensure(fs: &dyn FileSystem, dir: &Path) -> Result<String> {
    if let Some(id) = read(fs, dir)? {
        return Ok(id);
    }
    let id = new_id();
    let path = identity_path(dir);
    let mut f = fs.create(&path)?;
    f.append(id.as_bytes())?;
    f.sync()?;
    drop(f);
    fs.sync_dir(dir)?;
    Ok(id)
}

/// `dir`'s id, `None` when it has no IDENTITY or an empty one.
pub(crate) fn read(fs: &dyn FileSystem, dir: &Path) -> Result<Option<String>> {
    let path = identity_path(dir);
    if !fs.exists(&path) {
        return Ok(None);
    }
    let bytes = fs.open(&path)?.read_all()?;
    let text = String::from_utf8(bytes).map_err(|e| {
        Error::corruption(&path, e.utf8_error().valid_up_to() as u64, "IDENTITY is not UTF-8 text")
    })?;
    let id = text.trim();
    Ok((!id.is_empty()).then(|| id.to_string()))
}

/// A random id in the form of a version-4 UUID. The randomness is the standard library's
/// per-process hash keys mixed with the time and the process id: enough to tell DBs apart,
/// which is all an id is for.
fn new_id() -> String {
    let mut words = [0u64; 2];
    for (i, w) in words.iter_mut().enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        h.write_u32(std::process::id());
        h.write_usize(i);
        *w = h.finish();
    }
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&words[0].to_le_bytes());
    b[8..].copy_from_slice(&words[1].to_le_bytes());
    b[6] = (b[6] & 0x0f) | 0x40; // version 4
    b[8] = (b[8] & 0x3f) | 0x80; // RFC 4122 variant
    let h = b.iter().fold(String::with_capacity(32), |mut h, x| {
        let _ = std::fmt::Write::write_fmt(&mut h, format_args!("{x:02x}"));
        h
    });
    format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::MemFs;

    #[test]
    fn made_once_and_kept() {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        assert_eq!(read(&fs, dir).unwrap(), None);
        let id = ensure(&fs, dir).unwrap();
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4");
        assert_eq!(ensure(&fs, dir).unwrap(), id);
        assert_eq!(read(&fs, dir).unwrap().as_deref(), Some(id.as_str()));
        assert_ne!(new_id(), new_id());
        // An empty file is a creation cut short: replaced.
        fs.create(&identity_path(dir)).unwrap().sync().unwrap();
        assert_eq!(read(&fs, dir).unwrap(), None);
        assert_ne!(ensure(&fs, dir).unwrap(), "");
    }
}
