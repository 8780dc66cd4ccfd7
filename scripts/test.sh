#!/usr/bin/env bash
# `make test`: unit tests and the envtest-tier suites in one gotestsum run (JUnit into
# $ARTIFACTS), the example consumers, then one closing line "N passed, N failed, N skipped" over unit
# tests and Ginkgo specs.
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
ARTIFACTS=${ARTIFACTS:-$REPO_ROOT/_artifacts}
mkdir -p "$ARTIFACTS"
rm -f "$ARTIFACTS"/junit-*.xml   # the closing line must count this run only
rm -rf "$ARTIFACTS/budget" "$ARTIFACTS"/examples/*/budget # so does the time budget (the examples' too)
# and the artifacts the mutation checks' failures leave on purpose (one set per run piled up)
rm -rf "$ARTIFACTS"/mutant_* "$ARTIFACTS/examples"
# The machine's idle CPU time so far (/proc/stat's idle and iowait, in clock ticks), to tell at the end
# the core-seconds this run left idle from those other processes took; empty where /proc/stat does
# not count exactly the CPUs the run may use (no /proc, or a container limited to some of the host's).
idle_ticks() {
  [ "$(grep -c '^cpu[0-9]' /proc/stat 2>/dev/null)" = "$(nproc)" ] || return 0
  awk '/^cpu / { print $5 + $6; exit }' /proc/stat
}
idle_before=$(idle_ticks)
export ARTIFACTS PROVIDER=${PROVIDER:-${CLEANUP_E2E_PROVIDER:-envtest}}
export CLEANUP_E2E_PROVIDER=$PROVIDER # what the framework reads (framework/envvar)
# Every process of the run (API servers, etcd, OLM, the test binaries, the go tool) collects garbage
# later than Go's default (GOGC=100): 400 where a memory page touched for the first time is cheap, 200
# where it is dear (scripts/gogc measures it and says so). A bigger heap trades the collector's CPU for
# pages touched, and what a page costs depends on the machine: where a first touch is dear (≈ 12 µs)
# 200 beats both 100 and 400, where it is cheap (≈ 1.6 µs) 400 takes ≈ 10 % less of the API servers'
# CPU than 200 (docs/performance.md). GOGC from the caller wins.
if [ -z "${GOGC:-}" ]; then
  GOGC=200
  if go build -o "$CACHE_DIR/bin/gogc" ./scripts/gogc; then GOGC=$("$CACHE_DIR/bin/gogc") || GOGC=200; fi
fi
export GOGC
# On ≤ 2 CPUs the test binaries and every process they start (API servers, etcd, OLM, the operators)
# run with GOMAXPROCS=1 (scripts/testbin -gomaxprocs; not the go command, whose compiles use both
# cores). ≈ 15-20 processes are runnable at once on 2 cores, and a Go process with a second P wakes
# and parks a second thread whenever it has more than one goroutine to run: context switches that buy
# nothing when every core is taken, and that a paravirtualized VM's kernel pays dearly for. A run alone
# is at most a few % shorter for it; two runs side by side take ≈ 10 % less CPU (docs/performance.md).
# Measured on 2 cores only, hence the bound (0: Go's default); fixed, not a knob (docs/performance.md).
# The caller's GOMAXPROCS wins. Exported for scripts/test-examples.sh.
TEST_GOMAXPROCS=0
if [ "$(nproc)" -le 2 ]; then TEST_GOMAXPROCS=1; fi
export TEST_GOMAXPROCS
gotestsum=(go run "gotest.tools/gotestsum@$GOTESTSUM_VERSION" --format testname)

rc=0
# The example consumer repos run alongside (their output is printed after the main run), once the
# main run has compiled the packages they share with it and linked its test binaries: on a cold Go
# build cache both compiled the same packages at the same time, each on its own (the go command does
# not share compiles in flight), and the first make test spent minutes doing everything twice on 2
# cores; and the examples' own compiles and links slow the main run's links by about a third. A warm
# run links nothing, so they start at once.
examples_log="$ARTIFACTS/examples.log" linked="$ARTIFACTS/.linked"
rm -f "$linked"
(
  if [ "${TEST_BINARY_CACHE:-1}" != 0 ]; then
    # scripts/testbin creates it once linked; so does the end of the main run. A make test stopped meanwhile: none.
    until [ -e "$linked" ]; do kill -0 $$ 2>/dev/null || exit 1; sleep 0.5; done
  fi
  if [ "${TEST_BINARY_CACHE:-1}" != 0 ]; then export EXAMPLES_TESTBIN=$CACHE_DIR/testbin/testbin; fi
  EXAMPLES_AT_ONCE=1 bash "$REPO_ROOT/scripts/test-examples.sh"
) >"$examples_log" 2>&1 &
examples_pid=$!
# One go test run over unit tests and the Ginkgo suites, so `go test -p` overlaps the long suites with
# the unit tests (suite.RunSpecs randomizes specs and reads GINKGO_LABEL_FILTER). Six test binaries at
# once on 2 cores: they mostly wait (control planes, OLM, quiet windows), and with four the four longest
# suites hold every slot while the cores idle; with eight everything starts at once, the long suites
# start starved and end the run alone (docs/performance.md: fixed at 6, not a knob).
# Test binaries are kept between runs in $CACHE_DIR/testbin (scripts/testbin: go test links every one
# again on each run, ≈ 27 s of a warm run on 2 cores); TEST_BINARY_CACHE=0 runs plain `go test` instead.
test_parallel=6
if [ "${TEST_BINARY_CACHE:-1}" = 0 ]; then
  tests=(-- -count=1 -p "$test_parallel" -timeout 60m ./...)
else
  go build -o "$CACHE_DIR/testbin/testbin" ./scripts/testbin
  # Its line on what it linked goes to a file: gotestsum counts a line on standard error as an error.
  # The two longest suites (alone ≈ 106 s each, mostly waiting: OLM, quiet windows, rechecks) run on
  # two Ginkgo processes. e2e/cleanup's processes share one envtest cluster (framework/suite): ≈ 40 %
  # shorter for a few % more CPU, so always. The controller suite starts a control plane and a
  # controller per process (≈ 10 % more CPU): on 2 cores, where make test is CPU-bound, that gains
  # nothing, so only from 4 cores. Fixed, not a knob (docs/performance.md).
  ginkgo_suite_procs=e2e/cleanup=2
  if [ "$(nproc)" -ge 4 ]; then
    ginkgo_suite_procs+=,pkg/operandcleanup:TestOperandCleanup=2
  fi
  # foreground names the packages that keep the normal CPU priority; every other test binary of
  # the main run (and all it starts) runs under nice 5, the examples at the normal one. On ≤ 2 CPUs,
  # where the run is CPU-bound, the two longest suites, which mostly wait (alone ≈ 83 and 65 s, 125-140 s
  # among the rest), stay in front: their control planes, controllers, operators and polls cost CPU
  # for every second they live, so shortening them shortens the run and takes less CPU (≈ 5 % of each,
  # docs/performance.md). Naming more packages makes a niced one (framework/cluster/envtest) the
  # longest instead. A niced package's control plane can starve while the run starts everything at
  # once, which is why starts take slots by priority (framework/toolchain) and a wait for a CRD to go
  # asks its finalizer to retry (framework/stack). Fixed, not a knob (docs/performance.md).
  foreground=
  if [ "$(nproc)" -le 2 ]; then foreground=pkg/operandcleanup,e2e/cleanup; fi
  tests=(--raw-command -- "$CACHE_DIR/testbin/testbin" -cache "$CACHE_DIR/testbin" -summary "$ARTIFACTS/testbin.txt"
    -spans "$ARTIFACTS/testbin.json" -linked-marker "$linked" -ginkgo-procs "$ginkgo_suite_procs" -foreground "$foreground" -gomaxprocs "$TEST_GOMAXPROCS" -p "$test_parallel" -timeout 60m ./...)
fi
step "unit tests, integration tests and e2e suites on PROVIDER=$PROVIDER (-p $test_parallel${foreground:+; under nice 5 but $foreground})" "${gotestsum[@]}" \
  --junitfile "$ARTIFACTS/junit-unit.xml" "${tests[@]}" || rc=1
[ ! -s "$ARTIFACTS/testbin.txt" ] || cat "$ARTIFACTS/testbin.txt"
touch "$linked" # when testbin stopped before linking everything, the examples still run
wait "$examples_pid" || rc=1
rm -f "$linked"
cat "$examples_log"
# Ginkgo suites write one JUnit testcase per spec (framework/suite.RunSpecs); count those rather than
# gotestsum's one-test-per-suite view of them.
suites=$(ls "$ARTIFACTS"/junit-*-suite.xml 2>/dev/null || true)
[ -n "$suites" ] || { log "no Ginkgo suite wrote its JUnit report"; rc=1; }
# Where the seconds went, per phase of every spec (framework/budget); never fails the run.
go run ./scripts/budget "$ARTIFACTS/budget" "$ARTIFACTS"/examples/*/budget || true
# The CPU the run took: user + sys of every process it started and waited for (the API servers, etcd
# and OLM included, reaped by the test binaries that started them). A warm make test is CPU-bound on
# 2 cores, and a VM's speed drifts (the same code can take ≈ 25 % more CPU from one hour to the next),
# so the CPU beside the wall time tells a slower machine from slower tests. `times` prints the shell's
# line, then its children's; it runs here, not in a subshell, to see this shell's children.
times >"$ARTIFACTS/.times"
cpu=$(awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); n += t[1] * 60 + t[2] } printf "%.0f", n }' "$ARTIFACTS/.times")
rm -f "$ARTIFACTS/.times"
# What the CPU alone takes of the cores, and where the rest of them went: a run as long as the first
# is as short as these cores allow for this much work, so only less CPU makes it shorter — unless
# other processes (another run beside it) took the rest.
cores=$(nproc) idle_after=$(idle_ticks)
spare=$((SECONDS * cores - cpu))
[ "$spare" -ge 0 ] || spare=0 # the CPU is rounded
if [ -n "$idle_before" ] && [ -n "$idle_after" ]; then
  idle=$(((idle_after - idle_before) / $(getconf CLK_TCK)))
  [ "$idle" -le "$spare" ] || idle=$spare
  rest="the cores idled ${idle} core-seconds, other processes took $((spare - idle))"
else
  rest="${spare} core-seconds idle or taken by other processes"
fi
log "make test: ${SECONDS} s, ${cpu} s of CPU on ${cores} cores (the CPU alone fills $(((cpu + cores - 1) / cores)) s of them; ${rest})"
go run ./scripts/junitsum -skip-classes /e2e/ "$ARTIFACTS/junit-unit.xml" $suites "$ARTIFACTS"/junit-example-*.xml || rc=1
exit $rc
