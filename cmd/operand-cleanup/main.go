// Command operand-cleanup runs the operand-cleanup controller (see pkg/operandcleanup) in a cluster.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/operandcleanup"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = logr.NewContext(ctx, zap.New())
	// A missing configuration is reported by Main after flag parsing, so --help works anywhere.
	cfg, err := ctrl.GetConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "loading Kubernetes configuration:", err)
	}
	if err := operandcleanup.Main(ctx, cfg, os.Args[1:], os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, err)
		stop()
		os.Exit(1)
	}
}
