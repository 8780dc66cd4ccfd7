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
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/config/crd"
	"github.com/cleanup-e2e/cleanup-e2e/e2e/internal/footprint"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures"
	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	fixturecrds "github.com/cleanup-e2e/cleanup-e2e/fixtures/crds"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/components"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
	"github.com/cleanup-e2e/cleanup-e2e/framework/suite"
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

var _ = suite.SynchronizedProvider(suite.ProviderInput{Name: "cvo", Registry: registry(), WithoutOLM: true, RunLeftovers: footprint.RunLeftovers()}, suite.Setup{
	Cluster: func(ctx context.Context, p cluster.Provider) {
		c, err := kube.NewClient(p.RESTConfig(), kube.MustScheme())
		Expect(err).NotTo(HaveOccurred())
		installCRDs(ctx, c)
	},
	Process: func(ctx context.Context, p cluster.Provider) {
		var err error
		k8s, err = kube.NewClient(p.RESTConfig(), kube.MustScheme(configv1.AddToScheme, fixturesv1alpha1.AddToScheme))
		Expect(err).NotTo(HaveOccurred())
		cl = cluster.Environment{Provider: p, Client: k8s}
	},
}, NodeTimeout(5*time.Minute))

// registry holds what the envtest provider runs in-process (on kind they are images on the node): the
// payload applier and the fixture operators (widget-operator is part of a payload).
func registry() *localruntime.Registry {
	return localruntime.NewRegistry(fixtures.Images(), map[string]localruntime.Entrypoint{components.PayloadApplierImage: applier.Main})
}

// installCRDs installs the ClusterOperator CRD and widget-operator's CRDs, shared by every spec and
// never removed (a provider that installed the ClusterOperator CRD itself keeps it).
func installCRDs(ctx context.Context, c client.Client) {
	By("installing the ClusterOperator CRD and widget-operator's CRDs")
	co, err := crd.ClusterOperator()
	Expect(err).NotTo(HaveOccurred())
	crds := []*apiextensionsv1.CustomResourceDefinition{co}
	for _, name := range []string{fixturecrds.Widgets, fixturecrds.WidgetClasses} {
		wc, err := fixturecrds.Get(name)
		Expect(err).NotTo(HaveOccurred())
		crds = append(crds, wc)
	}
	Expect(kube.EnsureCRDs(ctx, c, crds...)).To(Succeed())
}
