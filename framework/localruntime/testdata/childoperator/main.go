// Command childoperator is a main written as a kubebuilder scaffold writes one — flags, in-cluster
// config, leader election without a namespace, a health server — that reports what it was given in a
// ConfigMap, so the local runtime's test can check that it runs unchanged as a child process.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

func main() {
	var probeAddr, metricsAddr, failWith string
	var leaderElect bool
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "")
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", "")
	flag.BoolVar(&leaderElect, "leader-elect", false, "")
	flag.StringVar(&failWith, "fail-with", "", "exit at once with this error, like an operator missing a file")
	flag.Parse()
	// As kubebuilder's main sets it up: development mode, whose console encoder prints a stack trace
	// after each error, so the log of an operator that exits ends with a stack frame.
	ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	if failWith != "" {
		ctrl.Log.WithName("setup").Error(errors.New(failWith), "unable to start manager")
		os.Exit(1)
	}
	if err := run(probeAddr, metricsAddr, leaderElect); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(probeAddr, metricsAddr string, leaderElect bool) error {
	cfg := ctrl.GetConfigOrDie()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		HealthProbeBindAddress: probeAddr,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		LeaderElection:         leaderElect,
		LeaderElectionID:       "childoperator.example.test",
	})
	if err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error { return report(ctx, cs) })); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

// report writes what this process sees into the ConfigMap "seen-by-child" of its namespace.
func report(ctx context.Context, cs kubernetes.Interface) error {
	nsBytes, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return err
	}
	ns := string(nsBytes)
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	greeting, _ := os.ReadFile("/tmp/childoperator/config/greeting")
	secret, _ := os.ReadFile("/tmp/childoperator/token-file")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "seen-by-child"}, Data: map[string]string{
		"user":     review.Status.UserInfo.Username,
		"greeting": string(greeting),
		"secret":   string(secret),
		"fromEnv":  os.Getenv("FROM_ENV"),
		"leaked":   os.Getenv("CLEANUP_E2E_LEAK_CHECK"),
		"hostname": os.Getenv("HOSTNAME"),
		"args":     strings.Join(os.Args[1:], " "),
	}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	<-ctx.Done()
	return nil
}
