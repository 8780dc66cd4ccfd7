package olmv1

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/process"
)

// Config says where Start runs the managers.
type Config struct {
	// Client is an admin client of the cluster: Start creates SystemNamespace and the CRDs with it.
	Client client.Client
	// Kubeconfig is the admin kubeconfig both managers use (KUBECONFIG), e.g. the envtest provider's.
	Kubeconfig string
	// WorkDir holds the certificates, both cache directories and HOME. Created if missing.
	WorkDir string
	// LogDir holds catalogd.log and operator-controller.log (default: WorkDir/logs), e.g. the
	// provider's log directory, which a failed spec's artifacts copy.
	LogDir string
	// InsecureRegistries are the registry hosts the managers may pull from over plain HTTP (the
	// Registry's Host): registries.conf in their HOME marks them insecure, the only switch
	// containers/image has for it.
	InsecureRegistries []string
}

// Managers are running catalogd and operator-controller processes.
type Managers struct {
	Catalogd, OperatorController *process.Process
	// How operator-controller was started, for RestartOperatorController.
	ocSpec  process.Spec
	ocProbe string
}

// Start installs the CRDs and SystemNamespace when missing, then starts catalogd and
// operator-controller and returns once both answer their readiness probe. On error, whatever it
// started is stopped.
func Start(ctx context.Context, cfg Config) (_ *Managers, err error) {
	ocBin, err := OperatorController.Path()
	if err != nil {
		return nil, err
	}
	catBin, err := Catalogd.Path()
	if err != nil {
		return nil, err
	}
	crdPaths, err := CRDPaths()
	if err != nil {
		return nil, err
	}
	crds, err := kube.ReadCRDs(crdPaths...)
	if err != nil {
		return nil, err
	}
	if err := kube.EnsureCRDs(ctx, cfg.Client, crds...); err != nil {
		return nil, fmt.Errorf("OLM v1 CRDs: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: SystemNamespace}}
	if err := client.IgnoreAlreadyExists(cfg.Client.Create(ctx, ns)); err != nil {
		return nil, fmt.Errorf("create namespace %s: %w", SystemNamespace, err)
	}

	dir := cfg.WorkDir
	home := filepath.Join(dir, "home")
	logs := cfg.LogDir
	if logs == "" {
		logs = filepath.Join(dir, "logs")
	}
	for _, d := range []string{filepath.Join(home, ".config", "containers"), logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".config", "containers", "registries.conf"), registriesConf(cfg.InsecureRegistries), 0o644); err != nil {
		return nil, err
	}
	tls, err := writeCerts(filepath.Join(dir, "pki"))
	if err != nil {
		return nil, fmt.Errorf("catalogd's certificate: %w", err)
	}
	ports, err := freePorts(5)
	if err != nil {
		return nil, err
	}
	catalogsPort, webhookPort, catProbe, catMetrics, ocProbe := ports[0], ports[1], ports[2], ports[3], ports[4]
	// HOME: registries.conf ($HOME/.config/containers, read before /etc/containers).
	env := []string{"KUBECONFIG=" + cfg.Kubeconfig, "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}

	m := &Managers{}
	defer func() {
		if err != nil {
			_ = m.Stop()
		}
	}()
	// Both empty their cache directory at start (fsutil.EnsureEmptyDirectory): never the defaults
	// (/var/cache), always a directory of this run. The work dir is in each command line so that
	// process.ReapStale finds them after a crash of the test.
	m.Catalogd, err = process.Start(process.Spec{Name: "catalogd", Path: catBin, Env: env, Dir: dir,
		LogPath: filepath.Join(logs, "catalogd.log"),
		Args: []string{
			"--cache-dir=" + filepath.Join(dir, "catalogd-cache"),
			"--system-namespace=" + SystemNamespace,
			fmt.Sprintf("--catalogs-server-addr=127.0.0.1:%d", catalogsPort),
			// goes into status.urls.base, where operator-controller fetches the catalog: the
			// certificate's SAN
			fmt.Sprintf("--external-address=localhost:%d", catalogsPort),
			fmt.Sprintf("--webhook-server-port=%d", webhookPort),
			"--tls-cert=" + tls.certFile, "--tls-key=" + tls.keyFile,
			fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", catProbe),
			fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", catMetrics),
		}})
	if err != nil {
		return nil, err
	}
	m.ocSpec = process.Spec{Name: "operator-controller", Path: ocBin, Env: env, Dir: dir,
		LogPath: filepath.Join(logs, "operator-controller.log"),
		Args: []string{
			"--cache-path=" + filepath.Join(dir, "operator-controller-cache"),
			"--system-namespace=" + SystemNamespace,
			"--catalogd-cas-dir=" + tls.caDir,
			fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ocProbe),
		}}
	m.ocProbe = fmt.Sprintf("http://127.0.0.1:%d/readyz", ocProbe)
	m.OperatorController, err = process.Start(m.ocSpec)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, intervals.Get(intervals.OLMReady))
	defer cancel()
	for _, w := range []struct {
		p    *process.Process
		port int
	}{{m.Catalogd, catProbe}, {m.OperatorController, ocProbe}} {
		url := fmt.Sprintf("http://127.0.0.1:%d/readyz", w.port)
		if err := w.p.WaitFor(wctx, w.p.Name+" to answer "+url, intervals.Poll, func(ctx context.Context) bool { return httpOK(ctx, url) }); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// RestartOperatorController stops operator-controller (SIGTERM, then SIGKILL after 10 s) and starts it
// again as Start did, its log appended, and returns once it answers its readiness probe: a restart in
// the middle of an install, upgrade or uninstall, as a rollout of operator-controller makes one.
func (m *Managers) RestartOperatorController(ctx context.Context) error {
	_ = m.OperatorController.Stop(10 * time.Second) // stopped by the signal: an exit status, not a failure
	spec := m.ocSpec
	spec.Append = true
	p, err := process.Start(spec)
	if err != nil {
		return fmt.Errorf("restart operator-controller: %w", err)
	}
	m.OperatorController = p
	wctx, cancel := context.WithTimeout(ctx, intervals.Get(intervals.OLMReady))
	defer cancel()
	return p.WaitFor(wctx, "operator-controller to answer "+m.ocProbe+" after its restart", intervals.Poll,
		func(ctx context.Context) bool { return httpOK(ctx, m.ocProbe) })
}

// Stop stops both managers (SIGTERM, then SIGKILL after 10 s).
func (m *Managers) Stop() error {
	var errs []error
	for _, p := range []*process.Process{m.OperatorController, m.Catalogd} {
		if p != nil {
			errs = append(errs, p.Stop(10*time.Second))
		}
	}
	return errors.Join(errs...)
}

func registriesConf(hosts []string) []byte {
	var b strings.Builder
	for _, h := range hosts {
		fmt.Fprintf(&b, "[[registry]]\nlocation = %q\ninsecure = true\n\n", h)
	}
	return []byte(b.String())
}

// freePorts returns n distinct loopback ports free at the time of the call.
func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func httpOK(ctx context.Context, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
