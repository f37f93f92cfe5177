//! Sorted-set ranges beyond rank and score: BYLEX in ZRANGE and Z[REV]RANGEBYLEX, ZLEXCOUNT,
//! ZRANGESTORE, ZREMRANGEBYRANK/SCORE/LEX, ZREVRANK, ZMSCORE, and Redis 7.0's replies to
//! conflicting range options; a model check of lex ranges over equal scores.

use crate::common::{Rng, Server};
use redis::{Commands, Value};

fn strings(c: &mut redis::Connection, args: &[&str]) -> Vec<String> {
    redis::cmd(args[0]).arg(&args[1..]).query(c).unwrap()
}

fn error(c: &mut redis::Connection, args: &[&str]) -> String {
    let e = redis::cmd(args[0]).arg(&args[1..]).query::<Value>(c).unwrap_err();
    format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or(""))
}

#[test]
fn lex_ranges_counts_and_reverse() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    let _: () = c.zadd_multiple("z", &[(0, "a"), (0, "b"), (0, "c"), (0, "d"), (0, "e")]).unwrap();
    assert_eq!(strings(&mut c, &["ZRANGEBYLEX", "z", "-", "+"]), ["a", "b", "c", "d", "e"]);
    assert_eq!(strings(&mut c, &["ZRANGEBYLEX", "z", "[b", "(d"]), ["b", "c"]);
    assert_eq!(strings(&mut c, &["ZRANGEBYLEX", "z", "(b", "[d", "LIMIT", "1", "5"]), ["d"]);
    assert_eq!(strings(&mut c, &["ZREVRANGEBYLEX", "z", "+", "-", "LIMIT", "1", "2"]), ["d", "c"]);
    assert_eq!(strings(&mut c, &["ZRANGE", "z", "[b", "[c", "BYLEX"]), ["b", "c"]);
    assert_eq!(strings(&mut c, &["ZRANGE", "z", "[c", "[b", "BYLEX", "REV"]), ["c", "b"]);
    assert_eq!(
        strings(&mut c, &["ZRANGE", "z", "+", "-", "BYLEX", "REV", "LIMIT", "0", "1"]),
        ["e"]
    );
    assert_eq!(strings(&mut c, &["ZRANGEBYLEX", "z", "[x", "+"]), Vec::<String>::new());
    assert_eq!(strings(&mut c, &["ZRANGEBYLEX", "z", "+", "-"]), Vec::<String>::new());
    assert_eq!(redis::cmd("ZLEXCOUNT").arg(&["z", "[b", "+"]).query::<i64>(&mut c).unwrap(), 4);
    assert_eq!(redis::cmd("ZLEXCOUNT").arg(&["nokey", "-", "+"]).query::<i64>(&mut c).unwrap(), 0);
    assert_eq!(redis::cmd("ZREVRANK").arg(&["z", "a"]).query::<i64>(&mut c).unwrap(), 4);
    assert_eq!(redis::cmd("ZREVRANK").arg(&["z", "x"]).query::<Option<i64>>(&mut c).unwrap(), None);
    let scores: Vec<Option<f64>> =
        redis::cmd("ZMSCORE").arg(&["z", "a", "x", "e"]).query(&mut c).unwrap();
    assert_eq!(scores, vec![Some(0.0), None, Some(0.0)]);
}

#[test]
fn zrangestore_and_removing_ranges() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    let _: () = c.zadd_multiple("z", &[(1, "a"), (2, "b"), (3, "c"), (4, "d")]).unwrap();
    let _: () = c.set("dst", "was a string").unwrap();
    let n: i64 = redis::cmd("ZRANGESTORE").arg(&["dst", "z", "1", "2"]).query(&mut c).unwrap();
    assert_eq!(n, 2);
    assert_eq!(
        c.zrange_withscores::<_, Vec<(String, f64)>>("dst", 0, -1).unwrap(),
        vec![("b".to_string(), 2.0), ("c".to_string(), 3.0)]
    );
    let n: i64 = redis::cmd("ZRANGESTORE")
        .arg(&["dst", "z", "(4", "-inf", "BYSCORE", "REV", "LIMIT", "0", "2"])
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 2);
    assert_eq!(strings(&mut c, &["ZRANGE", "dst", "0", "-1"]), ["b", "c"]);
    let n: i64 = redis::cmd("ZRANGESTORE").arg(&["dst", "z", "5", "10"]).query(&mut c).unwrap();
    assert_eq!(n, 0);
    assert!(!c.exists::<_, bool>("dst").unwrap(), "an empty result deletes the destination");
    let n: i64 = redis::cmd("ZRANGESTORE").arg(&["dst", "nokey", "0", "-1"]).query(&mut c).unwrap();
    assert_eq!(n, 0);
    // Removing: by rank, by score, by lex; an emptied set is deleted.
    let _: () = c.zadd_multiple("r", &[(1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e")]).unwrap();
    assert_eq!(
        redis::cmd("ZREMRANGEBYRANK").arg(&["r", "-2", "-1"]).query::<i64>(&mut c).unwrap(),
        2
    );
    assert_eq!(
        redis::cmd("ZREMRANGEBYSCORE").arg(&["r", "(1", "2"]).query::<i64>(&mut c).unwrap(),
        1
    );
    assert_eq!(strings(&mut c, &["ZRANGE", "r", "0", "-1"]), ["a", "c"]);
    let _: () = c.zadd_multiple("l", &[(0, "a"), (0, "b"), (0, "c")]).unwrap();
    assert_eq!(
        redis::cmd("ZREMRANGEBYLEX").arg(&["l", "[a", "(c"]).query::<i64>(&mut c).unwrap(),
        2
    );
    assert_eq!(redis::cmd("ZREMRANGEBYLEX").arg(&["l", "-", "+"]).query::<i64>(&mut c).unwrap(), 1);
    assert!(!c.exists::<_, bool>("l").unwrap());
    assert_eq!(
        redis::cmd("ZREMRANGEBYRANK").arg(&["nokey", "0", "-1"]).query::<i64>(&mut c).unwrap(),
        0
    );
}

#[test]
fn conflicting_options_and_bad_bounds_get_redis_replies() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    let _: () = c.zadd("z", "a", 1).unwrap();
    let _: () = c.set("s", "v").unwrap();
    let limit =
        "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX";
    assert_eq!(error(&mut c, &["ZRANGE", "z", "0", "-1", "LIMIT", "0", "1"]), limit);
    assert_eq!(error(&mut c, &["ZREVRANGE", "z", "0", "-1", "LIMIT", "0", "1"]), limit);
    assert_eq!(
        error(&mut c, &["ZRANGE", "z", "-", "+", "BYLEX", "WITHSCORES"]),
        "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
    );
    assert_eq!(error(&mut c, &["ZRANGE", "z", "0", "1", "BYSCORE", "BYLEX"]), "ERR syntax error");
    assert_eq!(error(&mut c, &["ZRANGEBYSCORE", "z", "0", "1", "REV"]), "ERR syntax error");
    assert_eq!(
        error(&mut c, &["ZRANGESTORE", "d", "z", "0", "-1", "WITHSCORES"]),
        "ERR syntax error"
    );
    let lex = "ERR min or max not valid string range item";
    assert_eq!(error(&mut c, &["ZRANGEBYLEX", "z", "a", "+"]), lex);
    assert_eq!(error(&mut c, &["ZLEXCOUNT", "z", "-", "b"]), lex);
    assert_eq!(error(&mut c, &["ZREMRANGEBYLEX", "z", "[a", "x"]), lex);
    assert_eq!(
        error(&mut c, &["ZREMRANGEBYSCORE", "z", "x", "1"]),
        "ERR min or max is not a float"
    );
    assert_eq!(
        error(&mut c, &["ZREMRANGEBYRANK", "z", "x", "1"]),
        "ERR value is not an integer or out of range"
    );
    assert!(error(&mut c, &["ZRANGESTORE", "d", "s", "0", "-1"]).starts_with("WRONGTYPE"));
    assert!(error(&mut c, &["ZRANGEBYLEX", "s", "-", "+"]).starts_with("WRONGTYPE"));
    // LIMIT with a count of -1 is accepted with a rank range, as Redis accepts it.
    assert_eq!(strings(&mut c, &["ZRANGE", "z", "0", "-1", "LIMIT", "0", "-1"]), ["a"]);
}

#[test]
fn lex_ranges_over_equal_scores_match_a_model() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    let mut rng = Rng::new(11);
    let members: Vec<String> = (0..40).map(|i| format!("m{:02}", i * 7 % 40)).collect();
    for m in &members {
        let _: () = c.zadd("z", m, 0).unwrap();
    }
    let mut sorted = members.clone();
    sorted.sort();
    // A bound: its text, and whether it admits a member as a minimum or as a maximum.
    let bound = |rng: &mut Rng| -> (String, u64, String) {
        let kind = rng.below(4);
        let m = format!("m{:02}", rng.below(45));
        let text = match kind {
            0 => "-".to_string(),
            1 => "+".to_string(),
            2 => format!("[{m}"),
            _ => format!("({m}"),
        };
        (text, kind, m)
    };
    let admits = |(_, kind, b): &(String, u64, String), x: &str, as_min: bool| match kind {
        0 => as_min,
        1 => !as_min,
        2 => {
            if as_min {
                x >= b.as_str()
            } else {
                x <= b.as_str()
            }
        }
        _ => {
            if as_min {
                x > b.as_str()
            } else {
                x < b.as_str()
            }
        }
    };
    for _ in 0..200 {
        let (lo, hi) = (bound(&mut rng), bound(&mut rng));
        let (min, max) = (lo.0.clone(), hi.0.clone());
        let want: Vec<String> = sorted
            .iter()
            .filter(|m| admits(&lo, m, true) && admits(&hi, m, false))
            .cloned()
            .collect();
        assert_eq!(strings(&mut c, &["ZRANGEBYLEX", "z", &min, &max]), want, "[{min} {max}]");
        let mut rev = want.clone();
        rev.reverse();
        assert_eq!(strings(&mut c, &["ZREVRANGEBYLEX", "z", &max, &min]), rev, "rev [{min} {max}]");
        let n: i64 = redis::cmd("ZLEXCOUNT").arg(&["z", &min, &max]).query(&mut c).unwrap();
        assert_eq!(n, want.len() as i64);
    }
}

#[test]
fn zmpop_pops_from_the_first_sorted_set_with_redis_replies() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    let _: () = c.zadd_multiple("b", &[(1, "x"), (2, "y"), (3, "z")]).unwrap();
    let got: Option<(String, Vec<(String, f64)>)> =
        redis::cmd("ZMPOP").arg(&["2", "a", "b", "MAX", "COUNT", "2"]).query(&mut c).unwrap();
    assert_eq!(got, Some(("b".into(), vec![("z".into(), 3.0), ("y".into(), 2.0)])));
    let got: Option<(String, Vec<(String, f64)>)> =
        redis::cmd("ZMPOP").arg(&["1", "b", "MIN", "COUNT", "5"]).query(&mut c).unwrap();
    assert_eq!(got, Some(("b".into(), vec![("x".into(), 1.0)])));
    assert!(!c.exists::<_, bool>("b").unwrap(), "emptied, deleted");
    let none: Option<(String, Vec<(String, f64)>)> =
        redis::cmd("ZMPOP").arg(&["2", "a", "b", "MIN"]).query(&mut c).unwrap();
    assert_eq!(none, None);
    let _: () = c.set("s", "v").unwrap();
    let _: () = c.zadd("z", "m", 1).unwrap();
    assert!(error(&mut c, &["ZMPOP", "2", "s", "z", "MIN"]).starts_with("WRONGTYPE"));
    let got: Option<(String, Vec<(String, f64)>)> =
        redis::cmd("ZMPOP").arg(&["2", "z", "s", "MIN"]).query(&mut c).unwrap();
    assert_eq!(got, Some(("z".into(), vec![("m".into(), 1.0)])), "stops at the first sorted set");
    assert_eq!(error(&mut c, &["ZMPOP", "0", "z", "MIN"]), "ERR numkeys should be greater than 0");
    assert_eq!(error(&mut c, &["ZMPOP", "1", "z", "BAD"]), "ERR syntax error");
    assert_eq!(
        error(&mut c, &["ZMPOP", "1", "z", "MAX", "COUNT", "1", "COUNT", "2"]),
        "ERR syntax error"
    );
    assert_eq!(
        error(&mut c, &["ZMPOP", "1", "z", "MIN", "COUNT", "0"]),
        "ERR count should be greater than 0"
    );
    assert_eq!(
        error(&mut c, &["ZMPOP", "1", "z"]),
        "ERR wrong number of arguments for 'zmpop' command"
    );
}
