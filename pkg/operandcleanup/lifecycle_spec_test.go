package operandcleanup

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cleanup-e2e/cleanup-e2e/internal/shrink"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Knobs of the randomized lifecycle test (docs/safety.md).
const (
	envSeed      = "CLEANUP_E2E_LIFECYCLE_SEED"      // base seed (default: the clock); sequence i uses seed+i
	envSequences = "CLEANUP_E2E_LIFECYCLE_SEQUENCES" // sequences to run (default 6)
	envSteps     = "CLEANUP_E2E_LIFECYCLE_STEPS"     // operations per sequence (default 18)
	envShrink    = "CLEANUP_E2E_LIFECYCLE_SHRINK"    // re-runs the shrinker may spend on a failure (default 12)
)

func envInt(name string, def int64) int64 {
	if v, err := strconv.ParseInt(os.Getenv(name), 10, 64); err == nil {
		return v
	}
	return def
}

// lifecycleResult is the outcome of running sequences.
type lifecycleResult struct {
	sequences, steps int
	seed             int64
	mode             string
	settled          bool
	ops              []lifecycleOp
	violations       []string
	original         []string // of the whole sequence, before shrinking
}

// runSequences runs n sequences of length steps from base, stopping at the first that violates an
// invariant (shrunk with up to shrinkBudget re-runs). settles tells, from a sequence's seed, whether the
// sequence waits for the controller after each operation (lifecycle_settle_test.go) or races it.
func runSequences(base int64, n, steps, shrinkBudget int, settles func(seed int64) bool) lifecycleResult {
	res := lifecycleResult{}
	for i := 0; i < n; i++ {
		seed := base + int64(i)
		mode, ops := generateSequence(seed, steps)
		// Named in the spec's timeline, so that a harness error (not an invariant violation) still says
		// which seed to replay.
		By(fmt.Sprintf("sequence of seed %d (%s mode, %d operations); replay: %s=%d %s=1", seed, mode, len(ops), envSeed, seed, envSequences))
		res.sequences++
		res.steps += len(ops)
		settle := settles(seed)
		if v := newLifecycleRun(seed, mode, settle).run(ops); len(v) > 0 {
			res.seed, res.mode, res.settled = seed, mode, settle
			res.original = v
			res.ops, res.violations = shrinkSequence(seed, mode, settle, ops, v, shrinkBudget)
			return res
		}
	}
	return res
}

// oddSeedsSettle: half the sequences race the controller, half are settled; a seed replays the same way.
func oddSeedsSettle(seed int64) bool { return seed%2 != 0 }

func alwaysSettle(int64) bool { return true }

// shrinkSequence is the shortest failing sequence internal/shrink finds within budget re-runs.
func shrinkSequence(seed int64, mode string, settle bool, ops []lifecycleOp, violations []string, budget int) ([]lifecycleOp, []string) {
	return shrink.Chunks(ops, violations, budget, func(cand []lifecycleOp) []string {
		return newLifecycleRun(seed, mode, settle).run(cand)
	})
}

func (res lifecycleResult) failure() string {
	pace := "racing the controller"
	if res.settled {
		pace = "settled after each operation"
	}
	return fmt.Sprintf("invariant violated in the sequence of seed %d (%s mode, %s):\n  %s\nshortest failing sequence found (%d operations):%s\nits violations:\n  %s\nreplay: %s=%d %s=1 go test ./pkg/operandcleanup -run TestOperandCleanup -ginkgo.focus=lifecycle",
		res.seed, res.mode, pace, strings.Join(res.original, "\n  "), len(res.ops), formatOps(res.ops), strings.Join(res.violations, "\n  "), envSeed, res.seed, envSequences)
}

// Not Serial: each Ginkgo process has its own control plane and controller (BeforeSuite), and
// unsafeIgnoreOtherCSVs is per process, so these specs share nothing with another process's specs.
var _ = Describe("randomized lifecycle", Label("lifecycle"), func() {
	It("keeps every safety invariant over random install, upgrade, toggle, delete, retarget and restart sequences", func() {
		base := envInt(envSeed, time.Now().UnixNano()%1_000_000)
		n, steps, shrinkBudget := int(envInt(envSequences, 6)), int(envInt(envSteps, 18)), int(envInt(envShrink, 12))
		start := time.Now()
		res := runSequences(base, n, steps, shrinkBudget, oddSeedsSettle)
		AddReportEntry("lifecycle", fmt.Sprintf("seed %d: %d sequences (odd seeds settled), %d operations checked in %s", base, res.sequences, res.steps, time.Since(start).Round(time.Second)))
		GinkgoWriter.Printf("lifecycle: seed %d, %d sequences, %d operations checked\n", base, res.sequences, res.steps)
		Expect(res.violations).To(BeEmpty(), res.failure())
	})

	// Found by the first settled runs (seed 509): the checker dated the state an operation makes from the
	// barrier after it, so a cleanup the controller did before that barrier was judged by the state before
	// the uninstall, which permits nothing.
	It("judges a cleanup done before the step's barrier by the state the step made", func() {
		ops := []lifecycleOp{{Kind: opInstallEnabled}, {Kind: opCreateOperand, NS: "op", Name: "w1", Held: true}, {Kind: opDeleteCSV, Name: "op.v1"}}
		r := newLifecycleRun(509, "AllNamespaces", true)
		Expect(r.run(ops)).To(BeEmpty())
		var inStep3, recorded []string
		for _, d := range r.rec.Since(0) {
			if d.Step == 3 && d.Name == "w1" {
				inStep3 = append(inStep3, d.String())
			}
			recorded = append(recorded, fmt.Sprintf("%s in step %d", d, d.Step))
		}
		Expect(inStep3).To(HaveLen(1), "settled, the controller must have deleted w1 within step 3 (the uninstall), before its barrier; recorded: %s", strings.Join(recorded, ", "))
	})

	It("catches a controller that cleans up while another CSV of the installation is still installed", func() {
		unsafeIgnoreOtherCSVs.Store(true)
		DeferCleanup(func() { unsafeIgnoreOtherCSVs.Store(false) })
		// A fixed seed range: the generator is deterministic, and settled sequences make the controller act
		// in every state, so whether it is caught does not depend on the machine's load.
		// A shrink budget of 4 re-runs (halves, then quarters) proves the shrinker drops operations; more
		// re-runs only make the example shorter and the suite, the longest package of make test, longer.
		res := runSequences(envInt(envSeed+"_BROKEN", 1), int(envInt(envSequences+"_BROKEN", 12)), 18, 4, alwaysSettle)
		AddReportEntry("lifecycle (broken controller)", fmt.Sprintf("caught after %d sequences, %d operations; shrunk to %d", res.sequences, res.steps, len(res.ops)))
		Expect(res.violations).NotTo(BeEmpty(), "the broken controller went unnoticed over %d settled sequences (%d operations): the lifecycle checker no longer catches a cleanup while an installed predecessor serves the operands", res.sequences, res.steps)
		GinkgoWriter.Println("caught as expected:\n" + res.failure())
		Expect(len(res.ops)).To(BeNumerically("<", 18), "the shrinker should have dropped operations the violation does not need")
	})

	It("catches a controller that lets the operator go while a CR it deleted waits in a namespace that left the targets", func() {
		unsafeIgnoreUninstallTargets.Store(true)
		DeferCleanup(func() { unsafeIgnoreUninstallTargets.Store(false) })
		// Seeds 4-7 and 12-15 are those whose final uninstall changes the targets (lifecycle_targets_test.go);
		// a sequence's own operations may spare the dropped CR (e.g. another installation that serves its
		// namespace finalizes it), so several are drawn.
		res := runSequences(4, 12, 8, 0, alwaysSettle)
		AddReportEntry("lifecycle (targets forgotten)", fmt.Sprintf("caught after %d sequences, %d operations", res.sequences, res.steps))
		Expect(res.violations).NotTo(BeEmpty(), "the controller that follows only the current targets went unnoticed over %d settled sequences (%d operations): the lifecycle checker no longer catches a CR left Terminating after the OperatorGroup dropped its namespace", res.sequences, res.steps)
		Expect(strings.Join(res.violations, "\n")).To(ContainSubstring("left Terminating"), res.failure())
		GinkgoWriter.Println("caught as expected:\n" + res.failure())
	})
})
