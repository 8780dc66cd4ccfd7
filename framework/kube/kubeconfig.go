package kube

import (
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeconfigFromREST renders a rest.Config as a kubeconfig (server, CA, token or client certificate),
// for child processes and users that read a file: the existing provider's in-cluster config, the envtest
// provider's admin config.
func KubeconfigFromREST(cfg *rest.Config) *clientcmdapi.Config {
	kc := clientcmdapi.NewConfig()
	cl := clientcmdapi.NewCluster()
	cl.Server, cl.CertificateAuthority, cl.CertificateAuthorityData = cfg.Host, cfg.CAFile, cfg.CAData
	cl.InsecureSkipTLSVerify = cfg.Insecure
	user := clientcmdapi.NewAuthInfo()
	user.Token, user.TokenFile = cfg.BearerToken, cfg.BearerTokenFile
	user.ClientCertificate, user.ClientCertificateData = cfg.CertFile, cfg.CertData
	user.ClientKey, user.ClientKeyData = cfg.KeyFile, cfg.KeyData
	kc.Clusters["cluster"], kc.AuthInfos["user"] = cl, user
	ctx := clientcmdapi.NewContext()
	ctx.Cluster, ctx.AuthInfo = "cluster", "user"
	kc.Contexts["cluster"], kc.CurrentContext = ctx, "cluster"
	return kc
}
