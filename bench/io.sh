#!/usr/bin/env bash
# The seeds' I/O modes (seed 002): every step of the sequence below in up to three modes, the
# engines interleaved step by step within each repetition (alternating which goes first), with
# per-step I/O accounting (strata-bench's `I/O:` line) and IO efficiency against a fio baseline
# the script runs itself.
#
#   bash bench/io.sh [--modes byrx,iodir,iobuf] [--engines strata,rocksdb] [--reps 3]
#                    [--first-rep 1] [--num 6000000] [--key-size 20] [--value-size 400]
#                    [--block-size 4096] [--cache-mb 32] [--iobuf-mem-mb 384] [--duration 15]
#                    [--threads 1] [--write-rate 2097152] [--fio-secs 10] [--out DIR]
#                    [--overwrite-writes N] [--keep-db] [--rss-trace]
#                    [-- EXTRA strata-bench FLAGS ...]
#
# Modes:
#   byrx   the DB sits in the block cache (cache = the uncompressed data size + 25%);
#   iodir  O_DIRECT: --use_direct_reads --use_direct_io_for_flush_and_compaction, block cache
#          --cache-mb (far smaller than the DB);
#   iobuf  buffered I/O, block cache --cache-mb, and the page cache held below the DB: every
#          step runs in its engine's memory cgroup, limited to --iobuf-mem-mb (RSS + page cache;
#          cgroup v1 memory.limit_in_bytes or v2 memory.max, made under this shell's own cgroup;
#          one per engine, so the engines' steps taking turns leave each one's page cache as
#          its own previous step left it). Without
#          a writable memory cgroup it says so and falls back to dropping the page cache
#          (/proc/sys/vm/drop_caches) before each step, or, if that is refused too, runs on
#          with a warning that the DB may be cached (make it larger than RAM then).
# Steps (per engine, in this order, on its own loaded DB; each step runs for every engine before
# the next step starts, so the engines' runs of a step are seconds apart): fillseq (WAL off, fresh DB; then, in the
# same process and outside its result, waitforcompaction), readrandom,
# revrangewhilewriting and fwdrangewhilewriting (seekrandomwhilewriting, 10 nexts per seek,
# reverse or forward) and readwhilewriting with the writer held to --write-rate bytes/s
# (benchmark.sh's *whilewriting jobs), then overwrite. The read and overwrite steps last
# --duration seconds. Overwrite runs as the seed's overwriteandwait: waitforcompaction follows
# it in the same process, outside its ops/s, so the step's W-Amp counts the compaction debt its
# writes left (cut off at --duration, W-Amp measured how far each engine's compactions had got,
# and an engine that ingests more is further into rewriting its base level). With
# --overwrite-writes N, overwrite writes N keys per engine instead of running --duration
# seconds: every engine ingests the same bytes, so the W-Amp figures compare the engines'
# compactions on equal work.
#
# fio baseline (when fio is installed: apt-get install -y fio): random reads of --block-size
# bytes with O_DIRECT, psync, depth 1, --threads jobs, --fio-secs seconds, on a file on the DBs'
# file system sized like the DB (num x (key + value x 0.5) bytes), laid out once per call. It
# runs right before and right after each engine's point-read step (readrandom,
# readwhilewriting): the one before goes to the step as --fio_baseline_iops (the io_eff
# strata-bench prints), both go to the step's log as "fio baseline: before=B after=A", and
# the report takes io_eff against their mean. The device drifts by 10% and more over a run
# (and by 2x within a minute at times), so a baseline taken minutes away would credit or
# charge the engine with the drift, and one taken on one side of the step half of it. The
# range steps use the readrandom mean, overwrite the readwhilewriting one. Each baseline
# starts after a sync (the previous step's writeback done), and one under half the mode's
# median baseline so far is run again once. Without fio, io_eff stays blank and the script
# says so.
#
# --rss-trace samples each step's resident memory every 100 ms into logs/<step log>.rss.tsv
# (ms since the step started, KiB) and prints the peak and when it came: a step's peak RSS is
# often a compaction or a flush in its last second, which the report's one number hides.
#
# Output (appends when --out names an earlier run's directory, e.g. one repetition per call
# with --reps 1 --first-rep K): <out>/steps.tsv and logs/, and strata-bench-report's
# report.tsv (mode and I/O columns), io.md (per step, engine and repetition), reps.md (median
# and [min, max] over the repetitions, Strata / other engine per repetition), fio.tsv (every baseline) and logs/fio.*;
# each step's engine info LOG beside its output (logs/<step log without .log>.LOG).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

modes="iodir,iobuf" engines="strata,rocksdb" reps=3 first_rep=1 num=6000000 key_size=20
value_size=400 block_size=4096 cache_mb=32 iobuf_mem_mb=384 duration=15 threads=1
write_rate=$((2 << 20)) fio_secs=10 out="" keep_db=0 rss_trace=0 overwrite_writes=0
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --modes) modes="$2"; shift 2 ;;
    --engines) engines="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --first-rep) first_rep="$2"; shift 2 ;;
    --num) num="$2"; shift 2 ;;
    --key-size) key_size="$2"; shift 2 ;;
    --value-size) value_size="$2"; shift 2 ;;
    --block-size) block_size="$2"; shift 2 ;;
    --cache-mb) cache_mb="$2"; shift 2 ;;
    --iobuf-mem-mb) iobuf_mem_mb="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --write-rate) write_rate="$2"; shift 2 ;;
    --fio-secs) fio_secs="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --overwrite-writes) overwrite_writes="$2"; shift 2 ;;
    --keep-db) keep_db=1; shift ;;
    --rss-trace) rss_trace=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,/^set -euo/{/^#/p}' "$0"; exit 0 ;;
    *) echo "bench/io.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$overwrite_writes" in
  ''|*[!0-9]*) echo "bench/io.sh: --overwrite-writes takes a number of keys, not '$overwrite_writes'" >&2; exit 2 ;;
esac
overwrite_len=(--duration="$duration")
if [ "$overwrite_writes" -gt 0 ]; then overwrite_len=(--writes="$overwrite_writes"); fi
IFS=',' read -r -a mode_list <<< "$modes"
IFS=',' read -r -a engine_list <<< "$engines"
for m in "${mode_list[@]}"; do
  case "$m" in byrx|iodir|iobuf) ;; *) echo "bench/io.sh: unknown mode '$m' (byrx, iodir, iobuf)" >&2; exit 2 ;; esac
done
for e in "${engine_list[@]}"; do
  case "$e" in
    strata|rocksdb) ;;
    *) echo "bench/io.sh: engine '$e' is not an LSM engine of strata-bench (strata, rocksdb)" >&2; exit 2 ;;
  esac
done

source "$repo/bench/features.sh"
strata_bench_features "${engine_list[@]}"
(cd "$repo" && cargo build --release -p strata-bench --bins "${feature_args[@]}") >&2
target="${CARGO_TARGET_DIR:-$repo/target}"
bin="$target/release/strata-bench"
report_bin="$target/release/strata-bench-report"
out="${out:-$repo/bench/out/io-$(date -u +%Y%m%d-%H%M%S)}"
mkdir -p "$out/logs" "$out/db"
out="$(cd "$out" && pwd)"
steps="$out/steps.tsv"
[ -f "$steps" ] || printf '# engine\ttest\tbench\tlog\tdu_kb\ttime\tjob_id\tgithash\tmode\n' > "$steps"
githash="$(git -C "$repo" rev-parse --short=10 HEAD 2>/dev/null || true)"
timer=()
if [ -x /usr/bin/time ]; then
  timer=(/usr/bin/time -f '%e %U %S %M' -o)
else
  echo "bench/io.sh: no /usr/bin/time: u_cpu, s_cpu and rss stay blank (apt-get install -y time)" >&2
fi

# The DB's size on disk, roughly: keys plus values at --compression_ratio 0.5.
db_bytes=$((num * (key_size + value_size / 2)))
raw_bytes=$((num * (key_size + value_size)))

# --- fio baseline ---------------------------------------------------------------------------
fio_file="$out/db/fio.baseline" fio_iops=0 fio_user_us=- fio_sys_us=- have_fio=0
if command -v fio > /dev/null; then
  have_fio=1
  [ -f "$out/fio.tsv" ] ||
    printf '# mode\trep\tengine\tstep\tread_iops\tuser_us_per_io\tsys_us_per_io\n' > "$out/fio.tsv"
  echo "== fio: randread bs=$block_size O_DIRECT psync depth 1 numjobs=$threads, ${fio_secs}s before and after each point-read step, on a $((db_bytes >> 20)) MiB file in $out/db" >&2
else
  echo "bench/io.sh: fio is not installed (apt-get install -y fio): no baseline, io_eff stays blank" >&2
fi
fio_run() { # log: runs fio once into $out/log; sets fio_iops to its read IOPS ("-" when it
  # gives none) and fio_user_us, fio_sys_us to its CPU microseconds per read ("-" likewise)
  fio --name=io_eff --filename="$fio_file" --size="$db_bytes" --rw=randread \
    --bs="$block_size" --direct=1 --ioengine=psync --iodepth=1 --numjobs="$threads" \
    --runtime="$fio_secs" --time_based --group_reporting --output-format=terse \
    --terse-version=3 > "$out/$1" 2>&1 || true
  # terse v3: field 8 is the read IOPS of the group; fields 88 and 89 its user and system
  # CPU, each a percentage of the run time per job: CPU seconds per read are
  # percent / 100 x jobs / IOPS (seed 002's usPer and syPer of fio).
  read -r fio_iops fio_user_us fio_sys_us _ <<< "$(awk -F';' -v jobs="$threads" 'NF > 8 {
    u = $88; y = $89; sub(/%$/, "", u); sub(/%$/, "", y)
    if (NF > 89 && $8 > 0 && u ~ /^[0-9.]+$/ && y ~ /^[0-9.]+$/)
      printf "%s %.3f %.3f\n", $8, u / 100 * jobs * 1e6 / $8, y / 100 * jobs * 1e6 / $8
    else
      printf "%s - -\n", $8
  }' "$out/$1" | tail -1) - - -" || true
}
fio_baseline() { # mode rep engine step: sets fio_iops (0 when fio gives none), fio_user_us
  # and fio_sys_us (its CPU per read, "-" when unknown)
  fio_iops=0 fio_user_us=- fio_sys_us=-
  [ "$have_fio" = 1 ] || return 0
  local log="logs/fio.$3.$4.$1.r$2.txt" median
  # The previous step's dirty pages (a buffered WAL, deleted files) are written back first,
  # so that the baseline does not share the device with them.
  sync
  fio_run "$log"
  # A baseline below half the median of this mode's earlier ones is a disturbed run (one
  # gave 819 IOPS among 11K-19K, an io_eff of 11): run it again once, after a pause.
  median="$(awk -F'\t' -v m="$1" '$1 == m { print $5 }' "$out/fio.tsv" | sort -n |
    awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }')"
  if [ -n "$median" ] && [ -n "$fio_iops" ] && awk -v f="$fio_iops" -v m="$median" \
      'BEGIN { exit !(f < m / 2) }'; then
    echo "bench/io.sh: fio gave $fio_iops read IOPS, under half this mode's median baseline ($median): running it again" >&2
    sleep 5
    sync
    fio_run "$log"
  fi
  if [ -z "$fio_iops" ] || [ "$fio_iops" = 0 ] || [ "$fio_iops" = - ]; then
    echo "bench/io.sh: fio gave no read IOPS (see $out/$log): io_eff stays blank for $3 $4.$1" >&2
    fio_iops=0 fio_user_us=- fio_sys_us=-
  else
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "r$2" "$3" "$4" "$fio_iops" "$fio_user_us" \
      "$fio_sys_us" >> "$out/fio.tsv"
    echo "   fio read IOPS: $fio_iops (CPU per read: user $fio_user_us us, system $fio_sys_us us)" >&2
  fi
}
fio_after() { # mode rep engine step log: the baseline after the step (fio_iops holds the one
  # before): both go to the step's log as "fio baseline: before=B after=A", which the report
  # takes io_eff against (their mean), with fio's CPU per read (the two runs' mean) as
  # "user_us_per_io=U sys_us_per_io=S" when both gave it, which the report subtracts from
  # the engine's CPU per operation (cpu_inc); fio_iops becomes that mean for the steps that
  # use it.
  [ "$have_fio" = 1 ] && [ "$fio_iops" != 0 ] || return 0
  local before="$fio_iops" b_user="$fio_user_us" b_sys="$fio_sys_us" cpu=""
  fio_baseline "$1" "$2" "$3" "$4.after"
  if [ "$fio_iops" = 0 ]; then fio_iops="$before"; return 0; fi
  if [ "$b_user" != - ] && [ "$fio_user_us" != - ]; then
    cpu="$(awk -v bu="$b_user" -v bs="$b_sys" -v au="$fio_user_us" -v as="$fio_sys_us" \
      'BEGIN { printf " user_us_per_io=%.3f sys_us_per_io=%.3f", (bu + au) / 2, (bs + as) / 2 }')"
  fi
  printf 'fio baseline: before=%s after=%s%s\n' "$before" "$fio_iops" "$cpu" >> "$out/$5"
  fio_iops="$(awk -v b="$before" -v a="$fio_iops" 'BEGIN { printf "%.0f", (b + a) / 2 }')"
  echo "   io_eff against the mean of the baselines before and after ($fio_iops): $(awk -F'[ =]' \
    -v m="$fio_iops" '/^I\/O: rps=/ { printf "%.3f", $3 / m }' "$out/$5")" >&2
}

# --- iobuf's memory cgroups ----------------------------------------------------------------
# One per engine: the page cache an engine's step leaves is there for its next step, as in a
# run of that engine alone, and the other engine's steps in between neither evict it nor
# leave theirs in its budget.
declare -A cgroups=()
cg_fallback=""
make_cgroup() { # engine: its cgroup in cgroups[engine]; returns 1 (with the fallback set) if none
  local limit=$((iobuf_mem_mb << 20)) own base cg=""
  if [ -d /sys/fs/cgroup/memory ] && [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
    own="$(awk -F: '$2 == "memory" { print $3 }' /proc/self/cgroup)"
    base="/sys/fs/cgroup/memory${own%/}"
    cg="$base/strata-io-$$-$1"
    if mkdir "$cg" 2>/dev/null && echo "$limit" > "$cg/memory.limit_in_bytes"; then
      cgroups[$1]="$cg"
      echo "   iobuf: $1 in cgroup v1 $cg, memory.limit_in_bytes=$limit (RSS + page cache)" >&2
      return 0
    fi
  elif [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
    own="$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup)"
    base="/sys/fs/cgroup${own%/}"
    cg="$base/strata-io-$$-$1"
    if mkdir "$cg" 2>/dev/null && echo "$limit" > "$cg/memory.max"; then
      cgroups[$1]="$cg"
      echo "   iobuf: $1 in cgroup v2 $cg, memory.max=$limit (RSS + page cache)" >&2
      return 0
    fi
  fi
  [ -n "$cg" ] && rmdir "$cg" 2>/dev/null
  remove_cgroups
  if [ -w /proc/sys/vm/drop_caches ]; then
    cg_fallback=drop
    echo "bench/io.sh: iobuf: no writable memory cgroup: falling back to dropping the page cache before each step (the page cache is then not capped during a step)" >&2
  else
    cg_fallback=none
    echo "bench/io.sh: iobuf: no writable memory cgroup and /proc/sys/vm/drop_caches is not writable: the DB may sit in the page cache; use a DB larger than RAM (--num)" >&2
  fi
  return 1
}
remove_cgroups() {
  local e
  for e in "${!cgroups[@]}"; do
    rmdir "${cgroups[$e]}" 2>/dev/null || echo "bench/io.sh: could not remove ${cgroups[$e]}" >&2
  done
  cgroups=()
}
trap 'remove_cgroups; rm -f "$fio_file"' EXIT

common=(
  --num="$num" --key_size="$key_size" --value_size="$value_size" --compression_ratio=0.5
  --block_size="$block_size" --histogram=1 --compression_type=snappy --bloom_bits=10
  --write_buffer_size=$((32 << 20)) --max_write_buffer_number=2 --max_background_jobs=2
  --level_compaction_dynamic_level_bytes=true
)

# --rss-trace: the step's strata-bench (a child of the timer or shell that runs it, or $1
# itself) has its VmRSS sampled every 100 ms into $2 (milliseconds since the step started,
# KiB) until it exits; the peak and when it came are printed.
trace_rss() { # pid file
  local pid="$1" file="$2" t0 bp="" now
  t0="$(date +%s%N)"
  printf '# ms\trss_kib\n' > "$file"
  while kill -0 "$pid" 2> /dev/null; do
    if [ -z "$bp" ]; then
      if [ "$(cat "/proc/$pid/comm" 2> /dev/null)" = strata-bench ]; then bp="$pid"
      else bp="$(pgrep -x strata-bench -P "$pid" | head -1 || true)"; fi
    fi
    if [ -n "$bp" ]; then
      now=$((($(date +%s%N) - t0) / 1000000))
      awk -v t="$now" '/^VmRSS:/ { printf "%s\t%s\n", t, $2 }' "/proc/$bp/status" \
        >> "$file" 2> /dev/null || true
    fi
    sleep 0.1
  done
  awk -F'\t' '!/^#/ && $2 > max { max = $2; at = $1 }
    END { if (max) printf "   peak RSS %.1f MiB at %.1f s (%s)\n", max / 1024, at / 1000, FILENAME }' \
    "$file" >&2
}

after="" # an unmeasured benchmark run after the step's own, before stats
run_step() { # mode engine rep test bench flags...
  local mode="$1" engine="$2" rep="$3" test="$4.$1" bench="$5"; shift 5
  local db="$out/db/$engine" log="logs/$engine.$test.r$rep.log"
  local cmd=("$bin" --engine="$engine" --db="$db" "${common[@]}" "${mode_flags[@]}"
    --seed=$((seed + step_no)) --benchmarks="$bench${after:+,$after},stats"
    --fio_baseline_iops="$fio_iops" "$@" "${extra[@]}")
  step_no=$((step_no + 1))
  local time_file=""
  if [ ${#timer[@]} -gt 0 ]; then
    time_file="$log.time"
    cmd=("${timer[@]}" "$out/$time_file" "${cmd[@]}")
  fi
  local cg="${cgroups[$engine]:-}"
  if [ "$mode" = iobuf ] && [ -n "$cg" ]; then
    cmd=(sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg" "${cmd[@]}")
  elif [ "$mode" = iobuf ] && [ "$cg_fallback" = drop ]; then
    sync; echo 1 > /proc/sys/vm/drop_caches
  fi
  echo "== $mode r$rep $engine: $test" >&2
  local pid status=0
  "${cmd[@]}" > "$out/$log" 2>&1 &
  pid=$!
  if [ "$rss_trace" = 1 ]; then trace_rss "$pid" "$out/${log%.log}.rss.tsv"; fi
  wait "$pid" || status=$?
  if [ "$status" != 0 ]; then
    echo "   (failed: see $out/$log)" >&2
  fi
  grep -E "^$bench |^I/O:" "$out/$log" | tail -2 | cut -c1-150 >&2 || true
  # The engine's own info LOG of this step (its flushes, compactions and stalls), beside the
  # step's output: both engines name it LOG and start it afresh at each open.
  if [ -f "$db/LOG" ]; then cp "$db/LOG" "$out/${log%.log}.LOG"; fi
  local du_kb=""
  if [ -d "$db" ]; then du_kb="$(du -sk "$db" | cut -f1)"; fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$engine" "$test" "$bench" "$log" "$du_kb" \
    "$time_file" "r$rep" "$githash" "$mode" >> "$steps"
}

seed="$(date +%s)"
for mode in "${mode_list[@]}"; do
  case "$mode" in
    byrx) mode_flags=(--cache_size=$((raw_bytes + raw_bytes / 4))) ;;
    iodir) mode_flags=(--cache_size=$((cache_mb << 20)) --use_direct_reads=true
      --use_direct_io_for_flush_and_compaction=true) ;;
    iobuf)
      mode_flags=(--cache_size=$((cache_mb << 20)))
      for e in "${engine_list[@]}"; do make_cgroup "$e" || break; done ;;
  esac
  for ((rep = first_rep; rep < first_rep + reps; rep++)); do
    # Engines alternate which goes first from one repetition to the next.
    order=("${engine_list[@]}")
    if [ $((rep % 2)) = 0 ]; then
      order=()
      for ((i = ${#engine_list[@]} - 1; i >= 0; i--)); do order+=("${engine_list[$i]}"); done
    fi
    # The range steps use the engine's readrandom baseline, overwrite its readwhilewriting one.
    declare -A rr_fio=() ww_fio=()
    # Each engine loads its own DB; then the steps run engine by engine, so the two runs of a
    # step are seconds apart and the device's drift (10% and more over minutes) falls on both.
    # Every engine runs the same steps in the same order on its DB, with the same seeds.
    for engine in "${order[@]}"; do
      step_no=0 fio_iops=0
      rm -rf "$out/db/$engine"
      # The load's compaction debt is paid before the reads (benchmark_compare.sh's
      # waitforcompaction): unmeasured, so every engine's read steps start from a settled LSM.
      after=waitforcompaction run_step "$mode" "$engine" "$rep" fillseq fillseq --disable_wal=1
    done
    for engine in "${order[@]}"; do
      step_no=1
      fio_baseline "$mode" "$rep" "$engine" readrandom
      run_step "$mode" "$engine" "$rep" readrandom readrandom --use_existing_db=1 \
        --threads="$threads" --duration="$duration"
      fio_after "$mode" "$rep" "$engine" readrandom "logs/$engine.readrandom.$mode.r$rep.log"
      rr_fio[$engine]="$fio_iops"
    done
    for engine in "${order[@]}"; do
      step_no=2 fio_iops="${rr_fio[$engine]}"
      run_step "$mode" "$engine" "$rep" revrangeww seekrandomwhilewriting --use_existing_db=1 \
        --threads="$threads" --seek_nexts=10 --reverse_iterator=true \
        --benchmark_write_rate_limit="$write_rate" --duration="$duration"
    done
    for engine in "${order[@]}"; do
      step_no=3 fio_iops="${rr_fio[$engine]}"
      run_step "$mode" "$engine" "$rep" fwdrangeww seekrandomwhilewriting --use_existing_db=1 \
        --threads="$threads" --seek_nexts=10 --reverse_iterator=false \
        --benchmark_write_rate_limit="$write_rate" --duration="$duration"
    done
    for engine in "${order[@]}"; do
      step_no=4
      fio_baseline "$mode" "$rep" "$engine" readww
      run_step "$mode" "$engine" "$rep" readww readwhilewriting --use_existing_db=1 \
        --threads="$threads" --benchmark_write_rate_limit="$write_rate" --duration="$duration"
      fio_after "$mode" "$rep" "$engine" readww "logs/$engine.readww.$mode.r$rep.log"
      ww_fio[$engine]="$fio_iops"
    done
    for engine in "${order[@]}"; do
      step_no=5 fio_iops="${ww_fio[$engine]}"
      after=waitforcompaction run_step "$mode" "$engine" "$rep" overwrite overwrite \
        --use_existing_db=1 --threads="$threads" "${overwrite_len[@]}"
      if [ "$keep_db" = 0 ]; then rm -rf "$out/db/$engine"; fi
    done
  done
  if [ "$mode" = iobuf ]; then remove_cgroups; fi
done
rm -f "$fio_file"
if [ "$keep_db" = 0 ]; then rmdir "$out/db" 2>/dev/null || true; fi

"$report_bin" "$out" >&2
for f in reps.md io.md; do
  if [ -f "$out/$f" ]; then echo; echo "== $out/$f"; cat "$out/$f"; fi
done
