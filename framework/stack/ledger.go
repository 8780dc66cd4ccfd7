package stack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// entry is an object the run created; Teardown deletes it only while its UID still matches.
type entry struct {
	gvk       schema.GroupVersionKind
	namespace string
	name      string
	uid       types.UID
}

func (e entry) String() string {
	if e.namespace == "" {
		return e.gvk.Kind + " " + e.name
	}
	return e.gvk.Kind + " " + e.namespace + "/" + e.name
}

func (e entry) object() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(e.gvk)
	u.SetNamespace(e.namespace)
	u.SetName(e.name)
	return u
}

// ledger is what the run created, in creation order.
type ledger struct {
	c       client.Client
	log     logr.Logger
	timeout time.Duration

	mu      sync.Mutex
	entries []entry
}

// recordLive records an object the run just created, reading its UID (an object that cannot be read
// is not recorded: without a UID it could not be deleted safely).
func (l *ledger) recordLive(ctx context.Context, gvk schema.GroupVersionKind, ns, name string) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := l.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u); err != nil {
		l.log.Info("not recording an object the run created: cannot read its UID", "object", gvk.Kind+" "+ns+"/"+name, "error", err)
		return
	}
	l.record(entry{gvk: gvk, namespace: ns, name: name, uid: u.GetUID()})
}

func (l *ledger) record(e entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, e)
}

func (l *ledger) created() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, len(l.entries))
	for i, e := range l.entries {
		out[i] = e.String()
	}
	return out
}

// remove deletes entries newest first (UID preconditions), then waits until each is gone.
func (l *ledger) remove(ctx context.Context, entries []entry) error {
	var errs []error
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		err := l.c.Delete(ctx, e.object(), client.Preconditions{UID: &e.uid}, client.PropagationPolicy("Background"))
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) { // gone, or someone else's by now
			errs = append(errs, fmt.Errorf("remove %s: %w", e, err))
		}
	}
	for _, e := range entries {
		if err := l.waitGone(ctx, e); err != nil {
			errs = append(errs, fmt.Errorf("%w%s", err, l.blockers(ctx, e)))
		}
	}
	return errors.Join(errs...)
}

func (l *ledger) waitGone(ctx context.Context, e entry) error {
	return intervals.Wait(ctx, intervals.Gone, func() (bool, string) {
		u := e.object()
		err := l.c.Get(ctx, client.ObjectKeyFromObject(u), u)
		if apierrors.IsNotFound(err) || (err == nil && u.GetUID() != e.uid) {
			return true, ""
		}
		var did string
		if err == nil && e.gvk.Kind == "CustomResourceDefinition" {
			did, err = finalizeAgainIfFailed(ctx, l.c, u, e.uid)
		}
		return false, fmt.Sprintf("%s is not gone yet (finalizers %v%s, error %v)%s", e, u.GetFinalizers(), deletionConditions(u), err, did)
	}, intervals.Within(l.timeout))
}

// deletionConditions are the conditions by which the API server says why an object it deletes is not
// gone yet (a CRD's Terminating: its instances; a Namespace's Namespace*: its content or finalizers),
// as ", Type=True Reason: message" each: a wait that times out names what held the object, not only
// that it was there.
func deletionConditions(u *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var out strings.Builder
	for _, c := range conds {
		m, _ := c.(map[string]any)
		typ, _ := m["type"].(string)
		if status, _ := m["status"].(string); status != "True" || (typ != "Terminating" && !strings.HasPrefix(typ, "Namespace")) {
			continue
		}
		reason, _ := m["reason"].(string)
		message, _ := m["message"].(string)
		fmt.Fprintf(&out, ", %s=True %s: %s", typ, reason, message)
	}
	return out.String()
}

// blockers says which custom resources of a CRD that will not go still hold finalizers.
func (l *ledger) blockers(ctx context.Context, e entry) string {
	if e.gvk.Kind != "CustomResourceDefinition" {
		return ""
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := l.c.Get(ctx, client.ObjectKey{Name: e.name}, crd); err != nil || len(crd.Spec.Versions) == 0 {
		return ""
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(crd.Spec.Group + "/" + storageVersion(crd))
	list.SetKind(crd.Spec.Names.ListKind)
	if err := l.c.List(ctx, list); err != nil {
		return fmt.Sprintf(" (list its %s: %v)", crd.Spec.Names.Plural, err)
	}
	var held []string
	for _, cr := range list.Items {
		if len(cr.GetFinalizers()) > 0 {
			held = append(held, fmt.Sprintf("%s %s finalizers %v", crd.Spec.Names.Kind, client.ObjectKeyFromObject(&cr), cr.GetFinalizers()))
		}
	}
	if len(held) == 0 {
		return ""
	}
	if len(held) > 5 {
		held = append(held[:5], fmt.Sprintf("and %d more", len(held)-5))
	}
	return "; custom resources still holding finalizers (is their operator gone?): " + strings.Join(held, ", ")
}

func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return crd.Spec.Versions[0].Name
}
