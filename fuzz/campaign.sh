#!/usr/bin/env bash
# A bounded fuzzing campaign over the cargo-fuzz targets (docs/reliability.md, "Fuzzing").
#
#   bash fuzz/campaign.sh [--seconds N] [--jobs J] [--out DIR] [TARGET...]
#
# Runs each target (default: every one in fuzz/Cargo.toml), one after another, for N seconds
# (default 300) with J libFuzzer workers (default 1, one core each). New inputs go to
# DIR/corpus/<target> (default DIR: /tmp/strata-fuzz), never into the committed corpus, which
# is read as seeds; crashes, leaks and timeouts go to DIR/artifacts/<target>. Prints one line
# per target (runs, coverage, the findings this run wrote, and how many earlier runs left
# there) and exits 1 when any target found something in this run.
# Needs cargo-fuzz (`cargo install cargo-fuzz`) and a nightly toolchain; skips with a message
# when either is missing.
set -euo pipefail

seconds=300
jobs=1
out=/tmp/strata-fuzz
targets=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --seconds) seconds="$2"; shift 2 ;;
        --jobs) jobs="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        -*) echo "campaign.sh: unknown option $1 (expected --seconds, --jobs, --out)" >&2; exit 2 ;;
        *) targets+=("$1"); shift ;;
    esac
done
[[ "$seconds" =~ ^[0-9]+$ && "$seconds" -gt 0 ]] \
    || { echo "campaign.sh: --seconds wants a positive integer, got '$seconds'" >&2; exit 2; }
[[ "$jobs" =~ ^[0-9]+$ && "$jobs" -gt 0 ]] \
    || { echo "campaign.sh: --jobs wants a positive integer, got '$jobs'" >&2; exit 2; }

here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
if ! cargo fuzz --version > /dev/null 2>&1; then
    echo "campaign.sh: skipped: cargo-fuzz is not installed (cargo install cargo-fuzz)"
    exit 0
fi
if ! cargo +nightly --version > /dev/null 2>&1; then
    echo "campaign.sh: skipped: no nightly toolchain (rustup toolchain install nightly)"
    exit 0
fi
known=$(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^strata-fuzz$')
if [[ ${#targets[@]} -eq 0 ]]; then
    mapfile -t targets <<< "$known"
fi
for t in "${targets[@]}"; do
    grep -qx "$t" <<< "$known" \
        || { echo "campaign.sh: no target '$t' (targets: $(echo $known))" >&2; exit 2; }
done

mkdir -p "$out"
# Threads that live as long as the process are not leaks (fuzz/lsan.supp says which).
export LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
cargo +nightly fuzz build -O > "$out/build.log" 2>&1 \
    || { echo "campaign.sh: build failed, see $out/build.log" >&2; exit 1; }

found=0
for t in "${targets[@]}"; do
    mkdir -p "$out/corpus/$t" "$out/artifacts/$t"
    log="$out/$t.log"
    # -timeout: one input running this long is a hang; -rss_limit_mb: what an input may
    # make the process hold (a decoder's allocation is bounded by what its input holds).
    parallel=()
    if [[ "$jobs" -gt 1 ]]; then
        parallel=(-jobs="$jobs" -workers="$jobs")
    fi
    # Artifacts an earlier campaign left are kept (they are its findings) but not this run's.
    stamp="$out/$t.started"
    touch "$stamp"
    set +e
    cargo +nightly fuzz run -O "$t" "$out/corpus/$t" "corpus/$t" -- \
        -max_total_time="$seconds" -timeout=20 -rss_limit_mb=3072 \
        -artifact_prefix="$out/artifacts/$t/" "${parallel[@]}" \
        -print_final_stats=1 > "$log" 2>&1
    rc=$?
    set -e
    # With -jobs, each worker logs to fuzz-<n>.log in the current directory.
    if [[ "$jobs" -gt 1 ]]; then
        cat fuzz-*.log >> "$log" 2>/dev/null || true
        rm -f fuzz-*.log
    fi
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | awk '{s+=$2} END {print s+0}')
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
    n=$(find "$out/artifacts/$t" -type f -newer "$stamp" | wc -l)
    earlier=$(find "$out/artifacts/$t" -type f ! -newer "$stamp" | wc -l)
    echo "$t: exit $rc, $runs runs, coverage ${cov:-?}, $n finding(s) in $out/artifacts/$t" \
        "($earlier from earlier runs)"
    if [[ $rc -ne 0 || $n -gt 0 ]]; then
        found=1
    fi
done
exit $found
