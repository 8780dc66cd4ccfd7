package suite

import (
	"fmt"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

func TestParseShard(t *testing.T) {
	for in, want := range map[string]Shard{"1/1": {1, 1}, "2/4": {2, 4}, " 4/4 ": {4, 4}} {
		got, err := ParseShard(in)
		if err != nil || got != want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0/2", "3/2", "1/0", "a/b", "2", "1/2/3"} {
		if _, err := ParseShard(in); err == nil {
			t.Errorf("ParseShard(%q) accepted", in)
		}
	}
	if l := (Shard{2, 4}).Label(); l != "shard-2-of-4" {
		t.Errorf("label %q", l)
	}
}

// Every spec lands in exactly one shard, always the same one, and shards are roughly even.
func TestShardOfIsDeterministicAndBalanced(t *testing.T) {
	const specs, total = 2000, 4
	counts := make([]int, total+1)
	for i := range specs {
		text := fmt.Sprintf("Operand cleanup of op-%d removes the operands [OwnNamespace]", i)
		k := ShardOf(text, total)
		if k < 1 || k > total {
			t.Fatalf("ShardOf = %d, out of 1..%d", k, total)
		}
		if again := ShardOf(text, total); again != k {
			t.Fatalf("ShardOf not deterministic: %d then %d", k, again)
		}
		counts[k]++
	}
	for k := 1; k <= total; k++ {
		if counts[k] < specs/total*8/10 || counts[k] > specs/total*12/10 {
			t.Errorf("shard %d has %d of %d specs: unbalanced %v", k, counts[k], specs, counts[1:])
		}
	}
	if ShardOf("anything", 1) != 1 {
		t.Error("one shard must hold everything")
	}
}

// The tree transformer labels each It with the shard of its full text (containers included), and an
// Ordered container as a whole.
func TestShardTransformLabels(t *testing.T) {
	const total = 3
	tr := shardTransform(&shardStack{}, total)
	labelsOf := func(args []any) []string {
		var out []string
		for _, a := range args {
			if l, ok := a.(ginkgo.Labels); ok {
				out = append(out, l...)
			}
		}
		return out
	}
	want := func(full string) string { return Shard{Index: ShardOf(full, total), Total: total}.Label() }

	var got = map[string][]string{}
	it := func(text string) {
		_, args, errs := tr(types.NodeTypeIt, 0, text, []any{func() {}})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		got[text] = labelsOf(args)
	}
	container := func(text string, ordered bool, body func()) {
		args := []any{body}
		if ordered {
			args = append(args, ginkgo.Ordered)
		}
		_, args, errs := tr(types.NodeTypeContainer, 0, text, args)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		got["container "+text] = labelsOf(args)
		for _, a := range args {
			if f, ok := a.(func()); ok {
				f() // Ginkgo runs container bodies while building the tree
			}
		}
	}
	container("Operand cleanup of widget-operator", false, func() {
		it("keeps every operand")
		container("when enabled", false, func() { it("removes them") })
		container("in order", true, func() { it("first"); it("second") })
	})
	it("top level")

	check := func(key string, wantLabels ...string) {
		t.Helper()
		if fmt.Sprint(got[key]) != fmt.Sprint(wantLabels) {
			t.Errorf("%s: labels %v, want %v", key, got[key], wantLabels)
		}
	}
	check("keeps every operand", want("Operand cleanup of widget-operator keeps every operand"))
	check("removes them", want("Operand cleanup of widget-operator when enabled removes them"))
	check("container in order", want("Operand cleanup of widget-operator in order"))
	check("first")
	check("second")
	check("top level", want("top level"))
	check("container Operand cleanup of widget-operator")
}
