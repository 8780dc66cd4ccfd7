package toolchain

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
)

// fakeEtcd, set in the environment of this test binary run again, makes it an etcd that only answers
// its health check (TestMain): enough for envtest to go on to kube-apiserver.
const fakeEtcd = "TOOLCHAIN_TEST_FAKE_ETCD"

func TestMain(m *testing.M) {
	if os.Getenv(fakeEtcd) != "" {
		serveEtcdHealth(os.Args[1:])
		return
	}
	os.Exit(m.Run())
}

func serveEtcdHealth(args []string) {
	for _, a := range args {
		if a == "--help" {
			os.Exit(0)
		}
		if v, ok := strings.CutPrefix(a, "--listen-client-urls="); ok {
			u, err := url.Parse(v)
			if err != nil {
				os.Exit(2)
			}
			http.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"health":"true"}`) })
			_ = http.ListenAndServe(u.Host, nil)
		}
	}
	os.Exit(2)
}

// A kube-apiserver that does not answer within its timeout is stopped and not started again: envtest's
// own Start would kill and restart it five times, each from nothing. The error says how long it had and
// how to give it longer.
func TestAStartOutOfTimeIsNotRestartedAndSaysWhy(t *testing.T) {
	dir := t.TempDir()
	starts, bin := filepath.Join(dir, "starts"), filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	script := func(name, body string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script("etcd", fmt.Sprintf("%s=1 exec %q \"$@\"", fakeEtcd, self))
	// envtest asks each binary for --help first (looking for flags); then this one never answers.
	script("kube-apiserver", fmt.Sprintf("[ \"$1\" = --help ] && exit 0\necho started >> %q\nexec sleep 600", starts))
	t.Setenv("CLEANUP_E2E_WAIT_SCALE", "0.01") // the default timeout, 3 min, scaled to 1.8 s
	e := &crenvtest.Environment{BinaryAssetsDirectory: bin, ControlPlaneStopTimeout: 5 * time.Second}
	e.ControlPlane.Etcd = &crenvtest.Etcd{DataDir: filepath.Join(dir, "etcd")}
	e.ControlPlane.APIServer = &crenvtest.APIServer{CertDir: filepath.Join(dir, "apiserver")}
	for _, d := range []string{e.ControlPlane.Etcd.DataDir, e.ControlPlane.APIServer.CertDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	begun := time.Now()
	_, err = StartEnvtest(e)
	took := time.Since(begun)
	if err == nil {
		t.Fatal("a kube-apiserver that never answers must fail the start")
	}
	t.Logf("the error: %v", err)
	b, _ := os.ReadFile(starts)
	if n := strings.Count(string(b), "started"); n != 1 {
		t.Errorf("kube-apiserver was started %d times in %s; want once (error: %v)", n, took.Round(time.Second), err)
	}
	for _, want := range []string{"once, not restarted", "it had 1.8s", "control-plane-ready × CLEANUP_E2E_WAIT_SCALE=0.01"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error should say %q: %v", want, err)
		}
	}
	if out, _ := exec.Command("pgrep", "-f", dir).Output(); len(out) > 0 {
		t.Errorf("processes of the failed start still run: pids %s", strings.Fields(string(out)))
	}
}
