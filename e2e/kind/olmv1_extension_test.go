package kind

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
	"github.com/cleanup-e2e/cleanup-e2e/framework/podlogs"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
)

// widgetExtension is widget-operator v0.1.0 installed by a ClusterExtension, with reconciled Widgets
// in two namespaces.
type widgetExtension struct {
	ce      *unstructured.Unstructured
	ns      string // the install namespace
	widgets []*unstructured.Unstructured
	// log is what the operator's pods wrote since the install (followed: the uninstall deletes them).
	log *podlogs.Follower
}

// judge gives each Widget its verdict (olmv1.Judge), quoting what the operator said last about it, and
// naming for one removed before its operator ran the write that let it go (the node's audit log).
func (x *widgetExtension) judge(ctx context.Context) []olmv1.CRVerdict {
	opts := []olmv1.JudgeOption{olmv1.OperatorLog(func() (string, error) {
		return x.log.Text(intervals.Get(intervals.Request)), nil
	})}
	if a, ok := provider.(cluster.AuditLogs); ok {
		opts = append(opts, olmv1.AuditLog(a.AuditLog))
	}
	verdicts, err := olmv1.Judge(ctx, k8s, x.widgets, widget.Finalized, opts...)
	Expect(err).NotTo(HaveOccurred())
	return verdicts
}

// installWidgetExtension holds widget-operator's APIs exclusively, removes CRDs another install left (OLM v0 keeps
// them; helm refuses to adopt them), installs widget-operator v0.1.0 through a ClusterExtension and
// creates two Widgets in each of two namespaces, returning once the operator has reconciled each. Its
// cleanups remove what the spec leaves (stuck Widgets' finalizers too) before the APIs are released.
func installWidgetExtension(ctx context.Context) *widgetExtension {
	// Exclusively: the spec deletes widget-operator's CRDs, and an OLM v0 spec of another suite would
	// install them again meanwhile (helm then refuses them: "already exists … cannot be managed").
	release, err := specs.HoldAPIsExclusivelyOf(ctx, apis, CurrentSpecReport().FullText(), bundles.Dir(widget.Name, "v0.1.0"))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(release)
	removeWidgetCRDs(ctx)
	DeferCleanup(removeWidgetCRDs)

	start := time.Now()
	suffix := utilrand.String(5)
	x := &widgetExtension{ns: "olmv1-widget-" + suffix}
	namespaces := []string{x.ns, "olmv1-team-a-" + suffix, "olmv1-team-b-" + suffix}
	DeferCleanup(func(ctx context.Context) {
		if CurrentSpecReport().Failed() {
			collectArtifacts(ctx, append(namespaces, olmv1.SystemNamespace)...)
		}
		if x.ce != nil {
			_ = client.IgnoreNotFound(k8s.Delete(ctx, x.ce))
			// Gone before the APIs are released: operator-controller keeps reconciling a deleted
			// ClusterExtension still held by finalizers, and would install its CRDs again under the next spec.
			_ = intervals.Wait(ctx, intervals.Gone, func() (bool, string) {
				err := k8s.Get(ctx, client.ObjectKeyFromObject(x.ce), x.ce.DeepCopy())
				return apierrors.IsNotFound(err), fmt.Sprintf("ClusterExtension %s still there (error %v)", x.ce.GetName(), err)
			})
		}
		for _, ns := range namespaces {
			_ = k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		}
		// olmv1.CreateInstaller's binding of the installer to cluster-admin
		_ = k8s.Delete(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: x.ns + "-installer-cluster-admin"}})
	})
	Expect(olmv1.CreateInstaller(ctx, k8s, x.ns, "installer")).To(Succeed())
	cs, err := kubernetes.NewForConfig(provider.RESTConfig())
	Expect(err).NotTo(HaveOccurred())
	x.log, err = podlogs.Follow(context.WithoutCancel(ctx), cs, x.ns, GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(x.log.Stop)
	x.ce = olmv1.ClusterExtension("widget-"+suffix, x.ns, "installer", widget.Name, "0.1.0")
	olmv1.SelectCatalog(x.ce, olmv1Catalog)
	Expect(k8s.Create(ctx, x.ce)).To(Succeed())
	Expect(olmv1.WaitCondition(ctx, k8s, intervals.OLMInstall, x.ce, "Installed")).To(Succeed())
	Expect(kube.WaitDeploymentAvailable(ctx, k8s, x.deployment(), intervals.Get(intervals.DeploymentAvailable))).To(Succeed(),
		"the extension's Deployment (its image fixtures.local/%s:v0.1.0 is loaded into the node)", widget.Name)
	GinkgoWriter.Printf("ClusterExtension %s Installed, operator available, %s after the start\n", x.ce.GetName(), since(start))

	for _, ns := range namespaces[1:] {
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		for _, name := range []string{"w1", "w2"} {
			w := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
			w.SetGroupVersionKind(fixturesv1alpha1.GroupVersion.WithKind("Widget"))
			w.SetNamespace(ns)
			w.SetName(name)
			Expect(k8s.Create(ctx, w)).To(Succeed())
			x.widgets = append(x.widgets, w)
		}
	}
	for _, w := range x.widgets {
		Expect(intervals.Wait(ctx, intervals.SpecStep, func() (bool, string) {
			err := widget.Reconciled(ctx, k8s, w)
			return err == nil, fmt.Sprint(err)
		})).To(Succeed(), "widget-operator to put its finalizer and record on Widget %s/%s", w.GetNamespace(), w.GetName())
	}
	return x
}

// deployment is the operator's Deployment (the CSV's name).
func (x *widgetExtension) deployment() types.NamespacedName {
	return types.NamespacedName{Namespace: x.ns, Name: widget.Name}
}

// waitSettled waits until the ClusterExtension, the operator's Deployment and its Pods are gone
// (nothing can finalize a Widget after that) and every Widget is gone or pending deletion, printing
// the timeline.
func (x *widgetExtension) waitSettled(ctx context.Context, deleted time.Time) {
	u := olmv1.Uninstall{ClusterExtension: x.ce, Deployment: x.deployment(), CRs: x.widgets,
		OperatorRunning: func(ctx context.Context) (bool, string) {
			pods := &corev1.PodList{}
			err := k8s.List(ctx, pods, client.InNamespace(x.ns))
			return err != nil || len(pods.Items) > 0, fmt.Sprintf("%d operator pods still in %s (error %v)", len(pods.Items), x.ns, err)
		}}
	Expect(u.WaitSettled(ctx, k8s, deleted, func(f string, a ...any) { GinkgoWriter.Printf(f+"\n", a...) })).To(Succeed())
}

// removeWidgetCRDs deletes widget-operator's CRDs and waits until they are gone, first taking the
// finalizers off every CR left (stuck Widgets of a ClusterExtension deleted before them).
func removeWidgetCRDs(ctx context.Context) {
	for _, name := range widgetCRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := k8s.Get(ctx, types.NamespacedName{Name: name}, crd); apierrors.IsNotFound(err) {
			continue
		} else {
			Expect(err).NotTo(HaveOccurred())
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(fixturesv1alpha1.GroupVersion.WithKind(crd.Spec.Names.ListKind))
		Expect(k8s.List(ctx, list)).To(Succeed())
		for i := range list.Items {
			cr := &list.Items[i]
			if len(cr.GetFinalizers()) > 0 {
				patch := client.MergeFrom(cr.DeepCopy())
				cr.SetFinalizers(nil)
				Expect(client.IgnoreNotFound(k8s.Patch(ctx, cr, patch))).To(Succeed())
			}
		}
		Expect(client.IgnoreNotFound(k8s.Delete(ctx, crd))).To(Succeed())
		Expect(intervals.Wait(ctx, intervals.Gone, func() (bool, string) {
			err := k8s.Get(ctx, types.NamespacedName{Name: name}, &apiextensionsv1.CustomResourceDefinition{})
			return apierrors.IsNotFound(err), fmt.Sprintf("CRD %s still there (error %v)", name, err)
		})).To(Succeed())
	}
}
