//! LATENCY LATEST | HISTORY event | RESET [event ...] | GRAPH event | DOCTOR |
//! HISTOGRAM [command ...] | HELP, over the server's latency monitor and its commands'
//! latency histograms (`crate::latency`), with Redis 7.0's replies and errors.

use super::args::{is, reply_help};
use super::errors::unknown_subcommand;
use super::CmdResult;
use crate::latency::EventRecord;
use crate::resp::Out;
use crate::state::{Conn, Shared};
use std::fmt::Write;

/// Rows of GRAPH's chart.
const GRAPH_ROWS: u64 = 4;

/// LATENCY <subcommand> ...
pub fn latency(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let sub = &a[1];
    let name = |i: usize| String::from_utf8_lossy(&a[i]).into_owned();
    if is(sub, "help") {
        reply_help(out, HELP);
    } else if is(sub, "latest") {
        let events = sh.latency.events();
        out.array(events.len());
        for (event, e) in events {
            let &(time, ms) = e.samples.back().unwrap_or(&(0, 0));
            out.array(4);
            out.bulk(event.as_bytes());
            out.int(time as i64);
            out.int(ms as i64);
            out.int(e.max as i64);
        }
    } else if is(sub, "history") {
        let samples = sh.latency.event(&name(2)).map(|e| e.samples).unwrap_or_default();
        out.array(samples.len());
        for (time, ms) in samples {
            out.array(2);
            out.int(time as i64);
            out.int(ms as i64);
        }
    } else if is(sub, "reset") {
        let names: Vec<String> = (2..a.len()).map(name).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        out.int(sh.latency.reset(&names) as i64);
    } else if is(sub, "graph") {
        let event = name(2);
        let Some(e) = sh.latency.event(&event) else {
            return Err(format!("ERR No samples available for event '{event}'").into());
        };
        out.bulk(graph(&event, &e, crate::types::keyspace::now_ms() / 1000).as_bytes());
    } else if is(sub, "doctor") {
        out.bulk(doctor(sh).as_bytes());
    } else if is(sub, "histogram") {
        histogram(sh, &a[2..], out);
    } else {
        return Err(unknown_subcommand(a));
    }
    Ok(())
}

const HELP: &[&str] = &[
    "LATENCY <subcommand> [<arg> ...]. Subcommands are:",
    "DOCTOR",
    "    What the monitor recorded, event by event, in words.",
    "GRAPH <event>",
    "    The event's samples as a chart of text columns.",
    "HISTORY <event>",
    "    The event's samples: unix time and milliseconds.",
    "LATEST",
    "    Every event's newest sample and its largest.",
    "RESET [<event> ...]",
    "    Forget the named events (all of them when none is named).",
    "HISTOGRAM [<command> ...]",
    "    The named commands' run times (every command's when none is named), as calls at",
    "    or under each power of two of microseconds.",
    "HELP",
    "    This text.",
];

/// HISTOGRAM: per command named (a container names all of its subcommands; unknown names
/// are skipped; none: every command), if it ran since the last CONFIG RESETSTAT while
/// `latency-tracking` was on, its calls and its cumulative histogram.
fn histogram(sh: &Shared, names: &[Vec<u8>], out: &mut Out) {
    let stats = &sh.stats.per_command;
    let names: Vec<String> =
        names.iter().map(|n| String::from_utf8_lossy(n).to_ascii_lowercase()).collect();
    let wanted = |stat: &str| {
        names.is_empty()
            || names.iter().any(|n| {
                stat == n || stat.split_once('|').is_some_and(|(container, _)| container == n)
            })
    };
    // A command's calls are its histogram's runs, as Redis counts them (none while
    // `latency-tracking` is off).
    let shown: Vec<(&str, Vec<(u64, u64)>)> = (0..stats.len())
        .map(|i| (super::stats_name(i), stats[i].histogram.cumulative()))
        .filter(|(name, buckets)| !buckets.is_empty() && wanted(name))
        .collect();
    out.map(shown.len());
    for (name, buckets) in shown {
        out.bulk(name.as_bytes());
        out.map(2);
        out.bulk(b"calls");
        out.int(buckets.last().map_or(0, |b| b.1) as i64);
        out.bulk(b"histogram_usec");
        out.map(buckets.len());
        for (bound, count) in buckets {
            out.int(bound as i64);
            out.int(count as i64);
        }
    }
}

/// GRAPH: the event's samples as columns of `#` scaled to its largest, oldest on the left,
/// each labelled underneath by how long ago it was taken.
fn graph(event: &str, e: &EventRecord, now: u64) -> String {
    let (low, high) = e.samples.iter().fold((u64::MAX, 0), |(l, h), s| (l.min(s.1), h.max(s.1)));
    let mut t = format!(
        "{event} - high {high} ms, low {low} ms (all time high {} ms)\n{}\n",
        e.max,
        "-".repeat(80)
    );
    for row in (1..=GRAPH_ROWS).rev() {
        for &(_, ms) in &e.samples {
            t.push(if ms * GRAPH_ROWS >= row * high.max(1) { '#' } else { ' ' });
        }
        t.push('\n');
    }
    // How long ago, one character per row of labels (`12s`: 1, 2, s), as Redis labels them.
    let ago: Vec<String> = e.samples.iter().map(|s| age(now.saturating_sub(s.0))).collect();
    let rows = ago.iter().map(String::len).max().unwrap_or(0);
    for r in 0..rows {
        for label in &ago {
            t.push(label.as_bytes().get(r).map_or(' ', |&b| b as char));
        }
        t.push('\n');
    }
    t
}

/// A span of seconds as GRAPH labels it: `45s`, `12m`, `3h`, `2d`.
fn age(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// DOCTOR: what the monitor recorded, event by event, in words.
fn doctor(sh: &Shared) -> String {
    let events = sh.latency.events();
    let threshold = sh.latency.threshold();
    if events.is_empty() {
        return if threshold == 0 {
            "The latency monitor is off (latency-monitor-threshold is 0): CONFIG SET \
             latency-monitor-threshold <milliseconds> turns it on.\n"
                .into()
        } else {
            format!(
                "No event has taken {threshold} ms or more since the server started or the \
                 last LATENCY RESET.\n"
            )
        };
    }
    let mut t = String::from("Latency spikes were observed (at or above the threshold of ");
    let _ = writeln!(t, "{threshold} ms):\n");
    for (i, (event, e)) in events.iter().enumerate() {
        let n = e.samples.len() as u64;
        let avg = e.samples.iter().map(|s| s.1).sum::<u64>() / n.max(1);
        let first = e.samples.front().map_or(0, |s| s.0);
        let _ = writeln!(
            t,
            "{}. {event}: {n} latency spikes (average {avg}ms, all time high {}ms), the \
             first kept at unix time {first}.",
            i + 1,
            e.max
        );
        let advice = match *event {
            "command" => "slow commands: see SLOWLOG GET for which ones and their arguments.",
            "fast-command" => {
                "commands Redis counts as fast ran slowly: the machine's cores were busy \
                 (other processes, or the engine's flushes and compactions)."
            }
            "expire-cycle" => {
                "active expiry deleted many keys at once: many keys expiring together \
                 (consider spreading their times to live)."
            }
            _ => "",
        };
        if !advice.is_empty() {
            let _ = writeln!(t, "   Likely cause: {advice}");
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_graph_scales_its_columns_to_the_highest_sample_and_labels_their_age() {
        let e = EventRecord { samples: [(100, 10), (130, 40), (160, 20)].into(), max: 50 };
        let g = graph("command", &e, 160);
        let lines: Vec<&str> = g.lines().collect();
        assert_eq!(lines[0], "command - high 40 ms, low 10 ms (all time high 50 ms)");
        assert_eq!(&lines[2..6], [" # ", " # ", " ##", "###"]);
        assert_eq!(&lines[6..], ["130", "m0s", " s "]);
        let ages = [age(59), age(61), age(7200), age(200_000)];
        assert_eq!(ages, ["59s", "1m", "2h", "2d"]);
    }
}
