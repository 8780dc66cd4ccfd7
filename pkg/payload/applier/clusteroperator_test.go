package applier_test

import (
	"context"
	"errors"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/cleanup-e2e/cleanup-e2e/framework/clusteroperator"
	configv1 "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/api/configv1"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/applier"
	pt "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

// reportCO stands in for an operator: it sets the ClusterOperator's versions (name, version pairs)
// and conditions ("Type=Status").
func reportCO(ctx context.Context, name string, versions []string, conds ...string) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		co, err := getCO(ctx, name)()
		if err != nil {
			return err
		}
		co.Status.Versions = nil
		for i := 0; i+1 < len(versions); i += 2 {
			co.Status.Versions = append(co.Status.Versions, configv1.OperandVersion{Name: versions[i], Version: versions[i+1]})
		}
		co.Status.Conditions = nil
		for _, c := range conds {
			typ, status, _ := strings.Cut(c, "=")
			co.Status.Conditions = append(co.Status.Conditions, configv1.ClusterOperatorStatusCondition{
				Type: configv1.ClusterStatusConditionType(typ), Status: configv1.ConditionStatus(status),
				Reason: "Test", Message: "set by the spec", LastTransitionTime: metav1.Now()})
		}
		return k8s.Status().Update(ctx, co)
	})).To(Succeed())
}

// runAsync runs one pass in the background; its result arrives on the channel.
func runAsync(ctx context.Context, a *applier.Applier, b *pt.Builder, mode applier.Mode) chan applier.Result {
	done := make(chan applier.Result, 1)
	go func() {
		defer GinkgoRecover()
		done <- runPass(ctx, a, b, mode)
	}()
	return done
}

// Issue 13 item 3: payload ClusterOperators are waited on as the CVO's checkOperatorHealth judges them.
var _ = Describe("payload applier: ClusterOperator manifests", func() {
	var (
		ctx context.Context
		e   specEnv
		op  string
	)
	const coFile, afterFile = "0000_10_foo_01_clusteroperator.yaml", "0000_20_bar_00_cm.yaml"
	BeforeEach(func() {
		ctx = context.Background()
		e = newSpecEnv(ctx)
		op = unique("foo")
	})
	payloadAt := func(version string) *pt.Builder {
		return e.base.Clone().Version(version).
			File("0000_10_foo_00_cm.yaml", pt.ConfigMap(e.appNS, "foo-config", nil)).
			File(coFile, pt.ClusterOperator(op, "operator", version, "foo-image", "example/foo:"+version)).
			File(afterFile, pt.ConfigMap(e.appNS, "after-foo", map[string]string{"v": version}))
	}

	It("pre-creates them and, at install, waits until they are Available but not for their versions", func() {
		a := e.applier(applier.Options{})
		done := runAsync(ctx, a, payloadAt("1.0.0"), applier.ModeInstall)
		Eventually(getCO(ctx, op)).WithTimeout(time.Minute).Should(Not(BeNil()))
		Eventually(getCO(ctx, e.coName)).WithTimeout(time.Minute).Should(And(
			clusteroperator.HaveCondition("Progressing", "True", applier.ReasonWaitingOnClusterOperators),
			clusteroperator.HaveConditionMessage("Progressing", "Working towards 1.0.0: waiting on "+op)))
		live, err := getCO(ctx, op)()
		Expect(err).NotTo(HaveOccurred())
		Expect(live.Status.Versions).To(BeEmpty(), "pre-created without status")
		Expect(notFound(ctx, "v1", "ConfigMap", e.appNS, "after-foo")()).To(BeTrue(), "the next run level waits")
		Expect(done).NotTo(Receive())

		reportCO(ctx, op, []string{"operator", "0.9.0"}, "Available=True", "Degraded=False")
		var res applier.Result
		Eventually(done).WithTimeout(time.Minute).Should(Receive(&res))
		Expect(res.Err).NotTo(HaveOccurred())
		Expect(res.Task(coFile).Outcome).To(Equal(applier.OutcomeClusterOperatorReady))
		Expect(getObj(ctx, "v1", "ConfigMap", e.appNS, "after-foo")).Error().NotTo(HaveOccurred())
	})

	It("reports a degraded one at install without waiting on it", func() {
		a := e.applier(applier.Options{})
		Expect(k8s.Create(ctx, pt.ClusterOperator(op))).To(Succeed())
		reportCO(ctx, op, nil, "Available=True", "Degraded=True")
		res := runPass(ctx, a, payloadAt("1.0.0"), applier.ModeInstall)
		Expect(res.Err).NotTo(HaveOccurred())
		Expect(res.Warnings()).To(ConsistOf(ContainSubstring("Cluster operator " + op + " is degraded (Degraded=True Test: set by the spec)")))
	})

	It("in an update, waits for the versions, and fails at once on Available=False", func() {
		a := e.applier(applier.Options{})
		Expect(k8s.Create(ctx, pt.ClusterOperator(op))).To(Succeed())
		reportCO(ctx, op, []string{"operator", "1.0.0"}, "Available=True", "Degraded=False")
		Expect(runPass(ctx, a, payloadAt("1.0.0"), applier.ModeInstall).Err).NotTo(HaveOccurred())

		done := runAsync(ctx, a, payloadAt("1.1.0"), applier.ModeUpdate)
		Eventually(getCO(ctx, e.coName)).WithTimeout(time.Minute).Should(clusteroperator.HaveCondition("Progressing", "True", applier.ReasonWaitingOnClusterOperators))
		reportCO(ctx, op, []string{"operator", "1.1.0"}, "Available=True", "Degraded=False")
		Consistently(done).WithTimeout(time.Second).ShouldNot(Receive(), "foo-image is not at 1.1.0 yet")
		reportCO(ctx, op, []string{"operator", "1.1.0", "foo-image", "example/foo:1.1.0"}, "Available=True", "Degraded=False")
		var res applier.Result
		Eventually(done).WithTimeout(time.Minute).Should(Receive(&res))
		Expect(res.Err).NotTo(HaveOccurred())
		Expect(res.Texts()).To(ContainElement("Waiting on cluster operator " + op + ": updating versions: foo-image to example/foo:1.1.0, operator from 1.0.0 to 1.1.0."))

		reportCO(ctx, op, []string{"operator", "1.1.0"}, "Available=False", "Degraded=False")
		start := time.Now()
		res = runPass(ctx, a, payloadAt("1.2.0"), applier.ModeUpdate)
		Expect(time.Since(start)).To(BeNumerically("<", a.Options().ClusterOperatorTimeout), "failed without waiting for the timeout")
		t := res.Task(coFile)
		var na *applier.ClusterOperatorNotAvailableError
		Expect(errors.As(t.Err, &na)).To(BeTrue(), "%v", t.Err)
		Expect(t.Err).To(MatchError(ContainSubstring("cluster operator " + op + " is not available (Available=False Test: set by the spec)")))
		Expect(res.Task(afterFile).Outcome).To(Equal(applier.OutcomeSkipped))
		Expect(getCO(ctx, e.coName)()).To(clusteroperator.HaveCondition("Degraded", "True", applier.ReasonClusterOperatorNotAvailable))
	})

	It("in an update, waits on a degraded one for the grace, then fails", func() {
		a := e.applier(applier.Options{ClusterOperatorDegradedGrace: 2 * time.Second})
		Expect(k8s.Create(ctx, pt.ClusterOperator(op))).To(Succeed())
		reportCO(ctx, op, []string{"operator", "1.0.0", "foo-image", "example/foo:1.0.0"}, "Available=True", "Degraded=True")
		Expect(runPass(ctx, a, payloadAt("1.0.0"), applier.ModeInstall).Err).NotTo(HaveOccurred())

		res := runPass(ctx, a, payloadAt("1.0.0"), applier.ModeReconcile)
		t := res.Task(coFile)
		var dg *applier.ClusterOperatorDegradedError
		Expect(errors.As(t.Err, &dg)).To(BeTrue(), "%v", t.Err)
		Expect(t.Err).To(MatchError(ContainSubstring("cluster operator " + op + " is degraded (Degraded=True Test: set by the spec) for longer than 2s")))
		Expect(res.Texts()).To(ContainElement("Waiting on cluster operator " + op + ": degraded (Degraded=True Test: set by the spec), waiting up to 2s."))
		Expect(res.Task(afterFile).Outcome).To(Equal(applier.OutcomeSkipped))
		Expect(getCO(ctx, e.coName)()).To(clusteroperator.HaveCondition("Degraded", "True", applier.ReasonClusterOperatorDegraded))

		reportCO(ctx, op, []string{"operator", "1.0.0", "foo-image", "example/foo:1.0.0"}, "Available=True", "Degraded=False")
		Expect(runPass(ctx, a, payloadAt("1.0.0"), applier.ModeReconcile).Err).NotTo(HaveOccurred())
	})

	It("fails the task and its dependents when the operator does not report in time", func() {
		a := e.applier(applier.Options{ClusterOperatorTimeout: 2 * time.Second})
		slow := unique("slow")
		b := e.base.Clone().
			File("0000_10_slow_00_clusteroperator.yaml", pt.ClusterOperator(slow, "operator", "1.0.0")).
			File("0000_10_slow_01_cm.yaml", pt.ConfigMap(e.appNS, "slow-next", nil)).
			File("0000_10_other_00_cm.yaml", pt.ConfigMap(e.appNS, "other", nil)).
			File("0000_20_bar_00_cm.yaml", pt.ConfigMap(e.appNS, "after-slow", nil)).
			File("0000_20_bar_01_noversions.yaml", pt.ClusterOperator(unique("nov")))
		res := runPass(ctx, a, b, applier.ModeInstall)
		t := res.Task("0000_10_slow_00_clusteroperator.yaml")
		Expect(t.Outcome).To(Equal(applier.OutcomeFailed))
		var nr *applier.ClusterOperatorNotReadyError
		Expect(errors.As(t.Err, &nr)).To(BeTrue(), "%v", t.Err)
		Expect(t.Err.Error()).To(ContainSubstring("cluster operator " + slow + " has not become ready within 2s: not available yet (no Available condition)"))
		Expect(res.Task("0000_10_slow_01_cm.yaml").Outcome).To(Equal(applier.OutcomeSkipped))
		Expect(res.Task("0000_10_other_00_cm.yaml").Outcome).To(Equal(applier.OutcomeApplied))
		Expect(res.Task("0000_20_bar_00_cm.yaml").Outcome).To(Equal(applier.OutcomeSkipped))
		Expect(getCO(ctx, e.coName)()).To(And(
			clusteroperator.HaveCondition("Degraded", "True", applier.ReasonClusterOperatorNotReady),
			clusteroperator.HaveCondition("Available", "False", applier.ReasonInstalling)))

		// Without the slow operator, a ClusterOperator manifest declaring no versions is an error.
		b.Remove("0000_10_slow_00_clusteroperator.yaml")
		res = runPass(ctx, a, b, applier.ModeInstall)
		Expect(res.Task("0000_20_bar_01_noversions.yaml").Err).To(MatchError(ContainSubstring("does not declare expected versions")))
	})
})
