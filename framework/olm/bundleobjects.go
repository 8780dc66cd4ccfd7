package olm

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A bundle's manifests other than its CSV and CRDs are created as OLM v0.46's InstallPlan creates
// them (catalog operator, pkg/controller/operators/catalog/operator.go ExecutePlan, with the steps of
// pkg/controller/registry/resolver/steps.go), in the CSV's namespace:
//
//	kind                                       what OLM adds
//	Secret, ConfigMap, Service                 a non-blocking owner reference to the CSV, label olm.managed=true
//	ServiceAccount, Role, RoleBinding,         label olm.managed=true
//	ClusterRole, ClusterRoleBinding
//	supportedKinds (PrometheusRule, ...)       namespaced: a non-blocking owner reference to the CSV;
//	                                           cluster-scoped: labels olm.owner, olm.owner.namespace, olm.owner.kind
//	anything else                              the InstallPlan fails (step status UnsupportedResource)
//
// Where we differ: an object that already exists is left alone, where OLM updates it (a ClusterRole
// or ClusterRoleBinding then also gets olm.owner=<CSV>): the specs install into namespaces of their
// own, so only cluster-scoped objects can already exist, and those belong to someone else.
//
// So an uninstall removes the owned ones through garbage collection, and the leftovers check sees
// every one of them, as on a cluster where OLM installed the bundle from a catalog.

// supportedKinds are the kinds OLM installs from a bundle besides RBAC, Secrets, ConfigMaps and
// Services (catalog/supportedresources.go).
var supportedKinds = []string{"PrometheusRule", "ServiceMonitor", "PodDisruptionBudget", "PriorityClass",
	"VerticalPodAutoscaler", "ConsoleYAMLSample", "ConsoleQuickStart", "ConsoleCLIDownload", "ConsoleLink",
	"ConsolePlugin", "NetworkPolicy"}

// checkBundleObjects refuses, before anything is created, a manifest OLM itself would refuse, or
// one of a kind this cluster does not serve (OLM's InstallPlan fails on it too).
func checkBundleObjects(c client.Client, csvName string, objs []*unstructured.Unstructured) error {
	var errs []string
	for _, o := range objs {
		what := fmt.Sprintf("%s %s (%s)", o.GetKind(), o.GetName(), o.GetAPIVersion())
		switch kind := o.GetKind(); {
		case !ownsAs(kind):
			errs = append(errs, fmt.Sprintf("%s: OLM does not install kind %s from a bundle (its InstallPlan fails "+
				"with UnsupportedResource); it installs Secrets, ConfigMaps, Services, ServiceAccounts, RBAC and %s",
				what, kind, strings.Join(supportedKinds, ", ")))
		default:
			if _, err := c.IsObjectNamespaced(o); err != nil {
				errs = append(errs, fmt.Sprintf("%s: this cluster does not serve the kind (%v); install its CRD first "+
					"(e.g. the Prometheus operator's for ServiceMonitor), as OLM's InstallPlan would fail on it too", what, err))
			}
		}
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return fmt.Errorf("bundle of CSV %s: %d manifest(s) OLM would not install:\n  %s", csvName, len(errs), strings.Join(errs, "\n  "))
	}
	return nil
}

func ownsAs(kind string) bool {
	switch kind {
	case "Secret", "ConfigMap", "Service", "Role", "RoleBinding", "ServiceAccount", "ClusterRole", "ClusterRoleBinding":
		return true
	}
	return slices.Contains(supportedKinds, kind)
}

// createBundleObjects creates objs for the live csv as OLM would (see the table above), leaving an
// object that is already there alone. checkBundleObjects must have accepted them.
func createBundleObjects(ctx context.Context, c client.Client, csv *operatorsv1alpha1.ClusterServiceVersion, objs []*unstructured.Unstructured) error {
	owner := metav1.OwnerReference{APIVersion: operatorsv1alpha1.SchemeGroupVersion.String(), Kind: operatorsv1alpha1.ClusterServiceVersionKind,
		Name: csv.Name, UID: csv.UID, BlockOwnerDeletion: ptr.To(false), Controller: ptr.To(false)}
	for _, src := range objs {
		o := src.DeepCopy()
		namespaced, err := c.IsObjectNamespaced(o)
		if err != nil {
			return fmt.Errorf("bundle manifest %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		if namespaced {
			o.SetNamespace(csv.Namespace)
		}
		switch kind := o.GetKind(); {
		case kind == "Secret" || kind == "ConfigMap" || kind == "Service":
			o.SetOwnerReferences(append(o.GetOwnerReferences(), owner))
			setLabels(o, map[string]string{LabelManaged: "true"})
		case !slices.Contains(supportedKinds, kind): // ServiceAccount and RBAC
			setLabels(o, map[string]string{LabelManaged: "true"})
		case namespaced:
			o.SetOwnerReferences(append(o.GetOwnerReferences(), owner))
		default:
			setLabels(o, map[string]string{LabelOwner: csv.Name, LabelOwnerNamespace: csv.Namespace,
				LabelOwnerKind: operatorsv1alpha1.ClusterServiceVersionKind})
		}
		if err := client.IgnoreAlreadyExists(c.Create(ctx, o)); err != nil {
			if meta.IsNoMatchError(err) {
				return fmt.Errorf("bundle manifest %s %s: kind not served: %w", o.GetKind(), o.GetName(), err)
			}
			return fmt.Errorf("create bundle manifest %s %s: %w", o.GetKind(), client.ObjectKeyFromObject(o), err)
		}
	}
	return nil
}

func setLabels(o *unstructured.Unstructured, add map[string]string) {
	l := o.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	for k, v := range add {
		l[k] = v
	}
	o.SetLabels(l)
}
