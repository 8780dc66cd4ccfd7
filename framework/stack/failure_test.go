package stack

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
)

func crdNamed(name, group string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: group, Scope: "Namespaced",
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "x", Kind: "X", ListKind: "XList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true}}}}
}

// A failed Ensure removes what it created, not the footprint: the footprint is what the specs of
// every run create, and another run's spec applied its CRD while this Ensure ran. The failure path
// deleted it (and so its custom resources); only Stop, as the last run alive, may.
func TestAFailedEnsureLeavesTheFootprintOtherRunsMade(t *testing.T) {
	other := crdNamed("widgets.shared.test", "shared.test")
	c := fake.NewClientBuilder().WithScheme(kube.MustScheme()).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if obj.GetName() == "gadgets.mine.test" {
				if err := c.Create(ctx, other.DeepCopy()); err != nil { // meanwhile, another run's spec
					return err
				}
				return apierrors.NewForbidden(schema.GroupResource{}, obj.GetName(), errors.New("injected"))
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	_, err := Ensure(context.Background(), Input{Client: c, Log: logr.Discard(), Timeout: 2 * time.Second,
		Components: Components{CRDs: []*apiextensionsv1.CustomResourceDefinition{crdNamed("gadgets.mine.test", "mine.test")},
			Footprint: Footprint{CRDGroups: []string{"shared.test"}}}})
	if err == nil {
		t.Fatal("Ensure succeeded; want the injected Forbidden")
	}
	if gerr := c.Get(context.Background(), client.ObjectKey{Name: other.Name}, &apiextensionsv1.CustomResourceDefinition{}); gerr != nil {
		t.Fatalf("the failed Ensure removed %s, which another run created meanwhile: %v", other.Name, gerr)
	}
}

// A CRD someone else creates between the stack's look and its Create (Create answers AlreadyExists)
// is theirs: it was recorded as the run's, and Teardown deleted it.
func TestACRDSomeoneElseCreatedFirstIsNotTheRuns(t *testing.T) {
	mine := crdNamed("gadgets.mine.test", "mine.test")
	c := fake.NewClientBuilder().WithScheme(kube.MustScheme()).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if obj.GetName() == mine.Name {
				theirs := mine.DeepCopy()
				theirs.UID = "theirs"
				if err := c.Create(ctx, theirs); err != nil {
					return err
				}
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	log := logr.Discard()
	s := &Stack{in: Input{Log: log}, c: c, ledger: &ledger{c: c, log: log, timeout: time.Second}}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond) // the fake never serves the kind
	defer cancel()
	_, _ = s.ensureCRDs(ctx, []*apiextensionsv1.CustomResourceDefinition{mine})
	if created := s.Created(); len(created) > 0 {
		t.Fatalf("the stack records %v as created; the CRD was someone else's", created)
	}
}
