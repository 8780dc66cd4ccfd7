package specs

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
)

// The opt-ins of the operand-cleanup controller for a ClusterExtension (pkg/extensioncleanup): this
// project's convention, not OLM v1 API. A test keeps them in step with the controller's.
const (
	// UninstallAnnotation on a ClusterExtension chooses what deleting it does.
	UninstallAnnotation = "cleanup-e2e.io/uninstall"
	// UninstallDeleteOperands: the custom resources are deleted, and finalized by the running operator,
	// before the CRDs, the operator and its RBAC go.
	UninstallDeleteOperands = "delete-operands"
	// UninstallOrphan: the CRDs, and so every custom resource, stay; the rest goes as upstream.
	UninstallOrphan = "orphan"
)

// olmv1OptInCases are the cases of the controller's opt-ins: the ordered uninstall with each
// propagation policy, and orphan with its reinstall.
func olmv1OptInCases(in OperandCleanupSpecInput) []Case {
	ordered := func(policy metav1.DeletionPropagation) Case {
		return Case{Name: fmt.Sprintf("OLM v1 with %s: %s on a %s deletion of the ClusterExtension finalizes every custom resource "+
			"before its CRDs and operator go, and leaves nothing behind", UninstallAnnotation, UninstallDeleteOperands, policy),
			Labels: []string{"olmv1-ordered", "leftovers"},
			Run: func(ctx context.Context, t T) {
				x := NewExtension(ctx, t, in)
				x.SnapshotBeforeInstall(ctx)
				x.Install(ctx, map[string]string{UninstallAnnotation: UninstallDeleteOperands})
				x.CreateOperands(ctx)
				deleted := x.Uninstall(ctx, policy)
				x.ExpectUninstalled(ctx, false)
				verdicts := x.Verdicts(ctx)
				t.Logf("ClusterExtension %s deleted (%s) with %s; verdicts %s later:\n%s", x.name, policy, UninstallDeleteOperands,
					time.Since(deleted).Round(time.Millisecond), olmv1.Report(verdicts))
				t.Gomega().Expect(notFinalized(verdicts)).To(BeEmpty(), "with %s=%s every custom resource must be finalized by its "+
					"operator before the ClusterExtension goes; its conditions when last seen (the controller's is %s): %s",
					UninstallAnnotation, UninstallDeleteOperands, "cleanup-e2e.io/Uninstall", x.lastConditions)
				x.ExpectCRDsGone(ctx)
				x.ExpectNoLeftovers(ctx)
			}}
	}
	return []Case{
		ordered(metav1.DeletePropagationBackground),
		ordered(metav1.DeletePropagationForeground),
		{Name: fmt.Sprintf("OLM v1 with %s: %s keeps the CRDs and every custom resource, and a reinstall adopts them", UninstallAnnotation, UninstallOrphan),
			Labels: []string{"olmv1-orphan", "leftovers"},
			Run: func(ctx context.Context, t T) {
				x := NewExtension(ctx, t, in)
				x.SnapshotBeforeInstall(ctx)
				x.Install(ctx, map[string]string{UninstallAnnotation: UninstallOrphan})
				x.CreateOperands(ctx)
				x.Uninstall(ctx, metav1.DeletePropagationBackground)
				x.ExpectUninstalled(ctx, false)
				verdicts := x.Verdicts(ctx)
				t.Logf("ClusterExtension %s deleted with %s:\n%s", x.name, UninstallOrphan, olmv1.Report(verdicts))
				t.Gomega().Expect(deletedOnes(verdicts)).To(BeEmpty(), "with %s=%s no custom resource may be deleted", UninstallAnnotation, UninstallOrphan)
				x.ExpectCRDsKept(ctx)
				x.Reinstall(ctx, nil)
				x.DeleteOperands(ctx)
				x.Uninstall(ctx, metav1.DeletePropagationBackground)
				x.ExpectUninstalled(ctx, false)
				x.ExpectCRDsGone(ctx)
				x.ExpectNoLeftovers(ctx)
			}},
	}
}

// notFinalized are the verdicts other than finalized by its operator.
func notFinalized(vs []olmv1.CRVerdict) []string {
	var out []string
	for _, v := range vs {
		if v.Verdict != olmv1.Finalized {
			out = append(out, v.String())
		}
	}
	return out
}

// deletedOnes are the verdicts of custom resources something deleted.
func deletedOnes(vs []olmv1.CRVerdict) []string {
	var out []string
	for _, v := range vs {
		if v.Verdict != olmv1.NotDeleted {
			out = append(out, v.String())
		}
	}
	return out
}
