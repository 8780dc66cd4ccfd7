#!/usr/bin/env bash
# `make test`: unit tests, then the envtest-tier suites, each through gotestsum (JUnit into
# $ARTIFACTS), then one closing line "N passed, N failed, N skipped" over both.
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
ARTIFACTS=${ARTIFACTS:-$REPO_ROOT/_artifacts}
mkdir -p "$ARTIFACTS"
export ARTIFACTS PROVIDER=${PROVIDER:-envtest}
gotestsum=(go run "gotest.tools/gotestsum@$GOTESTSUM_VERSION" --format "${GOTESTSUM_FORMAT:-testname}")

unit_pkgs=$(go list ./... | grep -v '/e2e/')
rc=0
step "unit and integration tests" "${gotestsum[@]}" --junitfile "$ARTIFACTS/junit-unit.xml" -- \
  -count=1 -timeout 30m $unit_pkgs || rc=1
step "e2e suites on PROVIDER=$PROVIDER" "${gotestsum[@]}" --junitfile "$ARTIFACTS/junit-e2e.xml" -- \
  -count=1 -timeout 60m ./e2e/... -args -ginkgo.randomize-all ${GINKGO_LABEL_FILTER:+-ginkgo.label-filter="$GINKGO_LABEL_FILTER"} || rc=1
go run ./scripts/junitsum "$ARTIFACTS/junit-unit.xml" "$ARTIFACTS/junit-e2e.xml" || rc=1
exit $rc
