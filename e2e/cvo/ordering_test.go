package cvo

import (
	"context"
	"slices"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/clusteroperator"
	"github.com/cleanup-e2e/cleanup-e2e/framework/deleteannotation"
	"github.com/cleanup-e2e/cleanup-e2e/framework/hold"
	"github.com/cleanup-e2e/cleanup-e2e/framework/matchers"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/applier"
	pt "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

// "The existing CVO ordering scheme ... will also be used for object removal", and Option 1 never
// waits: run level 10 holds a delete that cannot finish, yet levels 20 and 30 are deleted (in order,
// serially within a component) and level 40 applied in the same pass.
var _ = Describe("Deletions across run levels", Label("cvo", "delete-annotation", "ordering"), func() {
	It("happen in run-level order, and a pending delete does not hold a later run level back", func(ctx context.Context) {
		e := deleteannotation.NewEnv(ctx, clusterUnderTest(), "order", applier.Options{})
		ns := e.ID
		cm := func(name string) obj { return pt.ConfigMap(ns, name, map[string]string{"k": "v"}) }
		files := []struct{ file, name string }{
			{"0000_10_a_00_held.yaml", "held"}, {"0000_20_b_00_first.yaml", "b0"},
			{"0000_20_b_01_second.yaml", "b1"}, {"0000_30_c_00_last.yaml", "c"},
		}
		v1 := pt.New("1.0.0").File("0000_05_app_00_namespace.yaml", pt.Namespace(ns))
		v2 := pt.New("1.1.0").File("0000_05_app_00_namespace.yaml", pt.Namespace(ns)).
			File("0000_40_d_00_added.yaml", cm("added"))
		var order []string
		for i, f := range files {
			o := cm(f.name)
			if i == 0 {
				o = pt.WithFinalizers(o, hold.Finalizer)
			}
			v1.File(f.file, o)
			v2.File(f.file, pt.Delete(cm(f.name)))
			order = append(order, payload.MsgDeleteRequested(deleteannotation.ResourceOf(o)))
		}
		e.MustRun(ctx, v1, applier.ModeInstall)
		deleted := watchDeletions(ctx, ns)

		By("updating: every delete is requested in one pass, in run-level order")
		res := e.MustRun(ctx, v2, applier.ModeUpdate)
		Expect(res.Texts()).To(ContainElements(order))
		Expect(slices.IsSorted(indexes(res.Texts(), order))).To(BeTrue(), "requests in file order: %v", res.Texts())
		Expect(res.Task("0000_40_d_00_added.yaml").Outcome).To(Equal(applier.OutcomeApplied))
		Eventually(deleted).WithContext(ctx).WithTimeout(e.Timeout).Should(Equal([]string{"held", "b0", "b1", "c"}),
			"the API server saw the deletions in run-level order")
		held := e.ExpectPresent(ctx, cm("held"))[0]
		Expect(held).To(matchers.BeBeingDeleted())
		e.ExpectGone(ctx, cm("b0"), cm("b1"), cm("c"))

		By("only the held object keeps Upgradeable=False")
		res = e.MustRun(ctx, v2, applier.ModeReconcile)
		heldName := deleteannotation.ResourceOf(cm("held")).String()
		Expect(res.DeletesInProgress).To(ConsistOf(heldName))
		e.ExpectClusterOperator(ctx, clusteroperator.HaveConditionMessage("Upgradeable", payload.UpgradeableMessage([]string{heldName})))

		By("releasing it")
		Expect(hold.Release(ctx, k8s, held)).To(Succeed())
		e.RunUntil(ctx, v2, applier.ModeReconcile, HaveField("Upgradeable", BeTrue()))
		e.ExpectGone(ctx, cm("held"))
	})
})

// indexes returns the position of each wanted text in texts.
func indexes(texts, wanted []string) []int {
	out := make([]int, 0, len(wanted))
	for _, w := range wanted {
		out = append(out, slices.Index(texts, w))
	}
	return out
}

// watchDeletions watches the namespace's ConfigMaps until the spec ends and returns a getter of the
// names in the order the API server marked them deleted (deletionTimestamp set, or removed).
func watchDeletions(ctx context.Context, ns string) func() []string {
	GinkgoHelper()
	wc, err := client.NewWithWatch(clusterUnderTest().Provider.RESTConfig(), client.Options{Scheme: k8s.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(w.Stop)
	var mu sync.Mutex
	var names []string
	go func() {
		defer GinkgoRecover()
		for ev := range w.ResultChan() {
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok || !(ev.Type == watch.Deleted || cm.DeletionTimestamp != nil) {
				continue
			}
			mu.Lock()
			if !slices.Contains(names, cm.Name) {
				names = append(names, cm.Name)
			}
			mu.Unlock()
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(names)
	}
}
