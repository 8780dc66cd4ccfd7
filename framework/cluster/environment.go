package cluster

import "sigs.k8s.io/controller-runtime/pkg/client"

// Environment is what a spec needs of the cluster it runs on: the provider (REST config, artifacts,
// optional capabilities such as OLMStopper) and an admin client whose scheme knows the types the
// spec reads. Spec libraries take a func() Environment, because a Ginkgo suite builds its spec tree
// before BeforeSuite has a cluster to hand out.
type Environment struct {
	Provider Provider
	Client   client.Client
}
