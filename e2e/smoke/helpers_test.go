package smoke

import (
	"github.com/onsi/ginkgo/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/envtest"
)

func randSuffix() string { return utilrand.String(5) }

func objMeta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

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
