//! DUMP and RESTORE: a key's value in Redis 7.0's serialized form (`types::rdb`), so values
//! move between this server and redis-server both ways.
//!
//! RESTORE checks as Redis does and in its order: the options, the key's existence
//! (BUSYKEY without REPLACE), the TTL, the payload's footer (version and checksum), then its
//! body. IDLETIME sets the key's idle time (`storage::access`) unless an LFU
//! `maxmemory-policy` is selected; FREQ its use counter (`storage::frequency`) only then.

use super::args::{int_arg, is};
use super::errors::{CmdError, SYNTAX};
use super::CmdResult;
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::types::rdb::key::{self, Restored};
use crate::types::rdb::{self, Encodings, PayloadError};

/// `BUSYKEY ...`: RESTORE onto an existing key without REPLACE.
pub const BUSYKEY: &str = "BUSYKEY Target key name already exists.";
/// A payload whose footer is wrong.
pub const BAD_VERSION_OR_CHECKSUM: &str = "ERR DUMP payload version or checksum are wrong";
/// A payload whose body does not decode.
pub const BAD_DATA: &str = "ERR Bad data format";

/// The encodings DUMP and an RDB of the dataset (`crate::sync_source`) write values in, by
/// the settings Redis would use for them.
pub fn encodings(sh: &Shared) -> Encodings {
    let d = Encodings::default();
    let params = sh.params.read();
    let get = |name: &str, default: i64| {
        params.get(name).and_then(|v| v.parse::<i64>().ok()).unwrap_or(default)
    };
    let at_least_0 = |v: i64| v.max(0) as u64;
    Encodings {
        set_max_intset_entries: at_least_0(get(
            "set-max-intset-entries",
            d.set_max_intset_entries as i64,
        )),
        zset_max_listpack_entries: at_least_0(get(
            "zset-max-listpack-entries",
            d.zset_max_listpack_entries as i64,
        )),
        zset_max_listpack_value: at_least_0(get(
            "zset-max-listpack-value",
            d.zset_max_listpack_value as i64,
        )),
        hash_max_listpack_entries: sh.hash_limits.entries() as u64,
        hash_max_listpack_value: sh.hash_limits.value() as u64,
        list_max_listpack_size: get("list-max-listpack-size", d.list_max_listpack_size),
    }
}

/// DUMP key
pub fn dump(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    match key::read(&sh.keyspace(c.db), &a[1])? {
        Some(v) => out.bulk(&rdb::encode_payload(&v, &encodings(sh))),
        None => out.null(),
    }
    Ok(())
}

/// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]
pub fn restore(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq) = (None, None);
    let mut i = 4;
    while i < a.len() {
        let more = i + 1 < a.len();
        if is(&a[i], "replace") {
            replace = true;
        } else if is(&a[i], "absttl") {
            absttl = true;
        } else if is(&a[i], "idletime") && more && freq.is_none() {
            let v = int_arg(&a[i + 1])?;
            if v < 0 {
                return Err("ERR Invalid IDLETIME value, must be >= 0".into());
            }
            idle = Some(v);
            i += 1;
        } else if is(&a[i], "freq") && more && idle.is_none() {
            let v = int_arg(&a[i + 1])?;
            if !(0..=255).contains(&v) {
                return Err("ERR Invalid FREQ value, must be >= 0 and <= 255".into());
            }
            freq = Some(v);
            i += 1;
        } else {
            return Err(SYNTAX.into());
        }
        i += 1;
    }
    let ks = sh.keyspace(c.db);
    if !replace && ks.meta(&a[1])?.is_some() {
        return Err(BUSYKEY.into());
    }
    let ttl = int_arg(&a[2])?;
    if ttl < 0 {
        return Err("ERR Invalid TTL value, must be >= 0".into());
    }
    let value = rdb::decode_payload(&a[3]).map_err(|e| {
        CmdError::from(match e {
            PayloadError::VersionOrChecksum => BAD_VERSION_OR_CHECKSUM,
            PayloadError::BadData(_) => BAD_DATA,
        })
    })?;
    let expire_ms = match ttl {
        0 => 0,
        t if absttl => t as u64,
        t => (t as u64).saturating_add(ks.now_ms),
    };
    match key::restore(&ks, &a[1], &value, expire_ms, replace)? {
        Restored::Busy => return Err(BUSYKEY.into()),
        Restored::Written | Restored::Expired(_) => out.ok(),
    }
    if ttl != 0 && !absttl && super::propagation::gathering() {
        // Its replicas get the time it set, as RESTORE ... ABSTTL.
        let mut words: Vec<Vec<u8>> = a.to_vec();
        words[2] = expire_ms.to_string().into_bytes();
        words.push(b"ABSTTL".to_vec());
        let words: Vec<&[u8]> = words.iter().map(Vec::as_slice).collect();
        super::propagation::replace(c.db, &words);
    }
    key::set_use(
        &ks,
        &a[1],
        idle.map(|s| s as u64),
        freq.map(|n| u8::try_from(n).unwrap_or(u8::MAX)),
    );
    Ok(())
}
