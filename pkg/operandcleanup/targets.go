package operandcleanup

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// targets is the set of namespaces an operator installation watches.
type targets struct {
	// all is true for an AllNamespaces (global) operator.
	all bool
	// namespaces is sorted; empty when all is true.
	namespaces []string
	// source says where the set came from, for messages.
	source string
}

func (t targets) contains(ns string) bool {
	if t.all {
		return true
	}
	i := sort.SearchStrings(t.namespaces, ns)
	return i < len(t.namespaces) && t.namespaces[i] == ns
}

func (t targets) String() string {
	if t.all {
		return "all namespaces"
	}
	return strings.Join(t.namespaces, ",")
}

// errNoTargets is returned when the operator's target namespaces cannot be determined. Cleanup must not
// guess: nothing is deleted until the input is fixed. on, when set, is another installation's CSV whose
// targets OLM has not set yet: its next change re-runs the cleanup (mapToWaiting).
type errNoTargets struct {
	msg string
	on  types.NamespacedName
}

func (e *errNoTargets) Error() string { return e.msg }

// parseTargets turns OLM's comma-joined namespace list into targets. Only an empty value (how OLM writes
// metav1.NamespaceAll) means all namespaces; empty elements next to real ones ("a,,b", "a,") are ignored,
// so a malformed value can never widen the set to the whole cluster.
func parseTargets(v, source string) targets {
	if strings.TrimSpace(v) == "" {
		return targets{all: true, source: source}
	}
	set := map[string]struct{}{}
	for _, ns := range strings.Split(v, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			set[ns] = struct{}{}
		}
	}
	out := make([]string, 0, len(set))
	for ns := range set {
		out = append(out, ns)
	}
	sort.Strings(out)
	return targets{namespaces: out, source: source}
}

// resolveTargets reads the CSV's olm.targetNamespaces annotation and falls back to the single
// OperatorGroup in the CSV's namespace (status.namespaces) when the annotation is missing.
func resolveTargets(ctx context.Context, r client.Reader, csv *v1alpha1.ClusterServiceVersion) (targets, error) {
	if v, ok := csv.GetAnnotations()[targetNamespacesAnno]; ok {
		return parseTargets(v, "annotation "+targetNamespacesAnno), nil
	}
	ogs := &operatorsv1.OperatorGroupList{}
	if err := r.List(ctx, ogs, client.InNamespace(csv.Namespace)); err != nil {
		return targets{}, err
	}
	switch n := len(ogs.Items); {
	case n == 0:
		return targets{}, &errNoTargets{msg: fmt.Sprintf("no %s annotation and no OperatorGroup in namespace %s: cannot tell the operator's target namespaces, nothing deleted", targetNamespacesAnno, csv.Namespace)}
	case n > 1:
		return targets{}, &errNoTargets{msg: fmt.Sprintf("no %s annotation and %d OperatorGroups in namespace %s: cannot tell the operator's target namespaces, nothing deleted", targetNamespacesAnno, n, csv.Namespace)}
	}
	og := &ogs.Items[0]
	if len(og.Status.Namespaces) == 0 {
		return targets{}, &errNoTargets{msg: fmt.Sprintf("no %s annotation and OperatorGroup %s/%s has no status.namespaces yet: nothing deleted", targetNamespacesAnno, og.Namespace, og.Name)}
	}
	src := "OperatorGroup " + og.Name
	if len(og.Status.Namespaces) == 1 && og.Status.Namespaces[0] == "" {
		return targets{all: true, source: src}, nil
	}
	for _, ns := range og.Status.Namespaces {
		if ns == "" {
			return targets{}, &errNoTargets{msg: fmt.Sprintf("OperatorGroup %s/%s lists all namespaces (\"\") next to named ones in status.namespaces: nothing deleted", og.Namespace, og.Name)}
		}
	}
	return parseTargets(strings.Join(og.Status.Namespaces, ","), src), nil
}

// encode writes t as OLM writes olm.targetNamespaces: comma-joined, "" for all namespaces. An empty set
// (a malformed value such as ",") is written "," so that it never reads back as all namespaces.
func (t targets) encode() string {
	switch {
	case t.all:
		return ""
	case len(t.namespaces) == 0:
		return ","
	}
	return strings.Join(t.namespaces, ",")
}

// intersect is the namespaces both sets hold.
func (t targets) intersect(u targets) targets {
	switch {
	case t.all && u.all:
		return targets{all: true, source: t.source}
	case t.all:
		return u
	case u.all:
		return t
	}
	var out []string
	for _, ns := range t.namespaces {
		if u.contains(ns) {
			out = append(out, ns)
		}
	}
	return targets{namespaces: out, source: t.source + " and " + u.source}
}

// unsafeIgnoreUninstallTargets is a test hook: true makes the controller forget the targets recorded when
// the uninstall began and follow the current ones only, which leaves a CR it deleted in a namespace that
// left the targets Terminating for ever. The randomized lifecycle test must catch it. Never set outside tests.
var unsafeIgnoreUninstallTargets atomic.Bool

// uninstallTargets returns the targets recorded when the CSV's uninstall began (UninstallTargetsAnnotation),
// and false when none are recorded yet.
func uninstallTargets(csv *v1alpha1.ClusterServiceVersion) (targets, bool) {
	v, ok := csv.GetAnnotations()[UninstallTargetsAnnotation]
	if !ok || unsafeIgnoreUninstallTargets.Load() {
		return targets{}, false
	}
	return parseTargets(v, "the targets when the uninstall began"), true
}

// union is the namespaces either set holds.
func (t targets) union(u targets) targets {
	if t.all || u.all {
		return targets{all: true, source: t.source + " and " + u.source}
	}
	return parseTargets(strings.Join(append(append([]string(nil), t.namespaces...), u.namespaces...), ","), t.source+" and "+u.source)
}
