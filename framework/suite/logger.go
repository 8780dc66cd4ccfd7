// Package suite wires a Ginkgo suite to the framework: the provider chosen by the environment, a logger
// that writes to GinkgoWriter, and the per-process setup and teardown.
package suite

import (
	"github.com/go-logr/logr"

	"github.com/cleanup-e2e/cleanup-e2e/framework/internal/ginkgox"
)

// Logger reports framework progress to GinkgoWriter (shown for failed specs and with -v).
func Logger() logr.Logger { return ginkgox.Logger() }
