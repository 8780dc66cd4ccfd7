package smoke

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
)

var _ = Describe("A CSV installed directly through OLM", Label("smoke"), func() {
	It("succeeds with its operator running under its own ServiceAccount, and uninstalls cleanly", onRuntimeProcess(func(ctx context.Context) {
		ns := "smoke-" + randSuffix()
		DeferCleanup(func(ctx context.Context) {
			_ = k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: objMeta(ns)})
		})

		By("installing the CSV in OwnNamespace mode")
		csv, err := olm.InstallCSV(ctx, olm.InstallCSVInput{Client: k8s, CSV: smokeCSV(), Namespace: ns,
			InstallMode: olm.OwnNamespace, Timeout: 2 * time.Minute})
		Expect(err).NotTo(HaveOccurred())
		Expect(csv.Status.Phase).To(Equal(operatorsv1alpha1.CSVPhaseSucceeded))

		By("seeing the operator run with the namespaces OLM gave it and nothing more")
		hb := &corev1.ConfigMap{}
		Eventually(func() error {
			return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "smoke-heartbeat"}, hb)
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(hb.Data).To(HaveKeyWithValue("targets", ns))
		Expect(hb.Data["outside-write"]).To(ContainSubstring("forbidden"), "the operator must not write outside its namespace")

		owned := ownedRBAC(ctx, csv)
		Expect(owned).To(ContainElements(
			HavePrefix("Role/"), HavePrefix("RoleBinding/"), HavePrefix("ClusterRole/"), HavePrefix("ClusterRoleBinding/")))

		By("deleting the CSV")
		Expect(k8s.Delete(ctx, csv)).To(Succeed())
		Expect(olm.WaitForCSVGone(ctx, k8s, client.ObjectKeyFromObject(csv), time.Minute)).To(Succeed())

		By("seeing the Deployment and the RBAC garbage-collected and the operator stopped")
		Eventually(func() bool {
			err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "smoke-operator"}, &appsv1.Deployment{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(time.Minute).Should(BeTrue(), "deployment smoke-operator should be garbage-collected")
		Eventually(func() []string { return ownedRBAC(ctx, csv) }).WithContext(ctx).WithTimeout(time.Minute).Should(BeEmpty())
		Eventually(func() []types.NamespacedName { return runningIn(ns) }).WithTimeout(30 * time.Second).Should(BeEmpty())
	})...)
})

// ownedRBAC lists the RBAC objects labelled as owned by the CSV, as "Kind/name".
func ownedRBAC(ctx context.Context, csv *operatorsv1alpha1.ClusterServiceVersion) []string {
	sel := client.MatchingLabels{olm.LabelOwner: csv.Name, olm.LabelOwnerNamespace: csv.Namespace}
	var out []string
	roles := &rbacv1.RoleList{}
	Expect(k8s.List(ctx, roles, sel, client.InNamespace(csv.Namespace))).To(Succeed())
	for _, r := range roles.Items {
		out = append(out, "Role/"+r.Name)
	}
	rbs := &rbacv1.RoleBindingList{}
	Expect(k8s.List(ctx, rbs, sel, client.InNamespace(csv.Namespace))).To(Succeed())
	for _, r := range rbs.Items {
		out = append(out, "RoleBinding/"+r.Name)
	}
	crs := &rbacv1.ClusterRoleList{}
	Expect(k8s.List(ctx, crs, sel)).To(Succeed())
	for _, r := range crs.Items {
		out = append(out, "ClusterRole/"+r.Name)
	}
	crbs := &rbacv1.ClusterRoleBindingList{}
	Expect(k8s.List(ctx, crbs, sel)).To(Succeed())
	for _, r := range crbs.Items {
		out = append(out, "ClusterRoleBinding/"+r.Name)
	}
	return out
}
