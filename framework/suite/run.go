package suite

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/gomega"

	"github.com/cleanup-e2e/cleanup-e2e/framework/artifacts"
	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

var nonWord = regexp.MustCompile(`[^a-z0-9]+`)

// RunSpecs runs a Ginkgo suite from `go test` and always writes its JUnit report, one testcase per
// spec, to $ARTIFACTS/junit-<suite>.xml (the Ginkgo CLI's --junit-report, when given, wins) — so a
// nightly job sees specs, not one go test per suite.
func RunSpecs(t *testing.T, description string) {
	gomega.RegisterFailHandler(ginkgo.Fail)
	// The suite's own Eventually/Consistently poll like the spec library (intervals.Poll, not 10 ms), and
	// an Eventually without a timeout or a context waits as long as a spec step, not Gomega's 1 s (a
	// flake on a slow runner; a wait that succeeds early costs nothing).
	gomega.SetDefaultEventuallyTimeout(intervals.Get(intervals.SpecStep))
	gomega.SetDefaultEventuallyPollingInterval(intervals.Poll)
	gomega.SetDefaultConsistentlyPollingInterval(intervals.Poll)
	suiteConfig, reporterConfig := ginkgo.GinkgoConfiguration()
	// Specs must not depend on their order: always randomize them (the CLI's --randomize-all agrees).
	suiteConfig.RandomizeAllSpecs = true
	// GINKGO_LABEL_FILTER selects specs under plain `go test` too (the CLI's --label-filter wins).
	if f := os.Getenv("GINKGO_LABEL_FILTER"); f != "" && suiteConfig.LabelFilter == "" {
		suiteConfig.LabelFilter = f
	}
	name := strings.Trim(nonWord.ReplaceAllString(strings.ToLower(description), "-"), "-")
	if reporterConfig.JUnitReport == "" {
		dir, err := filepath.Abs(artifacts.Dir())
		if err == nil {
			reporterConfig.JUnitReport = filepath.Join(dir, "junit-"+name+".xml")
		}
	}
	if dir := envvar.JUnitPerRunDir.Get(); dir != "" {
		reportEachRun(dir, name)
	}
	ginkgo.RunSpecs(t, description, suiteConfig, reporterConfig)
}

func reportEachRun(dir, name string) {
	ginkgo.ReportAfterSuite("JUnit report of this run into $"+envvar.JUnitPerRunDir.Name, func(r ginkgo.Report) {
		path := filepath.Join(dir, fmt.Sprintf("junit-%s-%s.xml", name, time.Now().Format("20060102T150405.000000000")))
		if err := reporters.GenerateJUnitReport(r, path); err != nil {
			ginkgo.Fail(fmt.Sprintf("write this run's JUnit report to %s (set by $%s): %v", path, envvar.JUnitPerRunDir.Name, err))
		}
	})
}
