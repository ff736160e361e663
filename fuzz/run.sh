#!/usr/bin/env bash
# Runs every fuzz target of a fuzz build for a set time, each on a working copy of its seed corpus
# (fuzz/corpus/<target>/, which is not changed): fuzz/run.sh <build folder> <seconds per target>.
# Prints one line per target with the runs made; stops at the first target that fails (a crash, a
# sanitizer report, a broken invariant), leaving the input that made it fail in <build>/fuzz/.
set -euo pipefail
build=$(cd "${1:?usage: fuzz/run.sh <build folder> <seconds per target>}" && pwd) # absolute: the targets run inside it
seconds=${2:?usage: fuzz/run.sh <build folder> <seconds per target>}
here=$(cd "$(dirname "$0")" && pwd)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
total=0
for seeds in "$here"/corpus/*/; do
  target=$(basename "$seeds")
  binary="$build/fuzz/$target"
  [ -x "$binary" ] || { echo "fuzz: $binary is missing; build the target mneme_fuzzers" >&2; exit 1; }
  work="$build/fuzz/corpus/$target"
  mkdir -p "$work"
  cp -n "$seeds"* "$work"/ 2>/dev/null || true
  log="$build/fuzz/$target.log"
  if ! (cd "$build/fuzz" && "$binary" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 \
        "$work" >"$log" 2>&1); then
    tail -n 40 "$log" >&2
    echo "fuzz: $target failed; its input is in $build/fuzz (crash-*, leak-*, timeout-*), the log in $log" >&2
    exit 1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  total=$((total + ${runs:-0}))
  printf 'fuzz: %-20s %10s runs in %s s, no failure\n' "$target" "${runs:-?}" "$seconds"
done
echo "fuzz: $total runs in all, no failure"
