// Package ginkgox holds what the framework's Ginkgo spec libraries (framework/specs,
// framework/deleteannotation) and framework/suite share, so that none of them imports another only
// for a helper: namespaces that live as long as the current spec, and a logger that writes to
// GinkgoWriter.
package ginkgox

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LabelCreatedBy marks namespaces created by a spec, so that a shared cluster can tell them apart.
const LabelCreatedBy = "cleanup-e2e.io/created-by"

// Namespaces creates n namespaces named <prefix>-<random>-<i> for the current spec and deletes them
// when it ends (DeferCleanup). The deletion is not waited for: a namespace's name is never reused.
func Namespaces(ctx context.Context, c client.Client, prefix string, n int) []string {
	ginkgo.GinkgoHelper()
	suffix := utilrand.String(5)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%s-%d", prefix, suffix, i)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names[i], Labels: map[string]string{LabelCreatedBy: "cleanup-e2e"}}}
		gomega.Expect(c.Create(ctx, ns)).To(gomega.Succeed(), "create namespace %s", names[i])
		ginkgo.DeferCleanup(func(ctx context.Context) {
			_ = client.IgnoreNotFound(c.Delete(ctx, ns))
		})
	}
	return names
}

// Logger reports framework progress to GinkgoWriter (shown for failed specs and with -v), each line
// with the time of day, so it lines up with the control plane's and the operators' logs.
func Logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		if prefix != "" {
			prefix += " "
		}
		fmt.Fprintf(ginkgo.GinkgoWriter, "%s %s%s\n", time.Now().Format("15:04:05.000"), prefix, strings.TrimSpace(args))
	}, funcr.Options{})
}
