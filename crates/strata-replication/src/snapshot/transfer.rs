//! Streaming a snapshot's files in chunks, each with its crc32c.
//!
//! The sender reads the files in list order, `chunk_size` bytes at a time ([`ChunkReader`]).
//! The receiver ([`SnapshotReceiver`]) takes the list first and then the chunks strictly in
//! order: a chunk whose checksum, file or offset is not the one expected is refused (the
//! sender starts the transfer over). When the last byte arrived, every file's size and
//! whole-file crc32c are checked against the list, the files and directory are synced, and
//! the result is a [`SnapshotFiles`] ready to install. A receiver dropped unfinished removes
//! what it received.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::error::{Error, Result};
use crate::snapshot::build::RemoveOnDrop;
use crate::snapshot::{fresh_dir, sync_dir, SnapshotFile, SnapshotFiles, FILES_NAME};
use crate::types::GroupId;

/// One piece of one file of a snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Index of the file in the snapshot's list.
    pub file: u32,
    /// Byte offset in that file.
    pub offset: u64,
    /// The bytes.
    pub data: Vec<u8>,
    /// crc32c of `data`.
    pub crc32c: u32,
}

/// Reads a snapshot's files as chunks. Blocking.
pub struct ChunkReader {
    files: SnapshotFiles,
    chunk_size: usize,
    file: usize,
    offset: u64,
}

impl ChunkReader {
    /// A reader of `files` in chunks of at most `chunk_size` bytes.
    pub fn new(files: SnapshotFiles, chunk_size: usize) -> Self {
        ChunkReader { files, chunk_size: chunk_size.max(1), file: 0, offset: 0 }
    }

    /// The next chunk, or `None` after the last one.
    pub fn next_chunk(&mut self) -> Result<Option<Chunk>> {
        loop {
            let Some(f) = self.files.files().get(self.file) else {
                return Ok(None);
            };
            if self.offset >= f.size {
                self.file += 1;
                self.offset = 0;
                continue;
            }
            let path = self.files.path().join(&f.name);
            let n = (f.size - self.offset).min(self.chunk_size as u64) as usize;
            let mut data = vec![0u8; n];
            let read = std::fs::File::open(&path).and_then(|mut h| {
                h.seek(SeekFrom::Start(self.offset))?;
                h.read_exact(&mut data)
            });
            read.map_err(|e| Error::io("read a snapshot chunk", &path, e))?;
            let chunk = Chunk {
                file: self.file as u32,
                offset: self.offset,
                crc32c: crc32c::crc32c(&data),
                data,
            };
            self.offset += n as u64;
            return Ok(Some(chunk));
        }
    }
}

/// Receives one snapshot's files into a fresh directory.
pub struct SnapshotReceiver {
    group: GroupId,
    dir: RemoveOnDrop,
    files: Vec<SnapshotFile>,
    /// The file being received and the bytes of it received so far.
    file: usize,
    offset: u64,
    crc: u32,
    out: Option<std::fs::File>,
}

impl SnapshotReceiver {
    /// Starts receiving `files` of `group` under `root`.
    pub fn new(root: &Path, group: GroupId, files: Vec<SnapshotFile>) -> Result<Self> {
        for f in &files {
            if f.name.is_empty() || f.name.contains('/') || f.name == ".." || f.name == FILES_NAME {
                return Err(Error::snapshot(
                    group,
                    format!("a received file list names {:?}", f.name),
                ));
            }
        }
        let dir = fresh_dir(root, group, "received");
        std::fs::create_dir(&dir)
            .map_err(|e| Error::io(format!("{group}: create a snapshot directory"), &dir, e))?;
        Ok(SnapshotReceiver {
            group,
            dir: RemoveOnDrop(Some(dir)),
            files,
            file: 0,
            offset: 0,
            crc: 0,
            out: None,
        })
    }

    fn path(&self) -> &Path {
        self.dir.0.as_deref().unwrap_or(Path::new(""))
    }

    /// Skips files that are complete (zero-length ones included), checking each.
    fn close_complete_files(&mut self) -> Result<()> {
        while let Some(f) = self.files.get(self.file) {
            if self.offset < f.size {
                return Ok(());
            }
            let path = self.path().join(&f.name);
            let out = match self.out.take() {
                Some(out) => out,
                None => std::fs::File::create(&path)
                    .map_err(|e| Error::io("create a snapshot file", &path, e))?,
            };
            out.sync_data().map_err(|e| Error::io("sync a snapshot file", &path, e))?;
            if self.crc != f.crc32c {
                return Err(Error::snapshot(
                    self.group,
                    format!(
                        "received file {} has crc32c {:#x}, the sender's list says {:#x}",
                        f.name, self.crc, f.crc32c
                    ),
                ));
            }
            self.file += 1;
            self.offset = 0;
            self.crc = 0;
        }
        Ok(())
    }

    /// Takes the next chunk; it must be the one expected and intact.
    pub fn accept(&mut self, chunk: &Chunk) -> Result<()> {
        let g = self.group;
        if crc32c::crc32c(&chunk.data) != chunk.crc32c {
            return Err(Error::snapshot(
                g,
                format!(
                    "chunk of file {} at offset {} fails its checksum",
                    chunk.file, chunk.offset
                ),
            ));
        }
        self.close_complete_files()?;
        let Some(f) = self.files.get(self.file) else {
            return Err(Error::snapshot(
                g,
                format!("chunk of file {} after the last file", chunk.file),
            ));
        };
        if chunk.file as usize != self.file || chunk.offset != self.offset {
            return Err(Error::snapshot(
                g,
                format!(
                    "expected file {} at offset {}, got file {} at offset {}",
                    self.file, self.offset, chunk.file, chunk.offset
                ),
            ));
        }
        if self.offset + chunk.data.len() as u64 > f.size {
            return Err(Error::snapshot(
                g,
                format!("chunk runs past the {} bytes of file {}", f.size, f.name),
            ));
        }
        let path = self.path().join(&f.name);
        if self.out.is_none() {
            self.out = Some(
                std::fs::File::create(&path)
                    .map_err(|e| Error::io("create a snapshot file", &path, e))?,
            );
        }
        if let Some(out) = self.out.as_mut() {
            out.write_all(&chunk.data).map_err(|e| Error::io("write a snapshot file", &path, e))?;
        }
        self.offset += chunk.data.len() as u64;
        self.crc = crc32c::crc32c_append(self.crc, &chunk.data);
        Ok(())
    }

    /// Checks that everything arrived and returns the snapshot's files.
    pub fn finish(mut self) -> Result<SnapshotFiles> {
        self.close_complete_files()?;
        if self.file != self.files.len() {
            return Err(Error::snapshot(
                self.group,
                format!(
                    "transfer ended in file {} of {} at offset {}",
                    self.file,
                    self.files.len(),
                    self.offset
                ),
            ));
        }
        let dir = self.dir.0.take().unwrap_or_default();
        let guard = RemoveOnDrop(Some(dir.clone()));
        sync_dir(&dir).map_err(|e| Error::io("sync the snapshot directory", &dir, e))?;
        let files = std::mem::take(&mut self.files);
        let sealed = SnapshotFiles::seal(self.group, dir, files)?;
        let mut guard = guard;
        guard.0 = None;
        Ok(sealed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(root: &Path) -> SnapshotFiles {
        let dir = root.join("src");
        std::fs::create_dir(&dir).unwrap();
        let mut files = Vec::new();
        for (i, len) in [1000usize, 0, 7].into_iter().enumerate() {
            let data: Vec<u8> = (0..len).map(|b| (b * 31 + i) as u8).collect();
            let name = format!("{i}.sst");
            std::fs::write(dir.join(&name), &data).unwrap();
            files.push(SnapshotFile {
                name,
                cf: "default".into(),
                size: len as u64,
                crc32c: crc32c::crc32c(&data),
            });
        }
        SnapshotFiles::seal(GroupId(4), dir, files).unwrap()
    }

    #[test]
    fn chunks_rebuild_the_files_exactly() {
        let root = tempfile::tempdir().unwrap();
        let src = sample(root.path());
        let mut reader = ChunkReader::new(src.clone(), 64);
        let mut rx = SnapshotReceiver::new(root.path(), GroupId(4), src.files().to_vec()).unwrap();
        let mut n = 0;
        while let Some(c) = reader.next_chunk().unwrap() {
            rx.accept(&c).unwrap();
            n += 1;
        }
        assert_eq!(n, 16 + 1, "1000 bytes in 64-byte chunks, then 7");
        let got = rx.finish().unwrap();
        for f in src.files() {
            assert_eq!(
                std::fs::read(got.path().join(&f.name)).unwrap(),
                std::fs::read(src.path().join(&f.name)).unwrap()
            );
        }
        assert_eq!(SnapshotFiles::load(GroupId(4), got.path()).unwrap().files(), src.files());
    }

    #[test]
    fn damaged_out_of_order_or_missing_chunks_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let src = sample(root.path());
        let chunks: Vec<Chunk> = {
            let mut r = ChunkReader::new(src.clone(), 100);
            std::iter::from_fn(|| r.next_chunk().unwrap()).collect()
        };
        let fresh =
            || SnapshotReceiver::new(root.path(), GroupId(4), src.files().to_vec()).unwrap();

        let mut bad = chunks[0].clone();
        bad.data[5] ^= 1;
        let e = fresh().accept(&bad).unwrap_err().to_string();
        assert!(
            e.contains("group 4: snapshot: chunk of file 0 at offset 0 fails its checksum"),
            "{e}"
        );

        let e = fresh().accept(&chunks[1]).unwrap_err().to_string();
        assert!(e.contains("expected file 0 at offset 0, got file 0 at offset 100"), "{e}");

        let mut rx = fresh();
        rx.accept(&chunks[0]).unwrap();
        let e = rx.finish().unwrap_err().to_string();
        assert!(e.contains("transfer ended in file 0 of 3 at offset 100"), "{e}");

        // A consistent but wrong file (its list checksum disagrees) is refused at its end.
        let mut files = src.files().to_vec();
        files[2].crc32c ^= 1;
        let mut rx = SnapshotReceiver::new(root.path(), GroupId(4), files).unwrap();
        for c in &chunks {
            rx.accept(c).unwrap();
        }
        let e = rx.finish().unwrap_err().to_string();
        assert!(e.contains("received file 2.sst has crc32c"), "{e}");
        let leftovers: Vec<_> = std::fs::read_dir(root.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "failed receivers removed their directories");
    }
}
