package extensioncleanup_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/extensioncleanup"
)

// versions are the widget-operator bundles in the catalog, oldest first, each replacing the one before;
// the last is withoutWidgetClasses of the one before it (an upgrade that drops a CRD).
var versions = []string{"0.1.0", "0.2.0", "0.3.0", "0.4.0"}

const classCRD = "widgetclasses.fixtures.cleanup-e2e.io"

// withoutWidgetClasses writes into t.TempDir() a copy of the bundle in from as version (replacing from's
// CSV) whose CSV no longer owns the widgetclasses CRD and has no manifest of it. The operator and its
// RBAC are from's, unchanged: the Deployment is not rolled, so what the upgrade does to the dropped
// CRD's CRs is OLM v1's doing alone.
func withoutWidgetClasses(t *testing.T, from, version string) (string, error) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(from)); err != nil {
		return "", err
	}
	if err := os.Remove(filepath.Join(dir, "manifests", "fixtures.cleanup-e2e.io_widgetclasses.yaml")); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "manifests", "widget-operator.clusterserviceversion.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	csv := map[string]any{}
	if err := yaml.Unmarshal(data, &csv); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	prev, _, _ := unstructured.NestedString(csv, "metadata", "name")
	owned, _, _ := unstructured.NestedSlice(csv, "spec", "customresourcedefinitions", "owned")
	var kept []any
	for _, o := range owned {
		if m, ok := o.(map[string]any); ok && m["name"] == classCRD {
			continue
		}
		kept = append(kept, o)
	}
	if len(kept) != len(owned)-1 {
		return "", fmt.Errorf("%s: CSV %s does not own %s", path, prev, classCRD)
	}
	for _, f := range []struct {
		v    any
		path []string
	}{
		{"widget-operator.v" + version, []string{"metadata", "name"}},
		{version, []string{"spec", "version"}},
		{prev, []string{"spec", "replaces"}},
		{kept, []string{"spec", "customresourcedefinitions", "owned"}},
	} {
		if err := unstructured.SetNestedField(csv, f.v, f.path...); err != nil {
			return "", err
		}
	}
	out, err := yaml.Marshal(csv)
	if err != nil {
		return "", err
	}
	return dir, os.WriteFile(path, out, 0o644)
}

// next is the version an upgrade from e.version goes to ("" at the last).
func (e *env) next() string {
	for i, v := range versions[:len(versions)-1] {
		if v == e.version {
			return versions[i+1]
		}
	}
	return ""
}

// upgrade sets the ClusterExtension's spec.source.catalog.version to to and waits until
// operator-controller installed it and the operator's Deployment is available again.
func (e *env) upgrade(ctx context.Context, t *testing.T, to string) {
	t.Helper()
	live := e.patchCE(ctx, t, func(ce *unstructured.Unstructured) {
		if err := unstructured.SetNestedField(ce.Object, to, "spec", "source", "catalog", "version"); err != nil {
			t.Fatal(err)
		}
	})
	err := intervals.Wait(ctx, intervals.OLMInstall, func() (bool, string) {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(e.ce), live); err != nil {
			return false, err.Error()
		}
		v, _, _ := unstructured.NestedString(live.Object, "status", "install", "bundle", "version")
		conds, _ := olmv1.Conditions(live)
		return v == to, fmt.Sprintf("installed bundle version %q; %s", v, olmv1.DescribeConditions(conds))
	})
	if err != nil {
		t.Fatalf("ClusterExtension %s upgraded from %s to %s: %v", e.ce.GetName(), e.version, to, err)
	}
	if err := kube.WaitDeploymentAvailable(ctx, e.c, e.depKey, intervals.Get(intervals.DeploymentAvailable)); err != nil {
		t.Fatalf("the operator after the upgrade to %s: %v", to, err)
	}
	e.version = to
}

// holdViolations waits until the controller holds the opted-in extension again (condition Holding for
// mode, the holder's reference on the operator's Deployment for delete-operands and on every CRD the
// extension installs) and returns what is still not held at the end of the wait, naming the object.
func (e *env) holdViolations(ctx context.Context, mode, after string) []string {
	if mode == "" {
		return nil
	}
	var missing []string
	_ = intervals.Wait(ctx, intervals.SpecStep, func() (bool, string) {
		missing = nil
		if c := e.condition(ctx); c == nil || c.Reason != extensioncleanup.ReasonHolding || !strings.HasPrefix(c.Message, mode) {
			missing = append(missing, fmt.Sprintf("ClusterExtension %s: condition %s is %v after %s, want %s for %q", e.ce.GetName(), extensioncleanup.ConditionType, describeCond(c), after, extensioncleanup.ReasonHolding, mode))
		}
		var held []metav1.Object
		if mode == extensioncleanup.ModeDeleteOperands {
			dep := &appsv1.Deployment{}
			if err := e.c.Get(ctx, e.depKey, dep); err != nil {
				missing = append(missing, fmt.Sprintf("Deployment %s after %s: %v", e.depKey, after, err))
			} else {
				held = append(held, dep)
			}
		}
		crds := &apiextensionsv1.CustomResourceDefinitionList{}
		if err := e.c.List(ctx, crds, client.MatchingLabels{"olm.operatorframework.io/owner-name": e.ce.GetName()}); err != nil {
			missing = append(missing, err.Error())
		}
		for i := range crds.Items {
			if crds.Items[i].DeletionTimestamp == nil {
				held = append(held, &crds.Items[i])
			}
		}
		for _, o := range held {
			if !heldByHolder(o) {
				missing = append(missing, fmt.Sprintf("%T %s: no owner reference to ClusterRole %s after %s (ownerReferences %v)", o, o.GetName(), extensioncleanup.DefaultHolderName, after, o.GetOwnerReferences()))
			}
		}
		return len(missing) == 0, strings.Join(missing, "; ")
	})
	return missing
}

func heldByHolder(o metav1.Object) bool {
	for _, r := range o.GetOwnerReferences() {
		if r.Kind == "ClusterRole" && r.Name == extensioncleanup.DefaultHolderName {
			return true
		}
	}
	return false
}

func describeCond(c *metav1.Condition) string {
	if c == nil {
		return "absent"
	}
	return fmt.Sprintf("%s=%s %s: %.200s", c.Type, c.Status, c.Reason, c.Message)
}

// restartOperatorController restarts operator-controller in the middle of whatever it is doing.
func (e *env) restartOperatorController(ctx context.Context, t *testing.T) {
	t.Helper()
	if err := e.m.RestartOperatorController(ctx); err != nil {
		t.Fatal(err)
	}
}

// terminateNamespace deletes namespace ns with the Widgets in it (the namespace controller deletes them,
// the operator finalizes them), waits until it is gone and creates it again. It returns the UIDs of the
// Widgets it took: their deletions are the namespace controller's, not a violation.
func (e *env) terminateNamespace(ctx context.Context, t *testing.T, ns string) map[types.UID]bool {
	t.Helper()
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(fixturesv1alpha1.GroupVersion.WithKind("WidgetList"))
	if err := e.c.List(ctx, l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	taken := map[types.UID]bool{}
	for i := range l.Items {
		w := &l.Items[i]
		taken[w.GetUID()] = true
		if contains(w.GetFinalizers(), foreignFinalizer) { // else the namespace stays Terminating
			removeFinalizer(ctx, t, e, w, foreignFinalizer)
		}
	}
	if err := e.c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	waitForWithin(ctx, t, intervals.GarbageCollecting, "namespace "+ns+" to go", func() (bool, string) {
		n := &corev1.Namespace{}
		err := e.c.Get(ctx, types.NamespacedName{Name: ns}, n)
		return apierrors.IsNotFound(err), fmt.Sprintf("namespace %s: phase %s, conditions %v, error %v", ns, n.Status.Phase, n.Status.Conditions, err)
	})
	if err := e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	var kept []*unstructured.Unstructured
	for _, w := range e.widgets {
		if w.GetNamespace() != ns {
			kept = append(kept, w)
		}
	}
	e.widgets = kept
	return taken
}

func waitForWithin(ctx context.Context, t *testing.T, n intervals.Name, what string, cond func() (bool, string)) {
	t.Helper()
	if err := intervals.Wait(ctx, n, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
