package olmv1

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// helm installs over an object that exists only when it carries the release's ownership metadata
// (helm v3.17.1 pkg/action/validate.go, checkOwnership), but operator-controller v1.2.0 replaces helm's
// reason with "<Kind> '<name>' already exists in namespace '<ns>' and cannot be managed by
// operator-controller" (internal/operator-controller/action/error/errors.go). The release is named
// after the ClusterExtension and lives in its spec.namespace (internal/operator-controller/applier/helm.go).
var conflictPattern = regexp.MustCompile(`(\w+) '([^']*)' already exists in namespace '([^']*)' and cannot be managed by operator-controller`)

// The metadata helm's ownership check reads.
const (
	helmManagedByLabel        = "app.kubernetes.io/managed-by"
	helmReleaseNameAnnotation = "meta.helm.sh/release-name"
	helmReleaseNSAnnotation   = "meta.helm.sh/release-namespace"
)

// releaseKinds are the kinds an install of a registry+v1 bundle makes (convert.Convert), and so the
// ones a conflict can name.
var releaseKinds = map[string]schema.GroupVersion{
	"CustomResourceDefinition": {Group: "apiextensions.k8s.io", Version: "v1"},
	"Deployment":               {Group: "apps", Version: "v1"},
	"ServiceAccount":           {Version: "v1"},
	"Service":                  {Version: "v1"},
	"ConfigMap":                {Version: "v1"},
	"Secret":                   {Version: "v1"},
	"Role":                     {Group: "rbac.authorization.k8s.io", Version: "v1"},
	"RoleBinding":              {Group: "rbac.authorization.k8s.io", Version: "v1"},
	"ClusterRole":              {Group: "rbac.authorization.k8s.io", Version: "v1"},
	"ClusterRoleBinding":       {Group: "rbac.authorization.k8s.io", Version: "v1"},
}

// ExplainInstallConflict says why helm refused to install ClusterExtension ce over an object that
// exists, when one of its conditions reports operator-controller's install conflict: which of the
// object's ownership label and annotations differ from what the release needs, and who owns it now.
// "" when no condition reports one.
func ExplainInstallConflict(ctx context.Context, c client.Reader, ce *unstructured.Unstructured, conds []metav1.Condition) string {
	for _, cond := range conds {
		if m := conflictPattern.FindStringSubmatch(cond.Message); m != nil {
			return explainConflict(ctx, c, ce, m[1], m[2], m[3])
		}
	}
	return ""
}

func explainConflict(ctx context.Context, c client.Reader, ce *unstructured.Unstructured, kind, name, ns string) string {
	release, _, _ := unstructured.NestedString(ce.Object, "spec", "namespace")
	want := map[string]string{helmManagedByLabel: "Helm", helmReleaseNameAnnotation: ce.GetName(), helmReleaseNSAnnotation: release}
	what := kind + " " + name
	if ns != "" {
		what = kind + " " + ns + "/" + name
	}
	fields := fmt.Sprintf("label %s=%s, annotations %s=%s and %s=%s", helmManagedByLabel, want[helmManagedByLabel],
		helmReleaseNameAnnotation, want[helmReleaseNameAnnotation], helmReleaseNSAnnotation, want[helmReleaseNSAnnotation])
	gv, ok := releaseKinds[kind]
	if !ok {
		return fmt.Sprintf("helm adopts %s only if it has the %s", what, fields)
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gv.WithKind(kind))
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); apierrors.IsNotFound(err) {
		return what + " is gone now: the next install attempt gets past it"
	} else if err != nil {
		return fmt.Sprintf("%s: cannot read it to say why helm refused it (%v); helm adopts it only if it has the %s", what, err, fields)
	}
	var differ []string
	for _, k := range []string{helmManagedByLabel, helmReleaseNameAnnotation, helmReleaseNSAnnotation} {
		have, set := obj.GetAnnotations()[k]
		field := "annotation"
		if k == helmManagedByLabel {
			have, set = obj.GetLabels()[k]
			field = "label"
		}
		switch {
		case !set:
			differ = append(differ, fmt.Sprintf("%s %s is missing (want %q)", field, k, want[k]))
		case have != want[k]:
			differ = append(differ, fmt.Sprintf("%s %s is %q (want %q)", field, k, have, want[k]))
		}
	}
	state := "owner references " + describeOwners(obj.GetOwnerReferences())
	if obj.GetDeletionTimestamp() != nil {
		state += fmt.Sprintf(", Terminating (finalizers %v)", obj.GetFinalizers())
	}
	if len(differ) == 0 {
		return fmt.Sprintf("%s now has the ownership metadata of release %s/%s (%s): it changed after the attempt, which the next one should get past", what, release, ce.GetName(), state)
	}
	advice := "Another install or a tool left it: delete it if nothing else uses it"
	for _, r := range obj.GetOwnerReferences() {
		if r.Kind == ClusterExtensionGVK.Kind && r.Name != ce.GetName() {
			advice = fmt.Sprintf("It is ClusterExtension %s's: two ClusterExtensions cannot install the same objects; uninstall that one first", r.Name)
			break
		}
	}
	return fmt.Sprintf("helm refuses to adopt %s into release %s/%s: %s; %s. %s", what, release, ce.GetName(), strings.Join(differ, "; "), state, advice)
}

func describeOwners(refs []metav1.OwnerReference) string {
	if len(refs) == 0 {
		return "none"
	}
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = fmt.Sprintf("%s %s (uid %s)", r.Kind, r.Name, r.UID)
	}
	return "[" + strings.Join(out, ", ") + "]"
}
