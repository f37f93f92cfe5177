//! DEBUG DIGEST and DIGEST-VALUE: a 20-byte fingerprint of the whole dataset and of single
//! values, as tests use Redis's to tell whether two datasets or values are the same (before
//! and after DEBUG RELOAD, a COPY against its source). The fingerprint is this server's own:
//! equal contents give equal digests, and the digests are not redis-server's.
//!
//! Built from SHA1 as Redis builds its digest: `mix(d, data)` replaces `d` with
//! `SHA1(d | data)`, an ordered step; XOR joins what has no order.
//!
//! - A value: its type's tag, then a string's bytes; a list's elements in order; a set's
//!   members and a hash's fields with their values each hashed alone and XORed together (no
//!   order); a sorted set's members in order, each with its score written as Redis writes
//!   scores (`%.17g`); a stream's DUMP payload (its nodes, groups and consumers, all in
//!   order). A key with an expiry mixes in its absolute expiry in milliseconds.
//! - The dataset: zero when there are no keys; per database with keys, its number mixed in,
//!   then the XOR of each key's digest (`mix` of the key, then of its value's digest).
//!
//! Keys are read as any reader reads them: a key that has expired counts as gone.

use super::CmdResult;
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::types::keyspace::Keyspace;
use crate::types::rdb::{self, Value};

/// A digest.
pub type Digest = [u8; 20];

fn mix(d: &mut Digest, data: &[u8]) {
    let mut h = sha1_smol::Sha1::new();
    h.update(d);
    h.update(data);
    *d = h.digest().bytes();
}

fn xor(d: &mut Digest, other: &Digest) {
    for (a, b) in d.iter_mut().zip(other) {
        *a ^= b;
    }
}

/// The digest of the pieces of one unordered element, hashed on their own.
fn alone(pieces: &[&[u8]]) -> Digest {
    let mut d = [0; 20];
    for p in pieces {
        mix(&mut d, p);
    }
    d
}

/// The digest of value `v` with expiry `expire_ms` (0: none); `stream` writes a stream's
/// DUMP payload.
pub fn of_value(v: &Value, expire_ms: u64, stream: impl Fn(&Value) -> Vec<u8>) -> Digest {
    let mut d = [0; 20];
    match v {
        Value::String(s) => {
            mix(&mut d, b"string");
            mix(&mut d, s);
        }
        Value::List(items) => {
            mix(&mut d, b"list");
            for i in items {
                mix(&mut d, i);
            }
        }
        Value::Set(members) => {
            mix(&mut d, b"set");
            let mut all = [0; 20];
            for m in members {
                xor(&mut all, &alone(&[m]));
            }
            mix(&mut d, &all);
        }
        Value::Hash(pairs) => {
            mix(&mut d, b"hash");
            let mut all = [0; 20];
            for (f, v) in pairs {
                xor(&mut all, &alone(&[f, v]));
            }
            mix(&mut d, &all);
        }
        Value::ZSet(pairs) => {
            mix(&mut d, b"zset");
            for (m, score) in pairs {
                mix(&mut d, m);
                mix(&mut d, crate::resp::writer::format_double(*score).as_bytes());
            }
        }
        Value::Stream(_) => {
            mix(&mut d, b"stream");
            mix(&mut d, &stream(v));
        }
    }
    if expire_ms != 0 {
        mix(&mut d, b"!!expire!!");
        mix(&mut d, expire_ms.to_string().as_bytes());
    }
    d
}

/// The digest of `key`'s value in `ks`; zeros when there is no such key.
fn of_key(
    ks: &Keyspace,
    key: &[u8],
    stream: &impl Fn(&Value) -> Vec<u8>,
) -> Result<Digest, super::errors::CmdError> {
    let _g = ks.store.locks.lock(&[key]);
    let Some(m) = ks.meta(key)? else { return Ok([0; 20]) };
    let expire = m.expire_ms;
    let v = rdb::key::read_of(ks, key, m)?;
    Ok(of_value(&v, expire, stream))
}

fn hex(d: &Digest) -> String {
    use std::fmt::Write as _;
    d.iter().fold(String::with_capacity(40), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// DEBUG DIGEST: the dataset's digest (module doc).
pub fn dataset(sh: &Shared, out: &mut Out) -> CmdResult {
    let enc = super::dump::encodings(sh);
    let stream = |v: &Value| rdb::encode_payload(v, &enc);
    let mut total = [0; 20];
    for (db, _) in sh.dbs.each() {
        let ks = sh.keyspace(db);
        let mut keys = Vec::new();
        ks.scan_keys(b"", |_, k, _| {
            keys.push(k.to_vec());
            true
        })?;
        if keys.is_empty() {
            continue;
        }
        mix(&mut total, &u32::try_from(db).unwrap_or(u32::MAX).to_be_bytes());
        for k in keys {
            let mut kd = [0; 20];
            mix(&mut kd, &k);
            mix(&mut kd, &of_key(&ks, &k, &stream)?);
            xor(&mut total, &kd);
        }
    }
    out.simple(&hex(&total));
    Ok(())
}

/// DEBUG DIGEST-VALUE key ...: each key's value digest (zeros for a missing key).
pub fn values(sh: &Shared, c: &Conn, keys: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let enc = super::dump::encodings(sh);
    let stream = |v: &Value| rdb::encode_payload(v, &enc);
    let ks = sh.keyspace(c.db);
    out.array(keys.len());
    for k in keys {
        out.simple(&hex(&of_key(&ks, k, &stream)?));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(v: &Value) -> Digest {
        of_value(v, 0, |_| Vec::new())
    }

    fn strings(items: &[&str]) -> Vec<Vec<u8>> {
        items.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn sets_and_hashes_ignore_order_lists_and_sorted_sets_keep_it() {
        let s = |m: &[&str]| Value::Set(strings(m));
        assert_eq!(d(&s(&["a", "b", "c"])), d(&s(&["c", "a", "b"])));
        assert_ne!(d(&s(&["a", "b"])), d(&s(&["a", "c"])));
        let l = |m: &[&str]| Value::List(strings(m));
        assert_ne!(d(&l(&["a", "b"])), d(&l(&["b", "a"])));
        assert_ne!(d(&l(&["a", "b"])), d(&s(&["a", "b"])), "the type counts");
        let h = |p: &[(&str, &str)]| {
            Value::Hash(
                p.iter().map(|(f, v)| (f.as_bytes().to_vec(), v.as_bytes().to_vec())).collect(),
            )
        };
        assert_eq!(d(&h(&[("f", "1"), ("g", "2")])), d(&h(&[("g", "2"), ("f", "1")])));
        // A field's value belongs to its field: swapping values changes the digest.
        assert_ne!(d(&h(&[("f", "1"), ("g", "2")])), d(&h(&[("f", "2"), ("g", "1")])));
        let z = |p: &[(&str, f64)]| {
            Value::ZSet(p.iter().map(|(m, s)| (m.as_bytes().to_vec(), *s)).collect())
        };
        assert_ne!(d(&z(&[("a", 1.0)])), d(&z(&[("a", 2.0)])));
    }

    #[test]
    fn an_expiry_changes_the_digest() {
        let v = Value::String(b"x".to_vec());
        assert_ne!(d(&v), of_value(&v, 1_700_000_000_000, |_| Vec::new()));
        assert_eq!(hex(&[0; 20]), "0".repeat(40));
    }
}
