// Package payloadapplier installs the payload applier (the CVO side's system under test) as a
// Deployment from config/payload-applier, for suites that test it running in the cluster. It is apart
// from framework/components so that an operator repo's suite, which installs only the operand-cleanup
// controller, does not link the applier.
package payloadapplier

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	payloadapplierconfig "github.com/cleanup-e2e/cleanup-e2e/config/payload-applier"
	"github.com/cleanup-e2e/cleanup-e2e/framework/components"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/applier"
)

// Image is the applier's image; the envtest provider runs it (applier.Main) in-process.
const Image = payloadapplierconfig.Image

// InstallInput configures a payload-applier install from config/payload-applier.
type InstallInput struct {
	Client client.Client
	// Namespace to install into (default payload-applier, as shipped). Any other namespace also
	// names the ClusterRole and ClusterRoleBinding payload-applier-<namespace>, so installs coexist.
	Namespace string
	// Payload is the initial content of the payload ConfigMap (file name -> content), written before
	// the Deployment starts.
	Payload map[string][]byte
	// Args override the Deployment's flags by name (e.g. "--interval=1s", "--cluster-operator=x").
	Args    []string
	Timeout time.Duration
}

// Installed is an installed payload-applier Deployment.
type Installed struct {
	Client    client.Client
	Namespace string
	// ClusterRBAC is the name of its ClusterRole and ClusterRoleBinding.
	ClusterRBAC string
	Timeout     time.Duration
	// created are the objects the install created, with their UIDs: Uninstall deletes those and only
	// those (a namespace, ClusterRole or Deployment of that name that was there before is someone's).
	created []*unstructured.Unstructured
}

// Install applies the applier's manifests (namespace first, then the payload
// ConfigMap, then RBAC and Deployment) and waits until the Deployment is available.
func Install(ctx context.Context, in InstallInput) (*Installed, error) {
	objs, err := payloadapplierconfig.Objects()
	if err != nil {
		return nil, err
	}
	pa := &Installed{Client: in.Client, Namespace: in.Namespace, ClusterRBAC: payloadapplierconfig.Name, Timeout: in.Timeout}
	if pa.Namespace == "" {
		pa.Namespace = payloadapplierconfig.Namespace
	}
	if pa.Namespace != payloadapplierconfig.Namespace {
		pa.ClusterRBAC = payloadapplierconfig.Name + "-" + pa.Namespace
	}
	pa.Timeout = intervals.Or(pa.Timeout, intervals.DeploymentAvailable)
	for _, o := range objs {
		if err := pa.relocate(o); err != nil {
			return nil, err
		}
		if o.GetKind() == "Deployment" {
			if err := components.OverrideArgs(o, in.Args); err != nil {
				return nil, err
			}
			if err := pa.SetPayload(ctx, in.Payload); err != nil {
				return nil, err
			}
		}
		_, err := kube.Get(ctx, in.Client, o)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("install payload applier: %w", err)
		}
		existed := err == nil
		if err := kube.Apply(ctx, in.Client, o); err != nil {
			return nil, fmt.Errorf("install payload applier: %w", err)
		}
		if !existed {
			live, err := kube.Get(ctx, in.Client, o)
			if err != nil {
				return nil, fmt.Errorf("install payload applier: %w", err)
			}
			pa.created = append(pa.created, live)
		}
	}
	return pa, kube.WaitDeploymentAvailable(ctx, in.Client, pa.Key(), pa.Timeout)
}

// relocate moves an object of the shipped manifests into pa's namespace and cluster RBAC names.
func (pa *Installed) relocate(o *unstructured.Unstructured) error {
	switch o.GetKind() {
	case "Namespace":
		o.SetName(pa.Namespace)
	case "ClusterRole":
		o.SetName(pa.ClusterRBAC)
	case "ClusterRoleBinding":
		o.SetName(pa.ClusterRBAC)
		if err := unstructured.SetNestedField(o.Object, pa.ClusterRBAC, "roleRef", "name"); err != nil {
			return err
		}
		subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
		for _, s := range subjects {
			s.(map[string]any)["namespace"] = pa.Namespace
		}
		return unstructured.SetNestedSlice(o.Object, subjects, "subjects")
	default:
		if o.GetNamespace() != "" {
			o.SetNamespace(pa.Namespace)
		}
	}
	return nil
}

// Key is the Deployment's namespace and name.
func (pa *Installed) Key() types.NamespacedName {
	return types.NamespacedName{Namespace: pa.Namespace, Name: payloadapplierconfig.Name}
}

// SetPayload replaces the content of the payload ConfigMap (the applier picks it up on its next pass).
func (pa *Installed) SetPayload(ctx context.Context, files map[string][]byte) error {
	data := map[string]string{}
	for k, v := range files {
		data[k] = string(v)
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace(pa.Namespace)
	u.SetName(payloadapplierconfig.PayloadConfigMap)
	if err := unstructured.SetNestedStringMap(u.Object, data, "data"); err != nil {
		return err
	}
	if err := kube.Apply(ctx, pa.Client, u); err != nil {
		return fmt.Errorf("payload configmap: %w", err)
	}
	return nil
}

// Scale sets the Deployment's replicas and waits until it reports them: 0 means the applier stopped
// (no pod left), more means it is available again (a restart when going 0 -> 1).
func (pa *Installed) Scale(ctx context.Context, replicas int32) error {
	patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: pa.Namespace, Name: payloadapplierconfig.Name}}
	if err := pa.Client.Patch(ctx, dep, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return err
	}
	if replicas > 0 {
		return kube.WaitDeploymentAvailable(ctx, pa.Client, pa.Key(), pa.Timeout)
	}
	err := intervals.Wait(ctx, intervals.Gone, func() (bool, string) {
		err := pa.Client.Get(ctx, pa.Key(), dep)
		pods := &corev1.PodList{}
		if err == nil {
			// Terminating pods are not counted in the status: wait for them to be gone too (a node-less
			// provider has none).
			err = pa.Client.List(ctx, pods, client.InNamespace(pa.Namespace), client.MatchingLabels(dep.Spec.Selector.MatchLabels))
		}
		if err != nil {
			return false, err.Error()
		}
		if dep.Status.ObservedGeneration >= dep.Generation && dep.Status.Replicas == 0 &&
			dep.Status.AvailableReplicas == 0 && len(pods.Items) == 0 {
			return true, ""
		}
		return false, fmt.Sprintf("status %+v, %d pod(s)", dep.Status, len(pods.Items))
	}, intervals.Within(pa.Timeout))
	if err != nil {
		return fmt.Errorf("deployment %s did not scale to 0: %w", pa.Key(), err)
	}
	return nil
}

// State reads the delete progress the applier persists, as a restarted applier would load it.
func (pa *Installed) State(ctx context.Context, clusterOperator string) (applier.State, error) {
	store := &applier.ConfigMapStore{Client: pa.Client, Namespace: pa.Namespace, Name: clusterOperator + applier.StateConfigMapSuffix}
	return store.Load(ctx)
}

// Uninstall deletes what the install created, newest first — the Deployment, RBAC and namespace
// when none was there before — each only while it is still that object (UID precondition), without
// waiting for the namespace to go.
func (pa *Installed) Uninstall(ctx context.Context) error {
	var errs []error
	for i := len(pa.created) - 1; i >= 0; i-- {
		o := pa.created[i]
		uid := o.GetUID()
		if err := client.IgnoreNotFound(pa.Client.Delete(ctx, o, client.Preconditions{UID: &uid})); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("uninstall payload applier: %v", errs)
	}
	return nil
}
