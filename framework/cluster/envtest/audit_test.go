package envtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/auditlog"
	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/process"
	"github.com/cleanup-e2e/cleanup-e2e/framework/toolchain"
)

// TestAuditLogSaysWhoMadeTheRequests: with CLEANUP_E2E_AUDIT_DIR set, the API server's audit log names
// the client, verb and object of every request, and outlives the provider. It also shows that the
// control plane started from the etcd seed.
func TestAuditLogSaysWhoMadeTheRequests(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(envvar.AuditDir.Name, dir)
	ctx, cancel := context.WithTimeout(context.Background(), intervals.Get(intervals.SuiteSetup)) // it starts a provider: a backstop above its start's own timeouts
	defer cancel()
	if envvar.EnvtestSeed.Get() != "0" {
		waitForSeed(ctx, t, nil)
	}
	p, err := New(ctx, WithName("audit"), WithoutOLM(), WithWorkRoot(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(p.RESTConfig())
	if cfg.BearerToken == "" || len(cfg.CertData) > 0 {
		t.Errorf("the provider's clients should authenticate with the token of toolchain.StartEnvtest, not a client certificate (token set: %t, certificate set: %t)", cfg.BearerToken != "", len(cfg.CertData) > 0)
	}
	apiServerReachesEtcdThroughItsSocket(t, p.WorkDir())
	cfg.UserAgent = "audit-probe/v0"
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "audited"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "audit.log"))
	if err != nil {
		t.Fatalf("no audit log where %s points: %v", envvar.AuditDir.Name, err)
	}
	// Started from the seed (seed.go), the API server finds RBAC's bootstrap roles and creates none.
	if envvar.EnvtestSeed.Get() != "0" {
		if n := createdClusterRoles(t, data); n > 0 {
			t.Errorf("the API server created %d ClusterRoles at its start: it did not start from the etcd seed (see the provider's log)", n)
		}
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, `"userAgent":"audit-probe/v0"`) && strings.Contains(line, `"verb":"create"`) &&
			strings.Contains(line, `"name":"audited"`) && strings.Contains(line, `"stage":"ResponseComplete"`) {
			if !strings.Contains(line, `"username":"`+toolchain.AdminUser+`"`) {
				t.Fatalf("the probe's request did not authenticate as %s (the token of toolchain.StartEnvtest): %s", toolchain.AdminUser, line)
			}
			return
		}
	}
	t.Fatalf("the audit log has no line for the probe's create of ConfigMap default/audited (%d bytes)", len(data))
}

// apiServerReachesEtcdThroughItsSocket: the provider's kube-apiserver names etcd's Unix socket as its
// etcd server (toolchain's etcdOverSocket), and the socket is there; that the API server answers shows
// etcd serves it.
func apiServerReachesEtcdThroughItsSocket(t *testing.T, workDir string) {
	t.Helper()
	for _, pid := range process.Referencing(workDir) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		args := strings.Split(string(cmdline), "\x00")
		if filepath.Base(args[0]) != "kube-apiserver" {
			continue
		}
		for _, a := range args {
			if sock, ok := strings.CutPrefix(a, "--etcd-servers=unix://"); ok {
				if info, err := os.Stat(sock); err != nil || info.Mode()&os.ModeSocket == 0 {
					t.Errorf("kube-apiserver's etcd server is the socket %s, which is not one (%v)", sock, err)
				}
				return
			}
		}
		t.Errorf("kube-apiserver does not reach etcd through a Unix socket: %q", args)
		return
	}
	t.Errorf("no kube-apiserver process references %s", workDir)
}

// createdClusterRoles counts the API server's own creates of ClusterRoles in an audit log.
func createdClusterRoles(t *testing.T, log []byte) int {
	return countRequests(t, log, func(e auditEvent) bool {
		return e.Verb == "create" && e.User.Username == "system:apiserver" && e.ObjectRef.Resource == "clusterroles"
	})
}

// auditEvent is what the tests read of an audit log's line.
type auditEvent struct {
	Verb      string `json:"verb"`
	Stage     string `json:"stage"`
	User      struct{ Username string }
	ObjectRef struct{ Resource string } `json:"objectRef"`
}

// countRequests counts the completed requests of an audit log that match.
func countRequests(t *testing.T, log []byte, match func(auditEvent) bool) int {
	n := 0
	for _, line := range bytes.Split(log, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var e auditEvent
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("audit log line %q: %v", line, err)
		}
		if e.Stage == "ResponseComplete" && match(e) {
			n++
		}
	}
	return n
}

// waitForSeed makes sure the seed for crds is there before a start that must use it: after a toolchain
// change, the first starts of a run make it, and a start meanwhile begins from an empty data dir
// instead of waiting (seedInto).
func waitForSeed(ctx context.Context, t *testing.T, crds []*apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	assets, err := toolchain.EnvtestAssets()
	must(t, err)
	dir, err := seedDir(assets, crds)
	must(t, err)
	for {
		err := ensureSeed(dir, t.TempDir(), assets, crds, testr.New(t))
		if !errors.Is(err, errSeedBusy) {
			must(t, err)
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the etcd seed %s: another process was still making it: %v", dir, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TestAuditLogNamesWhoLetACustomResourceGo: by default the API server records who made each write, and
// the last write of a custom resource that went is the one that removed its last finalizer, here an
// impersonated user's patch; a provider made by Connect reads the same log.
func TestAuditLogNamesWhoLetACustomResourceGo(t *testing.T) {
	t.Setenv(envvar.AuditDir.Name, "")
	ctx, cancel := context.WithTimeout(context.Background(), intervals.Get(intervals.SuiteSetup))
	defer cancel()
	crd := gizmoCRD()
	p, err := New(ctx, WithName("audit-default"), WithoutOLM(), WithWorkRoot(t.TempDir()), WithCRDs(crd))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Stop(context.Background()) }()
	c, err := client.New(p.RESTConfig(), client.Options{})
	must(t, err)
	g := &unstructured.Unstructured{}
	g.SetGroupVersionKind(schema.GroupVersionKind{Group: crd.Spec.Group, Version: "v1", Kind: crd.Spec.Names.Kind})
	g.SetNamespace("default")
	g.SetName("g1")
	g.SetFinalizers([]string{crd.Spec.Group + "/records"})
	must(t, c.Create(ctx, g))
	must(t, c.Delete(ctx, g))
	jane := rest.CopyConfig(p.RESTConfig())
	jane.Impersonate = rest.ImpersonationConfig{UserName: "jane", Groups: []string{"system:masters"}}
	jane.UserAgent = "strip-finalizers/v1"
	cj, err := client.New(jane, client.Options{})
	must(t, err)
	must(t, cj.Patch(ctx, g, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))))

	connected, err := Connect(p.KubeconfigPath(), WithName("audit-default"))
	must(t, err)
	obj := auditlog.Object{APIGroup: crd.Spec.Group, Resource: crd.Spec.Names.Plural, Namespace: "default", Name: "g1"}
	for name, prov := range map[string]*Provider{"the provider": p, "a connected provider": connected} {
		log, err := prov.AuditLog()
		must(t, err)
		w, ok := auditlog.LastWrite(log, obj)
		if !ok || w.User != "jane" || w.Impersonator != toolchain.AdminUser || w.Verb != "patch" || w.UserAgent != "strip-finalizers/v1" {
			t.Errorf("%s: last write of %s/g1 %+v (found: %t), want jane's patch, impersonated by %s, from strip-finalizers/v1 (%d bytes of audit log)",
				name, crd.Spec.Names.Plural, w, ok, toolchain.AdminUser, len(log))
		}
	}
}

// gizmoCRD is a namespaced CRD with an open schema.
func gizmoCRD() *apiextensionsv1.CustomResourceDefinition {
	open := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gizmos.audit.example"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "audit.example",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gizmos", Singular: "gizmo", Kind: "Gizmo", ListKind: "GizmoList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &open}}}},
		},
	}
}
