package toolchain

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The clients of an envtest control plane authenticate with a bearer token rather than envtest's client
// certificate: the API server verifies a certificate's chain, an ECDSA signature, on every request —
// 8.6 % of its CPU in a profile of the e2e/cleanup suite (16,800 requests in 65 s) — against 1.2 % for a
// token. The identity is the same kind: a member of system:masters.

// AdminUser is the user the token authenticates as (audit logs show it).
const AdminUser = "cleanup-e2e-admin"

// adminToken writes a token file with a new random token for AdminUser and points e's API server at
// it. The API server reads the file once, as it starts (k8s.io/kubernetes pkg/kubeapiserver/authenticator,
// tokenfile.NewCSV), so remove is called once Start returned.
func adminToken(e *crenvtest.Environment) (token string, remove func(), err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", nil, err
	}
	token = hex.EncodeToString(b)
	f, err := os.CreateTemp("", "envtest-tokens-*.csv")
	if err != nil {
		return "", nil, err
	}
	remove = func() { _ = os.Remove(f.Name()) }
	// token,user,uid,"group1,group2" (kube-apiserver --token-auth-file)
	_, err = fmt.Fprintf(f, "%s,%s,%s,\"system:masters\"\n", token, AdminUser, AdminUser)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		remove()
		return "", nil, err
	}
	if e.ControlPlane.APIServer == nil {
		e.ControlPlane.APIServer = &crenvtest.APIServer{}
	}
	e.ControlPlane.APIServer.Configure().Set("token-auth-file", f.Name())
	return token, remove, nil
}

// withToken returns cfg authenticating with token instead of a client certificate.
func withToken(cfg *rest.Config, token string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.CertData, c.KeyData, c.CertFile, c.KeyFile = nil, nil, "", ""
	c.BearerToken = token
	return c
}
