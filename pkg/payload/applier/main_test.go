package applier_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	payloadapplier "github.com/cleanup-e2e/cleanup-e2e/config/payload-applier"
	"github.com/cleanup-e2e/cleanup-e2e/framework/clusteroperator"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/applier"
	pt "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

var _ = Describe("Main", func() {
	var (
		ctx           context.Context
		sysNS, appNS  string
		coName        string
		getenv        func(string) string
		payloadConfig func(b *pt.Builder) *corev1.ConfigMap
	)
	BeforeEach(func() {
		ctx = context.Background()
		sysNS, appNS, coName = unique("applier"), unique("app"), unique("payload-applier")
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sysNS}})).To(Succeed())
		getenv = func(k string) string {
			if k == "POD_NAMESPACE" {
				return sysNS
			}
			return ""
		}
		payloadConfig = func(b *pt.Builder) *corev1.ConfigMap {
			files, err := b.Files()
			Expect(err).NotTo(HaveOccurred())
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: sysNS, Name: "payload"}, Data: map[string]string{}}
			for k, v := range files {
				cm.Data[k] = string(v)
			}
			return cm
		}
	})

	It("runs one pass from a directory and accepts the local runtime's flags", func() {
		dir := pt.New("1.0.0").
			File("0000_05_app_00_ns.yaml", pt.Namespace(appNS)).
			File("0000_10_app_00_cm.yaml", pt.ConfigMap(appNS, "from-dir", nil)).
			MustWrite(GinkgoT().TempDir())
		err := applier.Main(ctx, cfg, []string{"--payload", dir, "--mode", "install", "--cluster-operator", coName,
			"--metrics-bind-address=0", "--health-probe-bind-address=0"}, getenv)
		Expect(err).NotTo(HaveOccurred())
		Expect(getObj(ctx, "v1", "ConfigMap", appNS, "from-dir")).Error().NotTo(HaveOccurred())
		Expect(getCO(ctx, coName)()).To(clusteroperator.HaveOperandVersion("operator", "1.0.0"))
		var state corev1.ConfigMap
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: sysNS, Name: coName + "-state"}, &state)).To(Succeed())
	})

	It("loops over a ConfigMap payload: install, then reconcile, then update when it changes", func() {
		v1 := pt.New("1.0.0").
			File("0000_05_app_00_ns.yaml", pt.Namespace(appNS)).
			File("0000_10_app_00_cm.yaml", pt.ConfigMap(appNS, "old", nil))
		Expect(k8s.Create(ctx, payloadConfig(v1))).To(Succeed())
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			done <- applier.Main(runCtx, cfg, []string{"--payload-configmap=payload", "--mode=install", "--interval=200ms",
				"--cluster-operator=" + coName}, getenv)
		}()
		DeferCleanup(func() { cancel(); Eventually(done).Should(Receive(BeNil())) })

		Eventually(getCO(ctx, coName)).Should(clusteroperator.HaveOperandVersion("operator", "1.0.0"))
		Expect(getObj(ctx, "v1", "ConfigMap", appNS, "old")).Error().NotTo(HaveOccurred())

		v2 := v1.Clone().Version("1.1.0").File("0000_10_app_00_cm.yaml", pt.Delete(pt.ConfigMap(appNS, "old", nil)))
		Expect(k8s.Update(ctx, payloadConfig(v2))).To(Succeed())
		Eventually(func() bool {
			_, err := getObj(ctx, "v1", "ConfigMap", appNS, "old")
			return apierrors.IsNotFound(err)
		}).Should(BeTrue())
		Eventually(getCO(ctx, coName)).Should(And(
			clusteroperator.HaveOperandVersion("operator", "1.1.0"),
			clusteroperator.HaveCondition("Upgradeable", "True", payload.ReasonAsExpected)))
	})

	// As the CVO's sync worker: new work cancels the sync in flight. Here the 1.0.0 reconcile passes wait
	// on a ClusterOperator that already reports 1.1.0 (its operator went first), for up to the 5 min
	// --cluster-operator-timeout; the 1.1.0 payload must not wait for that.
	It("starts a newer payload at once instead of finishing a pass that waits on a ClusterOperator", func() {
		op := unique("op")
		v1 := pt.New("1.0.0").
			File("0000_05_app_00_ns.yaml", pt.Namespace(appNS)).
			File("0000_20_app_00_cluster-operator.yaml", pt.ClusterOperator(op, "operator", "1.0.0"))
		Expect(k8s.Create(ctx, payloadConfig(v1))).To(Succeed())
		Expect(clusteroperator.Report(ctx, k8s, pt.ClusterOperator(op, "operator", "1.0.0"))).To(Succeed())
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			done <- applier.Main(runCtx, cfg, []string{"--payload-configmap=payload", "--mode=install", "--interval=200ms",
				"--cluster-operator=" + coName, "--cluster-operator-timeout=5m"}, getenv)
		}()
		DeferCleanup(func() { cancel(); Eventually(done).Should(Receive(BeNil())) })
		Eventually(getCO(ctx, coName)).Should(clusteroperator.HaveOperandVersion("operator", "1.0.0"))

		By("the component's operator reports 1.1.0 first: 1.0.0's reconcile passes now wait on it")
		Expect(clusteroperator.Report(ctx, k8s, pt.ClusterOperator(op, "operator", "1.1.0"))).To(Succeed())
		Eventually(getCO(ctx, coName)).Should(And(
			clusteroperator.HaveCondition("Progressing", "True", applier.ReasonWaitingOnClusterOperators),
			clusteroperator.HaveConditionMessage("Progressing", ContainSubstring("waiting on "+op))))

		By("publishing 1.1.0: applied long before the 5 min wait would end")
		v2 := v1.Clone().Version("1.1.0").File("0000_20_app_00_cluster-operator.yaml", pt.ClusterOperator(op, "operator", "1.1.0"))
		Expect(k8s.Update(ctx, payloadConfig(v2))).To(Succeed())
		Eventually(getCO(ctx, coName)).WithTimeout(time.Minute).Should(And(
			clusteroperator.HaveOperandVersion("operator", "1.1.0"),
			clusteroperator.HaveCondition("Progressing", "False", payload.ReasonAsExpected),
			clusteroperator.HaveCondition("Degraded", "False", payload.ReasonAsExpected)))
	})

	// As the CVO after a restart on a completed payload (it reconciles): an update's deletes are for a
	// new payload, so a restart alone deletes nothing, and the next update does.
	It("reconciles after a restart on the payload it applied completely, and deletes at the next update", func() {
		marked := func(version string) string {
			return pt.New(version).
				File("0000_05_app_00_ns.yaml", pt.Namespace(appNS)).
				File("0000_10_app_00_cm.yaml", pt.Delete(pt.ConfigMap(appNS, "back", nil))).
				MustWrite(GinkgoT().TempDir())
		}
		run := func(dir string) {
			GinkgoHelper()
			Expect(applier.Main(ctx, cfg, []string{"--payload", dir, "--cluster-operator", coName}, getenv)).To(Succeed())
		}
		v1 := marked("1.0.0")
		Expect(applier.Main(ctx, cfg, []string{"--payload", v1, "--mode", "install", "--cluster-operator", coName}, getenv)).To(Succeed())
		Expect(k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "back"}})).To(Succeed())

		By("a restart on 1.0.0 (--mode update, the default) reconciles: the object stays")
		run(v1)
		Expect(getObj(ctx, "v1", "ConfigMap", appNS, "back")).Error().NotTo(HaveOccurred())

		By("the update to 1.1.0 deletes it")
		run(marked("1.1.0"))
		_, err := getObj(ctx, "v1", "ConfigMap", appNS, "back")
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "configmap %s/back after the update: %v", appNS, err)
	})

	It("rejects bad flags", func() {
		for _, args := range [][]string{
			{"--mode=install"},
			{"--payload=/x", "--payload-configmap=y"},
			{"--payload=/x", "--mode=upgrade"},
			{"--payload=/x", "extra"},
		} {
			Expect(applier.Main(ctx, cfg, args, getenv)).NotTo(Succeed(), "%v", args)
		}
		Expect(applier.Main(ctx, cfg, []string{"--payload-configmap=y"}, func(string) string { return "" })).
			To(MatchError(ContainSubstring("POD_NAMESPACE")))
	})

	It("ships deployable manifests", func() {
		objs, err := payloadapplier.Objects()
		Expect(err).NotTo(HaveOccurred())
		var kinds []string
		for _, o := range objs {
			kinds = append(kinds, o.GetKind())
			Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("test"), client.ForceOwnership)).
				To(Succeed(), "%s %s", o.GetKind(), o.GetName())
		}
		Expect(kinds).To(ConsistOf("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment"))
	})
})
