package specs

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
)

// foreignListed is how many instances of each kind the check looks at: a few name the problem.
const foreignListed = 20

// refuseForeignOperands stops an AllNamespaces uninstall with operand cleanup on a cluster that may
// hold objects no run created (cluster.MayHoldForeignObjects: the existing provider) while instances of the CSV's owned kinds exist that the spec did
// not create: that cleanup deletes every instance of those kinds in the cluster, so on a team's own
// cluster it would delete the team's custom resources. The spec fails naming them, and the CSV is
// then removed with cleanup disabled (forceUninstall). The API lock the spec holds exclusively
// (apilocks.go) keeps the framework's other specs from creating such instances meanwhile.
func (r *Installation) refuseForeignOperands(ctx context.Context) {
	if !r.Global() || !cluster.MayHoldForeignObjects(r.in.Environment().Provider) {
		return
	}
	csv, err := olm.GetCSV(ctx, r.c, r.csv.Namespace, r.csv.Name)
	if err != nil || !csv.Spec.Cleanup.Enabled {
		return // nothing to refuse; Uninstall reports a CSV that is gone
	}
	own := map[types.UID]bool{}
	if r.ops != nil {
		for _, o := range r.ops.items {
			own[o.GetUID()] = true
		}
	}
	var foreign []string
	for _, d := range csv.Spec.CustomResourceDefinitions.Owned {
		_, group, ok := strings.Cut(d.Name, ".")
		if !ok || d.Kind == "" || d.Version == "" {
			continue
		}
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: d.Version, Kind: d.Kind + "List"})
		err := r.c.List(ctx, l, client.Limit(foreignListed))
		if meta.IsNoMatchError(err) {
			continue
		}
		r.g.Expect(err).NotTo(HaveOccurred(), "listing %s %s before an AllNamespaces cleanup", d.Kind, group)
		for i := range l.Items {
			o := &l.Items[i]
			if own[o.GetUID()] || o.GetDeletionTimestamp() != nil {
				continue
			}
			foreign = append(foreign, fmt.Sprintf("%s %s", d.Kind, describeKey(o)))
		}
	}
	r.g.Expect(foreign).To(BeEmpty(), fmt.Sprintf("refusing to uninstall %s/%s with operand cleanup: in %s mode it deletes every "+
		"instance of the operator's owned kinds in the cluster, and this cluster (PROVIDER=existing, not made by the run) holds "+
		"some this spec did not create: %s. Run the cleanup-enabled cases on a cluster of their own (PROVIDER=envtest or "+
		"kind), or leave AllNamespaces out of OperandCleanupSpecInput.InstallModes here; the CSV is removed with cleanup "+
		"disabled, so nothing of yours is deleted", csv.Namespace, csv.Name, r.l.mode, strings.Join(foreign, ", ")))
}
