package operandcleanup

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

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
		ops := []operand{{gvk: gvk, namespace: ns, name: "never-existed", uid: "0000"}}
		gone, err := r.deleteOperands(ctx, p, ops)
		Expect(err).NotTo(HaveOccurred())
		Expect(gone).To(HaveKey(ops[0].uid))
	})

	It("does not delete an object recreated under the same name (UID precondition)", func() {
		u := createOperands(widgetKind, ns, "again", 1)[0]
		oldUID := u.GetUID()
		Expect(tenv.admin.Delete(ctx, u)).To(Succeed())
		again := newOperand(widgetKind, ns, u.GetName())
		Expect(tenv.admin.Create(ctx, again)).To(Succeed())

		gone, err := r.deleteOperands(ctx, p, []operand{{gvk: gvk, namespace: ns, name: u.GetName(), uid: oldUID}})
		Expect(err).NotTo(HaveOccurred())
		Expect(gone).To(BeEmpty())
		Expect(operandState(again)).To(Equal("present"))
	})

	It("refuses to delete anything outside the plan", func() {
		other := newNamespace("safety-other")
		outside := createOperands(widgetKind, other, "w", 1)[0]
		gadget := createOperands(gadgetKind, ns, "g", 1)[0]
		ops := []operand{
			{gvk: gvk, namespace: other, name: outside.GetName(), uid: outside.GetUID()},
			{gvk: gadget.GroupVersionKind(), namespace: ns, name: gadget.GetName(), uid: gadget.GetUID()},
		}
		_, err := r.deleteOperands(ctx, p, ops)
		Expect(err).To(MatchError(ContainSubstring("refusing to delete")))
		Expect(operandState(outside)).To(Equal("present"))
		Expect(operandState(gadget)).To(Equal("present"))
		Expect(tenv.admin.Get(ctx, client.ObjectKeyFromObject(gadget), newOperand(gadgetKind, ns, "x"))).To(Succeed())
	})
})
