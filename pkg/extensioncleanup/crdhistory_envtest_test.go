package extensioncleanup_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// crdHistory records every change of one CRD's UID, owner references or deletion, with the field
// managers that own its metadata.ownerReferences at that moment: a violation about the CRD can then say
// who gave it the owner the garbage collector deleted it for, instead of leaving that to the audit log.
type crdHistory struct {
	mu      sync.Mutex
	step    int
	entries []string
	last    string
	start   time.Time
	stop    func()
	done    chan struct{}
}

func startCRDHistory(ctx context.Context, cfg *rest.Config, name string) (*crdHistory, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	w, err := dyn.Resource(gvr).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return nil, fmt.Errorf("watching CRD %s: %w", name, err)
	}
	h := &crdHistory{start: time.Now(), stop: w.Stop, done: make(chan struct{})}
	go h.run(w)
	return h, nil
}

func (h *crdHistory) run(w watch.Interface) {
	defer close(h.done)
	for ev := range w.ResultChan() {
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		state := fmt.Sprintf("%s uid %s, owners %v", strings.ToLower(string(ev.Type)), shortUID(string(u.GetUID())), describeRefs(u.GetOwnerReferences()))
		if u.GetDeletionTimestamp() != nil {
			state += ", being deleted"
		}
		h.mu.Lock()
		if state != h.last {
			h.last = state
			h.entries = append(h.entries, fmt.Sprintf("+%s step %d: %s (ownerReferences set by %v)",
				time.Since(h.start).Round(time.Millisecond), h.step, state, refManagers(u)))
		}
		h.mu.Unlock()
	}
}

// Stamp sets the step recorded with the changes seen from now on.
func (h *crdHistory) Stamp(step int) {
	h.mu.Lock()
	h.step = step
	h.mu.Unlock()
}

// Last returns the last n changes, one per line.
func (h *crdHistory) Last(n int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return "\n      " + strings.Join(h.entries[max(0, len(h.entries)-n):], "\n      ")
}

func (h *crdHistory) Stop() {
	h.stop()
	<-h.done
}

func describeRefs(refs []metav1.OwnerReference) []string {
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		s := r.Kind + "/" + r.Name + "/" + shortUID(string(r.UID))
		if r.Controller != nil && *r.Controller {
			s += "(controller)"
		}
		out = append(out, s)
	}
	return out
}

// refManagers are the field managers that own metadata.ownerReferences (server-side field tracking).
func refManagers(u *unstructured.Unstructured) []string {
	var out []string
	for _, m := range u.GetManagedFields() {
		if m.FieldsV1 != nil && strings.Contains(string(m.FieldsV1.Raw), `"f:ownerReferences"`) && !slices.Contains(out, m.Manager) {
			out = append(out, m.Manager)
		}
	}
	return out
}

func shortUID(uid string) string { return uid[:min(8, len(uid))] }
