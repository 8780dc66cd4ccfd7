// Package artifacts is the one place that dumps what a failed spec needs for a post-mortem: the
// involved namespaces' objects as YAML, their events in time order and their pods' logs (the previous
// run's too, for a container that restarted), OLM's cluster-scoped objects, and every log the
// provider has (control plane, OLM, operators, the operand-cleanup controller).
package artifacts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
)

// Dir is where artifacts go: $ARTIFACTS (Prow's convention) or _artifacts in the working directory.
func Dir() string {
	if d := os.Getenv("ARTIFACTS"); d != "" {
		return d
	}
	return "_artifacts"
}

// CollectInput says what to dump.
type CollectInput struct {
	Client   client.Client
	Provider cluster.Provider
	// Namespaces whose objects and events are dumped.
	Namespaces []string
	// Spec names the failed spec; it becomes the directory name.
	Spec string
	// ClusterKinds are cluster-scoped kinds to dump in full, to cluster/<kind>.<group>.yaml, besides
	// OLM v1's ClusterExtensions (always, when served; CRDs of operators.coreos.com are namespaced;
	// ClusterRoles/Bindings labelled by OLM are always dumped).
	ClusterKinds []schema.GroupVersionKind
}

var unsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Collect writes the artifacts under Dir()/<spec>-<time>/ and returns that directory. It carries on
// past errors (a half-broken cluster is when artifacts matter most) and returns them joined.
func Collect(ctx context.Context, in CollectInput) (string, error) {
	name := strings.Trim(unsafe.ReplaceAllString(in.Spec, "_"), "_")
	if len(name) > 100 {
		name = name[:100]
	}
	dir := filepath.Join(Dir(), fmt.Sprintf("%s-%s", name, time.Now().Format("150405.000")))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return dir, err
	}
	var errs []error
	resources, err := namespacedResources(in.Provider)
	errs = append(errs, err)
	var cs kubernetes.Interface
	if in.Provider != nil {
		if cs, err = kubernetes.NewForConfig(in.Provider.RESTConfig()); err != nil {
			errs = append(errs, err)
		}
	}
	for _, ns := range in.Namespaces {
		errs = append(errs, dumpNamespace(ctx, in.Client, resources, ns, filepath.Join(dir, "namespaces", ns)))
		if cs != nil {
			errs = append(errs, PodLogs(ctx, cs, ns, filepath.Join(dir, "namespaces", ns, "logs")))
		}
	}
	errs = append(errs, dumpOLMClusterObjects(ctx, in.Client, filepath.Join(dir, "cluster")))
	errs = append(errs, dumpClusterKinds(ctx, in.Client, append(slices.Clone(alwaysClusterKinds), in.ClusterKinds...), filepath.Join(dir, "cluster")))
	if in.Provider != nil {
		errs = append(errs, in.Provider.CollectArtifacts(ctx, filepath.Join(dir, "provider")))
	}
	return dir, errors.Join(errs...)
}

// namespacedResources lists every namespaced, listable resource the server serves (preferred versions).
func namespacedResources(p cluster.Provider) ([]schema.GroupVersionKind, error) {
	if p == nil {
		return nil, nil
	}
	dc, err := discovery.NewDiscoveryClientForConfig(p.RESTConfig())
	if err != nil {
		return nil, err
	}
	lists, err := dc.ServerPreferredNamespacedResources()
	var out []schema.GroupVersionKind
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !contains(r.Verbs, "list") || skipKind(r.Kind) {
				continue
			}
			out = append(out, gv.WithKind(r.Kind))
		}
	}
	return out, err
}

// skipKind leaves out churn and secrets.
func skipKind(kind string) bool {
	switch kind {
	case "Event", "Lease", "Endpoints", "EndpointSlice", "Secret", "ControllerRevision":
		return true
	}
	return false
}

func dumpNamespace(ctx context.Context, c client.Client, gvks []schema.GroupVersionKind, ns, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var errs []error
	for _, gvk := range gvks {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			continue // e.g. a CRD deleted since discovery
		}
		if len(list.Items) == 0 {
			continue
		}
		errs = append(errs, writeYAML(filepath.Join(dir, strings.ToLower(gvk.Kind)+"."+gvk.Group+".yaml"), list.Items))
	}
	errs = append(errs, dumpEvents(ctx, c, ns, filepath.Join(dir, "events.txt")))
	return errors.Join(errs...)
}

// podLogLimit bounds each container log kept: its end, where an operator says why it failed.
const podLogLimit = 10 << 20

// PodLogs keeps the log of every container of the namespace's pods (on a cluster with nodes: an
// operator's, the spec's operands'), and of its previous run when it restarted — a crash-looping
// operator's cause is there. On envtest there are no pods: the provider's own artifacts hold the
// operators' logs.
func PodLogs(ctx context.Context, cs kubernetes.Interface, ns, dir string) error {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) == 0 {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var errs []error
	for _, pod := range pods.Items {
		statuses := append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
		for _, st := range statuses {
			for _, previous := range []bool{false, true} {
				if previous && st.RestartCount == 0 {
					continue
				}
				name := pod.Name + "_" + st.Name + ".log"
				if previous {
					name = pod.Name + "_" + st.Name + ".previous.log"
				}
				errs = append(errs, copyPodLog(ctx, cs, ns, pod.Name, &corev1.PodLogOptions{Container: st.Name, Previous: previous,
					LimitBytes: ptr.To[int64](podLogLimit)}, filepath.Join(dir, name)))
			}
		}
	}
	return errors.Join(errs...)
}

func copyPodLog(ctx context.Context, cs kubernetes.Interface, ns, pod string, opts *corev1.PodLogOptions, path string) error {
	rc, err := cs.CoreV1().Pods(ns).GetLogs(pod, opts).Stream(ctx)
	if err != nil {
		return fmt.Errorf("log of %s/%s container %s (previous %v): %w", ns, pod, opts.Container, opts.Previous, err)
	}
	defer rc.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, rc)
	return errors.Join(err, f.Close())
}

func dumpEvents(ctx context.Context, c client.Client, ns, path string) error {
	events := &corev1.EventList{}
	if err := c.List(ctx, events, client.InNamespace(ns)); err != nil {
		return err
	}
	return WriteEvents(path, events.Items)
}

// WriteEvents writes events to path, one line each in the order they happened.
func WriteEvents(path string, events []corev1.Event) error {
	sort.Slice(events, func(i, j int) bool { return eventTime(events[i]).Before(eventTime(events[j])) })
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "%s %s %s %s/%s: %s (x%d)\n", eventTime(e).Format(time.RFC3339), e.Type, e.Reason,
			e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message, max(e.Count, 1))
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func eventTime(e corev1.Event) time.Time {
	if !e.LastTimestamp.IsZero() {
		return e.LastTimestamp.Time
	}
	if !e.EventTime.IsZero() {
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// dumpOLMClusterObjects dumps the cluster-scoped objects OLM made for operators (OLM v0's cluster RBAC,
// OLM v1's cluster RBAC and CRDs, by their owner labels) and the copies operand cleanup keeps: their
// owner references and finalizers say why one stayed after an uninstall.
func dumpOLMClusterObjects(ctx context.Context, c client.Client, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var errs []error
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
		{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
	} {
		kind := gvk.Kind
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(kind + "List"))
		if err := c.List(ctx, list); err != nil {
			errs = append(errs, err)
			continue
		}
		var keep []unstructured.Unstructured
		for _, it := range list.Items {
			l := it.GetLabels()
			if (l["olm.owner"] != "" && kind != "CustomResourceDefinition") || l["app.kubernetes.io/managed-by"] == "operand-cleanup" || l[ownerKindLabel] != "" {
				keep = append(keep, it)
			}
		}
		errs = append(errs, writeYAML(filepath.Join(dir, strings.ToLower(kind)+"s.yaml"), keep))
	}
	return errors.Join(errs...)
}

// alwaysClusterKinds are dumped in full whenever the server serves them: OLM v1's ClusterExtensions
// (their finalizers, deletionTimestamp and conditions, operand-cleanup's cleanup-e2e.io/Uninstall too,
// say where an uninstall stopped).
var alwaysClusterKinds = []schema.GroupVersionKind{{Group: "olm.operatorframework.io", Version: "v1", Kind: "ClusterExtension"}}

// dumpClusterKinds dumps every object of the cluster-scoped kinds to dir/<kind>.<group>.yaml; a kind
// the server does not serve (no OLM v1) is skipped.
func dumpClusterKinds(ctx context.Context, c client.Client, gvks []schema.GroupVersionKind, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var errs []error
	seen := map[schema.GroupVersionKind]bool{}
	for _, gvk := range gvks {
		if seen[gvk] {
			continue
		}
		seen[gvk] = true
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list); err != nil {
			if !meta.IsNoMatchError(err) && !discovery.IsGroupDiscoveryFailedError(err) && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("listing %s: %w", gvk.Kind, err))
			}
			continue
		}
		if len(list.Items) == 0 {
			continue
		}
		errs = append(errs, writeYAML(filepath.Join(dir, strings.ToLower(gvk.Kind)+"."+gvk.Group+".yaml"), list.Items))
	}
	return errors.Join(errs...)
}

// ownerKindLabel marks what operator-controller installed: those objects keep their managedFields,
// which name who last wrote their ownerReferences (the garbage collector, operator-controller's helm
// apply, the operand-cleanup controller's holds) and when.
const ownerKindLabel = "olm.operatorframework.io/owner-kind"

func writeYAML(path string, items []unstructured.Unstructured) error {
	var b strings.Builder
	for _, it := range items {
		if it.GetLabels()[ownerKindLabel] == "" {
			it.SetManagedFields(nil)
		}
		data, err := yaml.Marshal(it.Object)
		if err != nil {
			return err
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
