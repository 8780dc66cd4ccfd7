package applier_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/cleanup-e2e/cleanup-e2e/config/crd"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/toolchain"
	configv1 "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/api/configv1"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/applier"
)

var (
	testEnv *envtest.Environment
	cfg     *rest.Config
	k8s     client.Client
	scheme  *runtime.Scheme
	counter atomic.Int64
)

func TestApplier(t *testing.T) {
	RegisterFailHandler(Fail)
	// Waits without a timeout of their own take the spec library's, not Gomega's 1 s: on a slow machine
	// the applier can still be on its first pass after 1 s. They poll as the framework's do.
	SetDefaultEventuallyTimeout(intervals.Get(intervals.SpecStep))
	SetDefaultEventuallyPollingInterval(intervals.Poll)
	RunSpecs(t, "payload applier (envtest)")
}

var _ = BeforeSuite(func() {
	co, err := crd.ClusterOperator()
	Expect(err).NotTo(HaveOccurred())
	testEnv = &envtest.Environment{CRDs: []*apiextensionsv1.CustomResourceDefinition{co}}
	cfg, err = toolchain.StartEnvtest(testEnv)
	Expect(err).NotTo(HaveOccurred(), "envtest control plane (kube-apiserver, etcd) with the ClusterOperator CRD")
	scheme = applier.NewScheme()
	Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// unique returns a DNS-safe name unique in this suite.
func unique(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, GinkgoParallelProcess(), counter.Add(1))
}

// newClient returns a client with its own RESTMapper, like a freshly started applier process.
func newClient() client.Client {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// newApplier returns an applier with test-friendly timings; its namespace must exist (state ConfigMap).
func newApplier(opts applier.Options) *applier.Applier {
	if opts.PollInterval == 0 {
		opts.PollInterval = 100 * time.Millisecond
	}
	if opts.TaskRetryTimeout == 0 {
		opts.TaskRetryTimeout = 15 * time.Second
	}
	if opts.ClusterOperatorTimeout == 0 {
		opts.ClusterOperatorTimeout = time.Minute
	}
	opts.Logger = zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true))
	c := newClient()
	return applier.New(c, c.RESTMapper(), opts)
}

func getCO(ctx context.Context, name string) func() (*configv1.ClusterOperator, error) {
	return func() (*configv1.ClusterOperator, error) {
		var co configv1.ClusterOperator
		err := k8s.Get(ctx, client.ObjectKey{Name: name}, &co)
		return &co, err
	}
}

func getObj(ctx context.Context, apiVersion, kind, namespace, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	err := k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u)
	return u, err
}
