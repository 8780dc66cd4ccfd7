package specs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
)

// kindOnly is a Provider that only says which kind it is.
type kindOnly string

func (k kindOnly) Name() string                                 { return string(k) }
func (k kindOnly) Kind() string                                 { return string(k) }
func (kindOnly) RESTConfig() *rest.Config                       { return nil }
func (kindOnly) KubeconfigPath() string                         { return "" }
func (kindOnly) CollectArtifacts(context.Context, string) error { return nil }
func (kindOnly) Stop(context.Context) error                     { return nil }

// saysForeign is a Provider that says whether its cluster may hold objects no run created
// (cluster.ForeignObjects).
type saysForeign struct {
	kindOnly
	foreign bool
}

func (p saysForeign) MayHoldForeignObjects() bool { return p.foreign }

func widget(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("g.example.com/v1")
	u.SetKind("Widget")
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetUID(types.UID("uid-" + ns + "-" + name))
	return u
}

// On a team's own cluster (PROVIDER=existing) an AllNamespaces cleanup would delete every Widget in
// the cluster, the team's included: the uninstall is refused, naming them. The spec's own samples, a
// cluster the framework made, a namespaced mode or a CSV without the opt-in are not refused; a provider
// that does not say whether its cluster may hold others' objects is taken to (it may be anyone's).
func TestAnAllNamespacesCleanupOnAnExistingClusterRefusesOperandsTheSpecDidNotCreate(t *testing.T) {
	s := runtime.NewScheme()
	if err := operatorsv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	csv := &operatorsv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: "operators", Name: "widget.v1"}}
	csv.Spec.Cleanup.Enabled = true
	csv.Spec.CustomResourceDefinitions.Owned = []operatorsv1alpha1.CRDDescription{{Name: "widgets.g.example.com", Version: "v1", Kind: "Widget"}}
	sample, theirs := widget("spec-ns", "w1"), widget("team", "production-widget")
	existing, made := saysForeign{kindOnly("existing"), true}, saysForeign{kindOnly("kind"), false}
	for _, c := range []struct {
		name     string
		provider cluster.Provider
		mode     operatorsv1alpha1.InstallModeType
		cleanup  bool
		objects  []client.Object
		refused  bool
	}{
		{"a team's widget on an existing cluster", existing, operatorsv1alpha1.InstallModeTypeAllNamespaces, true, []client.Object{sample, theirs}, true},
		{"only the spec's samples", existing, operatorsv1alpha1.InstallModeTypeAllNamespaces, true, []client.Object{sample}, false},
		{"a cluster the framework made", made, operatorsv1alpha1.InstallModeTypeAllNamespaces, true, []client.Object{sample, theirs}, false},
		{"a provider that does not say", kindOnly("custom"), operatorsv1alpha1.InstallModeTypeAllNamespaces, true, []client.Object{sample, theirs}, true},
		{"a namespaced mode", existing, operatorsv1alpha1.InstallModeTypeOwnNamespace, true, []client.Object{sample, theirs}, false},
		{"no opt-in", existing, operatorsv1alpha1.InstallModeTypeAllNamespaces, false, []client.Object{sample, theirs}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			live := csv.DeepCopy()
			live.Spec.Cleanup.Enabled = c.cleanup
			var objs []client.Object
			objs = append(objs, live)
			for _, o := range c.objects {
				objs = append(objs, o.DeepCopyObject().(client.Object))
			}
			cl := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
			var failures []string
			r := &Installation{
				g:   gomega.NewGomega(func(msg string, _ ...int) { failures = append(failures, msg) }),
				in:  OperandCleanupSpecInput{Environment: func() cluster.Environment { return cluster.Environment{Provider: c.provider, Client: cl} }},
				c:   cl,
				l:   layout{mode: c.mode},
				csv: csv,
				ops: &operands{c: cl, items: []*unstructured.Unstructured{sample}},
			}
			r.refuseForeignOperands(context.Background())
			if refused := len(failures) > 0; refused != c.refused {
				t.Fatalf("refused: %v, want %v (%q)", refused, c.refused, failures)
			}
			if c.refused && (!strings.Contains(failures[0], "Widget team/production-widget") || strings.Contains(failures[0], "w1")) {
				t.Fatalf("the refusal must name the team's widget and not the spec's sample: %s", failures[0])
			}
		})
	}
}

// removeCSV (a spec's teardown, also of an install that failed) turns the CSV's cleanup off before it
// deletes it, so that deleting it deletes no operands, and retries that on a conflict.
func TestRemovingASpecsCSVDisablesItsCleanupFirst(t *testing.T) {
	s := runtime.NewScheme()
	if err := operatorsv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	csv := &operatorsv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: "op", Name: "widget.v1", UID: "u1"}}
	csv.Spec.Cleanup.Enabled = true
	var steps []string
	conflicts := 1
	cl := fake.NewClientBuilder().WithScheme(s).WithObjects(csv).WithInterceptorFuncs(interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if conflicts > 0 {
				conflicts--
				return apierrors.NewConflict(schema.GroupResource{Resource: "clusterserviceversions"}, obj.GetName(), errors.New("injected"))
			}
			steps = append(steps, fmt.Sprintf("update cleanup=%v", obj.(*operatorsv1alpha1.ClusterServiceVersion).Spec.Cleanup.Enabled))
			return c.Update(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			steps = append(steps, "delete")
			return c.Delete(ctx, obj, opts...)
		},
	}).Build()
	r := &Installation{t: FromTesting(t), c: cl}
	r.removeCSV(context.Background(), types.NamespacedName{Namespace: "op", Name: "widget.v1"})
	if strings.Join(steps, ", ") != "update cleanup=false, delete" {
		t.Fatalf("steps %q, want the cleanup disabled (after a conflict), then the delete", steps)
	}
}
