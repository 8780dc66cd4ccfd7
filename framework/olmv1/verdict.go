package olmv1

import (
	"context"
	"fmt"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/auditlog"
	"github.com/cleanup-e2e/cleanup-e2e/framework/crashlog"
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

// JudgeOption adds to what Judge says.
type JudgeOption func(*judgeOptions)

type judgeOptions struct {
	operatorLog func() (string, error)
	auditLog    func() ([]byte, error)
}

// OperatorLog lets Judge quote, for each CR its operator did not finalize (stuck Terminating, or
// removed before the operator ran), the last error the operator logged about it (crashlog.CauseAbout):
// log returns everything the operator wrote, also after it was uninstalled (envtest: the local
// runtime's log; a cluster with nodes: framework/podlogs). Judge calls it once, when a CR needs it.
func OperatorLog(log func() (string, error)) JudgeOption {
	return func(o *judgeOptions) { o.operatorLog = log }
}

// AuditLog lets Judge name, for each CR removed before its operator ran, the write that let it go: the
// last one of the CR in the API server's audit log (framework/auditlog), the patch that removed its last
// finalizer, by a user, a script or a controller. log returns the audit log (cluster.AuditLogs); Judge
// calls it once, when a CR needs it.
func AuditLog(log func() ([]byte, error)) JudgeOption {
	return func(o *judgeOptions) { o.auditLog = log }
}

// Judge gives each of objs its verdict, once nothing will change any more (the operator stopped).
// finalized says whether the operator's finalizer work for a CR is done, e.g. fixtures/widget.Finalized.
func Judge(ctx context.Context, c client.Client, objs []*unstructured.Unstructured,
	finalized func(context.Context, client.Client, *unstructured.Unstructured) error, opts ...JudgeOption) ([]CRVerdict, error) {
	var o judgeOptions
	for _, opt := range opts {
		opt(&o)
	}
	said := o.operatorSaid()
	letGo, deleted := o.audited(c)
	var out []CRVerdict
	crds := map[schema.GroupVersionKind]crdState{} // read once per kind
	for _, o := range objs {
		v := CRVerdict{Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName()}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.GroupVersionKind())
		err := c.Get(ctx, client.ObjectKeyFromObject(o), live)
		switch {
		case apierrors.IsNotFound(err):
			if ferr := finalized(ctx, c, o); ferr != nil {
				v.Verdict, v.Detail = RemovedUnfinalized, "gone, but "+ferr.Error()+letGo(o)+said(o)
			} else {
				v.Verdict, v.Detail = Finalized, "gone, its finalizer's work done"
			}
		case err != nil:
			return nil, fmt.Errorf("judge %s %s/%s: %w", v.Kind, v.Namespace, v.Name, err)
		case live.GetDeletionTimestamp() != nil:
			v.Verdict = StuckTerminating
			v.Detail = fmt.Sprintf("deletionTimestamp %s, finalizers %v", live.GetDeletionTimestamp().UTC().Format("15:04:05"), live.GetFinalizers())
			gvk := live.GroupVersionKind()
			crd, ok := crds[gvk]
			if !ok {
				crd = readCRD(ctx, c, gvk)
				crds[gvk] = crd
			}
			if cause := crd.deleted(live); cause != "" {
				v.Detail += "; " + cause
			}
			v.Detail += deleted(live) + said(live)
		default:
			v.Verdict, v.Detail = NotDeleted, fmt.Sprintf("finalizers %v", live.GetFinalizers())
		}
		out = append(out, v)
	}
	return out, nil
}

// OperatorLogUnread starts what a verdict says when OperatorLog's log could not be read.
const OperatorLogUnread = "its operator's log could not be read"

// operatorSaid returns what the operator logged last about a CR, as a "; ..." suffix of its verdict's
// detail ("" without OperatorLog). The log is read once, at the first CR that needs it.
func (o judgeOptions) operatorSaid() func(*unstructured.Unstructured) string {
	if o.operatorLog == nil {
		return func(*unstructured.Unstructured) string { return "" }
	}
	var (
		read bool
		log  string
		err  error
	)
	return func(cr *unstructured.Unstructured) string {
		if !read {
			log, err = o.operatorLog()
			read = true
		}
		if q, ok := crashlog.CauseAbout(log, cr.GetName(), cr.GetNamespace()); ok {
			return "; its operator's last error about it: " + q
		}
		if err != nil {
			return "; " + OperatorLogUnread + ": " + err.Error()
		}
		if last := crashlog.LastLine(log, cr.GetName(), cr.GetNamespace()); last != "" {
			return "; its operator logged no error about it, its last line about it: " + last
		}
		if end := crashlog.LastLine(log); end != "" {
			return "; its operator logged nothing about it, and its log ends: " + end
		}
		return "; its operator logged nothing"
	}
}

// AuditLogUnread starts what a verdict says when AuditLog's log could not be read.
const AuditLogUnread = "the API server's audit log could not be read"

// audited returns, as "; ..." suffixes of a verdict's detail ("" without AuditLog), the write that let a
// gone CR go (letGo), and the request that deleted a CR stuck Terminating when one did (deleted: none
// means the API server did, which the CRD's state already says). The log is read once, at the first CR
// that needs it.
func (o judgeOptions) audited(c client.Client) (letGo, deleted func(*unstructured.Unstructured) string) {
	if o.auditLog == nil {
		none := func(*unstructured.Unstructured) string { return "" }
		return none, none
	}
	var (
		read bool
		log  []byte
		err  error
	)
	with := func(f func(*unstructured.Unstructured) string) func(*unstructured.Unstructured) string {
		return func(cr *unstructured.Unstructured) string {
			if !read {
				log, err = o.auditLog()
				read = true
			}
			if err != nil {
				return "; " + AuditLogUnread + ": " + err.Error()
			}
			return f(cr)
		}
	}
	letGo = with(func(cr *unstructured.Unstructured) string { return "; " + auditlog.LetGo(log, c.RESTMapper(), cr) })
	deleted = with(func(cr *unstructured.Unstructured) string {
		if w, ok := auditlog.Deleter(log, auditlog.ObjectOf(c.RESTMapper(), cr), time.Now()); ok {
			return "; the request that deleted it: " + w.String()
		}
		return ""
	})
	return letGo, deleted
}

// crdState is a CR kind's CRD as Judge read it: its name, and since when it is being deleted (nil: it
// is not, or it could not be read).
type crdState struct {
	name     string
	deleting *metav1.Time
}

func readCRD(ctx context.Context, c client.Client, gvk schema.GroupVersionKind) crdState {
	m, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return crdState{}
	}
	name := m.Resource.Resource + "." + gvk.Group
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, types.NamespacedName{Name: name}, crd); err != nil {
		return crdState{name: name}
	}
	return crdState{name: name, deleting: crd.DeletionTimestamp}
}

// deleted says, for a CR pending deletion, that its CRD is being deleted, and that this deleted the CR
// when the CR's deletion is not older than the CRD's (the API server deletes every CR of a CRD being
// deleted: condition Terminating, InstanceDeletionInProgress). "" when the CRD is not being deleted.
func (s crdState) deleted(live *unstructured.Unstructured) string {
	if s.deleting == nil {
		return ""
	}
	out := fmt.Sprintf("its CRD %s Terminating since %s", s.name, s.deleting.UTC().Format("15:04:05"))
	if !live.GetDeletionTimestamp().Before(s.deleting) {
		out += ", which deleted it (the API server deletes every CR of a CRD being deleted)"
	}
	return out
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
