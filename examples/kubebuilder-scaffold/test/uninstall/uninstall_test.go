// Package uninstall is the uninstall suite a kubebuilder go/v4 operator repo adds to prove it
// uninstalls cleanly, in the layout docs/use-from-your-operator-repo.md recommends: a Go module of its
// own (test/uninstall/go.mod), so that adding cleanup-e2e never changes the operator's go.mod. It
// imports nothing of the operator: the samples come from the bundle's alm-examples and the checks read
// unstructured objects. On envtest the operator is its own main, built from ./cmd with its own go.mod
// (localruntime.Binary); on kind its image.
//
// examples/kubebuilder-scaffold/run.sh copies this module into a fresh scaffold and runs it there.
package uninstall

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
	"github.com/cleanup-e2e/cleanup-e2e/framework/stack"
	"github.com/cleanup-e2e/cleanup-e2e/framework/suite"
	"github.com/cleanup-e2e/cleanup-e2e/framework/testenv"
)

func TestUninstall(t *testing.T) { suite.RunSpecs(t, "memcached-scaffold uninstall") }

// root is the operator repo, from this package's directory (where go test runs).
const root = "../.."

// image is what the bundle's Deployment runs (kustomize-to-bundle -image, `make bundle IMG=...`).
const image = "example.com/memcached-scaffold:v0.0.1"

// finalizer is the one the operator's controller adds to every Memcached and removes when it is deleted.
const finalizer = "cache.scaffold.example.com/finalizer"

var clusterUnderTest = suite.Environment(testenv.Config{
	Name: "kubebuilder-scaffold-uninstall",
	// envtest: the operator's cmd/main.go, built in the operator's module with its own go.mod
	Registry: localruntime.NewRegistry().RegisterBinary(image, localruntime.Binary{Package: "./cmd", Dir: root}),
	// kind: the image `make docker-build IMG=...` made, loaded from the host's Docker
	Images: []string{image},
	Stack:  stack.ForOperandCleanup(),
})

var bundleDir = bundle()

// bundle is the operator's bundle; on envtest, which cannot call admission webhooks, a copy whose
// operator serves none (no webhookdefinitions, ENABLE_WEBHOOKS=false, which the scaffold's main reads).
func bundle() string {
	if p := envvar.Provider.Get(); p == "" || p == "envtest" {
		return specs.MustWithoutWebhooks(root + "/bundle")
	}
	return root + "/bundle"
}

var _ = specs.DescribeOperandCleanup(specs.OperandCleanupSpecInput{
	Environment: clusterUnderTest,
	Name:        "memcached-scaffold",
	BundleDir:   bundleDir,
	Samples:     samples,
	Reconciled:  hasFinalizer,
	// No Finalized: the scaffold's finalizer cleans up nothing yet, it only lets the Memcached go.
})

// samples are the bundle's alm-examples (config/samples). The scaffold's sample leaves its spec to
// the user ("spec:" and a TODO: null), and its CRD requires one, which would refuse the sample
// ("spec: Required value"): where it is null it is empty here, as a user's first field would make it.
func samples(namespace string) []*unstructured.Unstructured {
	objs := almExamples(namespace)
	for _, o := range objs {
		if spec, ok := o.Object["spec"]; !ok || spec == nil {
			o.Object["spec"] = map[string]any{}
		}
	}
	return objs
}

var almExamples = specs.MustALMExamples(bundleDir)

// hasFinalizer: the operator took charge of the sample (the sample is as created: read it again).
func hasFinalizer(ctx context.Context, c client.Client, sample *unstructured.Unstructured) error {
	live, err := kube.Get(ctx, c, sample)
	if err != nil {
		return err
	}
	if !slices.Contains(live.GetFinalizers(), finalizer) {
		return fmt.Errorf("%s %s/%s has no finalizer %s yet (finalizers: %v)", live.GetKind(), live.GetNamespace(), live.GetName(), finalizer, live.GetFinalizers())
	}
	return nil
}
