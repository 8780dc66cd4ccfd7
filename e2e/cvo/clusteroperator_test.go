package cvo

import (
	"context"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/cleanup-e2e/cleanup-e2e/framework/clusteroperator"
	"github.com/cleanup-e2e/cleanup-e2e/framework/deleteannotation"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/applier"
	pt "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

// Issue 13 item 3, as the CVO's checkOperatorHealth: an install does not wait for a ClusterOperator's
// versions; an update fails at once on Available=False and, after the degraded grace (shortened
// here), on Degraded=True; it proceeds once the operator is Available, not Degraded, at the versions.
var _ = Describe("A payload ClusterOperator", Label("cvo", "clusteroperator"), func() {
	It("is waited on like the CVO does: conditions first, versions only outside an install", func(ctx context.Context) {
		const grace = 3 * time.Second
		e := deleteannotation.NewEnv(ctx, clusterUnderTest(), "co", applier.Options{ClusterOperatorDegradedGrace: grace})
		e.SpecReportsClusterOperators = true
		ns, op := e.ID, e.ID+"-operand"
		const coFile, laterFile = "0000_20_app_00_cluster-operator.yaml", "0000_30_app_00_later.yaml"
		release := func(version string) *pt.Builder {
			return appPayload(ns, version).
				File(coFile, pt.ClusterOperator(op, "operator", version)).
				File(laterFile, appConfigMap(ns, "later-"+version))
		}
		report := func(version string, conditions ...interface{}) {
			GinkgoHelper()
			Expect(clusteroperator.SetStatus(ctx, k8s, op, clusteroperator.OperandVersions("operator", version), conditions...)).To(Succeed())
		}
		available := clusteroperator.Condition("Available", "True", "AsExpected", "")
		notDegraded := clusteroperator.Condition("Degraded", "False", "AsExpected", "")

		By("install: the operator is Available at an older version, which does not hold the install")
		report("0.9.0", available, notDegraded)
		e.MustRun(ctx, release("1.0.0"), applier.ModeInstall)
		e.ExpectPresent(ctx, appConfigMap(ns, "later-1.0.0"))

		By("update: Available=False fails the task at once and skips the later run level")
		report("1.1.0", clusteroperator.Condition("Available", "False", "Outage", "the operand is down"), notDegraded)
		start := time.Now()
		res := e.Run(ctx, release("1.1.0"), applier.ModeUpdate)
		Expect(time.Since(start)).To(BeNumerically("<", e.Applier.Options().ClusterOperatorTimeout))
		var na *applier.ClusterOperatorNotAvailableError
		Expect(errors.As(res.Task(coFile).Err, &na)).To(BeTrue(), "%v", res.Err)
		Expect(res.Task(laterFile).Outcome).To(Equal(applier.OutcomeSkipped))
		e.ExpectClusterOperator(ctx, clusteroperator.HaveCondition("Degraded", "True", applier.ReasonClusterOperatorNotAvailable),
			clusteroperator.HaveOperandVersion("operator", "1.0.0"))

		By("update: Available but Degraded=True is waited on for the grace, then fails")
		report("1.1.0", available, clusteroperator.Condition("Degraded", "True", "Broken", "a replica crash-loops"))
		res = e.Run(ctx, release("1.1.0"), applier.ModeUpdate)
		var dg *applier.ClusterOperatorDegradedError
		Expect(errors.As(res.Task(coFile).Err, &dg)).To(BeTrue(), "%v", res.Err)
		Expect(res.Task(coFile).Err).To(MatchError(ContainSubstring("for longer than " + grace.String())))
		e.ExpectClusterOperator(ctx, clusteroperator.HaveCondition("Degraded", "True", applier.ReasonClusterOperatorDegraded))

		By("update: Available, not Degraded, at the version: the update completes")
		report("1.1.0", available, notDegraded)
		e.MustRun(ctx, release("1.1.0"), applier.ModeUpdate)
		e.ExpectPresent(ctx, appConfigMap(ns, "later-1.1.0"))
		e.ExpectClusterOperator(ctx, clusteroperator.HaveCondition("Degraded", "False", "AsExpected"),
			clusteroperator.HaveOperandVersion("operator", "1.1.0"))
	})
})
