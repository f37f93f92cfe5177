//! ZUNION, ZINTER, ZDIFF, their STORE forms and ZINTERCARD against a model (sorted sets and
//! plain sets as inputs, weights, the three aggregates, missing keys), and Redis 7.0's replies
//! to bad input and to infinite scores.
// Scores in these tests are small integers and infinities, exact in f64.
#![allow(clippy::float_cmp)]

use crate::common::{Rng, Server};
use redis::{Commands, Value};
use std::collections::BTreeMap;

type Model = BTreeMap<String, f64>;

fn sorted(m: &Model) -> Vec<(String, f64)> {
    let mut v: Vec<(String, f64)> = m.iter().map(|(k, s)| (k.clone(), *s)).collect();
    // As Redis orders them: by score as a number (-0 equals 0), then by member.
    v.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap().then_with(|| a.0.cmp(&b.0)));
    v
}

#[test]
fn algebra_matches_a_model() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    let mut rng = Rng::new(5);
    for round in 0..60 {
        let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
        // Three inputs: two sorted sets and a set (members score 1); one may be missing.
        let mut inputs: Vec<Model> = Vec::new();
        for i in 0..3 {
            let mut m = Model::new();
            if rng.below(6) != 0 {
                for _ in 0..rng.below(8) {
                    let member = format!("m{}", rng.below(10));
                    let score = if i == 2 { 1.0 } else { rng.below(7) as f64 - 2.0 };
                    m.insert(member.clone(), score);
                    if i == 2 {
                        let _: () = c.sadd(format!("k{i}"), &member).unwrap();
                    } else {
                        let _: () = c.zadd(format!("k{i}"), &member, score).unwrap();
                    }
                }
            }
            inputs.push(m);
        }
        let weights: Vec<f64> = (0..3).map(|_| rng.below(4) as f64 - 1.0).collect();
        let agg = ["SUM", "MIN", "MAX"][rng.below(3) as usize];
        let combine = |a: f64, b: f64| match agg {
            "SUM" => a + b,
            "MIN" => a.min(b),
            _ => a.max(b),
        };
        let weighted: Vec<Model> = inputs
            .iter()
            .zip(&weights)
            .map(|(m, w)| m.iter().map(|(k, s)| (k.clone(), s * w)).collect())
            .collect();
        let mut union = Model::new();
        for m in &weighted {
            for (k, s) in m {
                let v = union.get(k).map_or(*s, |t| combine(*t, *s));
                union.insert(k.clone(), v);
            }
        }
        let mut inter = weighted[0].clone();
        for m in &weighted[1..] {
            inter = inter
                .iter()
                .filter_map(|(k, t)| m.get(k).map(|s| (k.clone(), combine(*t, *s))))
                .collect();
        }
        let diff: Model = inputs[0]
            .iter()
            .filter(|(k, _)| !inputs[1..].iter().any(|m| m.contains_key(*k)))
            .map(|(k, s)| (k.clone(), *s))
            .collect();
        let opts: Vec<String> = vec![
            "WEIGHTS".into(),
            weights[0].to_string(),
            weights[1].to_string(),
            weights[2].to_string(),
            "AGGREGATE".into(),
            agg.into(),
        ];
        for (cmd, model) in [("ZUNION", &union), ("ZINTER", &inter)] {
            let got: Vec<(String, f64)> = redis::cmd(cmd)
                .arg(3)
                .arg(&["k0", "k1", "k2"])
                .arg(&opts)
                .arg("WITHSCORES")
                .query(&mut c)
                .unwrap();
            assert_eq!(got, sorted(model), "round {round}: {cmd} {opts:?} over {inputs:?}");
            let n: usize = redis::cmd(&format!("{cmd}STORE"))
                .arg("dst")
                .arg(3)
                .arg(&["k0", "k1", "k2"])
                .arg(&opts)
                .query(&mut c)
                .unwrap();
            assert_eq!(n, model.len());
            let stored: Vec<(String, f64)> = c.zrange_withscores("dst", 0, -1).unwrap();
            assert_eq!(stored, sorted(model), "round {round}: {cmd}STORE");
            assert_eq!(c.exists::<_, bool>("dst").unwrap(), !model.is_empty());
        }
        let got: Vec<(String, f64)> = redis::cmd("ZDIFF")
            .arg(3)
            .arg(&["k0", "k1", "k2"])
            .arg("WITHSCORES")
            .query(&mut c)
            .unwrap();
        assert_eq!(got, sorted(&diff), "round {round}: ZDIFF over {inputs:?}");
        let n: usize = redis::cmd("ZDIFFSTORE")
            .arg("dst")
            .arg(3)
            .arg(&["k0", "k1", "k2"])
            .query(&mut c)
            .unwrap();
        assert_eq!(n, diff.len());
        let card: usize =
            redis::cmd("ZINTERCARD").arg(3).arg(&["k0", "k1", "k2"]).query(&mut c).unwrap();
        assert_eq!(card, inter.len());
        let card: usize = redis::cmd("ZINTERCARD")
            .arg(3)
            .arg(&["k0", "k1", "k2"])
            .arg("LIMIT")
            .arg(1)
            .query(&mut c)
            .unwrap();
        assert_eq!(card, inter.len().min(1));
    }
}

#[test]
fn infinities_bad_input_and_wrong_types() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    let err = |c: &mut redis::Connection, args: &[&str]| {
        let e = redis::cmd(args[0]).arg(&args[1..]).query::<Value>(c).unwrap_err();
        format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or(""))
    };
    let _: () = c.zadd("a", "k", f64::INFINITY).unwrap();
    let _: () = c.zadd("b", "k", f64::NEG_INFINITY).unwrap();
    let _: usize = redis::cmd("ZUNIONSTORE").arg(&["d", "2", "a", "b"]).query(&mut c).unwrap();
    assert_eq!(c.zscore::<_, _, f64>("d", "k").unwrap(), 0.0, "inf + -inf is 0");
    let _: usize = redis::cmd("ZINTERSTORE").arg(&["d", "2", "a", "a"]).query(&mut c).unwrap();
    assert_eq!(c.zscore::<_, _, f64>("d", "k").unwrap(), f64::INFINITY);
    let _: usize =
        redis::cmd("ZUNIONSTORE").arg(&["d", "1", "a", "WEIGHTS", "0"]).query(&mut c).unwrap();
    assert_eq!(c.zscore::<_, _, f64>("d", "k").unwrap(), 0.0, "inf * 0 is 0");
    let _: usize = redis::cmd("ZUNIONSTORE").arg(&["d", "1", "nokey"]).query(&mut c).unwrap();
    assert!(!c.exists::<_, bool>("d").unwrap());
    let _: () = c.set("s", "v").unwrap();
    assert!(err(&mut c, &["ZUNION", "2", "a", "s"]).starts_with("WRONGTYPE"));
    assert!(err(&mut c, &["ZINTERSTORE", "d", "2", "s", "a", "BOGUS"]).starts_with("WRONGTYPE"));
    assert_eq!(
        err(&mut c, &["ZUNION", "0", "a"]),
        "ERR at least 1 input key is needed for 'zunion' command"
    );
    assert_eq!(err(&mut c, &["ZUNIONSTORE", "d", "3", "a", "b"]), "ERR syntax error");
    assert_eq!(
        err(&mut c, &["ZUNION", "2", "a", "b", "WEIGHTS", "1", "nan"]),
        "ERR weight value is not a float"
    );
    assert_eq!(err(&mut c, &["ZUNION", "2", "a", "b", "WEIGHTS", "1"]), "ERR syntax error");
    assert_eq!(err(&mut c, &["ZINTER", "2", "a", "b", "AGGREGATE", "AVG"]), "ERR syntax error");
    assert_eq!(err(&mut c, &["ZDIFF", "2", "a", "b", "WEIGHTS", "1", "1"]), "ERR syntax error");
    assert_eq!(err(&mut c, &["ZUNIONSTORE", "d", "2", "a", "b", "WITHSCORES"]), "ERR syntax error");
    assert_eq!(err(&mut c, &["ZINTERCARD", "1", "a", "a"]), "ERR syntax error");
    assert_eq!(err(&mut c, &["ZINTERCARD", "1", "a", "LIMIT"]), "ERR syntax error");
    assert_eq!(
        err(&mut c, &["ZINTERCARD", "1", "a", "LIMIT", "-1"]),
        "ERR LIMIT can't be negative"
    );
    assert_eq!(err(&mut c, &["ZINTERCARD", "1", "a", "LIMIT", "x"]), "ERR LIMIT can't be negative");
    assert_eq!(err(&mut c, &["ZINTERCARD", "1", "a", "WITHSCORES"]), "ERR syntax error");
}
