package deleteannotation

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/clusteroperator"
	"github.com/cleanup-e2e/cleanup-e2e/framework/internal/ginkgox"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/applier"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

// Env is one spec's CVO-style payload applier: its own namespace (state ConfigMap), its own
// ClusterOperator and a fresh client (own RESTMapper, like a new applier process). Payloads a spec runs
// must name their objects after ID, so specs run in parallel and in any order. When the spec ends,
// artifacts are collected if it failed, then the functions given to Defer run (last first), then every
// object of every payload tracked is deleted (finalizers stripped, CRDs last).
type Env struct {
	Cluster cluster.Environment
	// ID is unique to the spec and DNS-safe, e.g. "held-x7k2p".
	ID string
	// Namespace is the applier's namespace; ClusterOperator its own ClusterOperator.
	Namespace       string
	ClusterOperator string
	// Client is the applier's client; Applier runs passes (Run).
	Client  client.Client
	Applier *applier.Applier
	// Results holds every pass run through Run, in order (written to the artifacts on failure).
	Results []applier.Result
	// Timeout bounds the waits of the Expect*/RunUntil helpers (default: intervals.SpecStep).
	Timeout time.Duration
	// SpecReportsClusterOperators: the spec plays the operators of the payload's ClusterOperators
	// itself (clusteroperator.SetStatus), so Run does not report them healthy.
	SpecReportsClusterOperators bool

	objects    []*unstructured.Unstructured // tracked payload objects, first seen first
	seen       map[string]bool
	namespaces []string // extra namespaces for the artifacts
	deferred   []func(context.Context)
}

// NewEnv creates the applier's namespace and registers the end-of-spec cleanup. opts may set
// anything but Namespace, ClusterOperatorName and Logger; timings default to test-friendly values.
func NewEnv(ctx context.Context, cl cluster.Environment, prefix string, opts applier.Options) *Env {
	GinkgoHelper()
	Expect(cl.Provider).NotTo(BeNil(), "Env needs Cluster.Provider (for its REST config)")
	e := &Env{Cluster: cl, ID: prefix + "-" + utilrand.String(5), Timeout: intervals.Get(intervals.SpecStep), seen: map[string]bool{}}
	e.Namespace = ginkgox.Namespaces(ctx, cl.Client, e.ID+"-applier", 1)[0]
	e.ClusterOperator = e.ID + "-applier"
	c, err := kube.NewClient(cl.Provider.RESTConfig(), applier.NewScheme())
	Expect(err).NotTo(HaveOccurred())
	e.Client = c
	opts.Namespace, opts.ClusterOperatorName = e.Namespace, e.ClusterOperator
	opts.Logger = ginkgox.Logger().WithName(e.ID)
	if opts.PollInterval == 0 {
		opts.PollInterval = intervals.WaitEvery
	}
	if opts.ClusterOperatorTimeout == 0 {
		opts.ClusterOperatorTimeout = intervals.Get(intervals.ClusterOperatorLevel)
	}
	e.Applier = applier.New(c, c.RESTMapper(), opts)
	// Registered after the namespace's cleanup, so it runs before the namespaces go.
	DeferCleanup(e.cleanup)
	return e
}

// Defer registers fn to run when the spec ends, after the artifacts are collected and before the
// payload objects are deleted.
func (e *Env) Defer(fn func(context.Context)) { e.deferred = append(e.deferred, fn) }

// AddNamespaces adds namespaces to dump on failure (those of tracked objects are dumped anyway).
func (e *Env) AddNamespaces(ns ...string) { e.namespaces = append(e.namespaces, ns...) }

// Load loads a payload builder, failing the spec on error.
func (e *Env) Load(b *payloadtest.Builder) *payload.Payload {
	GinkgoHelper()
	p, err := b.Load()
	Expect(err).NotTo(HaveOccurred(), "load payload")
	return p
}

// Track records objects for the end-of-spec deletion and the artifacts (Run tracks its payloads).
func (e *Env) Track(objs ...*unstructured.Unstructured) {
	for _, o := range objs {
		if k := objectKey(o); !e.seen[k] {
			e.seen[k] = true
			e.objects = append(e.objects, o.DeepCopy())
		}
	}
}

// TrackPayload tracks every object of the payload.
func (e *Env) TrackPayload(b *payloadtest.Builder) {
	for _, m := range e.Load(b).Manifests {
		e.Track(m.Obj)
	}
}

// Run tracks the payload, reports the versions of its ClusterOperators (standing in for their
// operators, see ReportClusterOperators; unless SpecReportsClusterOperators) and runs one pass.
// The result is logged and kept in Results.
func (e *Env) Run(ctx context.Context, b *payloadtest.Builder, mode applier.Mode) applier.Result {
	GinkgoHelper()
	p := e.Load(b)
	e.TrackPayload(b)
	if !e.SpecReportsClusterOperators {
		e.ReportClusterOperators(ctx, b)
	}
	res, _ := e.Applier.Run(ctx, p, mode)
	e.Results = append(e.Results, res)
	GinkgoWriter.Printf("pass %d (%s %s): completed=%v err=%v deletesInProgress=%v\n", len(e.Results), mode, p.Version, res.Completed, res.Err, res.DeletesInProgress)
	for _, m := range res.Messages {
		GinkgoWriter.Printf("  %s [%s]\n", m, m.Task)
	}
	return res
}

// MustRun is Run expecting a completed pass without error.
func (e *Env) MustRun(ctx context.Context, b *payloadtest.Builder, mode applier.Mode) applier.Result {
	GinkgoHelper()
	res := e.Run(ctx, b, mode)
	Expect(res.Err).NotTo(HaveOccurred(), "%s pass of %s", mode, res.Version)
	Expect(res.Completed).To(BeTrue())
	return res
}

// RunUntil runs passes (one a second at most) until the result of one matches, and returns the
// results of all passes it ran.
func (e *Env) RunUntil(ctx context.Context, b *payloadtest.Builder, mode applier.Mode, m types.GomegaMatcher) []applier.Result {
	GinkgoHelper()
	var passes []applier.Result
	Eventually(func() applier.Result {
		res := e.Run(ctx, b, mode)
		passes = append(passes, res)
		return res
	}).WithContext(ctx).WithTimeout(e.Timeout).WithPolling(time.Second).Should(m)
	return passes
}

// GetClusterOperator returns a getter of the applier's own ClusterOperator, for Eventually.
func (e *Env) GetClusterOperator(ctx context.Context) func() (*unstructured.Unstructured, error) {
	return clusteroperator.Get(ctx, e.Cluster.Client, e.ClusterOperator)
}

// ExpectClusterOperator waits until the applier's ClusterOperator matches every matcher.
func (e *Env) ExpectClusterOperator(ctx context.Context, ms ...types.GomegaMatcher) {
	GinkgoHelper()
	Eventually(e.GetClusterOperator(ctx)).WithContext(ctx).WithTimeout(e.Timeout).Should(And(ms...),
		"ClusterOperator %s", e.ClusterOperator)
}

func (e *Env) cleanup(ctx context.Context) {
	e.collectOnFailure(ctx)
	for i := len(e.deferred) - 1; i >= 0; i-- {
		e.deferred[i](ctx)
	}
	_ = e.Cluster.Client.Delete(ctx, clusteroperator.Object(e.ClusterOperator))
	deleteObjects(ctx, e.Cluster.Client, e.objects)
}

func objectKey(o *unstructured.Unstructured) string {
	gvk := o.GroupVersionKind()
	return fmt.Sprintf("%s/%s/%s/%s", gvk.Group, gvk.Kind, o.GetNamespace(), o.GetName())
}
