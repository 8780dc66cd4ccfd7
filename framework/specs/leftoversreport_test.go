package specs

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/cleanup-e2e/cleanup-e2e/framework/leftovers"
)

// A failed leftovers check prints the report once, with its who: line.
func TestAFailedLeftoversCheckPrintsTheReportOnce(t *testing.T) {
	rep := leftovers.Report{Scope: leftovers.Scope{Namespaces: []string{"mc-all-0"}}, Leftovers: []leftovers.Leftover{{
		Object: leftovers.Object{Kind: "ClusterRole", Group: "rbac.authorization.k8s.io", Name: "memcached-mc-all-0-sample-viewer",
			Managers: []leftovers.Manager{{Name: "example.com_memcached-operator_v0.0.1", Operation: "Update"}}},
		Why: "its name contains namespace mc-all-0 of the installation"}}}
	var message string
	g := gomega.NewGomega(func(m string, _ ...int) { message = m })
	g.Eventually(func() error { return leftoversError{rep} }).WithTimeout(200*time.Millisecond).WithPolling(50*time.Millisecond).
		Should(gomega.Succeed(), "a cleanup-enabled uninstall must leave nothing behind")
	if n := strings.Count(message, "left behind by the installation"); n != 1 {
		t.Errorf("the report is printed %d times:\n%s", n, message)
	}
	if !strings.Contains(message, "who: created by field manager example.com_memcached-operator_v0.0.1") {
		t.Errorf("no who: line:\n%s", message)
	}
}

// An install's verdict (long: the crash, the error the operator logged, what to do) is printed once.
func TestAFailedStepPrintsItsErrorOnce(t *testing.T) {
	var message string
	g := gomega.NewGomega(func(m string, _ ...int) { message = m })
	g.Expect(readable(errors.New("its operator is crash-looping"))).To(gomega.Succeed(), "install")
	if n := strings.Count(message, "crash-looping"); n != 1 || !strings.HasPrefix(message, "install") {
		t.Errorf("printed %d times:\n%s", n, message)
	}
	message = ""
	g.Expect(readable(nil)).To(gomega.Succeed())
	if message != "" {
		t.Errorf("no error failed: %s", message)
	}
}
