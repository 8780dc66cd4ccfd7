package suite

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	"k8s.io/apimachinery/pkg/runtime"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/envtest"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/existing"
	"github.com/cleanup-e2e/cleanup-e2e/framework/components"
	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
	"github.com/cleanup-e2e/cleanup-e2e/framework/stack"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/operandcleanup"
)

// ProviderInput says which cluster a suite needs and what must run on it.
type ProviderInput struct {
	// Name identifies the provider in logs (the Ginkgo process number is appended).
	Name string
	// Registry holds the images the envtest provider runs in-process (calling their Main, see
	// docs/CONTRACTS.md). With Stack.OperandCleanup the controller's image is added when missing. A
	// cluster with nodes (kind, existing) runs images itself: they must be loaded or pullable there.
	Registry *localruntime.Registry
	// Stack is what must run on the cluster before the specs (stack.ForOperandCleanup(),
	// stack.ForPayloads(), plus the suite's CRDs and footprint). It is ensured the same way on every
	// provider; on envtest, Stack.OLM also starts olm-operator.
	Stack stack.Components
	// Schemes add the suite's own types to the specs' client (the built-in, CRD and OLM types are
	// always there).
	Schemes []func(*runtime.Scheme) error
}

// NewProvider starts the provider named by $CLEANUP_E2E_PROVIDER (envtest when unset). It only
// creates or connects to the cluster: what runs on it is the stack's (see SynchronizedProvider).
func NewProvider(ctx context.Context, in ProviderInput) (cluster.Provider, error) {
	routeLibraryLogs()
	kind := envvar.Provider.Get()
	if kind == "" {
		kind = "envtest"
	}
	switch kind {
	case "envtest":
		opts := []envtest.Option{envtest.WithName(in.Name), envtest.WithLogger(Logger().WithName(in.Name)),
			envtest.WithRegistry(registryFor(in))}
		if !in.Stack.OLM {
			opts = append(opts, envtest.WithoutOLM())
		}
		return envtest.New(ctx, opts...)
	case "existing":
		name := fmt.Sprintf("%s-%d", in.Name, ginkgo.GinkgoParallelProcess())
		return existing.New(ctx, existing.WithName(name), existing.WithLogger(Logger().WithName(name)),
			existing.WithContext(envvar.KubeContext.Get()))
	case "kind":
		return newKind(ctx)
	default:
		return nil, fmt.Errorf("%s=%q: unknown provider (known: envtest, existing, kind)", envvar.Provider.Name, kind)
	}
}

// registryFor is the suite's registry plus, when the stack has the operand-cleanup controller, its
// image (so that on envtest the Deployment the stack installs runs).
func registryFor(in ProviderInput) *localruntime.Registry {
	r := in.Registry
	if r == nil {
		r = localruntime.NewRegistry()
	}
	if _, ok := r.Lookup(components.OperandCleanupImage); in.Stack.OperandCleanup && !ok {
		r.Register(components.OperandCleanupImage, operandcleanup.Main)
	}
	return r
}

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
