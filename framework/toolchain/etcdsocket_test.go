package toolchain

import (
	"slices"
	"strings"
	"testing"

	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The API server's etcd server is the socket in etcd's data dir, etcd listens there beside its TCP URL
// (one flag value); a data dir too deep for a socket's path keeps TCP; a flag the caller set wins.
func TestEtcdOverSocketKeepsTCPAndTheCallersFlags(t *testing.T) {
	tcp := map[string][]string{"listen-client-urls": {"http://127.0.0.1:2379"}, "etcd-servers": {"http://127.0.0.1:2379"}}
	render := func(cp *crenvtest.ControlPlane) (etcd, api []string) {
		return cp.Etcd.Configure().AsStrings(tcp), cp.GetAPIServer().Configure().AsStrings(tcp)
	}
	cp := &crenvtest.ControlPlane{Etcd: &crenvtest.Etcd{}}
	etcdOverSocket(cp)
	cp.Etcd.DataDir = "/tmp/etcd-data" // as envtest sets it when it starts etcd, after this configured it
	etcd, api := render(cp)
	if want := "--listen-client-urls=http://127.0.0.1:2379,unix:///tmp/etcd-data/etcd.sock"; !slices.Contains(etcd, want) {
		t.Errorf("etcd's flags %q, want %s", etcd, want)
	}
	if want := "--etcd-servers=unix:///tmp/etcd-data/etcd.sock"; !slices.Contains(api, want) {
		t.Errorf("kube-apiserver's flags %q, want %s", api, want)
	}

	cp.Etcd.DataDir = "/tmp/" + strings.Repeat("d", 100)
	if etcd, api := render(cp); !slices.Contains(etcd, "--listen-client-urls=http://127.0.0.1:2379") || !slices.Contains(api, "--etcd-servers=http://127.0.0.1:2379") {
		t.Errorf("a data dir too deep for a socket: etcd %q, kube-apiserver %q, want TCP only", etcd, api)
	}

	own := &crenvtest.ControlPlane{Etcd: &crenvtest.Etcd{DataDir: "/tmp/etcd-data"}}
	own.GetAPIServer().Configure().Set("etcd-servers", "http://10.0.0.1:2379")
	etcdOverSocket(own)
	if etcd, api := render(own); !slices.Contains(etcd, "--listen-client-urls=http://127.0.0.1:2379") || !slices.Contains(api, "--etcd-servers=http://10.0.0.1:2379") {
		t.Errorf("the caller's --etcd-servers: etcd %q, kube-apiserver %q, want both as the caller and envtest had them", etcd, api)
	}
}
