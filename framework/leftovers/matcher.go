package leftovers

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
)

// Matcher selects objects of a snapshot, to declare leftovers expected or to ignore churn. Every field
// set must match; empty fields match anything.
type Matcher struct {
	// Group is the API group ("" matches any group; match core objects by Kind or Resource).
	Group string
	// Kind (e.g. "ConfigMap") and Resource (e.g. "configmaps").
	Kind, Resource string
	// Namespace and Name are shell patterns (path.Match: "*", "?", "[a-z]"); Namespace "-" matches only
	// cluster-scoped objects.
	Namespace, Name string
	// Labels must all be present with these values; the value "*" matches any value (label values
	// cannot contain "*").
	Labels map[string]string
	// Func, when set, must also return true.
	Func func(Object) bool
	// Reason says why the objects are expected (shown in reports).
	Reason string
}

// Matches reports whether o is selected.
func (m Matcher) Matches(o Object) bool {
	if m.Group != "" && m.Group != o.Group {
		return false
	}
	if m.Kind != "" && m.Kind != o.Kind {
		return false
	}
	if m.Resource != "" && m.Resource != o.Resource {
		return false
	}
	if m.Namespace == "-" {
		if o.Namespace != "" {
			return false
		}
	} else if !globMatch(m.Namespace, o.Namespace) {
		return false
	}
	if !globMatch(m.Name, o.Name) {
		return false
	}
	for k, v := range m.Labels {
		have, ok := o.Labels[k]
		if !ok || (v != "*" && v != have) {
			return false
		}
	}
	return m.Func == nil || m.Func(o)
}

func globMatch(pattern, s string) bool {
	if pattern == "" {
		return true
	}
	ok, err := path.Match(pattern, s)
	return err == nil && ok
}

// String renders the matcher for reports: "ConfigMap widget-records/leaked-* {leaked=true}".
func (m Matcher) String() string {
	var b strings.Builder
	switch {
	case m.Kind != "" && m.Group != "":
		b.WriteString(m.Kind + "." + m.Group)
	case m.Kind != "":
		b.WriteString(m.Kind)
	case m.Resource != "":
		b.WriteString(resourceID(m.Group, m.Resource))
	case m.Group != "":
		b.WriteString("*." + m.Group)
	default:
		b.WriteString("*")
	}
	ns, name := m.Namespace, m.Name
	if name == "" {
		name = "*"
	}
	switch ns {
	case "":
		b.WriteString(" " + name)
	case "-":
		b.WriteString(" " + name + " (cluster-scoped)")
	default:
		b.WriteString(" " + ns + "/" + name)
	}
	if len(m.Labels) > 0 {
		b.WriteString(" {" + renderLabels(m.Labels) + "}")
	}
	if m.Func != nil {
		b.WriteString(" +func")
	}
	if m.Reason != "" {
		b.WriteString(" (" + m.Reason + ")")
	}
	return b.String()
}

func renderLabels(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%s", k, l[k])
	}
	return strings.Join(parts, ", ")
}

// operatorGroupRoles selects the ClusterRoles olm-operator generates for each OperatorGroup (admin,
// edit, view), labelled with the group's name and namespace. A function: a caller may change the
// matchers DefaultIgnore returns.
func operatorGroupRoles() Matcher {
	return Matcher{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole",
		Labels: map[string]string{olm.LabelOwnerKind: "OperatorGroup"}, Reason: "OLM's OperatorGroup ClusterRoles"}
}

// DefaultIgnore is the churn a diff never reports:
//   - OLM's copies of a global operator's CSV in every namespace (olm.copiedFrom), and the
//     ClusterRoles it generates for each OperatorGroup (olm.owner.kind=OperatorGroup): OLM's, and
//     they follow the OperatorGroup, which the installer (not the operator) owns;
//   - what every namespace gets from the control plane: ServiceAccount default (OpenShift: builder,
//     deployer), ConfigMaps kube-root-ca.crt and openshift-service-ca.crt, OpenShift's image-puller
//     RoleBindings and the ServiceAccounts' token Secrets;
//   - the APIServices the API server registers for CRD groups (kube-aggregator.kubernetes.io/automanaged);
//   - the framework's OLM probe (olm.ProbeNamespace and everything in it).
func DefaultIgnore() []Matcher {
	perNamespaceSA := func(o Object) bool {
		switch o.Name {
		case "default", "builder", "deployer":
			return true
		}
		return false
	}
	return []Matcher{
		{Group: "operators.coreos.com", Kind: "ClusterServiceVersion", Labels: map[string]string{olm.LabelCopiedFrom: "*"},
			Reason: "OLM's copy of a global operator's CSV"},
		operatorGroupRoles(),
		{Kind: "ServiceAccount", Func: perNamespaceSA, Reason: "every namespace's ServiceAccounts"},
		{Kind: "ConfigMap", Name: "kube-root-ca.crt", Reason: "every namespace's root CA"},
		{Kind: "ConfigMap", Name: "openshift-service-ca.crt", Reason: "every namespace's service CA (OpenShift)"},
		{Kind: "RoleBinding", Name: "system:*", Func: func(o Object) bool { return o.Namespace != "" }, Reason: "OpenShift's per-namespace RoleBindings"},
		{Kind: "Secret", Func: func(o Object) bool {
			return perNamespaceSA(Object{Name: o.Annotations["kubernetes.io/service-account.name"]})
		}, Reason: "tokens of every namespace's ServiceAccounts"},
		{Group: "apiregistration.k8s.io", Kind: "APIService", Labels: map[string]string{"kube-aggregator.kubernetes.io/automanaged": "*"},
			Reason: "the API server's own APIService for a CRD group"},
		{Namespace: olm.ProbeNamespace, Reason: "the framework's OLM probe"},
		{Kind: "Namespace", Name: olm.ProbeNamespace, Reason: "the framework's OLM probe"},
	}
}

func firstMatch(ms []Matcher, o Object) (Matcher, bool) {
	for _, m := range ms {
		if m.Matches(o) {
			return m, true
		}
	}
	return Matcher{}, false
}
