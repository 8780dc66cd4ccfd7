#!/usr/bin/env bash
# Long soak of the randomized sequence tests make test runs a few seeds of (internal/seeded): the payload
# applier's delete-state sequences, operand cleanup's lifecycle sequences (envtest) and OLM v1's
# uninstall lifecycle (pkg/extensioncleanup, envtest, one seed a chunk).
#
# A test stops at its first failing sequence, so sequences run in chunks from their own base seeds and a
# failure ends only its chunk. Output in $ARTIFACTS/soak/: seeds.txt (a line per chunk), failures/ (the
# log of each failed chunk: the test's failure text names the seed, the shortest failing sequence and
# the command that replays it), logs/. Fails when any chunk failed or ran nothing.
#
#   SOAK_SEED=<the clock>         base seed; chunk k of a test starts at SOAK_SEED + k × its chunk size
#   SOAK_MINUTES=90               no chunk starts after this; a running one gets this plus 20 minutes
#   SOAK_APPLIER_SEQUENCES=10000  SOAK_APPLIER_STEPS=60     (chunks of 1000; 0 sequences: skip)
#   SOAK_LIFECYCLE_SEQUENCES=300  SOAK_LIFECYCLE_STEPS=30   (chunks of 50)
#   SOAK_EXT_SEEDS=20             SOAK_EXT_ROUNDS=6         (chunks of 1; a failure shrunk with 6 re-runs)
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
out=$ARTIFACTS/soak
seed=${SOAK_SEED:-$(printf '%(%s)T' -1)}
minutes=${SOAK_MINUTES:-90}
for v in seed minutes SOAK_APPLIER_SEQUENCES SOAK_APPLIER_STEPS SOAK_LIFECYCLE_SEQUENCES SOAK_LIFECYCLE_STEPS SOAK_EXT_SEEDS SOAK_EXT_ROUNDS; do
  [[ ${!v:-0} =~ ^[0-9]+$ ]] || die "soak: $v=${!v}: want a non-negative integer"
done
rm -rf "$out"
mkdir -p "$out/failures" "$out/logs"
bin=$(mktemp -d) # the test binaries stay out of _cache/, which CI keeps between runs
trap 'rm -rf "$bin"' EXIT
seeds=$out/seeds.txt
deadline=$((SECONDS + minutes * 60))
{
  echo "# soak of $(git rev-parse HEAD 2>/dev/null || echo "an unknown commit"), base seed $seed (SOAK_SEED=$seed with the same sizes replays it)"
  echo "# test chunk first-seed last-seed steps time result"
} >"$seeds"

# soak NAME PACKAGE N CHUNK STEPS RAN ARGS...: N sequences of STEPS steps of the test binary of PACKAGE,
# run with ARGS in its directory as go test does, CHUNK sequences a run; RAN is a line of its log that
# shows something ran (a renamed test matches nothing, and a run of nothing passes). Returns 1 when a
# chunk failed.
soak() {
  local name=$1 pkg=$2 n=$3 chunk=$4 steps=$5 ran=$6 k=0 done=0 failed=0
  shift 6
  [ "$n" -gt 0 ] || return 0
  step "go test -c ./$pkg" go test -c -o "$bin/$name.test" "./$pkg"
  while [ "$done" -lt "$n" ]; do
    local count=$((n - done < chunk ? n - done : chunk)) first=$((seed + done))
    local last=$((first + count - 1)) log=$out/logs/$name-$k.log start=$SECONDS rc=0 result=pass
    if [ "$SECONDS" -ge "$deadline" ]; then
      result="not run (SOAK_MINUTES=$minutes spent)"
    else
      local timeout=$(((deadline - SECONDS) / 60 + 20))m
      (cd "$pkg" && CLEANUP_E2E_SEED=$first CLEANUP_E2E_SEQUENCES=$count CLEANUP_E2E_STEPS=$steps \
        "$bin/$name.test" -test.timeout "$timeout" "${@//TIMEOUT/$timeout}") >"$log" 2>&1 || rc=$?
      [ "$rc" != 0 ] || grep -Eq "$ran" "$log" || rc="nothing ran: no line matches '$ran'"
      if [ "$rc" != 0 ]; then
        failed=1
        cp "$log" "$out/failures/$name-$first-$last.log"
        result="FAIL ($rc) $(grep -m1 -oE 'seed -?[0-9]+' "$log" || echo "no seed in its log: a timeout or a crash?"): failures/$name-$first-$last.log"
      fi
      log "soak: $name chunk $k (seeds $first..$last) in $((SECONDS - start))s: $result"
    fi
    echo "$name $k $first $last $steps $((SECONDS - start))s $result" >>"$seeds"
    done=$((done + count)) k=$((k + 1))
  done
  return "$failed"
}

rc=0
soak applier pkg/payload/applier/deletestate "${SOAK_APPLIER_SEQUENCES:-10000}" 1000 "${SOAK_APPLIER_STEPS:-60}" \
  'sequences of [0-9]+ steps \(seeds' -test.v -test.run '^TestDeleteStateSequencesFollowTheModel$' || rc=1
if [ "${SOAK_LIFECYCLE_SEQUENCES:-300}${SOAK_EXT_SEEDS:-20}" != 00 ]; then
  step "toolchain (scripts/tools.sh)" bash scripts/tools.sh # control planes, OLM v1
fi
soak lifecycle pkg/operandcleanup "${SOAK_LIFECYCLE_SEQUENCES:-300}" 50 "${SOAK_LIFECYCLE_STEPS:-30}" '^Ran [1-9][0-9]* of ' \
  -test.run '^TestOperandCleanup$' -ginkgo.timeout TIMEOUT -ginkgo.focus 'keeps every safety invariant' -ginkgo.no-color || rc=1
CLEANUP_E2E_SHRINK=6 soak ext pkg/extensioncleanup "${SOAK_EXT_SEEDS:-20}" 1 "${SOAK_EXT_ROUNDS:-6}" '^--- PASS: TestLifecycle ' \
  -test.v -test.run '^TestLifecycle$' || rc=1

[ -z "${GITHUB_STEP_SUMMARY:-}" ] || { echo '```'; cat "$seeds"; echo '```'; } >>"$GITHUB_STEP_SUMMARY"
cat "$seeds" >&2
[ "$rc" = 0 ] && log "soak: every sequence passed" || log "soak: FAILED (failures under $out/failures)"
exit "$rc"
