package specs

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/kubernetes"

	"github.com/cleanup-e2e/cleanup-e2e/framework/artifacts"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/podlogs"
)

// followOperator keeps what the operator writes from its install on, for the verdicts (what it said
// last about a CR it did not finalize) and the artifacts: on a cluster with nodes the uninstall deletes
// its pods and their logs with them, so their logs are followed into $ARTIFACTS/operator-logs/<install
// namespace>/; envtest's local runtime keeps them itself (cluster.WorkloadLogs). Once per Extension.
func (x *Extension) followOperator(ctx context.Context) {
	if x.operatorLog != nil {
		return
	}
	p := x.in.Environment().Provider
	if kept, ok := p.(cluster.WorkloadLogs); ok {
		x.operatorLog = func() (string, error) {
			var out []string
			for _, d := range x.csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
				log, err := kept.WorkloadLog(x.all[0], d.Name)
				if err != nil {
					return strings.Join(out, "\n"), fmt.Errorf("Deployment %s/%s: %w", x.all[0], d.Name, err)
				}
				out = append(out, log)
			}
			return strings.Join(out, "\n"), nil
		}
		return
	}
	cs, err := kubernetes.NewForConfig(p.RESTConfig())
	x.g.Expect(err).NotTo(HaveOccurred())
	dir, err := filepath.Abs(filepath.Join(artifacts.Dir(), "operator-logs", x.all[0]))
	x.g.Expect(err).NotTo(HaveOccurred())
	f, err := podlogs.Follow(context.WithoutCancel(ctx), cs, x.all[0], dir)
	x.g.Expect(err).NotTo(HaveOccurred())
	x.t.Cleanup(func(context.Context) { f.Stop() })
	x.t.Logf("following the logs of the operator's pods into %s", dir)
	x.operatorLog = func() (string, error) { return f.Text(intervals.Get(intervals.Request)), nil }
}
