#!/usr/bin/env bash
# `make test`: unit tests, then the envtest-tier suites, each through gotestsum (JUnit into
# $ARTIFACTS), then one closing line "N passed, N failed, N skipped" over unit tests and Ginkgo specs.
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
ARTIFACTS=${ARTIFACTS:-$REPO_ROOT/_artifacts}
mkdir -p "$ARTIFACTS"
rm -f "$ARTIFACTS"/junit-*.xml   # the closing line must count this run only
export ARTIFACTS PROVIDER=${PROVIDER:-envtest}
gotestsum=(go run "gotest.tools/gotestsum@$GOTESTSUM_VERSION" --format "${GOTESTSUM_FORMAT:-testname}")

unit_pkgs=$(go list ./... | grep -v '/e2e/')
rc=0
step "unit and integration tests" "${gotestsum[@]}" --junitfile "$ARTIFACTS/junit-unit.xml" -- \
  -count=1 -timeout 30m $unit_pkgs || rc=1
step "e2e suites on PROVIDER=$PROVIDER" "${gotestsum[@]}" --junitfile "$ARTIFACTS/junit-e2e.xml" -- \
  -count=1 -timeout 60m ./e2e/... -args -ginkgo.randomize-all ${GINKGO_LABEL_FILTER:+-ginkgo.label-filter="$GINKGO_LABEL_FILTER"} || rc=1
step "example consumer repos (examples/*)" bash "$REPO_ROOT/scripts/test-examples.sh" || rc=1
# Ginkgo suites write one JUnit testcase per spec (framework/suite.RunSpecs); count those rather than
# gotestsum's one-test-per-suite view of them.
suites=$(ls "$ARTIFACTS"/junit-*-suite.xml 2>/dev/null || true)
[ -n "$suites" ] || { log "no Ginkgo suite wrote its JUnit report"; rc=1; }
go run ./scripts/junitsum "$ARTIFACTS/junit-unit.xml" $suites "$ARTIFACTS"/junit-example-*.xml || rc=1
exit $rc
