package toolchain

import (
	"path/filepath"
	"slices"
	"strings"

	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
)

// etcdOverSocket makes kube-apiserver reach etcd through a Unix socket in etcd's data dir instead of
// loopback TCP, whose per-packet work in the kernel costs e2e/cleanup alone ≈ 3–10 % more CPU; etcd
// keeps its TCP listener for envtest's health
// check and for a user's etcdctl. A cluster's API server reaches etcd over TCP (kubeadm, kind): nothing
// a test reads depends on the link. Both flags are rendered when each process starts, once etcd's data
// dir is known (envtest makes one when the caller gives none). A flag the caller set before
// StartEnvtest is left alone; one appended to afterwards is not (the rendering ignores Append).
func etcdOverSocket(cp *crenvtest.ControlPlane) {
	if cp.Etcd == nil {
		cp.Etcd = &crenvtest.Etcd{}
	}
	etcd, api := cp.Etcd, cp.GetAPIServer()
	if unset(etcd.Configure(), "listen-client-urls") && unset(api.Configure(), "etcd-servers") {
		sock := func() string { return etcdSocket(etcd.DataDir) }
		etcd.Configure().SetRaw("listen-client-urls", socketArg{sock: sock, keep: true})
		api.Configure().SetRaw("etcd-servers", socketArg{sock: sock})
	}
}

// etcdSocket is the socket's path in dataDir, or "" when the path is too long for a Unix socket (108
// bytes with its terminating NUL on Linux): the link then stays TCP.
func etcdSocket(dataDir string) string {
	if dataDir == "" {
		return ""
	}
	if s := filepath.Join(dataDir, "etcd.sock"); len(s) < 108 {
		return s
	}
	return ""
}

func unset(args *crenvtest.Arguments, flag string) bool { return args.Get(flag).Get(nil) == nil }

// socketArg renders the socket's URL, after envtest's TCP URL when keep (one comma-separated value:
// a second --listen-client-urls would replace the first), or envtest's URL alone without a socket.
type socketArg struct {
	sock func() string
	keep bool
}

func (a socketArg) Append(...string) crenvtest.Arg { return a }

func (a socketArg) Get(defaults []string) []string {
	s := a.sock()
	switch {
	case s == "":
		return defaults
	case a.keep:
		return []string{strings.Join(append(slices.Clone(defaults), "unix://"+s), ",")}
	}
	return []string{"unix://" + s}
}
