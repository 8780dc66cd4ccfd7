package olmv1

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Verdict is what an uninstall did to one custom resource.
type Verdict string

const (
	// Finalized: the CR is gone and its operator's finalizer work is done (the Finalized check holds).
	Finalized Verdict = "finalized by its operator"
	// RemovedUnfinalized: the CR is gone but its operator's finalizer work is not done: it was removed
	// before (or without) its operator handling the deletion.
	RemovedUnfinalized Verdict = "removed before the operator ran"
	// StuckTerminating: the CR still exists, pending deletion, with finalizers no one will remove.
	StuckTerminating Verdict = "stuck Terminating"
	// NotDeleted: the CR still exists and nothing asked for its deletion.
	NotDeleted Verdict = "not deleted"
)

// CRVerdict is one CR's verdict, with what it rests on.
type CRVerdict struct {
	Kind, Namespace, Name string
	Verdict               Verdict
	Detail                string
}

func (v CRVerdict) String() string {
	return fmt.Sprintf("%s %s/%s: %s (%s)", v.Kind, v.Namespace, v.Name, v.Verdict, v.Detail)
}

// Judge gives each of objs its verdict, once nothing will change any more (the operator stopped).
// finalized says whether the operator's finalizer work for a CR is done, e.g. fixtures/widget.Finalized.
func Judge(ctx context.Context, c client.Client, objs []*unstructured.Unstructured,
	finalized func(context.Context, client.Client, *unstructured.Unstructured) error) ([]CRVerdict, error) {
	var out []CRVerdict
	for _, o := range objs {
		v := CRVerdict{Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName()}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.GroupVersionKind())
		err := c.Get(ctx, client.ObjectKeyFromObject(o), live)
		switch {
		case apierrors.IsNotFound(err):
			if ferr := finalized(ctx, c, o); ferr != nil {
				v.Verdict, v.Detail = RemovedUnfinalized, "gone, but "+ferr.Error()
			} else {
				v.Verdict, v.Detail = Finalized, "gone, its finalizer's work done"
			}
		case err != nil:
			return nil, fmt.Errorf("judge %s %s/%s: %w", v.Kind, v.Namespace, v.Name, err)
		case live.GetDeletionTimestamp() != nil:
			v.Verdict = StuckTerminating
			v.Detail = fmt.Sprintf("deletionTimestamp %s, finalizers %v", live.GetDeletionTimestamp().UTC().Format("15:04:05"), live.GetFinalizers())
		default:
			v.Verdict, v.Detail = NotDeleted, fmt.Sprintf("finalizers %v", live.GetFinalizers())
		}
		out = append(out, v)
	}
	return out, nil
}

// Report is one line per verdict, for a failure message.
func Report(vs []CRVerdict) string {
	lines := make([]string, len(vs))
	for i, v := range vs {
		lines[i] = "  " + v.String()
	}
	return strings.Join(lines, "\n")
}

func runtimeFromUnstructured(m map[string]any, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, into)
}
