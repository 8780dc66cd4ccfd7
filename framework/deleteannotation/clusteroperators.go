package deleteannotation

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/cleanup-e2e/cleanup-e2e/framework/clusteroperator"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

// ReportClusterOperators stands in for the operators of the payload's ClusterOperators (those not
// marked for deletion): each is created if missing and made to report the versions its manifest
// expects, Available and not Degraded, so the applier's wait for them ends at once.
func (e *Env) ReportClusterOperators(ctx context.Context, b *payloadtest.Builder) {
	GinkgoHelper()
	for _, m := range e.Load(b).Manifests {
		if m.IsClusterOperator() && !marked(m) {
			Expect(clusteroperator.Report(ctx, e.Cluster.Client, m.Obj)).To(Succeed(), "report versions of cluster operator %s", m.Obj.GetName())
		}
	}
}
