//! Geospatial indexes through a running server: GEOADD's scores, GEOPOS, GEODIST and GEOHASH
//! as redis-server 7.0.15 replies them (the expected values are its replies), the search
//! commands' options, stores and errors, a randomized check that a search finds exactly
//! the members its area holds (against the distances GEODIST gives), and the GEO writes
//! (GEOADD with NX/XX/CH, ZREM, GEOSEARCHSTORE, GEORADIUS ... STORE) against a model.

use crate::common::{Raw, Reply, Rng, Server};

fn bulk(s: &str) -> Reply {
    Reply::bulk(s)
}

fn err(c: &mut Raw, line: &[&str]) -> String {
    match c.cmd(line) {
        Reply::Error(e) => e,
        other => panic!("{line:?}: {other:?}"),
    }
}

fn sicily(c: &mut Raw) {
    let added = c.cmd(&[
        "GEOADD",
        "Sicily",
        "13.361389",
        "38.115556",
        "Palermo",
        "15.087269",
        "37.502669",
        "Catania",
    ]);
    assert_eq!(added, Reply::Int(2));
}

#[test]
fn positions_distances_and_hashes_are_redis_s() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    sicily(&mut c);
    assert_eq!(c.cmd(&["ZSCORE", "Sicily", "Palermo"]), bulk("3479099956230698"));
    assert_eq!(
        c.cmd(&["GEOPOS", "Sicily", "Palermo", "NonExisting"]),
        Reply::Array(vec![
            Reply::Array(vec![bulk("13.36138933897018433"), bulk("38.11555639549629859")]),
            Reply::Null,
        ])
    );
    assert_eq!(c.cmd(&["GEODIST", "Sicily", "Palermo", "Catania"]), bulk("166274.1516"));
    assert_eq!(c.cmd(&["GEODIST", "Sicily", "Palermo", "Catania", "km"]), bulk("166.2742"));
    assert_eq!(c.cmd(&["GEODIST", "Sicily", "Palermo", "Nowhere"]), Reply::Null);
    assert_eq!(c.cmd(&["GEODIST", "Nokey", "a", "b"]), Reply::Null);
    assert_eq!(
        c.cmd(&["GEOHASH", "Sicily", "Palermo", "Catania", "x"]),
        Reply::Array(vec![bulk("sqc8b49rny0"), bulk("sqdtr74hyu0"), Reply::Null])
    );
    // XX, NX and CH as ZADD's; a pair out of range adds nothing.
    assert_eq!(
        c.cmd(&["GEOADD", "Sicily", "XX", "CH", "13", "38", "Palermo", "13", "38", "New"]),
        Reply::Int(1)
    );
    assert_eq!(c.cmd(&["GEOADD", "Sicily", "NX", "13", "38", "New"]), Reply::Int(1));
    assert_eq!(
        err(&mut c, &["GEOADD", "Sicily", "13", "38", "A", "200", "38", "B"]),
        "ERR invalid longitude,latitude pair 200.000000,38.000000"
    );
    assert_eq!(c.cmd(&["ZCARD", "Sicily"]), Reply::Int(3));
    assert_eq!(err(&mut c, &["GEOADD", "Sicily", "NX", "XX", "13", "38", "A"]), "ERR syntax error");
    assert_eq!(
        err(&mut c, &["GEOADD", "Sicily", "13", "38"]),
        "ERR wrong number of arguments for 'geoadd' command"
    );
    assert_eq!(err(&mut c, &["GEOADD", "Sicily", "13", "38", "A", "1"]), "ERR syntax error");
    c.cmd(&["SET", "str", "x"]);
    assert!(err(&mut c, &["GEOPOS", "str", "a"]).starts_with("WRONGTYPE"));
}

#[test]
fn searches_sort_count_store_and_refuse_as_redis_does() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    sicily(&mut c);
    assert_eq!(
        c.cmd(&["GEORADIUS", "Sicily", "15", "37", "200", "km", "WITHDIST", "WITHCOORD", "ASC"]),
        Reply::Array(vec![
            Reply::Array(vec![
                bulk("Catania"),
                bulk("56.4413"),
                Reply::Array(vec![bulk("15.08726745843887329"), bulk("37.50266842333162032")]),
            ]),
            Reply::Array(vec![
                bulk("Palermo"),
                bulk("190.4424"),
                Reply::Array(vec![bulk("13.36138933897018433"), bulk("38.11555639549629859")]),
            ]),
        ])
    );
    let desc = c.cmd(&[
        "GEOSEARCH",
        "Sicily",
        "FROMLONLAT",
        "15",
        "37",
        "BYBOX",
        "400",
        "400",
        "km",
        "DESC",
        "WITHHASH",
    ]);
    assert_eq!(
        desc,
        Reply::Array(vec![
            Reply::Array(vec![bulk("Palermo"), Reply::Int(3479099956230698)]),
            Reply::Array(vec![bulk("Catania"), Reply::Int(3479447370796909)]),
        ])
    );
    assert_eq!(
        c.cmd(&["GEORADIUSBYMEMBER", "Sicily", "Palermo", "200", "km", "COUNT", "1"]),
        Reply::Array(vec![bulk("Palermo")])
    );
    assert_eq!(
        c.cmd(&[
            "GEOSEARCHSTORE",
            "near",
            "Sicily",
            "FROMMEMBER",
            "Catania",
            "BYRADIUS",
            "100",
            "km",
            "STOREDIST"
        ]),
        Reply::Int(1)
    );
    assert_eq!(
        c.cmd(&["ZRANGE", "near", "0", "-1", "WITHSCORES"]),
        Reply::Array(vec![bulk("Catania"), bulk("0")])
    );
    assert_eq!(
        c.cmd(&["GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "all"]),
        Reply::Int(2)
    );
    assert_eq!(c.cmd(&["ZSCORE", "all", "Palermo"]), bulk("3479099956230698"));
    // A source that does not exist: an empty reply, and the destination deleted.
    assert_eq!(
        c.cmd(&["GEOSEARCHSTORE", "near", "none", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"]),
        Reply::Int(0)
    );
    assert_eq!(c.cmd(&["EXISTS", "near"]), Reply::Int(0));
    assert_eq!(c.cmd(&["GEORADIUSBYMEMBER", "none", "x", "-1", "km"]), Reply::Array(vec![]));
    // Each line as words, and the error redis-server 7.0.15 replies to it.
    let errors = [
        ("GEORADIUS Sicily 15 37 -1 km", "ERR radius cannot be negative"),
        ("GEORADIUS Sicily 15 37 x km", "ERR need numeric radius"),
        ("GEORADIUS Sicily 15 37 1 yd", "ERR unsupported unit provided. please use M, KM, FT, MI"),
        (
            "GEORADIUS Sicily 15 37 1 km STORE d WITHDIST",
            "ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and \
             WITHCOORD options",
        ),
        ("GEORADIUS_RO Sicily 15 37 1 km STORE d", "ERR syntax error"),
        ("GEORADIUSBYMEMBER Sicily Rome 1 km", "ERR could not decode requested zset member"),
        (
            "GEOSEARCH Sicily BYRADIUS 1 km WITHDIST ASC",
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for GEOSEARCH",
        ),
        (
            "GEOSEARCH Sicily FROMLONLAT 1 1 WITHDIST ASC",
            "ERR exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCH",
        ),
        ("GEOSEARCH Sicily FROMLONLAT 1 1 BYRADIUS 1 km BYBOX 1 1 km", "ERR syntax error"),
        (
            "GEOSEARCH Sicily FROMLONLAT 1 1 BYRADIUS 1 km ANY",
            "ERR the ANY argument requires COUNT argument",
        ),
        ("GEOSEARCH Sicily FROMLONLAT 1 1 BYRADIUS 1 km COUNT 0", "ERR COUNT must be > 0"),
        ("GEOSEARCH Sicily FROMLONLAT 1 1 BYBOX -1 1 km", "ERR height or width cannot be negative"),
        (
            "GEOSEARCHSTORE d Sicily FROMLONLAT 1 1 BYRADIUS 1 km WITHHASH",
            "ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
        ),
    ];
    for (line, want) in errors {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(err(&mut c, &words), want, "{line}");
    }
}

/// Meters in a GEODIST reply.
fn meters(r: Reply) -> f64 {
    match r {
        Reply::Bulk(b) => String::from_utf8(b).unwrap().parse().unwrap(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_search_finds_exactly_the_members_within_its_radius() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let mut rng = Rng::new(7);
    // Points around the world, denser near one place, and near the poles' limit.
    let n = 300;
    for i in 0..n {
        let (lon, lat) = match i % 3 {
            0 => {
                (rng.below(36_000) as f64 / 100.0 - 180.0, rng.below(17_000) as f64 / 100.0 - 85.0)
            }
            1 => (12.0 + rng.below(400) as f64 / 100.0, 37.0 + rng.below(300) as f64 / 100.0),
            _ => (rng.below(36_000) as f64 / 100.0 - 180.0, 80.0 + rng.below(500) as f64 / 100.0),
        };
        c.cmd(&["GEOADD", "pts", &lon.to_string(), &lat.to_string(), &format!("p{i}")]);
    }
    for round in 0..60 {
        let centre = format!("p{}", rng.below(n));
        let radius =
            [1.0, 50.0, 300.0, 2_000.0, 9_000.0][round % 5] * (1.0 + rng.below(100) as f64 / 100.0);
        let r = radius.to_string();
        let Reply::Array(found) =
            c.cmd(&["GEOSEARCH", "pts", "FROMMEMBER", &centre, "BYRADIUS", &r, "km"])
        else {
            panic!()
        };
        let found: std::collections::BTreeSet<Vec<u8>> = found
            .into_iter()
            .map(|m| match m {
                Reply::Bulk(b) => b,
                other => panic!("{other:?}"),
            })
            .collect();
        for i in 0..n {
            let m = format!("p{i}");
            let d = meters(c.cmd(&["GEODIST", "pts", &centre, &m, "km"]));
            // GEODIST's four decimals: members this near the edge are not asserted.
            if (d - radius).abs() < 0.001 {
                continue;
            }
            assert_eq!(
                found.contains(m.as_bytes()),
                d < radius,
                "round {round}: {m} at {d} km of {centre}, radius {radius}"
            );
        }
    }
}

/// A search's cells are read one after another: a member another client moves from one cell
/// to the next meanwhile is still found (and stored) once, so a stored set's count holds.
#[test]
fn a_member_moving_during_a_search_is_found_exactly_once() {
    // Regressions: a member moved between two cells' walks was found twice, and one moved
    // from a cell not yet walked to one walked already was missed. Every member is within
    // the radius in either place, so each search finds all 40.
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    // Members on both sides of a cell boundary near the centre of the search.
    for i in 0..40 {
        let lon = format!("{}", 0.0005 * f64::from(i) - 0.01);
        c.cmd(&["GEOADD", "moving", &lon, "0.001", &format!("m{i}")]);
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mover = {
        let (port, stop) = (srv.port, stop.clone());
        std::thread::spawn(move || {
            let mut m = Raw::connect(port);
            let mut flip = false;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let lon = if flip { "-0.0001" } else { "0.0001" };
                for i in 0..40 {
                    m.cmd(&[
                        "GEOADD",
                        "moving",
                        lon,
                        if flip { "-0.001" } else { "0.001" },
                        &format!("m{i}"),
                    ]);
                }
                flip = !flip;
            }
        })
    };
    for round in 0..300 {
        let Reply::Array(found) =
            c.cmd(&["GEOSEARCH", "moving", "FROMLONLAT", "0", "0", "BYRADIUS", "50", "km"])
        else {
            panic!()
        };
        let mut names: Vec<&Reply> = found.iter().collect();
        names.sort_by_key(|r| format!("{r:?}"));
        names.dedup();
        assert_eq!(names.len(), found.len(), "round {round}: a member found twice");
        assert_eq!(found.len(), 40, "round {round}: a member missed");
        let stored = c.cmd(&[
            "GEOSEARCHSTORE",
            "dst",
            "moving",
            "FROMLONLAT",
            "0",
            "0",
            "BYRADIUS",
            "50",
            "km",
        ]);
        assert_eq!(stored, Reply::Int(40), "round {round}");
        let Reply::Array(stored) = c.cmd(&["ZRANGE", "dst", "0", "-1"]) else { panic!() };
        assert_eq!(stored.len(), 40, "round {round}");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    mover.join().unwrap();
}

/// Places a model member may be at: (longitude, latitude, km from (15, 37)). Palermo and
/// Catania, then two far from the searches' edges (100 and 250 km).
const PLACES: [(&str, &str, f64); 4] = [
    ("13.361389", "38.115556", 190.0),
    ("15.087269", "37.502669", 56.0),
    ("12.496366", "41.902782", 560.0),
    ("-100", "40", 9000.0),
];

#[test]
fn geo_writes_match_a_model() {
    use std::collections::BTreeMap;
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    // Each place's stored score, from the server once.
    let scores: Vec<String> = PLACES
        .iter()
        .map(|(lon, lat, _)| {
            c.cmd(&["GEOADD", "scores", lon, lat, "x"]);
            match c.cmd(&["ZSCORE", "scores", "x"]) {
                Reply::Bulk(b) => String::from_utf8(b).unwrap(),
                other => panic!("{other:?}"),
            }
        })
        .collect();
    // Each set as the server lists it: (score, member) pairs in order.
    let listed = |m: &BTreeMap<String, usize>| -> Reply {
        let mut v: Vec<(f64, &String, usize)> =
            m.iter().map(|(k, &p)| (scores[p].parse().unwrap(), k, p)).collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(b.1)));
        Reply::Array(v.into_iter().flat_map(|(_, k, p)| [bulk(k), bulk(&scores[p])]).collect())
    };
    for seed in 1..=3u64 {
        c.cmd(&["DEL", "src", "dst"]);
        let mut rng = Rng::new(seed);
        let (mut src, mut dst) = (BTreeMap::<String, usize>::new(), BTreeMap::new());
        for step in 0..400 {
            let m = format!("m{}", rng.below(8));
            let p = rng.below(PLACES.len() as u64) as usize;
            let (lon, lat, _) = PLACES[p];
            let within = |src: &BTreeMap<String, usize>, km: f64| -> BTreeMap<String, usize> {
                src.iter()
                    .filter(|(_, &p)| PLACES[p].2 < km)
                    .map(|(k, &p)| (k.clone(), p))
                    .collect()
            };
            let (got, want) = match rng.below(6) {
                0 | 1 => {
                    let flags = [&[][..], &["NX"], &["XX"], &["CH"], &["XX", "CH"]];
                    let flags = flags[rng.below(5) as usize];
                    let mut line = vec!["GEOADD", "src"];
                    line.extend_from_slice(flags);
                    line.extend([lon, lat, m.as_str()]);
                    let old = src.get(&m).copied();
                    let apply = match old {
                        None => !flags.contains(&"XX"),
                        Some(_) => !flags.contains(&"NX"),
                    };
                    let changed = apply && old.is_some_and(|o| scores[o] != scores[p]);
                    if apply {
                        src.insert(m.clone(), p);
                    }
                    let added = apply && old.is_none();
                    let n = i64::from(added) + i64::from(flags.contains(&"CH") && changed);
                    (c.cmd(&line), Reply::Int(n))
                }
                2 => {
                    let n = i64::from(src.remove(&m).is_some());
                    (c.cmd(&["ZREM", "src", &m]), Reply::Int(n))
                }
                3 => {
                    dst = within(&src, 250.0);
                    let line =
                        ["GEOSEARCHSTORE", "dst", "src", "FROMLONLAT", "15", "37", "BYRADIUS"];
                    let mut line = line.to_vec();
                    line.extend(["250", "km"]);
                    (c.cmd(&line), Reply::Int(dst.len() as i64))
                }
                4 => {
                    dst = within(&src, 100.0);
                    let line = ["GEORADIUS", "src", "15", "37", "100", "km", "STORE", "dst"];
                    (c.cmd(&line), Reply::Int(dst.len() as i64))
                }
                _ => {
                    let pos = c.cmd(&["GEOPOS", "src", &m]);
                    let there = match &pos {
                        Reply::Array(v) => matches!(v[0], Reply::Array(_)),
                        other => panic!("{other:?}"),
                    };
                    (Reply::Int(i64::from(there)), Reply::Int(i64::from(src.contains_key(&m))))
                }
            };
            assert_eq!(got, want, "seed {seed} step {step}");
            for (key, model) in [("src", &src), ("dst", &dst)] {
                let range = c.cmd(&["ZRANGE", key, "0", "-1", "WITHSCORES"]);
                assert_eq!(range, listed(model), "seed {seed} step {step}: {key}");
            }
        }
    }
}
