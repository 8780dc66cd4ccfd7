// Command cluster manages the kind tier's shared cluster for scripts/e2e.sh with the suites' own code
// (internal/kindsetup), so its set-up is timed on its own and the suites only reuse it:
//
//	go run ./scripts/kind/cluster up            create or reuse $CLEANUP_E2E_KIND_CLUSTER (default cleanup-e2e), load images, install OLM
//	go run ./scripts/kind/cluster logs DIR      kind's export logs (node journal, kubelet, containerd, pods)
//	go run ./scripts/kind/cluster down          delete the cluster
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr/funcr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/kind"
	"github.com/cleanup-e2e/cleanup-e2e/internal/kindsetup"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	log := funcr.New(func(prefix, args string) {
		fmt.Fprintf(os.Stderr, "[%s] %s %s\n", time.Now().Format("15:04:05"), prefix, args)
	}, funcr.Options{})
	ctrllog.SetLogger(log.WithName("controller-runtime"))
	name := kindsetup.ClusterName()
	if len(args) == 0 {
		args = []string{"up"}
	}
	switch args[0] {
	case "up":
		_, err := kindsetup.SetUp(ctx, log.WithName("kind"), true)
		return err
	case "logs":
		if len(args) != 2 {
			return fmt.Errorf("usage: logs DIR")
		}
		p, err := kind.Connect(ctx, kind.WithName(name), kind.WithLogger(log))
		if err != nil {
			return err
		}
		defer p.Stop(ctx)
		return p.CollectArtifacts(ctx, args[1])
	case "down":
		start := time.Now()
		if err := kind.DeleteCluster(kind.WithName(name), kind.WithLogger(log)); err != nil {
			return err
		}
		log.Info("deleted kind cluster", "name", name, "took", time.Since(start).Round(time.Millisecond).String())
		return nil
	default:
		return fmt.Errorf("unknown command %q (up, logs DIR, down)", args[0])
	}
}
