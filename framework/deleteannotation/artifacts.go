package deleteannotation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	"sigs.k8s.io/yaml"

	"github.com/cleanup-e2e/cleanup-e2e/framework/artifacts"
	"github.com/cleanup-e2e/cleanup-e2e/framework/clusteroperator"
)

// collectOnFailure dumps, for a failed spec, the namespaces involved (the applier's, the payloads'),
// the provider's logs, every pass's messages (payload-applier.txt) and the ClusterOperators of the
// applier and the payloads (clusteroperators.yaml).
func (e *Env) collectOnFailure(ctx context.Context) {
	if !CurrentSpecReport().Failed() {
		return
	}
	namespaces := append([]string{e.Namespace}, e.namespaces...)
	cos := []string{e.ClusterOperator}
	for _, o := range e.objects {
		switch {
		case o.GetKind() == "Namespace":
			namespaces = append(namespaces, o.GetName())
		case o.GetNamespace() != "":
			namespaces = append(namespaces, o.GetNamespace())
		case o.GetKind() == "ClusterOperator":
			cos = append(cos, o.GetName())
		}
	}
	slices.Sort(namespaces)
	dir, err := artifacts.Collect(ctx, artifacts.CollectInput{Client: e.Cluster.Client, Provider: e.Cluster.Provider,
		Namespaces: slices.Compact(namespaces), Spec: CurrentSpecReport().FullText()})
	if err != nil {
		GinkgoWriter.Printf("collecting artifacts: %v\n", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "payload-applier.txt"), []byte(e.passLog()), 0o644); err != nil {
		GinkgoWriter.Printf("writing the passes: %v\n", err)
	}
	var b strings.Builder
	for _, name := range cos {
		co, err := clusteroperator.Get(ctx, e.Cluster.Client, name)()
		if err != nil {
			fmt.Fprintf(&b, "# %s: %v\n", name, err)
			continue
		}
		co.SetManagedFields(nil)
		data, _ := yaml.Marshal(co.Object)
		b.WriteString("---\n")
		b.Write(data)
	}
	if err := os.WriteFile(filepath.Join(dir, "clusteroperators.yaml"), []byte(b.String()), 0o644); err != nil {
		GinkgoWriter.Printf("writing the cluster operators: %v\n", err)
	}
	GinkgoWriter.Printf("artifacts of this spec: %s\n", dir)
}

// passLog renders every pass: mode, version, outcome, then each task and message.
func (e *Env) passLog() string {
	var b strings.Builder
	for i, r := range e.Results {
		fmt.Fprintf(&b, "pass %d: mode=%s version=%s previous=%s completed=%v upgradeable=%v deletesInProgress=%v err=%v\n",
			i+1, r.Mode, r.Version, r.PreviousVersion, r.Completed, r.Upgradeable, r.DeletesInProgress, r.Err)
		for _, t := range r.Tasks {
			fmt.Fprintf(&b, "  task %s %s: %s", t.Ref(), t.Resource, t.Outcome)
			if t.Err != nil {
				fmt.Fprintf(&b, " (%v)", t.Err)
			}
			b.WriteString("\n")
		}
		for _, m := range r.Messages {
			fmt.Fprintf(&b, "  %s [%s]\n", m, m.Task)
		}
	}
	return b.String()
}
