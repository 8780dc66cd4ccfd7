package operandcleanup

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/operator-framework/api/crds"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	operandcleanupconfig "github.com/cleanup-e2e/cleanup-e2e/config/operand-cleanup"
	"github.com/cleanup-e2e/cleanup-e2e/framework/toolchain"
)

// Test API group and CRDs. Widget: owned, namespaced. Gadget: required. ClusterThing: owned, cluster
// scoped. Sprocket: owned, namespaced (used by the global-operator spec only). Nothing: owned, never
// installed.
const (
	testGroup   = "test.cleanup.io"
	testVersion = "v1"
	// testFinalizer stands for the operator's own finalizer on its CRs.
	testFinalizer = "test.cleanup.io/operator"
)

type testKind struct {
	Plural, Kind string
	Namespaced   bool
}

var (
	widgetKind   = testKind{"widgets", "Widget", true}
	gadgetKind   = testKind{"gadgets", "Gadget", true}
	clusterKind  = testKind{"clusterthings", "ClusterThing", false}
	sprocketKind = testKind{"sprockets", "Sprocket", true}
	nothingKind  = testKind{"nothings", "Nothing", true}
)

func (k testKind) crdName() string { return k.Plural + "." + testGroup }

func (k testKind) crd() *apiextensionsv1.CustomResourceDefinition {
	scope := apiextensionsv1.ClusterScoped
	if k.Namespaced {
		scope = apiextensionsv1.NamespaceScoped
	}
	preserve := true
	c := &apiextensionsv1.CustomResourceDefinition{}
	c.Name = k.crdName()
	c.Spec = apiextensionsv1.CustomResourceDefinitionSpec{
		Group: testGroup, Scope: scope,
		Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: k.Plural, Kind: k.Kind, ListKind: k.Kind + "List", Singular: lower(k.Kind)},
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
			Name: testVersion, Served: true, Storage: true,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", XPreserveUnknownFields: &preserve,
			}},
		}},
	}
	return c
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// testEnv is a kube-apiserver + etcd with OLM's CRDs and the test CRDs installed.
type testEnv struct {
	env   *envtest.Environment
	cfg   *rest.Config
	admin client.Client
}

func startTestEnv() (*testEnv, error) {
	e := &envtest.Environment{
		CRDs:                     []*apiextensionsv1.CustomResourceDefinition{crds.ClusterServiceVersion(), crds.OperatorGroup(), widgetKind.crd(), gadgetKind.crd(), clusterKind.crd(), sprocketKind.crd(), lifecycleKind.crd()},
		ControlPlaneStartTimeout: 2 * time.Minute,
		Scheme:                   NewScheme(),
	}
	cfg, err := toolchain.StartEnvtest(e)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = -1, 0
	admin, err := client.New(cfg, client.Options{Scheme: NewScheme()})
	if err != nil {
		_ = e.Stop()
		return nil, err
	}
	return &testEnv{env: e, cfg: cfg, admin: admin}, nil
}

func (t *testEnv) stop() error { return t.env.Stop() }

// installControllerRBAC applies the shipped manifests except the Deployment, so the controller can run
// in-process as its ServiceAccount with exactly the permissions of 20-clusterrole.yaml, and except the
// admission policies: the specs also play what the unarmed guard refuses where it is in force (a CSV
// deleted before the controller armed it), and the spec of the guard applies it itself.
func (t *testEnv) installControllerRBAC(ctx context.Context) error {
	objs, err := operandcleanupconfig.Objects()
	if err != nil {
		return err
	}
	for _, o := range objs {
		if o.GetKind() == "Deployment" || o.GroupVersionKind().Group == "admissionregistration.k8s.io" {
			continue
		}
		if err := t.admin.Create(ctx, o); err != nil {
			return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

// asServiceAccount returns the admin config impersonating a ServiceAccount.
func (t *testEnv) asServiceAccount(ns, name string) *rest.Config {
	c := rest.CopyConfig(t.cfg)
	c.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":" + name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	return c
}

// runningController is one in-process run of Main.
type runningController struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

func startController(cfg *rest.Config, log logr.Logger, args ...string) *runningController {
	ctx, cancel := context.WithCancel(logr.NewContext(context.Background(), log))
	rc := &runningController{cancel: cancel, done: make(chan error, 1)}
	base := []string{"--metrics-bind-address=0", "--health-probe-bind-address=0"}
	go func() { rc.done <- Main(ctx, cfg, append(base, args...), func(string) string { return "" }) }()
	return rc
}

// stop cancels the controller and waits for Main to return.
func (rc *runningController) stop() error {
	rc.once.Do(func() {
		rc.cancel()
		select {
		case rc.err = <-rc.done:
		case <-time.After(time.Minute):
			rc.err = fmt.Errorf("controller did not stop within a minute")
		}
	})
	return rc.err
}

// newOperand returns an unstructured CR of kind k.
func newOperand(k testKind, ns, name string, finalizers ...string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(testGroup + "/" + testVersion)
	u.SetKind(k.Kind)
	u.SetName(name)
	if k.Namespaced {
		u.SetNamespace(ns)
	}
	if len(finalizers) > 0 {
		u.SetFinalizers(finalizers)
	}
	u.Object["spec"] = map[string]interface{}{"size": int64(1)}
	return u
}
