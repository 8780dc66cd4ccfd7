#!/usr/bin/env bash
# Runs every example consumer module under examples/ (each has its own go.mod with
# `replace github.com/cleanup-e2e/cleanup-e2e => ../..`) the way its users would: `go test ./...` in
# the module, through gotestsum (JUnit into $ARTIFACTS); and the uninstall suite of a fresh kubebuilder
# scaffold (examples/kubebuilder-scaffold). Prints each example's time; fails when one fails. The
# examples run side by side.
# Needs the envtest toolchain (`make tools`) for PROVIDER=envtest, the default; with PROVIDER=kind
# (make e2e runs it so) the cluster $CLEANUP_E2E_KIND_CLUSTER must be up with the images loaded.
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
mkdir -p "$ARTIFACTS"
export ARTIFACTS PROVIDER=${PROVIDER:-${CLEANUP_E2E_PROVIDER:-envtest}}
export CLEANUP_E2E_PROVIDER=$PROVIDER # what the framework reads (framework/envvar)
gotestsum=(go run "gotest.tools/gotestsum@$GOTESTSUM_VERSION" --format testname)

# run_example DIR [NAME]: `go test ./...` in one example module (NAME: its directory's); its output
# goes to standard output.
run_example() {
  local dir=$1 name=${2:-$(basename "$1")} start junit example_artifacts
  start=$SECONDS
  log "==> example $dir: go test ./... (PROVIDER=$PROVIDER)"
  # The example's failure artifacts go under $ARTIFACTS/examples/<name>, its JUnit next to the others'.
  junit="$ARTIFACTS/junit-example-$name.xml" example_artifacts="$ARTIFACTS/examples/$name"
  rm -rf "$example_artifacts/budget" # the run's time budget counts this run only
  # Plain go test ./..., two test binaries at once as for its users: on a shared cluster (kind,
  # existing) the packages using it take turns (framework/testenv's run lock: each tears down its
  # stack when it ends), and those on envtest (the mutation checks) run beside them. On envtest (make
  # test) with make test's one P per test process (lib.sh).
  local tests=(-- -count=1 -p 2 -timeout "${EXAMPLE_TIMEOUT:-20m}" ./...)
  [ "$PROVIDER" != envtest ] || tests=(-- -count=1 -p 2 "${ONE_P_EXEC[@]}" -timeout "${EXAMPLE_TIMEOUT:-20m}" ./...)
  if (cd "$dir" && ARTIFACTS="$example_artifacts" "${gotestsum[@]}" --junitfile "$junit" "${tests[@]}"); then
    log "<== example $dir passed in $((SECONDS - start))s"
  else
    log "<== example $dir FAILED in $((SECONDS - start))s"
    return 1
  fi
}

# run_scaffold: examples/kubebuilder-scaffold, which has no module of its own: its run.sh prepares a
# fresh kubebuilder scaffold with a webhook (cached by its inputs; ≈ 1 min cold) and puts beside it the
# uninstall suite, a module of its own, as the docs lay it out; that module runs as the examples do
# (envtest: the bundle without its webhooks; kind: as it is, the image built by run.sh). Then run.sh
# checks that nothing changed the scaffold's go.mod, go.sum or Go code.
run_scaffold() {
  local script=examples/kubebuilder-scaffold/run.sh dir start=$SECONDS
  log "==> example kubebuilder-scaffold: a fresh kubebuilder scaffold ($script prepare)"
  dir=$(bash "$script" prepare) && { [ "$PROVIDER" != kind ] || bash "$script" image "$dir"; } || {
    log "<== example kubebuilder-scaffold FAILED in $((SECONDS - start))s (preparing the scaffold)"
    return 1
  }
  # The scaffold is outside this checkout when CLEANUP_E2E_CACHE is: the framework's trimmed source
  # paths (-trimpath, lib.sh) then find the checkout by CLEANUP_E2E_ROOT (internal/srcdir).
  (export CLEANUP_E2E_ROOT=$REPO_ROOT && run_example "$dir" kubebuilder-scaffold) && bash "$script" verify "$dir"
}

# Every example: a module directory, or "scaffold".
examples=(examples/*/go.mod scaffold)
examples=("${examples[@]%/go.mod}")
run_one() { if [ "$1" = scaffold ]; then run_scaffold; else run_example "$1"; fi; }

rc=0
total=$SECONDS
# Side by side, each one's output kept in a file and printed whole when it ends: one after the other,
# they would end a make test alone, after the main run.
outs=() pids=()
for example in "${examples[@]}"; do
  out=$(mktemp) outs+=("$out")
  run_one "$example" >"$out" 2>&1 &
  pids+=($!)
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || rc=1
  cat "${outs[$i]}"
  rm -f "${outs[$i]}"
done
log "examples done in $((SECONDS - total))s"
exit $rc
