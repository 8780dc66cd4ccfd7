#!/usr/bin/env bash
# Runs every example consumer module under examples/ (each has its own go.mod with
# `replace github.com/cleanup-e2e/cleanup-e2e => ../..`) the way its users would: `go test ./...` in
# the module, through gotestsum (JUnit into $ARTIFACTS). Prints each example's time; fails when one fails.
# Needs the envtest toolchain (`make tools`) for PROVIDER=envtest, the default; with PROVIDER=kind
# (make e2e runs it so) the cluster $CLEANUP_E2E_KIND_CLUSTER must be up with the images loaded.
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
ARTIFACTS=${ARTIFACTS:-$REPO_ROOT/_artifacts}
mkdir -p "$ARTIFACTS"
export ARTIFACTS PROVIDER=${PROVIDER:-${CLEANUP_E2E_PROVIDER:-envtest}}
export CLEANUP_E2E_PROVIDER=$PROVIDER # what the framework reads (framework/envvar)
gotestsum=(go run "gotest.tools/gotestsum@$GOTESTSUM_VERSION" --format "${GOTESTSUM_FORMAT:-testname}")

# run_example DIR: `go test ./...` in one example module; its output goes to standard output.
run_example() {
  local dir=$1 name start junit example_artifacts
  name=$(basename "$dir")
  start=$SECONDS
  log "==> example $dir: go test ./...${EXAMPLES_TESTBIN:+ (its kept test binaries: scripts/testbin)} (PROVIDER=$PROVIDER)"
  # The example's failure artifacts go under $ARTIFACTS/examples/<name>, its JUnit next to the others'.
  junit="$ARTIFACTS/junit-example-$name.xml" example_artifacts="$ARTIFACTS/examples/$name"
  rm -rf "$example_artifacts/budget" # the run's time budget counts this run only
  # Plain go test ./..., several test binaries at once as for its users: on a shared cluster (kind,
  # existing) the packages using it take turns (framework/testenv's run lock: each tears down its
  # stack when it ends), and those on envtest (the mutation checks) run beside them.
  # EXAMPLES_TESTBIN (make test and make e2e set it to scripts/testbin, unless TEST_BINARY_CACHE=0)
  # runs the test binaries go test builds, kept between runs instead of linked again each time, with
  # the flags go test passes them; go vet, which go test would run first, is make lint's. The 4 links
  # would cost ≈ 11 s of CPU in every warm run, which is CPU-bound, and delay memcached's first case.
  local tests=(-- -count=1 -timeout "${EXAMPLE_TIMEOUT:-20m}" ./...)
  if [ -n "${EXAMPLES_TESTBIN:-}" ]; then
    mkdir -p "$example_artifacts"
    # TEST_GOMAXPROCS: make test's (scripts/test.sh says why); make e2e leaves it unset.
    tests=(--raw-command -- "$EXAMPLES_TESTBIN" -cache "$CACHE_DIR/testbin/examples/$name" -p 2 -gomaxprocs "${TEST_GOMAXPROCS:-0}"
      -summary "$example_artifacts/testbin.txt" -spans "$example_artifacts/testbin.json" -timeout "${EXAMPLE_TIMEOUT:-20m}" ./...)
  fi
  if (cd "$dir" && ARTIFACTS="$example_artifacts" "${gotestsum[@]}" --junitfile "$junit" "${tests[@]}"); then
    log "<== example $dir passed in $((SECONDS - start))s"
  else
    log "<== example $dir FAILED in $((SECONDS - start))s"
    return 1
  fi
}

rc=0
total=$SECONDS
# EXAMPLES_AT_ONCE=1 (make test sets it) runs the modules side by side, each one's output kept in a
# file and printed whole when it ends. One after the other, the examples would end a warm make test
# alone, after the main run; side by side they end with it (≈ 10 % shorter on 2 cores).
if [ "${EXAMPLES_AT_ONCE:-0}" = 1 ]; then
  outs=() pids=()
  for gomod in examples/*/go.mod; do
    out=$(mktemp) outs+=("$out")
    run_example "$(dirname "$gomod")" >"$out" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || rc=1
    cat "${outs[$i]}"
    rm -f "${outs[$i]}"
  done
else
  for gomod in examples/*/go.mod; do
    run_example "$(dirname "$gomod")" || rc=1
  done
fi
log "examples done in $((SECONDS - total))s"
exit $rc
