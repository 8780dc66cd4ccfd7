package suite

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
)

// Sharding splits a suite's specs across CI jobs: CLEANUP_E2E_SHARD=i/n (1 ≤ i ≤ n) labels every spec
// "shard-<k>-of-<n>", k chosen by a hash of the spec's full text, and the job runs its shard with
// --label-filter=shard-<i>-of-<n> (ShardLabelFilter). The assignment depends only on the text, so every
// job and every Ginkgo process of a job agrees, and the n jobs together run each spec exactly once.
// Ordered containers stay whole (the container is labelled, from its own text).

// Shard is one of Total shards; Index is 1-based.
type Shard struct{ Index, Total int }

// ParseShard reads "i/n".
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return Shard{}, fmt.Errorf("%s=%q: want i/n with 1 ≤ i ≤ n (e.g. 2/4)", envvar.Shard.Name, s)
	}
	return Shard{Index: i, Total: n}, nil
}

// Label is the Ginkgo label of the shard's specs.
func (s Shard) Label() string { return fmt.Sprintf("shard-%d-of-%d", s.Index, s.Total) }

// ShardOf is the 1-based shard of a spec's full text among total shards (FNV-1a).
func ShardOf(text string, total int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(text))
	return int(h.Sum32()%uint32(total)) + 1
}

// ShardLabelFilter is the --label-filter that selects $CLEANUP_E2E_SHARD's specs ("" when it is unset), to be
// combined with any other filter: "(<filter>) && <shard filter>".
func ShardLabelFilter() (string, error) {
	v := envvar.Shard.Get()
	if v == "" {
		return "", nil
	}
	s, err := ParseShard(v)
	if err != nil {
		return "", err
	}
	return s.Label(), nil
}

// The shard labels are added while the spec tree is built, to every suite importing this package.
func init() {
	v := envvar.Shard.Get()
	if v == "" {
		return
	}
	s, err := ParseShard(v)
	label := shardTransform(&shardStack{}, s.Total)
	ginkgo.AddTreeConstructionNodeArgsTransformer(func(nt types.NodeType, off ginkgo.Offset, text string, args []any) (string, []any, []error) {
		if err != nil {
			return text, args, []error{err}
		}
		return label(nt, off, text, args)
	})
}

// shardStack holds the texts of the containers being built (and whether one of them is Ordered).
type shardStack struct {
	texts   []string
	ordered int
}

// shardTransform labels specs with their shard. Container bodies are wrapped to track the full text
// (container texts joined by spaces, as Ginkgo's FullText) of the specs created inside them.
func shardTransform(st *shardStack, total int) ginkgo.NodeArgsTransformer {
	return func(nt types.NodeType, _ ginkgo.Offset, text string, args []any) (string, []any, []error) {
		full := strings.Join(append(append([]string{}, st.texts...), text), " ")
		label := func() any { return ginkgo.Label(Shard{Index: ShardOf(full, total), Total: total}.Label()) }
		switch {
		case nt.Is(types.NodeTypeContainer):
			ordered := false
			for _, a := range args {
				if a == any(ginkgo.Ordered) {
					ordered = true
				}
			}
			if ordered && st.ordered == 0 {
				args = append(args, label()) // the whole Ordered container runs in one shard
			}
			for i, a := range args {
				if body, ok := a.(func()); ok {
					args[i] = func() {
						st.texts = append(st.texts, text)
						if ordered {
							st.ordered++
						}
						defer func() {
							st.texts = st.texts[:len(st.texts)-1]
							if ordered {
								st.ordered--
							}
						}()
						body()
					}
				}
			}
		case nt.Is(types.NodeTypeIt) && st.ordered == 0:
			args = append(args, label())
		}
		return text, args, nil
	}
}

// routeLibraryLogs sends controller-runtime's global logger (libraries log through it) to GinkgoWriter
// instead of letting it complain, with a stack trace, that it was never set. Every process that builds
// a client calls it, including those that connect to process 1's cluster.
func routeLibraryLogs() {
	ctrllog.SetLogger(Logger().WithName("controller-runtime"))
}
