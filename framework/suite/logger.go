// Package suite wires a Ginkgo suite to the framework: the provider chosen by the environment, a logger
// that writes to GinkgoWriter, and the per-process setup and teardown.
package suite

import (
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/onsi/ginkgo/v2"
)

// Logger reports framework progress to GinkgoWriter (shown for failed specs and with -v).
func Logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		if prefix != "" {
			prefix += " "
		}
		fmt.Fprintf(ginkgo.GinkgoWriter, "%s %s%s\n", time.Now().Format("15:04:05.000"), prefix, strings.TrimSpace(args))
	}, funcr.Options{})
}
