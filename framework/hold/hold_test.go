package hold_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/cleanup-e2e/cleanup-e2e/framework/hold"
)

func configMap(name string, finalizers ...string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("ns")
	u.SetName(name)
	u.SetFinalizers(finalizers)
	return u
}

func TestPutAndReleaseKeepOtherFinalizers(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(configMap("held", "operator.example/cleanup")).Build()
	obj := configMap("held")
	for range 2 { // a second Put adds nothing
		if err := hold.Put(ctx, c, obj); err != nil {
			t.Fatal(err)
		}
	}
	live := configMap("held")
	_ = c.Get(ctx, ctrlclient.ObjectKeyFromObject(live), live)
	if got := live.GetFinalizers(); !slices.Equal(got, []string{"operator.example/cleanup", hold.Finalizer}) {
		t.Fatalf("after Put: finalizers %v", got)
	}
	if err := hold.Release(ctx, c, obj); err != nil {
		t.Fatal(err)
	}
	_ = c.Get(ctx, ctrlclient.ObjectKeyFromObject(live), live)
	if got := live.GetFinalizers(); !slices.Equal(got, []string{"operator.example/cleanup"}) {
		t.Fatalf("after Release: finalizers %v, want the operator's kept", got)
	}
}

func TestGoneObjects(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	if err := hold.Release(ctx, c, configMap("gone")); err != nil {
		t.Fatalf("releasing an object already gone must not fail: %v", err)
	}
	err := hold.Put(ctx, c, configMap("gone"))
	if err == nil || !strings.Contains(err.Error(), "ConfigMap ns/gone") {
		t.Fatalf("holding an object that is not there must fail naming it, got %v", err)
	}
}
