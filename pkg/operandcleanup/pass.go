package operandcleanup

import (
	"context"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/cleanuppass"
)

// A cleanup pass is pkg/cleanuppass's (shared with the OLM v1 ordered uninstall): operands are read
// live from the API server, one page (Options.ListPageSize, continue tokens) at a time, and deleted as
// it goes. Nothing about operands is cached: an informer would hold every operand of a type for as long
// as a cleanup runs (≈ 0.9 KiB each, 90 MiB at 100,000 CRs), while a pass holds at most a few pages, the
// pending count and the first MaxPendingListed pending operands, whatever the number of CRs.
//
// Safety (invariant 1): every Delete goes out on a live re-verification of the CSV and its plan
// (verifyLive) at most defaultReverifyEvery old; a changed CSV or plan stops the pass before the next
// Delete.
const defaultReverifyEvery = cleanuppass.DefaultReverifyEvery

// The pass's vocabulary, from the shared package.
type (
	operand      = cleanuppass.Object
	passResult   = cleanuppass.Result
	verification = cleanuppass.Verification
	listError    = cleanuppass.ListError
)

var errPlanChanged = cleanuppass.ErrPlanChanged

var metadataList = cleanuppass.MetadataList

// runner is the shared pass machinery with this controller's settings (read at each pass: tests shrink
// pageSize, deleteSem and MaxPendingListed).
func (r *Reconciler) runner() *cleanuppass.Runner {
	return &cleanuppass.Runner{Live: r.live, Client: r.client, Sem: r.deleteSem, PageSize: r.pageSize,
		ReverifyEvery: r.reverifyEvery, MaxListed: r.opts.MaxPendingListed,
		Record: func(outcome string) { metricDeletes.WithLabelValues(outcome).Inc() }}
}

// runPass lists the plan's operands page by page and deletes those not yet being deleted, each after the
// live verification of the CSV and its plan.
func (r *Reconciler) runPass(ctx context.Context, csv *v1alpha1.ClusterServiceVersion, p *plan) (passResult, error) {
	v := &verification{Every: r.reverifyEvery, Verify: func(ctx context.Context) (cleanuppass.Plan, bool, error) {
		fresh, ok, err := r.verifyLive(ctx, csv, p)
		if !ok || err != nil {
			return nil, ok, err
		}
		return fresh, true, nil
	}}
	return r.runner().Run(ctx, p, v)
}

// deletePage is the shared DeletePage (tests call it directly).
func (r *Reconciler) deletePage(ctx context.Context, v *verification, ops []operand) *cleanuppass.PageDeletes {
	return r.runner().DeletePage(ctx, v, ops)
}

// anyOperandLive is the last check before the CSV finalizer is removed (cleanuppass.Runner.AnyLive): it
// counts only what keeps the cleanup pending (plan.counts), as the pass does: an operand another
// installation also serves stays by design (sharedOperands), and counting it kept the CSV waiting for
// ever, with nothing pending to say why.
func (r *Reconciler) anyOperandLive(ctx context.Context, p *plan) (bool, error) {
	return r.runner().AnyLive(ctx, p)
}

func (r *Reconciler) listLimit() int64 {
	if r.pageSize > 0 {
		return r.pageSize
	}
	return DefaultListPageSize
}

// The plan as the shared pass reads it.
var _ cleanuppass.Plan = (*plan)(nil)

func (p *plan) Types() []cleanuppass.Type {
	out := make([]cleanuppass.Type, len(p.types))
	for i, t := range p.types {
		out[i] = cleanuppass.Type{GVK: t.gvk, Namespaced: t.namespaced}
	}
	return out
}

// Namespaces: those the operator watched when the uninstall began, a superset of where the plan may delete.
func (p *plan) Namespaces(t cleanuppass.Type) []string {
	if !t.Namespaced || p.started.all {
		return []string{""}
	}
	return p.started.namespaces
}

func (p *plan) Allows(gk schema.GroupKind, namespace string) error { return p.allows(gk, namespace) }

func (p *plan) Counts(gk schema.GroupKind, namespace string, deleting bool) bool {
	return p.counts(gk, namespace, deleting)
}

// AllCount: no exclusion for gk and the namespace (or all of them) is a target.
func (p *plan) AllCount(gk schema.GroupKind, ns string) bool {
	return p.excluded[gk] == nil && ((ns == "" && p.targets.all) || (ns != "" && p.targets.contains(ns)))
}
