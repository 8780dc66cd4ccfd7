package cleanuppass

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Type is one kind of object a plan cleans up.
type Type struct {
	GVK        schema.GroupVersionKind
	Namespaced bool
}

// Plan is what one pass may delete and what keeps the cleanup pending. The caller builds it from live
// state; Verification re-reads it before Deletes.
type Plan interface {
	// Types lists the kinds to list.
	Types() []Type
	// Namespaces returns where to list t ("" is one cluster-wide list): a superset of where Allows
	// permits Deletes.
	Namespaces(t Type) []string
	// Allows re-checks one object right before its Delete; a non-nil error refuses it.
	Allows(gk schema.GroupKind, namespace string) error
	// Counts reports whether an object keeps the cleanup pending: Allows permits it, or it is being
	// deleted where the operator must finalize it.
	Counts(gk schema.GroupKind, namespace string, deleting bool) bool
	// AllCount reports that every object of gk listed in namespace ("" cluster-wide) counts, so that
	// AnyLive can answer from one item.
	AllCount(gk schema.GroupKind, namespace string) bool
}

// WaitOnly is implemented by a Plan with kinds whose objects count but are never deleted by a pass
// (their CRD is being deleted: the API server deletes them): found, each is treated as being deleted
// already, waited for and never sent a Delete.
type WaitOnly interface {
	WaitsOnly(gk schema.GroupKind) bool
}

// Object is one object found by a pass (metadata only).
type Object struct {
	GVK        schema.GroupVersionKind
	Namespace  string
	Name       string
	UID        types.UID
	Deleting   bool
	Finalizers []string
}

func (o Object) String() string {
	gk := schema.GroupKind{Group: o.GVK.Group, Kind: o.GVK.Kind}
	if o.Namespace == "" {
		return fmt.Sprintf("%s %s", gk, o.Name)
	}
	return fmt.Sprintf("%s %s/%s", gk, o.Namespace, o.Name)
}

// Less orders objects by group, kind, namespace, name: the order of pending lists.
func Less(a, b Object) bool {
	if a.GVK.Group != b.GVK.Group {
		return a.GVK.Group < b.GVK.Group
	}
	if a.GVK.Kind != b.GVK.Kind {
		return a.GVK.Kind < b.GVK.Kind
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// MetadataList is an empty metadata-only list of gvk.
func MetadataList(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	return l
}
