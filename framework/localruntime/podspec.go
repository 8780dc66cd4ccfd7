package localruntime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// workload is what the runtime runs for one Deployment: resolved once per pod-template change.
type workload struct {
	image          string
	args           []string
	env            map[string]string
	serviceAccount string
	// readiness is the container's HTTP readiness probe (nil: ready once started).
	readiness *readiness
	// hash identifies the pod template the workload was made from; a change restarts the operator.
	hash string
	// What a binary run as a child process needs besides (child.go): the Deployment (its pod
	// template's volumes, downward API) and the container (command, ports, mounts).
	dep       *appsv1.Deployment
	container corev1.Container
}

// pickContainer returns the first container with a registered image, else the first container.
func pickContainer(spec *corev1.PodSpec, reg *Registry) (corev1.Container, bool) {
	for _, c := range spec.Containers {
		if reg.Registered(c.Image) {
			return c, true
		}
	}
	if len(spec.Containers) == 0 {
		return corev1.Container{}, false
	}
	return spec.Containers[0], false
}

// resolveWorkload turns the Deployment's pod template into args and env, reading ConfigMap and Secret
// references with the admin client as the kubelet would.
func resolveWorkload(ctx context.Context, c client.Reader, dep *appsv1.Deployment, ctr corev1.Container) (*workload, error) {
	tmpl := dep.Spec.Template
	sa := tmpl.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	var args []string
	if len(ctr.Command) > 1 {
		args = append(args, ctr.Command[1:]...)
	}
	args = append(args, ctr.Args...)
	env := map[string]string{}
	for _, from := range ctr.EnvFrom {
		if err := resolveEnvFrom(ctx, c, dep.Namespace, from, env); err != nil {
			return nil, err
		}
	}
	for _, e := range ctr.Env {
		v, err := resolveEnvVar(ctx, c, dep, sa, e)
		if err != nil {
			return nil, fmt.Errorf("env %s of container %s: %w", e.Name, ctr.Name, err)
		}
		env[e.Name] = v
	}
	args = expandArgs(args, env)
	w := &workload{image: ctr.Image, args: args, env: env, serviceAccount: sa, readiness: readinessOf(ctr),
		dep: dep.DeepCopy(), container: ctr}
	// Everything the operator is started from: a change to any of it restarts the operator.
	data, _ := json.Marshal(struct {
		Image, SA string
		Args      []string
		Env       map[string]string
		Container corev1.Container
		Volumes   []corev1.Volume
		Automount *bool
	}{w.image, sa, args, env, ctr, tmpl.Spec.Volumes, tmpl.Spec.AutomountServiceAccountToken})
	sum := sha256.Sum256(data)
	w.hash = hex.EncodeToString(sum[:8])
	return w, nil
}

var fieldPathAnnotation = regexp.MustCompile(`^metadata\.(annotations|labels)\['([^']+)'\]$`)

func resolveEnvVar(ctx context.Context, c client.Reader, dep *appsv1.Deployment, sa string, e corev1.EnvVar) (string, error) {
	if e.ValueFrom == nil {
		return e.Value, nil
	}
	switch src := e.ValueFrom; {
	case src.FieldRef != nil:
		return resolveFieldRef(dep, sa, src.FieldRef.FieldPath)
	case src.ConfigMapKeyRef != nil:
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: dep.Namespace, Name: src.ConfigMapKeyRef.Name}, cm); err != nil {
			return "", optional(src.ConfigMapKeyRef.Optional, err)
		}
		return cm.Data[src.ConfigMapKeyRef.Key], nil
	case src.SecretKeyRef != nil:
		s := &corev1.Secret{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: dep.Namespace, Name: src.SecretKeyRef.Name}, s); err != nil {
			return "", optional(src.SecretKeyRef.Optional, err)
		}
		return string(s.Data[src.SecretKeyRef.Key]), nil
	default:
		return "", fmt.Errorf("unsupported valueFrom (only fieldRef, configMapKeyRef, secretKeyRef)")
	}
}

func resolveFieldRef(dep *appsv1.Deployment, sa, path string) (string, error) {
	tmpl := dep.Spec.Template
	switch path {
	case "metadata.namespace":
		return dep.Namespace, nil
	case "metadata.name":
		return podName(dep), nil
	case "spec.serviceAccountName":
		return sa, nil
	case "spec.nodeName":
		return "local-runtime", nil
	case "status.podIP", "status.hostIP":
		return "127.0.0.1", nil
	}
	if m := fieldPathAnnotation.FindStringSubmatch(path); m != nil {
		if m[1] == "annotations" {
			return tmpl.Annotations[m[2]], nil
		}
		return tmpl.Labels[m[2]], nil
	}
	return "", fmt.Errorf("unsupported fieldRef %q", path)
}

// podName is the name the runtime gives a Deployment's one "pod" (downward API, HOSTNAME).
func podName(dep *appsv1.Deployment) string { return dep.Name + "-local" }

func resolveEnvFrom(ctx context.Context, c client.Reader, ns string, from corev1.EnvFromSource, env map[string]string) error {
	switch {
	case from.ConfigMapRef != nil:
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: from.ConfigMapRef.Name}, cm); err != nil {
			return optional(from.ConfigMapRef.Optional, err)
		}
		for k, v := range cm.Data {
			env[from.Prefix+k] = v
		}
	case from.SecretRef != nil:
		s := &corev1.Secret{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: from.SecretRef.Name}, s); err != nil {
			return optional(from.SecretRef.Optional, err)
		}
		for k, v := range s.Data {
			env[from.Prefix+k] = string(v)
		}
	}
	return nil
}

func optional(opt *bool, err error) error {
	if opt != nil && *opt && client.IgnoreNotFound(err) == nil {
		return nil
	}
	return err
}

var argRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expandArgs substitutes $(VAR) references in args, as the kubelet does.
func expandArgs(args []string, env map[string]string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = argRef.ReplaceAllStringFunc(a, func(m string) string {
			if v, ok := env[m[2:len(m)-1]]; ok {
				return v
			}
			return m
		})
	}
	return out
}
