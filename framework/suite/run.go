package suite

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/cleanup-e2e/cleanup-e2e/framework/artifacts"
)

var nonWord = regexp.MustCompile(`[^a-z0-9]+`)

// RunSpecs runs a Ginkgo suite from `go test` and always writes its JUnit report, one testcase per
// spec, to $ARTIFACTS/junit-<suite>.xml (the Ginkgo CLI's --junit-report, when given, wins) — so a
// nightly job sees specs, not one go test per suite.
func RunSpecs(t *testing.T, description string) {
	gomega.RegisterFailHandler(ginkgo.Fail)
	suiteConfig, reporterConfig := ginkgo.GinkgoConfiguration()
	// Specs must not depend on their order: always randomize them (the CLI's --randomize-all agrees).
	suiteConfig.RandomizeAllSpecs = true
	// GINKGO_LABEL_FILTER selects specs under plain `go test` too (the CLI's --label-filter wins).
	if f := os.Getenv("GINKGO_LABEL_FILTER"); f != "" && suiteConfig.LabelFilter == "" {
		suiteConfig.LabelFilter = f
	}
	if reporterConfig.JUnitReport == "" {
		name := strings.Trim(nonWord.ReplaceAllString(strings.ToLower(description), "-"), "-")
		dir, err := filepath.Abs(artifacts.Dir())
		if err == nil {
			reporterConfig.JUnitReport = filepath.Join(dir, "junit-"+name+".xml")
		}
	}
	ginkgo.RunSpecs(t, description, suiteConfig, reporterConfig)
}
