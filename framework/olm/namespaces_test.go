package olm_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
)

// A namespace of the same name that a previous spec deleted and that is still terminating is not
// "already there": EnsureNamespaces waits until it is gone and creates it anew, so objects can be
// created in it right after. Held terminating by a finalizer, the wait fails naming it.
func testEnsureNamespacesWaitsOutATerminatingNamespace(ctx context.Context, t *testing.T, c client.Client) {
	const name = "reused"
	held := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{"cleanup-e2e.io/test-hold"}}}
	must(t, c.Create(ctx, held))
	must(t, c.Delete(ctx, held))

	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	err := olm.EnsureNamespaces(short, c, name)
	if err == nil || !strings.Contains(err.Error(), "namespace reused is still terminating") || !strings.Contains(err.Error(), "test-hold") {
		t.Fatalf("a namespace held terminating must not count as ensured; want an error naming it and its finalizer, got %v", err)
	}

	must(t, c.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
		client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))))
	must(t, olm.EnsureNamespaces(ctx, c, name))
	if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "right-after"}}); err != nil {
		t.Fatalf("creating an object right after EnsureNamespaces: %v", err)
	}
}

// The caller's deadline can end the wait in the middle of a request (a loaded API server answers
// slowly), or client-go's rate limiter refuse a request whose turn would come after it: the error still
// says what was seen before — the namespace terminating and its finalizer — not the cut request's
// "context deadline exceeded" or "would exceed context deadline" (make test failed both ways under
// load before the wait kept the earlier cause).
func TestEnsureNamespacesSaysWhatHoldsTheNamespaceWhenTheDeadlineCutsARequest(t *testing.T) {
	for _, cut := range []struct {
		name string
		err  func(ctx context.Context, cancel context.CancelFunc) error
	}{
		{"the context ends", func(ctx context.Context, cancel context.CancelFunc) error { cancel(); return ctx.Err() }},
		{"the rate limiter sees the deadline", func(context.Context, context.CancelFunc) error {
			return errors.New("client rate limiter Wait returned an error: rate: Wait(n=1) would exceed context deadline")
		}},
	} {
		t.Run(cut.name, func(t *testing.T) {
			now := metav1.Now()
			held := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "reused", DeletionTimestamp: &now,
				Finalizers: []string{"cleanup-e2e.io/test-hold"}}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			creates := 0
			c := interceptor.NewClient(fake.NewClientBuilder().WithObjects(held).Build(), interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					switch creates++; creates {
					case 1:
						return c.Create(ctx, obj, opts...)
					case 2: // the deadline comes while the request is out
						return cut.err(ctx, cancel)
					default: // the wait went on after the cut
						cancel()
						return ctx.Err()
					}
				},
			})
			err := olm.EnsureNamespaces(ctx, c, "reused")
			if err == nil || !strings.Contains(err.Error(), "namespace reused is still terminating") || !strings.Contains(err.Error(), "test-hold") {
				t.Fatalf("want an error naming the terminating namespace and its finalizer, got %v", err)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
