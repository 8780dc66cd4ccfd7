// Command missingfile exits at start as a kubebuilder go/v4 operator does when its bundle passes
// --metrics-cert-path without mounting the certificate: it logs the error, its development-mode logger
// adds a stack trace, and it exits 1. The mutation checks of framework/specs run it as widget-operator.
package main

import (
	"crypto/tls"
	"os"
	"path/filepath"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

const metricsCertPath = "/tmp/k8s-metrics-server/metrics-certs"

func main() {
	ctrllog.SetLogger(zap.New(zap.UseDevMode(true)))
	setupLog := ctrllog.Log.WithName("setup")
	setupLog.Info("Initializing metrics certificate watcher using provided certificates", "metrics-cert-path", metricsCertPath)
	if _, err := tls.LoadX509KeyPair(filepath.Join(metricsCertPath, "tls.crt"), filepath.Join(metricsCertPath, "tls.key")); err != nil {
		setupLog.Error(err, "to initialize metrics certificate watcher")
		os.Exit(1)
	}
	setupLog.Info("the certificate exists on this machine: this variant exits only where it is missing")
	os.Exit(1)
}
