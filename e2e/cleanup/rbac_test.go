package cleanup

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
)

// Why cleanup needs more than deleting CRs: OLM (≥ 0.27) deletes an operator's cluster RBAC the moment its
// CSV gets a deletionTimestamp, so a naive cleanup leaves the operator's finalizers without the
// permissions they need (widget-operator's records live outside its target namespaces), and cleanup
// stalls forever. This spec shows OLM's deletion happening and that the operator keeps exactly the
// permissions it had until its operands are gone. The enabled-cleanup specs of every install mode
// check the outcome (records removed by the finalizer).
var _ = Describe("Operator permissions during cleanup", Label("operand-cleanup", "cleanup-rbac"), func() {
	for _, mode := range []operatorsv1alpha1.InstallModeType{operatorsv1alpha1.InstallModeTypeSingleNamespace, operatorsv1alpha1.InstallModeTypeAllNamespaces} {
		It("keeps the operator able to delete its records after OLM removed its cluster RBAC ["+string(mode)+"]", specs.ModeDecorators(mode, func(ctx context.Context) {
			r := specs.NewInstallation(ctx, widgetOperator, mode)
			r.Install(ctx, widgetOperator.BundleDir, ptr.To(true))
			r.CreateOperands(ctx)
			held, _ := r.Operands(r.WatchedNamespaces(), r.Global())
			for _, o := range held {
				r.Hold(ctx, o)
			}
			csv := r.CSV()
			sa := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.ServiceAccountName
			Expect(mayDeleteRecords(ctx, csv.Namespace, sa)).To(BeTrue(), "installed: the operator may delete its records")

			r.Uninstall(ctx)
			By("seeing OLM delete the cluster RBAC it made for the CSV, as it does for any deleted CSV")
			Eventually(func() ([]string, error) { return olmClusterRBAC(ctx, csv, false) }).WithContext(ctx).WithTimeout(time.Minute).Should(BeEmpty(),
				"OLM should have requested the deletion of every ClusterRole/Binding it made for the CSV")

			By("checking the operator may still delete its records while operands are pending")
			Consistently(func() (bool, error) { return mayDeleteRecords(ctx, csv.Namespace, sa) }).WithContext(ctx).
				WithTimeout(3 * time.Second).Should(BeTrue())
			Expect(mayCreateSecretsCluster(ctx, csv.Namespace, sa)).To(BeFalse(), "nothing the operator did not have may be granted")

			for _, o := range held {
				r.Release(ctx, o)
			}
			r.ExpectRemoved(ctx, held)
			r.ExpectUninstalled(ctx)
			By("checking nothing of the operator's permissions outlives it")
			Eventually(func() ([]string, error) { return olmClusterRBAC(ctx, csv, true) }).WithContext(ctx).WithTimeout(time.Minute).Should(BeEmpty())
			Eventually(func() (bool, error) { return mayDeleteRecords(ctx, csv.Namespace, sa) }).WithContext(ctx).
				WithTimeout(time.Minute).Should(BeFalse())
		})...)
	}
})

// olmClusterRBAC lists ClusterRoles/Bindings carrying OLM's owner labels for the CSV; those already
// being deleted only when includeDeleting (cleanup may keep them, deleted but effective, until done).
func olmClusterRBAC(ctx context.Context, csv *operatorsv1alpha1.ClusterServiceVersion, includeDeleting bool) ([]string, error) {
	sel := client.MatchingLabels{olm.LabelOwner: csv.Name, olm.LabelOwnerNamespace: csv.Namespace, olm.LabelOwnerKind: "ClusterServiceVersion"}
	roles := &rbacv1.ClusterRoleList{}
	if err := k8s.List(ctx, roles, sel); err != nil {
		return nil, err
	}
	bindings := &rbacv1.ClusterRoleBindingList{}
	if err := k8s.List(ctx, bindings, sel); err != nil {
		return nil, err
	}
	var out []string
	for _, r := range roles.Items {
		if includeDeleting || r.DeletionTimestamp == nil {
			out = append(out, "ClusterRole/"+r.Name)
		}
	}
	for _, b := range bindings.Items {
		if includeDeleting || b.DeletionTimestamp == nil {
			out = append(out, "ClusterRoleBinding/"+b.Name)
		}
	}
	return out, nil
}

func mayDeleteRecords(ctx context.Context, ns, sa string) (bool, error) {
	return allowed(ctx, ns, sa, authorizationv1.ResourceAttributes{Namespace: widget.DefaultRecordsNamespace, Verb: "delete", Resource: "configmaps"})
}

func mayCreateSecretsCluster(ctx context.Context, ns, sa string) (bool, error) {
	return allowed(ctx, ns, sa, authorizationv1.ResourceAttributes{Verb: "create", Resource: "secrets", Namespace: "kube-system"})
}

// allowed asks the API server whether the ServiceAccount may do what attrs say (SubjectAccessReview).
func allowed(ctx context.Context, ns, sa string, attrs authorizationv1.ResourceAttributes) (bool, error) {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: serviceaccount.MakeUsername(ns, sa), Groups: serviceaccount.MakeGroupNames(ns), ResourceAttributes: &attrs}}
	if err := k8s.Create(ctx, sar); err != nil {
		return false, err
	}
	return sar.Status.Allowed, nil
}
