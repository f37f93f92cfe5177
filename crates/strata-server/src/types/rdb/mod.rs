//! Redis's serialized values: the payload DUMP gives and RESTORE takes, and the one FUNCTION
//! DUMP gives and FUNCTION RESTORE takes, in redis-server 7.0's format, so that payloads move
//! between this server and redis-server both ways. [`reader`] decodes every object type
//! Redis 7.0 loads (the older packed encodings included), [`writer`] writes the encodings
//! Redis 7.0 writes; [`key`] turns a key's records into a [`Value`] and back (one batch);
//! [`file`] reads and writes whole RDB files (dump.rdb, a replication full sync) of those
//! values, drawn in its own module. `docs/format/rdb_payload.md` mirrors this drawing.
//!
//! ```text
//!  payload:  +---------+-------------+-------------------+--------------+
//!            | type u8 | object body | RDB version u16LE | CRC64 u64LE  |
//!            +---------+-------------+-------------------+--------------+
//!            version: 10 written; up to 10 read (a newer one is refused)
//!            CRC64 (`crc64`): of every byte before it
//!  FUNCTION DUMP payload: (0xF5 | string: a library's code)* | version | CRC64
//!            (0xF6 | name | engine | length: has description | [description] | code:
//!            the 7.0 release candidates' form, read only)
//!
//!  length:   00xxxxxx                      6 bits
//!            01xxxxxx yyyyyyyy             14 bits, big-endian
//!            10000000 | u32BE, 10000001 | u64BE
//!  string:   length | bytes
//!            11000000 | i8, 11000001 | i16LE, 11000010 | i32LE      an integer, read as
//!                                                                   its decimal text
//!            11000011 | length: compressed | length: plain | LZF data (`lzf`)
//!  time:     i64LE milliseconds
//!
//!  object bodies by type byte (Redis's numbers: never change)
//!   0  string          string (an integer of 32 bits or less written as one)
//!   1  list            length | string*
//!   2  set             length | string*
//!   3  zset            length | (member string | score: u8 length | text)*
//!                      (length 253: NaN, 254: +inf, 255: -inf, no text)
//!   4  hash            length | (field string | value string)*
//!   5  zset 2          length | (member string | score f64LE)*
//!   6, 7               module values: refused (no modules here)
//!   9  hash zipmap     string: a zipmap (`ziplist`)
//!   10 list ziplist    string: a ziplist
//!   11 set intset      string: an intset (`intset`)
//!   12 zset ziplist    string: a ziplist of member, score pairs
//!   13 hash ziplist    string: a ziplist of field, value pairs
//!   14 list quicklist  length | string: a ziplist, per node
//!   15 stream          as 19 without first id, max deleted id, entries added and each
//!                      group's entries read (Redis before 7.0)
//!   16 hash listpack   string: a listpack of field, value pairs (`listpack`)
//!   17 zset listpack   string: a listpack of member, score pairs, in score order
//!   18 list quicklist 2  length | (container length: 1 plain, 2 packed | string)*
//!                      (plain: one element; packed: a listpack of elements)
//!   19 stream 2        length: nodes | (string: master id, 16 bytes BE | string: listpack)*
//!                      | length: entries | last id | first id | max deleted id
//!                      | length: entries added | length: groups | group*
//!      an id here:     length: ms | length: seq
//!      group:          name | last delivered id | length: entries read (2^64-1: unknown)
//!                      | length: PEL size | (id 16 bytes BE | delivery time | length:
//!                      deliveries)* | length: consumers | consumer*
//!      consumer:       name | seen time | length: its PEL | id 16 bytes BE *
//!      a node's listpack: live count | deleted count | field count | fields* | 0
//!                      | entry*, entry = flags (1: deleted, 2: the master's fields)
//!                      | ms - master ms | seq - master seq | [field count | (field
//!                      value)* | or values*] | elements in the entry after its flags
//!   20 set listpack    string: a listpack of members                 \ Redis 7.2's (RDB 11):
//!   21 stream 3        as 19, each consumer's seen time followed by  | read from files only,
//!                      its active time (not kept)                   / RESTORE refuses them
//! ```
//!
//! Decoding never trusts the payload: every length is checked against the bytes left before
//! anything is allocated for it, and a body that does not decode, or decodes into a value
//! Redis would refuse (an empty container, a duplicate member, a NaN score, a stream whose
//! counters do not match its entries), is [`BadData`].

pub mod crc64;
pub mod file;
pub mod intset;
pub mod key;
pub mod listpack;
pub mod lzf;
pub mod reader;
pub mod writer;
pub mod ziplist;

use super::stream::entries::Entry;
use super::stream::StreamId;

/// The RDB version written (Redis 7.0's), and the newest a payload may have (files:
/// [`file::NEWEST_VERSION`]).
pub const RDB_VERSION: u16 = 10;

/// Object type bytes (Redis's; never change).
pub mod types {
    pub const STRING: u8 = 0;
    pub const LIST: u8 = 1;
    pub const SET: u8 = 2;
    pub const ZSET: u8 = 3;
    pub const HASH: u8 = 4;
    pub const ZSET_2: u8 = 5;
    pub const MODULE: u8 = 6;
    pub const MODULE_2: u8 = 7;
    pub const HASH_ZIPMAP: u8 = 9;
    pub const LIST_ZIPLIST: u8 = 10;
    pub const SET_INTSET: u8 = 11;
    pub const ZSET_ZIPLIST: u8 = 12;
    pub const HASH_ZIPLIST: u8 = 13;
    pub const LIST_QUICKLIST: u8 = 14;
    pub const STREAM_LISTPACKS: u8 = 15;
    pub const HASH_LISTPACK: u8 = 16;
    pub const ZSET_LISTPACK: u8 = 17;
    pub const LIST_QUICKLIST_2: u8 = 18;
    pub const STREAM_LISTPACKS_2: u8 = 19;
    /// A set as a listpack of members (RDB 11, Redis 7.2; files only).
    pub const SET_LISTPACK: u8 = 20;
    /// A stream whose consumers carry an active time (RDB 11, Redis 7.2; files only).
    pub const STREAM_LISTPACKS_3: u8 = 21;
    /// A function library (FUNCTION DUMP).
    pub const FUNCTION_2: u8 = 245;
    /// A function library in the 7.0 release candidates' form.
    pub const FUNCTION_PRE_GA: u8 = 246;
}

/// A body that does not decode; says which part (for logs and tests: clients are told
/// Redis's one text for all of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadData(pub &'static str);

impl std::fmt::Display for BadData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "bad {}", self.0)
    }
}

/// Why a payload was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadError {
    /// Shorter than its footer, from a newer RDB version, or its checksum does not match.
    VersionOrChecksum,
    /// The body does not decode.
    BadData(BadData),
}

impl From<BadData> for PayloadError {
    fn from(e: BadData) -> Self {
        PayloadError::BadData(e)
    }
}

/// A value as the payload holds it, whatever the encoding it came in.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A string.
    String(Vec<u8>),
    /// A list's elements, head first.
    List(Vec<Vec<u8>>),
    /// A set's members.
    Set(Vec<Vec<u8>>),
    /// A sorted set's (member, score) pairs.
    ZSet(Vec<(Vec<u8>, f64)>),
    /// A hash's (field, value) pairs.
    Hash(Vec<(Vec<u8>, Vec<u8>)>),
    /// A stream.
    Stream(Box<StreamValue>),
}

/// A stream: its nodes of entries, counters and consumer groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamValue {
    /// The nodes, by master id ascending.
    pub nodes: Vec<StreamNode>,
    /// Entries in the stream.
    pub length: u64,
    /// The greatest id ever added.
    pub last_id: StreamId,
    /// The first entry's id (Redis's recorded first id).
    pub first_id: StreamId,
    /// The greatest id deleted.
    pub max_deleted: StreamId,
    /// Entries ever added.
    pub entries_added: u64,
    /// The consumer groups.
    pub groups: Vec<StreamGroup>,
}

/// A node of a stream: the listpack of entries Redis keeps under one master id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamNode {
    /// The node's key: the first id put in it.
    pub master: StreamId,
    /// The field names its entries share with the master entry.
    pub master_fields: Vec<Vec<u8>>,
    /// Its live entries, in id order.
    pub entries: Vec<Entry>,
    /// Entries marked deleted in it.
    pub deleted: u64,
    /// The last id put in it (deleted or not).
    pub last: StreamId,
    /// Its listpack's size without the live and deleted counters (`stream::node`'s
    /// estimate, exact for a node read from a payload).
    pub body_bytes: u64,
}

/// A consumer group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamGroup {
    /// Its name.
    pub name: Vec<u8>,
    /// The last id delivered to it.
    pub last_id: StreamId,
    /// Entries it read, when known.
    pub entries_read: Option<i64>,
    /// Its pending entries, in id order, each with its consumer.
    pub pending: Vec<PendingEntry>,
    /// Its consumers.
    pub consumers: Vec<StreamConsumer>,
}

/// A delivered, unacknowledged entry of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingEntry {
    /// The entry's id.
    pub id: StreamId,
    /// When it was last delivered (Unix ms).
    pub delivery_ms: u64,
    /// How many times it was delivered.
    pub deliveries: u64,
    /// The consumer it was delivered to.
    pub consumer: Vec<u8>,
}

/// A consumer of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamConsumer {
    /// Its name.
    pub name: Vec<u8>,
    /// When it was last seen (Unix ms).
    pub seen_ms: u64,
}

/// The settings that choose the encodings written (Redis's `*-max-*` thresholds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Encodings {
    /// `set-max-intset-entries`.
    pub set_max_intset_entries: u64,
    /// `zset-max-listpack-entries`.
    pub zset_max_listpack_entries: u64,
    /// `zset-max-listpack-value`.
    pub zset_max_listpack_value: u64,
    /// `hash-max-listpack-entries`.
    pub hash_max_listpack_entries: u64,
    /// `hash-max-listpack-value`.
    pub hash_max_listpack_value: u64,
    /// `list-max-listpack-size`: entries per list node when positive, else a size class
    /// (-1: 4 KiB ... -5: 64 KiB).
    pub list_max_listpack_size: i64,
}

impl Default for Encodings {
    /// Redis 7.0's defaults.
    fn default() -> Self {
        Encodings {
            set_max_intset_entries: 512,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            hash_max_listpack_entries: 128,
            hash_max_listpack_value: 64,
            list_max_listpack_size: -2,
        }
    }
}

/// Appends the footer (version and checksum) to an object's type and body.
pub fn seal(mut body: Vec<u8>) -> Vec<u8> {
    body.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64::crc64(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    body
}

/// Checks a payload's footer: the body before it, and its RDB version.
pub fn open(payload: &[u8]) -> Result<(&[u8], u16), PayloadError> {
    let Some(body_len) = payload.len().checked_sub(10) else {
        return Err(PayloadError::VersionOrChecksum);
    };
    let version = u16::from_le_bytes([payload[body_len], payload[body_len + 1]]);
    let mut crc = [0u8; 8];
    crc.copy_from_slice(&payload[body_len + 2..]);
    if version > RDB_VERSION || crc64::crc64(&payload[..body_len + 2]) != u64::from_le_bytes(crc) {
        return Err(PayloadError::VersionOrChecksum);
    }
    Ok((&payload[..body_len], version))
}

/// RESTORE's decoding: the footer checked, then the value.
pub fn decode_payload(payload: &[u8]) -> Result<Value, PayloadError> {
    let (body, _) = open(payload)?;
    Ok(reader::decode(body)?)
}

/// DUMP's encoding of `value`, with the encodings `enc` chooses.
pub fn encode_payload(value: &Value, enc: &Encodings) -> Vec<u8> {
    seal(writer::encode(value, enc))
}

/// Why a FUNCTION RESTORE payload was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FunctionsError {
    /// The footer is wrong ([`PayloadError::VersionOrChecksum`]).
    VersionOrChecksum,
    /// A record is not a function library.
    NotAFunction,
    /// A record does not decode; names its part as Redis does.
    Unreadable(&'static str),
}

/// FUNCTION DUMP's payload of the libraries' `codes`.
pub fn encode_functions<'a>(codes: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut body = Vec::new();
    for code in codes {
        body.push(types::FUNCTION_2);
        writer::put_string(&mut body, code);
    }
    seal(body)
}

/// FUNCTION RESTORE's decoding: each library's code, in payload order (one in the release
/// candidates' form comes back as the code Redis would make of it).
pub fn decode_functions(payload: &[u8]) -> Result<Vec<Vec<u8>>, FunctionsError> {
    let (body, _) = open(payload).map_err(|_| FunctionsError::VersionOrChecksum)?;
    reader::decode_functions(body)
}

#[cfg(test)]
mod tests;
