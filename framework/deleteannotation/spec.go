package deleteannotation

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/clusteroperator"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/applier"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

// SpecInput describes a component removed from a release with the CVO's
// release.openshift.io/delete annotation.
type SpecInput struct {
	// Environment returns the cluster to run on (its Provider is required).
	Environment func() cluster.Environment
	// Name prefixes the spec's names and labels the container.
	Name string
	// Labels are added to the container's (e.g. the suite's own label).
	Labels []string
	// Payloads returns, for names unique to one spec (id), the release that ships the component and
	// the next release, which removes it: the component's namespace and cluster-scoped objects keep
	// their manifests with the annotation, the manifests of objects inside a removed namespace are
	// dropped. Every object the installed release has and the removal release drops must go (anything
	// else dropped would stay behind on a real cluster, so the spec fails on it).
	Payloads func(id string) (installed, removal *payloadtest.Builder)
	// Outside returns objects in no payload that the spec creates first (in order) and that must stay
	// untouched. Optional.
	Outside func(id string) []*unstructured.Unstructured
	// Timeout bounds each wait (default: intervals.SpecStep).
	Timeout time.Duration
}

// DescribeRemoval declares the documented behaviour of removing a component with the delete
// annotation: updating removes exactly the marked objects (and what they contain) without waiting,
// Upgradeable=False/ResourceDeletionInProgress naming them until every delete is verified; a first
// install of the removal release never creates them; updating a cluster that never had them only
// warns. Every spec makes its own names, so they run in parallel and in random order. Use it at the
// top level of a suite: var _ = deleteannotation.DescribeRemoval(deleteannotation.SpecInput{...})
func DescribeRemoval(in SpecInput) bool {
	if in.Environment == nil || in.Name == "" || in.Payloads == nil {
		panic("SpecInput needs Environment, Name and Payloads")
	}
	in.Timeout = intervals.Or(in.Timeout, intervals.SpecStep)
	labels := append([]string{"payload-applier", "delete-annotation", in.Name}, in.Labels...)
	start := func(ctx context.Context) (*Env, *payloadtest.Builder, *payloadtest.Builder) {
		e := NewEnv(ctx, in.Environment(), in.Name, applier.Options{})
		e.Timeout = in.Timeout
		installed, removal := in.Payloads(e.ID)
		return e, installed, removal
	}
	return Describe(fmt.Sprintf("Removing %s with the delete annotation", in.Name), Label(labels...), func() {
		// The library's longest spec when a namespace is marked: it waits for the namespace's deletion,
		// ≥ 5 s (kube-controller-manager's namespace grace period). It starts first (SpecPriority), so
		// that it does not end a parallel suite alone.
		It("removes the marked objects when updating to the removal release, and nothing else", Label("update"), SpecPriority(1), func(ctx context.Context) {
			e, installedB, removalB := start(ctx)
			installed, removal := e.Load(installedB), e.Load(removalB)
			var outside []*unstructured.Unstructured
			if in.Outside != nil {
				outside = in.Outside(e.ID)
				for _, o := range outside {
					e.Track(o)
					Expect(e.Cluster.Client.Create(ctx, o.DeepCopy())).To(Succeed(), "create %s", ResourceOf(o))
				}
			}

			By("installing " + installed.Version)
			e.MustRun(ctx, installedB, applier.ModeInstall)
			e.ExpectPresent(ctx, Applied(installed)...)
			e.ExpectClusterOperator(ctx, clusteroperator.HaveOperandVersion("operator", installed.Version),
				clusteroperator.HaveCondition("Upgradeable", "True", payload.ReasonAsExpected))
			keptBefore := e.ExpectPresent(ctx, Kept(installed, removal)...)
			outsideBefore := e.ExpectPresent(ctx, outside...)

			By("updating to " + removal.Version + ": one Delete per marked object, no waiting")
			marked := Marked(removal)
			res := e.MustRun(ctx, removalB, applier.ModeUpdate)
			var requested []payload.Resource
			var requestedNames, notFound []string
			for _, o := range marked {
				t := TaskOf(res, removal, o)
				Expect(t.Outcome).To(BeElementOf(applier.OutcomeDeleteRequested, applier.OutcomeDeleted), "%s", t.Ref())
				if t.Outcome == applier.OutcomeDeleteRequested {
					requested, requestedNames = append(requested, ResourceOf(o)), append(requestedNames, t.Resource)
					Expect(TaskTexts(t)).To(ContainElement(payload.MsgDeleteRequested(ResourceOf(o))))
				}
				// A custom resource whose CRD went first may be gone before its turn: a not-found warning.
				notFound = append(notFound, payload.MsgNotFound(ResourceOf(o)))
			}
			Expect(requested).NotTo(BeEmpty(), "some marked object must still exist when its manifest runs")
			Expect(res.DeletesInProgress).To(ConsistOf(requestedNames))
			for _, w := range res.Warnings() {
				Expect(w).To(BeElementOf(notFound), "unexpected warning")
			}
			e.ExpectClusterOperator(ctx, clusteroperator.HaveOperandVersion("operator", removal.Version),
				clusteroperator.HaveCondition("Available", "True", ""),
				clusteroperator.HaveCondition("Upgradeable", "False", payload.ReasonResourceDeletionInProgress),
				clusteroperator.HaveConditionMessage("Upgradeable", payload.UpgradeableMessage(requestedNames)))

			By("reconciling until every delete is verified")
			passes := e.RunUntil(ctx, removalB, applier.ModeReconcile, HaveField("Upgradeable", BeTrue()))
			for _, r := range requested {
				Expect(Count(Texts(passes...), payload.MsgDeleteCompleted(r))).To(Equal(1), "completion of %s reported once", r)
			}
			e.ExpectClusterOperator(ctx, clusteroperator.HaveCondition("Upgradeable", "True", payload.ReasonAsExpected),
				clusteroperator.HaveCondition("Degraded", "False", ""),
				clusteroperator.HaveCondition("Progressing", "False", ""))
			e.ExpectGone(ctx, marked...)
			e.ExpectGone(ctx, Dropped(installed, removal)...)
			e.ExpectUntouched(ctx, keptBefore, true)
			e.ExpectUntouched(ctx, outsideBefore, false)
		})

		It("never creates the marked objects when the removal release is the first install", Label("install"), func(ctx context.Context) {
			e, _, removalB := start(ctx)
			removal := e.Load(removalB)
			marked := Marked(removal)
			res := e.MustRun(ctx, removalB, applier.ModeInstall)
			expectOnlyNotFound(res, removal, marked)
			e.ExpectPresent(ctx, Applied(removal)...)
			e.ExpectClusterOperator(ctx, clusteroperator.HaveOperandVersion("operator", removal.Version),
				clusteroperator.HaveCondition("Upgradeable", "True", payload.ReasonAsExpected))

			By("reconciling: still nothing created, nothing more to say")
			res = e.MustRun(ctx, removalB, applier.ModeReconcile)
			Expect(res.Warnings()).To(BeEmpty())
			e.ExpectGone(ctx, marked...)
		})

		It("only warns when updating a cluster that never had the marked objects", Label("already-gone"), func(ctx context.Context) {
			e, installedB, removalB := start(ctx)
			removal := e.Load(removalB)
			before := WithoutMarked(removal, e.Load(installedB).Version)
			e.MustRun(ctx, before, applier.ModeInstall)

			res := e.MustRun(ctx, removalB, applier.ModeUpdate)
			expectOnlyNotFound(res, removal, Marked(removal))
			e.ExpectClusterOperator(ctx, clusteroperator.HaveOperandVersion("operator", removal.Version),
				clusteroperator.HaveCondition("Degraded", "False", payload.ReasonAsExpected),
				clusteroperator.HaveCondition("Upgradeable", "True", payload.ReasonAsExpected))
			e.ExpectGone(ctx, Marked(removal)...)
		})
	})
}

// Spec is DescribeRemoval; ctx was never used (the specs get theirs from Ginkgo).
//
// Deprecated: use DescribeRemoval(in).
func Spec(_ context.Context, in SpecInput) bool { return DescribeRemoval(in) }

// expectOnlyNotFound: every marked object was found absent (never created, no Delete issued), each
// with the CVO's not-found warning and nothing else to warn about; no delete is left in progress.
func expectOnlyNotFound(res applier.Result, p *payload.Payload, marked []*unstructured.Unstructured) {
	GinkgoHelper()
	var want []string
	for _, o := range marked {
		Expect(TaskOf(res, p, o).Outcome).To(Equal(applier.OutcomeDeleted), "%s", ResourceOf(o))
		want = append(want, payload.MsgNotFound(ResourceOf(o)))
	}
	Expect(res.Warnings()).To(ConsistOf(want))
	Expect(res.Texts()).NotTo(ContainElement(HavePrefix("Delete requested")))
	Expect(res.DeletesInProgress).To(BeEmpty())
	Expect(res.Upgradeable).To(BeTrue())
}
