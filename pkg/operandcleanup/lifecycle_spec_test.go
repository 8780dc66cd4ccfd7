package operandcleanup

import (
	"fmt"
	"strings"
	"time"

	"github.com/cleanup-e2e/cleanup-e2e/internal/seeded"
	"github.com/cleanup-e2e/cleanup-e2e/internal/shrink"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// lifecycleResult is the outcome of running sequences.
type lifecycleResult struct {
	cfg              seeded.Config
	sequences, steps int
	seed             int64
	mode             string
	settled          bool
	ops              []lifecycleOp
	violations       []string
	original         []string // of the whole sequence, before shrinking
}

// runSequences runs cfg's sequences, stopping at the first that violates an invariant (shrunk with up to
// cfg.Shrink re-runs). settles tells, from a sequence's seed, whether the sequence waits for the
// controller after each operation (lifecycle_settle_test.go) or races it.
func runSequences(cfg seeded.Config, settles func(seed int64) bool) lifecycleResult {
	res := lifecycleResult{cfg: cfg}
	for seed := range cfg.Seeds() {
		mode, ops := generateSequence(seed, cfg.Steps)
		// Named in the spec's timeline, so that a harness error (not an invariant violation) still says
		// which seed to replay.
		By(fmt.Sprintf("sequence of seed %d (%s mode, %d operations); replay: %s", seed, mode, len(ops), cfg.Replay(seed)))
		res.sequences++
		res.steps += len(ops)
		settle := settles(seed)
		if v := newLifecycleRun(seed, mode, settle).run(ops); len(v) > 0 {
			res.seed, res.mode, res.settled = seed, mode, settle
			res.original = v
			res.ops, res.violations = shrinkSequence(seed, mode, settle, ops, v, cfg.Shrink)
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
	return fmt.Sprintf("invariant violated in the sequence of seed %d (%s mode, %s):\n  %s\nshortest failing sequence found (%d operations):%s\nits violations:\n  %s\nreplay: %s go test ./pkg/operandcleanup -run TestOperandCleanup -ginkgo.focus=lifecycle",
		res.seed, res.mode, pace, strings.Join(res.original, "\n  "), len(res.ops), formatOps(res.ops), strings.Join(res.violations, "\n  "), res.cfg.Replay(res.seed))
}

// Not Serial: each Ginkgo process has its own control plane and controller (BeforeSuite), and
// unsafeIgnoreOtherCSVs is per process, so these specs share nothing with another process's specs.
var _ = Describe("randomized lifecycle", Label("lifecycle"), func() {
	It("keeps every safety invariant over random install, upgrade, toggle, delete, retarget and restart sequences", func() {
		cfg, err := seeded.Read(seeded.Config{Sequences: 6, Steps: 18, Shrink: 12})
		Expect(err).NotTo(HaveOccurred())
		start := time.Now()
		res := runSequences(cfg, oddSeedsSettle)
		AddReportEntry("lifecycle", fmt.Sprintf("seed %d: %d sequences (odd seeds settled), %d operations checked in %s", cfg.Seed, res.sequences, res.steps, time.Since(start).Round(time.Second)))
		GinkgoWriter.Printf("lifecycle: seed %d, %d sequences, %d operations checked\n", cfg.Seed, res.sequences, res.steps)
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

	// The OLM v1 claim, pinned: drawn from a source of its own, it covers an uninstall in few seeds.
	It("deletes nothing of a CRD an OLM v1 ClusterExtension also installed", func() {
		ops := []lifecycleOp{{Kind: opInstallEnabled}, {Kind: opCreateOperand, NS: "op", Name: "w1", Held: true},
			{Kind: opExtensionClaim}, {Kind: opDeleteCSV, Name: "op.v1"}}
		Expect(newLifecycleRun(1, "AllNamespaces", true).run(ops)).To(BeEmpty())
	})

	It("catches a controller that cleans up while another CSV of the installation is still installed", func() {
		unsafeIgnoreOtherCSVs.Store(true)
		DeferCleanup(func() { unsafeIgnoreOtherCSVs.Store(false) })
		// A fixed seed range: the generator is deterministic, and settled sequences make the controller act
		// in every state, so whether it is caught does not depend on the machine's load.
		// A shrink budget of 4 re-runs (halves, then quarters) proves the shrinker drops operations; more
		// re-runs only make the example shorter and the suite, the longest package of make test, longer.
		res := runSequences(seeded.Config{Seed: 1, Sequences: 12, Steps: 18, Shrink: 4}, alwaysSettle)
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
		res := runSequences(seeded.Config{Seed: 4, Sequences: 12, Steps: 8}, alwaysSettle)
		AddReportEntry("lifecycle (targets forgotten)", fmt.Sprintf("caught after %d sequences, %d operations", res.sequences, res.steps))
		Expect(res.violations).NotTo(BeEmpty(), "the controller that follows only the current targets went unnoticed over %d settled sequences (%d operations): the lifecycle checker no longer catches a CR left Terminating after the OperatorGroup dropped its namespace", res.sequences, res.steps)
		Expect(strings.Join(res.violations, "\n")).To(ContainSubstring("left Terminating"), res.failure())
		GinkgoWriter.Println("caught as expected:\n" + res.failure())
	})
})
