#!/usr/bin/env bash
# `make e2e`: every Ginkgo suite under e2e/ on $PROVIDER with the Ginkgo CLI (parallel, random order),
# JUnit and per-spec failure artifacts under $ARTIFACTS.
#
# PROVIDER unset: kind when Docker can run it here (scripts/kind/docker.sh succeeds), else envtest, saying
# why. PROVIDER=kind builds what is missing (Docker, node image, images: scripts/kind/, scripts/images.sh),
# creates or reuses the cluster $CLEANUP_E2E_KIND_CLUSTER (or KIND_CLUSTER_NAME; OLM installed, images loaded), runs the suites on it
# (all Ginkgo processes of all suites share it), exports the node's logs to $ARTIFACTS/kind-logs, and
# deletes the cluster at the end, also on failure or Ctrl-C, unless KEEP_CLUSTER=1 (or CLEANUP_E2E_KEEP_CLUSTER=1).
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
ARTIFACTS=${ARTIFACTS:-$REPO_ROOT/_artifacts}
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

case $PROVIDER in
  envtest) bash scripts/tools.sh ;;
  kind)
    cluster=${CLEANUP_E2E_KIND_CLUSTER:-${KIND_CLUSTER_NAME:-cleanup-e2e}}
    keep=${CLEANUP_E2E_KEEP_CLUSTER:-${KEEP_CLUSTER:-0}}
    export CLEANUP_E2E_KIND_CLUSTER=$cluster
    [ -n "${docker_ready:-}" ] || step "Docker (scripts/kind/docker.sh)" bash scripts/kind/docker.sh
    step "kind node image (scripts/kind/node-image.sh)" bash scripts/kind/node-image.sh
    step "images (scripts/images.sh)" bash scripts/images.sh
    # The helper is built once so that the EXIT trap does not compile under Ctrl-C.
    helper=$CACHE_DIR/bin/kind-cluster
    step "build scripts/kind/cluster" go build -o "$helper" ./scripts/kind/cluster
    finish() {
      local rc=$?
      trap - EXIT INT TERM
      if [ -n "${examples_pid:-}" ] && kill -0 "$examples_pid" 2>/dev/null; then
        log "stopping the example consumers (process group $examples_pid)"
        kill -- -"$examples_pid" 2>/dev/null || true
      fi
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
    trap 'log "interrupted"; exit 130' INT TERM
    step "kind cluster $cluster + images + OLM (created, or reused when healthy)" "$helper" up
    # The suites share the cluster (framework/suite.SynchronizedProvider); only this script deletes it.
    export CLEANUP_E2E_KEEP_CLUSTER=1
    ;;
  *) ;;
esac

rm -f "$ARTIFACTS/junit-e2e.xml" "$ARTIFACTS"/junit-example-*.xml   # the closing line must count this run only
rm -rf "$ARTIFACTS/budget"          # so does the time budget
rc=0
# On kind, the example consumers (examples/*: Ginkgo and e2e-framework) run on the same cluster as the
# suites, as a consumer repo's suite would, and at the same time: runs share the cluster and take it
# alone only to install, remove or run a Serial spec (framework/testenv/runlock.go). Their output is
# printed when they end. (On envtest, make test runs them.)
reports=("$ARTIFACTS/junit-e2e.xml")
if [ "$PROVIDER" = kind ]; then
  examples_out=$ARTIFACTS/examples.log
  log "==> example consumers on PROVIDER=kind, beside the suites (output: $examples_out, printed when they end)"
  examples_start=$SECONDS
  # Its own process group, so that the EXIT trap can stop all of it before deleting the cluster.
  EXAMPLES_AT_ONCE=1 setsid bash scripts/test-examples.sh >"$examples_out" 2>&1 &
  examples_pid=$!
  reports+=("$ARTIFACTS"/junit-example-*.xml)
fi
step "e2e suites on PROVIDER=$PROVIDER (ginkgo -p $procs)" \
  go run github.com/onsi/ginkgo/v2/ginkgo run -r --procs="$procs" --randomize-all --keep-going \
    --timeout="${E2E_TIMEOUT:-90m}" --junit-report=junit-e2e.xml --output-dir="$ARTIFACTS" \
    ${GINKGO_LABEL_FILTER:+--label-filter="$GINKGO_LABEL_FILTER"} ./e2e || rc=$?
if [ -n "${examples_pid:-}" ]; then
  examples_rc=0
  wait "$examples_pid" || examples_rc=$?
  cat "$examples_out"
  log "<== example consumers on PROVIDER=kind done in $((SECONDS - examples_start))s (rc=$examples_rc)"
  [ "$examples_rc" = 0 ] || rc=1
  reports=("$ARTIFACTS/junit-e2e.xml" "$ARTIFACTS"/junit-example-*.xml)
fi
# One closing line over every suite's specs (fails too when Ginkgo crashed before writing its report).
go run ./scripts/budget "$ARTIFACTS/budget" || true # where the seconds went (framework/budget)
log "make e2e on PROVIDER=$PROVIDER${GINKGO_LABEL_FILTER:+ (label filter: $GINKGO_LABEL_FILTER)}:"
go run ./scripts/junitsum "${reports[@]}" || rc=1
exit "$rc"
