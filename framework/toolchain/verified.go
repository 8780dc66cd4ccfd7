package toolchain

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// A binary whose version was checked is not asked again while it is the same file. Asking runs it:
// `kube-apiserver --version` is the start of its whole init, ≈ 0.2 s of CPU, and a warm make test
// asked ≈ 90 times, ≈ 15 s of CPU (every envtest start checks kube-apiserver and etcd, every provider
// kube-controller-manager). The mark names the version and the file (device, inode, size, modification
// time), so a binary rebuilt, replaced or moved in its place is asked again.

// verifiedDir holds the marks, beside the binaries.
func verifiedDir() string { return filepath.Join(CacheDir(), "bin", ".verified") }

func verifiedMark(b Binary) string { return filepath.Join(verifiedDir(), b.Dir+"-"+b.Name) }

// fileIdentity is what a mark records of b's file, read once before it is asked (so the mark names the
// file that answered); "" when the platform does not say.
func fileIdentity(b Binary, fi os.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s %s dev=%d ino=%d size=%d mtime=%d\n", b.Name, b.Version, st.Dev, st.Ino, fi.Size(), fi.ModTime().UnixNano())
}

// verified reports whether the file of identity id was checked to be b's version.
func verified(b Binary, id string) bool {
	mark, err := os.ReadFile(verifiedMark(b))
	return id != "" && err == nil && string(mark) == id
}

// markVerified records that the file of identity id is b's version. Best effort: without a mark the next call asks again.
// Written whole under a name of this process's own, then renamed: test binaries check at the same
// moment.
func markVerified(b Binary, id string) {
	if id == "" || os.MkdirAll(verifiedDir(), 0o755) != nil {
		return
	}
	mark := verifiedMark(b)
	tmp := mark + ".tmp." + strconv.Itoa(os.Getpid())
	if os.WriteFile(tmp, []byte(id), 0o644) != nil || os.Rename(tmp, mark) != nil {
		_ = os.Remove(tmp)
	}
}
