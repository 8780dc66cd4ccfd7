// Command budget prints where a run's time went: from the phases every spec recorded (framework/budget,
// <dir>/*.jsonl) it prints per phase the spec count, median, 90th percentile and slowest spec, and
// writes the same to <dir>/summary.json. It never fails a run. Specs from the example consumers' budget
// dirs are prefixed with their example's name, since an example may run a suite's specs.
//
//	go run ./scripts/budget "$ARTIFACTS/budget" "$ARTIFACTS"/examples/*/budget
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cleanup-e2e/cleanup-e2e/framework/budget"
)

// order is the phases in the order a spec goes through them (framework/budget); others sort after.
var order = []string{"provider-ready", "stack-ready", "cluster-alone", "api-locks", "namespaces", "snapshot", "install", "operands-reconciled",
	"uninstall-requested", "operands-gone", "csv-gone", "quiet", "leftovers-check", "case", installToUninstalled, "last-run", "teardown"}

// installToUninstalled is a derived row: per spec that installed and uninstalled an operator, the sum of
// its lifecycle phases, without set-up, the leftovers check and the quiet windows.
const installToUninstalled = "install-to-uninstalled"

var lifecyclePhases = []string{"install", "operands-reconciled", "uninstall-requested", "operands-gone", "csv-gone"}

// Phase is one row of the summary.
type Phase struct {
	Phase   string  `json:"phase"`
	Count   int     `json:"count"`
	Failed  int     `json:"failed"`
	Median  float64 `json:"medianSeconds"`
	P90     float64 `json:"p90Seconds"`
	Max     float64 `json:"maxSeconds"`
	Slowest string  `json:"slowestSpec"`
	Total   float64 `json:"totalSeconds"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: budget <dir with *.jsonl> [<an example's dir with *.jsonl>...]")
		os.Exit(2)
	}
	dir := os.Args[1]
	entries, err := read(dir, os.Args[2:]...)
	if err != nil {
		fmt.Printf("time budget: %v\n", err)
		return
	}
	phases := summarize(append(entries, derive(entries)...))
	printTable(os.Stdout, phases)
	if err := write(filepath.Join(dir, "summary.json"), phases); err != nil {
		fmt.Printf("time budget: %v\n", err)
	}
}

// read reads the phases recorded under dir and under the examples' dirs, whose specs it names
// "<example>: <spec>" (<example> is the directory above the budget's).
func read(dir string, examples ...string) ([]budget.Entry, error) {
	var out []budget.Entry
	for i, d := range append([]string{dir}, examples...) {
		prefix := ""
		if i > 0 {
			prefix = filepath.Base(filepath.Dir(filepath.Clean(d))) + ": "
		}
		files, _ := filepath.Glob(filepath.Join(d, "*.jsonl"))
		for _, f := range files {
			fh, err := os.Open(f)
			if err != nil {
				return nil, err
			}
			sc := bufio.NewScanner(fh)
			for sc.Scan() {
				var e budget.Entry
				if json.Unmarshal(sc.Bytes(), &e) == nil && e.Phase != "" {
					e.Spec = prefix + e.Spec
					out = append(out, e)
				}
			}
			fh.Close()
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no phases recorded under %s (no spec of the spec library ran)", strings.Join(append([]string{dir}, examples...), ", "))
	}
	return out, nil
}

func summarize(entries []budget.Entry) []Phase {
	by := map[string][]budget.Entry{}
	for _, e := range entries {
		by[e.Phase] = append(by[e.Phase], e)
	}
	var out []Phase
	for name, es := range by {
		sort.Slice(es, func(i, j int) bool { return es[i].Seconds < es[j].Seconds })
		p := Phase{Phase: name, Count: len(es), Median: quantile(es, 0.5), P90: quantile(es, 0.9),
			Max: es[len(es)-1].Seconds, Slowest: es[len(es)-1].Spec}
		for _, e := range es {
			p.Total += e.Seconds
			if e.Failed {
				p.Failed++
			}
		}
		out = append(out, p)
	}
	rank := func(name string) int {
		if i := slices.Index(order, name); i >= 0 {
			return i
		}
		return len(order)
	}
	sort.Slice(out, func(i, j int) bool {
		if ri, rj := rank(out[i].Phase), rank(out[j].Phase); ri != rj {
			return ri < rj
		}
		return out[i].Phase < out[j].Phase
	})
	return out
}

// derive adds one installToUninstalled entry per spec that has both an install and a csv-gone phase
// (an upgrade spec installs twice: every lifecycle phase of the spec counts).
func derive(entries []budget.Entry) []budget.Entry {
	type acc struct {
		e                  budget.Entry
		installed, removed bool
	}
	by := map[string]*acc{}
	var specs []string
	for _, e := range entries {
		if !slices.Contains(lifecyclePhases, e.Phase) {
			continue
		}
		a := by[e.Spec]
		if a == nil {
			a = &acc{e: budget.Entry{Spec: e.Spec, Phase: installToUninstalled}}
			by[e.Spec] = a
			specs = append(specs, e.Spec)
		}
		a.e.Seconds += e.Seconds
		a.e.Failed = a.e.Failed || e.Failed
		a.installed = a.installed || e.Phase == "install"
		a.removed = a.removed || e.Phase == "csv-gone"
	}
	var out []budget.Entry
	for _, s := range specs {
		if a := by[s]; a.installed && a.removed {
			out = append(out, a.e)
		}
	}
	return out
}

// quantile of sorted entries (nearest rank).
func quantile(sorted []budget.Entry, q float64) float64 {
	i := int(q*float64(len(sorted)) + 0.5)
	i = min(max(i-1, 0), len(sorted)-1)
	if q == 0.5 && len(sorted)%2 == 0 {
		return (sorted[len(sorted)/2-1].Seconds + sorted[len(sorted)/2].Seconds) / 2
	}
	return sorted[i].Seconds
}

func printTable(w io.Writer, phases []Phase) {
	fmt.Fprintln(w, "time budget (framework/budget; seconds per spec and phase):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  phase\tspecs\tmedian\tp90\tslowest\tslowest spec")
	for _, p := range phases {
		failed := ""
		if p.Failed > 0 {
			failed = fmt.Sprintf(" (%d failed)", p.Failed)
		}
		fmt.Fprintf(tw, "  %s\t%d%s\t%s\t%s\t%s\t%s\n", p.Phase, p.Count, failed, secs(p.Median), secs(p.P90), secs(p.Max), short(p.Slowest))
	}
	tw.Flush()
}

func secs(s float64) string { return (time.Duration(s*10) * time.Second / 10).String() }

// short keeps a spec's name readable in a table row.
func short(spec string) string {
	if len(spec) <= 90 {
		return spec
	}
	return spec[:87] + "..."
}

func write(path string, phases []Phase) error {
	data, err := json.MarshalIndent(struct {
		Generated time.Time `json:"generated"`
		Phases    []Phase   `json:"phases"`
	}{time.Now().UTC(), phases}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
