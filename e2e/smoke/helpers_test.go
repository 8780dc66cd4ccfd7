package smoke

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/envtest"
)

func randSuffix() string { return utilrand.String(5) }

func objMeta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

// onRuntimeProcess is body, Serial on envtest: the spec asks the local runtime (runningIn), which runs
// in Ginkgo process 1, where Ginkgo runs the Serial specs. On a cluster with nodes it needs neither
// process 1 nor what Serial also means there, the shared cluster alone (testenv's run lock): as Serial,
// the spec would wait minutes on kind for every other run's specs to end.
func onRuntimeProcess(body func(context.Context)) []any {
	if smokeInput.ProviderName() == "envtest" {
		return []any{ginkgo.Serial, body}
	}
	return []any{body}
}

// runningIn lists the operators the local runtime runs in namespace ns (none on a cluster with nodes).
func runningIn(ns string) []types.NamespacedName {
	p, ok := provider.(*envtest.Provider)
	if !ok {
		return nil
	}
	rt := p.Runtime()
	if rt == nil {
		ginkgo.Fail("this process connected to the envtest cluster of Ginkgo process 1, whose local runtime runs the " +
			"operators: a spec that asks the runtime must be Serial (Ginkgo runs those in process 1)")
	}
	var out []types.NamespacedName
	for _, k := range rt.Running() {
		if k.Namespace == ns {
			out = append(out, k)
		}
	}
	return out
}
