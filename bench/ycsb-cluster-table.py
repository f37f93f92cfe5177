#!/usr/bin/env python3
"""Helpers of bench/ycsb-cluster.sh (standard library only).

  ycsb-cluster-table.py goycsb-log RAW OUT   go-ycsb's output -> YCSB's `[OP], metric, value`
                                             lines (what strata-bench-ycsb-report reads)
  ycsb-cluster-table.py errors LOG           one line: errors, ops/s, per-kind errors
  ycsb-cluster-table.py table DIR            DIR/results.tsv -> DIR/table.md (cluster, single
                                             and cluster/single rows per case); exit 3 when a
                                             run had errors

go-ycsb (v1.0.3, `measurementtype=histogram`, plain output) ends with
`Run finished, takes 12.3s` and one line per operation kind:
`READ   - Takes(s): 12.3, Count: 1000, OPS: 81.3, Avg(us): 1200, Min(us): ..., 99th(us): ...,
99.9th(us): ..., 99.99th(us): ...`; a failed operation is counted under `READ_ERROR`, never
under `READ`. The conversion keeps the run time, counts, average, P99 and P99.9, and turns
`KIND_ERROR` counts into `[KIND], Return=ERROR, n`.
"""

import csv
import re
import sys
from pathlib import Path

GO_LINE = re.compile(r"^([A-Z_]+)\s+- (Takes\(s\): .*)$")
GO_DONE = re.compile(r"^Run finished, takes (\S+)$")
DURATION_PART = re.compile(r"([0-9.]+)(h|ms|us|µs|ns|m|s)")
UNIT_MS = {"h": 3.6e6, "m": 6e4, "s": 1e3, "ms": 1.0, "us": 1e-3, "µs": 1e-3, "ns": 1e-6}


def go_duration_ms(text):
    """Go's time.Duration.String() (`1m2.5s`, `850.2ms`) in milliseconds."""
    parts = DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a Go duration: {text!r}")
    return sum(float(n) * UNIT_MS[u] for n, u in parts)


def goycsb_to_ycsb(raw):
    """The YCSB-format text of a go-ycsb run; raises ValueError when the run did not finish."""
    lines = raw.splitlines()
    done = [i for i, line in enumerate(lines) if GO_DONE.match(line.strip())]
    if not done:
        raise ValueError("no 'Run finished' line: go-ycsb did not finish")
    runtime_ms = go_duration_ms(GO_DONE.match(lines[done[-1]].strip()).group(1))
    ops, errors = {}, {}
    for line in lines[done[-1] + 1:]:
        m = GO_LINE.match(line.strip())
        if not m:
            continue
        kind = m.group(1)
        fields = dict(f.split(": ", 1) for f in m.group(2).split(", "))
        if kind.endswith("_ERROR"):
            errors[kind[: -len("_ERROR")]] = int(fields["Count"])
        elif kind != "TOTAL":
            ops[kind] = fields
    out = [f"[OVERALL], RunTime(ms), {runtime_ms:.0f}"]
    for kind in sorted(set(ops) | set(errors)):
        f = ops.get(kind)
        ok = int(f["Count"]) if f else 0
        out.append(f"[{kind}], Operations, {ok + errors.get(kind, 0)}")
        if f:
            out.append(f"[{kind}], AverageLatency(us), {f['Avg(us)']}")
            out.append(f"[{kind}], 99thPercentileLatency(us), {f['99th(us)']}")
            out.append(f"[{kind}], 99.9PercentileLatency(us), {f['99.9th(us)']}")
            out.append(f"[{kind}], Return=OK, {ok}")
        if errors.get(kind):
            out.append(f"[{kind}], Return=ERROR, {errors[kind]}")
    return "\n".join(out) + "\n"


def errors_of(text):
    """(errors, ops/s, {kind: errors}) of a YCSB-format log; errors None when unfinished."""
    runtime = None
    total = 0
    per_kind = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",", 2)]
        if len(parts) != 3 or not parts[0].startswith("["):
            continue
        kind, metric, value = parts[0].strip("[]"), parts[1], parts[2]
        if kind == "OVERALL" and metric == "RunTime(ms)":
            runtime = float(value)
        elif kind not in ("OVERALL", "CLEANUP") and not kind.startswith("TOTAL_G"):
            if metric == "Operations":
                total += int(float(value))
            elif metric.startswith("Return=") and metric != "Return=OK":
                per_kind[kind] = per_kind.get(kind, 0) + int(float(value))
    if runtime is None:
        return None, None, per_kind
    qps = total * 1000.0 / runtime if runtime > 0 else 0.0
    return sum(per_kind.values()), qps, per_kind


METRICS = [
    ("R-QPS", "r_qps"), ("R-AVG", "r_avg_us"), ("R-P99", "r_p99_us"), ("R-P999", "r_p999_us"),
    ("W-QPS", "w_qps"), ("W-AVG", "w_avg_us"), ("W-P99", "w_p99_us"), ("W-P999", "w_p999_us"),
]


def median(v):
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def fmt(x):
    return f"{x:,.0f}"


def spread(v):
    if not v:
        return "-"
    if len(v) == 1:
        return fmt(v[0])
    return f"{fmt(median(v))} [{fmt(min(v))}-{fmt(max(v))}]"


def read_meta(d):
    meta = {}
    p = d / "meta.tsv"
    if p.exists():
        for line in p.read_text().splitlines():
            if "\t" in line:
                k, v = line.split("\t", 1)
                meta[k] = v
    return meta


def table(d):
    d = Path(d)
    if not (d / "results.tsv").exists():
        print(f"ycsb-cluster-table.py: no {d / 'results.tsv'}: no run finished", file=sys.stderr)
        return 1
    with open(d / "results.tsv", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    meta = read_meta(d)
    # durability column: "<durability>.<client>" (so the chart's categories tell the clients apart)
    cases = []
    for r in rows:
        dur, _, client = r["durability"].partition(".")
        r["_dur"], r["_client"] = dur, client or "?"
        key = (r["_client"], r["_dur"], r["workload"])
        if key not in cases:
            cases.append(key)
    reps = sorted({r["rep"] for r in rows})
    out = []
    out.append("# Cluster YCSB: the Pegasus table (bench/ycsb-cluster.sh)\n")
    if meta.get("setup"):
        out.append(meta["setup"] + "\n")
    if meta.get("durability"):
        out.append("Durability: " + meta["durability"] + "\n")
    out.append(
        f"Each cell: median [min-max] over {len(reps)} repetition(s), engines interleaved "
        "(a fresh cluster or server per client and repetition, the order reversed on even "
        "repetitions). QPS in operations/s over the YCSB process's run time, latencies in "
        "microseconds as the client measured them. Reads = READ, writes = UPDATE + INSERT "
        "(the load). `cluster/single` rows: ratio of the medians (QPS: > 1 means the cluster "
        "is faster; latency: < 1 means the cluster is faster). `errors`: operations that did "
        "not return OK, summed over the repetitions.\n"
    )
    head = ["case", "R/W", "workload", "client", "durability", "threads", "engine"]
    head += [m for m, _ in METRICS] + ["errors"]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "|".join(["---"] * 7 + ["---:"] * (len(METRICS) + 1)) + "|")
    problems = []
    for client, dur, wl in cases:
        medians = {}
        for engine in ("cluster", "single"):
            runs = [r for r in rows if (r["_client"], r["_dur"], r["workload"], r["engine"])
                    == (client, dur, wl, engine)]
            if not runs:
                continue
            cells, med = [], {}
            for name, col in METRICS:
                v = [float(r[col]) for r in runs if r[col] not in ("", None)]
                cells.append(spread(v))
                med[name] = median(v) if v else None
            errs = sum(int(r["errors"] or 0) for r in runs)
            for r in runs:
                if int(r["errors"] or 0) > 0 or r["exit"] != "0":
                    problems.append(f"rep {r['rep']} {dur} {client} {engine} {wl}: "
                                    f"{r['errors']} error(s), exit {r['exit']}")
            medians[engine] = med
            h = runs[0]
            case = "Load" if wl == "load" else h["case"]
            out.append("| " + " | ".join([case, h["ratio"], wl, client, dur, h["threads"], engine]
                                         + cells + [str(errs)]) + " |")
        if "cluster" in medians and "single" in medians:
            c, s = medians["cluster"], medians["single"]
            cells = []
            for name, _ in METRICS:
                cells.append(f"*{c[name] / s[name]:.2f}*" if c[name] and s[name] else "-")
            out.append("| " + " | ".join(["", "", wl, client, dur, "", "*cluster/single*"]
                                         + cells + [""]) + " |")
    out.append("")
    if problems:
        out.append("Runs with errors:\n")
        out.extend(f"- {p}" for p in problems)
    else:
        out.append("Every YCSB operation returned OK (0 errors in every run).")
    out.append("")
    (d / "table.md").write_text("\n".join(out))
    for p in problems:
        print(f"ycsb-cluster-table.py: {p}", file=sys.stderr)
    return 3 if problems else 0


def main(argv):
    if len(argv) == 4 and argv[1] == "goycsb-log":
        raw = Path(argv[2]).read_text(errors="replace")
        try:
            Path(argv[3]).write_text(goycsb_to_ycsb(raw))
        except ValueError as e:
            # No `[OVERALL]` line: the report counts the run as failed.
            Path(argv[3]).write_text(f"go-ycsb output not usable: {e}\n")
            print(f"ycsb-cluster-table.py: {argv[2]}: {e}", file=sys.stderr)
            return 1
        return 0
    if len(argv) == 3 and argv[1] == "errors":
        errs, qps, per_kind = errors_of(Path(argv[2]).read_text(errors="replace"))
        if errs is None:
            print("unfinished (no [OVERALL], RunTime(ms))")
            return 1
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(per_kind.items()) if n)
        print(f"{errs} errors{' (' + kinds + ')' if kinds else ''}, {qps:,.0f} ops/s")
        return 0 if errs == 0 else 3
    if len(argv) == 3 and argv[1] == "table":
        return table(argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
