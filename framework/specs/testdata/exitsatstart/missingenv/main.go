// Command missingenv exits at start as an operator does whose main requires an env var its Deployment
// does not set: it logs the error, its development-mode logger adds a stack trace, and it exits 1.
// The mutation checks of framework/specs run it as widget-operator.
package main

import (
	"errors"
	"os"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

func main() {
	ctrllog.SetLogger(zap.New(zap.UseDevMode(true)))
	setupLog := ctrllog.Log.WithName("setup")
	setupLog.Info("starting manager")
	if _, ok := os.LookupEnv("WIDGET_IMAGE"); !ok {
		setupLog.Error(errors.New("WIDGET_IMAGE is not set: the image of the widgets' workload"), "unable to start manager")
		os.Exit(1)
	}
	os.Exit(1)
}
