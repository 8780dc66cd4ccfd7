package specs

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LabelCreatedBy marks namespaces created by a spec, so that a shared cluster can tell them apart.
const LabelCreatedBy = "cleanup-e2e.io/created-by"

// CreateNamespaces creates n namespaces named <prefix>-<random>-<i> for the current spec and deletes
// them when it ends (DeferCleanup), first releasing any spec-held operands inside.
func CreateNamespaces(ctx context.Context, c client.Client, prefix string, n int) []string {
	suffix := utilrand.String(5)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%s-%d", prefix, suffix, i)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names[i], Labels: map[string]string{LabelCreatedBy: "cleanup-e2e"}}}
		Expect(c.Create(ctx, ns)).To(Succeed(), "create namespace %s", names[i])
		DeferCleanup(func(ctx context.Context) {
			_ = client.IgnoreNotFound(c.Delete(ctx, ns))
		})
	}
	return names
}
