package cluster

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Environment is what a spec needs of the cluster it runs on: the provider (REST config, artifacts,
// optional capabilities such as OLMStopper) and an admin client whose scheme knows the types the
// spec reads. Spec libraries take a func() Environment, because a Ginkgo suite builds its spec tree
// before BeforeSuite has a cluster to hand out.
type Environment struct {
	Provider Provider
	Client   client.Client
	// APIs coordinates the specs that use the cluster at once — of a run's Ginkgo processes, and of
	// other runs on a shared cluster — by the APIs they use (framework/testenv sets it on every
	// provider; nil only in an Environment built by hand).
	APIs APILocker
}

// APILocker holds APIs of a shared cluster for one spec, each named kind.group in lower case (e.g.
// "memcached.cache.example.com"). done releases them; why names the spec in the log of one that waits.
type APILocker interface {
	LockAPIs(ctx context.Context, holds APIHolds, why string) (done func(), err error)
}

// APIHolds are the APIs one spec holds, in one LockAPIs call (so that two specs never wait for each
// other). Exclusive: those whose objects the spec's cleanup deletes in every namespace, or whose CRDs
// it deletes — the kinds an AllNamespaces install owns (OLM also lets only one operator provide an API
// to namespaces that overlap), the CRDs of an OLM v1 uninstall. Shared: those it otherwise uses — an
// operator it installs provides or requires them, or it makes objects of them. An API in both lists is
// held exclusively.
type APIHolds struct {
	Exclusive, Shared []string
}

// LabelAPIScoped marks a Ginkgo spec with an AllNamespaces install, whose Installation holds the
// operator's APIs exclusively (specs.ModeDecorators): it runs beside the specs that use other APIs, of
// its run and of other runs on a shared cluster. Were it also Serial, it would still not take a shared
// cluster alone (framework/suite).
const LabelAPIScoped = "api-scoped"
