package operandcleanup

import (
	"context"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/cleanuppass"
)

// deleted runs deletePage on p, verified just now and for the whole page, and waits for its deletes.
func deleted(r *Reconciler, p *plan, ops []operand) *cleanuppass.PageDeletes {
	pd := r.deletePage(ctx, &verification{Every: time.Hour, Fresh: p, At: time.Now()}, ops)
	pd.Wait()
	return pd
}

var _ = Describe("delete safety", func() {
	var (
		r   *Reconciler
		ns  string
		gvk = schema.GroupVersionKind{Group: testGroup, Version: testVersion, Kind: "Widget"}
		p   *plan
	)
	BeforeEach(func() {
		r = &Reconciler{client: tenv.admin, live: tenv.admin, deleteSem: make(chan struct{}, 2), opts: Options{}.withDefaults()}
		ns = newNamespace("safety")
		p = &plan{targets: parseTargets(ns, ""), allowed: map[schema.GroupKind]bool{gvk.GroupKind(): true}}
	})

	It("treats an operand that vanished since it was listed as gone", func() {
		pd := deleted(r, p, []operand{{GVK: gvk, Namespace: ns, Name: "never-existed", UID: "0000"}})
		Expect(pd.Errs).To(BeEmpty())
		Expect(pd.Gone).To(Equal([]bool{true}))
	})

	It("does not delete an object recreated under the same name (UID precondition)", func() {
		u := createOperands(widgetKind, ns, "again", 1)[0]
		oldUID := u.GetUID()
		Expect(tenv.admin.Delete(ctx, u)).To(Succeed())
		again := newOperand(widgetKind, ns, u.GetName())
		Expect(tenv.admin.Create(ctx, again)).To(Succeed())

		pd := deleted(r, p, []operand{{GVK: gvk, Namespace: ns, Name: u.GetName(), UID: oldUID}})
		Expect(pd.Errs).To(BeEmpty())
		Expect(pd.Gone).To(Equal([]bool{false}))
		Expect(operandState(again)).To(Equal("present"))
	})

	// A page's Deletes wait for the semaphore and the client's rate limit (a page of 500 took ≈ 10 s):
	// each goes out on a verification at most reverifyEvery old, and none after one that fails.
	It("verifies the plan again before a Delete once the last verification is too old, and stops when it fails", func() {
		ws := createOperands(widgetKind, ns, "stale", 3)
		var ops []operand
		for _, w := range ws {
			ops = append(ops, operand{GVK: gvk, Namespace: ns, Name: w.GetName(), UID: w.GetUID()})
		}
		verifications := 0
		v := &verification{Every: 0, Verify: func(context.Context) (cleanuppass.Plan, bool, error) {
			verifications++
			return p, verifications == 1, nil // a successor appears after the first Delete
		}}
		pd := r.deletePage(ctx, v, ops)
		pd.Wait()
		Expect(pd.Stop).To(MatchError(errPlanChanged))
		Expect(verifications).To(Equal(2), "one verification per Delete")
		Expect(pd.Deleted).To(Equal(1))
		expectAll(ws[1:], "present")
	})

	It("refuses to delete anything outside the plan", func() {
		other := newNamespace("safety-other")
		outside := createOperands(widgetKind, other, "w", 1)[0]
		gadget := createOperands(gadgetKind, ns, "g", 1)[0]
		ops := []operand{
			{GVK: gvk, Namespace: other, Name: outside.GetName(), UID: outside.GetUID()},
			{GVK: gadget.GroupVersionKind(), Namespace: ns, Name: gadget.GetName(), UID: gadget.GetUID()},
		}
		pd := deleted(r, p, ops)
		Expect(pd.Errs).To(HaveLen(2))
		Expect(pd.Errs[0]).To(MatchError(ContainSubstring("refusing to delete")))
		Expect(operandState(outside)).To(Equal("present"))
		Expect(operandState(gadget)).To(Equal("present"))
		Expect(tenv.admin.Get(ctx, client.ObjectKeyFromObject(gadget), newOperand(gadgetKind, ns, "x"))).To(Succeed())
	})

	// The specs of a pass stop the suite's controller meanwhile: it would run the same cleanup.
	Context("a pass (pages listed live, each page's deletes after a live verification)", func() {
		// deletingCSV is a deleted CSV of ns that asks for a cleanup of its Widgets (held by Finalizer, which
		// done removes), and the plan a pass gets for it.
		deletingCSV := func() (c *v1alpha1.ClusterServiceVersion, p *plan, done func()) {
			c = createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(widgetKind))
			updateCSV(keyOf(c), func(c *v1alpha1.ClusterServiceVersion) { c.Finalizers = append(c.Finalizers, Finalizer) })
			deleteCSV(c)
			c = getCSV(keyOf(c))
			p, err := r.planFor(ctx, c, &csvState{}, true)
			Expect(err).NotTo(HaveOccurred())
			return c, p, func() { updateCSV(keyOf(c), func(c *v1alpha1.ClusterServiceVersion) { c.Finalizers = nil }) }
		}

		It("deletes nothing for a CSV that is not being deleted", func() {
			c := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(widgetKind))
			p, err := r.planFor(ctx, c, &csvState{}, true)
			Expect(err).NotTo(HaveOccurred())
			ws := createOperands(widgetKind, ns, "w", 3)
			_, err = r.runPass(ctx, c, p)
			Expect(err).To(MatchError(errPlanChanged))
			Expect(allInState(ws, "present")()).To(BeTrue())
		})

		It("stops before the next page once the user opts out during the pass", func() {
			restartController(func() {
				c, p, done := deletingCSV()
				defer done()
				ws := createOperands(widgetKind, ns, "w", 6)
				watching, err := client.NewWithWatch(tenv.cfg, client.Options{Scheme: NewScheme()})
				Expect(err).NotTo(HaveOccurred())
				var optedOut atomic.Bool
				r.client = interceptor.NewClient(watching, interceptor.Funcs{
					Delete: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
						if optedOut.CompareAndSwap(false, true) {
							updateCSV(keyOf(c), func(c *v1alpha1.ClusterServiceVersion) { c.Spec.Cleanup.Enabled = false })
						}
						return cl.Delete(ctx, obj, opts...)
					},
				})
				r.pageSize, r.deleteSem = 2, make(chan struct{}, 1)
				_, err = r.runPass(ctx, c, p)
				Expect(err).To(MatchError(errPlanChanged))
				var states []string
				for _, w := range ws {
					states = append(states, operandState(w))
				}
				// The first delete carried the opt-out; the second (same page, verified before it) may be
				// deleted or cancelled when the pass stops; nothing of a later page may go.
				Expect(states[0]).To(Equal("absent"))
				Expect(states[2:]).To(HaveEach("present"), "only the page verified before the opt-out may be deleted")
			})
		})

		It("counts every pending operand across pages and lists the first in order", func() {
			restartController(func() {
				c, p, done := deletingCSV()
				defer done()
				held := createOperands(widgetKind, ns, "held", 5, testFinalizer)
				defer releaseOperands(held...)
				plain := createOperands(widgetKind, ns, "plain", 4)
				r.pageSize, r.opts.MaxPendingListed = 2, 3
				res, err := r.runPass(ctx, c, p)
				Expect(err).NotTo(HaveOccurred())
				Expect(res.Pending).To(Equal(5), "the 4 without finalizers are gone")
				Expect(res.Deleted).To(Equal(9))
				var names []string
				for _, o := range res.First {
					names = append(names, o.Name)
				}
				Expect(names).To(Equal([]string{"held-0", "held-1", "held-2"}))
				Expect(allInState(plain, "absent")()).To(BeTrue())
				Expect(allInState(held, "deleting")()).To(BeTrue())
			})
		})
	})
})
