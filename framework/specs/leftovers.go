package specs

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/leftovers"
)

// SnapshotBeforeInstall takes the "before" snapshot of the leftovers check: cluster-scoped objects,
// the installation's namespaces and in.LeftoverNamespaces. Call it between NewInstallation and Install.
func (r *Installation) SnapshotBeforeInstall(ctx context.Context) {
	defer r.phase("snapshot")()
	r.t.Step("taking a snapshot of the cluster for the leftovers check")
	snap, err := r.snapshotter().Take(ctx, r.leftoverNamespaces()...)
	r.g.Expect(err).NotTo(HaveOccurred(), "leftovers snapshot before install")
	r.before = snap
}

// LeftoversReport takes an "after" snapshot and diffs it with the one of SnapshotBeforeInstall, scoped
// to this installation: its namespaces, CSVs and operands. Operands that still exist (kept on purpose)
// and what points at them are not leftovers; the OperatorGroup the installer made and the bundle's
// CRDs (OLM never deletes CRDs) are not either.
func (r *Installation) LeftoversReport(ctx context.Context) (leftovers.Report, error) {
	if r.before == nil {
		return leftovers.Report{}, fmt.Errorf("no leftovers snapshot: call SnapshotBeforeInstall before Install")
	}
	after, err := r.snapshotter().Take(ctx, r.leftoverNamespaces()...)
	if err != nil {
		return leftovers.Report{}, err
	}
	present := after.ByUID()
	scope := leftovers.Scope{Namespaces: r.all, UIDs: append([]types.UID{}, r.csvUIDs...)}
	if r.csv != nil {
		scope.UIDs = append(scope.UIDs, r.csv.UID)
	}
	if r.ops != nil {
		for _, o := range r.ops.items {
			scope.UIDs = append(scope.UIDs, o.GetUID())
			if _, ok := present[o.GetUID()]; ok {
				scope.Keep = append(scope.Keep, o.GetUID())
			}
		}
	}
	return leftovers.Diff(r.before, after, leftovers.DiffOptions{Scope: scope, Expected: r.in.ExpectedLeftovers, Ignore: r.installerObjects()}), nil
}

// ExpectNoLeftovers waits (in.LeftoversTimeout: garbage collection and finalizers take a moment) until
// the installation left nothing behind but in.ExpectedLeftovers, and fails listing each leftover, why
// it is blamed on the installation and who made it. It deletes the ClusterRoles the report lists as
// OLM's orphans, and returns the last report.
func (r *Installation) ExpectNoLeftovers(ctx context.Context) leftovers.Report {
	defer r.phase(string(WaitLeftovers))()
	r.t.Step("checking the uninstalled operator left nothing behind")
	r.g.Expect(r.before).NotTo(BeNil(), "ExpectNoLeftovers needs SnapshotBeforeInstall before Install")
	var last leftovers.Report
	r.g.Eventually(func() error {
		rep, err := r.LeftoversReport(ctx)
		if err != nil {
			return err
		}
		last = rep
		if !rep.Clean() {
			return leftoversError{rep}
		}
		return nil
	}).WithContext(ctx).WithTimeout(r.within(r.in.LeftoversTimeout)).WithPolling(2*time.Second).Should(Succeed(),
		"a cleanup-enabled uninstall must leave nothing behind (declare known leftovers in OperandCleanupSpecInput.ExpectedLeftovers)")
	r.t.Logf("%s", last.String())
	r.removeOLMOrphans(ctx, last.OLMOrphans)
	return last
}

// removeOLMOrphans deletes the ClusterRoles OLM left for the installation's OperatorGroups that are gone
// (Report.OLMOrphans), each with a UID precondition: the spec made those groups, and OLM never deletes
// their roles now, so a kept cluster would keep them for ever.
func (r *Installation) removeOLMOrphans(ctx context.Context, orphans []leftovers.Leftover) {
	for _, o := range orphans {
		uid := o.UID
		err := r.c.Delete(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: o.Name}}, client.Preconditions{UID: &uid})
		if client.IgnoreNotFound(err) != nil {
			r.t.Logf("ClusterRole %s, which OLM left, stays: %v", o.Name, err)
		}
	}
}

// leftoversError carries a report. Gomega's Succeed prints FormattedGomegaError alone: without it,
// it printed the error's text and then the value (GomegaString), the report twice.
type leftoversError struct{ rep leftovers.Report }

func (e leftoversError) Error() string                { return e.rep.String() }
func (e leftoversError) GomegaString() string         { return "\n" + e.rep.String() }
func (e leftoversError) FormattedGomegaError() string { return e.rep.String() }

func (r *Installation) snapshotter() *leftovers.Snapshotter {
	if r.snapper != nil {
		return r.snapper
	}
	cl := r.in.Environment()
	r.g.Expect(cl.Provider).NotTo(BeNil(), "the leftovers check needs Environment().Provider (for its REST config)")
	s, err := leftovers.NewSnapshotter(cl.Provider.RESTConfig())
	r.g.Expect(err).NotTo(HaveOccurred())
	r.snapper = s
	return s
}

func (r *Installation) leftoverNamespaces() []string {
	return append(append([]string{}, r.all...), r.in.LeftoverNamespaces...)
}

// installerObjects are what the installer (the framework, standing for the user or OLM's catalog
// operator), not the operator, made: the OperatorGroup, and the bundle's CRDs.
func (r *Installation) installerObjects() []leftovers.Matcher {
	ms := []leftovers.Matcher{{Group: "operators.coreos.com", Kind: "OperatorGroup", Namespace: r.l.operator,
		Reason: "the installer's OperatorGroup"}}
	if r.csv != nil {
		crds := map[string]bool{}
		for _, c := range r.csv.Spec.CustomResourceDefinitions.Owned {
			crds[c.Name] = true
		}
		ms = append(ms, leftovers.Matcher{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition",
			Func: func(o leftovers.Object) bool { return crds[o.Name] }, Reason: "OLM never deletes an operator's CRDs"})
	}
	return ms
}
