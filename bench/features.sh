# strata-bench's cargo features for a run's engines (sourced by the bench/ scripts that build
# strata-bench; not run on its own).
#
# Every script that drives RocksDB builds one feature set on a machine: `rocksdb` with every
# peer the machine can build (sqlite, fjall and redb always; leveldb and kyoto where their C
# headers are installed, as bench/setup-peers.sh installs them). Another set can give the
# rocksdb crate's build dependencies other unified features, and cargo then builds
# librocksdb-sys (10-40 minutes) again, in a build directory of its own; with one set, RocksDB
# is built once per machine and every script reuses it. A run without RocksDB builds only
# the features its engines name.

# c_header_installed HEADER: whether HEADER is in the system's include directories.
c_header_installed() {
  local d
  for d in /usr/include /usr/local/include; do [ -f "$d/$1" ] && return 0; done
  return 1
}

# peer_buildable ENGINE: whether strata-bench's feature ENGINE can be built here.
peer_buildable() {
  case "$1" in
    leveldb) [ -n "${LEVELDB_LIB_DIR:-}" ] || c_header_installed leveldb/c.h ;;
    kyoto) [ -n "${KYOTOCABINET_LIB_DIR:-}" ] || c_header_installed kclangc.h ;;
    *) return 0 ;;
  esac
}

# strata_bench_features FEATURE...: sets the array `feature_args` to the cargo arguments
# that build strata-bench with FEATURE... (engines of strata-bench: rocksdb, sqlite, leveldb,
# kyoto, fjall, redb; `strata`, Strata's configurations such as blob.sh's `strata-noblob`,
# and repeats are ignored): empty for none; with `rocksdb` among them, the machine's one
# RocksDB set above.
strata_bench_features() {
  local wanted=() f p rocks=0
  for f in "$@"; do
    case "$f" in
      strata|strata-*|'') ;;
      rocksdb) rocks=1 ;;
      *) case " ${wanted[*]} " in *" $f "*) ;; *) wanted+=("$f") ;; esac ;;
    esac
  done
  if [ "$rocks" = 1 ]; then
    wanted=(rocksdb)
    for p in sqlite leveldb kyoto fjall redb; do
      if peer_buildable "$p"; then wanted+=("$p"); fi
    done
  fi
  feature_args=()
  if [ ${#wanted[@]} -gt 0 ]; then
    feature_args=(--features "$(IFS=','; echo "${wanted[*]}")")
  fi
}
