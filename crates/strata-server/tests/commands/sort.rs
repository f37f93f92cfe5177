//! SORT and SORT_RO: numeric and ALPHA order, DESC, LIMIT, BY patterns (strings, hash fields,
//! "nosort"), GET patterns, STORE (a list, or the destination deleted when empty), and the
//! replies to bad input, as redis-server 7.0 gives them; a random model check of numeric
//! sorts with LIMIT.

use crate::common::{Rng, Server};
use redis::{Commands, Value};

fn sort(c: &mut redis::Connection, args: &[&str]) -> redis::RedisResult<Vec<Option<String>>> {
    redis::cmd("SORT").arg(args).query(c)
}

fn strs(v: &[&str]) -> Vec<Option<String>> {
    v.iter().map(|s| Some(s.to_string())).collect()
}

#[test]
fn sorts_lists_sets_and_sorted_sets() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    let _: () = c.rpush("l", &["3", "10", "-1.5", "2", "10"]).unwrap();
    assert_eq!(sort(&mut c, &["l"]).unwrap(), strs(&["-1.5", "2", "3", "10", "10"]));
    assert_eq!(sort(&mut c, &["l", "DESC"]).unwrap(), strs(&["10", "10", "3", "2", "-1.5"]));
    assert_eq!(sort(&mut c, &["l", "ALPHA"]).unwrap(), strs(&["-1.5", "10", "10", "2", "3"]));
    assert_eq!(sort(&mut c, &["l", "LIMIT", "1", "2"]).unwrap(), strs(&["2", "3"]));
    assert_eq!(sort(&mut c, &["l", "LIMIT", "-5", "2"]).unwrap(), strs(&["-1.5", "2"]));
    assert_eq!(sort(&mut c, &["l", "LIMIT", "4", "-1"]).unwrap(), strs(&["10"]));
    assert_eq!(sort(&mut c, &["l", "LIMIT", "9", "3"]).unwrap(), strs(&[]));
    let _: () = c.sadd("s", &["b", "a", "c"]).unwrap();
    assert_eq!(sort(&mut c, &["s", "ALPHA", "DESC"]).unwrap(), strs(&["c", "b", "a"]));
    let _: () = c.zadd_multiple("z", &[(3, "x"), (1, "y"), (2, "w")]).unwrap();
    assert_eq!(sort(&mut c, &["z", "ALPHA"]).unwrap(), strs(&["w", "x", "y"]));
    // "nosort": a list and a sorted set keep their order, DESC reversing it.
    assert_eq!(sort(&mut c, &["z", "BY", "nosort"]).unwrap(), strs(&["y", "w", "x"]));
    assert_eq!(
        sort(&mut c, &["z", "BY", "nosort", "DESC", "LIMIT", "0", "2"]).unwrap(),
        strs(&["x", "w"])
    );
    assert_eq!(
        sort(&mut c, &["l", "BY", "nosort", "LIMIT", "1", "2"]).unwrap(),
        strs(&["10", "-1.5"])
    );
    assert_eq!(
        sort(&mut c, &["l", "BY", "nosort", "DESC", "LIMIT", "1", "2"]).unwrap(),
        strs(&["2", "-1.5"])
    );
    assert_eq!(sort(&mut c, &["missing"]).unwrap(), strs(&[]));
    // SORT_RO: the same without STORE.
    let ro: Vec<String> =
        redis::cmd("SORT_RO").arg("l").arg("LIMIT").arg(0).arg(1).query(&mut c).unwrap();
    assert_eq!(ro, vec!["-1.5"]);
}

#[test]
fn by_and_get_patterns_read_strings_and_hash_fields() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    let _: () = c.rpush("ids", &["1", "2", "3"]).unwrap();
    let _: () = c.set("w_1", "30").unwrap();
    let _: () = c.set("w_2", "10").unwrap();
    // w_3 is missing: weight 0.
    let _: () = c.hset_multiple("h_1", &[("name", "one"), ("rank", "b")]).unwrap();
    let _: () = c.hset_multiple("h_2", &[("name", "two"), ("rank", "a")]).unwrap();
    let _: () = c.set("h_3", "a string, not a hash").unwrap();
    assert_eq!(sort(&mut c, &["ids", "BY", "w_*"]).unwrap(), strs(&["3", "2", "1"]));
    assert_eq!(
        sort(&mut c, &["ids", "BY", "w_*", "GET", "#", "GET", "h_*->name"]).unwrap(),
        vec![
            Some("3".into()),
            None,
            Some("2".into()),
            Some("two".into()),
            Some("1".into()),
            Some("one".into())
        ]
    );
    // ALPHA by a hash field: a missing one sorts first.
    assert_eq!(sort(&mut c, &["ids", "BY", "h_*->rank", "ALPHA"]).unwrap(), strs(&["3", "2", "1"]));
    // A GET pattern naming a hash of another type, or without '*', gives nil.
    assert_eq!(
        sort(&mut c, &["ids", "GET", "h_*"]).unwrap(),
        vec![None, None, Some("a string, not a hash".into())]
    );
    assert_eq!(sort(&mut c, &["ids", "GET", "fixed"]).unwrap(), vec![None, None, None]);
    // STORE: GET's missing values are stored as "".
    let n: i64 = redis::cmd("SORT")
        .arg(&["ids", "BY", "w_*", "GET", "h_*->name", "STORE", "dst"])
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 3);
    assert_eq!(c.lrange::<_, Vec<String>>("dst", 0, -1).unwrap(), vec!["", "two", "one"]);
}

#[test]
fn store_replaces_the_destination_and_an_empty_result_deletes_it() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    let _: () = c.sadd("s", &["3", "1", "2"]).unwrap();
    let _: () = c.hset("dst", "f", "v").unwrap();
    let n: i64 = redis::cmd("SORT").arg("s").arg("STORE").arg("dst").query(&mut c).unwrap();
    assert_eq!(n, 3);
    assert_eq!(redis::cmd("TYPE").arg("dst").query::<String>(&mut c).unwrap(), "list");
    assert_eq!(c.lrange::<_, Vec<String>>("dst", 0, -1).unwrap(), vec!["1", "2", "3"]);
    // A set not sorted but stored is sorted as ALPHA, so the list does not depend on layout.
    let _: () = c.sadd("t", &["10", "9"]).unwrap();
    let _: i64 =
        redis::cmd("SORT").arg(&["t", "BY", "nosort", "STORE", "dst"]).query(&mut c).unwrap();
    assert_eq!(c.lrange::<_, Vec<String>>("dst", 0, -1).unwrap(), vec!["10", "9"]);
    let n: i64 = redis::cmd("SORT").arg("empty").arg("STORE").arg("dst").query(&mut c).unwrap();
    assert_eq!(n, 0);
    assert!(!c.exists::<_, bool>("dst").unwrap());
    // The source may be the destination.
    let _: () = c.rpush("self", &["2", "1"]).unwrap();
    let _: i64 = redis::cmd("SORT").arg("self").arg("STORE").arg("self").query(&mut c).unwrap();
    assert_eq!(c.lrange::<_, Vec<String>>("self", 0, -1).unwrap(), vec!["1", "2"]);
}

#[test]
fn bad_input_gets_redis_replies() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    let _: () = c.rpush("l", &["1", "x"]).unwrap();
    let _: () = c.set("str", "v").unwrap();
    let err = |c: &mut redis::Connection, args: &[&str]| {
        let e = redis::cmd(args[0]).arg(&args[1..]).query::<Value>(c).unwrap_err();
        format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or(""))
    };
    assert_eq!(
        err(&mut c, &["SORT", "l"]),
        "ERR One or more scores can't be converted into double"
    );
    assert_eq!(err(&mut c, &["SORT", "str"]).split(' ').next(), Some("WRONGTYPE"));
    assert_eq!(err(&mut c, &["SORT", "l", "ALPHA", "BOGUS"]), "ERR syntax error");
    assert_eq!(err(&mut c, &["SORT", "l", "LIMIT", "1"]), "ERR syntax error");
    assert_eq!(
        err(&mut c, &["SORT", "l", "LIMIT", "a", "1"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(err(&mut c, &["SORT_RO", "l", "STORE", "d"]), "ERR syntax error");
    assert_eq!(err(&mut c, &["SORT"]), "ERR wrong number of arguments for 'sort' command");
    // ALPHA accepts what is not a number.
    assert_eq!(sort(&mut c, &["l", "ALPHA"]).unwrap(), strs(&["1", "x"]));
}

#[test]
fn numeric_sorts_with_limits_match_a_model() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    let mut rng = Rng::new(7);
    for round in 0..30 {
        let _: () = redis::cmd("DEL").arg("l").query(&mut c).unwrap();
        let n = rng.below(40) as usize;
        let vals: Vec<String> = (0..n).map(|_| format!("{}", rng.below(50) as i64 - 25)).collect();
        if !vals.is_empty() {
            let _: () = c.rpush("l", &vals).unwrap();
        }
        let mut model: Vec<(i64, String)> =
            vals.iter().map(|v| (v.parse().unwrap(), v.clone())).collect();
        model.sort();
        let desc = rng.below(2) == 1;
        if desc {
            model.reverse();
        }
        let (start, count) = (rng.below(50) as i64 - 5, rng.below(50) as i64 - 5);
        let s = start.max(0) as usize;
        let want: Vec<Option<String>> = model
            .iter()
            .skip(s)
            .take(if count < 0 { usize::MAX } else { count as usize })
            .map(|(_, v)| Some(v.clone()))
            .collect();
        let mut args = vec!["l".to_string(), "LIMIT".into(), start.to_string(), count.to_string()];
        if desc {
            args.push("DESC".into());
        }
        let got: Vec<Option<String>> = redis::cmd("SORT").arg(&args).query(&mut c).unwrap();
        assert_eq!(got, want, "round {round}: {args:?} over {vals:?}");
    }
}
