#!/usr/bin/env bash
# `make e2e`: every Ginkgo suite under e2e/ on $PROVIDER with the Ginkgo CLI (parallel, random order; on
# kind or an existing cluster every suite at once, and on kind the example consumers beside them),
# JUnit and per-spec failure artifacts under $ARTIFACTS.
#
# PROVIDER unset: kind when Docker can run it here (scripts/kind/docker.sh succeeds), else envtest, saying
# why. PROVIDER=kind builds what is missing (Docker, node image, images: scripts/kind/, scripts/images.sh;
# beside them the run's Go programs: scripts/e2e-prebuild.sh), creates or reuses the cluster
# $CLEANUP_E2E_KIND_CLUSTER (or KIND_CLUSTER_NAME; OLM installed, images loaded), runs the suites on it
# (all Ginkgo processes of all suites share it), exports the node's logs to $ARTIFACTS/kind-logs, and
# deletes the cluster at the end, also on failure or Ctrl-C, unless KEEP_CLUSTER=1 (or
# CLEANUP_E2E_KEEP_CLUSTER=1).
. "$(dirname "$0")/lib.sh"
# shellcheck source=atonce.sh
. "$REPO_ROOT/scripts/atonce.sh"
cd "$REPO_ROOT"
mkdir -p "$ARTIFACTS"
start_all=$SECONDS

PROVIDER=${PROVIDER:-${CLEANUP_E2E_PROVIDER:-}}
if [ -z "${PROVIDER:-}" ]; then
  if out=$(bash scripts/kind/docker.sh 2>&1); then
    PROVIDER=kind docker_ready=1
    log "PROVIDER unset and Docker can run kind here: PROVIDER=kind (PROVIDER=envtest for the node-less tier)"
  else
    PROVIDER=envtest
    log "PROVIDER unset and Docker cannot run kind here, so falling back to PROVIDER=envtest. scripts/kind/docker.sh said:"
    printf '%s\n' "$out" | tail -n 5 | sed 's/^/    /' >&2
  fi
fi
# The framework reads the prefixed names (framework/envvar); make keeps the short ones.
export ARTIFACTS PROVIDER CLEANUP_E2E_PROVIDER=$PROVIDER
procs=${GINKGO_PROCS:-2}

# Runs side by side go through atonce (scripts/atonce.sh): one way to stop them all on Ctrl-C.
[ "$PROVIDER" = envtest ] || step "build scripts/atonce" go build -o "$BIN_DIR/atonce" ./scripts/atonce
case $PROVIDER in
  envtest) bash scripts/tools.sh ;;
  kind)
    cluster=${CLEANUP_E2E_KIND_CLUSTER:-${KIND_CLUSTER_NAME:-cleanup-e2e}}
    keep=${CLEANUP_E2E_KEEP_CLUSTER:-${KEEP_CLUSTER:-0}}
    export CLEANUP_E2E_KIND_CLUSTER=$cluster
    trap 'log "interrupted"; exit 130' INT TERM
    [ -n "${docker_ready:-}" ] || step "Docker (scripts/kind/docker.sh)" bash scripts/kind/docker.sh
    export CLEANUP_E2E_DOCKER_READY=1 # node-image.sh need not check it again (a privileged docker run, ≈ 1.5 s)
    # The node image first, alone: cold, it compiles Kubernetes, and the go command shares no compile in
    # flight with the Go programs of the run (one compile mode, lib.sh). Those then build beside the
    # images (none depends on them), under atonce.
    step "kind node image (scripts/kind/node-image.sh)" bash scripts/kind/node-image.sh
    at_once "images (scripts/images.sh)" - bash scripts/images.sh --- \
      "Go programs of the run (scripts/e2e-prebuild.sh)" "$ARTIFACTS/prebuild.log" bash scripts/e2e-prebuild.sh ||
      die "building the images or the run's Go programs failed (their output above)"
    helper=$BIN_DIR/kind-cluster
    finish() {
      local rc=$?
      trap - EXIT INT TERM
      "$helper" logs "$ARTIFACTS/kind-logs" >/dev/null 2>&1 && log "node logs in $ARTIFACTS/kind-logs" || true
      if [ "$keep" = 1 ]; then
        log "KEEP_CLUSTER=1: kind cluster $cluster kept (kubeconfig: kind export kubeconfig --name $cluster, or ${TMPDIR:-/tmp}/cleanup-e2e-kind/kind-$cluster/kubeconfig); delete: CLEANUP_E2E_KIND_CLUSTER=$cluster go run ./scripts/kind/cluster down"
      else
        step "delete kind cluster $cluster" "$helper" down || true
      fi
      log "make e2e (PROVIDER=kind) finished in $((SECONDS - start_all))s, rc=$rc"
      exit "$rc"
    }
    trap finish EXIT
    step "kind cluster $cluster + images + OLM (created, or reused when healthy)" "$helper" up
    # The suites share the cluster (framework/suite.SynchronizedProvider); only this script deletes it.
    export CLEANUP_E2E_KEEP_CLUSTER=1
    ;;
  *) ;;
esac

rm -f "$ARTIFACTS"/junit-e2e*.xml "$ARTIFACTS"/junit-example-*.xml   # the closing line must count this run only
rm -rf "$ARTIFACTS/budget" "$ARTIFACTS"/examples/*/budget # so does the time budget (the examples' too)
rc=0
ginkgo=$BIN_DIR/ginkgo
if [ "$PROVIDER" = envtest ]; then
  go build -o "$ginkgo" github.com/onsi/ginkgo/v2/ginkgo
elif [ "$PROVIDER" != kind ]; then # an existing cluster: built now (kind's were built beside its images)
  bash scripts/e2e-prebuild.sh
fi
# The JSON report (junit's name, .json) has each spec's start and end: a run's timeline, e.g. which
# specs ended it; JUnit keeps only durations.
ginkgo_run() { # ginkgo_run JUNIT DIR...: the suites in DIRs, one after the other
  local junit=$1; shift
  "$ginkgo" run --procs="$procs" --randomize-all --keep-going --timeout="${E2E_TIMEOUT:-90m}" \
    --junit-report="$junit" --json-report="${junit%.xml}.json" --output-dir="$ARTIFACTS" \
    ${GINKGO_LABEL_FILTER:+--label-filter="$GINKGO_LABEL_FILTER"} "$@"
}
export -f ginkgo_run
export ginkgo procs ARTIFACTS GINKGO_LABEL_FILTER E2E_TIMEOUT
if [ "$PROVIDER" = envtest ]; then
  # Each suite starts its own control plane: one after the other (the run is CPU-bound).
  step "e2e suites on PROVIDER=envtest (ginkgo -p $procs)" ginkgo_run junit-e2e.xml -r ./e2e || rc=$?
  reports=("$ARTIFACTS/junit-e2e.xml")
else
  # A shared cluster (kind, existing) serves several runs at once (framework/testenv/runlock.go): every
  # suite runs at once, each its own Ginkgo run, and on kind the example consumers too (on envtest make
  # test runs them). e2e/cvo runs after them, alone, on 4 processes: beside them its Widget spec would
  # add to the waits for widget-operator's APIs that bound their run, to gain at most its ≈ 30 s; alone,
  # 2 processes leave the cores half idle (docs/performance.md).
  reports=()
  [ "$PROVIDER" = kind ] || trap 'log "interrupted"; exit 130' INT TERM
  suites_start=$SECONDS
  log "==> e2e suites on PROVIDER=$PROVIDER (at once, ginkgo -p $procs each; then cvo)"
  runs=() # NAME LOG CMD... groups for scripts/atonce
  if [ "$PROVIDER" = kind ]; then
    runs+=("example consumers" "$ARTIFACTS/examples.log" bash scripts/test-examples.sh ---)
  fi
  for dir in e2e/*/; do
    name=${dir%/} name=${name##*/}
    compgen -G "$dir*_test.go" >/dev/null && [ "$name" != cvo ] || continue
    runs+=("e2e suite $name" "$ARTIFACTS/e2e-$name.log" bash -c 'ginkgo_run "$@"' _ "junit-e2e-$name.xml" "./$dir" ---)
    reports+=("$ARTIFACTS/junit-e2e-$name.xml")
  done
  # On Ctrl-C the suites get time to remove what they installed: on a cluster of the user's (existing)
  # 2 min, on kind 10 s (the cluster goes anyway); a second Ctrl-C kills them at once.
  grace=${E2E_STOP_GRACE:-2m}
  [ "$PROVIDER" != kind ] || grace=${E2E_STOP_GRACE:-10s}
  at_once -grace "$grace" "${runs[@]}" || rc=1
  log "<== e2e suites on PROVIDER=$PROVIDER at once done in $((SECONDS - suites_start))s"
  if [ "$PROVIDER" = kind ]; then # globbed now that they are written (none: junitsum fails, naming it)
    reports+=("$ARTIFACTS"/junit-example-*.xml)
  fi
  procs=4 step "e2e suite cvo (after the others)" ginkgo_run junit-e2e-cvo.xml ./e2e/cvo || rc=1
  reports+=("$ARTIFACTS/junit-e2e-cvo.xml")
fi
# One closing line over every suite's specs (fails too when Ginkgo crashed before writing its report).
go run ./scripts/budget "$ARTIFACTS/budget" "$ARTIFACTS"/examples/*/budget || true # where the seconds went (framework/budget)
log "make e2e on PROVIDER=$PROVIDER${GINKGO_LABEL_FILTER:+ (label filter: $GINKGO_LABEL_FILTER)}:"
go run ./scripts/junitsum "${reports[@]}" || rc=1
exit "$rc"
