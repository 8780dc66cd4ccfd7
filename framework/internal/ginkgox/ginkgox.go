// Package ginkgox holds what the framework's front ends (framework/deleteannotation, framework/suite,
// framework/e2eframework) share without importing one another: namespaces that live as long as the
// current Ginkgo spec, and the framework's timestamped logger.
package ginkgox

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
)

// Namespaces creates n namespaces named <prefix>-<random>-<i> for the current spec and deletes them
// when it ends (DeferCleanup). The deletion is not waited for: a namespace's name is never reused.
func Namespaces(ctx context.Context, c client.Client, prefix string, n int) []string {
	ginkgo.GinkgoHelper()
	created, err := kube.CreateNamespaces(ctx, c, prefix, n)
	names := make([]string, len(created))
	for i, ns := range created {
		names[i] = ns.Name
		ginkgo.DeferCleanup(func(ctx context.Context) { _ = client.IgnoreNotFound(c.Delete(ctx, ns)) })
	}
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return names
}

// Logger reports framework progress to GinkgoWriter (shown for failed specs and with -v).
func Logger() logr.Logger { return LoggerTo(ginkgo.GinkgoWriter) }

// LoggerTo reports framework progress to w, each line with the time of day, so it lines up with the
// control plane's and the operators' logs.
func LoggerTo(w io.Writer) logr.Logger {
	return funcr.New(func(prefix, args string) {
		if prefix != "" {
			prefix += " "
		}
		fmt.Fprintf(w, "%s %s%s\n", time.Now().Format("15:04:05.000"), prefix, strings.TrimSpace(args))
	}, funcr.Options{})
}
