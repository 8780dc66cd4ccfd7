package specs

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/cleanup-e2e/cleanup-e2e/framework/budget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/hold"
	"github.com/cleanup-e2e/cleanup-e2e/framework/matchers"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
)

// DescribeOperandCleanup declares the documented operand-cleanup cases for one operator (Cases) as a
// Ginkgo container: cleanup unset, disabled (also after an opt-in), enabled in each install mode
// (operands outside the targets untouched, and nothing else left behind: see ExpectNoLeftovers), the
// pending-deletion listing (also past its cap), abort, and — with upgrade bundles — upgrades that never
// clean up. Every spec makes its own namespaces, so they run in parallel and in random order; a spec
// in AllNamespaces mode, whose cleanup reaches every namespace, holds its operator's APIs exclusively
// meanwhile (ModeDecorators, cluster.LabelAPIScoped). Use it at the top level of a suite:
//
//	var _ = specs.DescribeOperandCleanup(specs.OperandCleanupSpecInput{...})
//
// A bad input panics while the spec tree is built, naming the field.
func DescribeOperandCleanup(in OperandCleanupSpecInput) bool {
	cases, err := Cases(in)
	if err != nil {
		panic(err)
	}
	return Describe(fmt.Sprintf("Operand cleanup of %s", in.Name), Label("operand-cleanup", in.Name), func() { its(cases) })
}

// OperandCleanupSpec is DescribeOperandCleanup; ctx was never used (the specs get theirs from Ginkgo).
//
// Deprecated: use DescribeOperandCleanup(in).
func OperandCleanupSpec(_ context.Context, in OperandCleanupSpecInput) bool {
	return DescribeOperandCleanup(in)
}

// DescribeCleanupEnabled declares only the cleanup-enabled cases of DescribeOperandCleanup (one spec
// per install mode, each with the leftovers check unless in.SkipLeftoversCheck): for an operator repo
// that wants the core guarantee without the whole matrix, or a second input (e.g. an operand variant).
func DescribeCleanupEnabled(in OperandCleanupSpecInput) bool {
	if err := in.defaults(); err != nil {
		panic(err)
	}
	return Describe(fmt.Sprintf("Cleanup-enabled uninstall of %s", in.Name), Label("operand-cleanup", in.Name), func() {
		its(timed(enabledCases(in)))
	})
}

// CleanupEnabledSpec is DescribeCleanupEnabled; ctx was never used.
//
// Deprecated: use DescribeCleanupEnabled(in).
func CleanupEnabledSpec(_ context.Context, in OperandCleanupSpecInput) bool {
	return DescribeCleanupEnabled(in)
}

// its declares one Ginkgo spec per case.
func its(cases []Case) {
	for _, c := range cases {
		It(c.Name, ModeDecorators(c.Mode, Label(c.Labels...), func(ctx context.Context) { c.Run(ctx, FromGinkgo()) })...)
	}
}

// Case is one documented operand-cleanup case, runnable by any front end: OperandCleanupSpec makes
// each a Ginkgo spec, framework/e2eframework an e2e-framework feature.
type Case struct {
	// Name says what the case checks, e.g. "keeps every operand when spec.cleanup is unset".
	Name string
	// Mode is the install mode it runs in. Cases in AllNamespaces (their cleanup is cluster-wide) may
	// run beside others: their Installation holds the APIs they use exclusively (Environment.APIs).
	Mode operatorsv1alpha1.InstallModeType
	// Labels name the case for filters (e.g. "cleanup-unset").
	Labels []string
	// Run runs the case in test t.
	Run func(ctx context.Context, t T)
}

// Cases are the cases of DescribeOperandCleanup for in (defaults applied; the error names the field).
func Cases(in OperandCleanupSpecInput) ([]Case, error) {
	if err := in.defaults(); err != nil {
		return nil, err
	}
	first := in.InstallModes[0]
	cases := []Case{
		{Name: "keeps every operand when spec.cleanup is unset", Mode: first, Labels: []string{"cleanup-unset"},
			Run: func(ctx context.Context, t T) {
				r := NewInstallationFor(ctx, t, in, first)
				r.Install(ctx, in.BundleDir, nil)
				r.g.Expect(r.csv).To(matchers.HaveCleanupEnabled(false), "the bundle must leave spec.cleanup as the SDK generates it")
				r.CreateOperands(ctx)
				r.Uninstall(ctx)
				r.ExpectUninstalled(ctx)
				r.ExpectKept(ctx, r.ops.items)
			}},
		{Name: "keeps every operand when cleanup was opted in and then out", Mode: first, Labels: []string{"cleanup-disabled"},
			Run: func(ctx context.Context, t T) {
				r := NewInstallationFor(ctx, t, in, first)
				r.Install(ctx, in.BundleDir, ptr.To(true))
				r.CreateOperands(ctx)
				r.SetCleanup(ctx, false)
				r.ExpectCleanupFinalizer(ctx, false)
				r.Uninstall(ctx)
				r.ExpectUninstalled(ctx)
				r.ExpectKept(ctx, r.ops.items)
			}},
	}
	cases = append(cases, enabledCases(in)...)
	cases = append(cases, retargetCase(in)...)
	cases = append(cases,
		Case{Name: "lists the operands pending deletion and shrinks the list as they go", Mode: first, Labels: []string{"cleanup-pending"},
			Run: func(ctx context.Context, t T) {
				r := NewInstallationFor(ctx, t, in, first)
				r.Install(ctx, in.BundleDir, ptr.To(true))
				r.CreateOperands(ctx)
				held, _ := r.ops.where(r.WatchedNamespaces(), r.Global())
				for _, o := range held {
					r.Hold(ctx, o)
				}
				r.Uninstall(ctx)
				r.ExpectPending(ctx, held)
				for len(held) > 0 {
					t.Step(fmt.Sprintf("releasing %s %s", held[0].GetKind(), describeKey(held[0])))
					r.Release(ctx, held[0])
					held = held[1:]
					r.ExpectPending(ctx, held)
				}
				r.ExpectUninstalled(ctx)
			}},
		Case{Name: "caps the pending list and says how many operands remain", Mode: first, Labels: []string{"cleanup-pending", "cleanup-cap"},
			Run: func(ctx context.Context, t T) {
				r := NewInstallationFor(ctx, t, in, first)
				limit, err := pendingListCap(ctx, r.c, in.PendingListCap)
				r.g.Expect(err).NotTo(HaveOccurred())
				r.Install(ctx, in.BundleDir, ptr.To(true))
				target := r.WatchedNamespaces()[0]
				many := func(ns string) []*unstructured.Unstructured {
					base := in.Samples(ns)[0]
					out := make([]*unstructured.Unstructured, limit+20)
					for i := range out {
						out[i] = base.DeepCopy()
						out[i].SetName(fmt.Sprintf("%s-%03d", base.GetName(), i))
						out[i].SetFinalizers(append(out[i].GetFinalizers(), hold.Finalizer))
					}
					return out
				}
				r.ops = r.createSamples(ctx, many, target)
				total := len(r.ops.items)
				r.Uninstall(ctx)
				r.g.Eventually(r.LiveCSV(ctx)).WithContext(ctx).WithTimeout(in.Timeout).Should(And(
					matchers.HavePhase(PhaseCleanup, ReasonWaitingOnCleanup),
					matchers.HavePendingCount(limit),
					matchers.HaveCondition(PhaseCleanup, ReasonWaitingOnCleanup, fmt.Sprintf("waiting for operator to finish cleanup for %d CRs", total)),
				))
				for _, o := range r.ops.items {
					r.Release(ctx, o)
				}
				r.ExpectUninstalled(ctx)
			}},
		Case{Name: "aborts a stuck cleanup when spec.cleanup.enabled is set to false", Mode: first, Labels: []string{"cleanup-abort"},
			Run: func(ctx context.Context, t T) {
				r := NewInstallationFor(ctx, t, in, first)
				r.Install(ctx, in.BundleDir, ptr.To(true))
				r.CreateOperands(ctx)
				watched, _ := r.ops.where(r.WatchedNamespaces(), r.Global())
				stuck := watched[0]
				r.Hold(ctx, stuck)
				r.Uninstall(ctx)
				r.ExpectPending(ctx, []*unstructured.Unstructured{stuck})
				r.SetCleanup(ctx, false)
				r.ExpectUninstalled(ctx)
				r.expectStays(ctx, []*unstructured.Unstructured{stuck})
			}},
	)
	if len(in.UpgradeBundleDirs) > 0 {
		cases = append(cases, Case{Name: "never cleans up on upgrade and carries the opt-in to each new version", Mode: first,
			Labels: []string{"cleanup-upgrade"},
			Run: func(ctx context.Context, t T) {
				r := NewInstallationFor(ctx, t, in, first)
				r.Install(ctx, in.BundleDir, ptr.To(true))
				r.CreateOperands(ctx)
				for _, next := range in.UpgradeBundleDirs {
					r.Upgrade(ctx, next)
					r.g.Eventually(r.LiveCSV(ctx)).WithContext(ctx).WithTimeout(in.Timeout).Should(And(
						matchers.HaveCleanupEnabled(true), matchers.HaveFinalizer(CleanupFinalizer)))
					r.ExpectKept(ctx, r.ops.items)
				}
				removed, kept := r.ops.where(r.WatchedNamespaces(), r.Global())
				r.Uninstall(ctx)
				r.ExpectRemoved(ctx, removed)
				r.ExpectUninstalled(ctx)
				r.ExpectKept(ctx, kept)
			}})
	}
	return timed(cases), nil
}

// timed makes each case record its whole duration in the time budget (phase "case").
func timed(cases []Case) []Case {
	for i := range cases {
		run := cases[i].Run
		cases[i].Run = func(ctx context.Context, t T) {
			if budgeted(t) {
				defer budget.Start(t.Name(), "case", t.Failed)()
			}
			run(ctx, t)
		}
	}
	return cases
}

// enabledCaseName starts the name of each cleanup-enabled case (EnabledCase finds them by it).
const enabledCaseName = "removes the operands in the target namespaces"

// enabledCases: per install mode, cleanup removes the operands it watches, leaves the others, and the
// operator leaves nothing else behind (framework/leftovers). in has its defaults.
func enabledCases(in OperandCleanupSpecInput) []Case {
	var cases []Case
	for _, mode := range in.InstallModes {
		labels := []string{"cleanup-enabled"}
		if !in.SkipLeftoversCheck {
			labels = append(labels, "leftovers")
		}
		cases = append(cases, Case{Name: fmt.Sprintf(enabledCaseName+" and nothing else [%s]", mode),
			Mode: mode, Labels: labels,
			Run: func(ctx context.Context, t T) {
				r := NewInstallationFor(ctx, t, in, mode)
				if !in.SkipLeftoversCheck {
					r.SnapshotBeforeInstall(ctx)
				}
				r.Install(ctx, in.BundleDir, ptr.To(true))
				r.CreateOperands(ctx)
				removed, kept := r.ops.where(r.WatchedNamespaces(), r.Global())
				r.g.Expect(removed).NotTo(BeEmpty(), "the samples must give cleanup something to remove")
				r.Uninstall(ctx)
				r.ExpectRemoved(ctx, removed)
				r.ExpectUninstalled(ctx)
				r.ExpectKept(ctx, kept)
				if !in.SkipLeftoversCheck {
					r.ExpectNoLeftovers(ctx)
				}
			}})
	}
	return cases
}

// LiveCSV returns a getter of the installation's CSV as it is now, for Eventually and the matchers.
func (r *Installation) LiveCSV(ctx context.Context) func() (*operatorsv1alpha1.ClusterServiceVersion, error) {
	return func() (*operatorsv1alpha1.ClusterServiceVersion, error) {
		return olm.GetCSV(ctx, r.c, r.csv.Namespace, r.csv.Name)
	}
}

// ExpectPending waits until the CSV is in the Cleanup phase listing exactly these operands, with the
// count in its condition message. With none left it returns at once (ExpectUninstalled follows).
func (r *Installation) ExpectPending(ctx context.Context, objs []*unstructured.Unstructured) {
	if len(objs) == 0 {
		return
	}
	want := pendingEntries(objs)
	// The operands the spec does not hold in the watched namespaces must go: when one is still listed,
	// the failure says what keeps it.
	inside, _ := r.ops.where(r.WatchedNamespaces(), r.Global())
	others := (&operands{items: inside}).others(objs)
	r.g.Eventually(r.LiveCSV(ctx)).WithContext(ctx).WithTimeout(r.within(r.in.Timeout)).Should(And(
		matchers.HavePhase(PhaseCleanup, ReasonWaitingOnCleanup),
		matchers.HavePendingDeletion(want...),
		matchers.HaveCondition(PhaseCleanup, ReasonWaitingOnCleanup, fmt.Sprintf("waiting for operator to finish cleanup for %d CRs", len(objs))),
	), func() string { return r.explainOperands(ctx, others) })
}

// pendingEntries are objs as status.cleanup.pendingDeletion lists them.
func pendingEntries(objs []*unstructured.Unstructured) []matchers.PendingEntry {
	var out []matchers.PendingEntry
	for _, o := range objs {
		out = append(out, matchers.PendingEntry{Group: o.GroupVersionKind().Group, Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName()})
	}
	return out
}

// explainOperands describes those of objs that still exist (describeOperand), for a failure: what
// keeps each one says whose the stall is, and what the operator said last about it, why.
func (r *Installation) explainOperands(ctx context.Context, objs []*unstructured.Unstructured) string {
	live, err := r.ops.live(ctx, objs)
	switch {
	case err != nil:
		return fmt.Sprintf("could not read the operands: %v", err)
	case len(live) == 0:
		return ""
	}
	left := describeOperands(live)
	const shown = 5 // the cap spec has dozens, alike
	if len(left) > shown {
		left = append(left[:shown], fmt.Sprintf("and %d more", len(left)-shown))
	}
	return "operands still there: " + strings.Join(left, "; ") + operatorSaid(r.operatorLog, live[:min(len(live), shown)])
}
