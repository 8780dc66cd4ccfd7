package olmv1_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
)

// TestClusterExtensionForegroundDeletion deletes the ClusterExtension with propagationPolicy
// Foreground (kubectl delete --cascade=foreground) and gives each Widget its verdict.
//
// Foreground deletion orders nothing among the dependents (docs/olm-v1.md): the garbage collector
// deletes the Deployment, ServiceAccount, RBAC and CRDs at once, as with background deletion, so the
// same upstream race decides each Widget. What it adds: the ClusterExtension stays (finalizer
// foregroundDeletion) until every blocking dependent is gone, and the widgets CRD never goes while a
// Widget is stuck, so the ClusterExtension stays Terminating too. Asserted: the uninstall is not clean
// (some Widget stuck, none left undeleted), the CRD Terminating, the ClusterExtension still there with
// the foregroundDeletion finalizer.
func TestClusterExtensionForegroundDeletion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	in := install(ctx, t)
	c := in.c
	deleted := time.Now()
	if err := c.Delete(ctx, in.ce, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	waitOperatorGone(ctx, t, in, deleted)
	verdicts, err := olmv1.Judge(ctx, c, in.widgets, widget.Finalized)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s after deleting ClusterExtension %s (Foreground):\n%s", time.Since(deleted).Round(time.Millisecond), in.ce.GetName(), olmv1.Report(verdicts))
	expectUninstallNotClean(ctx, t, c, "a foreground deletion of a ClusterExtension", verdicts)
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(olmv1.ClusterExtensionGVK)
	if err := c.Get(ctx, client.ObjectKeyFromObject(in.ce), live); err != nil {
		t.Errorf("ClusterExtension %s: want it Terminating (foregroundDeletion) while the CRD it owns is stuck, got %v", in.ce.GetName(), err)
	} else {
		t.Logf("ClusterExtension %s: deletionTimestamp %v, finalizers %v", live.GetName(), live.GetDeletionTimestamp(), live.GetFinalizers())
		if live.GetDeletionTimestamp() == nil || !slices.Contains(live.GetFinalizers(), metav1.FinalizerDeleteDependents) {
			t.Errorf("ClusterExtension %s: want it Terminating with finalizer %s while the CRD it owns is stuck, got deletionTimestamp %v, finalizers %v",
				live.GetName(), metav1.FinalizerDeleteDependents, live.GetDeletionTimestamp(), live.GetFinalizers())
		}
	}
	if t.Failed() {
		t.Logf("widget-operator's log is under %s", in.p.Runtime().LogDir())
	}
}

// TestObjectsLeftAfterUninstall takes an inventory of what the install made (every object the
// ClusterExtension owns, directly or through the release's index Secret: the Deployment,
// ServiceAccount, RBAC, CRDs, the helm release Secrets in olmv1-system; plus the install namespace and
// the installer ServiceAccount and ClusterRoleBinding), deletes the ClusterExtension (background) and
// names what is left once the garbage collector is done: the install namespace, the installer
// ServiceAccount and its binding (OLM v1 never removes them, docs/olm-v1.md) and the widgets CRD,
// Terminating behind its stuck Widgets; everything else owned goes.
func TestObjectsLeftAfterUninstall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	in := install(ctx, t)
	c := in.c
	live := liveExtension(ctx, t, in)
	inv, err := inventory(ctx, c, live.GetUID())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("inventory of the install (%d objects):\n  %s", len(inv), strings.Join(inv, "\n  "))
	for _, want := range []string{"Deployment " + installNS + "/" + deployment, "ServiceAccount " + installNS + "/" + deployment,
		"CustomResourceDefinition " + widgetCRD, "CustomResourceDefinition widgetclasses.fixtures.cleanup-e2e.io"} {
		if !slices.Contains(inv, want) {
			t.Errorf("inventory: want %s among what the install made, got:\n  %s", want, strings.Join(inv, "\n  "))
		}
	}
	for _, kind := range []string{"ClusterRole ", "ClusterRoleBinding ", "Secret " + olmv1.SystemNamespace + "/"} {
		if !slices.ContainsFunc(inv, func(s string) bool { return strings.HasPrefix(s, kind) && !strings.Contains(s, installer) }) {
			t.Errorf("inventory: want a %s… owned by the ClusterExtension, got:\n  %s", kind, strings.Join(inv, "\n  "))
		}
	}
	verdicts := deleteAndJudge(ctx, t, in)
	// The widgets CRD stays while a Widget is stuck (every one, as measured; the race of
	// TestClusterExtensionDeletion can finalize them all, and then it goes too).
	stuck := slices.ContainsFunc(verdicts, func(v olmv1.CRVerdict) bool { return v.Verdict == olmv1.StuckTerminating })
	wantLeft := []string{"ClusterRoleBinding " + installNS + "-" + installer + "-cluster-admin"}
	if stuck {
		wantLeft = append(wantLeft, "CustomResourceDefinition "+widgetCRD)
	}
	wantLeft = append(wantLeft, "Namespace "+installNS, "ServiceAccount "+installNS+"/"+installer)
	var left []string
	err = intervals.Wait(ctx, intervals.GarbageCollecting, func() (bool, string) {
		left = left[:0]
		for _, k := range inv {
			ok, err := exists(ctx, c, k)
			if err != nil {
				return false, err.Error()
			}
			if ok {
				left = append(left, k)
			}
		}
		return slices.Equal(left, wantLeft), fmt.Sprintf("left: %v", left)
	})
	t.Logf("after deleting ClusterExtension %s, left of the inventory (%d of %d):\n  %s",
		in.ce.GetName(), len(left), len(inv), strings.Join(left, "\n  "))
	if err != nil {
		t.Errorf("OLM v1 %s changed what an uninstall leaves: want left exactly %v (the install namespace, the installer and its binding, the widgets CRD if a Widget is stuck), got %v; verdicts:\n%s",
			olmv1.Version, wantLeft, left, olmv1.Report(verdicts))
	}
}

// TestReinstallAfterUninstall deletes the ClusterExtension (background), waits for the uninstall to
// settle (Widgets stuck, the widgets CRD Terminating) and creates a ClusterExtension of the same name
// and package again.
//
// Measured on v1.2.0: the first apply fails, Progressing=True Retrying "cannot patch
// widgets.fixtures.cleanup-e2e.io … metadata.ownerReferences: Invalid value … Only one reference can
// have Controller set to true" (the Terminating CRD still names the deleted ClusterExtension, same name,
// other UID), Installed=False; but helm creates what is missing (Deployment, ServiceAccount, RBAC), so
// the operator runs again, finalizes the stuck Widgets, the CRD's cleanup ends and the CRD goes; the
// retry creates it anew and the ClusterExtension is Installed. Asserted: Installed=True, every Widget
// finalized by its operator, the widgets CRD there, not Terminating, a new one (another UID).
func TestReinstallAfterUninstall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	in := install(ctx, t)
	c := in.c
	verdicts := deleteAndJudge(ctx, t, in)
	old := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, types.NamespacedName{Name: widgetCRD}, old); err != nil {
		t.Logf("CRD %s before the reinstall: %v", widgetCRD, err)
	} else {
		t.Logf("CRD %s before the reinstall: uid %s, deletionTimestamp %v", widgetCRD, old.UID, old.DeletionTimestamp)
	}

	ce := olmv1.ClusterExtension(in.ce.GetName(), installNS, installer, "widget-operator", "0.1.0")
	created := time.Now()
	if err := c.Create(ctx, ce); err != nil {
		t.Fatal(err)
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(olmv1.ClusterExtensionGVK)
	var timeline []string
	last := ""
	err := waitConditions(ctx, c, intervals.SpecStep, ce, live, func(conds []metav1.Condition) (bool, string) {
		s := ""
		for _, typ := range []string{"Progressing", "Installed"} {
			if cond := meta.FindStatusCondition(conds, typ); cond != nil {
				s += fmt.Sprintf("%s=%s %s: %s; ", typ, cond.Status, cond.Reason, cond.Message)
			}
		}
		if s != last {
			timeline = append(timeline, fmt.Sprintf("+%s %s", time.Since(created).Round(time.Millisecond), s))
			last = s
		}
		return meta.IsStatusConditionTrue(conds, "Installed"), s
	})
	t.Logf("ClusterExtension %s again, its conditions:\n  %s", ce.GetName(), strings.Join(timeline, "\n  "))
	if err != nil {
		t.Errorf("OLM v1 %s changed what a reinstall after an uninstall does: want ClusterExtension %s Installed=True (measured: after a Retrying on the Terminating CRD), got: %v; conditions:\n  %s",
			olmv1.Version, ce.GetName(), err, strings.Join(timeline, "\n  "))
	}
	verdicts, err = olmv1.Judge(ctx, c, in.widgets, widget.Finalized)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after the reinstall:\n%s", olmv1.Report(verdicts))
	for _, v := range verdicts {
		if v.Verdict != olmv1.Finalized {
			t.Errorf("want every Widget stuck by the uninstall %q once the reinstall runs the operator again; got:\n%s", olmv1.Finalized, olmv1.Report(verdicts))
			break
		}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, types.NamespacedName{Name: widgetCRD}, crd); err != nil {
		t.Errorf("CRD %s after the reinstall: %v", widgetCRD, err)
	} else {
		t.Logf("CRD %s after the reinstall: uid %s, deletionTimestamp %v", widgetCRD, crd.UID, crd.DeletionTimestamp)
		if crd.DeletionTimestamp != nil || crd.UID == old.UID {
			t.Errorf("CRD %s after the reinstall: want a new one (not uid %s), not Terminating; got uid %s, deletionTimestamp %v", widgetCRD, old.UID, crd.UID, crd.DeletionTimestamp)
		}
	}
	if !t.Failed() {
		secondExtensionRefused(ctx, t, c)
	}
	if t.Failed() {
		t.Logf("widget-operator's log is under %s", in.p.Runtime().LogDir())
	}
}

// secondExtensionRefused creates a second ClusterExtension of the installed package (another name, the
// same namespace). helm refuses the objects the first one's release owns, and operator-controller
// replaces helm's reason with "… already exists … cannot be managed by operator-controller":
// ExplainInstallConflict must give the reason back from the object it names (its release-name
// annotation is the first ClusterExtension's), and WaitCondition's failure must carry it.
func secondExtensionRefused(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	second := olmv1.ClusterExtension("widget-again", installNS, installer, "widget-operator", "0.1.0")
	if err := c.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(olmv1.ClusterExtensionGVK)
	why := ""
	err := waitConditions(ctx, c, intervals.SpecStep, second, live, func(conds []metav1.Condition) (bool, string) {
		why = olmv1.ExplainInstallConflict(ctx, c, live, conds)
		return why != "", olmv1.DescribeConditions(conds)
	})
	want := `annotation meta.helm.sh/release-name is "widget" (want "widget-again")`
	if err != nil || !strings.Contains(why, want) || !strings.Contains(why, "It is ClusterExtension widget's") {
		t.Errorf("a second ClusterExtension of the package: want operator-controller's install conflict explained with %q; got %q (wait: %v)", want, why, err)
	}
	t.Logf("a second ClusterExtension of the package: %s", why)
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := olmv1.WaitCondition(short, c, intervals.OLMInstall, second, "Installed"); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("WaitCondition on the refused ClusterExtension: want its error to carry %q, got %v", want, err)
	}
	if err := c.Delete(ctx, second); err != nil {
		t.Fatal(err)
	}
	if err := intervals.Wait(ctx, intervals.Gone, func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(second), live)
		return apierrors.IsNotFound(err), fmt.Sprintf("ClusterExtension %s still there (finalizers %v, error %v)", second.GetName(), live.GetFinalizers(), err)
	}); err != nil {
		t.Error(err)
	}
}

// waitOperatorGone waits until the operator's Deployment is gone, the local runtime no longer runs it
// and every Widget is gone or pending deletion; unlike waitSettled, the ClusterExtension may stay.
func waitOperatorGone(ctx context.Context, t *testing.T, in installed, deleted time.Time) {
	t.Helper()
	last := ""
	err := intervals.Wait(ctx, intervals.GarbageCollecting, func() (bool, string) {
		done, why := operatorGone(ctx, in)
		if why != last {
			t.Logf("+%s %s", time.Since(deleted).Round(time.Millisecond), why)
			last = why
		}
		return done, why
	})
	if err != nil {
		t.Fatalf("the operator to be gone after deleting ClusterExtension %s: %v", in.ce.GetName(), err)
	}
}

func operatorGone(ctx context.Context, in installed) (bool, string) {
	dep := &appsv1.Deployment{}
	if err := in.c.Get(ctx, in.depKey, dep); !apierrors.IsNotFound(err) {
		return false, fmt.Sprintf("Deployment %s still there (deletionTimestamp %v, finalizers %v, error %v)", in.depKey, dep.DeletionTimestamp, dep.Finalizers, err)
	}
	if slices.Contains(in.p.Runtime().Running(), in.depKey) {
		return false, fmt.Sprintf("the local runtime still runs %s", in.depKey)
	}
	for _, w := range in.widgets {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(w.GroupVersionKind())
		err := in.c.Get(ctx, client.ObjectKeyFromObject(w), live)
		if err == nil && live.GetDeletionTimestamp() == nil {
			return false, fmt.Sprintf("Widget %s/%s not deleted yet", w.GetNamespace(), w.GetName())
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return false, err.Error()
		}
	}
	return true, "operator gone, every Widget deleted"
}

// inventoried are the kinds an install of a registry+v1 bundle makes (docs/olm-v1.md) and the
// installer's; the namespaced ones are listed cluster-wide.
var inventoried = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Version: "v1", Kind: "ServiceAccount"},
	{Version: "v1", Kind: "Secret"},
	{Version: "v1", Kind: "ConfigMap"},
	{Version: "v1", Kind: "Service"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
	{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
}

// inventory is "Kind ns/name" (or "Kind name") of every object of the inventoried kinds owned by
// owner, directly or through another such object (the release's chunk Secrets), plus the install
// namespace, the installer ServiceAccount and its ClusterRoleBinding; sorted.
func inventory(ctx context.Context, c client.Client, owner types.UID) ([]string, error) {
	type obj struct {
		key    string
		uid    types.UID
		owners []metav1.OwnerReference
	}
	var all []obj
	for _, gvk := range inventoried {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, l); err != nil {
			return nil, fmt.Errorf("list %s: %w", gvk.Kind, err)
		}
		for _, o := range l.Items {
			all = append(all, obj{key: objKey(gvk.Kind, o.GetNamespace(), o.GetName()), uid: o.GetUID(), owners: o.GetOwnerReferences()})
		}
	}
	owned := map[types.UID]bool{owner: true}
	out := []string{
		"Namespace " + installNS,
		"ServiceAccount " + installNS + "/" + installer,
		"ClusterRoleBinding " + installNS + "-" + installer + "-cluster-admin",
	}
	for changed := true; changed; {
		changed = false
		for _, o := range all {
			if owned[o.uid] {
				continue
			}
			for _, r := range o.owners {
				if owned[r.UID] {
					owned[o.uid] = true
					out = append(out, o.key)
					changed = true
					break
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

func objKey(kind, ns, name string) string {
	if ns == "" {
		return kind + " " + name
	}
	return kind + " " + ns + "/" + name
}

// exists says whether the object of an inventory key is still there (pending deletion or not).
func exists(ctx context.Context, c client.Client, key string) (bool, error) {
	kind, ref, _ := strings.Cut(key, " ")
	ns, name, ok := strings.Cut(ref, "/")
	if !ok {
		ns, name = "", ref
	}
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	for _, g := range inventoried {
		if g.Kind == kind {
			gvk = g
		}
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}
