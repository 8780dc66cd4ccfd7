// Package kindsetup sets up the kind tier's shared cluster: created or reused, the images
// scripts/images.sh built loaded and never pulled, OLM installed. framework/testenv's kind provider
// and make e2e's cluster helper (scripts/kind/cluster) share it, so the set-up is one piece of code;
// it is not for consumers, whose suites get the cluster through testenv.Start.
package kindsetup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/kind"
	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
	"github.com/cleanup-e2e/cleanup-e2e/framework/toolchain"
)

// localImagePrefixes are the registries of the images scripts/images.sh builds: pods using them get
// imagePullPolicy IfNotPresent on kind (kind.Provider.EnsureLocalImages), since nothing can be pulled.
var localImagePrefixes = []string{"fixtures.local/", "cleanup-e2e.local/"}

// imagesList is the file scripts/images.sh writes: every image the kind tier loads, one a line.
func imagesList() string { return filepath.Join(toolchain.CacheDir(), "images.list") }

// ClusterName is $CLEANUP_E2E_KIND_CLUSTER, default "cleanup-e2e".
func ClusterName() string {
	if n := envvar.KindCluster.Get(); n != "" {
		return n
	}
	return "cleanup-e2e"
}

// SetUp creates or reuses the kind cluster ClusterName(), loads the images scripts/images.sh built
// (imagesList) and the caller's own, makes them never pulled (EnsureLocalImages), and installs OLM from
// its upstream manifests (every suite shares the cluster, and the stack of any of them may require
// OLM). Processes of several suites may call it at once: a file lock serialises them, and the later
// ones reuse the cluster (reuse and the OLM install are idempotent). keep makes Stop leave the cluster
// (as CLEANUP_E2E_KEEP_CLUSTER=1 does).
func SetUp(ctx context.Context, log logr.Logger, keep bool, own ...string) (*kind.Provider, error) {
	name := ClusterName()
	images, err := readImagesList()
	if err != nil {
		return nil, err
	}
	unlock, err := lock(filepath.Join(os.TempDir(), "cleanup-e2e-kind", name+".lock"), log)
	if err != nil {
		return nil, err
	}
	defer unlock()
	opts := []kind.Option{kind.WithName(name), kind.WithLogger(log), kind.WithImages(append(images, own...)...)}
	if keep {
		opts = append(opts, kind.WithKeepCluster(true))
	}
	start := time.Now()
	p, err := kind.New(ctx, opts...)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*kind.Provider, error) {
		return nil, fmt.Errorf("%w (cluster %s left running for inspection; delete it with `docker rm -f -v %s-control-plane`)", err, name, name)
	}
	// One policy for every local image: the framework's prefixes and the caller's own images.
	if err := p.EnsureLocalImages(ctx, append(append([]string{}, localImagePrefixes...), own...)...); err != nil {
		return fail(err)
	}
	c, err := kube.NewClient(p.RESTConfig(), kube.MustScheme())
	if err != nil {
		return fail(err)
	}
	olmStart := time.Now()
	if err := olm.InstallUpstream(ctx, c, olm.DefaultImages, intervals.Get(intervals.OLMInstall)); err != nil {
		return fail(fmt.Errorf("install OLM on kind cluster %s: %w", name, err))
	}
	log.Info("OLM ready", "took", time.Since(olmStart).Round(time.Millisecond).String())
	log.Info("kind provider ready (cluster, images, OLM)", "name", name, "took", time.Since(start).Round(time.Millisecond).String())
	return p, nil
}

// lock takes the set-up's file lock, saying so when another process holds it; the kernel releases it
// when the process dies.
func lock(path string, log logr.Logger) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); errors.Is(err, syscall.EWOULDBLOCK) {
		log.Info("another process is setting up the kind cluster; waiting to reuse it", "lock", path)
		start := time.Now()
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		log.Info("the other set-up ended", "waited", time.Since(start).Round(time.Millisecond).String())
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil // closing the file releases its lock
}

func readImagesList() ([]string, error) {
	f, err := os.Open(imagesList())
	if err != nil {
		return nil, fmt.Errorf("no image list (%w): build the images with scripts/images.sh (make e2e does)", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}
