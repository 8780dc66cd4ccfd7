package olmv1_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/olmv1fixtures"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
)

// TestGizmoExtensionRefused tries to install gizmo-operator v0.1.0 (bundles/gizmo-operator: it
// creates a Widget for each Gizmo, so its catalog entry declares olm.gvk.required on Widget) as a
// second ClusterExtension next to widget-operator. OLM v1 v1.2.0 refuses the bundle: it supports no
// dependencies, and a bundle declaring one is not installed ("has a dependency declared via property
// \"olm.gvk.required\" which is currently not supported", Installed=False). So the gizmo case of
// issue 53 needs a bundle variant without the property; this asserts the refusal, so an upstream that
// accepts it fails here and the case can be written.
func TestGizmoExtensionRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	in := install(ctx, t)
	c := in.c
	gce := olmv1.ClusterExtension("gizmo", installNS, installer, "gizmo-operator", "0.1.0")
	created := time.Now()
	if err := c.Create(ctx, gce); err != nil {
		t.Fatal(err)
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(olmv1.ClusterExtensionGVK)
	const want = `has a dependency declared via property "olm.gvk.required" which is currently not supported`
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	summary := ""
	err := waitConditions(wctx, c, intervals.SpecStep, gce, live, func(conds []metav1.Condition) (bool, string) {
		summary = ""
		for _, typ := range []string{"Progressing", "Installed"} {
			if cond := meta.FindStatusCondition(conds, typ); cond != nil {
				summary += fmt.Sprintf("%s=%s %s: %s; ", typ, cond.Status, cond.Reason, cond.Message)
			}
		}
		p := meta.FindStatusCondition(conds, "Progressing")
		return (p != nil && strings.Contains(p.Message, want)) || meta.IsStatusConditionTrue(conds, "Installed"), summary
	})
	t.Logf("+%s ClusterExtension %s: %s", time.Since(created).Round(time.Millisecond), gce.GetName(), summary)
	conds, _ := olmv1.Conditions(live)
	p := meta.FindStatusCondition(conds, "Progressing")
	if err != nil || meta.IsStatusConditionTrue(conds, "Installed") || p == nil || !strings.Contains(p.Message, want) {
		t.Errorf("OLM v1 %s changed how it treats a bundle with olm.gvk.required: want ClusterExtension %s not Installed, Progressing saying %q; got %s (wait: %v)",
			olmv1.Version, gce.GetName(), want, summary, err)
	}
	if err := c.Get(ctx, types.NamespacedName{Name: "gizmos.fixtures.cleanup-e2e.io"}, &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
		t.Errorf("CRD gizmos.fixtures.cleanup-e2e.io: want none made for a refused bundle, got error %v", err)
	}
}

// TestResourcePolicyKeepCRD installs a variant of widget-operator v0.1.0 whose widgets CRD carries
// helm.sh/resource-policy: keep (the bundle image replaced in the registry before the catalog is made),
// deletes the ClusterExtension (background) and gives each Widget its verdict. Upstream (docs/olm-v1.md):
// a kept object gets the operator-sdk/primary-resource annotations instead of an owner reference, so
// the garbage collector leaves the CRD and with it the Widgets. Measured and asserted: every Widget not
// deleted, still carrying the finalizer of an operator that is gone (so deleting one later sticks), the
// widgets CRD left, the widgetclasses CRD (not marked) gone.
func TestResourcePolicyKeepCRD(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	in := installWith(ctx, t, func(ctx context.Context, reg *olmv1.Registry) error {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(bundles.Dir("widget-operator", "0.1.0"))); err != nil {
			return err
		}
		crdFile := filepath.Join(dir, "manifests", "fixtures.cleanup-e2e.io_widgets.yaml")
		data, err := os.ReadFile(crdFile)
		if err != nil {
			return err
		}
		const at = "metadata:\n  annotations:\n"
		if !bytes.Contains(data, []byte(at)) {
			return fmt.Errorf("%s: no %q to add the annotation under", crdFile, at)
		}
		data = bytes.Replace(data, []byte(at), []byte(at+"    helm.sh/resource-policy: keep\n"), 1)
		if err := os.WriteFile(crdFile, data, 0o644); err != nil {
			return err
		}
		return reg.PushBundle(ctx, dir, olmv1fixtures.BundleRef(reg, "widget-operator", "v0.1.0"))
	})
	c := in.c
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, types.NamespacedName{Name: widgetCRD}, crd); err != nil {
		t.Fatal(err)
	}
	t.Logf("CRD %s installed: annotations %v, ownerReferences %v", widgetCRD, crd.Annotations, crd.OwnerReferences)
	if crd.Annotations["helm.sh/resource-policy"] != "keep" || len(crd.OwnerReferences) != 0 || crd.Annotations["operator-sdk/primary-resource"] == "" {
		t.Fatalf("CRD %s from the variant bundle: want helm.sh/resource-policy: keep, operator-sdk/primary-resource and no ownerReference, got annotations %v, ownerReferences %v",
			widgetCRD, crd.Annotations, crd.OwnerReferences)
	}
	deleted := time.Now()
	if err := c.Delete(ctx, in.ce); err != nil {
		t.Fatal(err)
	}
	waitSettledKept(ctx, t, in, deleted)
	verdicts, err := olmv1.Judge(ctx, c, in.widgets, widget.Finalized)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s after deleting ClusterExtension %s:\n%s", time.Since(deleted).Round(time.Millisecond), in.ce.GetName(), olmv1.Report(verdicts))
	for _, v := range verdicts {
		if v.Verdict != olmv1.NotDeleted {
			t.Errorf("OLM v1 %s changed what deleting a ClusterExtension does to the CRs of a CRD marked keep: want every Widget %q (the CRD stays, the operator is gone, the Widgets keep its finalizer), got:\n%s",
				olmv1.Version, olmv1.NotDeleted, olmv1.Report(verdicts))
			break
		}
	}
	if err := c.Get(ctx, types.NamespacedName{Name: widgetCRD}, crd); err != nil || crd.DeletionTimestamp != nil {
		t.Errorf("CRD %s marked keep: want it left, not Terminating, after deleting ClusterExtension %s; got error %v, deletionTimestamp %v", widgetCRD, in.ce.GetName(), err, crd.DeletionTimestamp)
	}
	if err := c.Get(ctx, types.NamespacedName{Name: "widgetclasses.fixtures.cleanup-e2e.io"}, &apiextensionsv1.CustomResourceDefinition{}); err == nil {
		err = intervals.Wait(ctx, intervals.GarbageCollecting, func() (bool, string) {
			err := c.Get(ctx, types.NamespacedName{Name: "widgetclasses.fixtures.cleanup-e2e.io"}, &apiextensionsv1.CustomResourceDefinition{})
			return apierrors.IsNotFound(err), fmt.Sprintf("CRD widgetclasses still there (error %v)", err)
		})
		if err != nil {
			t.Errorf("CRD widgetclasses.fixtures.cleanup-e2e.io (not marked keep): want it gone with the ClusterExtension: %v", err)
		}
	}
}

// waitSettledKept is waitSettled without waiting for the Widgets to be deleted.
func waitSettledKept(ctx context.Context, t *testing.T, in installed, deleted time.Time) {
	t.Helper()
	last := ""
	err := intervals.Wait(ctx, intervals.GarbageCollecting, func() (bool, string) {
		why := "settled"
		if err := in.c.Get(ctx, client.ObjectKeyFromObject(in.ce), in.ce.DeepCopy()); !apierrors.IsNotFound(err) {
			why = fmt.Sprintf("ClusterExtension %s still there (error %v)", in.ce.GetName(), err)
		} else if err := in.c.Get(ctx, in.depKey, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
			why = fmt.Sprintf("Deployment %s still there (error %v)", in.depKey, err)
		} else if slices.Contains(in.p.Runtime().Running(), in.depKey) {
			why = fmt.Sprintf("the local runtime still runs %s", in.depKey)
		}
		if why != last {
			t.Logf("+%s %s", time.Since(deleted).Round(time.Millisecond), why)
			last = why
		}
		return why == "settled", why
	})
	if err != nil {
		t.Fatalf("the uninstall to settle after deleting ClusterExtension %s: %v", in.ce.GetName(), err)
	}
}

// TestUpgradeDropsACRD installs widget-operator v0.1.0 with a WidgetClass (cluster-scoped, the
// operator's finalizer and record on it), then upgrades the ClusterExtension to a variant of v0.2.0
// without the widgetclasses CRD (the bundle image replaced through installWith). Upstream
// (docs/olm-v1.md): helm's upgrade deletes what the new release drops, the preflight does not look at
// a dropped CRD, so the CRD goes and takes its WidgetClasses with it, with the operator running.
// Measured: v0.2.0 Installed 0.5 s after the update, the CRD Terminating, the WidgetClass finalized by
// its operator, the CRD gone; no preflight or condition mentions the dropped CRD or its CRs.
func TestUpgradeDropsACRD(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const classCRD = "widgetclasses.fixtures.cleanup-e2e.io"
	in := installWith(ctx, t, func(ctx context.Context, reg *olmv1.Registry) error {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(bundles.Dir("widget-operator", "0.2.0"))); err != nil {
			return err
		}
		if err := os.Remove(filepath.Join(dir, "manifests", "fixtures.cleanup-e2e.io_widgetclasses.yaml")); err != nil {
			return err
		}
		return reg.PushBundle(ctx, dir, olmv1fixtures.BundleRef(reg, "widget-operator", "v0.2.0"))
	})
	c := in.c
	wc := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	wc.SetGroupVersionKind(fixturesv1alpha1.GroupVersion.WithKind("WidgetClass"))
	wc.SetName("c1")
	if err := c.Create(ctx, wc); err != nil {
		t.Fatal(err)
	}
	err := intervals.Wait(ctx, intervals.SpecStep, func() (bool, string) {
		err := widget.Reconciled(ctx, c, wc)
		return err == nil, fmt.Sprint(err)
	})
	if err != nil {
		t.Fatalf("widget-operator to put its finalizer and record on WidgetClass %s: %v", wc.GetName(), err)
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(olmv1.ClusterExtensionGVK)
	if err := c.Get(ctx, client.ObjectKeyFromObject(in.ce), live); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(live.Object, "0.2.0", "spec", "source", "catalog", "version"); err != nil {
		t.Fatal(err)
	}
	upgraded := time.Now()
	if err := c.Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	var timeline []string
	last := ""
	err = waitConditions(ctx, c, intervals.SpecStep, in.ce, live, func(conds []metav1.Condition) (bool, string) {
		v, _, _ := unstructured.NestedString(live.Object, "status", "install", "bundle", "version")
		crdState := "there"
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, types.NamespacedName{Name: classCRD}, crd); apierrors.IsNotFound(err) {
			crdState = "gone"
		} else if crd.DeletionTimestamp != nil {
			crdState = "Terminating"
		}
		inst := meta.FindStatusCondition(conds, "Installed")
		s := fmt.Sprintf("installed bundle %s, CRD %s", v, crdState)
		if p := meta.FindStatusCondition(conds, "Progressing"); p != nil {
			s += fmt.Sprintf(", Progressing=%s %s: %.200s", p.Status, p.Reason, p.Message)
		}
		if s != last {
			timeline = append(timeline, fmt.Sprintf("+%s %s", time.Since(upgraded).Round(time.Millisecond), s))
			last = s
		}
		return v == "0.2.0" && inst != nil && inst.Status == metav1.ConditionTrue && crdState != "there", s
	})
	t.Logf("upgrade to 0.2.0 without %s:\n  %s", classCRD, strings.Join(timeline, "\n  "))
	if err != nil {
		t.Fatalf("the upgrade: %v", err)
	}
	if err := intervals.Wait(ctx, intervals.DeploymentAvailable, func() (bool, string) {
		u := wc.DeepCopy()
		err := c.Get(ctx, client.ObjectKeyFromObject(wc), u)
		return apierrors.IsNotFound(err) || (err == nil && u.GetDeletionTimestamp() != nil && time.Since(upgraded) > 5*time.Second), fmt.Sprint(err)
	}); err != nil {
		t.Fatal(err)
	}
	verdicts, err := olmv1.Judge(ctx, c, []*unstructured.Unstructured{wc}, widget.Finalized)
	if err != nil {
		t.Fatal(err)
	}
	wverdicts, err := olmv1.Judge(ctx, c, in.widgets, widget.Finalized)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s after the upgrade:\n%s\nthe Widgets (their CRD kept by v0.2.0):\n%s", time.Since(upgraded).Round(time.Millisecond), olmv1.Report(verdicts), olmv1.Report(wverdicts))
	// As measured: the WidgetClass finalized by its operator (it runs through the upgrade). A restart of
	// the operator for the new version could leave it stuck for a while: what must hold is that the
	// upgrade deleted it.
	for _, v := range verdicts {
		if v.Verdict != olmv1.Finalized && v.Verdict != olmv1.StuckTerminating {
			t.Errorf("OLM v1 %s changed what an upgrade dropping a CRD does to its CRs: want WidgetClass %s deleted with the CRD (finalized by its operator, as measured), got:\n%s",
				olmv1.Version, v.Name, olmv1.Report(verdicts))
		}
	}
	for _, v := range wverdicts {
		if v.Verdict != olmv1.NotDeleted {
			t.Errorf("want each Widget untouched by an upgrade that keeps its CRD, got:\n%s", olmv1.Report(wverdicts))
			break
		}
	}
	if verdicts[0].Verdict == olmv1.Finalized {
		err := intervals.Wait(ctx, intervals.GarbageCollecting, func() (bool, string) {
			err := c.Get(ctx, types.NamespacedName{Name: classCRD}, &apiextensionsv1.CustomResourceDefinition{})
			return apierrors.IsNotFound(err), fmt.Sprintf("CRD %s still there (error %v)", classCRD, err)
		})
		if err != nil {
			t.Errorf("CRD %s dropped by the upgrade: want it gone once its WidgetClass is: %v", classCRD, err)
		}
	}
}
