package specs

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/onsi/gomega"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
	"github.com/cleanup-e2e/cleanup-e2e/framework/hold"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
)

// operands are the sample CRs a spec created, by where they live.
type operands struct {
	c     client.Client
	items []*unstructured.Unstructured
}

// createSamples creates the samples for each namespace with create. Cluster-scoped samples are created
// once per namespace with the namespace appended to their name (so parallel specs never share one).
func createSamples(ctx context.Context, g gomega.Gomega, c client.Client, create func(context.Context, client.Object) error,
	samples func(string) []*unstructured.Unstructured, namespaces ...string) *operands {
	ops := &operands{c: c}
	for _, ns := range namespaces {
		for _, s := range samples(ns) {
			obj := s.DeepCopy()
			namespaced, err := c.IsObjectNamespaced(obj)
			g.Expect(err).NotTo(HaveOccurred(), "is %s namespaced? (is its CRD installed?)", obj.GroupVersionKind())
			if namespaced {
				obj.SetNamespace(ns)
			} else {
				obj.SetNamespace("")
				obj.SetName(obj.GetName() + "-" + ns)
			}
			err = explainCRDTerminating(ctx, c, obj.GroupVersionKind(), create(ctx, obj))
			g.Expect(readable(err)).To(Succeed(), "create sample %s %s", obj.GetKind(), describeKey(obj))
			ops.items = append(ops.items, obj)
		}
	}
	return ops
}

// readable makes a failed assertion print err's message once: Gomega's Succeed prints a
// FormattedGomegaError as it is, where HaveOccurred prints the message, then the error's value (the
// message again, quoted: a long verdict read twice).
func readable(err error) error {
	if err == nil {
		return nil
	}
	return readableError{err}
}

type readableError struct{ error }

func (e readableError) FormattedGomegaError() string { return e.Error() }
func (e readableError) Unwrap() error                { return e.error }

// webhookRetry is how often a create refused because a webhook cannot be reached yet is tried again.
const webhookRetry = 250 * time.Millisecond

// createRetryingWebhooks is c.Create, tried again for up to window while the API server cannot reach
// a webhook the object goes through (olm.IsWebhookUnavailable: the operator's webhook Service has no
// routed endpoint yet). A webhook's answer, such as a denial, is returned at once. When the webhook
// never answers, the error says how long it was tried and what explain says (the webhook, its Service
// and the operator's readiness).
func createRetryingWebhooks(ctx context.Context, c client.Client, obj client.Object, window time.Duration, explain func() string) error {
	start := time.Now()
	for {
		err := c.Create(ctx, obj)
		if !olm.IsWebhookUnavailable(err) {
			return err
		}
		if time.Since(start) >= window {
			return fmt.Errorf("%w; the webhook did not answer for %s (intervals.%s, scaled by %s): %s", err,
				time.Since(start).Round(100*time.Millisecond), "WebhookServing", envvar.WaitScale.Name, explain())
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(webhookRetry):
		}
	}
}

func describeKey(o client.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// where splits the operands: in the given namespaces (cluster-scoped ones count as inside only when
// clusterScopedInside) and the rest.
func (o *operands) where(namespaces []string, clusterScopedInside bool) (inside, outside []*unstructured.Unstructured) {
	set := map[string]bool{}
	for _, n := range namespaces {
		set[n] = true
	}
	for _, it := range o.items {
		in := set[it.GetNamespace()]
		if it.GetNamespace() == "" {
			in = clusterScopedInside
		}
		if in {
			inside = append(inside, it)
		} else {
			outside = append(outside, it)
		}
	}
	return inside, outside
}

// existing returns "Kind ns/name" of the given operands that still exist.
func (o *operands) existing(ctx context.Context, objs []*unstructured.Unstructured) ([]string, error) {
	live, err := o.live(ctx, objs)
	if err != nil {
		return nil, err
	}
	return describeOperands(live), nil
}

// deleted describes those of objs that are gone or being deleted.
func (o *operands) deleted(ctx context.Context, objs []*unstructured.Unstructured) ([]string, error) {
	live, err := o.live(ctx, objs)
	if err != nil {
		return nil, err
	}
	key := func(o *unstructured.Unstructured) string { return o.GetKind() + " " + describeKey(o) }
	there := map[string]bool{}
	var out []string
	for _, l := range live {
		there[key(l)] = true
		if l.GetDeletionTimestamp() != nil {
			out = append(out, describeOperand(l, time.Now()))
		}
	}
	for _, it := range objs {
		if !there[key(it)] {
			out = append(out, key(it)+" (gone)")
		}
	}
	sort.Strings(out)
	return out, nil
}

// live reads those of objs that still exist.
func (o *operands) live(ctx context.Context, objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, it := range objs {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(it.GroupVersionKind())
		err := o.c.Get(ctx, types.NamespacedName{Namespace: it.GetNamespace(), Name: it.GetName()}, live)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, live)
	}
	return out, nil
}

// describeOperands is describeOperand of each of live, sorted.
func describeOperands(live []*unstructured.Unstructured) []string {
	out := make([]string, 0, len(live))
	for _, o := range live {
		out = append(out, describeOperand(o, time.Now()))
	}
	sort.Strings(out)
	return out
}

// describeOperand says what keeps a live operand: nothing deleted it, only the spec's hold, or
// finalizers the spec did not add — on a cleanup that stalls, usually the operator's own, which it has
// not removed (a failure must name that, not only that the CSV still lists the operand).
func describeOperand(o *unstructured.Unstructured, now time.Time) string {
	s := o.GetKind() + " " + describeKey(o)
	if o.GetDeletionTimestamp() == nil {
		return s + fmt.Sprintf(" (not being deleted; finalizers %v)", o.GetFinalizers())
	}
	var others []string
	for _, f := range o.GetFinalizers() {
		if f != hold.Finalizer {
			others = append(others, f)
		}
	}
	since := now.Sub(o.GetDeletionTimestamp().Time).Round(time.Second)
	if len(others) == 0 {
		return s + fmt.Sprintf(" (being deleted for %s, kept only by the spec's own hold %s)", since, hold.Finalizer)
	}
	return s + fmt.Sprintf(" (being deleted for %s, kept by finalizer(s) %v, which the spec did not add: the operator "+
		"that owns them has not removed them — its log is among this spec's artifacts)", since, others)
}

// others returns the operands not among objs (compared by kind, namespace and name).
func (o *operands) others(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	skip := map[string]bool{}
	for _, it := range objs {
		skip[it.GetKind()+" "+describeKey(it)] = true
	}
	var out []*unstructured.Unstructured
	for _, it := range o.items {
		if !skip[it.GetKind()+" "+describeKey(it)] {
			out = append(out, it)
		}
	}
	return out
}

// names renders operands as "Kind ns/name" for messages.
func names(objs []*unstructured.Unstructured) string {
	var s []string
	for _, o := range objs {
		s = append(s, o.GetKind()+" "+describeKey(o))
	}
	return strings.Join(s, ", ")
}
