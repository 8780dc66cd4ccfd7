#!/usr/bin/env bash
# Long soak of the randomized sequence tests make test runs a few seeds of: operand-cleanup's lifecycle
# sequences (pkg/operandcleanup, on envtest), the payload applier's delete-state sequences
# (pkg/payload/applier/deletestate) and OLM v1's uninstall lifecycle (pkg/extensioncleanup, one seed a chunk).
#
# A test stops at its first failing sequence, so sequences run in chunks from their own base seeds and
# a failure ends only its chunk. Output in $ARTIFACTS/soak/: seeds.txt (a line per chunk), failures/
# (failure text and replay command), logs/. Fails when any chunk failed.
#
#   SOAK_SEED=<the clock>         base seed; chunk k of a test starts at SOAK_SEED + k × its chunk size
#   SOAK_MINUTES=90               no chunk starts after this; a running one gets this plus a margin
#   SOAK_LIFECYCLE_SEQUENCES=300  SOAK_LIFECYCLE_STEPS=30  SOAK_LIFECYCLE_CHUNK=50   (0 sequences: skip)
#   SOAK_APPLIER_SEQUENCES=10000  SOAK_APPLIER_STEPS=60    SOAK_APPLIER_CHUNK=1000   (0 sequences: skip)
#   SOAK_EXT_SEEDS=20             SOAK_EXT_ROUNDS=6                                   (0 seeds: skip)
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
ARTIFACTS=${ARTIFACTS:-$REPO_ROOT/_artifacts}
out=$ARTIFACTS/soak
seed=${SOAK_SEED:-$(printf '%(%s)T' -1)}
minutes=${SOAK_MINUTES:-90}
lc_n=${SOAK_LIFECYCLE_SEQUENCES:-300} lc_steps=${SOAK_LIFECYCLE_STEPS:-30} lc_chunk=${SOAK_LIFECYCLE_CHUNK:-50}
ap_n=${SOAK_APPLIER_SEQUENCES:-10000} ap_steps=${SOAK_APPLIER_STEPS:-60} ap_chunk=${SOAK_APPLIER_CHUNK:-1000}
ext_n=${SOAK_EXT_SEEDS:-20} ext_rounds=${SOAK_EXT_ROUNDS:-6}
for v in seed minutes lc_n lc_steps lc_chunk ap_n ap_steps ap_chunk ext_n ext_rounds; do
  [[ ${!v} =~ ^[0-9]+$ ]] || die "soak: $v=${!v}: want a non-negative integer"
done
{ [ "$lc_chunk" -gt 0 ] && [ "$ap_chunk" -gt 0 ]; } || die "soak: chunk sizes must be positive"
rm -rf "$out"
mkdir -p "$out/failures" "$out/logs"
# The test binaries stay out of _cache/, which CI keeps between runs.
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
seeds=$out/seeds.txt
deadline=$((SECONDS + minutes * 60))
{
  echo "# soak of $(git rev-parse HEAD 2>/dev/null || echo "an unknown commit"), base seed $seed"
  echo "# replay a whole run: SOAK_SEED=$seed with the same sizes; one chunk's seeds with the command in its failure file"
  echo "# test chunk first-seed last-seed steps time result"
} >"$seeds"

# extract LOG START STOP FILE: the lines of LOG from the first one matching START through the first
# one after it matching STOP (the test's failure text) into FILE; false when START is not in LOG.
extract() {
  awk -v start="$2" -v stop="$3" '
    !on && $0 ~ start { on = 1 }
    on { print; if ($0 ~ stop) exit }
  ' "$1" >"$4"
  [ -s "$4" ] || { rm -f "$4"; return 1; }
}

# chunks TEST N CHUNK STEPS RUNNER: runs N sequences of TEST in chunks, RUNNER K FIRST COUNT LOG for
# chunk K; records each chunk in seeds.txt; returns 1 when a chunk failed.
chunks() {
  local test=$1 n=$2 chunk=$3 steps=$4 runner=$5 k=0 done=0 failed=0
  while [ "$done" -lt "$n" ]; do
    local count=$((n - done < chunk ? n - done : chunk)) first=$((seed + done))
    local last=$((first + count - 1)) log=$out/logs/$test-$k.log
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "$test $k $first $last $steps - not run (SOAK_MINUTES=$minutes spent)" >>"$seeds"
    else
      local rc=0 start=$SECONDS
      "$runner" "$k" "$first" "$count" "$log" || rc=$?
      local result="pass" at
      if [ "$rc" != 0 ]; then
        failed=1 result="FAIL(rc=$rc)"
        if at=$("${test}_failure" "$log" "$k"); then
          result="$result at seed $at, seeds after it not run: failures/$test-seed-$at.txt"
        else
          tail -n 200 "$log" >"$out/failures/$test-chunk-$k.txt"
          result="$result, no failure text (nothing ran, a timeout or a crash?): failures/$test-chunk-$k.txt"
        fi
      fi
      echo "$test $k $first $last $steps $((SECONDS - start))s $result" >>"$seeds"
      log "soak: $test chunk $k (seeds $first..$last) in $((SECONDS - start))s: $result"
    fi
    done=$((done + count)) k=$((k + 1))
  done
  return "$failed"
}

# A chunk's go test timeout: the rest of SOAK_MINUTES plus 20 minutes, so a chunk started near the
# deadline can finish and a hung one still ends before the job does.
chunk_timeout() { echo "$(((deadline - SECONDS) / 60 + 20))m"; }

# ran LOG PATTERN: true when LOG shows that the test ran (PATTERN); else says so in LOG. A renamed test
# or spec matches nothing, and a run of nothing passes.
ran() { grep -Eq "$2" "$1" || { echo "soak: nothing ran (no line matches '$2')" >>"$1"; return 3; }; }

# The test binaries are built once and run in their package's directory, as go test does.
build() { step "go test -c $1" go test -c -o "$bin/$2.test" "./$1"; }

applier_run() {
  (cd pkg/payload/applier/deletestate &&
    CLEANUP_E2E_SEED=$2 CLEANUP_E2E_SEQUENCES=$3 CLEANUP_E2E_STEPS=$ap_steps \
      "$bin/deletestate.test" -test.run '^TestDeleteStateSequencesFollowTheModel$' -test.v \
      -test.timeout "$(chunk_timeout)") >"$4" 2>&1 && ran "$4" 'sequences of [0-9]+ steps \(seeds'
}
# failure_file TEST FILE SEED: names FILE after the failing SEED and prints SEED; false when SEED is
# empty. The failure text has the replay command, with the soak's sequence length (internal/seeded).
failure_file() {
  [ -n "$3" ] || return 1
  mv "$2" "$out/failures/$1-seed-$3.txt"
  echo "$3"
}

# *_failure LOG CHUNK: the test's failure text in LOG into failures/, and its seed on stdout.
# sequence_test.go's: "the applier diverges ... (seed N, replay with ...)" up to its "=> ..." line.
applier_failure() {
  local f=$out/failures/applier-chunk-$2.txt s
  extract "$1" 'the applier diverges from the reference model' '^[[:space:]]*=> ' "$f" || return 1
  s=$(grep -o 'reference model (seed -\?[0-9]*' "$f" | grep -o -- '-\?[0-9]*$' | head -n 1) || true
  failure_file applier "$f" "$s"
}

# Ginkgo's own suite timeout (1 h by default) gets the same bound as go test's.
lifecycle_run() {
  local timeout
  timeout=$(chunk_timeout)
  (cd pkg/operandcleanup &&
    CLEANUP_E2E_SEED=$2 CLEANUP_E2E_SEQUENCES=$3 CLEANUP_E2E_STEPS=$lc_steps \
      "$bin/operandcleanup.test" -test.run '^TestOperandCleanup$' -test.timeout "$timeout" \
      -ginkgo.timeout "$timeout" -ginkgo.focus 'keeps every safety invariant' -ginkgo.no-color \
      -ginkgo.junit-report "$out/logs/junit-lifecycle-$1.xml") >"$4" 2>&1 && ran "$4" '^Ran [1-9][0-9]* of '
}
# lifecycle_spec_test.go's failure(): "invariant violated in the sequence of seed N" up to its
# "replay: ..." line.
lifecycle_failure() {
  local f=$out/failures/lifecycle-chunk-$2.txt s
  extract "$1" 'invariant violated in the sequence of seed' 'replay: ' "$f" || return 1
  s=$(grep -o 'sequence of seed -\?[0-9]*' "$f" | grep -o -- '-\?[0-9]*$' | head -n 1) || true
  failure_file lifecycle "$f" "$s"
}

# One seed a run (its rounds share one install): TestLifecycle's "seed N: K violations" through the
# shortest failing list and its replay, up to the test's "--- FAIL" line.
ext_run() {
  (cd pkg/extensioncleanup &&
    CLEANUP_E2E_SEED=$2 CLEANUP_E2E_STEPS=$ext_rounds CLEANUP_E2E_SHRINK=6 \
      "$bin/extensioncleanup.test" -test.run '^TestLifecycle$' -test.v -test.timeout "$(chunk_timeout)") >"$4" 2>&1 &&
    ran "$4" '^--- PASS: TestLifecycle '
}
ext_failure() {
  local f=$out/failures/ext-chunk-$2.txt s
  extract "$1" 'seed -?[0-9]+: [0-9]+ violations' '^--- FAIL: TestLifecycle ' "$f" || return 1
  s=$(grep -oE 'seed -?[0-9]+: [0-9]+ violations' "$f" | grep -oE -- '-?[0-9]+' | head -n 1) || true
  failure_file ext "$f" "$s"
}

rc=0
if [ "$ap_n" -gt 0 ]; then
  build pkg/payload/applier/deletestate deletestate
  chunks applier "$ap_n" "$ap_chunk" "$ap_steps" applier_run || rc=1
fi
if [ "$lc_n" -gt 0 ]; then
  # The lifecycle spec needs only kube-apiserver and etcd: run scripts/tools.sh when they are not cached.
  if ! { [ -x "$BIN_DIR/kube-$KUBE_VERSION/kube-apiserver" ] && [ -x "$BIN_DIR/etcd-$ETCD_VERSION/etcd" ]; }; then
    step "toolchain (scripts/tools.sh)" bash scripts/tools.sh
  fi
  build pkg/operandcleanup operandcleanup
  chunks lifecycle "$lc_n" "$lc_chunk" "$lc_steps" lifecycle_run || rc=1
fi
if [ "$ext_n" -gt 0 ]; then
  # The real operator-controller and catalogd, and kube-controller-manager: scripts/tools.sh builds them.
  [ -x "$BIN_DIR/olmv1-$OLMV1_VERSION/operator-controller" ] || step "toolchain (scripts/tools.sh)" bash scripts/tools.sh
  build pkg/extensioncleanup extensioncleanup
  chunks ext "$ext_n" 1 "$ext_rounds" ext_run || rc=1
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  { echo '```'; cat "$seeds"; echo '```'; } >>"$GITHUB_STEP_SUMMARY"
fi
cat "$seeds" >&2
[ "$rc" = 0 ] && log "soak: every sequence passed" || log "soak: FAILED (failures under $out/failures)"
exit "$rc"
