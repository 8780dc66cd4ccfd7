package localruntime

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// readiness is a container's HTTP readiness probe, checked as the kubelet checks it: the Deployment is
// Available only once the operator answers it. Without it the runtime reported a Deployment Available
// as soon as the operator's goroutine started, before its caches had synced, so a spec went on
// earlier than it could on a cluster with nodes.
type readiness struct {
	path   string
	port   intstr.IntOrString // where a binary run as a child process answers it (child.go)
	scheme corev1.URIScheme
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
	return &readiness{path: path, port: p.HTTPGet.Port, scheme: p.HTTPGet.Scheme}
}

// portIn resolves the probe's port, a number or the name of one of the container's ports.
func (r *readiness) portIn(ctr corev1.Container) (int32, error) {
	if r.port.Type == intstr.Int {
		return r.port.IntVal, nil
	}
	for _, p := range ctr.Ports {
		if p.Name == r.port.StrVal {
			return p.ContainerPort, nil
		}
	}
	return 0, fmt.Errorf("the readiness probe of container %s names port %q, which the container does not declare", ctr.Name, r.port.StrVal)
}

// waitReady asks the probe at addr until it succeeds (a 2xx or 3xx answer, as for the kubelet) or ctx
// ends; it reports whether it succeeded.
func (r *readiness) waitReady(ctx context.Context, addr string) bool {
	c := &http.Client{Timeout: time.Second}
	scheme := "http"
	if r.scheme == corev1.URISchemeHTTPS {
		// As the kubelet does: an HTTPS probe does not verify the certificate.
		scheme = "https"
		c.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // the kubelet's behaviour
	}
	t := time.NewTicker(readinessPoll)
	defer t.Stop()
	for {
		if req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+addr+r.path, nil); err == nil {
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
