#!/usr/bin/env bash
# The main job: build in release mode and run the benchmark on the embedded engine.
# Until the db_bench-compatible suite lands (strata-bench), this loads and reads back
# NUM keys of 16+100 bytes. Usage: bash bench/run.sh [NUM]
set -euo pipefail
cd "$(dirname "$0")/.."
num="${1:-1000000}"
cargo run --release -p strata --example load_and_read -- "$num"
