// Command auditsum says who keeps an API server busy: it reads audit logs written with
// $CLEANUP_E2E_AUDIT_DIR (framework/cluster/envtest) and prints, per log, the requests per second and
// the busiest clients (user agent), then the busiest client, verb and resource triples.
//
//	CLEANUP_E2E_AUDIT_DIR=/tmp/audit go test ./e2e/cleanup/
//	go run ./scripts/auditsum [-top 20] /tmp/audit/*.log
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

func main() {
	top := flag.Int("top", 20, "how many client, verb and resource triples to print")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: auditsum [-top N] AUDIT_LOG...")
		os.Exit(2)
	}
	for _, path := range flag.Args() {
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "auditsum:", err)
			os.Exit(1)
		}
		s, err := summarize(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "auditsum: %s: %v\n", path, err)
			os.Exit(1)
		}
		fmt.Printf("%s: ", path)
		s.print(os.Stdout, *top)
	}
}

// summary counts a log's requests.
type summary struct {
	total       int
	first, last time.Time
	byAgent     map[string]int
	byRequest   map[request]int
}

// request is what a line of the table counts: a client, a verb and the resource it touched.
type request struct{ agent, verb, resource string }

func summarize(r io.Reader) (*summary, error) {
	s := &summary{byAgent: map[string]int{}, byRequest: map[request]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		var e auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("line %d is not an audit event: %w", line, err)
		}
		if e.Stage != auditv1.StageResponseComplete && e.Stage != auditv1.StagePanic {
			continue // one line per request
		}
		t := e.StageTimestamp.Time
		if s.total == 0 || t.Before(s.first) {
			s.first = t
		}
		if t.After(s.last) {
			s.last = t
		}
		s.total++
		agent := client(e.UserAgent)
		s.byAgent[agent]++
		s.byRequest[request{agent: agent, verb: e.Verb, resource: resource(e.ObjectRef, e.RequestURI)}]++
	}
	return s, sc.Err()
}

// client names a user agent by its program and, for kube-controller-manager, the controller
// ("kube-controller-manager/v1.37.1 (linux/amd64) kubernetes/abc/namespace-controller" is
// kube-controller-manager/namespace-controller).
func client(ua string) string {
	program := ua
	if i := strings.IndexAny(ua, "/ "); i >= 0 {
		program = ua[:i]
	}
	// client-go's default agent ends in kubernetes/<commit>; controllers add /<controller name>.
	if _, rest, ok := strings.Cut(ua, " kubernetes/"); ok {
		if _, name, ok := strings.Cut(rest, "/"); ok && name != "" {
			return program + "/" + name
		}
	}
	return program
}

// resource is the object's resource (and subresource), or the path of a non-resource request.
func resource(ref *auditv1.ObjectReference, uri string) string {
	if ref == nil || ref.Resource == "" {
		path, _, _ := strings.Cut(uri, "?")
		return path
	}
	if ref.Subresource != "" {
		return ref.Resource + "/" + ref.Subresource
	}
	return ref.Resource
}

func (s *summary) print(w io.Writer, top int) {
	span := s.last.Sub(s.first)
	rate := 0.0
	if span > 0 {
		rate = float64(s.total) / span.Seconds()
	}
	fmt.Fprintf(w, "%d requests in %s (%.0f/s)\n", s.total, span.Round(time.Second), rate)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  client\trequests\tshare")
	for _, a := range sorted(s.byAgent) {
		fmt.Fprintf(tw, "  %s\t%d\t%.0f %%\n", a.key, a.n, 100*float64(a.n)/float64(s.total))
	}
	_ = tw.Flush()
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  client\tverb resource\trequests")
	for i, r := range sorted(s.byRequest) {
		if i == top {
			break
		}
		fmt.Fprintf(tw, "  %s\t%s %s\t%d\n", r.key.agent, r.key.verb, r.key.resource, r.n)
	}
	_ = tw.Flush()
}

type counted[K comparable] struct {
	key K
	n   int
}

// sorted is m's entries, most first, ties in a stable order.
func sorted[K comparable](m map[K]int) []counted[K] {
	out := make([]counted[K], 0, len(m))
	for k, n := range m {
		out = append(out, counted[K]{k, n})
	}
	slices.SortFunc(out, func(a, b counted[K]) int {
		if c := cmp.Compare(b.n, a.n); c != 0 {
			return c
		}
		return strings.Compare(fmt.Sprint(a.key), fmt.Sprint(b.key))
	})
	return out
}
