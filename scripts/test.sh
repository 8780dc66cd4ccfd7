#!/usr/bin/env bash
# `make test`: unit tests, integration tests and every e2e suite on the envtest provider in one
# `go test` run (through gotestsum: JUnit into $ARTIFACTS), the example consumers beside it, then the
# time budget and one closing line "N passed, N failed, N skipped" over unit tests and Ginkgo specs.
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
mkdir -p "$ARTIFACTS"
# The closing line and the time budget count this run only; the mutation checks' artifacts, left on
# purpose, would pile up.
rm -rf "$ARTIFACTS"/junit-*.xml "$ARTIFACTS/budget" "$ARTIFACTS"/mutant_* "$ARTIFACTS/examples"
export ARTIFACTS PROVIDER=${PROVIDER:-${CLEANUP_E2E_PROVIDER:-envtest}}
export CLEANUP_E2E_PROVIDER=$PROVIDER # what the framework reads (framework/envvar)
# The run is CPU-bound on a small machine: its API servers, etcd and OLM collect garbage half as often
# as Go's default (GOGC=200: less of their CPU for a larger heap; docs/performance.md), and on ≤ 2 CPUs
# its test processes run on one P (ONE_P_EXEC, lib.sh). The caller's GOGC and GOMAXPROCS win.
export GOGC=${GOGC:-200}
gotestsum=(go run "gotest.tools/gotestsum@$GOTESTSUM_VERSION" --format testname)

# Compiled once before the runs below share Go's build cache: the go command shares no compile in
# flight, and side by side on a cold cache the main run and the examples compiled everything twice.
step "compile every package and its tests" go list -test -export -deps ./... >/dev/null
rc=0
examples_log=$ARTIFACTS/examples.log
bash scripts/test-examples.sh >"$examples_log" 2>&1 &
examples_pid=$!
# Six test binaries at once on 2 cores: they mostly wait (control planes, OLM, quiet windows). testrun
# is go test -json keeping the linked test binaries in $CACHE_DIR/testbin, the longest packages first:
# docs/performance.md has what that is worth.
step "unit tests, integration tests and e2e suites on PROVIDER=$PROVIDER (6 test binaries at once)" "${gotestsum[@]}" \
  --junitfile "$ARTIFACTS/junit-unit.xml" --raw-command -- \
  go run ./scripts/testrun -o "$CACHE_DIR/testbin" -p 6 "${ONE_P_EXEC[@]}" -timeout 60m ./... || rc=1
wait "$examples_pid" || rc=1
cat "$examples_log"
# Ginkgo suites write one JUnit testcase per spec (framework/suite.RunSpecs); count those rather than
# gotestsum's one-test-per-suite view of them.
suites=$(ls "$ARTIFACTS"/junit-*-suite.xml 2>/dev/null || true)
[ -n "$suites" ] || { log "no Ginkgo suite wrote its JUnit report"; rc=1; }
go run ./scripts/budget "$ARTIFACTS/budget" "$ARTIFACTS"/examples/*/budget || true # where the seconds went
log "make test: ${SECONDS} s on $(nproc) cores"
# shellcheck disable=SC2086 # one path per line
go run ./scripts/junitsum -skip-classes /e2e/ "$ARTIFACTS/junit-unit.xml" $suites "$ARTIFACTS"/junit-example-*.xml || rc=1
exit $rc
