package incluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
)

// Config says how Install deploys OLM v1.
type Config struct {
	// Client is an admin client of the cluster.
	Client client.Client
	// InsecureRegistries are the registries (host:port) the managers may pull from over plain HTTP, e.g.
	// a Registry started with olmv1.StartRegistryAt on an address the pods reach.
	InsecureRegistries []string
	// Logf, if set, gets one line per step with its duration.
	Logf func(format string, args ...any)
}

// Installed is OLM v1 as Install applied it.
type Installed struct {
	c    client.Client
	objs []*unstructured.Unstructured
	logf func(format string, args ...any)
}

// Install applies OLM v1 (Render) to the cluster and returns once both managers' Deployments are
// available: the in-cluster counterpart of olmv1.Start. The manager images must be on the nodes
// (scripts/images.sh builds them; the kind provider loads them). Applying again over an earlier
// install updates it (a new registries.conf or CA restarts the managers).
func Install(ctx context.Context, cfg Config) (*Installed, error) {
	in := &Installed{c: cfg.Client, logf: cfg.Logf}
	if in.logf == nil {
		in.logf = func(string, ...any) {}
	}
	start := time.Now()
	objs, err := Render(cfg.InsecureRegistries)
	if err != nil {
		return nil, err
	}
	in.objs = objs
	var first, rest []*unstructured.Unstructured // CRDs established before anything uses them
	for _, o := range objs {
		if o.GetKind() == "Namespace" || o.GetKind() == "CustomResourceDefinition" {
			first = append(first, o)
		} else {
			rest = append(rest, o)
		}
	}
	if err := kube.Apply(ctx, cfg.Client, first...); err != nil {
		return nil, fmt.Errorf("install OLM v1 %s: %w", olmv1.Version, err)
	}
	if err := kube.WaitCRDsUsable(ctx, cfg.Client, "clusterextensions.olm.operatorframework.io", "clustercatalogs.olm.operatorframework.io"); err != nil {
		return nil, err
	}
	if err := kube.Apply(ctx, cfg.Client, rest...); err != nil {
		return nil, fmt.Errorf("install OLM v1 %s: %w", olmv1.Version, err)
	}
	in.logf("OLM v1 %s applied (%d objects from upstream's config/, images %s, %s) in %s", olmv1.Version, len(objs),
		CatalogdImage, OperatorControllerImage, time.Since(start).Round(time.Millisecond))
	for _, d := range []string{CatalogdDeployment, OperatorControllerDeployment} {
		key := types.NamespacedName{Namespace: olmv1.SystemNamespace, Name: d}
		if err := kube.WaitDeploymentAvailable(ctx, cfg.Client, key, intervals.Get(intervals.OLMInstall)); err != nil {
			return nil, fmt.Errorf("%w; %s (are the images on the nodes? scripts/images.sh builds them, the kind provider loads "+
				"what _cache/images.list names)", err, in.describePods(ctx, d))
		}
	}
	in.logf("OLM v1 %s ready (catalogd and operator-controller available) %s after the start", olmv1.Version, time.Since(start).Round(time.Millisecond))
	return in, nil
}

// describePods says why a manager's pods are not ready: each container's waiting or terminated state.
func (in *Installed) describePods(ctx context.Context, deployment string) string {
	pods := &corev1.PodList{}
	if err := in.c.List(ctx, pods, client.InNamespace(olmv1.SystemNamespace)); err != nil {
		return "its pods: " + err.Error()
	}
	var out []string
	for _, p := range pods.Items {
		if !strings.HasPrefix(p.Name, deployment+"-") {
			continue
		}
		for _, s := range p.Status.ContainerStatuses {
			switch {
			case s.State.Waiting != nil:
				out = append(out, fmt.Sprintf("pod %s: %s waiting, %s: %s", p.Name, s.Name, s.State.Waiting.Reason, s.State.Waiting.Message))
			case s.LastTerminationState.Terminated != nil:
				t := s.LastTerminationState.Terminated
				out = append(out, fmt.Sprintf("pod %s: %s exited %d (%s): %s", p.Name, s.Name, t.ExitCode, t.Reason, t.Message))
			}
		}
	}
	if len(out) == 0 {
		return "its pods show no failing container (kubectl -n " + olmv1.SystemNamespace + " describe pods)"
	}
	return strings.Join(out, "; ")
}

// Uninstall deletes every ClusterExtension and ClusterCatalog of the cluster while the managers still
// run (their finalizers), then what Install applied, and waits until the CRDs and the namespace are
// gone. Only for a cluster whose OLM v1 this run installed: other users' extensions go too.
func (in *Installed) Uninstall(ctx context.Context) error {
	start := time.Now()
	for _, gvk := range []schema.GroupVersionKind{olmv1.ClusterExtensionGVK, olmv1.ClusterCatalogGVK} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := in.c.List(ctx, list); err != nil && !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("list %ss: %w", gvk.Kind, err)
		}
		for i := range list.Items {
			if err := client.IgnoreNotFound(in.c.Delete(ctx, &list.Items[i])); err != nil {
				return err
			}
		}
		for i := range list.Items {
			if err := waitGone(ctx, in.c, &list.Items[i]); err != nil {
				return fmt.Errorf("%w (its manager's log: kubectl -n %s logs deploy/%s)", err, olmv1.SystemNamespace, OperatorControllerDeployment)
			}
		}
	}
	var errs []error
	objs := slices.Clone(in.objs)
	slices.Reverse(objs)
	for _, o := range objs {
		if err := client.IgnoreNotFound(in.c.Delete(ctx, o.DeepCopy())); err != nil {
			errs = append(errs, fmt.Errorf("delete %s %s: %w", o.GetKind(), client.ObjectKeyFromObject(o), err))
		}
	}
	for _, o := range in.objs {
		if o.GetKind() == "Namespace" || o.GetKind() == "CustomResourceDefinition" {
			errs = append(errs, waitGone(ctx, in.c, o))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("uninstall OLM v1: %w", err)
	}
	in.logf("OLM v1 uninstalled in %s", time.Since(start).Round(time.Millisecond))
	return nil
}

func waitGone(ctx context.Context, c client.Client, o *unstructured.Unstructured) error {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(o.GroupVersionKind())
	return intervals.Wait(ctx, intervals.Gone, func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(o), live)
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return true, ""
		}
		return false, fmt.Sprintf("%s %s still there (deletionTimestamp %v, finalizers %v, error %v)", o.GetKind(), client.ObjectKeyFromObject(o),
			live.GetDeletionTimestamp(), live.GetFinalizers(), err)
	})
}

// DockerNetworkGateway is the gateway address of a Docker network (kind's is "kind"): this machine's
// address on it, which the cluster's pods reach, so a registry the test runs there serves them.
func DockerNetworkGateway(ctx context.Context, network string) (string, error) {
	out, err := exec.CommandContext(ctx, "docker", "network", "inspect", network,
		"--format", "{{range .IPAM.Config}}{{.Gateway}} {{end}}").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("docker network inspect %s: %w (is the kind cluster up? Docker running?)", network, err)
	}
	for _, gw := range strings.Fields(string(out)) {
		if !strings.Contains(gw, ":") { // IPv4: the node's default route
			return gw, nil
		}
	}
	return "", fmt.Errorf("docker network %s has no IPv4 gateway (got %q)", network, strings.TrimSpace(string(out)))
}

// Running is OLM v1 deployed by StartOnKind with the registry it pulls test bundles from.
type Running struct {
	*Installed
	Registry *olmv1.Registry
}

// StartOnKind makes OLM v1 usable on a kind cluster as olmv1.Start does on envtest: a registry on the
// gateway of the Docker network (kind's is "kind"), which the pods reach, both managers deployed
// (Install) pulling from it over plain HTTP, and the registry published in olmv1.RegistryConfigMap
// for the specs. The registry lives in this process: Stop (or its exit) ends it.
func StartOnKind(ctx context.Context, c client.Client, network string, logf func(format string, args ...any)) (_ *Running, err error) {
	gw, err := DockerNetworkGateway(ctx, network)
	if err != nil {
		return nil, err
	}
	r := &Running{}
	if r.Registry, err = olmv1.StartRegistryAt(net.JoinHostPort(gw, "0")); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = r.Registry.Stop()
		}
	}()
	if r.Installed, err = Install(ctx, Config{Client: c, InsecureRegistries: []string{r.Registry.Host}, Logf: logf}); err != nil {
		return nil, err
	}
	if err := olmv1.Publish(ctx, c, olmv1.Endpoint{Push: r.Registry.Host, Pull: r.Registry.Host}); err != nil {
		return nil, err
	}
	return r, nil
}

// Stop uninstalls OLM v1 (Uninstall), then stops the registry.
func (r *Running) Stop(ctx context.Context) error {
	return errors.Join(r.Uninstall(ctx), r.Registry.Stop())
}
