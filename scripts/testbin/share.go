package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

// Runs sharing one cache — two make test at once in one checkout, or two checkouts pointing
// CLEANUP_E2E_CACHE at the same directory — must never see each other's half-made files nor lose a
// binary the other removes. So everything a run makes for itself carries its pid in its name (the
// half-linked binary, the history being written, the Ginkgo CLI being copied, the suite link in a
// package's directory), and a run keeps its own hard link to each binary it runs (runDir): the cache
// keeps only the newest binary of a package, and a run on another commit that links a newer one
// removes the older while this run may not have started it yet. What a run killed before its cleanup
// left is removed by the next run, once its pid is gone (sweep).

// owned matches the names of what a run made for itself: run.PID (its directory of hard links) and
// NAME.PID.tmp or NAME.PID.test (a file being written, a suite's link).
var owned = regexp.MustCompile(`^run\.(\d+)$|\.(\d+)\.(?:tmp|test)$`)

// ownName is name with this run's pid, as owned matches it: "NAME.PID.EXT".
func ownName(name, ext string) string { return fmt.Sprintf("%s.%d.%s", name, os.Getpid(), ext) }

// runDir makes this run's directory for hard links to the binaries it runs, in cache (a hard link
// needs the same file system), after sweeping what runs that are gone left there.
func runDir(cache string) (string, error) {
	sweep(cache, "")
	dir := filepath.Join(cache, "run."+strconv.Itoa(os.Getpid()))
	_ = os.RemoveAll(dir) // a dead run's with the pid this one now has
	return dir, os.Mkdir(dir, 0o755)
}

// sweep removes the entries of dir whose names start with prefix and that a run which is no longer
// alive made for itself. In a package's directory the prefix keeps it to testbin's own links: a user's
// file may be named like data.2.tmp.
func sweep(dir, prefix string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		m := owned.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		pid, err := strconv.Atoi(m[1] + m[2])
		if err != nil || alive(pid) {
			continue
		}
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// alive says whether a process with that pid exists (signal 0 checks without sending anything).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// hold hard-links file into dir as name and returns the link: the run uses it from then on, whatever
// another run does to file.
func hold(dir, file, name string) (string, error) {
	held := filepath.Join(dir, name)
	if err := os.Link(file, held); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	return held, nil
}
