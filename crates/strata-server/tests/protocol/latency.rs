//! LATENCY: the commands' latency histograms (HISTOGRAM, counted per subcommand as INFO's
//! commandstats now are), and the latency monitor (`latency-monitor-threshold`, LATEST,
//! HISTORY, RESET, GRAPH, DOCTOR), in the shapes redis-server 7.0.15 replies.

use crate::common::{Raw, Reply, Server};

/// A reply's bulk text.
fn text(r: Reply) -> String {
    match r {
        Reply::Bulk(b) => String::from_utf8(b).unwrap(),
        other => panic!("expected a bulk reply, got {other:?}"),
    }
}

/// One command's histogram: its name, calls, and bucket bounds with their counts.
type Histogram = (String, i64, Vec<(i64, i64)>);

/// HISTOGRAM's reply, from RESP2's flat arrays.
fn histograms(c: &mut Raw, args: &[&str]) -> Vec<Histogram> {
    let mut line = vec!["LATENCY", "HISTOGRAM"];
    line.extend_from_slice(args);
    let Reply::Array(flat) = c.cmd(&line) else { panic!("HISTOGRAM: not an array") };
    let int = |r: &Reply| match r {
        Reply::Int(n) => *n,
        other => panic!("expected an integer, got {other:?}"),
    };
    flat.chunks(2)
        .map(|pair| {
            let Reply::Array(fields) = &pair[1] else { panic!("{pair:?}") };
            assert_eq!(fields[0], Reply::Bulk(b"calls".to_vec()));
            assert_eq!(fields[2], Reply::Bulk(b"histogram_usec".to_vec()));
            let Reply::Array(buckets) = &fields[3] else { panic!("{fields:?}") };
            let buckets = buckets.chunks(2).map(|b| (int(&b[0]), int(&b[1]))).collect();
            (text(pair[0].clone()), int(&fields[1]), buckets)
        })
        .collect()
}

#[test]
fn histograms_count_each_command_and_subcommand_since_the_last_resetstat() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmd(&["SET", "a", "b"]);
    assert_eq!(c.cmd(&["CONFIG", "RESETSTAT"]), Reply::Simple("OK".into()));
    let all = histograms(&mut c, &[]);
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!((all[0].0.as_str(), all[0].1), ("config|resetstat", 1));
    for _ in 0..3 {
        c.cmd(&["SET", "a", "b"]);
    }
    c.cmd(&["GET", "a"]);
    c.cmd(&["CLIENT", "ID"]);
    c.cmd(&["CLIENT", "GETNAME"]);
    let set = histograms(&mut c, &["set", "nosuch"]);
    assert_eq!(set.len(), 1);
    let (name, calls, buckets) = &set[0];
    assert_eq!((name.as_str(), *calls), ("set", 3));
    // Cumulative, by bounds that double from 1 µs, the last holding every call.
    assert_eq!(buckets.last().unwrap().1, 3, "{buckets:?}");
    assert!(buckets.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1), "{buckets:?}");
    assert!(buckets
        .iter()
        .all(|b| [1, 2, 4, 8, 16, 32, 65, 131, 262, 524, 1048, 2097].contains(&b.0) || b.0 > 2097));
    let client: Vec<String> = histograms(&mut c, &["client"]).into_iter().map(|h| h.0).collect();
    assert_eq!(client, ["client|getname", "client|id"], "a container names its subcommands");
    assert!(histograms(&mut c, &["nosuch", "zadd"]).is_empty());
    let Reply::Bulk(info) = c.cmd(&["INFO", "commandstats"]) else { panic!() };
    let info = String::from_utf8(info).unwrap();
    assert!(info.contains("cmdstat_client|id:calls=1,"), "{info}");
    assert!(info.contains("cmdstat_set:calls=3,"), "{info}");
    // A blocked command that times out counts with its first run's time.
    assert_eq!(c.cmd(&["BLPOP", "nosuch", "0.01"]), Reply::Null);
    let blpop = histograms(&mut c, &["blpop"]);
    assert_eq!((blpop[0].1, blpop[0].2.last().unwrap().1), (1, 1), "{blpop:?}");
}

#[test]
fn the_monitor_records_what_reaches_its_threshold() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["LATENCY", "LATEST"]), Reply::Array(vec![]), "off by default");
    assert!(text(c.cmd(&["LATENCY", "DOCTOR"])).contains("latency-monitor-threshold"));
    match c.cmd(&["CONFIG", "SET", "latency-monitor-threshold", "-1"]) {
        Reply::Error(e) => assert!(e.contains("argument must be between 0 and"), "{e}"),
        other => panic!("{other:?}"),
    }
    c.cmd(&["CONFIG", "SET", "latency-monitor-threshold", "20"]);
    c.cmd(&["SET", "fast", "v"]);
    assert!(text(c.cmd(&["LATENCY", "DOCTOR"])).contains("No event has taken 20 ms or more"));
    // A script that spins for 40 ms by the server's clock.
    let spin = "local t = redis.call('TIME') local s = t[1] * 1000000 + t[2] \
                repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] - s >= 40000";
    c.cmd(&["EVAL", spin, "0"]);
    let Reply::Array(latest) = c.cmd(&["LATENCY", "LATEST"]) else { panic!() };
    assert_eq!(latest.len(), 1, "{latest:?}");
    let Reply::Array(e) = &latest[0] else { panic!() };
    assert_eq!(e[0], Reply::Bulk(b"command".to_vec()));
    let (Reply::Int(time), Reply::Int(ms), Reply::Int(max)) = (&e[1], &e[2], &e[3]) else {
        panic!("{e:?}")
    };
    assert!(*ms >= 40 && max == ms && *time > 1_700_000_000, "{e:?}");
    let Reply::Array(history) = c.cmd(&["LATENCY", "HISTORY", "command"]) else { panic!() };
    assert_eq!(history, [Reply::Array(vec![Reply::Int(*time), Reply::Int(*ms)])]);
    assert_eq!(c.cmd(&["LATENCY", "HISTORY", "nosuch"]), Reply::Array(vec![]));
    let graph = text(c.cmd(&["LATENCY", "GRAPH", "command"]));
    assert!(graph.starts_with(&format!("command - high {ms} ms")), "{graph}");
    assert_eq!(
        c.cmd(&["LATENCY", "GRAPH", "nosuch"]),
        Reply::Error("ERR No samples available for event 'nosuch'".into())
    );
    assert!(text(c.cmd(&["LATENCY", "DOCTOR"])).contains("1. command: 1 latency spikes"));
    assert_eq!(c.cmd(&["LATENCY", "RESET", "nosuch"]), Reply::Int(0));
    assert_eq!(c.cmd(&["LATENCY", "RESET"]), Reply::Int(1));
    assert_eq!(c.cmd(&["LATENCY", "LATEST"]), Reply::Array(vec![]));
    assert_eq!(
        c.cmd(&["LATENCY", "HELP", "x"]),
        Reply::Error("ERR wrong number of arguments for 'latency|help' command".into())
    );
    assert_eq!(
        c.cmd(&["LATENCY", "NOSUCH"]),
        Reply::Error("ERR unknown subcommand 'NOSUCH'. Try LATENCY HELP.".into())
    );
}

#[test]
fn info_latencystats_gives_each_command_s_percentiles_while_tracking_is_on() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let stats = |c: &mut Raw| text(c.cmd(&["INFO", "latencystats"]));
    for _ in 0..20 {
        c.cmd(&["SET", "a", "b"]);
    }
    let t = stats(&mut c);
    let line = t.lines().find_map(|l| l.strip_prefix("latency_percentiles_usec_set:")).unwrap();
    let values: Vec<f64> = line
        .split(',')
        .map(|kv| kv.split_once('=').unwrap())
        .zip(["p50", "p99", "p99.9"])
        .map(|((k, v), want)| {
            assert_eq!(k, want, "{line}");
            v.parse().unwrap()
        })
        .collect();
    assert!(values.windows(2).all(|w| 0.0 < w[0] && w[0] <= w[1]), "{line}");
    assert!(!text(c.cmd(&["INFO"])).contains("# Latencystats"), "not a default section");
    assert!(text(c.cmd(&["INFO", "all"])).contains("# Latencystats"));
    c.cmd(&["CONFIG", "SET", "latency-tracking-info-percentiles", "50 100"]);
    assert!(stats(&mut c).contains("latency_percentiles_usec_set:p50="));
    assert!(stats(&mut c).contains(",p100="));
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "latency-tracking-info-percentiles", "101"]),
        Reply::Error(
            "ERR CONFIG SET failed (possibly related to argument \
             'latency-tracking-info-percentiles') - latency-tracking-info-percentiles \
             parameters should sit between [0.0,100.0]"
                .into()
        )
    );
    // Off: runs are counted (INFO commandstats) but not timed into histograms.
    c.cmd(&["CONFIG", "SET", "latency-tracking", "no"]);
    c.cmd(&["CONFIG", "RESETSTAT"]);
    c.cmd(&["SET", "a", "b"]);
    assert!(!stats(&mut c).contains("latency_percentiles_usec_set"));
    assert!(histograms(&mut c, &["set"]).is_empty());
    assert!(text(c.cmd(&["INFO", "commandstats"])).contains("cmdstat_set:calls=1,"));
}
