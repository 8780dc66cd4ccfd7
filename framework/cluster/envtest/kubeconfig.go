package envtest

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/cleanup-e2e/cleanup-e2e/framework/toolchain"
)

// kubeconfigFor is a kubeconfig for cfg (server, CA, token).
func kubeconfigFor(cfg *rest.Config) ([]byte, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[toolchain.AdminUser] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: toolchain.AdminUser}
	kc.CurrentContext = "envtest"
	return clientcmd.Write(*kc)
}
