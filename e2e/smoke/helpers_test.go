package smoke

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/envtest"
)

func randSuffix() string { return utilrand.String(5) }

func objMeta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

// runningIn lists the operators the local runtime runs in namespace ns.
func runningIn(ns string) []types.NamespacedName {
	p, ok := provider.(*envtest.Provider)
	if !ok {
		return nil
	}
	var out []types.NamespacedName
	for _, k := range p.Runtime().Running() {
		if k.Namespace == ns {
			out = append(out, k)
		}
	}
	return out
}
