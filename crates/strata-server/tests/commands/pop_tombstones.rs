//! SPOP, ZPOPMIN and ZPOPMAX do not step over the tombstones of earlier pops: popping a whole
//! set one member at a time makes sub-key scans examine O(1) internal entries per pop
//! (`strata_scan_steps` in INFO), not O(members popped so far). Pops still see members
//! inserted beyond where the previous pops stopped.

use crate::common::Server;
use redis::Connection;

const N: usize = 1500;

fn scan_steps(c: &mut Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("strata").query(c).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("strata_scan_steps:"))
        .expect("INFO strata has strata_scan_steps")
        .trim()
        .parse()
        .unwrap()
}

/// Runs `pop` `N - 1` times and returns the internal entries the scans examined per pop.
fn steps_per_pop(c: &mut Connection, mut pop: impl FnMut(&mut Connection)) -> f64 {
    let before = scan_steps(c);
    for _ in 0..N - 1 {
        pop(c);
    }
    (scan_steps(c) - before) as f64 / (N - 1) as f64
}

#[test]
fn spop_skips_earlier_pops() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    for chunk in (0..N).collect::<Vec<_>>().chunks(500) {
        let mut cmd = redis::cmd("SADD");
        cmd.arg("s");
        for i in chunk {
            cmd.arg(format!("m{i:05}"));
        }
        let _: usize = cmd.query(&mut c).unwrap();
    }
    let mut next = 0;
    let per_pop = steps_per_pop(&mut c, |c| {
        let got: String = redis::cmd("SPOP").arg("s").query(c).unwrap();
        assert_eq!(got, format!("m{next:05}"), "SPOP takes the first member in byte order");
        next += 1;
    });
    // From the start each pop would step over every earlier pop's tombstone (about N/2 on
    // average); from where the last one stopped it examines a couple of entries.
    assert!(per_pop < 4.0, "{per_pop} internal entries examined per SPOP");
    // A member added below where the pops stopped is found first.
    let _: usize = redis::cmd("SADD").arg("s").arg("a").query(&mut c).unwrap();
    let got: Vec<String> = redis::cmd("SPOP").arg("s").arg(5).query(&mut c).unwrap();
    assert_eq!(got, vec!["a".to_string(), format!("m{:05}", N - 1)]);
    let n: usize = redis::cmd("EXISTS").arg("s").query(&mut c).unwrap();
    assert_eq!(n, 0);
}

fn zadd_all(c: &mut Connection, key: &str) {
    for chunk in (0..N).collect::<Vec<_>>().chunks(500) {
        let mut cmd = redis::cmd("ZADD");
        cmd.arg(key);
        for &i in chunk {
            cmd.arg(i).arg(format!("m{i:05}"));
        }
        let _: usize = cmd.query(c).unwrap();
    }
}

#[test]
fn zpopmin_and_zpopmax_skip_earlier_pops() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();

    zadd_all(&mut c, "z");
    let mut next = 0;
    let per_pop = steps_per_pop(&mut c, |c| {
        let got: (String, f64) = redis::cmd("ZPOPMIN").arg("z").query(c).unwrap();
        assert_eq!(got, (format!("m{next:05}"), next as f64));
        next += 1;
    });
    assert!(per_pop < 4.0, "{per_pop} internal entries examined per ZPOPMIN");
    // A lower score added after the pops (a new member, and an existing one moved down).
    let _: usize = redis::cmd("ZADD").arg("z").arg(-1).arg("low").query(&mut c).unwrap();
    let _: usize = redis::cmd("ZADD").arg("z").arg(3).arg("mid").query(&mut c).unwrap();
    let last = format!("m{:05}", N - 1);
    let _: f64 = redis::cmd("ZINCRBY").arg("z").arg(-10_000).arg(&last).query(&mut c).unwrap();
    let got: Vec<(String, f64)> = redis::cmd("ZPOPMIN").arg("z").arg(5).query(&mut c).unwrap();
    let want = vec![
        (last.clone(), (N - 1) as f64 - 10_000.0),
        ("low".to_string(), -1.0),
        ("mid".to_string(), 3.0),
    ];
    assert_eq!(got, want);

    zadd_all(&mut c, "y");
    let mut next = N;
    let per_pop = steps_per_pop(&mut c, |c| {
        next -= 1;
        let got: (String, f64) = redis::cmd("ZPOPMAX").arg("y").query(c).unwrap();
        assert_eq!(got, (format!("m{next:05}"), next as f64));
    });
    assert!(per_pop < 4.0, "{per_pop} internal entries examined per ZPOPMAX");
    let _: usize = redis::cmd("ZADD").arg("y").arg(1e9).arg("high").query(&mut c).unwrap();
    let _: usize = redis::cmd("ZADD").arg("y").arg(5e8).arg("m00000").query(&mut c).unwrap();
    let got: Vec<(String, f64)> = redis::cmd("ZPOPMAX").arg("y").arg(5).query(&mut c).unwrap();
    assert_eq!(got, vec![("high".to_string(), 1e9), ("m00000".to_string(), 5e8)]);
}
