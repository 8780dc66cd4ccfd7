// Package localruntime stands in for the kubelet on clusters without nodes (the envtest provider).
//
// When a Deployment appears whose container image is registered, the runtime runs that operator and
// writes the Deployment status the way the deployment controller would: Available once the operator
// runs and, when the container has an HTTP readiness probe, answers it. It stops the operator when the
// Deployment is deleted, scaled to zero or rolled to another image; an operator that exits is
// restarted with back-off, like a crash-looping container, and the Deployment's Available condition
// says "CrashLoopBackOff: operator exited N time(s), last error: ...". Unregistered images stay
// unavailable with one log line saying why.
//
// An image runs one of two ways:
//
//   - In-process (Registry.Register, an Entrypoint; the fast mode, docs/CONTRACTS.md): the operator's
//     Main gets the pod template's args and env through getenv and a rest.Config impersonating the
//     Deployment's ServiceAccount; its user agent names the image and Deployment.
//   - Its own binary, unchanged, as a child process (Registry.RegisterBinary; child.go): for an
//     operator whose main is a scaffold's (ctrl.GetConfigOrDie, os.Getenv, flags, leader election).
//
// What a child process gets, against what a kubelet gives a container (upstream column: files of
// k8s.io/kubernetes v1.37.1, where the kubelet or the ServiceAccount admission plugin does it):
//
//	| what              | kubelet                                                              | here                                                                                             | why                                                        | upstream (k8s v1.37.1; kubelet/ is pkg/kubelet/)                                     |
//	|-------------------|----------------------------------------------------------------------|--------------------------------------------------------------------------------------------------|------------------------------------------------------------|--------------------------------------------------------------------------------------|
//	| argv              | command or ENTRYPOINT, + args or CMD; $(VAR) expanded                | command[0] replaced by the binary; $(VAR) expanded                                               | no image file system                                       | kubelet/container/helpers.go ExpandContainerCommandAndArgs                           |
//	| bind addresses    | own network namespace                                                | ":N"-style args moved to free loopback ports                                                     | children share the machine's network                       | kubelet/kuberuntime/util/util.go NetworkNamespaceForPod                              |
//	| ports not in args | own network namespace                                                | as the binary opens them (may collide)                                                           | nothing to rewrite                                         | (same)                                                                               |
//	| env               | env(From), KUBERNETES_SERVICE_*, service links; env wins             | env(From), then KUBERNETES_SERVICE_* and KUBERNETES_PORT over it, HOSTNAME, PATH, HOME; no links | in-cluster config must reach this API server, the only one | kubelet/kubelet_pods.go makeEnvironmentVariables                                     |
//	| identity          | projected Pod-bound token, 3607 s, renewed at 80% or 24 h            | TokenRequest token, 24 h, not bound, not rotated                                                 | no Pod object; suites are shorter                          | plugin/pkg/admission/serviceaccount TokenVolumeSource; kubelet/token requiresRefresh |
//	| volumes           | all types; contents kept current                                     | secret, configMap, emptyDir, downwardAPI (fieldRef), projected; written at start; others fail    | no node storage                                            | kubelet/volumemanager WaitForAttachAndMount                                          |
//	| mount paths       | bind mounts in the container's root file system                      | bind mounts in a private mount namespace (unshare); missing mount points made on the host        | no image file system                                       | kubelet/kubelet_pods.go makeMounts                                                   |
//	| file system       | the image's                                                          | the machine's                                                                                    | no image                                                   | kubelet/images EnsureImageExists                                                     |
//	| readiness         | at start, then every periodSeconds (10 s), for its life              | HTTP(S) probe every 100 ms until it first answers                                                | suites should not wait 10 s                                | kubelet/prober/worker.go run; pkg/apis/core/v1 SetDefaults_Probe                     |
//	| restart back-off  | 10 s, doubling to 300 s (CrashLoopBackOff)                           | 0.5 s, doubling to 20 s                                                                          | suites should not wait minutes                             | kubelet/kubelet.go backOffPeriod; kubelet/apis/config/v1beta1 MaxContainerBackOff    |
//	| stop              | preStop, SIGTERM, SIGKILL after terminationGracePeriodSeconds (30 s) | SIGTERM, 10 s, SIGKILL (process group)                                                           | a hanging operator must not stall a suite                  | kubelet/kuberuntime/kuberuntime_container.go killContainer                           |
package localruntime
