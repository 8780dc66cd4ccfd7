package extensioncleanup_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/envtest"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/extensioncleanup"
)

// TestOrphanGuard: the policy of config/operand-cleanup refuses the write a late operator-controller
// reconcile of a gone ClusterExtension makes to a CRD its orphan uninstall left (helm-operator-plugins'
// JSON patch adding the ClusterExtension's controller reference), and nothing else: a ClusterExtension of
// the same name adopting the CRD, and the controller's opt-out release, which removes the mark in the same
// write. Without the policy the same write goes through (the danger is real on this API server), and the
// controller's check says what is missing.
func TestOrphanGuard(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, c := envtest.ForParallelTest(ctx, t, envtest.WithName("extensioncleanup-guard"), envtest.WithoutOLM())
	const gone, adopter = "5b2a8f0e-0000-4000-8000-00000000dead", "5b2a8f0e-0000-4000-8000-0000000000ad"
	crd := gizmoCRD("gizmos", extensioncleanup.OrphanedFromAnnotation, "widget/"+gone)
	if err := c.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	late := lateOperatorControllerPatch("widget", gone)

	// Without the guard: the controller's check names what is missing, and the late write lands.
	if err := extensioncleanup.CheckOrphanGuard(ctx, c); err == nil || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy "+extensioncleanup.OrphanGuardName+" does not exist") {
		t.Fatalf("CheckOrphanGuard without the policy: %v; want it to name the missing ValidatingAdmissionPolicy", err)
	}
	if err := c.Patch(ctx, crd, late); err != nil {
		t.Fatalf("without the guard the late patch should land (else this test cannot tell the guard works): %v", err)
	}
	dropRefs(ctx, t, c, crd)

	og := guard(t, extensioncleanup.OrphanGuardName)
	applyGuards(ctx, t, c)
	if err := extensioncleanup.CheckOrphanGuard(ctx, c); err != nil {
		t.Fatalf("CheckOrphanGuard with config/operand-cleanup's guard: %v", err)
	}
	// A binding that only audits is no guard.
	binding := og[1].DeepCopy()
	if err := c.Get(ctx, client.ObjectKeyFromObject(binding), binding); err != nil {
		t.Fatal(err)
	}
	audit := binding.DeepCopy()
	if err := unstructured.SetNestedStringSlice(audit.Object, []string{"Audit"}, "spec", "validationActions"); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(ctx, audit); err != nil {
		t.Fatal(err)
	}
	if err := extensioncleanup.CheckOrphanGuard(ctx, c); err == nil || !strings.Contains(err.Error(), "action Deny") {
		t.Fatalf("CheckOrphanGuard with an Audit-only binding: %v; want it to ask for the Deny action", err)
	}
	audit.Object["spec"].(map[string]any)["validationActions"] = []any{"Deny"}
	if err := c.Update(ctx, audit); err != nil {
		t.Fatal(err)
	}

	// The API server applies a new policy once its informers have it: the late write is refused from then on.
	var refused error
	err := intervals.Wait(ctx, intervals.SpecStep, func() (bool, string) {
		refused = c.Patch(ctx, crd, late)
		if refused == nil {
			dropRefs(ctx, t, c, crd) // not in force yet
			return false, "the late patch still lands"
		}
		return true, ""
	})
	if err != nil {
		t.Fatalf("the orphan guard never refused the late operator-controller patch: %v", err)
	}
	t.Logf("refused as expected: %v", refused)
	for _, want := range []string{"CRD " + crd.Name + " was orphaned by the uninstall of ClusterExtension widget/" + gone, extensioncleanup.OrphanedFromAnnotation} {
		if !strings.Contains(refused.Error(), want) {
			t.Errorf("the refusal %q does not say %q", refused, want)
		}
	}

	// A ClusterExtension of the same name (another UID) adopts it.
	if err := c.Patch(ctx, crd, lateOperatorControllerPatch("widget", adopter)); err != nil {
		t.Fatalf("a new ClusterExtension of the name adopting the orphaned CRD was refused: %v", err)
	}
	dropRefs(ctx, t, c, crd)
	// The opt-out release: the mark goes and the reference comes back in one write.
	optOut := client.RawPatch(types.MergePatchType, fmt.Appendf(nil,
		`{"metadata":{"annotations":{%q:null},"ownerReferences":[{"apiVersion":"olm.operatorframework.io/v1","kind":"ClusterExtension","name":"widget","uid":%q,"controller":true,"blockOwnerDeletion":true}]}}`,
		extensioncleanup.OrphanedFromAnnotation, gone))
	if err := c.Patch(ctx, crd, optOut); err != nil {
		t.Fatalf("the opt-out release (mark removed, reference given back in one write) was refused: %v", err)
	}
	heldCRD(ctx, t, c)
}

// heldCRD: a CRD the controller holds (HeldByAnnotation) in a foreground deletion of its ClusterExtension,
// before the controller's first reconcile of it. The GC strips the ClusterExtension's reference (allowed:
// the holder's stays); operator-controller's late JSON patch then replaces the first reference, now the
// holder's, with the ClusterExtension's: refused, or the GC would delete the CRD with the dependents of
// the ClusterExtension. The controller's release, which drops the mark with the reference, goes through.
func heldCRD(ctx context.Context, t *testing.T, c client.Client) {
	const ce, holder = "5b2a8f0e-0000-4000-8000-0000000000ce", "5b2a8f0e-0000-4000-8000-00000000001d"
	crd := gizmoCRD("doodads", extensioncleanup.HeldByAnnotation, holder)
	crd.OwnerReferences = []metav1.OwnerReference{
		{APIVersion: "olm.operatorframework.io/v1", Kind: "ClusterExtension", Name: "widget", UID: ce, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)},
		{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: extensioncleanup.DefaultHolderName, UID: holder},
	}
	if err := c.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	if err := c.Patch(ctx, crd, client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/ownerReferences/0"}]`))); err != nil {
		t.Fatalf("the GC's strip of the ClusterExtension's reference from a held CRD was refused: %v", err)
	}
	late := fmt.Appendf(nil, `[{"op":"replace","path":"/metadata/ownerReferences/0/apiVersion","value":"olm.operatorframework.io/v1"},
		{"op":"replace","path":"/metadata/ownerReferences/0/kind","value":"ClusterExtension"},
		{"op":"replace","path":"/metadata/ownerReferences/0/name","value":"widget"},
		{"op":"replace","path":"/metadata/ownerReferences/0/uid","value":%q},
		{"op":"add","path":"/metadata/ownerReferences/0/controller","value":true},
		{"op":"add","path":"/metadata/ownerReferences/0/blockOwnerDeletion","value":true}]`, ce)
	err := c.Patch(ctx, crd, client.RawPatch(types.JSONPatchType, late))
	if err == nil || !strings.Contains(err.Error(), "is held by the operand-cleanup controller") {
		t.Fatalf("operator-controller's late patch replacing the holder's reference of a held CRD: %v; want it refused by the orphan guard", err)
	}
	t.Logf("refused as expected: %v", err)
	release := client.RawPatch(types.MergePatchType, fmt.Appendf(nil,
		`{"metadata":{"annotations":{%q:null},"ownerReferences":[{"apiVersion":"olm.operatorframework.io/v1","kind":"ClusterExtension","name":"widget","uid":%q,"controller":true,"blockOwnerDeletion":true}]}}`,
		extensioncleanup.HeldByAnnotation, ce))
	if err := c.Patch(ctx, crd, release); err != nil {
		t.Fatalf("the controller's release (the holder's reference and the mark dropped in one write) was refused: %v", err)
	}
}

// lateOperatorControllerPatch is the write helm-operator-plugins' actionClient.Reconcile makes to a CRD
// that has no owner references: a JSON patch adding the ClusterExtension's controller reference.
func lateOperatorControllerPatch(name, uid string) client.Patch {
	ops := []map[string]any{{"op": "add", "path": "/metadata/ownerReferences", "value": []metav1.OwnerReference{{
		APIVersion: extensioncleanup.ClusterExtensionGVK.GroupVersion().String(), Kind: extensioncleanup.ClusterExtensionGVK.Kind,
		Name: name, UID: types.UID(uid), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}}}
	b, _ := json.Marshal(ops)
	return client.RawPatch(types.JSONPatchType, b)
}

func dropRefs(ctx context.Context, t *testing.T, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	if err := c.Patch(ctx, crd, client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/ownerReferences"}]`))); err != nil {
		t.Fatal(err)
	}
}

// gizmoCRD is a minimal cluster-scoped CRD of the plural carrying the annotation k=v.
func gizmoCRD(plural, k, v string) *apiextensionsv1.CustomResourceDefinition {
	kind := strings.ToUpper(plural[:1]) + plural[1:len(plural)-1]
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + ".guard.cleanup-e2e.io", Annotations: map[string]string{k: v}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "guard.cleanup-e2e.io", Scope: apiextensionsv1.ClusterScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
}
