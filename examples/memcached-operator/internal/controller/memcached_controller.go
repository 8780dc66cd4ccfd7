// Package controller holds the Memcached reconciler, written as the operator-sdk tutorial writes it:
// a Deployment per Memcached (image from the MEMCACHED_IMAGE env var), status conditions, and a
// finalizer — here one that removes what garbage collection cannot: a cluster-scoped ClusterRole that
// lets others read this one Memcached.
package controller

import (
	"context"
	"fmt"
	"os"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	cachev1alpha1 "example.com/memcached-operator/api/v1alpha1"
)

const memcachedFinalizer = "cache.example.com/finalizer"

// Definitions to manage status conditions.
const (
	// typeAvailableMemcached represents the status of the Deployment reconciliation.
	typeAvailableMemcached = "Available"
)

// MemcachedReconciler reconciles a Memcached object.
type MemcachedReconciler struct {
	client.Client
	Scheme *runtime.Scheme
}

// +kubebuilder:rbac:groups=cache.example.com,resources=memcacheds,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=cache.example.com,resources=memcacheds/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=cache.example.com,resources=memcacheds/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=get;list;watch;create;delete

// Reconcile moves the cluster towards the Memcached's spec.
func (r *MemcachedReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)

	memcached := &cachev1alpha1.Memcached{}
	if err := r.Get(ctx, req.NamespacedName, memcached); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	if !memcached.DeletionTimestamp.IsZero() {
		if controllerutil.ContainsFinalizer(memcached, memcachedFinalizer) {
			log.Info("Performing Finalizer Operations for Memcached before delete CR")
			if err := r.deleteViewerRole(ctx, memcached); err != nil {
				return ctrl.Result{}, err
			}
			controllerutil.RemoveFinalizer(memcached, memcachedFinalizer)
			if err := r.Update(ctx, memcached); err != nil {
				return ctrl.Result{}, err
			}
		}
		return ctrl.Result{}, nil
	}

	if !controllerutil.ContainsFinalizer(memcached, memcachedFinalizer) {
		log.Info("Adding Finalizer for Memcached")
		controllerutil.AddFinalizer(memcached, memcachedFinalizer)
		if err := r.Update(ctx, memcached); err != nil {
			return ctrl.Result{}, err
		}
	}

	if err := r.ensureViewerRole(ctx, memcached); err != nil {
		return ctrl.Result{}, err
	}

	found := &appsv1.Deployment{}
	err := r.Get(ctx, types.NamespacedName{Name: memcached.Name, Namespace: memcached.Namespace}, found)
	if apierrors.IsNotFound(err) {
		dep, err := r.deploymentForMemcached(memcached)
		if err != nil {
			return ctrl.Result{}, r.setAvailable(ctx, memcached, metav1.ConditionFalse, "Reconciling",
				fmt.Sprintf("Failed to create Deployment for the custom resource (%s): (%s)", memcached.Name, err))
		}
		log.Info("Creating a new Deployment", "Deployment.Namespace", dep.Namespace, "Deployment.Name", dep.Name)
		if err := r.Create(ctx, dep); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: time.Second}, nil
	} else if err != nil {
		return ctrl.Result{}, err
	}

	size := ptr.Deref(memcached.Spec.Size, 1)
	if ptr.Deref(found.Spec.Replicas, 1) != size {
		found.Spec.Replicas = ptr.To(size)
		if err := r.Update(ctx, found); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{Requeue: true}, nil
	}

	return ctrl.Result{}, r.setAvailable(ctx, memcached, metav1.ConditionTrue, "Reconciling",
		fmt.Sprintf("Deployment for custom resource (%s) with %d replicas created successfully", memcached.Name, size))
}

func (r *MemcachedReconciler) setAvailable(ctx context.Context, m *cachev1alpha1.Memcached, status metav1.ConditionStatus, reason, msg string) error {
	if !meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: typeAvailableMemcached,
		Status: status, Reason: reason, Message: msg, ObservedGeneration: m.Generation}) {
		return nil
	}
	return r.Status().Update(ctx, m)
}

// viewerRoleName is the ClusterRole that grants read access to this one Memcached.
func viewerRoleName(m *cachev1alpha1.Memcached) string {
	return fmt.Sprintf("memcached-%s-%s-viewer", m.Namespace, m.Name)
}

// ensureViewerRole creates the Memcached's ClusterRole. A cluster-scoped object cannot be owned by a
// namespaced one, so garbage collection never removes it: the finalizer does.
func (r *MemcachedReconciler) ensureViewerRole(ctx context.Context, m *cachev1alpha1.Memcached) error {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: viewerRoleName(m), Labels: map[string]string{"app.kubernetes.io/managed-by": "memcached-operator"}},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{cachev1alpha1.GroupVersion.Group}, Resources: []string{"memcacheds"},
			ResourceNames: []string{m.Name}, Verbs: []string{"get"}}},
	}
	if err := r.Create(ctx, role); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

func (r *MemcachedReconciler) deleteViewerRole(ctx context.Context, m *cachev1alpha1.Memcached) error {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: viewerRoleName(m)}}
	return client.IgnoreNotFound(r.Delete(ctx, role))
}

// deploymentForMemcached returns a Memcached Deployment object.
func (r *MemcachedReconciler) deploymentForMemcached(memcached *cachev1alpha1.Memcached) (*appsv1.Deployment, error) {
	image, err := imageForMemcached()
	if err != nil {
		return nil, err
	}
	ls := map[string]string{"app.kubernetes.io/name": "memcached-operator", "app.kubernetes.io/instance": memcached.Name}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: memcached.Name, Namespace: memcached.Namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(ptr.Deref(memcached.Spec.Size, 1)),
			Selector: &metav1.LabelSelector{MatchLabels: ls},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: ls},
				Spec: corev1.PodSpec{
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
					Containers: []corev1.Container{{
						Image:   image,
						Name:    "memcached",
						Command: []string{"memcached", "--memory-limit=64", "-o", "modern", "-v"},
						Ports:   []corev1.ContainerPort{{ContainerPort: 11211, Name: "memcached"}},
					}},
				},
			},
		},
	}
	if err := ctrl.SetControllerReference(memcached, dep, r.Scheme); err != nil {
		return nil, err
	}
	return dep, nil
}

// imageForMemcached gets the operand image from the MEMCACHED_IMAGE environment variable, which the
// manager's Deployment (config/manager/manager.yaml) sets.
func imageForMemcached() (string, error) {
	image, found := os.LookupEnv("MEMCACHED_IMAGE")
	if !found {
		return "", fmt.Errorf("unable to find MEMCACHED_IMAGE environment variable with the image")
	}
	return image, nil
}

// SetupWithManager sets up the controller with the Manager.
func (r *MemcachedReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&cachev1alpha1.Memcached{}).
		Owns(&appsv1.Deployment{}).
		Named("memcached").
		Complete(r)
}
