package specs

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/onsi/gomega"
	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/bundle"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/leftovers"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
)

// installerSA is the ServiceAccount OLM v1 installs with, in the install namespace (olmv1.CreateInstaller).
const installerSA = "installer"

// Extension is one spec's install of an operator through OLM v1: its bundle pushed to the cluster's
// test registry with a catalog of its own (olmv1.PushPackage), a ClusterCatalog serving it, a
// ClusterExtension installing it into the spec's first namespace, and samples in two namespaces. OLM v1
// installs cluster-wide (AllNamespaces) and its uninstall deletes the CRDs, so an Extension holds its
// operator's APIs exclusively for the whole spec (cluster.APILocker): no other spec uses those kinds
// meanwhile, OLM v0 ones included.
type Extension struct {
	t   T
	g   gomega.Gomega
	in  OperandCleanupSpecInput
	c   client.Client
	all []string
	// name names the ClusterCatalog, the ClusterExtension and the images' repository (the first
	// namespace's name: unique on the cluster).
	name string
	// csv is the bundle's CSV placed in the install namespace: what the OLM helpers read the operator's
	// Deployments from (crash loops, logs).
	csv     *operatorsv1alpha1.ClusterServiceVersion
	crds    []string
	ce      *unstructured.Unstructured
	ceUIDs  []types.UID
	ops     *operands
	logs    olm.PodLogs
	snapper *leftovers.Snapshotter
	before  *leftovers.Snapshot
	// lastConditions are the ClusterExtension's conditions when ExpectUninstalled last saw it: once it
	// is gone, what the operand-cleanup controller said last (why it let the operator go).
	lastConditions string
	// operatorLog is everything the operator wrote since its install, also once uninstalled
	// (followOperator).
	operatorLog func() (string, error)
}

// NewExtension starts an OLM v1 installation in test t: it holds the kinds the operator owns
// exclusively and those it requires shared (usedAPIs), and makes two namespaces (deleted when the
// test ends). Install, CreateOperands and the uninstall steps follow.
func NewExtension(ctx context.Context, t T, in OperandCleanupSpecInput) *Extension {
	g := t.Gomega()
	g.Expect(in.defaults()).To(gomega.Succeed())
	x := &Extension{t: t, g: g, in: in, c: in.Environment().Client}
	if p := in.Environment().Provider; p != nil && p.RESTConfig() != nil {
		if cs, err := kubernetes.NewForConfig(p.RESTConfig()); err == nil {
			x.logs = olm.PodLogsOf(cs)
		}
	}
	if locker := in.Environment().APIs; locker != nil {
		holds, err := usedAPIs(in, true) // the uninstall deletes the CRDs of the kinds it owns
		g.Expect(err).NotTo(HaveOccurred())
		waited := phase(t, "api-locks")
		done, err := locker.LockAPIs(ctx, holds, t.Name())
		waited()
		g.Expect(err).NotTo(HaveOccurred(), "lock the APIs %+v of %s on the shared cluster", holds, in.Name)
		t.Cleanup(func(context.Context) { done() })
	}
	defer phase(t, "namespaces")()
	x.all = namespaces(ctx, t, x.c, in.Name+"-v1", 2)
	x.name = x.all[0]
	return x
}

// Namespaces are the Extension's namespaces: the install namespace first.
func (x *Extension) Namespaces() []string { return x.all }

// ClusterExtension is the installed ClusterExtension (nil before Install).
func (x *Extension) ClusterExtension() *unstructured.Unstructured { return x.ce }

// Install pushes in.BundleDir and in.UpgradeBundleDirs as one catalog, and installs in.BundleDir's
// version with a ClusterExtension carrying annotations. It returns once the ClusterExtension is
// Installed and the operator's Deployments are available.
func (x *Extension) Install(ctx context.Context, annotations map[string]string) {
	defer phase(x.t, string(WaitInstalled))()
	b, err := bundle.Load(x.in.BundleDir)
	x.g.Expect(err).NotTo(HaveOccurred())
	x.g.Expect(olmv1Installable(b)).To(Succeed())
	x.csv = b.CSV.DeepCopy()
	x.csv.Namespace = x.all[0]
	for _, crd := range b.CRDs {
		x.crds = append(x.crds, crd.Name)
	}
	x.t.Step(fmt.Sprintf("installing %s %s through OLM v1 into %s", b.Package(), b.CSV.Spec.Version, x.all[0]))
	x.g.Expect(readable(x.clearCRDs(ctx))).To(Succeed())
	if x.in.BeforeInstall != nil {
		x.g.Expect(x.in.BeforeInstall(ctx, x.c)).To(Succeed(), "OperandCleanupSpecInput.BeforeInstall")
	}

	reg, err := olmv1.Published(ctx, x.c)
	x.g.Expect(readable(err)).To(Succeed())
	ref, err := olmv1.PushPackage(ctx, reg, x.name, append([]string{x.in.BundleDir}, x.in.UpgradeBundleDirs...)...)
	x.g.Expect(err).NotTo(HaveOccurred(), "push the bundles and their catalog to the test registry %s", reg.Push)
	cat := olmv1.ClusterCatalog(x.name, ref)
	// The label catalogd's webhook sets, set here: the ClusterExtension selects this catalog only.
	cat.SetLabels(map[string]string{olmv1.CatalogNameLabel: x.name})
	x.g.Expect(x.c.Create(ctx, cat)).To(Succeed())
	x.t.Cleanup(func(ctx context.Context) { _ = client.IgnoreNotFound(x.c.Delete(ctx, cat)) })
	x.g.Expect(readable(olmv1.WaitCondition(ctx, x.c, intervals.CatalogReady, cat, "Serving"))).To(Succeed())

	x.g.Expect(olmv1.CreateInstaller(ctx, x.c, x.all[0], installerSA)).To(Succeed())
	x.t.Cleanup(func(ctx context.Context) {
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: olmv1.InstallerBinding(x.all[0], installerSA)}}
		_ = client.IgnoreNotFound(x.c.Delete(ctx, crb))
	})
	x.t.Cleanup(x.forceUninstall)
	// Registered after forceUninstall, so it runs before it: artifacts show the state that failed.
	x.t.Cleanup(func(ctx context.Context) { collectOnFailure(ctx, x.t, x.in.Environment, x.all...) })
	x.create(ctx, b.Package(), b.CSV.Spec.Version.String(), annotations)
}

// create creates the ClusterExtension and waits until it is Installed and the operator runs.
func (x *Extension) create(ctx context.Context, pkg, version string, annotations map[string]string) {
	ce := olmv1.ClusterExtension(x.name, x.all[0], installerSA, pkg, version)
	olmv1.SelectCatalog(ce, x.name)
	ce.SetAnnotations(annotations)
	x.followOperator(ctx)
	x.g.Expect(x.c.Create(ctx, ce)).To(Succeed())
	x.ce = ce
	x.ceUIDs = append(x.ceUIDs, ce.GetUID())
	x.g.Eventually(func() error { return x.installed(ctx) }).WithContext(ctx).WithTimeout(within(x.t, x.in.Timeout)).
		Should(Succeed(), "ClusterExtension %s should install %s %s", x.name, pkg, version)
	crashing := x.crashLoopCheck(ctx)
	for _, d := range x.csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		key := types.NamespacedName{Namespace: x.all[0], Name: d.Name}
		x.g.Eventually(func() error {
			if err := crashing(); err != nil {
				return err
			}
			dep := &appsv1.Deployment{}
			if err := x.c.Get(ctx, key, dep); err != nil {
				return err
			}
			if !deploymentAvailable(dep) {
				return fmt.Errorf("deployment %s not available yet", key)
			}
			return nil
		}).WithContext(ctx).WithTimeout(within(x.t, x.in.Timeout)).Should(Succeed(), func() string {
			return "the operator installed by ClusterExtension " + x.name + " should run; operator: " + olm.DescribeOperatorLogs(ctx, x.c, x.logs, x.csv)
		})
	}
	if m := annotations[UninstallAnnotation]; m == UninstallDeleteOperands || m == UninstallOrphan {
		x.awaitHold(ctx, m)
	}
}

// installed is nil once the ClusterExtension is Installed, else says what its conditions say.
func (x *Extension) installed(ctx context.Context) error {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(olmv1.ClusterExtensionGVK)
	if err := x.c.Get(ctx, client.ObjectKeyFromObject(x.ce), live); err != nil {
		return err
	}
	x.ce = live
	conds, err := olmv1.Conditions(live)
	if err != nil {
		return err
	}
	if c := meta.FindStatusCondition(conds, "Installed"); c != nil && c.Status == metav1.ConditionTrue {
		return nil
	}
	// A bundle OLM v1 refuses stays refused: say so now rather than when the wait runs out.
	if c := meta.FindStatusCondition(conds, "Progressing"); c != nil && c.Reason == "Retrying" && strings.Contains(c.Message, "validating bundle") {
		return StopTrying(fmt.Sprintf("OLM v1 %s refuses the bundle: %s", olmv1.Version, c.Message))
	}
	if why := olmv1.ExplainInstallConflict(ctx, x.c, live, conds); why != "" {
		return fmt.Errorf("not Installed yet: %s; %s", olmv1.DescribeConditions(conds), why)
	}
	return fmt.Errorf("not Installed yet: %s (is operator-controller running? its log is among the provider's artifacts)", olmv1.DescribeConditions(conds))
}

// olmv1Installable says why OLM v1 (v1.2.0, default feature gates) cannot install the bundle, if so.
func olmv1Installable(b *bundle.Bundle) error {
	all := false
	for _, m := range b.CSV.Spec.InstallModes {
		if m.Type == operatorsv1alpha1.InstallModeTypeAllNamespaces && m.Supported {
			all = true
		}
	}
	switch {
	case !all:
		return fmt.Errorf("bundle %s: its CSV does not support the AllNamespaces install mode, the only one OLM v1 %s installs "+
			"without its SingleOwnNamespaceInstallSupport feature gate; these cases cannot run on it", b.Dir, olmv1.Version)
	case len(b.CSV.Spec.WebhookDefinitions) > 0:
		return fmt.Errorf("bundle %s: its CSV declares %d webhook(s), which OLM v1 %s refuses to install; pass "+
			"specs.MustWithoutWebhooks(dir) as BundleDir for the OLM v1 cases", b.Dir, len(b.CSV.Spec.WebhookDefinitions), olmv1.Version)
	}
	return nil
}

// clearCRDs removes the bundle's CRDs an earlier OLM v0 install left (OLM v0 never deletes CRDs, and
// helm refuses to install over an object it did not create) — only when no custom resource of them
// exists; the Extension holds their APIs exclusively, so no other spec creates one meanwhile.
func (x *Extension) clearCRDs(ctx context.Context) error {
	for _, name := range x.crds {
		crd, err := liveCRD(ctx, x.c, name)
		if err != nil {
			return err
		}
		if crd == nil {
			continue // absent: the bundle's other CRDs may still be there
		}
		for _, ref := range crd.OwnerReferences {
			if ref.Kind == olmv1.ClusterExtensionGVK.Kind {
				return fmt.Errorf("CRD %s belongs to ClusterExtension %s: another OLM v1 install of this operator is on the cluster; "+
					"uninstall it before these cases run", name, ref.Name)
			}
		}
		crs, err := x.settledCRs(ctx, crd)
		if err != nil {
			return err
		}
		if len(crs) > 0 {
			return fmt.Errorf("CRD %s is on the cluster with %d custom resource(s) (%s): OLM v1 cannot install over it and "+
				"these cases delete a CRD only when it holds none; delete them, or run the OLM v1 cases on another cluster", name, len(crs), firstNames(crs, 3))
		}
		x.t.Logf("deleting CRD %s (no custom resources), which an OLM v0 install left: OLM v1 installs its own", name)
		if err := deleteCRD(ctx, x.c, crd); err != nil {
			return err
		}
	}
	return nil
}

// settledCRs lists crd's custom resources once those on their way out (being deleted, or in a
// namespace being deleted: an earlier spec's) are gone, waiting up to intervals.Gone for them.
func (x *Extension) settledCRs(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) ([]unstructured.Unstructured, error) {
	var crs []unstructured.Unstructured
	var lastErr error
	_ = intervals.Wait(ctx, intervals.Gone, func() (bool, string) {
		crs, lastErr = listCRs(ctx, x.c, crd)
		if lastErr != nil {
			return false, lastErr.Error()
		}
		for _, cr := range crs {
			if cr.GetDeletionTimestamp() != nil || namespaceGoing(ctx, x.c, cr.GetNamespace()) {
				return false, fmt.Sprintf("%s %s/%s is being deleted", crd.Spec.Names.Kind, cr.GetNamespace(), cr.GetName())
			}
		}
		return true, ""
	})
	return crs, lastErr
}

// namespaceGoing reports whether namespace ns is being deleted.
func namespaceGoing(ctx context.Context, c client.Client, ns string) bool {
	if ns == "" {
		return false
	}
	n := &corev1.Namespace{}
	return c.Get(ctx, client.ObjectKey{Name: ns}, n) == nil && n.DeletionTimestamp != nil
}

// firstNames renders the first n objects as "ns/name", and how many more.
func firstNames(objs []unstructured.Unstructured, n int) string {
	var out []string
	for i, o := range objs {
		if i == n {
			out = append(out, fmt.Sprintf("and %d more", len(objs)-n))
			break
		}
		out = append(out, strings.TrimPrefix(o.GetNamespace()+"/"+o.GetName(), "/"))
	}
	return strings.Join(out, ", ")
}

func deploymentAvailable(dep *appsv1.Deployment) bool {
	return slices.ContainsFunc(dep.Status.Conditions, func(c appsv1.DeploymentCondition) bool {
		return c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue
	})
}
