package kube_test

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/cleanup-e2e/cleanup-e2e/fixtures/crds"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
)

// A CRD counts as usable only once the client's mapper maps its kind: the wait keeps asking a mapper
// that misses (as while discovery lags behind Established), resetting it after each miss.
func TestWaitCRDsUsableWaitsForTheMapper(t *testing.T) {
	t.Parallel()
	crd := raceCRD("gadgets", "Gadget", conditions(apiextensionsv1.NamesAccepted, apiextensionsv1.Established))
	mapper := &lateMapper{missesLeft: 3, DefaultRESTMapper: meta.NewDefaultRESTMapper(nil)}
	mapper.Add(schema.GroupVersionKind{Group: raceGroup, Version: "v1", Kind: "Gadget"}, meta.RESTScopeNamespace)
	c := fake.NewClientBuilder().WithScheme(kube.MustScheme()).WithRESTMapper(mapper).WithObjects(crd).Build()

	if err := kube.WaitCRDsUsable(context.Background(), c, crd.Name); err != nil {
		t.Fatalf("WaitCRDsUsable: %v", err)
	}
	if mapper.missesLeft != 0 || mapper.resets != 3 {
		t.Fatalf("want every miss followed by a reset and then a mapping, got %d misses left, %d resets", mapper.missesLeft, mapper.resets)
	}
}

// Established without NamesAccepted (a name conflict) is not usable, and the error says which
// condition is missing.
func TestWaitCRDsUsableNeedsNamesAccepted(t *testing.T) {
	t.Parallel()
	crd := raceCRD("gadgets", "Gadget", conditions(apiextensionsv1.Established))
	c := fake.NewClientBuilder().WithScheme(kube.MustScheme()).WithObjects(crd).Build()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // one check, then give up

	err := kube.WaitCRDsUsable(ctx, c, crd.Name)
	if err == nil || !strings.Contains(err.Error(), crd.Name) || !strings.Contains(err.Error(), "NamesAccepted") {
		t.Fatalf("want an error naming %s and NamesAccepted, got %v", crd.Name, err)
	}
}

// lateMapper misses every lookup until missesLeft resets have happened, like a mapper whose cached
// discovery predates the CRD.
type lateMapper struct {
	*meta.DefaultRESTMapper
	missesLeft, resets int
}

func (m *lateMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if m.missesLeft > 0 {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
	}
	return m.DefaultRESTMapper.RESTMapping(gk, versions...)
}

func (m *lateMapper) Reset() { m.resets++; m.missesLeft-- }

const raceGroup = "race.test"

func raceCRD(plural, kind string, conds []apiextensionsv1.CustomResourceDefinitionCondition) *apiextensionsv1.CustomResourceDefinition {
	crd := crds.Schemaless(raceGroup, plural, kind)
	crd.Status.Conditions = conds
	return crd
}

func conditions(types ...apiextensionsv1.CustomResourceDefinitionConditionType) []apiextensionsv1.CustomResourceDefinitionCondition {
	var out []apiextensionsv1.CustomResourceDefinitionCondition
	for _, ct := range types {
		out = append(out, apiextensionsv1.CustomResourceDefinitionCondition{Type: ct, Status: apiextensionsv1.ConditionTrue})
	}
	return out
}
