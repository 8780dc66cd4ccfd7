#!/usr/bin/env bash
# `make test-kind`: the kind tier's own tests against Docker — the kind provider's lifecycle (create,
# run a pod from a loaded image, keep and reuse, recreate a broken cluster, delete) and Ctrl-C during
# `make e2e` deleting its cluster — which `make test` skips because it must not need Docker.
# JUnit in $ARTIFACTS/junit-kind.xml; closing line "N passed, N failed, N skipped".
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
mkdir -p "$ARTIFACTS"
rm -f "$ARTIFACTS/junit-kind.xml"
step "Docker (scripts/kind/docker.sh)" bash scripts/kind/docker.sh
step "kind node image (scripts/kind/node-image.sh)" bash scripts/kind/node-image.sh >/dev/null
step "images (scripts/images.sh)" bash scripts/images.sh
rc=0
step "kind tier tests (framework/cluster/kind, scripts)" env CLEANUP_E2E_KIND=1 \
  go run "gotest.tools/gotestsum@$GOTESTSUM_VERSION" --format testname \
  --junitfile "$ARTIFACTS/junit-kind.xml" -- -count=1 -timeout 30m ./framework/cluster/kind/ ./scripts/ || rc=1
log "make test-kind:"
go run ./scripts/junitsum "$ARTIFACTS/junit-kind.xml" || rc=1
exit $rc
