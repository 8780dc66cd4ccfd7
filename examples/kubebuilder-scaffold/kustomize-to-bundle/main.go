// Command kustomize-to-bundle turns what a kubebuilder go/v4 project deploys (`kustomize build
// config/default`) and its samples (`kustomize build config/samples`) into an OLM registry-v1 bundle,
// as `operator-sdk generate bundle` would: the Deployment, and the RBAC bound to its ServiceAccount,
// become the CSV's install strategy; webhook configurations become spec.webhookdefinitions (OLM makes
// their certificate and Service); CRDs become owned CRDs; the samples become alm-examples; every other
// object (a metrics Service, ClusterRoles nobody binds) ships beside the CSV. cert-manager's objects,
// the Namespace and the ServiceAccount are dropped: OLM provides what they stand for.
//
// It exists because operator-sdk cannot be built here; it reads only the scaffold's build output and
// writes only -out, so the scaffold stays as kubebuilder generated it.
//
//	go run ./examples/kubebuilder-scaffold/kustomize-to-bundle -package memcached-operator -version 0.0.1 \
//	  -image example.com/memcached-operator:v0.0.1 -default default.yaml -samples samples.yaml -out bundle
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
)

func main() {
	var in Input
	var defaultFile, samplesFile, out string
	flag.StringVar(&in.Package, "package", "", "the OLM package name; the CSV is <package>.v<version>")
	flag.StringVar(&in.Version, "version", "0.0.1", "the CSV's version")
	flag.StringVar(&in.Image, "image", "", "the operator's image, in place of the scaffold's controller:latest (what `make bundle IMG=...` sets)")
	flag.StringVar(&defaultFile, "default", "", "the output of `kustomize build config/default`")
	flag.StringVar(&samplesFile, "samples", "", "the output of `kustomize build config/samples` (optional)")
	flag.StringVar(&out, "out", "bundle", "the bundle directory to write (replaced)")
	flag.Parse()
	if in.Package == "" || in.Image == "" || defaultFile == "" {
		flag.Usage()
		os.Exit(2)
	}
	var err error
	if in.Default, err = os.ReadFile(defaultFile); err != nil {
		log.Fatal(err)
	}
	if samplesFile != "" {
		if in.Samples, err = os.ReadFile(samplesFile); err != nil {
			log.Fatal(err)
		}
	}
	files, err := Generate(in)
	if err != nil {
		log.Fatalf("%s: %v", defaultFile, err)
	}
	if err := Write(out, files); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("wrote %d files to %s\n", len(files), out)
}
