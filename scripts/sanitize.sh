#!/usr/bin/env bash
# Runs the test suites under the sanitizers (docs/sanitizers.md); `make sanitize` calls it. Parts, from the
# arguments or SANITIZE_PARTS (default "asan tsan"), run in the order given:
#   asan       build-asan (GCC, ASan + UBSan: -DGEOMX_ASAN=ON, CUDA off): the whole tree, the whole ctest suite
#   asan-comm  build-asan: only the four tests/comm executables and their ctest cases (the part that fits CI)
#   tsan       build-tsan (GCC, -fsanitize=thread, CUDA off): the tests/comm executables and the tests that run every
#              role of a topology as threads of one process (cli_sync_tests, cli_failure_tests' ClusterFailureTest,
#              cli_tests' ClusterTest and FsaEquivalenceTest)
# A report ends the process with a failure (abort_on_error / halt_on_error), so the test fails; the output of every
# test (passed ones too, and the stderr of child processes such as the geomx binary where a test passes it on) is
# then searched for reports (ctest's Testing/Temporary/LastTest.log). Exits 1 when a test failed or a report was
# found, 0 otherwise. Suppressions: scripts/tsan.supp, scripts/lsan.supp (each entry says why).
# Environment: JOBS (parallel builds and tests, default: nproc), SANITIZE_TIMEOUT (ctest's per-test default, 900 s).
#   scripts/sanitize.sh                 # asan then tsan
#   scripts/sanitize.sh tsan
#   SANITIZE_PARTS=asan-comm scripts/sanitize.sh
set -uo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
JOBS=${JOBS:-$(nproc)}
TIMEOUT=${SANITIZE_TIMEOUT:-900}
if [[ $# -gt 0 ]]; then
  PARTS="$*"
else
  PARTS=${SANITIZE_PARTS:-asan tsan}
fi

# The sanitizers' runtime options. The first report ends the process: ASan/LSan and UBSan abort (SIGABRT, exit
# 134 through a shell: a geomx child process that hits one cannot pass for a user error's 2 or a runtime failure's
# 1), TSan exits 66. Reports go to stderr: log_path is not usable here, GCC 12's separate libasan and libubsan
# runtimes drop it for UBSan reports and for ASan reports that follow one.
ASAN_ENV=(
  "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:check_initialization_order=1"
  "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1"
  "LSAN_OPTIONS=suppressions=$ROOT/scripts/lsan.supp:print_suppressions=0"
)
TSAN_ENV=(
  "TSAN_OPTIONS=suppressions=$ROOT/scripts/tsan.supp:halt_on_error=1:second_deadlock_stack=1"
)
REPORT_REGEX='(ERROR|WARNING): (AddressSanitizer|LeakSanitizer|ThreadSanitizer)|runtime error:'
REPORT_REGEX+='|SUMMARY: (AddressSanitizer|LeakSanitizer|ThreadSanitizer|UndefinedBehaviorSanitizer)' 

COMM_TESTS=(comm_transport_tests comm_ps_tests comm_compression_tests comm_p3_tests)
# geomx too: a few cluster cases check a refusal through the binary.
CLUSTER_TESTS=(cli_sync_tests cli_failure_tests cli_tests geomx)
# The ctest cases of CLUSTER_TESTS that start every role as threads: every suite of cli_sync_tests, and of cli_tests
# and cli_failure_tests the cluster suites (ClusterTest, ClusterFailureTest, ClusterResumeTest, FsaEquivalenceTest;
# the others run the geomx binary or parse recipes: the asan part covers them). Parameterised cases are named
# Prefix/Suite.Case/N, hence no ^.
CLUSTER_REGEX='(Compression[A-Za-z]*|LinkPlan|Esync[A-Za-z]*|Hfa[A-Za-z]*|AveragingRulesTest|CompressedWanTest'
CLUSTER_REGEX+='|DilocoTest|Mixed[A-Za-z]*|P3Test|Cluster[A-Za-z]*Test|FsaEquivalenceTest)[.]'


failed=()
log() { echo "sanitize: $*"; }

# configure BUILD_DIR CMAKE_ARGS...: configures a build folder that is not configured yet.
configure() {
  local dir=$1
  shift
  if [[ -f $dir/build.ninja ]]; then
    log "$dir is already configured"
    return 0
  fi
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGEOMX_WITH_CUDA=OFF "$@"
}

# run_ctest PART TEST_DIR ENV_ARRAY_NAME CTEST_ARGS...: runs ctest in TEST_DIR with the sanitizer environment, then
# searches the output of every test for reports.
run_ctest() {
  local part=$1 dir=$2 envname=$3
  shift 3
  local -n envs=$envname
  local t0=$SECONDS
  env "${envs[@]}" ctest --test-dir "$dir" --output-on-failure -j "$JOBS" --timeout "$TIMEOUT" "$@"
  local rc=$?
  log "$part: ctest exit $rc after $((SECONDS - t0)) s"
  [[ $rc -eq 0 ]] || failed+=("$part (ctest exit $rc)")
  local out=$dir/Testing/Temporary/LastTest.log
  local found
  found=$(grep -E -c "$REPORT_REGEX" "$out" 2>/dev/null)
  if [[ ${found:-0} -gt 0 ]]; then
    log "$part: sanitizer reports in the tests' output ($out):"
    grep -E -n "$REPORT_REGEX" "$out" | head -n 40
    failed+=("$part ($found report line(s) in $out)")
  fi
}

build() {
  local part=$1 dir=$2
  shift 2
  local t0=$SECONDS
  if ! cmake --build "$dir" -j "$JOBS" "$@"; then
    failed+=("$part (build)")
    return 1
  fi
  log "$part: build took $((SECONDS - t0)) s"
}

part_asan() {
  configure build-asan -DGEOMX_ASAN=ON || { failed+=("asan (configure)"); return; }
  build asan build-asan || return
  run_ctest asan build-asan ASAN_ENV
}

part_asan_comm() {
  configure build-asan -DGEOMX_ASAN=ON || { failed+=("asan-comm (configure)"); return; }
  build asan-comm build-asan --target "${COMM_TESTS[@]}" || return
  run_ctest asan-comm build-asan/tests/comm ASAN_ENV
}

part_tsan() {
  configure build-tsan -DCMAKE_CXX_FLAGS="-fsanitize=thread -fno-omit-frame-pointer" \
    -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread || { failed+=("tsan (configure)"); return; }
  build tsan build-tsan --target "${COMM_TESTS[@]}" "${CLUSTER_TESTS[@]}" || return
  run_ctest tsan-comm build-tsan/tests/comm TSAN_ENV
  run_ctest tsan-cluster build-tsan/tests/cli TSAN_ENV -R "$CLUSTER_REGEX"
}

for part in $PARTS; do
  log "part $part"
  case "$part" in
    asan) part_asan ;;
    asan-comm) part_asan_comm ;;
    tsan) part_tsan ;;
    *)
      echo "sanitize: unknown part '$part' (known: asan, asan-comm, tsan)" >&2
      exit 2
      ;;
  esac
done

if [[ ${#failed[@]} -gt 0 ]]; then
  log "FAILED: ${failed[*]}"
  exit 1
fi
log "clean: $PARTS"
