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
// group's; an exclusive hold (AllNamespaces, OLM v1) takes the owned kinds exclusively, the rest shared.
func TestUsedAPIsAreTheOwnedAndRequiredKindsAndTheSamplesKinds(t *testing.T) {
	sample := func(apiVersion, kind string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		return u
	}
	widgetKinds := []string{"widget.fixtures.cleanup-e2e.io", "widgetclass.fixtures.cleanup-e2e.io"}
	in := OperandCleanupSpecInput{BundleDir: bundles.Dir("widget-operator", "v0.1.0"),
		Samples: func(string) []*unstructured.Unstructured {
			return []*unstructured.Unstructured{sample("v1", "ConfigMap"), sample("cache.example.com/v1alpha1", "Memcached"),
				sample("fixtures.cleanup-e2e.io/v1alpha1", "Widget")}
		}}
	for _, c := range []struct {
		exclusive bool
		want      cluster.APIHolds
	}{
		{false, cluster.APIHolds{Shared: append([]string{"memcached.cache.example.com"}, widgetKinds...)}},
		{true, cluster.APIHolds{Exclusive: widgetKinds, Shared: []string{"memcached.cache.example.com"}}},
	} {
		got, err := usedAPIs(in, c.exclusive)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Exclusive, c.want.Exclusive) || !slices.Equal(got.Shared, c.want.Shared) {
			t.Errorf("exclusive=%v: used APIs %+v, want %+v (no core kinds, kind.group in lower case)", c.exclusive, got, c.want)
		}
	}
	// gizmo-operator makes a Widget per Gizmo: widget-operator's AllNamespaces cleanup would delete it,
	// so the Widget is held shared even by a hold that takes the Gizmo exclusively.
	gizmos := OperandCleanupSpecInput{BundleDir: bundles.Dir("gizmo-operator", "v0.1.0"), Samples: func(string) []*unstructured.Unstructured { return nil }}
	want := cluster.APIHolds{Exclusive: []string{"gizmo.fixtures.cleanup-e2e.io"}, Shared: []string{"widget.fixtures.cleanup-e2e.io"}}
	if got, err := usedAPIs(gizmos, true); err != nil || !slices.Equal(got.Exclusive, want.Exclusive) || !slices.Equal(got.Shared, want.Shared) {
		t.Errorf("gizmo-operator's used APIs %+v (%v), want %+v: the Gizmo it owns, the Widget it requires", got, err, want)
	}
	// Its OLM v1 variant no longer requires the Widget API but still makes Widgets: held all the same (on
	// kind another spec's cluster-wide widget-operator finalized them, and its uninstall left them stuck).
	variant, err := WithoutRequiredAPIs(gizmos.BundleDir)
	if err != nil {
		t.Fatal(err)
	}
	gizmos.BundleDir = variant
	if got, err := usedAPIs(gizmos, true); err != nil || !slices.Equal(got.Exclusive, want.Exclusive) || !slices.Equal(got.Shared, want.Shared) {
		t.Errorf("used APIs of gizmo-operator without required APIs %+v (%v), want %+v: the Gizmo it owns, the Widget it required", got, err, want)
	}
}

// recordingLocker is a cluster.APILocker that records what a spec locks and when it releases it.
type recordingLocker struct {
	events *[]string
}

func (l recordingLocker) LockAPIs(_ context.Context, holds cluster.APIHolds, _ string) (func(), error) {
	*l.events = append(*l.events, fmt.Sprintf("lock exclusive %v shared %v", holds.Exclusive, holds.Shared))
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
		lock := "lock exclusive [] shared [widget.fixtures.cleanup-e2e.io widgetclass.fixtures.cleanup-e2e.io]"
		if mode == operatorsv1alpha1.InstallModeTypeAllNamespaces {
			lock = "lock exclusive [widget.fixtures.cleanup-e2e.io widgetclass.fixtures.cleanup-e2e.io] shared []"
		}
		want := []string{lock,
			"create namespace", "create namespace", "delete namespace", "delete namespace", "release"}
		if !slices.Equal(events, want) {
			t.Errorf("%s: %q, want %q", mode, events, want)
		}
	}
}

// HoldAPIsOf holds the bundles' owned and required kinds shared until released, and nothing without a
// locker; a bundle it cannot read fails naming it. HoldAPIsExclusivelyOf takes the owned ones exclusively.
func TestHoldAPIsOfHoldsTheBundlesKindsShared(t *testing.T) {
	var events []string
	release, err := HoldAPIsOf(context.Background(), recordingLocker{&events}, "spec X", bundles.Dir("gizmo-operator", "v0.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	release()
	want := []string{"lock exclusive [] shared [gizmo.fixtures.cleanup-e2e.io widget.fixtures.cleanup-e2e.io]", "release"}
	if !slices.Equal(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}
	if release, err := HoldAPIsOf(context.Background(), nil, "spec X", bundles.Dir("gizmo-operator", "v0.1.0")); err != nil || release == nil {
		t.Errorf("without a locker: error %v (release nil: %v); want a no-op release", err, release == nil)
	}
	if _, err := HoldAPIsOf(context.Background(), recordingLocker{&events}, "spec X", "/no/such/bundle"); err == nil || !strings.Contains(err.Error(), "/no/such/bundle") {
		t.Errorf("an unreadable bundle: error %v, want one naming it", err)
	}
	// HoldAPIsExclusivelyOf: the kinds the CSV owns (whose CRDs the spec deletes) exclusively, those it
	// requires shared.
	events = nil
	release, err = HoldAPIsExclusivelyOf(context.Background(), recordingLocker{&events}, "spec X", bundles.Dir("gizmo-operator", "v0.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	release()
	want = []string{"lock exclusive [gizmo.fixtures.cleanup-e2e.io] shared [widget.fixtures.cleanup-e2e.io]", "release"}
	if !slices.Equal(events, want) {
		t.Errorf("HoldAPIsExclusivelyOf: events %q, want %q", events, want)
	}
}
