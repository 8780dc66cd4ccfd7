package envtest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The cluster's clients (the tests, kube-controller-manager, olm-operator, the local runtime, connected
// Ginkgo processes) authenticate with a bearer token from a static token file instead of envtest's client
// certificate. The API server verifies a client certificate's chain, an ECDSA signature, on every
// request: 8.6 % of its CPU in a CPU profile of the e2e/cleanup suite (16,800 requests in 65 s), against
// a map lookup for a token. The identity is the same: a member of system:masters.

// adminUser is the name the token authenticates as (audit logs show it).
const adminUser = "cleanup-e2e-admin"

// tokenFile writes a token file with a new random token for adminUser into dir and configures the API
// server to read it; it returns the token.
func tokenFile(api *crenvtest.APIServer, dir string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	token := hex.EncodeToString(b)
	path := filepath.Join(dir, "tokens.csv")
	// token,user,uid,"group1,group2" (kube-apiserver --token-auth-file)
	line := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n", token, adminUser, adminUser)
	if err := os.WriteFile(path, []byte(line), 0o600); err != nil {
		return "", err
	}
	api.Configure().Set("token-auth-file", path)
	return token, nil
}

// withToken returns cfg authenticating with token instead of a client certificate.
func withToken(cfg *rest.Config, token string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.CertData, c.KeyData, c.CertFile, c.KeyFile = nil, nil, "", ""
	c.BearerToken = token
	return c
}

// kubeconfigFor is a kubeconfig for cfg (server, CA, token).
func kubeconfigFor(cfg *rest.Config) ([]byte, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[adminUser] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: adminUser}
	kc.CurrentContext = "envtest"
	return clientcmd.Write(*kc)
}
