package envtest

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"testing"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// TestTakenPortIsRetried: when the port chosen for kube-apiserver is taken by the time it binds (a race
// envtest's free-port picking cannot exclude), the provider starts on another port instead of failing.
func TestTakenPortIsRetried(t *testing.T) {
	t.Parallel() // each starts its own control plane in its own work root
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	var attempts []int
	pick := func(attempt int) int {
		attempts = append(attempts, attempt)
		if attempt == 1 {
			return takenPort
		}
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), intervals.Get(intervals.SuiteSetup)) // it starts a provider: a backstop above its start's own timeouts
	defer cancel()
	p, err := New(ctx, WithName("ports"), WithoutOLM(), WithWorkRoot(t.TempDir()), func(o *options) { o.ports = pick })
	if err != nil {
		t.Fatalf("provider did not start after the taken port: %v", err)
	}
	defer p.Stop(context.Background())
	if len(attempts) < 2 {
		t.Fatalf("expected a retry after the taken port %d, attempts: %v", takenPort, attempts)
	}
	if host := p.RESTConfig().Host; host == "" || containsPort(host, takenPort) {
		t.Fatalf("provider serves on %q, want a port other than %d", host, takenPort)
	}
}

func containsPort(host string, port int) bool {
	u, err := url.Parse(host)
	return err == nil && u.Port() == strconv.Itoa(port)
}
