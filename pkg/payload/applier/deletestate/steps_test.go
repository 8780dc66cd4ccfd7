package deletestate

import (
	"fmt"
	"math/rand"
	"strings"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/applier"
)

// numObjects objects take part: three ConfigMaps and a cluster-scoped ClusterRole; the even ones
// carry a finalizer when applied, so their deletes stay pending until released.
const numObjects = 4

func heldByManifest(i int) bool { return i%2 == 0 }

// manifest is what a payload version ships for one object.
type manifest int

const (
	noManifest manifest = iota // dropped from the payload
	apply                      // shipped without the delete annotation
	mark                       // release.openshift.io/delete: "true"
	invalid                    // the annotation with another value
)

func (m manifest) String() string { return [...]string{"-", "apply", "mark", "invalid"}[m] }

// invalidValues are annotation values the CVO rejects.
var invalidValues = []string{"True", "yes", "", "false"}

type payloadSpec struct {
	version      string
	manifests    [numObjects]manifest
	invalidValue string
}

type stepKind int

const (
	passStep stepKind = iota
	restartStep
	releaseStep        // remove the finalizers of a terminating object
	externalDeleteStep // someone deletes the object
	externalCreateStep // someone creates the object
)

// step is self-contained (a pass carries its whole payload), so a shrunk sequence stays meaningful.
type step struct {
	kind    stepKind
	mode    applier.Mode
	payload payloadSpec
	object  int
}

func (s step) String() string {
	switch s.kind {
	case passStep:
		var parts []string
		for i, m := range s.payload.manifests {
			v := m.String()
			if m == invalid {
				v = fmt.Sprintf("invalid(%q)", s.payload.invalidValue)
			}
			parts = append(parts, fmt.Sprintf("o%d:%s", i, v))
		}
		return fmt.Sprintf("%s %s [%s]", s.mode, s.payload.version, strings.Join(parts, " "))
	case restartStep:
		return "restart the applier"
	case releaseStep:
		return fmt.Sprintf("release the finalizer of o%d", s.object)
	case externalDeleteStep:
		return fmt.Sprintf("someone deletes o%d", s.object)
	default:
		return fmt.Sprintf("someone creates o%d", s.object)
	}
}

// generate returns n steps: an install of every object, then random passes and events.
func generate(r *rand.Rand, n int) []step {
	spec := payloadSpec{version: "1.0.0"}
	for i := range spec.manifests {
		spec.manifests[i] = apply
	}
	steps := []step{{kind: passStep, mode: applier.ModeInstall, payload: spec}}
	major, minor, patch := 1, 0, 0
	for len(steps) < n {
		x := r.Intn(100)
		switch {
		case x < 55:
			for range r.Intn(3) {
				spec.manifests[r.Intn(numObjects)] = manifest(r.Intn(4))
			}
			spec.invalidValue = invalidValues[r.Intn(len(invalidValues))]
			switch y := r.Intn(100); {
			case y < 45:
				patch++
			case y < 75:
				minor, patch = minor+1, 0
			}
			spec.version = fmt.Sprintf("%d.%d.%d", major, minor, patch)
			steps = append(steps, step{kind: passStep, mode: randomMode(r), payload: spec})
		case x < 65:
			steps = append(steps, step{kind: restartStep})
		case x < 85:
			steps = append(steps, step{kind: releaseStep, object: r.Intn(numObjects)})
		case x < 93:
			steps = append(steps, step{kind: externalDeleteStep, object: r.Intn(numObjects)})
		default:
			steps = append(steps, step{kind: externalCreateStep, object: r.Intn(numObjects)})
		}
	}
	return steps
}

func randomMode(r *rand.Rand) applier.Mode {
	switch x := r.Intn(100); {
	case x < 60:
		return applier.ModeUpdate
	case x < 85:
		return applier.ModeReconcile
	default:
		return applier.ModeInstall
	}
}
