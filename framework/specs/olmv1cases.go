package specs

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
)

// DescribeOLMv1Uninstall declares the OLM v1 uninstall cases for one operator (OLMv1Cases) as a Ginkgo
// container, next to (or instead of) DescribeOperandCleanup, with the same input: the cluster's stack
// needs OLM v1 (stack.ForOLMv1Uninstall(), or Components.OLMv1). Each case holds the kinds its operator
// owns exclusively (the uninstall deletes their CRDs), so they run one at a time and never beside an
// OLM v0 case of the same operator; the kinds it requires it holds shared.
//
//	var _ = specs.DescribeOLMv1Uninstall(specs.OperandCleanupSpecInput{...})
//
// A bad input panics while the spec tree is built, naming the field.
func DescribeOLMv1Uninstall(in OperandCleanupSpecInput) bool {
	cases, err := OLMv1Cases(in)
	if err != nil {
		panic(err)
	}
	return Describe(fmt.Sprintf("OLM v1 uninstall of %s", in.Name), Label("olmv1", in.Name), func() {
		for _, c := range cases {
			It(c.Name, Label(c.Labels...), func(ctx context.Context) { c.Run(ctx, FromGinkgo()) })
		}
	})
}

// olmv1CRsFirstCase starts the name of the case the mutation checks run (OLMv1CRsFirstCase).
const olmv1CRsFirstCase = "OLM v1: deleting the custom resources before the ClusterExtension"

// OLMv1Cases are the cases of DescribeOLMv1Uninstall for in (defaults applied; the error names the
// field). Each installs the operator through a ClusterCatalog and a ClusterExtension (olmv1.Version,
// cluster-wide into a namespace of its own), creates in.Samples in two namespaces and waits for
// in.Reconciled:
//
//   - the custom resources deleted first, then the ClusterExtension: each finalized by its operator
//     (in.Finalized), the CRDs gone, nothing left behind (framework/leftovers);
//   - the ClusterExtension deleted with the custom resources in place, as upstream documents the
//     uninstall: each one's verdict (olmv1.Judge), logged; a custom resource removed before its
//     operator ran fails the case (its finalizer's work is lost for good), one stuck Terminating does
//     not, as long as reinstalling the extension lets the operator finish it — the recovery this case
//     checks — and the uninstall in the safe order then leaves nothing behind;
//   - with the operand-cleanup controller's opt-ins on the ClusterExtension (UninstallAnnotation):
//     delete-operands, deleted in background and in foreground: every custom resource finalized by its
//     operator before the CRDs and the operator go, nothing left behind; orphan: the CRDs and every
//     custom resource kept, and a reinstall of the same extension adopts them.
func OLMv1Cases(in OperandCleanupSpecInput) ([]Case, error) {
	if err := in.defaults(); err != nil {
		return nil, err
	}
	return timed(append([]Case{
		{Name: olmv1CRsFirstCase + " finalizes each and leaves nothing behind", Labels: []string{"olmv1-crs-first", "leftovers"},
			Run: func(ctx context.Context, t T) {
				x := NewExtension(ctx, t, in)
				x.SnapshotBeforeInstall(ctx)
				x.Install(ctx, nil)
				x.CreateOperands(ctx)
				x.DeleteOperands(ctx)
				x.Uninstall(ctx, metav1.DeletePropagationBackground)
				x.ExpectUninstalled(ctx, false)
				x.ExpectCRDsGone(ctx)
				x.ExpectNoLeftovers(ctx)
			}},
		{Name: "OLM v1: deleting the ClusterExtension with custom resources in place: each one's verdict, and a reinstall finishes what it left",
			Labels: []string{"olmv1-plain", "leftovers"},
			Run: func(ctx context.Context, t T) {
				x := NewExtension(ctx, t, in)
				x.SnapshotBeforeInstall(ctx)
				x.Install(ctx, nil)
				x.CreateOperands(ctx)
				deleted := x.Uninstall(ctx, metav1.DeletePropagationBackground)
				x.ExpectUninstalled(ctx, false)
				verdicts := x.Verdicts(ctx)
				t.Logf("OLM v1 %s, ClusterExtension %s deleted with its custom resources in place; verdicts %s later, the operator gone:\n%s",
					olmv1.Version, x.name, time.Since(deleted).Round(time.Millisecond), olmv1.Report(verdicts))
				t.Gomega().Expect(lost(verdicts)).To(BeEmpty(), "custom resources OLM v1 removed before their operator handled the deletion "+
					"(its finalizer's work will never be done; delete your custom resources before the ClusterExtension)")
				if stuck := stuckOnes(verdicts); len(stuck) > 0 {
					t.Step(fmt.Sprintf("%d custom resource(s) stuck Terminating with their operator gone: reinstalling lets it finish them", len(stuck)))
				}
				x.Reinstall(ctx, nil)
				x.DeleteOperands(ctx)
				x.Uninstall(ctx, metav1.DeletePropagationBackground)
				x.ExpectUninstalled(ctx, false)
				x.ExpectCRDsGone(ctx)
				x.ExpectNoLeftovers(ctx)
			}},
	}, olmv1OptInCases(in)...)), nil
}

// OLMv1CRsFirstCase is the case of OLMv1Cases the mutation checks run: it reconciles, finalizes and
// checks for leftovers, all under OLM v1.
func OLMv1CRsFirstCase(in OperandCleanupSpecInput) (Case, error) {
	cases, err := OLMv1Cases(in)
	if err != nil {
		return Case{}, err
	}
	for _, c := range cases {
		if strings.HasPrefix(c.Name, olmv1CRsFirstCase) {
			return c, nil
		}
	}
	return Case{}, fmt.Errorf("no case %q among the OLM v1 cases", olmv1CRsFirstCase)
}

// lost are the verdicts of custom resources removed before their operator ran.
func lost(vs []olmv1.CRVerdict) []string {
	var out []string
	for _, v := range vs {
		if v.Verdict == olmv1.RemovedUnfinalized {
			out = append(out, v.String())
		}
	}
	return out
}

func stuckOnes(vs []olmv1.CRVerdict) []olmv1.CRVerdict {
	var out []olmv1.CRVerdict
	for _, v := range vs {
		if v.Verdict == olmv1.StuckTerminating {
			out = append(out, v)
		}
	}
	return out
}
