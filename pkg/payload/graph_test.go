package payload_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
)

func manifests(files ...string) []*payload.Manifest {
	var out []*payload.Manifest
	for _, f := range files {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetName(f)
		out = append(out, &payload.Manifest{Filename: f, Obj: u})
	}
	return out
}

func TestParseRunLevel(t *testing.T) {
	cases := []struct {
		file, level, component string
		ok                     bool
	}{
		{"0000_50_cluster-autoscaler-operator_07_deployment.yaml", "50", "cluster-autoscaler-operator", true},
		{"0000_00_cvo_x.yaml", "00", "cvo", true},
		{"0000_10_a_b_c.yaml", "10", "a", true},
		{"0000_10_a.yaml", "", "", false},
		{"0001_10_a_x.yaml", "", "", false},
		{"0000_xx_a_x.yaml", "", "", false},
		{"loose.yaml", "", "", false},
		{"0000_10_-a_x.yaml", "", "", false},
	}
	for _, tc := range cases {
		level, comp, ok := payload.ParseRunLevel(tc.file)
		if level != tc.level || comp != tc.component || ok != tc.ok {
			t.Errorf("%s: got (%q,%q,%v) want (%q,%q,%v)", tc.file, level, comp, ok, tc.level, tc.component, tc.ok)
		}
	}
}

func TestBuildGraph(t *testing.T) {
	cases := []struct {
		name  string
		files []string
		want  string
	}{
		{"serial within component, parallel across, levels as stages",
			[]string{"0000_10_a_00.yaml", "0000_10_a_01.yaml", "0000_10_b_00.yaml", "0000_20_a_00.yaml"},
			"10: [10_a: 0000_10_a_00.yaml[0], 0000_10_a_01.yaml[0]] [10_b: 0000_10_b_00.yaml[0]]\n20: [20_a: 0000_20_a_00.yaml[0]]"},
		{"non-pattern files are serial stages of their own",
			[]string{"0000_10_a_00.yaml", "0000_10_b_00.yaml", "extra-1.yaml", "extra-2.yaml"},
			"10: [10_a: 0000_10_a_00.yaml[0]] [10_b: 0000_10_b_00.yaml[0]]\n-: [extra-1.yaml: extra-1.yaml[0]]\n-: [extra-2.yaml: extra-2.yaml[0]]"},
		{"a non-pattern file splits a run level",
			[]string{"0000_10_a_00.yaml", "0000_10_ax.yaml", "0000_10_b_00.yaml"},
			"10: [10_a: 0000_10_a_00.yaml[0]]\n-: [0000_10_ax.yaml: 0000_10_ax.yaml[0]]\n10: [10_b: 0000_10_b_00.yaml[0]]"},
		{"same level written differently is another stage",
			[]string{"0000_05_a_00.yaml", "0000_5_b_00.yaml"},
			"05: [05_a: 0000_05_a_00.yaml[0]]\n5: [5_b: 0000_5_b_00.yaml[0]]"},
		{"empty", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := payload.BuildGraph(manifests(tc.files...)).String(); got != tc.want {
				t.Errorf("graph:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestGraphRunFailurePropagation(t *testing.T) {
	ms := manifests(
		"0000_10_a_00.yaml", "0000_10_a_01.yaml", // a_00 fails -> a_01 skipped
		"0000_10_b_00.yaml", "0000_10_b_01.yaml", // independent: run
		"0000_20_c_00.yaml", // later run level: skipped
		"zz.yaml",           // later stage: skipped
	)
	g := payload.BuildGraph(ms)
	var mu sync.Mutex
	var ran []string
	res := g.Run(context.Background(), 4, func(_ context.Context, m *payload.Manifest) error {
		mu.Lock()
		ran = append(ran, m.Filename)
		mu.Unlock()
		if m.Filename == "0000_10_a_00.yaml" {
			return errors.New("boom")
		}
		return nil
	})
	sort.Strings(ran)
	if got := strings.Join(ran, ","); got != "0000_10_a_00.yaml,0000_10_b_00.yaml,0000_10_b_01.yaml" {
		t.Errorf("ran %s", got)
	}
	check := func(file string, ran bool, errSub string) {
		t.Helper()
		for m, r := range res {
			if m.Filename != file {
				continue
			}
			if r.Ran != ran || (errSub == "" && r.Err != nil) || (errSub != "" && (r.Err == nil || !strings.Contains(r.Err.Error(), errSub))) {
				t.Errorf("%s: ran=%v err=%v, want ran=%v err~%q", file, r.Ran, r.Err, ran, errSub)
			}
			return
		}
		t.Errorf("%s: no result", file)
	}
	check("0000_10_a_00.yaml", true, "boom")
	check("0000_10_a_01.yaml", false, "0000_10_a_00.yaml[0] failed")
	check("0000_10_b_00.yaml", true, "")
	check("0000_10_b_01.yaml", true, "")
	check("0000_20_c_00.yaml", false, "run level 10 did not complete")
	check("zz.yaml", false, "run level 10 did not complete")
}

func TestGraphRunBoundedParallelismAndBarriers(t *testing.T) {
	var files []string
	for i := 0; i < 6; i++ {
		files = append(files, fmt.Sprintf("0000_10_c%d_00.yaml", i))
	}
	files = append(files, "0000_20_z_00.yaml")
	g := payload.BuildGraph(manifests(files...))
	var mu sync.Mutex
	cur, peak, level10Done := 0, 0, 0
	violated := false
	g.Run(context.Background(), 2, func(_ context.Context, m *payload.Manifest) error {
		mu.Lock()
		cur++
		if cur > peak {
			peak = cur
		}
		if m.Filename == "0000_20_z_00.yaml" && level10Done != 6 {
			violated = true
		}
		mu.Unlock()
		time.Sleep(20 * time.Millisecond) // make overlap observable
		mu.Lock()
		cur--
		if strings.HasPrefix(m.Filename, "0000_10_") {
			level10Done++
		}
		mu.Unlock()
		return nil
	})
	if peak != 2 {
		t.Errorf("peak parallelism %d, want 2", peak)
	}
	if violated {
		t.Error("run level 20 started before run level 10 finished")
	}
}

func TestGraphRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	g := payload.BuildGraph(manifests("0000_10_a_00.yaml", "0000_20_b_00.yaml"))
	res := g.Run(ctx, 1, func(context.Context, *payload.Manifest) error { cancel(); return nil })
	for m, r := range res {
		if m.Filename == "0000_20_b_00.yaml" && r.Ran {
			t.Error("ran after cancel")
		}
	}
}
