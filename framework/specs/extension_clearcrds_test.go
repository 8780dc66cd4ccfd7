package specs

import (
	"context"
	"testing"
)

// A CRD an OLM v0 install left is cleared even when the bundle's CRD listed before it is absent (make e2e
// on kind: the widgets CRD of an earlier OLM v0 spec stayed, and OLM v1 refused to install over it).
func TestClearCRDsLooksAtEveryCRDOfTheBundle(t *testing.T) {
	left := widgetCRD()
	c := widgetClient(t, left)
	x := &Extension{t: FromTesting(t), c: c, crds: []string{"widgetclasses.fixtures.cleanup-e2e.io", left.Name}}
	if err := x.clearCRDs(context.Background()); err != nil {
		t.Fatal(err)
	}
	if crd, err := liveCRD(context.Background(), c, left.Name); err != nil || crd != nil {
		t.Errorf("CRD %s, left by OLM v0 with no custom resource: want it deleted, got %v (error %v)", left.Name, crd, err)
	}
}
