// Package cvo is the e2e suite of the CVO's release.openshift.io/delete annotation, run by this
// project's CVO-style payload applier (pkg/payload) on whichever provider $PROVIDER names: the
// enhancement's service-catalog removal, install mode, invalid values, finalizers, reappearance,
// already-gone objects, run-level ordering, and the applier running as its own Deployment.
//
// Most specs drive the library in-process (deleteannotation.Env: one applier, namespace and
// ClusterOperator per spec, so they run in parallel and in random order); the deployment specs run
// config/payload-applier as a Deployment.
package cvo

import (
	"context"
	"fmt"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/e2e/internal/footprint"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures"
	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	fixturecrds "github.com/cleanup-e2e/cleanup-e2e/fixtures/crds"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/components/payloadapplier"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
	"github.com/cleanup-e2e/cleanup-e2e/framework/stack"
	"github.com/cleanup-e2e/cleanup-e2e/framework/suite"
	"github.com/cleanup-e2e/cleanup-e2e/framework/testenv"
	configv1 "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/api/configv1"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/applier"
)

func TestCVO(t *testing.T) {
	suite.RunSpecs(t, "CVO Delete Annotation Suite")
}

var (
	cl  cluster.Environment
	k8s client.Client
)

func clusterUnderTest() cluster.Environment { return cl }

var _ = suite.SynchronizedProvider(testenv.Config{
	Name: "cvo",
	// On envtest the local runtime runs the payload applier and the fixture operators in-process (widget-operator is part of a payload).
	Registry: localruntime.NewRegistry(fixtures.Images(), map[string]localruntime.Entrypoint{payloadapplier.Image: applier.Main}),
	Stack:    stack.Components{ClusterOperatorCRD: true, CRDs: widgetCRDs(), Footprint: footprint.Footprint()},
	Schemes:  []func(*runtime.Scheme) error{configv1.AddToScheme, fixturesv1alpha1.AddToScheme},
}, suite.Setup{Process: func(_ context.Context, env cluster.Environment) { cl, k8s = env, env.Client }})

// widgetCRDs are widget-operator's CRDs, shared by every spec (the payloads ship the operator).
func widgetCRDs() []*apiextensionsv1.CustomResourceDefinition {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, name := range []string{fixturecrds.Widgets, fixturecrds.WidgetClasses} {
		crd, err := fixturecrds.Get(name)
		if err != nil {
			panic(fmt.Sprintf("fixture CRD %s is embedded in the binary and cannot be read: %v", name, err))
		}
		out = append(out, crd)
	}
	return out
}
