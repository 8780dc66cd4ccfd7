package localruntime

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/cleanup-e2e/cleanup-e2e/framework/crashlog"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// conflictRetry is the requeue after a status write lost a race (with the operator itself, OLM or the
// cache being behind): an expected race, retried, never logged as a reconciler error.
const conflictRetry = 100 * time.Millisecond

func (r *Runtime) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := r.reconcileDeployment(ctx, req)
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	return res, err
}

func (r *Runtime) reconcileDeployment(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := req.NamespacedName
	dep := &appsv1.Deployment{}
	err := r.client.Get(ctx, key, dep)
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, r.stopInstance(key, "deployment deleted")
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if dep.DeletionTimestamp != nil {
		return ctrl.Result{}, r.stopInstance(key, "deployment is being deleted")
	}
	replicas := ptrOr(dep.Spec.Replicas, 1)
	if replicas == 0 {
		if err := r.stopInstance(key, "scaled to zero"); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.writeStatus(ctx, dep, 0, 0, "", "")
	}
	ctr, registered := pickContainer(&dep.Spec.Template.Spec, r.registry)
	if !registered {
		if err := r.stopInstance(key, "image is not registered"); err != nil {
			return ctrl.Result{}, err
		}
		r.warnUnregistered(key, ctr.Image)
		return ctrl.Result{}, r.writeStatus(ctx, dep, replicas, 0, "ImageNotRegistered",
			fmt.Sprintf("image %q is not registered with the local runtime (registered: %v)", ctr.Image, r.registry.Images()))
	}
	w, err := resolveWorkload(ctx, r.reader, dep, ctr)
	if err != nil {
		// Retried like the kubelet retries a pod whose ConfigMap or Secret is missing: nothing else
		// would reconcile the Deployment again when the ConfigMap appears.
		return ctrl.Result{RequeueAfter: configRetry}, r.writeStatus(ctx, dep, replicas, 0, "CreateContainerConfigError", err.Error())
	}
	if p, _ := r.registry.lookup(w.image); p.binary != nil && p.binary.Path == "" {
		// Said before the build, which takes seconds to minutes: a wait on this Deployment quotes it.
		if err := r.writeStatus(ctx, dep, replicas, 0, "BuildingBinary",
			fmt.Sprintf("building the operator binary for image %s (package %s in %s)", w.image, p.binary.Package, p.binary.Dir)); err != nil {
			return ctrl.Result{}, err
		}
	}
	in, err := r.ensureInstance(ctx, key, w)
	if err != nil {
		return ctrl.Result{}, err
	}
	running, ready, restarts, lastErr := in.state()
	switch {
	case !running:
		return ctrl.Result{}, r.writeStatus(ctx, dep, replicas, 0, "CrashLoopBackOff",
			crashlog.ExitedMessage(restarts, fmt.Sprintf("last error: %v (%s)", lastErr, r.logNote(in))))
	case !ready:
		return ctrl.Result{}, r.writeStatus(ctx, dep, replicas, 0, "MinimumReplicasUnavailable",
			fmt.Sprintf("operator started, its readiness probe does not succeed yet (%s)", r.logNote(in)))
	}
	return ctrl.Result{}, r.writeStatus(ctx, dep, replicas, replicas, "", "")
}

// logNote says where the operator's whole log is to be read: not at its path, which goes with the
// provider's work dir when the run ends, but among a failed spec's artifacts, where the provider copies
// its logs (framework/artifacts: <spec>/provider/, this runtime's log dir included).
func (r *Runtime) logNote(in *instance) string {
	return fmt.Sprintf("its whole log: %s in the provider's logs, copied to a failed spec's artifacts under provider/",
		filepath.Join(filepath.Base(r.logDir), filepath.Base(in.logPath)))
}

// runnerFor is how the workload's image runs: in-process, or its binary as a child process (built
// first when it was registered by package after the runtime started).
func (r *Runtime) runnerFor(ctx context.Context, key types.NamespacedName, w *workload) (runner, error) {
	p, _ := r.registry.lookup(w.image)
	if p.entrypoint != nil {
		return inProcess{w: w, ep: p.entrypoint, cfg: r.operatorConfig(key, w)}, nil
	}
	if p.binary.Path == "" {
		if err := r.registry.BuildBinaries(ctx, r.binDir(), r.log); err != nil {
			return nil, err
		}
		p, _ = r.registry.lookup(w.image)
	}
	return &child{rt: r, key: key, w: w, path: p.binary.Path}, nil
}

// configRetry is how often a Deployment whose env cannot be resolved yet is tried again.
const configRetry = time.Second

func (r *Runtime) warnUnregistered(key types.NamespacedName, image string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := key.String() + "|" + image
	if !r.warned[id] {
		r.warned[id] = true
		r.log.Info("deployment stays unavailable: its image is not registered with the local runtime",
			"deployment", key.String(), "image", image, "registered", r.registry.Images())
	}
}

// ensureInstance starts the workload for key, replacing an instance made from another pod template.
func (r *Runtime) ensureInstance(ctx context.Context, key types.NamespacedName, w *workload) (*instance, error) {
	r.mu.Lock()
	cur := r.instances[key]
	r.mu.Unlock()
	if cur != nil && cur.workload.hash == w.hash {
		return cur, nil
	}
	if cur != nil {
		if err := r.stopInstance(key, "pod template changed"); err != nil {
			return nil, err
		}
	}
	rn, err := r.runnerFor(ctx, key, w)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx == nil || r.ctx.Err() != nil {
		return nil, fmt.Errorf("local runtime is stopped")
	}
	in, err := startInstance(r.ctx, key, w, rn, r.logDir, func() { r.notify(key) })
	if err != nil {
		return nil, err
	}
	r.instances[key] = in
	r.log.Info("started operator", "deployment", key.String(), "image", w.image, "serviceAccount", w.serviceAccount, "log", in.logPath)
	return in, nil
}

func (r *Runtime) stopInstance(key types.NamespacedName, why string) error {
	r.mu.Lock()
	in := r.instances[key]
	delete(r.instances, key)
	r.mu.Unlock()
	if in == nil {
		return nil
	}
	r.log.Info("stopping operator", "deployment", key.String(), "reason", why)
	return in.stop(intervals.Get(intervals.Stopped))
}

// writeStatus records replica counts and conditions the way the deployment controller would.
func (r *Runtime) writeStatus(ctx context.Context, dep *appsv1.Deployment, want, ready int32, reason, msg string) error {
	now := metav1.Now()
	st := appsv1.DeploymentStatus{
		ObservedGeneration: dep.Generation,
		Replicas:           want,
		UpdatedReplicas:    want,
		ReadyReplicas:      ready,
		AvailableReplicas:  ready,
	}
	st.UnavailableReplicas = want - ready
	available := corev1.ConditionTrue
	availReason, availMsg := "MinimumReplicasAvailable", "Deployment has minimum availability."
	if ready < want {
		available, availReason, availMsg = corev1.ConditionFalse, reason, msg
	}
	st.Conditions = []appsv1.DeploymentCondition{
		condition(dep, appsv1.DeploymentAvailable, available, availReason, availMsg, now),
		condition(dep, appsv1.DeploymentProgressing, corev1.ConditionTrue, "NewReplicaSetAvailable",
			fmt.Sprintf("Local runtime runs deployment %q.", dep.Name), now),
	}
	if equality.Semantic.DeepEqual(dep.Status, st) {
		return nil
	}
	dep.Status = st
	return r.client.Status().Update(ctx, dep)
}

// condition keeps the transition time of an unchanged condition so status writes converge.
func condition(dep *appsv1.Deployment, t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, msg string, now metav1.Time) appsv1.DeploymentCondition {
	c := appsv1.DeploymentCondition{Type: t, Status: s, Reason: reason, Message: msg, LastUpdateTime: now, LastTransitionTime: now}
	for _, old := range dep.Status.Conditions {
		if old.Type == t && old.Status == s && old.Reason == reason && old.Message == msg {
			c.LastUpdateTime, c.LastTransitionTime = old.LastUpdateTime, old.LastTransitionTime
		}
	}
	return c
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}
