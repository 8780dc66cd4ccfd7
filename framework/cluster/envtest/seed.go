package envtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/toolchain"
)

// A fresh kube-apiserver spends ≈ 0.6 s of its CPU (a quarter of its start with OLM; ≈ 0.35 s
// without) writing what every cluster begins with: RBAC's bootstrap
// roles, the flow-control defaults, the system namespaces, and OLM's CRDs (each created, then its
// status written twice, every write validating the large CSV schema again). make test starts ≈ 20
// control planes and is CPU-bound on 2 cores.
//
// So etcd starts on a copy of a seed: a data dir in which a control plane, started and stopped once
// for that, has written all of it. The API server then starts as after a restart of a real control
// plane: it finds its bootstrap objects and the CRDs, and writes nothing again. A seed is made once
// per toolchain and CRD set and kept in the cache (envtest-seed/); CLEANUP_E2E_ENVTEST_SEED=0 starts
// from an empty data dir instead.

// seedInto fills dataDir (empty, not yet used by etcd) from the seed for crds, making the seed first
// when there is none, and says whether it did. A seed that cannot be had is logged, and the control
// plane starts from an empty data dir, as without seeding; so it does while another process makes the
// seed (no waiting for it).
//
// The seed's control plane runs in workDir, the provider's, so a run killed meanwhile is reaped like
// the rest of it (process.ReapStale).
func seedInto(dataDir, workDir, assets string, crds []*apiextensionsv1.CustomResourceDefinition, log logr.Logger) bool {
	if envvar.EnvtestSeed.Get() == "0" {
		return false
	}
	dir, err := seedDir(assets, crds)
	if err == nil {
		err = ensureSeed(dir, workDir, assets, crds, log)
	}
	if err == nil {
		err = copyTree(dir, dataDir)
	}
	switch {
	case err == nil:
		log.V(1).Info("etcd starts on a copy of the seed", "seed", dir)
	case errors.Is(err, errSeedBusy):
		log.Info("another process is making the etcd seed; starting from an empty data dir", "seed", dir)
	case err != nil:
		log.Info("starting from an empty data dir: no etcd seed", "seed", dir, "error", err.Error())
		_ = os.RemoveAll(dataDir)
		_ = os.MkdirAll(dataDir, 0o700)
	}
	return err == nil
}

var errSeedBusy = errors.New("the seed is being made by another process")

// seedDir names the seed by what its content depends on: the two binaries (their version and build)
// and the CRDs written into it.
func seedDir(assets string, crds []*apiextensionsv1.CustomResourceDefinition) (string, error) {
	h := sha256.New()
	for _, b := range []string{"kube-apiserver", "etcd"} {
		fi, err := os.Stat(filepath.Join(assets, b))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d %d\n", b, fi.Size(), fi.ModTime().UnixNano())
	}
	sorted := slices.Clone(crds)
	slices.SortFunc(sorted, func(a, b *apiextensionsv1.CustomResourceDefinition) int { return strings.Compare(a.Name, b.Name) })
	for _, crd := range sorted {
		data, err := json.Marshal(crd)
		if err != nil {
			return "", err
		}
		h.Write(data)
	}
	return filepath.Join(toolchain.CacheDir(), "envtest-seed", toolchain.KubeVersion+"-"+hex.EncodeToString(h.Sum(nil))[:16]), nil
}

// ensureSeed makes the seed at dir unless it is there, under a lock; errSeedBusy when another process
// holds the lock.
func ensureSeed(dir, workDir, assets string, crds []*apiextensionsv1.CustomResourceDefinition, log logr.Logger) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return errSeedBusy
		}
		return err
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if _, err := os.Stat(dir); err == nil {
		return nil // made while this process waited for the lock
	}
	start := time.Now()
	made := filepath.Join(workDir, "seed")
	defer os.RemoveAll(made)
	if err := makeSeed(made, assets, crds); err != nil {
		return fmt.Errorf("make the etcd seed: %w", err)
	}
	// Copied into the cache (holes for the zeros of etcd's preallocated log), then renamed into place,
	// so a seed is there whole or not at all.
	tmp := dir + ".tmp"
	_ = os.RemoveAll(tmp) // left by a process killed while copying (this one holds the lock)
	if err := copyTree(filepath.Join(made, "etcd"), tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return err
	}
	log.Info("made the etcd seed", "seed", dir, "crds", len(crds), "took", time.Since(start).Round(time.Millisecond).String())
	return nil
}

// makeSeed starts etcd and kube-apiserver in dir (data in dir/etcd), installs crds, and stops both:
// etcd, stopped by SIGTERM, leaves a consistent data dir.
func makeSeed(dir string, assets string, crds []*apiextensionsv1.CustomResourceDefinition) error {
	var etcdOut, apiOut bytes.Buffer // one each: the two processes' output is copied concurrently
	env := &crenvtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDs:                  crds,
	}
	env.ControlPlane.Etcd = &crenvtest.Etcd{DataDir: filepath.Join(dir, "etcd"), Out: &etcdOut, Err: &etcdOut}
	env.ControlPlane.APIServer = &crenvtest.APIServer{CertDir: filepath.Join(dir, "apiserver"), Out: &apiOut, Err: &apiOut}
	for _, d := range []string{env.ControlPlane.Etcd.DataDir, env.ControlPlane.APIServer.CertDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	if _, err := toolchain.StartEnvtest(env); err != nil {
		return fmt.Errorf("%w (kube-apiserver: %s; etcd: %s)", err, tail(apiOut.String()), tail(etcdOut.String()))
	}
	if err := env.Stop(); err != nil {
		return fmt.Errorf("stop: %w (kube-apiserver: %s; etcd: %s)", err, tail(apiOut.String()), tail(etcdOut.String()))
	}
	return nil
}

func tail(s string) string {
	if len(s) > 2000 {
		return "…" + s[len(s)-2000:]
	}
	return s
}

// servedFromSeed waits, as envtest waits for the CRDs it installs, until discovery serves every
// version of the seed's CRDs, which the API server read from etcd at its start.
func servedFromSeed(cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition, maxTime time.Duration) error {
	err := crenvtest.WaitForCRDs(cfg, crds, crenvtest.CRDInstallOptions{MaxTime: maxTime, PollInterval: intervals.Poll})
	if err != nil {
		return fmt.Errorf("the API server started on the etcd seed but does not serve its %d CRDs after %s (%w); the last attempt starts without the seed", len(crds), maxTime, err)
	}
	return nil
}
