package cvo

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/cleanup-e2e/cleanup-e2e/framework/clusteroperator"
	"github.com/cleanup-e2e/cleanup-e2e/framework/deleteannotation"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/applier"
	pt "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

// Any value but exactly "true" is an error for that manifest: neither applied nor deleted, retried on
// every pass; the rest of its component and every later run level wait, other components go on.
var _ = DescribeTable("An invalid delete annotation value", Label("cvo", "delete-annotation", "invalid-annotation"),
	func(ctx context.Context, value string) {
		e := deleteannotation.NewEnv(ctx, clusterUnderTest(), "invalid", applier.Options{})
		ns := e.ID
		cm := func(name, v string) obj { return pt.ConfigMap(ns, name, map[string]string{"v": v}) }
		const (
			existing = "0000_20_a_00_existing.yaml" // exists; its manifest gets the invalid value
			next     = "0000_20_a_01_next.yaml"     // same component, after it: skipped
			sibling  = "0000_20_b_00_sibling.yaml"  // another component, same run level: applied
			fresh    = "0000_20_c_00_fresh.yaml"    // never existed; its manifest gets the invalid value
			later    = "0000_30_d_00_later.yaml"    // later run level: skipped
		)
		v1 := pt.New("1.0.0").File("0000_10_app_00_namespace.yaml", pt.Namespace(ns)).
			File(existing, cm("existing", "1")).File(next, cm("next", "1")).
			File(sibling, cm("sibling", "1")).File(later, cm("later", "1"))
		e.MustRun(ctx, v1, applier.ModeInstall)

		v2 := v1.Clone().Version("1.1.0").
			File(existing, pt.DeleteValue(cm("existing", "2"), value)).File(next, cm("next", "2")).
			File(sibling, cm("sibling", "2")).File(fresh, pt.DeleteValue(cm("fresh", "2"), value)).
			File(later, cm("later", "2"))
		invalid := (&payload.InvalidDeleteAnnotationError{Value: value}).Error()
		for pass := 1; pass <= 2; pass++ {
			By(fmt.Sprintf("update pass %d: the invalid manifests fail (again), nothing else changes", pass))
			res := e.Run(ctx, v2, applier.ModeUpdate)
			Expect(res.Completed).To(BeFalse())
			Expect(applier.IsUpgradeBlocked(res.Err)).To(BeFalse())
			var perr *applier.PassError
			Expect(res.Err).To(BeAssignableToTypeOf(perr))
			for _, f := range []string{existing, fresh} {
				t := res.Task(f)
				Expect(t.Outcome).To(Equal(applier.OutcomeFailed), f)
				Expect(t.Err).To(MatchError(invalid), f)
			}
			Expect(res.Task(next)).To(HaveField("Outcome", applier.OutcomeSkipped))
			Expect(res.Task(next).Err).To(MatchError(ContainSubstring(existing + "[0] failed")))
			Expect(res.Task(later)).To(HaveField("Outcome", applier.OutcomeSkipped))
			Expect(res.Task(later).Err).To(MatchError(ContainSubstring("run level 20 did not complete")))
			Expect(res.Task(sibling)).To(HaveField("Outcome", applier.OutcomeApplied))
			Expect(res.Texts()).NotTo(ContainElement(ContainSubstring("Delete")))

			expectData(ctx, e, cm("existing", ""), "1") // neither deleted nor updated
			expectData(ctx, e, cm("next", ""), "1")
			expectData(ctx, e, cm("later", ""), "1")
			expectData(ctx, e, cm("sibling", ""), "2")
			e.ExpectGone(ctx, cm("fresh", "")) // never created
			e.ExpectClusterOperator(ctx,
				clusteroperator.HaveCondition("Degraded", "True", applier.ReasonMultipleErrors),
				clusteroperator.HaveConditionMessage("Degraded", And(
					ContainSubstring(existing+"[0]: "+invalid), ContainSubstring(fresh+"[0]: "+invalid))),
				clusteroperator.HaveCondition("Progressing", "True", applier.ReasonMultipleErrors),
				clusteroperator.HaveOperandVersion("operator", "1.0.0"),
				clusteroperator.HaveCondition("Upgradeable", "True", payload.ReasonAsExpected))
		}
	},
	Entry(`"True"`, "True"),
	Entry(`"yes"`, "yes"),
	Entry(`"" (empty)`, ""),
	Entry(`"false"`, "false"),
)

// expectData checks a ConfigMap's data["v"].
func expectData(ctx context.Context, e *deleteannotation.Env, cm obj, v string) {
	GinkgoHelper()
	live := e.ExpectPresent(ctx, cm)[0]
	Expect(live.Object["data"]).To(HaveKeyWithValue("v", v), "configmap %s", cm.GetName())
}
