package operandcleanup

import (
	"fmt"
	"strings"

	. "github.com/onsi/gomega"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

type csvOpt func(*v1alpha1.ClusterServiceVersion)

func cleanupEnabled(v bool) csvOpt {
	return func(c *v1alpha1.ClusterServiceVersion) { c.Spec.Cleanup.Enabled = v }
}

// targetNamespaces sets olm.targetNamespaces (as OLM does from the OperatorGroup).
func targetNamespaces(v string) csvOpt {
	return func(c *v1alpha1.ClusterServiceVersion) {
		metav1.SetMetaDataAnnotation(&c.ObjectMeta, targetNamespacesAnno, v)
	}
}

func annotation(k, v string) csvOpt {
	return func(c *v1alpha1.ClusterServiceVersion) { metav1.SetMetaDataAnnotation(&c.ObjectMeta, k, v) }
}

func owns(kinds ...testKind) csvOpt {
	return func(c *v1alpha1.ClusterServiceVersion) {
		for _, k := range kinds {
			c.Spec.CustomResourceDefinitions.Owned = append(c.Spec.CustomResourceDefinitions.Owned,
				v1alpha1.CRDDescription{Name: k.crdName(), Version: testVersion, Kind: k.Kind})
		}
	}
}

func requires(kinds ...testKind) csvOpt {
	return func(c *v1alpha1.ClusterServiceVersion) {
		for _, k := range kinds {
			c.Spec.CustomResourceDefinitions.Required = append(c.Spec.CustomResourceDefinitions.Required,
				v1alpha1.CRDDescription{Name: k.crdName(), Version: testVersion, Kind: k.Kind})
		}
	}
}

func replaces(name string) csvOpt {
	return func(c *v1alpha1.ClusterServiceVersion) { c.Spec.Replaces = name }
}

func label(k, v string) csvOpt {
	return func(c *v1alpha1.ClusterServiceVersion) { metav1.SetMetaDataLabel(&c.ObjectMeta, k, v) }
}

// createCSV creates a CSV the way an installed operator looks (status Succeeded, written like OLM does).
func createCSV(ns, name string, opts ...csvOpt) *v1alpha1.ClusterServiceVersion {
	return createCSVWithStatus(ns, name, v1alpha1.CSVPhaseSucceeded, v1alpha1.CSVReasonInstallSuccessful, opts...)
}

func createCSVWithStatus(ns, name string, phase v1alpha1.ClusterServiceVersionPhase, reason v1alpha1.ConditionReason, opts ...csvOpt) *v1alpha1.ClusterServiceVersion {
	c := &v1alpha1.ClusterServiceVersion{}
	c.Namespace, c.Name = ns, name
	c.Spec.DisplayName = name
	c.Spec.InstallStrategy = v1alpha1.NamedInstallStrategy{StrategyName: "deployment", StrategySpec: v1alpha1.StrategyDetailsDeployment{
		DeploymentSpecs: []v1alpha1.StrategyDeploymentSpec{{Name: "operator", Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "operator"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "operator"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "operator", Image: "fixtures.local/operator:v1"}}},
			},
		}}},
	}}
	for _, o := range opts {
		o(c)
	}
	ensureOperatorDeployment(ns)
	Expect(tenv.admin.Create(ctx, c)).To(Succeed())
	setPhase(c, phase, reason)
	return c
}

// setPhase writes the status like OLM (phase, reason, message and an appended condition).
func setPhase(c *v1alpha1.ClusterServiceVersion, phase v1alpha1.ClusterServiceVersionPhase, reason v1alpha1.ConditionReason) {
	Eventually(func() error {
		cur := getCSV(keyOf(c))
		if cur == nil {
			return fmt.Errorf("CSV %s gone", keyOf(c))
		}
		now := metav1.Now()
		cur.SetPhase(phase, reason, "simulated OLM: "+string(reason), &now)
		cur.Status.RequirementStatus = []v1alpha1.RequirementStatus{{Group: "apps", Version: "v1", Kind: "Deployment", Name: "operator", Status: v1alpha1.RequirementStatusReasonPresent, Message: "simulated"}}
		return tenv.admin.Status().Update(ctx, cur)
	}).Should(Succeed())
}

func getCSV(key types.NamespacedName) *v1alpha1.ClusterServiceVersion {
	c := &v1alpha1.ClusterServiceVersion{}
	if err := tenv.admin.Get(ctx, key, c); err != nil {
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "get CSV %s: %v", key, err)
		return nil
	}
	return c
}

// updateCSV retries a read-modify-write of the CSV.
func updateCSV(key types.NamespacedName, mutate func(*v1alpha1.ClusterServiceVersion)) {
	Eventually(func() error {
		c := getCSV(key)
		if c == nil {
			return fmt.Errorf("CSV %s gone", key)
		}
		mutate(c)
		return tenv.admin.Update(ctx, c)
	}).Should(Succeed())
}

func deleteCSV(c *v1alpha1.ClusterServiceVersion) {
	Expect(tenv.admin.Delete(ctx, &v1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name}})).To(Succeed())
}

func csvFinalizers(key types.NamespacedName) func() []string {
	return func() []string {
		if c := getCSV(key); c != nil {
			return c.Finalizers
		}
		return nil
	}
}

func csvGone(key types.NamespacedName) func() bool {
	return func() bool { return getCSV(key) == nil }
}

func createOperatorGroup(ns string, targets ...string) *operatorsv1.OperatorGroup {
	return createOperatorGroupNamed(ns, "og", targets...)
}

// createOperatorGroupNamed creates an OperatorGroup and writes status.namespaces like OLM.
func createOperatorGroupNamed(ns, name string, targets ...string) *operatorsv1.OperatorGroup {
	og := &operatorsv1.OperatorGroup{}
	og.Namespace, og.Name = ns, name
	Expect(tenv.admin.Create(ctx, og)).To(Succeed())
	og.Status.Namespaces = targets
	og.Status.LastUpdated = &metav1.Time{Time: metav1.Now().Time}
	Expect(tenv.admin.Status().Update(ctx, og)).To(Succeed())
	return og
}

// createOperands creates n CRs of kind k named <prefix>-<i> in ns.
func createOperands(k testKind, ns, prefix string, n int, finalizers ...string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for i := 0; i < n; i++ {
		u := newOperand(k, ns, fmt.Sprintf("%s-%d", prefix, i), finalizers...)
		Expect(tenv.admin.Create(ctx, u)).To(Succeed())
		out = append(out, u)
	}
	return out
}

// operandState is "absent", "present" or "deleting".
func operandState(u *unstructured.Unstructured) string {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(u.GroupVersionKind())
	if err := tenv.admin.Get(ctx, client.ObjectKeyFromObject(u), cur); err != nil {
		Expect(apierrors.IsNotFound(err)).To(BeTrue())
		return "absent"
	}
	if cur.GetDeletionTimestamp() != nil {
		return "deleting"
	}
	return "present"
}

func expectAll(objs []*unstructured.Unstructured, state string) {
	for _, u := range objs {
		ExpectWithOffset(1, operandState(u)).To(Equal(state), "%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
	}
}

func allInState(objs []*unstructured.Unstructured, state string) func() bool {
	return func() bool {
		for _, u := range objs {
			if operandState(u) != state {
				return false
			}
		}
		return true
	}
}

// releaseOperands removes the test finalizer, as the operator would after its own cleanup.
func releaseOperands(objs ...*unstructured.Unstructured) {
	for _, u := range objs {
		Eventually(func() error {
			cur := &unstructured.Unstructured{}
			cur.SetGroupVersionKind(u.GroupVersionKind())
			if err := tenv.admin.Get(ctx, client.ObjectKeyFromObject(u), cur); err != nil {
				return client.IgnoreNotFound(err)
			}
			cur.SetFinalizers(nil)
			return tenv.admin.Update(ctx, cur)
		}).Should(Succeed())
	}
}

// csvEvents returns "reason: note" of the events regarding the CSV.
func csvEvents(c *v1alpha1.ClusterServiceVersion) func() []string {
	return func() []string {
		list := &eventsv1.EventList{}
		Expect(tenv.admin.List(ctx, list, client.InNamespace(c.Namespace))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "ClusterServiceVersion" && e.Regarding.Name == c.Name {
				out = append(out, e.Reason+": "+e.Note)
			}
		}
		return out
	}
}

// metricValue reads a gauge/counter (or a histogram's sample count) from controller-runtime's registry.
func metricValue(name string, labels map[string]string) float64 {
	fams, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if matchLabels(m, labels) {
				switch {
				case m.Gauge != nil:
					return m.GetGauge().GetValue()
				case m.Counter != nil:
					return m.GetCounter().GetValue()
				case m.Histogram != nil:
					return float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	return 0
}

// metricFamilies names the metrics in controller-runtime's registry.
func metricFamilies() []string {
	fams, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, f := range fams {
		out = append(out, f.GetName())
	}
	return out
}

func matchLabels(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

func pendingNames(c *v1alpha1.ClusterServiceVersion) []string {
	var out []string
	for _, l := range c.Status.Cleanup.PendingDeletion {
		for _, i := range l.Instances {
			out = append(out, strings.Join([]string{l.Group, l.Kind, i.Namespace, i.Name}, "/"))
		}
	}
	return out
}
