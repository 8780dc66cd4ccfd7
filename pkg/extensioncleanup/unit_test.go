package extensioncleanup

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestMode(t *testing.T) {
	for _, tc := range []struct {
		annotations map[string]string
		mode        string
		invalid     bool
	}{
		{nil, "", false},
		{map[string]string{UninstallAnnotation: ""}, "", false},
		{map[string]string{UninstallAnnotation: ModeDeleteOperands}, ModeDeleteOperands, false},
		{map[string]string{UninstallAnnotation: ModeOrphan}, ModeOrphan, false},
		{map[string]string{UninstallAnnotation: "Delete-Operands"}, "", true},
		{map[string]string{UninstallAnnotation: "true"}, "", true},
	} {
		ce := &unstructured.Unstructured{}
		ce.SetAnnotations(tc.annotations)
		m, invalid := mode(ce)
		if m != tc.mode || (invalid != "") != tc.invalid {
			t.Errorf("annotations %v: mode %q, invalid %q; want %q, invalid %t", tc.annotations, m, invalid, tc.mode, tc.invalid)
		}
	}
}

// The plan refuses what the extension does not own and namespaces its operator does not watch.
func TestPlanAllows(t *testing.T) {
	widget := schema.GroupKind{Group: "fixtures.cleanup-e2e.io", Kind: "Widget"}
	cluster := schema.GroupKind{Group: "fixtures.cleanup-e2e.io", Kind: "WidgetClass"}
	other := schema.GroupKind{Group: "example.com", Kind: "Thing"}
	all := &plan{allowed: map[schema.GroupKind]bool{widget: true, cluster: false}, all: true}
	one := &plan{allowed: map[schema.GroupKind]bool{widget: true, cluster: false}, namespaces: []string{"team-a"}}
	for _, tc := range []struct {
		p    *plan
		gk   schema.GroupKind
		ns   string
		want bool
	}{
		{all, widget, "anywhere", true},
		{all, widget, "", false},
		{all, cluster, "", true},
		{all, other, "team-a", false},
		{one, widget, "team-a", true},
		{one, widget, "team-b", false},
		{one, cluster, "", false},
	} {
		err := tc.p.Allows(tc.gk, tc.ns)
		if (err == nil) != tc.want {
			t.Errorf("plan(all=%t) Allows(%s, %q) = %v; want allowed %t", tc.p.all, tc.gk, tc.ns, err, tc.want)
		}
		if tc.p.Counts(tc.gk, tc.ns, true) != tc.want {
			t.Errorf("Counts must follow Allows for %s in %q", tc.gk, tc.ns)
		}
	}
	if all.key() == one.key() {
		t.Error("plans with other scopes must differ in key (the verification compares them)")
	}
	if !strings.Contains(one.Allows(widget, "team-b").Error(), "team-a") {
		t.Error("the refusal names the watched namespaces")
	}
}

// A kind whose CRD is being deleted is waited for in the operator's namespaces, never deleted, and a
// plan that gains one differs in key (the verification before Deletes then stops the pass).
func TestPlanWaitsForKindsOfCRDsBeingDeleted(t *testing.T) {
	widget := schema.GroupKind{Group: "fixtures.cleanup-e2e.io", Kind: "Widget"}
	class := schema.GroupKind{Group: "fixtures.cleanup-e2e.io", Kind: "WidgetClass"}
	before := &plan{allowed: map[schema.GroupKind]bool{widget: true, class: false}, waited: map[schema.GroupKind]bool{}, namespaces: []string{"team-a"}}
	p := &plan{allowed: map[schema.GroupKind]bool{widget: true}, waited: map[schema.GroupKind]bool{class: true}, namespaces: []string{"team-a"}}
	if err := p.Allows(class, "team-a"); err == nil || !strings.Contains(err.Error(), "being deleted") {
		t.Errorf("Allows(%s) = %v; want a refusal saying its CRD is being deleted", class, err)
	}
	if !p.WaitsOnly(class) || p.WaitsOnly(widget) {
		t.Error("WaitsOnly must be true for the kind of a CRD being deleted only")
	}
	for _, deleting := range []bool{false, true} {
		if !p.Counts(class, "team-a", deleting) || p.Counts(class, "team-b", deleting) {
			t.Errorf("Counts(%s, deleting=%t): want it pending in the watched namespace team-a only", class, deleting)
		}
	}
	if !p.AllCount(class, "team-a") {
		t.Error("AllCount: every object of a waited kind in a watched namespace counts")
	}
	if before.key() == p.key() {
		t.Error("a CRD starting to be deleted must change the plan's key")
	}
}
