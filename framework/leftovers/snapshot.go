// Package leftovers reports what an operator left behind: it snapshots the metadata of every listable
// object (cluster-scoped, and in the namespaces it is told about) before an operator is installed and
// after it was uninstalled, and diffs the two, keeping what can be attributed to the installation.
//
// Snapshots use the metadata client (PartialObjectMetadata lists), so they cost one list per resource
// type and namespace and never transfer object bodies. Churn (events, leases, endpoints, OLM's copied
// CSVs and OperatorGroup ClusterRoles, the framework's probe objects) is never reported; see
// DefaultIgnore and SkippedResources. OperatorGroup ClusterRoles whose group is gone are OLM's leak and
// listed apart (Report.OLMOrphans), never as the operator's.
//
// On a cluster where other things happen at the same time (parallel specs, other users), a new object
// outside the installation's namespaces counts only when something links it to the installation: an
// ownerReference, a label whose value names one of its namespaces or objects, or its name containing
// one of its namespaces. What nothing links is listed apart as "not attributed" and never fails a check.
package leftovers

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
)

// Object is the metadata of one object in a snapshot.
type Object struct {
	Group, Version, Kind, Resource string
	// Namespace is empty for cluster-scoped objects.
	Namespace, Name string
	UID             types.UID
	Labels          map[string]string
	Annotations     map[string]string
	OwnerReferences []metav1.OwnerReference
	// Managers are the field managers of the object (managedFields), earliest first.
	Managers          []Manager
	CreationTimestamp time.Time
	// Deleting is true when the object has a deletionTimestamp (it waits for finalizers).
	Deleting bool
}

// Manager is one managedFields entry: who wrote the object, how and when.
type Manager struct {
	Name      string
	Operation string
	Time      time.Time
}

// GroupKind renders the object's kind with its group ("ConfigMap", "Widget.fixtures.cleanup-e2e.io").
func (o Object) GroupKind() string {
	if o.Group == "" {
		return o.Kind
	}
	return o.Kind + "." + o.Group
}

// Key renders the object as "Kind namespace/name" (or "Kind name" when cluster-scoped).
func (o Object) Key() string {
	if o.Namespace == "" {
		return o.GroupKind() + " " + o.Name
	}
	return o.GroupKind() + " " + o.Namespace + "/" + o.Name
}

// CreatedBy is the best guess at who created the object: the field manager of the earliest
// managedFields entry ("" when the server keeps none). The server derives it from the client's user
// agent unless the client names a field manager; the envtest provider's local runtime gives each
// in-process operator a user agent naming its image and Deployment for that reason.
func (o Object) CreatedBy() string {
	if len(o.Managers) == 0 {
		return ""
	}
	return o.Managers[0].Name
}

// Snapshot is the metadata of every object listed at one point in time.
type Snapshot struct {
	Taken time.Time
	// Namespaces are the namespaces whose namespaced objects were listed.
	Namespaces []string
	Objects    []Object
	// Listed are the resource types ("resource.group") every list of which succeeded: an object of
	// such a type in a listed namespace is either in Objects or did not exist.
	Listed []string
	// Errors are the resources that could not be listed (discovery of an aggregated API failing, no
	// permission on an existing cluster); a diff cannot see leftovers of those.
	Errors []string
}

// ByUID indexes the snapshot.
func (s *Snapshot) ByUID() map[types.UID]*Object {
	out := make(map[types.UID]*Object, len(s.Objects))
	for i := range s.Objects {
		out[s.Objects[i].UID] = &s.Objects[i]
	}
	return out
}

// SkippedResources are never listed ("resource.group", "resource" for the core group): churn that
// comes and goes on its own, aggregated views of other objects, and create-only review APIs.
var SkippedResources = []string{
	"events", "events.events.k8s.io", "leases.coordination.k8s.io", "endpoints",
	"endpointslices.discovery.k8s.io", "controllerrevisions.apps", "componentstatuses",
	"tokenreviews.authentication.k8s.io", "selfsubjectreviews.authentication.k8s.io",
	"subjectaccessreviews.authorization.k8s.io", "selfsubjectaccessreviews.authorization.k8s.io",
	"localsubjectaccessreviews.authorization.k8s.io", "selfsubjectrulesreviews.authorization.k8s.io",
	"packagemanifests.packages.operators.coreos.com", "pods.metrics.k8s.io", "nodes.metrics.k8s.io",
}

// Snapshotter takes snapshots of one cluster.
type Snapshotter struct {
	md   metadata.Interface
	disc discovery.DiscoveryInterface
	skip map[string]bool
	// Workers is how many lists run at once (default 4).
	Workers int
}

// NewSnapshotter builds metadata and discovery clients for kube.ClientConfig(cfg) (cfg is not
// mutated; its rate limits, when unset, allow a snapshot of a few namespaces in a second, not a
// minute). skip adds resources to SkippedResources ("resource.group").
func NewSnapshotter(cfg *rest.Config, skip ...string) (*Snapshotter, error) {
	cfg = kube.ClientConfig(cfg)
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	s := &Snapshotter{md: md, disc: disc, skip: map[string]bool{}, Workers: 4}
	for _, r := range append(append([]string{}, SkippedResources...), skip...) {
		s.skip[r] = true
	}
	return s, nil
}

type listTarget struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
}

func (t listTarget) id() string { return resourceID(t.gvr.Group, t.gvr.Resource) }

// Take lists every listable resource type (preferred versions) cluster-wide for cluster-scoped ones
// and in each of the namespaces for namespaced ones. Resources that cannot be listed are recorded in
// Errors; only a failed discovery (nothing to list) is an error.
func (s *Snapshotter) Take(ctx context.Context, namespaces ...string) (*Snapshot, error) {
	snap := &Snapshot{Taken: time.Now(), Namespaces: dedup(namespaces)}
	lists, err := s.disc.ServerPreferredResources()
	if err != nil {
		if len(lists) == 0 {
			return nil, fmt.Errorf("discovery: %w", err)
		}
		snap.Errors = append(snap.Errors, "discovery (partial): "+err.Error())
	}
	var targets []listTarget
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerb(r.Verbs, "list") || s.skip[resourceID(gv.Group, r.Name)] {
				continue
			}
			targets = append(targets, listTarget{gvr: gv.WithResource(r.Name), kind: r.Kind, namespaced: r.Namespaced})
		}
	}

	type job struct {
		t  listTarget
		ns string
	}
	var jobs []job
	for _, t := range targets {
		if !t.namespaced {
			jobs = append(jobs, job{t: t})
			continue
		}
		for _, ns := range snap.Namespaces {
			jobs = append(jobs, job{t: t, ns: ns})
		}
	}
	workers := max(s.Workers, 1)
	ch := make(chan job)
	var mu sync.Mutex
	var wg sync.WaitGroup
	failed := map[string]bool{}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				objs, err := s.list(ctx, j.t, j.ns)
				mu.Lock()
				if err != nil {
					where := j.t.gvr.String()
					if j.ns != "" {
						where += " in " + j.ns
					}
					snap.Errors = append(snap.Errors, where+": "+err.Error())
					failed[j.t.id()] = true
				}
				snap.Objects = append(snap.Objects, objs...)
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	snap.Objects = dedupObjects(snap.Objects)
	for _, t := range targets {
		if !failed[t.id()] {
			snap.Listed = append(snap.Listed, t.id())
		}
	}
	snap.Listed = dedup(snap.Listed)
	sort.Strings(snap.Errors)
	return snap, nil
}

func (s *Snapshotter) list(ctx context.Context, t listTarget, ns string) ([]Object, error) {
	var out []Object
	opts := metav1.ListOptions{Limit: 500}
	for {
		var (
			l   *metav1.PartialObjectMetadataList
			err error
		)
		if t.namespaced {
			l, err = s.md.Resource(t.gvr).Namespace(ns).List(ctx, opts)
		} else {
			l, err = s.md.Resource(t.gvr).List(ctx, opts)
		}
		if err != nil {
			return out, err
		}
		for i := range l.Items {
			out = append(out, fromMeta(t, &l.Items[i]))
		}
		if l.Continue == "" {
			return out, nil
		}
		opts.Continue = l.Continue
	}
}

func fromMeta(t listTarget, m *metav1.PartialObjectMetadata) Object {
	o := Object{Group: t.gvr.Group, Version: t.gvr.Version, Kind: t.kind, Resource: t.gvr.Resource,
		Namespace: m.Namespace, Name: m.Name, UID: m.UID, Labels: m.Labels, Annotations: m.Annotations,
		OwnerReferences: m.OwnerReferences, CreationTimestamp: m.CreationTimestamp.Time, Deleting: m.DeletionTimestamp != nil}
	for _, f := range m.ManagedFields {
		mg := Manager{Name: f.Manager, Operation: string(f.Operation)}
		if f.Time != nil {
			mg.Time = f.Time.Time
		}
		o.Managers = append(o.Managers, mg)
	}
	sort.SliceStable(o.Managers, func(i, j int) bool { return o.Managers[i].Time.Before(o.Managers[j].Time) })
	return o
}

// dedupObjects keeps one entry per UID (an object served by two groups, e.g. during a migration) and
// sorts by kind, namespace, name.
func dedupObjects(objs []Object) []Object {
	seen := map[types.UID]bool{}
	out := objs[:0]
	for _, o := range objs {
		if o.UID != "" && seen[o.UID] {
			continue
		}
		seen[o.UID] = true
		out = append(out, o)
	}
	sortObjects(out)
	return out
}

func sortObjects(objs []Object) {
	sort.Slice(objs, func(i, j int) bool {
		a, b := objs[i], objs[j]
		if a.GroupKind() != b.GroupKind() {
			return a.GroupKind() < b.GroupKind()
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
}

func resourceID(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}

func hasVerb(verbs []string, v string) bool {
	for _, x := range verbs {
		if x == v {
			return true
		}
	}
	return false
}

func dedup(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}
