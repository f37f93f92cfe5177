//! The metadata entry of a key: one per user key, in the `metadata` column family, keyed by the
//! user key itself.
//!
//! ```text
//!  0       1                 9
//!  +-------+-----------------+---------------------------------------------------+
//!  | flags | expire_ms u64LE | type-specific                                     |
//!  +-------+-----------------+---------------------------------------------------+
//!  flags:      low 4 bits = type, high 4 bits = format (0 or 1)
//!              type (on-disk: never change): 1 string, 2 hash, 3 list, 4 set, 5 zset,
//!              6 stream
//!  expire_ms:  absolute Unix time in milliseconds; 0 = no expiry
//!  format 0 (every type; the only format before compact hashes):
//!    string:           the value bytes (strings keep no sub-keys)
//!    hash, set, zset:  version u64LE | size u64LE
//!    list:             version u64LE | size u64LE | head u64LE | tail u64LE
//!                      (elements live at indexes head..tail, head inclusive, tail exclusive)
//!    stream:           version u64LE | length u64LE | 72 bytes of ids and counters
//!                      (drawn in [`super::stream`]; `value` holds those 72 bytes)
//!  format 1 (hash only): a compact hash, every pair inline, no sub-keys:
//!    hash:             count u32LE | (field_len u32LE | field | value_len u32LE | value)*
//!                      (fields distinct, in the order first set; see
//!                      [`super::compact_hash`])
//! ```
//!
//! `version` names the generation of a composite key in format 0: its sub-keys carry it, so
//! deleting, expiring or overwriting the key only replaces this entry (O(1)); sub-keys of an
//! older version are garbage that the compaction filter removes ([`super::gc`]). A
//! compact hash owns no sub-keys: every sub-key of its user key is garbage.

use std::sync::Arc;

/// The type of a key (the low nibble of `flags`; on-disk: never change).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A string; the value is inline.
    String = 1,
    /// A hash: field -> value sub-keys.
    Hash = 2,
    /// A list: index -> element sub-keys.
    List = 3,
    /// A set: member sub-keys with empty values.
    Set = 4,
    /// A sorted set: member -> score sub-keys plus score-index entries.
    ZSet = 5,
    /// A stream: entries, nodes, consumer groups as sub-keys ([`super::stream`]).
    Stream = 6,
}

impl Kind {
    /// The name TYPE replies with.
    pub fn name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Hash => "hash",
            Kind::List => "list",
            Kind::Set => "set",
            Kind::ZSet => "zset",
            Kind::Stream => "stream",
        }
    }

    fn from_nibble(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::String,
            2 => Kind::Hash,
            3 => Kind::List,
            4 => Kind::Set,
            5 => Kind::ZSet,
            6 => Kind::Stream,
            _ => return None,
        })
    }
}

/// Initial head/tail of an empty list: the middle of the index space, so both ends can grow.
pub const LIST_MIDDLE: u64 = 1 << 63;

/// The payload of a metadata entry (a string's value, a compact hash's pairs, a stream's
/// counters): the bytes after the header, either owned or shared with the whole raw entry
/// they were decoded from ([`Meta::decode_shared`]: the metadata cache's entry, so that a
/// cache hit copies nothing). Reads go through `Deref`; a writer takes the bytes with
/// [`Payload::into_vec`] or edits them with [`Payload::make_mut`], which copy a shared payload.
#[derive(Clone)]
pub struct Payload(Repr);

#[derive(Clone)]
enum Repr {
    Owned(Vec<u8>),
    /// The raw entry and where the payload starts in it (at most its length).
    Shared(Arc<Vec<u8>>, usize),
}

impl Payload {
    /// The payload at `start..` of the raw entry `raw`.
    pub fn shared(raw: Arc<Vec<u8>>, start: usize) -> Payload {
        let start = start.min(raw.len());
        Payload(Repr::Shared(raw, start))
    }

    /// The payload as a vector of its own (copied if shared and not the only holder).
    pub fn into_vec(self) -> Vec<u8> {
        match self.0 {
            Repr::Owned(v) => v,
            Repr::Shared(raw, start) => match Arc::try_unwrap(raw) {
                Ok(mut v) => {
                    v.drain(..start);
                    v
                }
                Err(raw) => raw[start..].to_vec(),
            },
        }
    }

    /// The payload to edit in place (copied first if shared).
    pub fn make_mut(&mut self) -> &mut Vec<u8> {
        if let Repr::Shared(..) = self.0 {
            *self = std::mem::take(self).into_vec().into();
        }
        match &mut self.0 {
            Repr::Owned(v) => v,
            Repr::Shared(..) => unreachable!("made owned above"),
        }
    }
}

impl std::ops::Deref for Payload {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Repr::Owned(v) => v,
            Repr::Shared(raw, start) => &raw[*start..],
        }
    }
}

impl Default for Payload {
    fn default() -> Payload {
        Payload(Repr::Owned(Vec::new()))
    }
}

impl From<Vec<u8>> for Payload {
    fn from(v: Vec<u8>) -> Payload {
        Payload(Repr::Owned(v))
    }
}

impl PartialEq for Payload {
    fn eq(&self, other: &Payload) -> bool {
        **self == **other
    }
}

impl Eq for Payload {}

impl std::fmt::Debug for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

/// A decoded metadata entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    /// The key's type.
    pub kind: Kind,
    /// Absolute expiry in Unix ms; 0 = none.
    pub expire_ms: u64,
    /// Sub-key generation (composite types).
    pub version: u64,
    /// Number of fields/members/elements (composite types).
    pub size: u64,
    /// List head index (inclusive).
    pub head: u64,
    /// List tail index (exclusive).
    pub tail: u64,
    /// The string value (strings), or the compact hash payload (`compact`).
    pub value: Payload,
    /// A compact hash (format 1): `value` holds every pair, `size` their number, `version`
    /// is 0 and there are no sub-keys.
    pub compact: bool,
}

impl Meta {
    /// A new string entry.
    pub fn string(value: Vec<u8>, expire_ms: u64) -> Meta {
        Meta {
            kind: Kind::String,
            expire_ms,
            version: 0,
            size: 0,
            head: 0,
            tail: 0,
            value: value.into(),
            compact: false,
        }
    }

    /// A new, empty compact hash.
    pub fn compact_hash() -> Meta {
        let mut m = Meta::composite(Kind::Hash, 0);
        m.compact = true;
        m.value = super::compact_hash::empty().into();
        m
    }

    /// A new, empty composite entry of `kind` with `version`.
    pub fn composite(kind: Kind, version: u64) -> Meta {
        Meta {
            kind,
            expire_ms: 0,
            version,
            size: 0,
            head: LIST_MIDDLE,
            tail: LIST_MIDDLE,
            value: Payload::default(),
            compact: false,
        }
    }

    /// Whether the key has expired at `now_ms`.
    pub fn expired(&self, now_ms: u64) -> bool {
        self.expire_ms != 0 && self.expire_ms <= now_ms
    }

    /// What `Meta::string(value, expire_ms).encode()` gives, without the copy of `value`
    /// into a `Meta` first (SET and MSET).
    pub fn encode_string(value: &[u8], expire_ms: u64) -> Vec<u8> {
        let mut out = encode_header(Kind::String as u8, expire_ms, value.len());
        out.extend_from_slice(value);
        out
    }

    /// Encodes the entry.
    pub fn encode(&self) -> Vec<u8> {
        let kind = self.kind as u8 | if self.compact { 0x10 } else { 0 };
        let mut out = encode_header(kind, self.expire_ms, 32 + self.value.len());
        if self.compact {
            out.extend_from_slice(&self.value);
            return out;
        }
        match self.kind {
            Kind::String => out.extend_from_slice(&self.value),
            Kind::Hash | Kind::Set | Kind::ZSet => {
                out.extend_from_slice(&self.version.to_le_bytes());
                out.extend_from_slice(&self.size.to_le_bytes());
            }
            Kind::List => {
                out.extend_from_slice(&self.version.to_le_bytes());
                out.extend_from_slice(&self.size.to_le_bytes());
                out.extend_from_slice(&self.head.to_le_bytes());
                out.extend_from_slice(&self.tail.to_le_bytes());
            }
            Kind::Stream => {
                out.extend_from_slice(&self.version.to_le_bytes());
                out.extend_from_slice(&self.size.to_le_bytes());
                out.extend_from_slice(&self.value);
            }
        }
        out
    }

    /// Decodes an entry; `Err` names what is wrong.
    pub fn decode(b: &[u8]) -> Result<Meta, String> {
        let (mut m, start) = Meta::header(b, true)?;
        if let Some(start) = start {
            m.value = b[start..].to_vec().into();
        }
        Ok(m)
    }

    /// The expiry of the entry `b` (0: none) when [`Meta::decode`] accepts it, without
    /// copying its payload: for walks that only count keys (DBSIZE, INFO keyspace).
    pub fn stored_expiry(b: &[u8]) -> Option<u64> {
        Meta::header(b, true).ok().map(|(m, _)| m.expire_ms)
    }

    /// Decodes an entry that [`Meta::decode`] accepted before (a cached copy), without
    /// checking a compact hash's payload again; the payload shares `raw`. Never panics: an
    /// entry that does not decode reads as an empty string.
    pub fn decode_trusted(raw: &Arc<Vec<u8>>) -> Meta {
        Meta::decode_shared(raw, false).unwrap_or_else(|_| Meta::string(Vec::new(), 0))
    }

    /// Decodes the entry `raw` (checking a compact hash's payload when `validate`), its
    /// payload sharing `raw` instead of copying it.
    pub fn decode_shared(raw: &Arc<Vec<u8>>, validate: bool) -> Result<Meta, String> {
        let (mut m, start) = Meta::header(raw, validate)?;
        if let Some(start) = start {
            m.value = Payload::shared(raw.clone(), start);
        }
        Ok(m)
    }

    /// The entry `b` decoded but for its payload, and where the payload starts (`None`: the
    /// kind has none).
    fn header(b: &[u8], validate: bool) -> Result<(Meta, Option<usize>), String> {
        if b.len() < 9 {
            return Err(format!("metadata entry of {} bytes, expected at least 9", b.len()));
        }
        let kind = Kind::from_nibble(b[0] & 0x0f)
            .ok_or_else(|| format!("metadata type {} unknown", b[0] & 0x0f))?;
        match (b[0] >> 4, kind) {
            (0, _) => {}
            (1, Kind::Hash) => {
                let expire_ms = read_u64(b, 1);
                let size = if validate {
                    super::compact_hash::validate(&b[9..])
                        .map_err(|e| format!("{e} (metadata bytes 9..)"))?
                } else {
                    super::compact_hash::count(&b[9..])
                };
                // The payload is attached by the caller: no empty one allocated here.
                let mut m = Meta::composite(Kind::Hash, 0);
                m.compact = true;
                m.expire_ms = expire_ms;
                m.size = size;
                return Ok((m, Some(9)));
            }
            (f, _) => {
                return Err(format!("metadata format {f} unknown for a {}", kind.name()));
            }
        }
        let expire_ms = read_u64(b, 1);
        let mut m = if kind == Kind::String {
            Meta::string(Vec::new(), 0)
        } else {
            Meta::composite(kind, 0)
        };
        m.expire_ms = expire_ms;
        match kind {
            Kind::String => return Ok((m, Some(9))),
            Kind::Hash | Kind::Set | Kind::ZSet => {
                if b.len() != 25 {
                    return Err(format!(
                        "{} metadata of {} bytes, expected 25",
                        kind.name(),
                        b.len()
                    ));
                }
                m.version = read_u64(b, 9);
                m.size = read_u64(b, 17);
            }
            Kind::List => {
                if b.len() != 41 {
                    return Err(format!("list metadata of {} bytes, expected 41", b.len()));
                }
                m.version = read_u64(b, 9);
                m.size = read_u64(b, 17);
                m.head = read_u64(b, 25);
                m.tail = read_u64(b, 33);
            }
            Kind::Stream => {
                let want = 25 + super::stream::META_EXTRA_LEN;
                if b.len() != want {
                    return Err(format!("stream metadata of {} bytes, expected {want}", b.len()));
                }
                m.version = read_u64(b, 9);
                m.size = read_u64(b, 17);
                return Ok((m, Some(25)));
            }
        }
        Ok((m, None))
    }
}

/// The expiry of a raw entry, read from its header alone (`None`: too short to have one):
/// cheap for walks over many keys that decode only the entries it selects.
pub fn raw_expire_ms(b: &[u8]) -> Option<u64> {
    (b.len() >= 9).then(|| read_u64(b, 1))
}

/// An entry's first nine bytes, the kind byte and the expiry, in a buffer with room for `rest`
/// more.
fn encode_header(kind: u8, expire_ms: u64, rest: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(9 + rest);
    out.push(kind);
    out.extend_from_slice(&expire_ms.to_le_bytes());
    out
}

fn read_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_encodes_alike_with_or_without_a_meta() {
        for (v, e) in [(&b"hello"[..], 42), (b"", 0), (&[0xff; 300][..], u64::MAX)] {
            assert_eq!(Meta::encode_string(v, e), Meta::string(v.to_vec(), e).encode());
        }
    }

    #[test]
    fn round_trips_every_kind() {
        let s = Meta::string(b"hello".to_vec(), 42);
        assert_eq!(Meta::decode(&s.encode()).unwrap(), s);
        for kind in [Kind::Hash, Kind::List, Kind::Set, Kind::ZSet] {
            let mut m = Meta::composite(kind, 7);
            m.size = 3;
            m.expire_ms = 9;
            if kind == Kind::List {
                m.head = 5;
                m.tail = 8;
            }
            assert_eq!(Meta::decode(&m.encode()).unwrap(), m);
        }
    }

    /// The walks' light decoding agrees with `decode` on which entries count, and reads
    /// the expiry.
    #[test]
    fn stored_expiry_counts_what_decode_accepts() {
        let mut s = Meta::string(b"value".to_vec(), 0);
        s.expire_ms = 42;
        assert_eq!(Meta::stored_expiry(&s.encode()), Some(42));
        let mut h = Meta::compact_hash();
        h.value = crate::types::compact_hash::encode([(&b"f"[..], &b"v"[..])]).into();
        h.size = 1;
        let raw = h.encode();
        assert_eq!(Meta::stored_expiry(&raw), Some(0));
        let repeated = crate::types::compact_hash::encode([(&b"f"[..], &b""[..]), (b"f", b"")]);
        let mut bad = raw[..9].to_vec();
        bad.extend_from_slice(&repeated);
        for b in [&bad[..], &raw[..5], &[0x0f; 9][..]] {
            assert!(Meta::decode(b).is_err());
            assert_eq!(Meta::stored_expiry(b), None);
        }
    }

    #[test]
    fn compact_hashes_round_trip_and_format_0_still_reads() {
        let mut m = Meta::compact_hash();
        let pairs = [(&b"f1"[..], &b"v1"[..]), (b"f2", b"")];
        m.value = crate::types::compact_hash::encode(pairs).into();
        m.size = 2;
        m.expire_ms = 77;
        let raw = m.encode();
        assert_eq!(raw[0], 0x12);
        assert_eq!(Meta::decode(&raw).unwrap(), m);
        // A format 0 hash entry written before compact hashes existed.
        let mut old = vec![2u8];
        old.extend_from_slice(&5u64.to_le_bytes());
        old.extend_from_slice(&9u64.to_le_bytes());
        old.extend_from_slice(&3u64.to_le_bytes());
        let d = Meta::decode(&old).unwrap();
        assert!(!d.compact);
        assert_eq!((d.kind, d.expire_ms, d.version, d.size), (Kind::Hash, 5, 9, 3));
        // Format 1 is for hashes only; a corrupt payload is an error.
        let mut set = raw.clone();
        set[0] = 0x14;
        assert!(Meta::decode(&set).unwrap_err().contains("format 1 unknown for a set"));
        assert!(Meta::decode(&raw[..raw.len() - 1]).is_err());
        assert!(Meta::decode(&[0x22; 13]).unwrap_err().contains("format 2"));
        let shared = Arc::new(raw.clone());
        assert_eq!(Meta::decode_trusted(&shared), m);
        assert_eq!(Meta::decode_shared(&shared, true).unwrap(), m);
        // Trusted decoding of a bad entry never panics.
        for cut in 0..raw.len() {
            let t = Meta::decode_trusted(&Arc::new(raw[..cut].to_vec()));
            let _ = crate::types::compact_hash::iter(&t.value).count();
        }
    }

    #[test]
    fn a_shared_payload_is_read_in_place_and_copied_on_write() {
        let m = Meta::string(b"hello".to_vec(), 3);
        let raw = Arc::new(m.encode());
        let d = Meta::decode_shared(&raw, true).unwrap();
        assert_eq!((&*d.value, d.expire_ms), (&b"hello"[..], 3));
        assert_eq!(Arc::strong_count(&raw), 2, "the payload shares the raw entry");
        let mut e = d.clone();
        e.value.make_mut().push(b'!');
        assert_eq!(
            (&*e.value, &*d.value, &raw[9..]),
            (&b"hello!"[..], &b"hello"[..], &b"hello"[..])
        );
        assert_eq!(d.value.into_vec(), b"hello");
        assert_eq!(raw[9..], b"hello"[..], "the raw entry is left as it was");
        // The only holder of the raw entry takes it without a copy.
        let alone = Meta::decode_shared(&Arc::new(m.encode()), true).unwrap();
        assert_eq!(alone.value.into_vec(), b"hello");
        // Kinds without a payload share nothing; a composite's fields decode.
        let mut z = Meta::composite(Kind::ZSet, 8);
        z.size = 2;
        let raw = Arc::new(z.encode());
        assert_eq!(Meta::decode_shared(&raw, true).unwrap(), z);
        assert_eq!(Arc::strong_count(&raw), 1);
        assert!(Meta::decode_shared(&Arc::new(vec![1; 5]), true).is_err());
    }

    #[test]
    fn the_header_expiry_matches_the_decoded_one() {
        let mut m = Meta::compact_hash();
        m.expire_ms = 1234;
        assert_eq!(raw_expire_ms(&m.encode()), Some(1234));
        assert_eq!(raw_expire_ms(&Meta::string(b"v".to_vec(), 9).encode()), Some(9));
        assert_eq!(raw_expire_ms(&[2; 8]), None);
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(Meta::decode(b"").is_err());
        assert!(Meta::decode(&[9; 9]).is_err());
        assert!(Meta::decode(&[2; 12]).is_err());
    }
}
