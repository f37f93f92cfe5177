//! LINSERT, LSET, LREM, LTRIM, LPOS, LPUSHX/RPUSHX with Redis 7.0's exact replies and errors
//! (including which check Redis makes first).

use crate::common::{Raw, Reply, Server};

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const SYNTAX: &str = "ERR syntax error";
const NOT_INT: &str = "ERR value is not an integer or out of range";

fn ok() -> Reply {
    Reply::Simple("OK".into())
}

fn err(s: &str) -> Reply {
    Reply::Error(s.into())
}

fn list(items: &[&str]) -> Reply {
    Reply::Array(items.iter().map(|s| Reply::bulk(s)).collect())
}

fn ints(v: &[i64]) -> Reply {
    Reply::Array(v.iter().map(|&n| Reply::Int(n)).collect())
}

fn all(c: &mut Raw, key: &str) -> Reply {
    c.cmd(&["LRANGE", key, "0", "-1"])
}

#[test]
fn linsert_inserts_at_the_first_pivot() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmd(&["RPUSH", "l", "a", "b", "c", "b", "d"]);
    assert_eq!(c.cmd(&["LINSERT", "l", "BEFORE", "b", "X"]), Reply::Int(6));
    assert_eq!(all(&mut c, "l"), list(&["a", "X", "b", "c", "b", "d"]));
    assert_eq!(c.cmd(&["linsert", "l", "after", "b", "Y"]), Reply::Int(7));
    assert_eq!(all(&mut c, "l"), list(&["a", "X", "b", "Y", "c", "b", "d"]));
    assert_eq!(c.cmd(&["LINSERT", "l", "AFTER", "d", "Z"]), Reply::Int(8));
    assert_eq!(c.cmd(&["LINSERT", "l", "BEFORE", "a", "W"]), Reply::Int(9));
    assert_eq!(c.cmd(&["LINSERT", "l", "AFTER", "c", "V"]), Reply::Int(10));
    assert_eq!(all(&mut c, "l"), list(&["W", "a", "X", "b", "Y", "c", "V", "b", "d", "Z"]));
    // Both ends still work after the shifts.
    c.cmd(&["LPUSH", "l", "h"]);
    c.cmd(&["RPUSH", "l", "t"]);
    assert_eq!(c.cmd(&["LINDEX", "l", "0"]), Reply::bulk("h"));
    assert_eq!(c.cmd(&["LINDEX", "l", "-1"]), Reply::bulk("t"));
    assert_eq!(c.cmd(&["LLEN", "l"]), Reply::Int(12));
    assert_eq!(c.cmd(&["LINSERT", "l", "BEFORE", "nosuch", "v"]), Reply::Int(-1));
    assert_eq!(c.cmd(&["LINSERT", "absent", "BEFORE", "a", "v"]), Reply::Int(0));
    assert_eq!(c.cmd(&["EXISTS", "absent"]), Reply::Int(0));
    // The position word is checked before the key.
    assert_eq!(c.cmd(&["LINSERT", "absent", "MIDDLE", "a", "v"]), err(SYNTAX));
    c.cmd(&["SET", "s", "x"]);
    assert_eq!(c.cmd(&["LINSERT", "s", "BEFORE", "a", "v"]), err(WRONGTYPE));
    assert_eq!(
        c.cmd(&["LINSERT", "l", "BEFORE", "a"]),
        err("ERR wrong number of arguments for 'linsert' command")
    );
}

#[test]
fn lset_replaces_or_names_the_problem() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmd(&["RPUSH", "l", "a", "b", "c"]);
    assert_eq!(c.cmd(&["LSET", "l", "0", "A"]), ok());
    assert_eq!(c.cmd(&["LSET", "l", "-1", "C"]), ok());
    assert_eq!(all(&mut c, "l"), list(&["A", "b", "C"]));
    let range = err("ERR index out of range");
    assert_eq!(c.cmd(&["LSET", "l", "3", "x"]), range);
    assert_eq!(c.cmd(&["LSET", "l", "-4", "x"]), range);
    // The key is looked up before the index is read.
    assert_eq!(c.cmd(&["LSET", "absent", "0", "x"]), err("ERR no such key"));
    assert_eq!(c.cmd(&["LSET", "absent", "abc", "x"]), err("ERR no such key"));
    assert_eq!(c.cmd(&["LSET", "l", "abc", "x"]), err(NOT_INT));
    c.cmd(&["SET", "s", "x"]);
    assert_eq!(c.cmd(&["LSET", "s", "abc", "x"]), err(WRONGTYPE));
    assert_eq!(all(&mut c, "l"), list(&["A", "b", "C"]));
}

#[test]
fn lrem_removes_from_either_end() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmd(&["RPUSH", "r", "a", "b", "a", "c", "a", "b"]);
    assert_eq!(c.cmd(&["LREM", "r", "2", "a"]), Reply::Int(2));
    assert_eq!(all(&mut c, "r"), list(&["b", "c", "a", "b"]));
    assert_eq!(c.cmd(&["LREM", "r", "-1", "b"]), Reply::Int(1));
    assert_eq!(all(&mut c, "r"), list(&["b", "c", "a"]));
    assert_eq!(c.cmd(&["LREM", "r", "0", "z"]), Reply::Int(0));
    c.cmd(&["RPUSH", "r", "b", "b", "x"]);
    assert_eq!(c.cmd(&["LREM", "r", "0", "b"]), Reply::Int(3));
    assert_eq!(all(&mut c, "r"), list(&["c", "a", "x"]));
    c.cmd(&["LPUSH", "r", "h"]);
    c.cmd(&["RPUSH", "r", "t"]);
    assert_eq!(all(&mut c, "r"), list(&["h", "c", "a", "x", "t"]));
    assert_eq!(c.cmd(&["LREM", "r", "abc", "a"]), err(NOT_INT));
    assert_eq!(c.cmd(&["LREM", "absent", "1", "a"]), Reply::Int(0));
    for v in ["h", "c", "a", "x"] {
        assert_eq!(c.cmd(&["LREM", "r", "-5", v]), Reply::Int(1));
    }
    assert_eq!(c.cmd(&["LREM", "r", "1", "t"]), Reply::Int(1));
    assert_eq!(c.cmd(&["EXISTS", "r"]), Reply::Int(0));
    c.cmd(&["SET", "s", "x"]);
    assert_eq!(c.cmd(&["LREM", "s", "0", "x"]), err(WRONGTYPE));
}

#[test]
fn ltrim_keeps_the_range() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmd(&["RPUSH", "t", "1", "2", "3", "4", "5"]);
    assert_eq!(c.cmd(&["LTRIM", "t", "1", "-2"]), ok());
    assert_eq!(all(&mut c, "t"), list(&["2", "3", "4"]));
    assert_eq!(c.cmd(&["LTRIM", "t", "-100", "100"]), ok());
    assert_eq!(all(&mut c, "t"), list(&["2", "3", "4"]));
    assert_eq!(c.cmd(&["LTRIM", "t", "1", "1"]), ok());
    assert_eq!(all(&mut c, "t"), list(&["3"]));
    c.cmd(&["RPUSH", "t", "x"]);
    assert_eq!(all(&mut c, "t"), list(&["3", "x"]));
    assert_eq!(c.cmd(&["LTRIM", "t", "5", "10"]), ok());
    assert_eq!(c.cmd(&["EXISTS", "t"]), Reply::Int(0));
    c.cmd(&["RPUSH", "t", "1", "2"]);
    assert_eq!(c.cmd(&["LTRIM", "t", "1", "0"]), ok());
    assert_eq!(c.cmd(&["EXISTS", "t"]), Reply::Int(0));
    assert_eq!(c.cmd(&["LTRIM", "absent", "0", "1"]), ok());
    assert_eq!(c.cmd(&["LTRIM", "t", "a", "1"]), err(NOT_INT));
    c.cmd(&["SET", "s", "x"]);
    assert_eq!(c.cmd(&["LTRIM", "s", "0", "1"]), err(WRONGTYPE));
}

#[test]
fn lpos_finds_matches_by_rank_count_and_maxlen() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmd(&["RPUSH", "p", "a", "b", "c", "1", "2", "3", "c", "c"]);
    assert_eq!(c.cmd(&["LPOS", "p", "c"]), Reply::Int(2));
    assert_eq!(c.cmd(&["LPOS", "p", "c", "RANK", "2"]), Reply::Int(6));
    assert_eq!(c.cmd(&["LPOS", "p", "c", "RANK", "-1"]), Reply::Int(7));
    assert_eq!(c.cmd(&["LPOS", "p", "c", "RANK", "-2"]), Reply::Int(6));
    assert_eq!(c.cmd(&["LPOS", "p", "c", "RANK", "10"]), Reply::Null);
    assert_eq!(c.cmd(&["LPOS", "p", "c", "COUNT", "2"]), ints(&[2, 6]));
    assert_eq!(c.cmd(&["LPOS", "p", "c", "COUNT", "0"]), ints(&[2, 6, 7]));
    assert_eq!(c.cmd(&["LPOS", "p", "c", "RANK", "-1", "COUNT", "2"]), ints(&[7, 6]));
    assert_eq!(c.cmd(&["LPOS", "p", "c", "RANK", "2", "COUNT", "0"]), ints(&[6, 7]));
    assert_eq!(c.cmd(&["LPOS", "p", "c", "MAXLEN", "2"]), Reply::Null);
    assert_eq!(c.cmd(&["LPOS", "p", "c", "COUNT", "0", "MAXLEN", "7"]), ints(&[2, 6]));
    assert_eq!(c.cmd(&["LPOS", "p", "c", "RANK", "-1", "MAXLEN", "1"]), Reply::Int(7));
    assert_eq!(c.cmd(&["LPOS", "p", "x"]), Reply::Null);
    assert_eq!(c.cmd(&["LPOS", "p", "x", "COUNT", "1"]), ints(&[]));
    assert_eq!(c.cmd(&["LPOS", "absent", "a"]), Reply::Null);
    assert_eq!(c.cmd(&["LPOS", "absent", "a", "COUNT", "1"]), ints(&[]));
    assert_eq!(
        c.cmd(&["LPOS", "p", "c", "RANK", "0"]),
        err("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
    );
    assert_eq!(c.cmd(&["LPOS", "p", "c", "COUNT", "-1"]), err("ERR COUNT can't be negative"));
    assert_eq!(c.cmd(&["LPOS", "p", "c", "COUNT", "x"]), err("ERR COUNT can't be negative"));
    assert_eq!(c.cmd(&["LPOS", "p", "c", "MAXLEN", "-1"]), err("ERR MAXLEN can't be negative"));
    assert_eq!(c.cmd(&["LPOS", "p", "c", "RANK", "x"]), err(NOT_INT));
    assert_eq!(c.cmd(&["LPOS", "p", "c", "RANK"]), err(SYNTAX));
    assert_eq!(c.cmd(&["LPOS", "p", "c", "FOO", "1"]), err(SYNTAX));
    // Options are read before the key.
    assert_eq!(c.cmd(&["LPOS", "absent", "c", "FOO"]), err(SYNTAX));
    c.cmd(&["SET", "s", "x"]);
    assert_eq!(c.cmd(&["LPOS", "s", "x"]), err(WRONGTYPE));
}

#[test]
fn pushx_pushes_only_onto_existing_lists() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["LPUSHX", "x", "a"]), Reply::Int(0));
    assert_eq!(c.cmd(&["RPUSHX", "x", "a", "b"]), Reply::Int(0));
    assert_eq!(c.cmd(&["EXISTS", "x"]), Reply::Int(0));
    c.cmd(&["RPUSH", "x", "a"]);
    assert_eq!(c.cmd(&["LPUSHX", "x", "b", "c"]), Reply::Int(3));
    assert_eq!(c.cmd(&["RPUSHX", "x", "d", "e"]), Reply::Int(5));
    assert_eq!(all(&mut c, "x"), list(&["c", "b", "a", "d", "e"]));
    c.cmd(&["SET", "s", "x"]);
    assert_eq!(c.cmd(&["LPUSHX", "s", "a"]), err(WRONGTYPE));
    assert_eq!(c.cmd(&["RPUSHX", "s", "a"]), err(WRONGTYPE));
    assert_eq!(c.cmd(&["LPUSHX", "s"]), err("ERR wrong number of arguments for 'lpushx' command"));
}

#[test]
fn lmove_rpoplpush_and_lmpop() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmd(&["RPUSH", "s", "a", "b", "c"]);
    assert_eq!(c.cmd(&["RPOPLPUSH", "s", "d"]), Reply::bulk("c"));
    assert_eq!(c.cmd(&["LMOVE", "s", "d", "LEFT", "RIGHT"]), Reply::bulk("a"));
    assert_eq!(all(&mut c, "s"), list(&["b"]));
    assert_eq!(all(&mut c, "d"), list(&["c", "a"]));
    // Onto itself: a one-element list stays.
    assert_eq!(c.cmd(&["LMOVE", "s", "s", "LEFT", "RIGHT"]), Reply::bulk("b"));
    assert_eq!(c.cmd(&["LMOVE", "s", "s", "left", "left"]), Reply::bulk("b"));
    assert_eq!(all(&mut c, "s"), list(&["b"]));
    c.cmd(&["RPUSH", "s", "x", "y"]);
    assert_eq!(c.cmd(&["RPOPLPUSH", "s", "s"]), Reply::bulk("y"));
    assert_eq!(all(&mut c, "s"), list(&["y", "b", "x"]));
    assert_eq!(c.cmd(&["LMOVE", "s", "d", "RIGHT", "LEFT"]), Reply::bulk("x"));
    assert_eq!(all(&mut c, "d"), list(&["x", "c", "a"]));
    // The source's last element: the source goes.
    c.cmd(&["RPUSH", "one", "z"]);
    assert_eq!(c.cmd(&["LMOVE", "one", "d", "LEFT", "RIGHT"]), Reply::bulk("z"));
    assert_eq!(c.cmd(&["EXISTS", "one"]), Reply::Int(0));
    assert_eq!(c.cmd(&["RPOPLPUSH", "absent", "d"]), Reply::Null);
    assert_eq!(c.cmd(&["LMOVE", "absent", "d", "LEFT", "LEFT"]), Reply::Null);
    assert_eq!(c.cmd(&["LMOVE", "s", "d", "UP", "LEFT"]), err(SYNTAX));
    assert_eq!(c.cmd(&["LMOVE", "s", "d", "LEFT", "DOWN"]), err(SYNTAX));
    c.cmd(&["SET", "str", "v"]);
    assert_eq!(c.cmd(&["LMOVE", "str", "d", "LEFT", "LEFT"]), err(WRONGTYPE));
    // A destination of another type: nothing moves.
    assert_eq!(c.cmd(&["RPOPLPUSH", "s", "str"]), err(WRONGTYPE));
    assert_eq!(all(&mut c, "s"), list(&["y", "b"]));
    // A wrong destination with an absent source is never looked at.
    assert_eq!(c.cmd(&["RPOPLPUSH", "absent", "str"]), Reply::Null);

    // LMPOP
    assert_eq!(c.cmd(&["LMPOP", "2", "e1", "e2", "LEFT"]), Reply::Null);
    c.cmd(&["RPUSH", "m", "a", "b", "c"]);
    let popped = |key: &str, items: &[&str]| Reply::Array(vec![Reply::bulk(key), list(items)]);
    assert_eq!(c.cmd(&["LMPOP", "2", "e1", "m", "LEFT"]), popped("m", &["a"]));
    assert_eq!(c.cmd(&["lmpop", "2", "e1", "m", "right", "count", "10"]), popped("m", &["c", "b"]));
    assert_eq!(c.cmd(&["EXISTS", "m"]), Reply::Int(0));
    c.cmd(&["RPUSH", "m", "x"]);
    // A key of another type before the first list fails; after it, it is not looked at.
    assert_eq!(c.cmd(&["LMPOP", "2", "str", "m", "LEFT"]), err(WRONGTYPE));
    assert_eq!(c.cmd(&["LMPOP", "2", "m", "str", "LEFT"]), popped("m", &["x"]));
    let numkeys = err("ERR numkeys should be greater than 0");
    assert_eq!(c.cmd(&["LMPOP", "0", "k", "LEFT"]), numkeys);
    assert_eq!(c.cmd(&["LMPOP", "-1", "k", "LEFT"]), numkeys);
    assert_eq!(c.cmd(&["LMPOP", "x", "k", "LEFT"]), numkeys);
    assert_eq!(c.cmd(&["LMPOP", "2", "k", "LEFT"]), err(SYNTAX));
    assert_eq!(c.cmd(&["LMPOP", "9223372036854775807", "k", "LEFT"]), err(SYNTAX));
    assert_eq!(c.cmd(&["LMPOP", "1", "k", "UP"]), err(SYNTAX));
    let count = err("ERR count should be greater than 0");
    assert_eq!(c.cmd(&["LMPOP", "1", "k", "LEFT", "COUNT", "0"]), count);
    assert_eq!(c.cmd(&["LMPOP", "1", "k", "LEFT", "COUNT", "-1"]), count);
    assert_eq!(c.cmd(&["LMPOP", "1", "k", "LEFT", "COUNT", "x"]), count);
    assert_eq!(c.cmd(&["LMPOP", "1", "k", "LEFT", "COUNT"]), err(SYNTAX));
    assert_eq!(c.cmd(&["LMPOP", "1", "k", "LEFT", "COUNT", "1", "COUNT", "2"]), err(SYNTAX));
    assert_eq!(c.cmd(&["LMPOP", "1", "k", "LEFT", "FOO"]), err(SYNTAX));
    assert_eq!(
        c.cmd(&["LMPOP", "1", "k"]),
        err("ERR wrong number of arguments for 'lmpop' command")
    );
}

/// Extreme integers, with the replies redis-server 7.0.15 gives.
#[test]
fn extreme_arguments_reply_as_redis_does() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let min = "-9223372036854775808";
    let max = "9223372036854775807";
    c.cmd(&["RPUSH", "l", "a", "b", "a", "c", "a"]);
    // RANK i64::MIN: Redis negates it into itself and takes every match from the tail.
    assert_eq!(c.cmd(&["LPOS", "l", "a", "RANK", min]), Reply::Int(4));
    assert_eq!(c.cmd(&["LPOS", "l", "a", "RANK", min, "COUNT", "0"]), ints(&[4, 2, 0]));
    assert_eq!(c.cmd(&["LPOS", "l", "a", "RANK", max]), Reply::Null);
    assert_eq!(c.cmd(&["LPOS", "l", "a", "COUNT", max]), ints(&[0, 2, 4]));
    assert_eq!(c.cmd(&["LMPOP", "9223372036854775806", "l", "LEFT"]), err(SYNTAX));
    assert_eq!(c.cmd(&["LINSERT", "l", "BEFORE", "a", "a"]), Reply::Int(6));
    assert_eq!(c.cmd(&["LREM", "l", min, "a"]), Reply::Int(4));
    assert_eq!(all(&mut c, "l"), list(&["b", "c"]));
    assert_eq!(c.cmd(&["LTRIM", "l", min, max]), ok());
    assert_eq!(c.cmd(&["LINDEX", "l", min]), Reply::Null);
    assert_eq!(c.cmd(&["LSET", "l", min, "x"]), err("ERR index out of range"));
    assert_eq!(all(&mut c, "l"), list(&["b", "c"]));
}
