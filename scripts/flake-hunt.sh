#!/usr/bin/env bash
# `make flake-hunt`: runs `make test` repeatedly, some runs under CPU contention, then the e2e suites on
# envtest with Ginkgo's --repeat, and prints per test its runs, failures and first failure message.
# Fails when any run failed. Artifacts: $ARTIFACTS/flake-hunt/ (a directory per run).
#
#   FLAKE_HUNT_RUNS=20              full `make test` runs (0: none)
#   FLAKE_HUNT_CONTENTION=alternate none | stress (every run with stress-ng busy on every core) |
#                                   alternate (every second run under stress-ng) | pairs (two runs side by side)
#   FLAKE_HUNT_E2E_REPEATS=10       runs of the e2e suites on envtest (ginkgo --repeat, which stops at
#                                   the first failing attempt; 0: none)
#   FLAKE_HUNT_E2E=./e2e            where the suites are (e.g. ./e2e/cvo to chase one suite's flake);
#                                   GINKGO_LABEL_FILTER narrows the specs as for make e2e
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
runs=${FLAKE_HUNT_RUNS:-20}
contention=${FLAKE_HUNT_CONTENTION:-alternate}
e2e_repeats=${FLAKE_HUNT_E2E_REPEATS:-10}
hunt=$ARTIFACTS/flake-hunt
case $contention in none | stress | alternate | pairs) ;;
  *) die "FLAKE_HUNT_CONTENTION=$contention: use none, stress, alternate or pairs" ;;
esac
rm -rf "$hunt"
mkdir -p "$hunt"
bash scripts/tools.sh

stress_pid=
stress_start() {
  command -v stress-ng >/dev/null || step "install stress-ng (apt)" apt_install stress-ng
  stress-ng --cpu "$(nproc)" --quiet >/dev/null 2>&1 &
  stress_pid=$!
}
stress_stop() {
  [ -n "$stress_pid" ] || return 0
  kill "$stress_pid" 2>/dev/null || true
  wait "$stress_pid" 2>/dev/null || true
  stress_pid=
}
trap stress_stop EXIT

# test_run N [LABEL]: one `make test` into $hunt/make-test/run-N (log, JUnit, rc).
test_run() {
  local dir
  dir=$hunt/make-test/run-$(printf %02d "$1")
  mkdir -p "$dir"
  local start=$SECONDS rc=0
  ARTIFACTS=$dir bash scripts/test.sh >"$dir/log" 2>&1 || rc=$?
  echo "$rc" >"$dir/rc"
  log "make test run $1/$runs${2:+ ($2)}: rc=$rc in $((SECONDS - start))s: $(tail -n 1 "$dir/log")"
}

failed_runs=0
i=1
while [ "$i" -le "$runs" ]; do
  case $contention in
    none) test_run "$i" ;;
    stress) stress_start; test_run "$i" "under stress-ng"; stress_stop ;;
    alternate)
      if [ $((i % 2)) = 0 ]; then stress_start; test_run "$i" "under stress-ng"; stress_stop
      else test_run "$i"; fi ;;
    pairs)
      test_run "$i" "side by side" &
      if [ $((i + 1)) -le "$runs" ]; then test_run $((i + 1)) "side by side"; fi
      wait
      i=$((i + 1)) ;;
  esac
  i=$((i + 1))
done
for rc in "$hunt"/make-test/run-*/rc; do
  [ -e "$rc" ] && [ "$(cat "$rc")" != 0 ] && failed_runs=$((failed_runs + 1))
done

e2e_rc=0
if [ "$e2e_repeats" -gt 0 ]; then
  # Each attempt of each suite writes its own JUnit (framework/suite: the CLI keeps only the last one's).
  e2e=$hunt/e2e
  mkdir -p "$e2e/junit"
  log "e2e suites on envtest, ginkgo --repeat=$((e2e_repeats - 1)) (log: $e2e/log)"
  CLEANUP_E2E_JUNIT_PER_RUN_DIR=$e2e/junit ARTIFACTS=$e2e PROVIDER=envtest CLEANUP_E2E_PROVIDER=envtest \
    go run github.com/onsi/ginkgo/v2/ginkgo run -r --procs="${GINKGO_PROCS:-2}" --randomize-all --keep-going \
      --repeat=$((e2e_repeats - 1)) --timeout="${E2E_TIMEOUT:-6h}" \
      ${GINKGO_LABEL_FILTER:+--label-filter="$GINKGO_LABEL_FILTER"} "${FLAKE_HUNT_E2E:-./e2e}" >"$e2e/log" 2>&1 || e2e_rc=$?
  log "e2e repeats: rc=$e2e_rc, $(find "$e2e/junit" -name 'junit-*.xml' | wc -l) suite reports; $(grep -E 'Tests failed on attempt' "$e2e/log" || echo 'no attempt failed')"
fi

# Per test, over every make test run's and e2e attempt's JUnit.
mapfile -t junits < <(find "$hunt/make-test" "$hunt/e2e/junit" -name 'junit-*.xml' 2>/dev/null | sort)
summary_rc=0
if [ "${#junits[@]}" -gt 0 ]; then
  go run ./scripts/junitsum -per-test "${junits[@]}" >"$hunt/summary.txt" || summary_rc=1
  cat "$hunt/summary.txt"
else
  log "no JUnit report was written"; summary_rc=1
fi
log "flake hunt: $runs make test runs (contention: $contention), $failed_runs failed; e2e repeats: $e2e_repeats, rc=$e2e_rc. Artifacts: $hunt"
[ "$failed_runs" = 0 ] && [ "$e2e_rc" = 0 ] && [ "$summary_rc" = 0 ]
