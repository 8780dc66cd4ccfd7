#!/usr/bin/env bash
# The Go programs `make e2e` runs on a shared cluster (kind, existing), built before they are needed:
# on kind the cluster helper ($CACHE_DIR/bin/kind-cluster), then the Ginkgo CLI, and the packages of the
# e2e suites and, on kind, of the example consumers and gotestsum compiled into Go's build cache (ginkgo
# and go test then only link them).
#
# On kind, scripts/e2e.sh runs it beside the node image and the images: none of it depends on them, and
# the suites start as soon as the cluster is up.
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
all=$SECONDS
PROVIDER=${PROVIDER:-${CLEANUP_E2E_PROVIDER:-}}

if [ "$PROVIDER" = kind ]; then
  # Built once, so that make e2e's EXIT trap does not compile under Ctrl-C.
  step "build scripts/kind/cluster" go build -o "$BIN_DIR/kind-cluster" ./scripts/kind/cluster
fi
step "build the Ginkgo CLI" go build -o "$BIN_DIR/ginkgo" github.com/onsi/ginkgo/v2/ginkgo
# A package that does not compile is reported where it runs (ginkgo, scripts/test-examples.sh).
step "compile the e2e suites" go list -test -export -deps ./e2e/... >/dev/null || true
if [ "$PROVIDER" = kind ]; then
  # Linked into Go's build cache, where test-examples.sh's `go run gotestsum@version` finds it.
  step "build gotestsum $GOTESTSUM_VERSION" go run "gotest.tools/gotestsum@$GOTESTSUM_VERSION" --version
  for gomod in examples/*/go.mod; do
    dir=$(dirname "$gomod")
    step "compile $dir" bash -c 'cd "$1" && go list -test -export -deps ./... >/dev/null' _ "$dir" || true
  done
fi
log "Go programs of the run built in $((SECONDS - all))s"
