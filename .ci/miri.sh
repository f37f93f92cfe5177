#!/usr/bin/env bash
# The memtable's unsafe core under Miri: the arena's and skiplist's tests and the concurrent
# insert and lock-free read tests (the others copy megabytes, too slow for Miri's interpreter),
# which checks every unsafe access and reports data races on the nodes' plain bytes (what
# loom, tracking atomics only, cannot see). Needs a nightly toolchain with the miri component
# (rustup toolchain install nightly --component miri rust-src); skipped with a message where
# there is none. Loops scale down under Miri (`cfg!(miri)`).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! cargo +nightly miri --version > /dev/null 2>&1; then
  echo "miri.sh: skipped: no nightly toolchain with Miri (rustup toolchain install nightly --component miri rust-src)"
  exit 0
fi
MIRIFLAGS="${MIRIFLAGS:-} -Zmiri-disable-isolation" cargo +nightly miri test -p strata --lib -- memtable::skiplist memtable::arena \
  memtable::tests::concurrent_writers memtable::tests::one_writer_many_readers \
  memtable::tests::seek_while_inserting memtable::tests::single_entry_writes_are_linked \
  memtable::tests::a_read_merges_pending memtable::tests::unlinked_adds_wait \
  memtable::tests::reads_that_come_many
