//! The replication stream's id and end kept across a clean restart, as redis-server keeps
//! them in the RDB its shutdown saves: a replica restarted with SHUTDOWN or SIGTERM asks its
//! master to resume (PSYNC <id> <end+1>), and a master restarted so resumes its replicas
//! (under a new id, the kept one its second: `lib.rs`), instead of a full sync each
//! (`storage::backlog`).
//!
//! ```text
//! record:  key "replication" in the `server` family
//! value:   <replid: 40 hex digits> SP <end offset: decimal> SP <selected db: decimal, or -1>
//! ```
//!
//! Written (synced) at a clean shutdown, once nothing writes any more and only when the
//! dataset is whole (not while a full sync's load is unfinished); taken at start, where it
//! is deleted (synced) before the server serves, so a process that then dies without a clean
//! shutdown leaves none and syncs in full, as a killed redis-server replica does. A record
//! that does not read is dropped with a line on stderr: a full sync follows, never a resume
//! from a wrong point.

use super::backlog::Backlog;
use super::Engine;

/// The record's key in the `server` family.
pub const KEY: &[u8] = b"replication";

/// The stream's id, end and selected database, as the record holds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ids {
    pub replid: String,
    pub end: u64,
    pub selected: Option<usize>,
}

impl Ids {
    /// The record's value.
    pub fn encode(&self) -> Vec<u8> {
        let db = self.selected.map_or_else(|| "-1".to_string(), |d| d.to_string());
        format!("{} {} {db}", self.replid, self.end).into_bytes()
    }

    /// Reads a record's value; what it expected where it does not.
    pub fn decode(v: &[u8]) -> Result<Ids, String> {
        let text = std::str::from_utf8(v).map_err(|_| "not text".to_string())?;
        let words: Vec<&str> = text.split(' ').collect();
        let [replid, end, db] = words[..] else {
            return Err(format!("{} words, expected 3 (id, offset, database)", words.len()));
        };
        if replid.len() != 40 || !replid.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("id {replid:?}: expected 40 hex digits"));
        }
        let end = end.parse::<u64>().map_err(|_| format!("offset {end:?}: expected a number"))?;
        let selected = match db {
            "-1" => None,
            d => {
                Some(d.parse::<usize>().map_err(|_| format!("database {d:?}: expected a number"))?)
            }
        };
        Ok(Ids { replid: replid.to_string(), end, selected })
    }

    /// `backlog`'s id, end and selected database; `None` while the stream is off (its end
    /// counts no writes).
    pub fn of(backlog: &Backlog) -> Option<Ids> {
        backlog.is_active().then(|| Ids {
            replid: backlog.replid(),
            end: backlog.offset(),
            selected: backlog.selected(),
        })
    }
}

/// Keeps `ids`, taken when the last writer stopped (module doc), in the record, unless the
/// stream moved on since (something wrote after them: the dataset is no longer theirs):
/// whether it did keep them.
pub fn save(engine: &Engine, backlog: &Backlog, ids: &Ids) -> strata::Result<bool> {
    if Ids::of(backlog).as_ref() != Some(ids) {
        return Ok(false);
    }
    engine.write_server_records(&[(KEY.to_vec(), Some(ids.encode()))])?;
    Ok(true)
}

/// Takes the record, if any, and deletes it: the stream goes on from it
/// ([`Backlog::adopt`]). Call it before the server serves.
pub fn restore(engine: &Engine, backlog: &Backlog) -> strata::Result<Option<Ids>> {
    let Some(v) = engine.db.get_cf(&*engine.server_cf, KEY)? else { return Ok(None) };
    engine.write_server_records(&[(KEY.to_vec(), None)])?;
    match Ids::decode(&v) {
        Ok(ids) => {
            backlog.activate();
            backlog.adopt(&ids.replid, ids.end, ids.selected);
            Ok(Some(ids))
        }
        Err(e) => {
            eprintln!("the replication ids kept at the last shutdown do not read ({e}): dropped");
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_reads_back_and_a_bad_one_says_what_it_expected() {
        let id = "0123456789abcdef0123456789abcdef01234567".to_string();
        for selected in [None, Some(0), Some(15)] {
            let ids = Ids { replid: id.clone(), end: 123_456, selected };
            assert_eq!(Ids::decode(&ids.encode()).unwrap(), ids);
        }
        for (bad, says) in [
            (&b"abc 1 0"[..], "40 hex"),
            (b"0123456789abcdef0123456789abcdef01234567 x 0", "offset"),
            (b"0123456789abcdef0123456789abcdef01234567 1 y", "database"),
            (b"0123456789abcdef0123456789abcdef01234567 1", "expected 3"),
            (b"\xff", "not text"),
        ] {
            let e = Ids::decode(bad).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
    }
}
