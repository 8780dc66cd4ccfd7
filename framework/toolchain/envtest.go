package toolchain

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// StartEnvtest starts envtest's control plane (etcd, kube-apiserver, e's CRDs) from EnvtestAssets
// unless e names its own binaries. Its timeouts come from the intervals table unless e sets them: the
// start intervals.ControlPlaneReady, serving the CRDs intervals.CRDUsable (envtest's own 20 s and 10 s
// are a starved API server's whole start). It starts the processes once: envtest's Start tries five
// times, and each try kills a start that has not answered in time and begins again from nothing — on a
// machine short of CPU, a kill-and-restart loop that never catches up and loads everyone else (two
// make test side by side on 2 cores: up to 15 tries of a minute per control plane, 14 tests failed).
// When Start fails it stops what it started: envtest leaves etcd and kube-apiserver running when a
// later step (installing the CRDs) fails, and an orphaned pair was once found 20 minutes after its
// run. The config it returns authenticates as AdminUser with a bearer token (token.go), not with
// envtest's client certificate. Stop stops it as usual (e.Stop). It starts once it holds one of the
// machine's start slots (slots.go), which its timeouts do not count.
func StartEnvtest(e *crenvtest.Environment, opts ...StartOption) (*rest.Config, error) {
	o := startOptions{log: logr.Discard()}
	for _, opt := range opts {
		opt(&o)
	}
	if e.UseExistingCluster != nil && *e.UseExistingCluster {
		return nil, fmt.Errorf("StartEnvtest starts a control plane of its own; for an existing cluster, use its kubeconfig (UseExistingCluster is set)")
	}
	e.UseExistingCluster = ptr.To(false) // not $USE_EXISTING_CLUSTER either: e.Stop must stop what this starts
	if e.BinaryAssetsDirectory == "" {
		assets, err := EnvtestAssets()
		if err != nil {
			return nil, err
		}
		e.BinaryAssetsDirectory = assets
	}
	knob := "the caller's ControlPlaneStartTimeout"
	if e.ControlPlaneStartTimeout == 0 {
		e.ControlPlaneStartTimeout = intervals.Get(intervals.ControlPlaneReady)
		knob = fmt.Sprintf("intervals %s × %s=%g", intervals.ControlPlaneReady, envvar.WaitScale.Name, intervals.Scale())
	}
	if e.ControlPlaneStopTimeout == 0 {
		e.ControlPlaneStopTimeout = intervals.Get(intervals.Stopped)
	}
	if e.CRDInstallOptions.MaxTime == 0 {
		e.CRDInstallOptions.MaxTime = intervals.Get(intervals.CRDUsable)
	}
	asked := time.Now()
	release, err := startSlot(func(slots int) {
		o.log.Info("waiting for a start slot: control planes start at most one per CPU on this machine at once", "slots", slots)
	})
	if err != nil { // a machine's temp dir another user owns: the slots spare CPU, they guard nothing
		o.log.Info("starting without a start slot", "error", err.Error())
		release = func() {}
	}
	defer release()
	if waited := time.Since(asked); waited > time.Second {
		o.log.Info("got a start slot", "waited", waited.Round(100*time.Millisecond).String())
	}
	token, remove, err := adminToken(e)
	if err != nil {
		return nil, fmt.Errorf("writing the API server's token file: %w", err)
	}
	defer remove()
	etcdOverSocket(&e.ControlPlane)
	cfg, err := start(e, knob)
	if err != nil {
		if stopErr := e.Stop(); stopErr != nil {
			return nil, fmt.Errorf("%w (stopping what it started: %v)", err, stopErr)
		}
		return nil, err
	}
	return withToken(cfg, token), nil
}

// StartOption configures StartEnvtest.
type StartOption func(*startOptions)

type startOptions struct{ log logr.Logger }

// WithStartLog is where StartEnvtest says that it waits for a start slot (slots.go), and how long.
func WithStartLog(log logr.Logger) StartOption { return func(o *startOptions) { o.log = log } }

// start starts e's etcd and kube-apiserver once, waits for the default namespace, then lets envtest's
// Start install the CRDs and webhooks on it as on an existing cluster. Afterwards e is an environment
// of its own again, so e.Stop stops the processes.
func start(e *crenvtest.Environment, knob string) (*rest.Config, error) {
	cp := &e.ControlPlane
	if cp.Etcd == nil {
		cp.Etcd = &crenvtest.Etcd{}
	}
	api := cp.GetAPIServer()
	if api.Path == "" {
		api.Path = filepath.Join(e.BinaryAssetsDirectory, "kube-apiserver")
	}
	if cp.Etcd.Path == "" {
		cp.Etcd.Path = filepath.Join(e.BinaryAssetsDirectory, "etcd")
	}
	cp.Etcd.StartTimeout, api.StartTimeout = e.ControlPlaneStartTimeout, e.ControlPlaneStartTimeout
	cp.Etcd.StopTimeout, api.StopTimeout = e.ControlPlaneStopTimeout, e.ControlPlaneStopTimeout
	begun := time.Now()
	if err := cp.Start(); err != nil {
		return nil, explain("starting etcd and kube-apiserver (once, not restarted)", err, begun, e.ControlPlaneStartTimeout, knob)
	}
	// envtest's own admin user, as its Start makes it: its config names the server and its CA.
	admin, err := cp.AddUser(crenvtest.User{Name: "admin", Groups: []string{"system:masters"}}, &rest.Config{QPS: 1000, Burst: 2000})
	if err != nil {
		return nil, fmt.Errorf("provisioning envtest's admin user: %w", err)
	}
	e.Config = admin.Config()
	// envtest's Start gives the default namespace 5 s to appear, which a starved API server without a
	// seed overruns; waited here with the start's timeout, its check then passes at once.
	if err := defaultNamespace(e.Config, e.ControlPlaneStartTimeout); err != nil {
		return nil, explain("kube-apiserver answers but did not create the default namespace", err, begun, e.ControlPlaneStartTimeout, knob)
	}
	e.UseExistingCluster = ptr.To(true)
	defer func() { e.UseExistingCluster = ptr.To(false) }()
	return e.Start()
}

func defaultNamespace(cfg *rest.Config, timeout time.Duration) error {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	ctx := context.Background()
	// Every 50 ms: a starting control plane is what every test of the package waits for.
	return intervals.Wait(ctx, intervals.ControlPlaneReady, func() (bool, string) {
		if err := c.Get(ctx, types.NamespacedName{Name: "default"}, &corev1.Namespace{}); err != nil {
			return false, "get namespace default: " + err.Error()
		}
		return true, ""
	}, intervals.Within(timeout), intervals.Every(50*time.Millisecond))
}

// ErrOutOfTime marks a start that failed after using all of its timeout (errors.Is): trying again
// would begin from nothing, unlike after a process that exited at once (a port taken).
var ErrOutOfTime = errors.New("the start ran out of time")

// explain is what failed, err, and, for a start that used all of its timeout, why (outOfTime) and
// ErrOutOfTime.
func explain(what string, err error, begun time.Time, timeout time.Duration, knob string) error {
	if time.Since(begun) < timeout {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: %w%s (%w)", what, err, outOfTime(timeout, knob), ErrOutOfTime)
}

// outOfTime explains a start that used all of its timeout, which knob set: on a machine whose every
// core has several processes waiting to run, it was starved rather than hung, and the fix is less load
// or a longer timeout.
func outOfTime(timeout time.Duration, knob string) string {
	load, err := loadAverage()
	if err != nil {
		return fmt.Sprintf(" — it had %s (%s)", timeout, knob)
	}
	cpus := runtime.NumCPU()
	if load > 2*float64(cpus) {
		return fmt.Sprintf(" — it had %s (%s) on a machine with a load average of %.1f on %d CPUs: starved, not hung; run fewer tests at once or give it longer",
			timeout, knob, load, cpus)
	}
	return fmt.Sprintf(" — it had %s (%s) on a machine that was not busy (load average %.1f on %d CPUs): hung; its log says where it stopped", timeout, knob, load, cpus)
}

// loadAverage is the machine's load average over the last minute (/proc/loadavg).
func loadAverage() (float64, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("/proc/loadavg is empty")
	}
	return strconv.ParseFloat(f[0], 64)
}
