// Package ginkgosuite is a Ginkgo suite for testbin's tests: each spec leaves a file named by the
// Ginkgo process that ran it in $TESTBIN_FIXTURE_DIR, and the spec named by $TESTBIN_FIXTURE_FAIL fails.
package ginkgosuite

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestSuite(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "testbin fixture")
}

// TestPlain is a test beside the suite: testbin runs it as a plain test.
func TestPlain(t *testing.T) {}

var _ = Describe("fixture", func() {
	for _, name := range []string{"a", "b", "c", "d"} {
		It("runs spec "+name, func() {
			// Long enough that the other process takes the next spec meanwhile.
			time.Sleep(500 * time.Millisecond)
			mark := filepath.Join(os.Getenv("TESTBIN_FIXTURE_DIR"), fmt.Sprintf("%s-process-%d", name, GinkgoParallelProcess()))
			Expect(os.WriteFile(mark, nil, 0o644)).To(Succeed())
			Expect(os.Getenv("TESTBIN_FIXTURE_FAIL")).NotTo(Equal(name), "spec %s fails on purpose", name)
		})
	}
})
