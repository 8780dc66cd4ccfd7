package specs

import (
	"context"
	"fmt"
	"slices"
	"strings"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
)

// The operand-cleanup controller's side of an opt-in (pkg/extensioncleanup, kept in step by a test):
// its finalizer on the ClusterExtension, its condition, and the owner reference to its ClusterRole (the
// holder) on what must outlive the deletion.
const (
	uninstallFinalizer = "cleanup-e2e.io/uninstall"
	uninstallCondition = "cleanup-e2e.io/Uninstall"
	holderClusterRole  = "operand-cleanup"
)

// awaitHold waits until the controller has taken the opted-in ClusterExtension in hand: its finalizer,
// its condition Holding, and the holder reference on the CRDs (both modes) and on the operator's
// Deployments (delete-operands). Deleting the ClusterExtension earlier is OLM v1's plain uninstall,
// whatever the annotation says: a user waits for the same before deleting.
func (x *Extension) awaitHold(ctx context.Context, mode string) {
	x.t.Step(fmt.Sprintf("waiting for the operand-cleanup controller to hold ClusterExtension %s (%s)", x.name, mode))
	x.g.Eventually(func() error { return x.held(ctx, mode) }).WithContext(ctx).WithTimeout(within(x.t, x.in.Timeout)).
		Should(Succeed(), "the operand-cleanup controller should hold ClusterExtension %s before it is deleted (%s=%s): is the "+
			"controller installed (stack.Components.OperandCleanup) and recent enough to serve OLM v1? It starts its OLM v1 "+
			"controller within 5 s of the ClusterExtension API being served; its log is among the provider's artifacts",
			x.name, UninstallAnnotation, mode)
}

// held is nil once the controller holds the ClusterExtension, else says what is missing.
func (x *Extension) held(ctx context.Context, mode string) error {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(olmv1.ClusterExtensionGVK)
	if err := x.c.Get(ctx, client.ObjectKeyFromObject(x.ce), live); err != nil {
		return err
	}
	if !slices.Contains(live.GetFinalizers(), uninstallFinalizer) {
		return fmt.Errorf("no finalizer %s on ClusterExtension %s (finalizers %v)", uninstallFinalizer, x.name, live.GetFinalizers())
	}
	conds, err := olmv1.Conditions(live)
	if err != nil {
		return err
	}
	c := meta.FindStatusCondition(conds, uninstallCondition)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != "Holding" {
		return fmt.Errorf("condition %s of ClusterExtension %s is not Holding: %s", uninstallCondition, x.name, olmv1.DescribeConditions(conds))
	}
	var missing []string
	for _, name := range x.crds {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := x.c.Get(ctx, types.NamespacedName{Name: name}, crd); err != nil {
			return err
		}
		if !heldByController(crd.OwnerReferences) {
			missing = append(missing, "CRD "+name)
		}
	}
	if mode == UninstallDeleteOperands {
		for _, d := range x.csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
			dep := &appsv1.Deployment{}
			if err := x.c.Get(ctx, types.NamespacedName{Namespace: x.all[0], Name: d.Name}, dep); err != nil {
				return err
			}
			if !heldByController(dep.OwnerReferences) {
				missing = append(missing, "Deployment "+x.all[0]+"/"+d.Name)
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("no owner reference to ClusterRole %s (the holder) on %s yet; condition %s: %s", holderClusterRole,
			strings.Join(missing, ", "), uninstallCondition, c.Message)
	}
	return nil
}

func heldByController(refs []metav1.OwnerReference) bool {
	return slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return r.Kind == "ClusterRole" && r.Name == holderClusterRole })
}
