package cvo

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/cleanup-e2e/cleanup-e2e/framework/clusteroperator"
	"github.com/cleanup-e2e/cleanup-e2e/framework/components/payloadapplier"
	"github.com/cleanup-e2e/cleanup-e2e/framework/deleteannotation"
	"github.com/cleanup-e2e/cleanup-e2e/framework/hold"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/applier"
	pt "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

// The applier as shipped (config/payload-applier): a Deployment running as its ServiceAccount (so its
// RBAC is the one under test), reading the payload from a ConfigMap every second and persisting delete
// progress in its state ConfigMap. Each spec installs its own copy (own namespace, ClusterOperator and
// cluster RBAC names), so they run in parallel.
var _ = Describe("The payload applier Deployment", Label("cvo", "delete-annotation", "deployment"), func() {
	It("removes an object when its payload ConfigMap moves to a release marking it, and its ClusterOperator converges", func(ctx context.Context) {
		e := deleteannotation.NewEnv(ctx, clusterUnderTest(), "deploy", applier.Options{})
		ns := e.ID
		old, keep := appConfigMap(ns, "old"), appConfigMap(ns, "keep")
		v1 := appPayload(ns, "1.0.0").
			File("0000_10_app_01_old.yaml", old).
			File("0000_20_app_00_cluster-operator.yaml", pt.ClusterOperator(ns, "operator", "1.0.0"))
		pa := installApplier(ctx, e, v1)
		e.ExpectClusterOperator(ctx, clusteroperator.HaveOperandVersion("operator", "1.0.0"),
			clusteroperator.HaveCondition("Available", "True", payload.ReasonAsExpected),
			clusteroperator.HaveCondition("Upgradeable", "True", payload.ReasonAsExpected),
			clusteroperator.HaveRelatedObject("", "configmaps", e.Namespace, e.ClusterOperator+applier.StateConfigMapSuffix),
			clusteroperator.HaveRelatedObject("", "configmaps", ns, "old"))
		e.ExpectPresent(ctx, old, keep)

		By("publishing 1.1.0, which marks the old ConfigMap")
		v2 := v1.Clone().Version("1.1.0").
			File("0000_10_app_01_old.yaml", pt.Delete(appConfigMap(ns, "old"))).
			File("0000_20_app_00_cluster-operator.yaml", pt.ClusterOperator(ns, "operator", "1.1.0"))
		setPayload(ctx, e, pa, v2)
		e.ExpectClusterOperator(ctx, clusteroperator.HaveOperandVersion("operator", "1.1.0"),
			clusteroperator.HaveCondition("Upgradeable", "True", payload.ReasonAsExpected),
			clusteroperator.HaveCondition("Progressing", "False", payload.ReasonAsExpected),
			clusteroperator.HaveCondition("Degraded", "False", payload.ReasonAsExpected),
			Not(clusteroperator.HaveRelatedObject("", "configmaps", ns, "old")))
		e.ExpectGone(ctx, old)
		e.ExpectPresent(ctx, keep)
		Expect(deleteRecord(ctx, e, pa, old).Verified).NotTo(BeNil(), "the state ConfigMap records the verified delete")
	})

	It("keeps delete progress across a restart in the middle of an update, which its own pending delete does not refuse", Label("restart"), func(ctx context.Context) {
		e := deleteannotation.NewEnv(ctx, clusterUnderTest(), "restart", applier.Options{})
		ns := e.ID
		held := func() obj { return appConfigMap(ns, "held") }
		v1 := appPayload(ns, "1.0.0").File("0000_10_app_01_held.yaml", pt.WithFinalizers(held(), hold.Finalizer))
		pa := installApplier(ctx, e, v1)
		e.ExpectClusterOperator(ctx, clusteroperator.HaveOperandVersion("operator", "1.0.0"))

		By("publishing 1.1.0, which marks the held ConfigMap and then fails on an invalid annotation: the update is under way")
		v2 := v1.Clone().Version("1.1.0").File("0000_10_app_01_held.yaml", pt.Delete(held()))
		setPayload(ctx, e, pa, v2.Clone().File("0000_10_app_03_invalid.yaml", pt.DeleteValue(appConfigMap(ns, "invalid"), "yes")))
		pending := payload.UpgradeableMessage([]string{deleteannotation.ResourceOf(held()).String()})
		e.ExpectClusterOperator(ctx, clusteroperator.HaveOperandVersion("operator", "1.0.0"),
			clusteroperator.HaveCondition("Degraded", "True", applier.ReasonInvalidDeleteAnnotation),
			clusteroperator.HaveCondition("Upgradeable", "False", payload.ReasonResourceDeletionInProgress),
			clusteroperator.HaveConditionMessage("Upgradeable", pending))
		requested := deleteRecord(ctx, e, pa, held()).Requested
		Expect(requested).NotTo(BeNil())

		By("restarting the applier: scaled to 0, then back to 1")
		Expect(pa.Scale(ctx, 0)).To(Succeed())
		Expect(pa.Scale(ctx, 1)).To(Succeed())

		By("the new process completes 1.1.0, fixed, with the delete it requested before still pending: a minor update is not refused by its own deletes")
		setPayload(ctx, e, pa, v2.Clone().File("0000_10_app_03_after-restart.yaml", appConfigMap(ns, "after-restart")))
		e.ExpectClusterOperator(ctx, clusteroperator.HaveOperandVersion("operator", "1.1.0"),
			clusteroperator.HaveCondition("Degraded", "False", payload.ReasonAsExpected),
			clusteroperator.HaveCondition("Upgradeable", "False", payload.ReasonResourceDeletionInProgress),
			clusteroperator.HaveConditionMessage("Upgradeable", pending))
		e.ExpectPresent(ctx, appConfigMap(ns, "after-restart"))
		Expect(deleteRecord(ctx, e, pa, held()).Requested).To(HaveValue(BeTemporally("==", *requested)), "requested once, not again after the restart")

		By("releasing the finalizer: the restarted applier verifies the delete")
		Expect(hold.Release(ctx, k8s, held())).To(Succeed())
		e.ExpectClusterOperator(ctx, clusteroperator.HaveCondition("Upgradeable", "True", payload.ReasonAsExpected))
		e.ExpectGone(ctx, held())
		Expect(deleteRecord(ctx, e, pa, held()).Verified).NotTo(BeNil())
	})
})

func appConfigMap(ns, name string) obj { return pt.ConfigMap(ns, name, map[string]string{"k": "v"}) }

// appPayload is a namespace and a ConfigMap every release keeps.
func appPayload(ns, version string) *pt.Builder {
	return pt.New(version).File("0000_10_app_00_namespace.yaml", pt.Namespace(ns)).
		File("0000_10_app_02_keep.yaml", appConfigMap(ns, "keep"))
}

// installApplier installs config/payload-applier into the env's namespace, passing every second and
// reporting to the env's ClusterOperator, with b as its payload. When the spec ends it is stopped
// before the payload objects are deleted.
func installApplier(ctx context.Context, e *deleteannotation.Env, b *pt.Builder) *payloadapplier.Installed {
	GinkgoHelper()
	e.TrackPayload(b)
	e.ReportClusterOperators(ctx, b)
	files, err := b.Files()
	Expect(err).NotTo(HaveOccurred())
	pa, err := payloadapplier.Install(ctx, payloadapplier.InstallInput{
		Client: k8s, Namespace: e.Namespace, Payload: files, Timeout: e.Timeout,
		Args: []string{"--interval=1s", "--cluster-operator=" + e.ClusterOperator, "--cluster-operator-timeout=1m"},
	})
	if pa != nil {
		e.Defer(func(ctx context.Context) {
			_ = pa.Scale(ctx, 0)
			_ = pa.Uninstall(ctx)
		})
	}
	Expect(err).NotTo(HaveOccurred())
	return pa
}

// setPayload replaces the payload ConfigMap's content with b (reporting its ClusterOperators first).
func setPayload(ctx context.Context, e *deleteannotation.Env, pa *payloadapplier.Installed, b *pt.Builder) {
	GinkgoHelper()
	e.TrackPayload(b)
	e.ReportClusterOperators(ctx, b)
	files, err := b.Files()
	Expect(err).NotTo(HaveOccurred())
	Expect(pa.SetPayload(ctx, files)).To(Succeed())
}

// deleteRecord reads the Deployment's persisted delete progress for obj.
func deleteRecord(ctx context.Context, e *deleteannotation.Env, pa *payloadapplier.Installed, o obj) applier.DeleteRecord {
	GinkgoHelper()
	d, found := findDeleteRecord(ctx, e, pa, o)
	if !found {
		Fail("no delete record for " + deleteannotation.ResourceOf(o).String() + " in the applier's state")
	}
	return d
}

// findDeleteRecord reads the Deployment's persisted delete progress for obj, if it has any.
func findDeleteRecord(ctx context.Context, e *deleteannotation.Env, pa *payloadapplier.Installed, o obj) (applier.DeleteRecord, bool) {
	GinkgoHelper()
	state, err := pa.State(ctx, e.ClusterOperator)
	Expect(err).NotTo(HaveOccurred())
	key := deleteannotation.ResourceOf(o).Key()
	for _, d := range state.Deletes {
		if d.Resource.Key() == key {
			return d, true
		}
	}
	return applier.DeleteRecord{}, false
}
