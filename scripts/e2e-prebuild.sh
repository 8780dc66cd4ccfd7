#!/usr/bin/env bash
# The Go programs `make e2e` runs on a shared cluster (kind, existing), built before they are needed:
# on kind the cluster helper ($CACHE_DIR/bin/kind-cluster), then the Ginkgo CLI, scripts/atonce (runs
# the suites side by side), scripts/testbin and the kept test binaries of the e2e suites (ginkgo runs
# them as precompiled suites) and, on kind, of the example consumers and gotestsum
# (scripts/test-examples.sh runs them). Prints "DIR BINARY" per suite whose kept binary is ready
# (testbin -link-only) on standard output; when the suites cannot be linked it says so and prints
# nothing (ginkgo compiles them then).
#
# On kind, scripts/e2e.sh runs it in the background beside the node image and the images: none of it
# depends on them, and the suites start as soon as the cluster is up. A warm run's go commands that
# find nothing to do are off the critical path; on a fresh machine the suites start with their test
# binaries ready (a first run is CPU-bound from end to end, so the whole is not much shorter for it).
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
all=$SECONDS
PROVIDER=${PROVIDER:-${CLEANUP_E2E_PROVIDER:-}}

if [ "$PROVIDER" = kind ]; then
  # Built once, so that make e2e's EXIT trap does not compile under Ctrl-C.
  step "build scripts/kind/cluster" go build -o "$BIN_DIR/kind-cluster" ./scripts/kind/cluster
fi
step "build the Ginkgo CLI" go build -o "$BIN_DIR/ginkgo" github.com/onsi/ginkgo/v2/ginkgo
step "build scripts/atonce" go build -o "$BIN_DIR/atonce" ./scripts/atonce
testbin=$CACHE_DIR/testbin/testbin
step "build scripts/testbin" go build -o "$testbin" ./scripts/testbin
start=$SECONDS
if kept=$("$testbin" -cache "$CACHE_DIR/testbin" -link-only ./e2e/...); then
  log "the e2e suites' test binaries ready in $((SECONDS - start))s"
  printf '%s\n' "$kept"
else
  log "the suites' kept test binaries could not be linked (above): ginkgo compiles each suite"
fi
if [ "$PROVIDER" = kind ]; then
  # Compiled into Go's build cache, where test-examples.sh's `go run gotestsum@version` finds it.
  gobin=$(mktemp -d)
  GOBIN=$gobin step "build gotestsum $GOTESTSUM_VERSION" go install "gotest.tools/gotestsum@$GOTESTSUM_VERSION"
  rm -rf "$gobin"
fi
if [ "$PROVIDER" = kind ] && [ "${TEST_BINARY_CACHE:-1}" != 0 ]; then
  # The examples' kept test binaries, in the cache scripts/test-examples.sh runs them from. A failure
  # here is reported there, where the example runs (testbin links what is missing again).
  for gomod in examples/*/go.mod; do
    dir=$(dirname "$gomod") start=$SECONDS
    if (cd "$dir" && "$testbin" -cache "$CACHE_DIR/testbin/examples/$(basename "$dir")" -link-only ./... >/dev/null); then
      log "$dir: test binaries ready in $((SECONDS - start))s"
    else
      log "$dir: test binaries not linked (scripts/test-examples.sh tries again and reports why)"
    fi
  done
fi
log "Go programs of the run built in $((SECONDS - all))s"
