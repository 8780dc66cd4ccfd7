#!/usr/bin/env bash
# `make e2e`: every Ginkgo suite under e2e/ on $PROVIDER with the Ginkgo CLI (parallel, random order),
# JUnit and per-spec failure artifacts under $ARTIFACTS.
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
ARTIFACTS=${ARTIFACTS:-$REPO_ROOT/_artifacts}
mkdir -p "$ARTIFACTS"
export ARTIFACTS PROVIDER=${PROVIDER:-envtest}
procs=${GINKGO_PROCS:-2}
step "e2e suites on PROVIDER=$PROVIDER (ginkgo -p $procs)" \
  go run github.com/onsi/ginkgo/v2/ginkgo run -r --procs="$procs" --randomize-all --keep-going \
    --timeout="${E2E_TIMEOUT:-90m}" --junit-report=junit-e2e.xml --output-dir="$ARTIFACTS" \
    ${GINKGO_LABEL_FILTER:+--label-filter="$GINKGO_LABEL_FILTER"} ./e2e
