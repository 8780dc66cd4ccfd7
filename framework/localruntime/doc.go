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
// What a child process gets, against what a kubelet gives a container (upstream: kubelet's
// kuberuntime_container.go, volumemanager, token manager; the ServiceAccount admission plugin):
//
//	| what                | kubelet                               | here                                          | why                                      |
//	|---------------------|---------------------------------------|-----------------------------------------------|------------------------------------------|
//	| argv                | image entrypoint/command + args       | command[0] replaced by the binary             | no image file system                     |
//	| bind addresses      | own network namespace                 | ":N"-style args moved to free loopback ports  | children share the machine's network     |
//	| ports not in args   | own network namespace                 | as the binary opens them (may collide)        | nothing to rewrite                       |
//	| env                 | container env + service links         | container env + KUBERNETES_SERVICE_*, HOSTNAME, PATH, HOME; no service links | what in-cluster config reads |
//	| identity            | projected bound token, rotated        | TokenRequest token, 24 h, not rotated, unbound | no Pod object; suites are shorter       |
//	| volumes             | all types                             | secret, configMap, emptyDir, downwardAPI (fieldRef), projected; others fail naming the volume | no node storage |
//	| mount paths         | container root file system            | bind mounts in a private mount namespace (util-linux unshare); missing mount points created empty on the host | no image file system |
//	| file system         | the image's                           | the machine's                                 | no image                                 |
//	| readiness           | probe every periodSeconds             | HTTP(S) probe every 100 ms until it answers   | suites should not wait 10 s              |
//	| stop                | SIGTERM, terminationGracePeriodSeconds | SIGTERM, 10 s, SIGKILL (process group)       | a hanging operator must not stall a suite |
package localruntime
