package localruntime

import (
	"context"
	"net"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// readiness is a container's HTTP readiness probe, checked as the kubelet checks it: the Deployment is
// Available only once the operator answers it. Without it the runtime reported a Deployment Available
// as soon as the operator's goroutine started, before its caches had synced, so a spec went on
// earlier than it could on a cluster with nodes.
type readiness struct {
	path string
}

// readinessPoll is how often the probe is asked until it first succeeds (the pod template's
// periodSeconds, 10 s by default, would only slow the suites down).
const readinessPoll = 100 * time.Millisecond

func readinessOf(ctr corev1.Container) *readiness {
	p := ctr.ReadinessProbe
	if p == nil || p.HTTPGet == nil {
		return nil
	}
	path := p.HTTPGet.Path
	if path == "" {
		path = "/"
	}
	return &readiness{path: path}
}

// probeAddress returns a loopback address with a port the kernel just handed out, for the operator's
// health server. Should another process take the port before the operator binds it, the operator
// fails to start and its restart gets a new port.
func probeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// waitReady asks the probe at addr until it succeeds (a 2xx or 3xx answer, as for the kubelet) or ctx
// ends; it reports whether it succeeded.
func (r *readiness) waitReady(ctx context.Context, addr string) bool {
	c := &http.Client{Timeout: time.Second}
	t := time.NewTicker(readinessPoll)
	defer t.Stop()
	for {
		if req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+r.path, nil); err == nil {
			if resp, err := c.Do(req); err == nil {
				resp.Body.Close()
				if resp.StatusCode >= 200 && resp.StatusCode < 400 {
					return true
				}
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}
