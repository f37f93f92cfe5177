//! Whole RDB files: the dataset redis-server saves as dump.rdb and sends a replica in a full
//! synchronization. [`FileReader`] streams one record at a time out of any [`Read`] (holding
//! the largest object at most, never the file); [`FileWriter`] writes one that redis-server
//! 7.0 loads. The values inside are the objects drawn in `super` (a payload's type byte and
//! body). `docs/format/rdb_file.md` mirrors this drawing.
//!
//! ```text
//!  file:     "REDIS" | version: 4 ASCII digits | record* | 0xFF | CRC64 u64LE
//!            version: 0010 written; 0001 to 0012 read (a newer one is refused)
//!            CRC64 (`crc64`): of every byte before it, header and 0xFF included; 0 means
//!            "not computed" and is not checked; absent in versions 1 to 4
//!
//!  record by its first byte (Redis's numbers: never change)
//!   0xFA AUX           string: name | string: value    (redis-ver, redis-bits, ctime,
//!                      used-mem, repl-id, repl-offset, aof-base, ...: any may appear)
//!   0xFE SELECTDB      length: database number          the keys after it are in it
//!   0xFB RESIZEDB      length: keys | length: keys with an expiry    (a sizing hint)
//!   0xFC EXPIRETIME_MS i64LE: Unix ms                   \  each applies to the next key
//!   0xFD EXPIRETIME    i32LE: Unix seconds               | (Redis resets them only after
//!   0xF8 IDLE          length: seconds idle (LRU)        | a key)
//!   0xF9 FREQ          u8: LFU counter                  /
//!   0xF5 FUNCTION2     string: a function library's code
//!   0xF6 FUNCTION      the 7.0 release candidates' library form (drawn in `super`)
//!   0xF7 MODULE_AUX    length: module id | length: 2 | length: when | (length: opcode
//!                      1, 2: length; 3: 4 bytes; 4: 8 bytes; 5: string)* | length: 0
//!                      read and skipped: no modules here
//!   0xF4 SLOT_INFO     length: slot | length: keys | length: expires (7.4, cluster mode):
//!                      read and skipped
//!   0x00..=0x15        a key: the object's type byte | string: key | object body
//!                      (types 6, 7: module values, 22 to 25: 7.4's hashes with field
//!                      expiries: refused)
//!   0xFF EOF           then the checksum
//!
//!  as Redis 7.0 writes one: header | AUX* | FUNCTION2* | (SELECTDB | RESIZEDB | ([0xFC
//!  time] [0xF8 idle | 0xF9 freq] key)*)* | 0xFF | CRC64; the writer here writes IDLE or
//!  FREQ when its caller gives them (`FileWriter::key_used`)
//! ```
//!
//! An object has no length before it: the reader keeps a window of the file and learns how
//! far an object reaches by decoding it (`reader::decode_object`); when the window ends inside
//! it, the decoder says how far the read that ran out wanted to go, and the reader reads on and
//! decodes again. Given the file's size, it reads to twice the window at least each time (a
//! large object is decoded a few times, not once per read) and refuses at once a length that
//! reaches past the end. Without it, it reads only what the decoder asked for (asking the
//! source for more a call, but never waiting for bytes the file may not have: a stream may
//! have nothing more yet), so a source that gives few bytes a call costs a decoding per call
//! inside a large object. Either way a length costs only the bytes actually read: a corrupt
//! one is an error, never an allocation.

use super::reader::{self, ObjectError};
use super::writer::{self, put_len, put_string};
use super::{crc64, types, Encodings, Value, RDB_VERSION};
use std::fmt;
use std::io::{self, Read, Write};

/// The newest RDB version read (Redis 7.4's).
pub const NEWEST_VERSION: u16 = 12;

/// Record opcodes (Redis's; never change). The function records are [`types::FUNCTION_2`]
/// and [`types::FUNCTION_PRE_GA`].
pub mod opcodes {
    pub const SLOT_INFO: u8 = 0xf4;
    pub const MODULE_AUX: u8 = 0xf7;
    pub const IDLE: u8 = 0xf8;
    pub const FREQ: u8 = 0xf9;
    pub const AUX: u8 = 0xfa;
    pub const RESIZEDB: u8 = 0xfb;
    pub const EXPIRETIME_MS: u8 = 0xfc;
    pub const EXPIRETIME: u8 = 0xfd;
    pub const SELECTDB: u8 = 0xfe;
    pub const EOF: u8 = 0xff;
}

/// The least the reader asks its source for at a time.
const MIN_READ: u64 = 64 << 10;
/// The most it asks for at a time.
const MAX_READ: u64 = 1 << 20;

/// One record of an RDB file, in file order.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// An AUX field (redis-ver, redis-bits, ctime, used-mem, repl-id, repl-offset, aof-base,
    /// ...); an integer-encoded value comes as its decimal text.
    Aux { key: Vec<u8>, value: Vec<u8> },
    /// SELECTDB: the database of the keys that follow (keys before any are in database 0).
    Db(u64),
    /// RESIZEDB's hints for the current database.
    Sizes { keys: u64, expires: u64 },
    /// A key of the current database with its value. `expire_ms`: absolute Unix ms (an
    /// EXPIRETIME's seconds converted; a time before 1970 reads as 0, long past);
    /// `idle_secs` from IDLE, `freq` from FREQ.
    Key {
        key: Vec<u8>,
        value: Value,
        expire_ms: Option<u64>,
        idle_secs: Option<u64>,
        freq: Option<u8>,
    },
    /// A function library's code (FUNCTION2; a release candidate's FUNCTION record converted
    /// to the code Redis would make of it).
    Function(Vec<u8>),
}

/// Where and why a file does not read: `"{name}: offset {offset}: {what}"` when displayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileError {
    /// The source, as the reader was given it.
    pub name: String,
    /// The byte offset in the file of what failed (for a file cut short: where it ends).
    pub offset: u64,
    /// What is wrong.
    pub what: String,
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: offset {}: {}", self.name, self.offset, self.what)
    }
}

impl std::error::Error for FileError {}

/// Where the reader is.
enum State {
    /// Reading records.
    Records,
    /// EOF and the checksum read and verified.
    Done,
    /// Stopped at this error; it is returned again.
    Failed(FileError),
}

/// Reads an RDB file record by record from `R`.
pub struct FileReader<R: Read> {
    src: R,
    name: String,
    total: Option<u64>,
    /// The window: `buf[pos..end]` is read and not yet consumed; `buf[..pos]` consumed (kept
    /// until the next compaction); `buf[end..]` room, zeroed once when the buffer grew.
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    /// The file offset of `buf[pos]`: the bytes consumed.
    offset: u64,
    /// The source has returned end of file.
    ended: bool,
    /// The CRC64 of the bytes consumed.
    crc: u64,
    version: u16,
    state: State,
    /// The opcodes before the next key.
    expire_ms: Option<u64>,
    idle_secs: Option<u64>,
    freq: Option<u8>,
}

impl<R: Read> FileReader<R> {
    /// Reads and checks the header. `name` names the source in errors (a path, "the master's
    /// stream"); `total`: the byte count of the file when known (a file's size, the `$<len>`
    /// of a replication transfer), so that a length reaching beyond it is refused at once
    /// instead of read for, and nothing past it is read from `r`.
    pub fn new(r: R, name: &str, total: Option<u64>) -> Result<Self, FileError> {
        let mut f = FileReader {
            src: r,
            name: name.to_string(),
            total,
            buf: Vec::new(),
            pos: 0,
            end: 0,
            offset: 0,
            ended: false,
            crc: 0,
            version: 0,
            state: State::Records,
            expire_ms: None,
            idle_secs: None,
            freq: None,
        };
        let head: [u8; 9] = f.fixed("the header")?;
        if &head[..5] != b"REDIS" {
            return Err(f.error(0, "not an RDB file: it does not start with \"REDIS\""));
        }
        let digits = &head[5..];
        let version = std::str::from_utf8(digits)
            .ok()
            .filter(|d| d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse::<u16>().ok())
            .ok_or_else(|| {
                f.error(5, format!("the version \"{}\" is not 4 digits", digits.escape_ascii()))
            })?;
        if version == 0 || version > NEWEST_VERSION {
            let what =
                format!("RDB version {version} is not read here (1 to {NEWEST_VERSION} are)");
            return Err(f.error(5, what));
        }
        f.version = version;
        Ok(f)
    }

    /// The file's RDB version.
    pub fn version(&self) -> u16 {
        self.version
    }

    /// The next record; Ok(None) once EOF and its checksum are read and verified (a checksum
    /// of 0 is accepted unchecked, as Redis does). After None, further calls return None;
    /// after an error, the same error.
    pub fn next_record(&mut self) -> Result<Option<Record>, FileError> {
        match &self.state {
            State::Records => {}
            State::Done => return Ok(None),
            State::Failed(e) => return Err(e.clone()),
        }
        match self.record() {
            Ok(Some(r)) => Ok(Some(r)),
            Ok(None) => {
                self.state = State::Done;
                Ok(None)
            }
            Err(e) => {
                self.state = State::Failed(e.clone());
                Err(e)
            }
        }
    }

    /// Bytes consumed so far (the offset errors name).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The reader and any bytes read past the end of the RDB (a replication stream continues
    /// with commands after it; with `total` given, none are read past it).
    pub fn into_parts(self) -> (R, Vec<u8>) {
        let rest = self.buf[self.pos..self.end].to_vec();
        (self.src, rest)
    }

    fn error(&self, offset: u64, what: impl Into<String>) -> FileError {
        FileError { name: self.name.clone(), offset, what: what.into() }
    }

    /// Records up to the next one that is not an opcode for the key after it; None at EOF.
    fn record(&mut self) -> Result<Option<Record>, FileError> {
        loop {
            let at = self.offset;
            let [t] = self.fixed::<1>("a record's type")?;
            match t {
                opcodes::EOF => {
                    self.checksum()?;
                    return Ok(None);
                }
                opcodes::SELECTDB => {
                    let db = self.parse(&"SELECTDB's database", reader::decode_len)?;
                    return Ok(Some(Record::Db(db)));
                }
                opcodes::RESIZEDB => {
                    let keys = self.parse(&"RESIZEDB's key count", reader::decode_len)?;
                    let expires = self.parse(&"RESIZEDB's expiry count", reader::decode_len)?;
                    return Ok(Some(Record::Sizes { keys, expires }));
                }
                opcodes::AUX => {
                    let key = self.parse(&"an AUX field's name", reader::decode_string)?;
                    let what = format!("the value of AUX field {}", shown(&key));
                    let value = self.parse(&what, reader::decode_string)?;
                    return Ok(Some(Record::Aux { key, value }));
                }
                opcodes::EXPIRETIME_MS => {
                    let ms = i64::from_le_bytes(self.fixed("EXPIRETIME_MS's time")?);
                    self.expire_ms = Some(u64::try_from(ms).unwrap_or(0));
                }
                opcodes::EXPIRETIME => {
                    let secs = i32::from_le_bytes(self.fixed("EXPIRETIME's time")?);
                    self.expire_ms = Some(u64::try_from(i64::from(secs) * 1000).unwrap_or(0));
                }
                opcodes::IDLE => {
                    self.idle_secs = Some(self.parse(&"IDLE's time", reader::decode_len)?);
                }
                opcodes::FREQ => {
                    let [freq] = self.fixed("FREQ's counter")?;
                    self.freq = Some(freq);
                }
                types::FUNCTION_2 | types::FUNCTION_PRE_GA => {
                    let code =
                        self.parse(&"a function library", |b| reader::decode_function(t, b))?;
                    return Ok(Some(Record::Function(code)));
                }
                opcodes::MODULE_AUX => self.skip_module_aux()?,
                opcodes::SLOT_INFO => {
                    for what in ["SLOT_INFO's slot", "SLOT_INFO's key count", "SLOT_INFO's expires"]
                    {
                        self.parse(&what, reader::decode_len)?;
                    }
                }
                _ => return self.key(t, at).map(Some),
            }
        }
    }

    /// A key of object type `t` (its type byte, at `at`, consumed).
    fn key(&mut self, t: u8, at: u64) -> Result<Record, FileError> {
        let refused = match t {
            types::MODULE | types::MODULE_2 => Some("module values are not supported"),
            22..=25 => Some("hashes with field expiries (Redis 7.4) are not supported"),
            0..=5 | 9..=21 => None,
            _ => Some("unknown record type"),
        };
        if let Some(why) = refused {
            return Err(self.error(at, format!("{why} (type {t})")));
        }
        let key = self.parse(&"a key", reader::decode_string)?;
        // Said only in an error: formatting it for every key was a tenth of a load's time.
        let what = ValueOf { key: &key, t };
        let value = self.parse(&what, |b| reader::decode_object(t, b))?;
        Ok(Record::Key {
            key,
            value,
            expire_ms: self.expire_ms.take(),
            idle_secs: self.idle_secs.take(),
            freq: self.freq.take(),
        })
    }

    /// A module's auxiliary data, read through its self-describing annotations and dropped.
    fn skip_module_aux(&mut self) -> Result<(), FileError> {
        self.parse(&"MODULE_AUX's module id", reader::decode_len)?;
        let at = self.offset;
        if self.parse(&"MODULE_AUX's opcode", reader::decode_len)? != 2 {
            return Err(self.error(at, "MODULE_AUX: bad opcode before its \"when\""));
        }
        self.parse(&"MODULE_AUX's when", reader::decode_len)?;
        loop {
            let at = self.offset;
            match self.parse(&"a MODULE_AUX opcode", reader::decode_len)? {
                0 => return Ok(()),
                1 | 2 => {
                    self.parse(&"a MODULE_AUX integer", reader::decode_len)?;
                }
                3 => {
                    self.fixed::<4>("a MODULE_AUX float")?;
                }
                4 => {
                    self.fixed::<8>("a MODULE_AUX double")?;
                }
                5 => {
                    self.parse(&"a MODULE_AUX string", reader::decode_string)?;
                }
                op => return Err(self.error(at, format!("MODULE_AUX: unknown opcode {op}"))),
            }
        }
    }

    /// The checksum after EOF (consumed, with the CRC of everything before it taken).
    fn checksum(&mut self) -> Result<(), FileError> {
        if self.version < 5 {
            return Ok(());
        }
        let expected = self.crc;
        let at = self.offset;
        let stored = u64::from_le_bytes(self.fixed("the checksum")?);
        if stored != 0 && stored != expected {
            let what = format!(
                "checksum mismatch: the file says {stored:#018x}, its bytes give {expected:#018x}"
            );
            return Err(self.error(at, what));
        }
        Ok(())
    }

    /// `N` bytes.
    fn fixed<const N: usize>(&mut self, what: &str) -> Result<[u8; N], FileError> {
        self.parse(&what, |b: &[u8]| match b.first_chunk::<N>() {
            Some(a) => Ok((*a, N)),
            None => Err(ObjectError::Short { until: N as u64, what: "fixed-size field" }),
        })
    }

    /// Decodes `what` with `f` from the window, reading more while it runs out, and consumes
    /// the bytes it took.
    fn parse<T>(
        &mut self,
        what: &dyn fmt::Display,
        f: impl Fn(&[u8]) -> Result<(T, usize), ObjectError>,
    ) -> Result<T, FileError> {
        loop {
            match f(&self.buf[self.pos..self.end]) {
                Ok((v, n)) => {
                    self.consume(n.min(self.end - self.pos));
                    return Ok(v);
                }
                Err(ObjectError::Bad(b)) => {
                    return Err(self.error(self.offset, format!("{what}: {b}")))
                }
                Err(ObjectError::Short { until, what: part }) => {
                    let have = (self.end - self.pos) as u64;
                    let need = until.max(have + 1);
                    self.fill(need, need.max(have.saturating_mul(2)), what, part)?;
                }
            }
        }
    }

    fn consume(&mut self, n: usize) {
        let next = self.pos + n;
        self.crc = crc64::update(self.crc, &self.buf[self.pos..next]);
        self.pos = next;
        self.offset += n as u64;
    }

    /// Reads until the window holds `need` bytes. With the file's size known it reads on to
    /// `want` bytes (bounded by that size, so they exist), making the window grow
    /// geometrically; otherwise it reads only what `need` requires (asking for up to `want` a
    /// call), as the source may be a stream that has nothing more yet.
    fn fill(
        &mut self,
        need: u64,
        want: u64,
        what: &dyn fmt::Display,
        part: &str,
    ) -> Result<(), FileError> {
        let start = self.offset;
        let need_end = start.saturating_add(need);
        let mut want_end = start.saturating_add(want);
        if let Some(total) = self.total {
            if need_end > total {
                let what = format!(
                    "{what}: a {part} in it needs the bytes up to offset {need_end}, past the end \
                     of the file at offset {total}"
                );
                return Err(self.error(start, what));
            }
            want_end = want_end.min(total);
        }
        // Consumed bytes go once they are as many as the unconsumed ones: each byte is moved
        // a bounded number of times.
        if self.pos > 0 && self.pos >= self.end - self.pos {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
        loop {
            let end = start + (self.end - self.pos) as u64;
            if end >= need_end && (self.ended || self.total.is_none() || end >= want_end) {
                return Ok(());
            }
            if self.ended {
                let what = format!(
                    "truncated: the file ends inside {what} (from offset {start}; a {part} in it \
                     needs the bytes up to offset {need_end})"
                );
                return Err(self.error(end, what));
            }
            let mut room = want_end.max(need_end).saturating_sub(end).clamp(MIN_READ, MAX_READ);
            if let Some(total) = self.total {
                room = room.min(total.saturating_sub(end));
            }
            let room = room as usize;
            if self.buf.len() - self.end < room {
                self.buf.resize(self.end + room, 0);
            }
            let got = loop {
                match self.src.read(&mut self.buf[self.end..self.end + room]) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    r => break r,
                }
            };
            match got {
                Ok(0) => self.ended = true,
                Ok(n) => self.end += n.min(room),
                Err(e) => return Err(self.error(end, format!("reading {what}: {e}"))),
            }
        }
    }
}

/// What a key's value is called in an error message: "the value of key "k" (type t)".
struct ValueOf<'a> {
    key: &'a [u8],
    t: u8,
}

impl fmt::Display for ValueOf<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the value of key {} (type {})", shown(self.key), self.t)
    }
}

/// A key or field name for an error message: escaped, and cut when long.
fn shown(name: &[u8]) -> String {
    const MAX: usize = 64;
    let cut = &name[..name.len().min(MAX)];
    let more = if name.len() > MAX { "..." } else { "" };
    format!("\"{}\"{more}", cut.escape_ascii())
}

/// A key's last use as an RDB file records it (IDLE, FREQ).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Used {
    /// Seconds since the last use (LRU).
    pub idle_secs: Option<u64>,
    /// The LFU counter.
    pub freq: Option<u8>,
}

/// Writes an RDB file that redis-server 7.0 loads, record by record, to `W` (give it a
/// buffered writer: records are written in several small pieces).
pub struct FileWriter<W: Write> {
    w: W,
    /// The CRC64 of the bytes written.
    crc: u64,
    /// A record's leading pieces, reused.
    scratch: Vec<u8>,
}

impl<W: Write> FileWriter<W> {
    /// Writes the header (version [`RDB_VERSION`], i.e. "REDIS0010") and the aux fields given
    /// (an integer's text is written in its integer encoding, as Redis writes redis-bits).
    pub fn new(w: W, aux: &[(&str, &[u8])]) -> io::Result<Self> {
        let mut f = FileWriter { w, crc: 0, scratch: Vec::new() };
        f.scratch.extend_from_slice(format!("REDIS{RDB_VERSION:04}").as_bytes());
        for (key, value) in aux {
            f.scratch.push(opcodes::AUX);
            put_string(&mut f.scratch, key.as_bytes());
            put_string(&mut f.scratch, value);
        }
        f.flush_scratch()?;
        Ok(f)
    }

    /// SELECTDB `db`, then RESIZEDB with its counts of keys and of keys with an expiry.
    pub fn select_db(&mut self, db: u64, keys: u64, expires: u64) -> io::Result<()> {
        self.scratch.push(opcodes::SELECTDB);
        put_len(&mut self.scratch, db);
        self.scratch.push(opcodes::RESIZEDB);
        put_len(&mut self.scratch, keys);
        put_len(&mut self.scratch, expires);
        self.flush_scratch()
    }

    /// A key of the current database: its expiry (absolute Unix ms) when it has one, then the
    /// object type, the key and the object body in the encodings `enc` chooses.
    pub fn key(
        &mut self,
        key: &[u8],
        value: &Value,
        expire_ms: Option<u64>,
        enc: &Encodings,
    ) -> io::Result<()> {
        self.key_used(key, value, expire_ms, Used::default(), enc)
    }

    /// [`FileWriter::key`] with the key's last use: IDLE (seconds idle, under an LRU
    /// policy) or FREQ (the LFU counter), as Redis writes one of them by its
    /// `maxmemory-policy`.
    pub fn key_used(
        &mut self,
        key: &[u8],
        value: &Value,
        expire_ms: Option<u64>,
        used: Used,
        enc: &Encodings,
    ) -> io::Result<()> {
        let object = writer::encode(value, enc);
        let Some((&t, body)) = object.split_first() else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "an object without a type"));
        };
        if let Some(ms) = expire_ms {
            self.scratch.push(opcodes::EXPIRETIME_MS);
            self.scratch.extend_from_slice(&ms.to_le_bytes());
        }
        if let Some(secs) = used.idle_secs {
            self.scratch.push(opcodes::IDLE);
            put_len(&mut self.scratch, secs);
        }
        if let Some(freq) = used.freq {
            self.scratch.push(opcodes::FREQ);
            self.scratch.push(freq);
        }
        self.scratch.push(t);
        put_string(&mut self.scratch, key);
        self.flush_scratch()?;
        self.put(body)
    }

    /// A function library's code (as FUNCTION LOAD takes it).
    pub fn function(&mut self, code: &[u8]) -> io::Result<()> {
        self.scratch.push(types::FUNCTION_2);
        put_string(&mut self.scratch, code);
        self.flush_scratch()
    }

    /// EOF and the CRC64 of everything before it; flushes and returns the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.put(&[opcodes::EOF])?;
        let crc = self.crc;
        self.w.write_all(&crc.to_le_bytes())?;
        self.w.flush()?;
        Ok(self.w)
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.crc = crc64::update(self.crc, bytes);
        self.w.write_all(bytes)
    }

    fn flush_scratch(&mut self) -> io::Result<()> {
        let bytes = std::mem::take(&mut self.scratch);
        let r = self.put(&bytes);
        self.scratch = bytes;
        self.scratch.clear();
        r
    }
}

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;
