package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cleanup-e2e/cleanup-e2e/framework/budget"
)

func TestSummaryPerPhaseInSpecOrderWithMedianAndSlowest(t *testing.T) {
	dir := t.TempDir()
	lines := []budget.Entry{
		{Spec: "a", Phase: "csv-gone", Seconds: 1},
		{Spec: "a", Phase: "install", Seconds: 2},
		{Spec: "b", Phase: "install", Seconds: 4},
		{Spec: "c", Phase: "install", Seconds: 9, Failed: true},
		{Spec: "setup x", Phase: "provider-ready", Seconds: 7},
	}
	var buf bytes.Buffer
	for _, e := range lines {
		b, _ := json.Marshal(e)
		buf.Write(append(b, '\n'))
	}
	buf.WriteString("not json\n")
	if err := os.WriteFile(filepath.Join(dir, "1.jsonl"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	entries, err := read(dir)
	if err != nil {
		t.Fatal(err)
	}
	phases := summarize(append(entries, derive(entries)...))
	var names []string
	for _, p := range phases {
		names = append(names, p.Phase)
	}
	if strings.Join(names, ",") != "provider-ready,install,csv-gone,install-to-uninstalled" {
		t.Fatalf("phases %v, want the order a spec goes through them", names)
	}
	inst := phases[1]
	if inst.Count != 3 || inst.Failed != 1 || inst.Median != 4 || inst.Max != 9 || inst.Slowest != "c" {
		t.Fatalf("install %+v", inst)
	}
	if d := phases[3]; d.Count != 1 || d.Max != 3 || d.Slowest != "a" {
		t.Fatalf("install-to-uninstalled %+v: want spec a only (b and c never removed their CSV), 2 s + 1 s", d)
	}
	var out bytes.Buffer
	printTable(&out, phases)
	if !strings.Contains(out.String(), "install") || !strings.Contains(out.String(), "3 (1 failed)") || !strings.Contains(out.String(), "9s") {
		t.Fatalf("table:\n%s", out.String())
	}
	if err := write(filepath.Join(dir, "summary.json"), phases); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Generated time.Time
		Phases    []Phase
	}
	data, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err := json.Unmarshal(data, &got); err != nil || len(got.Phases) != 4 {
		t.Fatalf("summary.json %s: %v", data, err)
	}
}

func TestNoBudgetIsSaidNotFailed(t *testing.T) {
	if _, err := read(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no phases recorded") {
		t.Fatalf("want an error saying nothing was recorded, got %v", err)
	}
}

func TestMedianOfAnEvenCount(t *testing.T) {
	es := []budget.Entry{{Seconds: 1}, {Seconds: 3}}
	if m := quantile(es, 0.5); m != 2 {
		t.Fatalf("median %v, want 2", m)
	}
}

func TestInstallToUninstalledSumsTheLifecycleNotTheQuietWindows(t *testing.T) {
	es := []budget.Entry{
		{Spec: "up", Phase: "install", Seconds: 1}, {Spec: "up", Phase: "install", Seconds: 1.5},
		{Spec: "up", Phase: "operands-reconciled", Seconds: 0.5}, {Spec: "up", Phase: "uninstall-requested", Seconds: 0.1},
		{Spec: "up", Phase: "operands-gone", Seconds: 0.4}, {Spec: "up", Phase: "csv-gone", Seconds: 0.5},
		{Spec: "up", Phase: "quiet", Seconds: 2}, {Spec: "up", Phase: "leftovers-check", Seconds: 3},
		{Spec: "up", Phase: "case", Seconds: 9},
	}
	d := derive(es)
	if len(d) != 1 || d[0].Phase != installToUninstalled || d[0].Seconds != 4 {
		t.Fatalf("derived %+v: want one entry of 4 s (both installs, reconcile, uninstall, gone, CSV gone)", d)
	}
}

func TestAnExampleBudgetNamesItsSpecsAfterTheExample(t *testing.T) {
	root := t.TempDir()
	main, example := filepath.Join(root, "budget"), filepath.Join(root, "examples", "operator-repo", "budget")
	for _, d := range []string{main, example} {
		b, _ := json.Marshal(budget.Entry{Spec: "Operand cleanup of widget-operator x", Phase: "install", Seconds: 1})
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "7.jsonl"), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := read(main, example, filepath.Join(root, "examples", "none", "budget"))
	if err != nil {
		t.Fatal(err)
	}
	var specs []string
	for _, e := range entries {
		specs = append(specs, e.Spec)
	}
	if want := "Operand cleanup of widget-operator x|operator-repo: Operand cleanup of widget-operator x"; strings.Join(specs, "|") != want {
		t.Fatalf("specs %q, want %q: the suite's as recorded, the example's named after it", specs, want)
	}
}
