#!/usr/bin/env bash
# `make fuzz` (docs/fuzzing.md): builds the libFuzzer targets of fuzz/ with clang in their own build folder and runs
# each for FUZZ_SECONDS on a scratch copy of its seed corpus (tests/fuzz/corpus/<target>/ and the crash inputs of
# tests/fuzz/regressions/<target>/; nothing is written under tests/). Prints executions per target; exits 1 when a
# target found a crash, hang, leak or an oversized allocation (the input is kept in the scratch folder).
#   FUZZ_SECONDS=60        seconds per target
#   FUZZ_RUNS=<n>          stop each target after n executions instead (FUZZ_SECONDS is then only a cap: default
#                          one day)
#   FUZZ_TARGETS="..."     which targets (default: recipe message frame idx csv libsvm cifar)
#   FUZZ_BUILD=build-fuzz  the clang build folder (configured here when it is not yet)
#   FUZZ_OUT=<dir>         scratch folder (default: a new mktemp -d folder, kept)
#   FUZZ_JOBS=<n>          parallel build jobs (default: nproc)
#   FUZZ_FORK=<n>          run each target as one libFuzzer process that fuzzes in n child processes at a time
#                          (libFuzzer's -fork=n: a shared corpus, the executions of all children counted together,
#                          FUZZ_RUNS stops the whole run); default: one process
# Requires clang with libFuzzer: scripts/install-deps.sh --fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${FUZZ_RUNS:-}
if [[ -n "$runs" && ! "$runs" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz: FUZZ_RUNS must be a positive whole number, not '$runs'" >&2
  exit 2
fi
seconds=${FUZZ_SECONDS:-$([[ -n "$runs" ]] && echo 86400 || echo 60)}
limit=(-max_total_time="$seconds")
[[ -n "$runs" ]] && limit+=(-runs="$runs")
fork=${FUZZ_FORK:-}
if [[ -n "$fork" ]]; then
  if [[ ! "$fork" =~ ^[1-9][0-9]*$ ]]; then
    echo "fuzz: FUZZ_FORK must be a positive whole number, not '$fork'" >&2
    exit 2
  fi
  limit+=(-fork="$fork")
fi
targets=${FUZZ_TARGETS:-recipe message frame idx csv libsvm cifar}
build=${FUZZ_BUILD:-build-fuzz}
jobs=${FUZZ_JOBS:-$(nproc)}
out=${FUZZ_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/geomx-fuzz-run.XXXXXX")}

if ! command -v clang++ >/dev/null; then
  echo "fuzz: clang++ not found (scripts/install-deps.sh --fuzz installs it)" >&2
  exit 2
fi
if [[ ! -f "$build/build.ninja" ]]; then
  CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGEOMX_FUZZ=ON \
    -DGEOMX_WITH_CUDA=OFF -DGEOMX_BUILD_TESTS=OFF
fi
binaries=()
for t in $targets; do binaries+=("${t}_fuzz"); done
cmake --build "$build" -j "$jobs" --target "${binaries[@]}"

# Longest input per target: room for a few CIFAR-10 records (3073 bytes each) and a full recipe.
max_len() {
  case "$1" in
    cifar) echo 16384 ;;
    recipe | frame) echo 8192 ;;
    *) echo 4096 ;;
  esac
}

# The reader targets' scratch files (fuzz/targets.h ScratchDir): on tmpfs when there is one, removed at the end.
GEOMX_FUZZ_TMP=$(mktemp -d /dev/shm/geomx-fuzz-files.XXXXXX 2>/dev/null || mktemp -d)
export GEOMX_FUZZ_TMP
trap 'rm -rf "$GEOMX_FUZZ_TMP"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
failed=()
summary=()
for t in $targets; do
  work="$out/$t"
  mkdir -p "$work/corpus" "$work/artifacts"
  cp tests/fuzz/corpus/"$t"/* "$work/corpus/"
  if compgen -G "tests/fuzz/regressions/$t/*" >/dev/null; then cp tests/fuzz/regressions/"$t"/* "$work/corpus/"; fi
  echo "fuzz: $t for ${runs:+$runs executions or }${seconds}s (log: $work/log)"
  rc=0
  "$build/fuzz/${t}_fuzz" "$work/corpus" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 \
    -malloc_limit_mb=1024 -max_len="$(max_len "$t")" -artifact_prefix="$work/artifacts/" -print_final_stats=1 \
    >"$work/log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log" | tail -1)
  if [[ -n "$fork" ]]; then  # the parent's progress lines "#N: cov: ... exec/s R ..." count every child
    execs=$(sed -n 's/^#\([0-9][0-9]*\): cov:.*/\1/p' "$work/log" | tail -1)
    # the average over the run: the lines' own exec/s is the last job's
    secs=$(sed -n 's/^#[0-9][0-9]*: cov:.* time: \([0-9][0-9]*\)s.*/\1/p' "$work/log" | tail -1)
    rate=$([[ -n "$execs" && -n "$secs" && "$secs" -gt 0 ]] && echo $((execs / secs)) || echo "")
  fi
  peak=$(sed -n 's/^stat::peak_rss_mb: *//p' "$work/log" | tail -1)
  found=$(ls "$work/artifacts" 2>/dev/null | head -5 | tr '\n' ' ')
  if [[ $rc -ne 0 || -n "$found" ]]; then
    failed+=("$t")
    summary+=("$(printf '%-8s %12s execs  FAILED (rc %d) %s' "$t" "${execs:-?}" "$rc" "${found:-see $work/log}")")
    tail -40 "$work/log" >&2
  else
    summary+=("$(printf '%-8s %12s execs  %6s/s  peak %5s MB  ok' "$t" "${execs:-?}" "${rate:-?}" "${peak:-?}")")
  fi
done

echo
echo "fuzz: ${runs:+$runs executions or }${seconds}s per target, scratch folder $out"
printf '  %s\n' "${summary[@]}"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz: crashes in: ${failed[*]} (inputs under $out/<target>/artifacts/; minimise with -minimize_crash=1," \
    "add them to tests/fuzz/regressions/<target>/)" >&2
  exit 1
fi
