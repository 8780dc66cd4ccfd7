package specs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
)

// The APIs a case locks are the kinds its CSVs own (what an AllNamespaces cleanup of it deletes), the
// kinds they require and its samples' kinds (what another operator's could delete), without the core
// group's.
func TestUsedAPIsAreTheOwnedAndRequiredKindsAndTheSamplesKinds(t *testing.T) {
	sample := func(apiVersion, kind string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		return u
	}
	in := OperandCleanupSpecInput{BundleDir: bundles.Dir("widget-operator", "v0.1.0"),
		Samples: func(string) []*unstructured.Unstructured {
			return []*unstructured.Unstructured{sample("v1", "ConfigMap"), sample("cache.example.com/v1alpha1", "Memcached")}
		}}
	got, err := usedAPIs(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"widget.fixtures.cleanup-e2e.io", "widgetclass.fixtures.cleanup-e2e.io", "memcached.cache.example.com"} {
		if !slices.Contains(got, want) {
			t.Errorf("used APIs %v, want %s among them", got, want)
		}
	}
	for _, a := range got {
		if !strings.Contains(a, ".") || a != strings.ToLower(a) || strings.HasPrefix(a, "configmap") {
			t.Errorf("used API %q: want kind.group in lower case, no core kinds", a)
		}
	}
	// gizmo-operator makes a Widget per Gizmo: widget-operator's AllNamespaces cleanup would delete it.
	gizmos := OperandCleanupSpecInput{BundleDir: bundles.Dir("gizmo-operator", "v0.1.0"), Samples: func(string) []*unstructured.Unstructured { return nil }}
	if got, err := usedAPIs(gizmos); err != nil || !slices.Equal(got, []string{"gizmo.fixtures.cleanup-e2e.io", "widget.fixtures.cleanup-e2e.io"}) {
		t.Errorf("gizmo-operator's used APIs %v (%v), want the Gizmo it owns and the Widget it requires", got, err)
	}
	// Its OLM v1 variant no longer requires the Widget API but still makes Widgets: held all the same (on
	// kind another spec's cluster-wide widget-operator finalized them, and its uninstall left them stuck).
	variant, err := WithoutRequiredAPIs(gizmos.BundleDir)
	if err != nil {
		t.Fatal(err)
	}
	gizmos.BundleDir = variant
	if got, err := usedAPIs(gizmos); err != nil || !slices.Equal(got, []string{"gizmo.fixtures.cleanup-e2e.io", "widget.fixtures.cleanup-e2e.io"}) {
		t.Errorf("used APIs of gizmo-operator without required APIs %v (%v), want the Gizmo it owns and the Widget it required", got, err)
	}
}

// recordingLocker is a cluster.APILocker that records what a spec locks and when it releases it.
type recordingLocker struct {
	events *[]string
}

func (l recordingLocker) LockAPIs(_ context.Context, apis []string, exclusive bool, _ string) (func(), error) {
	*l.events = append(*l.events, fmt.Sprintf("lock %v exclusive=%v", apis, exclusive))
	return func() { *l.events = append(*l.events, "release") }, nil
}

// On a shared cluster an Installation holds its APIs from before its namespaces exist until its last
// cleanup ran, exclusively in AllNamespaces mode only; without a locker (envtest) it locks nothing.
func TestAnInstallationHoldsItsAPIsForTheWholeSpec(t *testing.T) {
	for _, mode := range []operatorsv1alpha1.InstallModeType{operatorsv1alpha1.InstallModeTypeAllNamespaces, operatorsv1alpha1.InstallModeTypeOwnNamespace} {
		var events []string
		c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				events = append(events, "create namespace")
				return c.Create(ctx, obj, opts...)
			},
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				events = append(events, "delete namespace")
				return c.Delete(ctx, obj, opts...)
			},
		}).Build()
		in := OperandCleanupSpecInput{Name: "locks", BundleDir: bundles.Dir("widget-operator", "v0.1.0"),
			Environment: func() cluster.Environment {
				return cluster.Environment{Client: c, APIs: recordingLocker{&events}}
			},
			Samples: func(string) []*unstructured.Unstructured { return nil }}
		spec := Case{Name: "locks", Run: func(ctx context.Context, tt T) { NewInstallationFor(ctx, tt, in, mode) }}
		if failure := failureMessage(context.Background(), spec, t.Logf); failure != "" {
			t.Fatal(failure)
		}
		want := []string{fmt.Sprintf("lock [widget.fixtures.cleanup-e2e.io widgetclass.fixtures.cleanup-e2e.io] exclusive=%v",
			mode == operatorsv1alpha1.InstallModeTypeAllNamespaces),
			"create namespace", "create namespace", "delete namespace", "delete namespace", "release"}
		if !slices.Equal(events, want) {
			t.Errorf("%s: %q, want %q", mode, events, want)
		}
	}
}

// HoldAPIsOf holds the bundles' owned and required kinds shared until released, and nothing without a
// locker; a bundle it cannot read fails naming it.
func TestHoldAPIsOfHoldsTheBundlesKindsShared(t *testing.T) {
	var events []string
	release, err := HoldAPIsOf(context.Background(), recordingLocker{&events}, "spec X", bundles.Dir("gizmo-operator", "v0.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	release()
	want := []string{"lock [gizmo.fixtures.cleanup-e2e.io widget.fixtures.cleanup-e2e.io] exclusive=false", "release"}
	if !slices.Equal(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}
	if release, err := HoldAPIsOf(context.Background(), nil, "spec X", bundles.Dir("gizmo-operator", "v0.1.0")); err != nil || release == nil {
		t.Errorf("without a locker: error %v (release nil: %v); want a no-op release", err, release == nil)
	}
	if _, err := HoldAPIsOf(context.Background(), recordingLocker{&events}, "spec X", "/no/such/bundle"); err == nil || !strings.Contains(err.Error(), "/no/such/bundle") {
		t.Errorf("an unreadable bundle: error %v, want one naming it", err)
	}
}
