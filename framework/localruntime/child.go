package localruntime

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cleanup-e2e/cleanup-e2e/framework/crashlog"
	"github.com/cleanup-e2e/cleanup-e2e/framework/process"
)

// child runs an operator's own binary, unchanged, as a child process: what a kubelet gives a container
// and a scaffolded main relies on, as far as one machine without a container runtime can give it.
//
//   - argv: the container's command (its first element, the path inside the image, replaced by the
//     binary) and args, $(VAR) expanded; bind addresses in them move to free loopback ports (ports.go).
//   - env: the container's env and nothing of the test process's, plus what the kubelet adds
//     (KUBERNETES_SERVICE_HOST/PORT for the API server, HOSTNAME) and a default PATH.
//   - identity: the ServiceAccount token the kubelet would mount, requested from the API server, so
//     rest.InClusterConfig works and RBAC applies as it does to the pod.
//   - files: every volume the container mounts, written under the runtime's work dir and bind-mounted
//     at its mountPath in a private mount namespace (volumes.go), so paths like
//     /var/run/secrets/kubernetes.io/serviceaccount/namespace (leader election) or
//     /tmp/k8s-webhook-server/serving-certs are where the binary looks.
type child struct {
	rt   *Runtime
	key  types.NamespacedName
	w    *workload
	path string
}

func (c *child) run(ctx context.Context, logger logr.Logger, ready func(string)) error {
	dir := filepath.Join(c.rt.podDir(), c.key.Namespace+"_"+c.key.Name)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	mounts, err := c.rt.materialize(ctx, c.w, dir)
	if err != nil {
		return err
	}
	args, moved, err := moveBindAddresses(c.w.args)
	if err != nil {
		return err
	}
	probeAddr := ""
	if c.w.readiness != nil {
		port, err := c.w.readiness.portIn(c.w.container)
		if err != nil {
			return err
		}
		if probeAddr = moved[port]; probeAddr == "" {
			probeAddr = fmt.Sprintf("127.0.0.1:%d", port)
		}
	}
	env, err := c.env()
	if err != nil {
		return err
	}
	spec := process.Spec{Name: "operator " + c.key.String(), Path: c.path, Args: args, Env: env, Isolated: true,
		LogPath: filepath.Join(c.rt.logDir, LogFile(c.key)), Append: true,
		Dir: dir}
	if len(mounts) > 0 {
		if err := mountNamespaceUsable(); err != nil {
			return fmt.Errorf("deployment %s mounts %s; running its binary unchanged needs a private mount namespace "+
				"to put them there, which this machine refused (%w): run as root, register its Main in-process "+
				"(localruntime.Entrypoint), or use CLEANUP_E2E_PROVIDER=kind", c.key, targets(mounts), err)
		}
		spec.Path, spec.Args = "unshare", append([]string{"--mount", "--propagation", "private", "--",
			"/bin/sh", "-c", mountScript(mounts), c.path}, args...)
	}
	logger.Info("starting operator binary", "image", c.w.image, "binary", c.path, "args", strings.Join(args, " "),
		"serviceAccount", c.w.serviceAccount, "mounts", targets(mounts), "movedPorts", moved)
	// The log is shared by every start of this Deployment and by the runtime's own lines about it: the
	// cause of an exit is in what this start wrote, from here on.
	from := fileSize(spec.LogPath)
	p, err := process.Start(spec)
	if err != nil {
		return err
	}
	ready(probeAddr)
	select {
	case <-p.Exited():
		return fmt.Errorf("%v; %s", p.Err(), crashlog.Describe(readFrom(spec.LogPath, from)))
	case <-ctx.Done():
		return p.Stop(process.Grace)
	}
}

// env is the container's env plus what the kubelet adds for every container.
func (c *child) env() ([]string, error) {
	u, err := url.Parse(c.rt.admin.Host)
	if err != nil || u.Hostname() == "" {
		return nil, fmt.Errorf("the API server address %q: %v", c.rt.admin.Host, err)
	}
	vars := map[string]string{
		"PATH":     "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", // an image's usual default
		"HOME":     "/root",
		"HOSTNAME": podName(c.w.dep),
	}
	for k, v := range c.w.env {
		vars[k] = v
	}
	// What rest.InClusterConfig reads, set over the container's own values: the kubelet lets a
	// container's env win, but here the only API server is the one the runtime was given.
	vars["KUBERNETES_SERVICE_HOST"], vars["KUBERNETES_SERVICE_PORT"] = u.Hostname(), u.Port()
	vars["KUBERNETES_SERVICE_PORT_HTTPS"], vars["KUBERNETES_PORT"] = u.Port(), "tcp://"+u.Host
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out, nil
}

// causeWindow is how much of what one start wrote is searched for why it exited: an operator that
// logs for minutes before it fails has its cause near the end.
const causeWindow = 256 << 10

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// readFrom is what the file at path holds past offset from, its last causeWindow bytes at most.
func readFrom(path string, from int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if size := fileSize(path); size-from > causeWindow {
		from = size - causeWindow
	}
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return ""
	}
	data, _ := io.ReadAll(f)
	return string(data)
}

var (
	mountNSOnce sync.Once
	mountNSErr  error
)

// mountNamespaceUsable reports once per process whether util-linux unshare can give a child a private
// mount namespace here (root, or a kernel and policy that allow it).
func mountNamespaceUsable() error {
	mountNSOnce.Do(func() {
		if out, err := exec.Command("unshare", "--mount", "--propagation", "private", "--", "true").CombinedOutput(); err != nil {
			mountNSErr = fmt.Errorf("unshare --mount: %v: %s", err, strings.TrimSpace(string(out)))
		}
	})
	return mountNSErr
}
