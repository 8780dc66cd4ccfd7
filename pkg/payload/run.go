package payload

import (
	"context"
	"fmt"
	"sync"
)

// TaskFunc runs one manifest.
type TaskFunc func(ctx context.Context, m *Manifest) error

// TaskRun is what happened to one manifest in Graph.Run.
type TaskRun struct {
	Manifest *Manifest
	// Ran is false for tasks skipped because something they depend on failed (or ctx ended).
	Ran bool
	// Err is the task's error (Ran) or why it was skipped (!Ran).
	Err error
}

// SkippedError says why a task did not run.
type SkippedError struct {
	// Cause names the failed task or the unfinished run level.
	Cause string
}

func (e *SkippedError) Error() string { return "skipped: " + e.Cause }

// Run executes the graph: stages in order, each stage's nodes in parallel (at most parallelism at a
// time, minimum 1), each node's tasks serially. A failed task skips the rest of its node; any failure
// in a stage skips every later stage (the run level is a barrier), while the other nodes of the same
// stage continue. The result has one entry per manifest, keyed by manifest.
func (g *Graph) Run(ctx context.Context, parallelism int, fn TaskFunc) map[*Manifest]TaskRun {
	if parallelism < 1 {
		parallelism = 1
	}
	results := map[*Manifest]TaskRun{}
	var mu sync.Mutex
	record := func(r TaskRun) {
		mu.Lock()
		results[r.Manifest] = r
		mu.Unlock()
	}
	skipNode := func(n *Node, from int, cause string) {
		for _, m := range n.Manifests[from:] {
			record(TaskRun{Manifest: m, Err: &SkippedError{Cause: cause}})
		}
	}

	blocked := "" // why later stages are skipped
	for _, stage := range g.Stages {
		if blocked == "" && ctx.Err() != nil {
			blocked = ctx.Err().Error()
		}
		if blocked != "" {
			for _, n := range stage.Nodes {
				skipNode(n, 0, blocked)
			}
			continue
		}
		sem := make(chan struct{}, parallelism)
		var wg sync.WaitGroup
		var failedMu sync.Mutex
		var failed []string
		for _, n := range stage.Nodes {
			wg.Add(1)
			go func(n *Node) {
				defer wg.Done()
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					skipNode(n, 0, ctx.Err().Error())
					failedMu.Lock()
					failed = append(failed, n.Name())
					failedMu.Unlock()
					return
				}
				defer func() { <-sem }()
				for i, m := range n.Manifests {
					if err := ctx.Err(); err != nil {
						skipNode(n, i, err.Error())
						failedMu.Lock()
						failed = append(failed, n.Name())
						failedMu.Unlock()
						return
					}
					err := fn(ctx, m)
					record(TaskRun{Manifest: m, Ran: true, Err: err})
					if err != nil {
						skipNode(n, i+1, fmt.Sprintf("%s failed", m.Ref()))
						failedMu.Lock()
						failed = append(failed, n.Name())
						failedMu.Unlock()
						return
					}
				}
			}(n)
		}
		wg.Wait()
		if len(failed) > 0 {
			if stage.RunLevel != "" {
				blocked = fmt.Sprintf("run level %s did not complete", stage.RunLevel)
			} else {
				blocked = fmt.Sprintf("%s did not complete", stage.Nodes[0].Name())
			}
		}
	}
	return results
}
