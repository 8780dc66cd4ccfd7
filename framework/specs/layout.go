package specs

import (
	"context"
	"fmt"

	"github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
)

// layout is where an install puts the operator and which namespaces it targets, plus namespaces it
// must not touch.
type layout struct {
	mode      operatorsv1alpha1.InstallModeType
	operator  string
	targets   []string // OperatorGroup targets; empty for AllNamespaces
	untouched []string // namespaces with operands that cleanup must leave alone
}

// sampleNamespaces are the namespaces that get operands: every target (for AllNamespaces, two
// namespaces standing for "all") and every untouched one.
func (l layout) sampleNamespaces(all []string) []string {
	if l.mode == operatorsv1alpha1.InstallModeTypeAllNamespaces {
		return all
	}
	return append(append([]string{}, l.targets...), l.untouched...)
}

// newLayout creates the namespaces for a mode:
//   - OwnNamespace: the operator's namespace is the target; another namespace is untouched.
//   - SingleNamespace: the operator lives in one namespace and targets another; its own and a third
//     namespace are untouched.
//   - MultiNamespace: two targets, the operator's namespace and a fourth untouched.
//   - AllNamespaces: everything is a target (operands in the operator's and another namespace).
func newLayout(ctx context.Context, t T, c client.Client, prefix string, mode operatorsv1alpha1.InstallModeType) (layout, []string) {
	switch mode {
	case operatorsv1alpha1.InstallModeTypeOwnNamespace:
		ns := namespaces(ctx, t, c, prefix+"-own", 2)
		return layout{mode: mode, operator: ns[0], targets: ns[:1], untouched: ns[1:]}, ns
	case operatorsv1alpha1.InstallModeTypeSingleNamespace:
		ns := namespaces(ctx, t, c, prefix+"-single", 3)
		return layout{mode: mode, operator: ns[0], targets: ns[1:2], untouched: []string{ns[0], ns[2]}}, ns
	case operatorsv1alpha1.InstallModeTypeMultiNamespace:
		ns := namespaces(ctx, t, c, prefix+"-multi", 4)
		return layout{mode: mode, operator: ns[0], targets: ns[1:3], untouched: []string{ns[0], ns[3]}}, ns
	case operatorsv1alpha1.InstallModeTypeAllNamespaces:
		ns := namespaces(ctx, t, c, prefix+"-all", 2)
		return layout{mode: mode, operator: ns[0]}, ns
	}
	panic(fmt.Sprintf("unknown install mode %q", mode))
}

// namespaces creates n namespaces for the test and deletes them when it ends (not waited for: a
// namespace's name is never reused).
func namespaces(ctx context.Context, t T, c client.Client, prefix string, n int) []string {
	created, err := kube.CreateNamespaces(ctx, c, prefix, n)
	names := make([]string, len(created))
	for i, ns := range created {
		names[i] = ns.Name
		t.Cleanup(func(ctx context.Context) { _ = client.IgnoreNotFound(c.Delete(ctx, ns)) })
	}
	t.Gomega().Expect(err).NotTo(gomega.HaveOccurred())
	return names
}
