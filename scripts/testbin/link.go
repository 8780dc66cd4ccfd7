package main

// Linking: the key of each package's test binary, and linking the missing ones into the cache.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// keyLen is how many hex digits of the hash name a binary.
const keyLen = 20

// linkFlags are the linker flags of every kept binary, part of its key. -w leaves out the DWARF debug
// information, which only a debugger reads (stack traces, Ginkgo's code locations and pprof use the
// symbol and line tables that stay): a cold link takes ≈ 20 % less CPU, and a first make test links
// every test binary.
const linkFlags = "-w"

// testPackage is one package with tests: its test main's dependencies decide its key.
type testPackage struct {
	path, dir, key string
	binary         string
	// niced: its tests run under nice (-foreground).
	niced bool
	// env of its tests' processes (nil: testbin's own; -gomaxprocs).
	env []string
	// parallel is its binary's -test.parallel when -gomaxprocs lowered GOMAXPROCS (0: testing's default).
	parallel int
	// ginkgo: its binary links Ginkgo, which fails a suite given -test.parallel (ginkgo -p is its way).
	ginkgo bool
}

// testPackages lists the packages of patterns that have tests, with the key of their test binary: a
// hash of the build IDs of the test main and of everything it links (go list -export compiles what is
// not compiled yet; a build ID changes with the compiled output).
func testPackages(patterns []string) ([]testPackage, error) {
	// -buildvcs=false: under -trimpath the checkout's VCS state is in every test main's build ID
	// (test binaries are never stamped), so any commit would change every key.
	args := append([]string{"list", "-buildvcs=false", "-test", "-deps", "-export", "-f",
		"{{.ImportPath}}\t{{.BuildID}}\t{{.Dir}}\t{{join .Deps \",\"}}"}, patterns...)
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v\n%s", err, stderr.String())
	}
	ids, dirs, deps := map[string]string{}, map[string]string{}, map[string][]string{}
	var mains []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(raw)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			return nil, fmt.Errorf("go list: unexpected line %q", line)
		}
		ids[f[0]], dirs[f[0]] = f[1], f[2]
		if strings.HasSuffix(f[0], ".test") {
			mains = append(mains, f[0])
			deps[f[0]] = strings.Split(f[3], ",")
		}
	}
	var out []testPackage
	for _, m := range mains {
		h := sha256.New()
		fmt.Fprintf(h, "%s %s/%s -ldflags=%s\n%s %s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, linkFlags, m, ids[m])
		for _, d := range deps[m] {
			if ids[d] == "" && d != "unsafe" { // unsafe is the one package with nothing compiled
				return nil, fmt.Errorf("go list gave no build ID for %s (a dependency of %s)", d, m)
			}
			fmt.Fprintf(h, "%s %s\n", d, ids[d])
		}
		path := strings.TrimSuffix(m, ".test")
		out = append(out, testPackage{path: path, dir: dirs[path], key: hex.EncodeToString(h.Sum(nil))[:keyLen],
			ginkgo: slices.Contains(deps[m], ginkgoPackage)})
	}
	return out, nil
}

// link puts each package in ready once its binary is there: the kept ones at once, the others as
// they are linked (two at a time: go build uses every core itself), in pkgs' order, so that kept
// binaries run while the others link. With held (runDir), each package's binary is this run's hard
// link there; with "", the cache's. It closes ready and reports whether every package built; one that
// does not is reported as a failed package on out.
func link(cache, held string, pkgs []testPackage, out *lineWriter, ready *queue) bool {
	start := time.Now()
	var (
		missing []testPackage
		wg      sync.WaitGroup
		slots   = make(chan struct{}, 2)
		ok      atomic.Bool
	)
	ok.Store(true)
	var (
		kept    []testPackage
		linking []string
	)
	for _, p := range pkgs {
		p.binary = filepath.Join(cache, binaryName(p.path, p.key))
		if keep(&p, held) {
			kept = append(kept, p)
			continue
		}
		missing = append(missing, p)
		linking = append(linking, p.path)
	}
	ready.begin(kept, linking)
	for _, p := range missing {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			tmp := ownName(p.binary, "tmp")
			msg, err := exec.Command("go", "test", "-c", "-buildvcs=false", "-ldflags="+linkFlags, "-o", tmp, p.path).CombinedOutput()
			binary := p.binary
			if err == nil && held != "" {
				binary, err = hold(held, tmp, filepath.Base(p.binary))
			}
			if err == nil {
				err = os.Rename(tmp, p.binary)
			}
			if err != nil {
				_ = os.Remove(tmp)
				out.event(event{Action: "output", Package: p.path, Output: fmt.Sprintf("building the test binary failed: %v\n%s", err, msg)})
				out.event(event{Action: "fail", Package: p.path})
				ok.Store(false)
				ready.forget(p.path)
				return
			}
			// Only the newest binary of a package is kept (exactly keyLen characters of key, so that
			// package "a" never removes the binaries of "a-b").
			old, _ := filepath.Glob(filepath.Join(cache, binaryName(p.path, strings.Repeat("?", keyLen))))
			for _, o := range old {
				if o != p.binary {
					_ = os.Remove(o)
				}
			}
			p.binary = binary
			ready.push(p)
		})
	}
	wg.Wait()
	ready.close()
	summary.Printf("testbin: %d test binaries, %d linked in %s (%d kept from an earlier run)\n",
		len(pkgs), len(missing), time.Since(start).Round(100*time.Millisecond), len(pkgs)-len(missing))
	return ok.Load()
}

// keep says whether p's binary is in the cache already and, when the run holds its binaries (held is
// its runDir), points p at the run's hard link to it.
func keep(p *testPackage, held string) bool {
	if held == "" {
		_, err := os.Stat(p.binary)
		return err == nil
	}
	b, err := hold(held, p.binary, filepath.Base(p.binary))
	if err != nil {
		return false // not there, or removed by another run since: linked again
	}
	p.binary = b
	return true
}

// binaryName is the file of a package's test binary with that key.
func binaryName(pkg, key string) string {
	return strings.ReplaceAll(pkg, "/", "_") + "-" + key + ".test"
}
