// Package cvo is the e2e suite of the CVO's release.openshift.io/delete annotation, run by this
// project's CVO-style payload applier (pkg/payload) on whichever provider $PROVIDER names: the
// enhancement's service-catalog removal, install mode, invalid values, finalizers, reappearance,
// already-gone objects, run-level ordering, and the applier running as its own Deployment.
//
// Most specs drive the library in-process (specs.PayloadEnv: one applier, namespace and
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
	"github.com/cleanup-e2e/cleanup-e2e/fixtures"
	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	fixturecrds "github.com/cleanup-e2e/cleanup-e2e/fixtures/crds"
	"github.com/cleanup-e2e/cleanup-e2e/framework/components"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
	"github.com/cleanup-e2e/cleanup-e2e/framework/suite"
	configv1 "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/api/configv1"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/applier"
)

func TestCVO(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "CVO Delete Annotation Suite")
}

var (
	cl  specs.Cluster
	k8s client.Client
)

func clusterUnderTest() specs.Cluster { return cl }

var _ = BeforeSuite(func(ctx context.Context) {
	images := map[string]localruntime.Entrypoint{components.PayloadApplierImage: applier.Main}
	for image, ep := range fixtures.Images() {
		images[image] = ep
	}
	provider, err := suite.NewProvider(ctx, suite.ProviderInput{Name: "cvo", Registry: localruntime.NewRegistry(images), WithoutOLM: true})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx context.Context) { Expect(provider.Stop(ctx)).To(Succeed()) })
	k8s, err = kube.NewClient(provider.RESTConfig(), kube.MustScheme(configv1.AddToScheme, fixturesv1alpha1.AddToScheme))
	Expect(err).NotTo(HaveOccurred())
	cl = specs.Cluster{Provider: provider, Client: k8s}

	By("installing the ClusterOperator CRD and widget-operator's CRDs (shared by every spec, never removed)")
	co, err := crd.ClusterOperator()
	Expect(err).NotTo(HaveOccurred())
	crds := []*apiextensionsv1.CustomResourceDefinition{co}
	for _, name := range []string{fixturecrds.Widgets, fixturecrds.WidgetClasses} {
		c, err := fixturecrds.Get(name)
		Expect(err).NotTo(HaveOccurred())
		crds = append(crds, c)
	}
	for _, c := range crds {
		Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, c))).To(Succeed(), "create CRD %s", c.Name)
	}
	for _, c := range crds {
		Eventually(func() (bool, error) { return established(ctx, c.Name) }).WithContext(ctx).WithTimeout(time.Minute).
			Should(BeTrue(), "CRD %s established", c.Name)
	}
}, NodeTimeout(5*time.Minute))

func established(ctx context.Context, name string) (bool, error) {
	c := &apiextensionsv1.CustomResourceDefinition{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: name}, c); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	for _, cond := range c.Status.Conditions {
		if cond.Type == apiextensionsv1.Established {
			return cond.Status == apiextensionsv1.ConditionTrue, nil
		}
	}
	return false, nil
}
