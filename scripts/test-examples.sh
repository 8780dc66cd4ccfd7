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

rc=0
total=$SECONDS
for gomod in examples/*/go.mod; do
  dir=$(dirname "$gomod")
  name=$(basename "$dir")
  start=$SECONDS
  log "==> example $dir: go test ./... (PROVIDER=$PROVIDER)"
  # The example's failure artifacts go under $ARTIFACTS/examples/<name>, its JUnit next to the others'.
  junit="$ARTIFACTS/junit-example-$name.xml" example_artifacts="$ARTIFACTS/examples/$name"
  # Plain go test ./..., several test binaries at once as for its users: on a shared cluster (kind,
  # existing) the packages using it take turns (framework/testenv's run lock: each tears down its
  # stack when it ends), and those on envtest (the mutation checks) run beside them.
  if (cd "$dir" && ARTIFACTS="$example_artifacts" "${gotestsum[@]}" \
        --junitfile "$junit" -- -count=1 -timeout "${EXAMPLE_TIMEOUT:-20m}" ./...); then
    log "<== example $dir passed in $((SECONDS - start))s"
  else
    log "<== example $dir FAILED in $((SECONDS - start))s"
    rc=1
  fi
done
log "examples done in $((SECONDS - total))s"
exit $rc
