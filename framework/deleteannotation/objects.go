package deleteannotation

import (
	"context"
	"sort"

	. "github.com/onsi/ginkgo/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

// Marked returns the objects of the payload's manifests annotated release.openshift.io/delete: "true".
func Marked(p *payload.Payload) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, m := range p.Manifests {
		if marked(m) {
			out = append(out, m.Obj)
		}
	}
	return out
}

// Applied returns the objects of the payload's manifests without the delete annotation.
func Applied(p *payload.Payload) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, m := range p.Manifests {
		if _, found := m.Obj.GetAnnotations()[payload.DeleteAnnotation]; !found {
			out = append(out, m.Obj)
		}
	}
	return out
}

// Dropped returns the objects of from that have no manifest (same group, kind, namespace, name) in to.
func Dropped(from, to *payload.Payload) []*unstructured.Unstructured {
	in := map[string]bool{}
	for _, m := range to.Manifests {
		in[objectKey(m.Obj)] = true
	}
	var out []*unstructured.Unstructured
	for _, m := range from.Manifests {
		if !in[objectKey(m.Obj)] {
			out = append(out, m.Obj)
		}
	}
	return out
}

// WithoutMarked rebuilds p at version without its delete-annotated manifests: the release before a
// removal on a cluster that never had the removed component.
func WithoutMarked(p *payload.Payload, version string) *payloadtest.Builder {
	files := map[string][]interface{}{}
	for _, m := range p.Manifests {
		if !marked(m) {
			files[m.Filename] = append(files[m.Filename], m.Obj)
		}
	}
	b := payloadtest.New(version)
	for name, docs := range files {
		b.File(name, docs...)
	}
	return b
}

func marked(m *payload.Manifest) bool {
	del, err := payload.ValidDeleteAnnotation(m.Obj.GetAnnotations())
	return del && err == nil
}

// ResourceOf names obj as the applier's messages do (`configmap "ns/name"`); obj must carry no
// namespace when it is cluster-scoped, as payload manifests do.
func ResourceOf(obj *unstructured.Unstructured) payload.Resource {
	gvk := obj.GroupVersionKind()
	return payload.Resource{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// ResourceNames returns the sorted ResourceOf strings of objs.
func ResourceNames(objs []*unstructured.Unstructured) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, ResourceOf(o).String())
	}
	sort.Strings(out)
	return out
}

// deleteObjects deletes objs in reverse order, stripping finalizers first (except a CRD's, whose
// finalizer removes its custom resources), ignoring objects or kinds already gone.
func deleteObjects(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) {
	var crds []*unstructured.Unstructured
	for i := len(objs) - 1; i >= 0; i-- {
		if objs[i].GetKind() == "CustomResourceDefinition" {
			crds = append(crds, objs[i])
			continue
		}
		deleteObject(ctx, c, objs[i], true)
	}
	for _, o := range crds {
		deleteObject(ctx, c, o, false)
	}
}

func deleteObject(ctx context.Context, c client.Client, obj *unstructured.Unstructured, strip bool) {
	live, err := kube.Get(ctx, c, obj)
	if err != nil {
		return
	}
	if strip && len(live.GetFinalizers()) > 0 {
		_ = c.Patch(ctx, live, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)))
	}
	err = c.Delete(ctx, live, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) {
		GinkgoWriter.Printf("cleanup: delete %s: %v\n", ResourceOf(obj), err)
	}
}

// Kept returns the objects removal applies that installed already had: what the update must leave
// in place.
func Kept(installed, removal *payload.Payload) []*unstructured.Unstructured {
	had := map[string]bool{}
	for _, m := range installed.Manifests {
		had[objectKey(m.Obj)] = true
	}
	var out []*unstructured.Unstructured
	for _, o := range Applied(removal) {
		if had[objectKey(o)] {
			out = append(out, o)
		}
	}
	return out
}
