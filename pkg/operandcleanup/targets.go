package operandcleanup

import (
	"context"
	"fmt"
	"sort"
	"strings"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
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
// guess: nothing is deleted until the input is fixed.
type errNoTargets struct{ msg string }

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
		return targets{}, &errNoTargets{fmt.Sprintf("no %s annotation and no OperatorGroup in namespace %s: cannot tell the operator's target namespaces, nothing deleted", targetNamespacesAnno, csv.Namespace)}
	case n > 1:
		return targets{}, &errNoTargets{fmt.Sprintf("no %s annotation and %d OperatorGroups in namespace %s: cannot tell the operator's target namespaces, nothing deleted", targetNamespacesAnno, n, csv.Namespace)}
	}
	og := &ogs.Items[0]
	if len(og.Status.Namespaces) == 0 {
		return targets{}, &errNoTargets{fmt.Sprintf("no %s annotation and OperatorGroup %s/%s has no status.namespaces yet: nothing deleted", targetNamespacesAnno, og.Namespace, og.Name)}
	}
	src := "OperatorGroup " + og.Name
	if len(og.Status.Namespaces) == 1 && og.Status.Namespaces[0] == "" {
		return targets{all: true, source: src}, nil
	}
	for _, ns := range og.Status.Namespaces {
		if ns == "" {
			return targets{}, &errNoTargets{fmt.Sprintf("OperatorGroup %s/%s lists all namespaces (\"\") next to named ones in status.namespaces: nothing deleted", og.Namespace, og.Name)}
		}
	}
	return parseTargets(strings.Join(og.Status.Namespaces, ","), src), nil
}
