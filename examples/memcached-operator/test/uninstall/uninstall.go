// Package uninstall proves that memcached-operator uninstalls cleanly with cleanup-e2e: its own main
// (cmd/main.go, unchanged) runs as a child process on envtest and as its image on kind, installed from
// its bundle as OLM installs it, in every install mode its CSV supports (AllNamespaces) — on kind with
// its admission webhooks, on envtest without them (Bundle). The Ginkgo suite is uninstall_test.go;
// test/mutants checks these checks against broken variants.
package uninstall

import (
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
	"github.com/cleanup-e2e/cleanup-e2e/framework/stack"
	"github.com/cleanup-e2e/cleanup-e2e/framework/testenv"

	cachev1alpha1 "example.com/memcached-operator/api/v1alpha1"
)

// Image is the CSV's; on kind `make docker-build` makes it (here: cleanup-e2e's scripts/images.sh).
const Image = "example.com/memcached-operator:v0.0.1"

// Cluster is what the suite needs: OLM, the operand-cleanup controller, the CRD of the bundle's
// ServiceMonitor, and on envtest the operator's own main built from ./cmd.
func Cluster() testenv.Config {
	return testenv.Config{
		Name:     "memcached-uninstall",
		Registry: localruntime.NewRegistry().RegisterBinary(Image, localruntime.Binary{Package: "./cmd", Dir: root}),
		Images:   []string{Image},
		Stack:    stack.Components{OLM: true, OperandCleanup: true, CRDs: kube.MustReadCRDs(root + "/test/uninstall/testdata")},
		Schemes:  []func(*runtime.Scheme) error{cachev1alpha1.AddToScheme},
	}
}

// Bundle is the bundle the suite installs on provider (CLEANUP_E2E_PROVIDER; "" is envtest). envtest
// cannot call admission webhooks: there, a copy whose operator serves none (no webhookdefinitions, no
// certificate flag or volume, ENABLE_WEBHOOKS=false, which cmd/main.go reads); elsewhere (kind) the
// bundle as it is, its webhooks served with OLM's certificate.
func Bundle(provider string) string {
	if provider == "" || provider == "envtest" {
		return specs.MustWithoutWebhooks(root + "/bundle")
	}
	return root + "/bundle"
}

// Spec is what a working memcached-operator does: a Deployment and the Available condition for each
// sample, and its finalizer removes the sample's viewer ClusterRole, which garbage collection cannot.
func Spec(env func() cluster.Environment, bundleDir string) specs.OperandCleanupSpecInput {
	return specs.OperandCleanupSpecInput{
		Environment: env,
		Name:        "memcached-operator",
		BundleDir:   bundleDir,
		Samples:     specs.MustALMExamples(bundleDir),
		Reconciled:  specs.AllOf(specs.Owns(appsv1.SchemeGroupVersion.WithKind("Deployment")), specs.HasCondition("Available")),
		Finalized: specs.Gone(rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), func(s *unstructured.Unstructured) types.NamespacedName {
			return types.NamespacedName{Name: "memcached-" + s.GetNamespace() + "-" + s.GetName() + "-viewer"}
		}),
	}
}

// root is the operator repo's root, from this package's directory (where go test runs).
const root = "../.."
