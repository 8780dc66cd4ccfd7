package kind

import "testing"

// The node's list is what `crictl images --output json` prints in a kind node (containerd's CRI names an
// image by its normalized reference); LoadImages asks for an image by the name it was built with.
func TestANodeHasAnImageByItsNormalizedNameAndID(t *testing.T) {
	have, err := parseNodeImages([]byte(`{"images":[
		{"id":"sha256:aaa","repoTags":["docker.io/library/busybox:1.0"],"repoDigests":[]},
		{"id":"sha256:bbb","repoTags":["fixtures.local/widget-operator:v0.1.0","fixtures.local/widget-operator:v0.2.0"]},
		{"id":"sha256:ccc","repoTags":["docker.io/example/app:latest"]},
		{"id":"sha256:ddd","repoTags":[]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		image, id string
		want      bool
	}{
		{"busybox:1.0", "sha256:aaa", true},
		{"docker.io/library/busybox:1.0", "sha256:aaa", true},
		{"busybox:1.0", "sha256:bbb", false}, // same name, another build: load it again
		{"fixtures.local/widget-operator:v0.2.0", "sha256:bbb", true},
		{"fixtures.local/widget-operator:v0.3.0", "sha256:bbb", false},
		{"example/app", "sha256:ccc", true}, // no tag is latest
		{"Not A Reference", "sha256:aaa", false},
	} {
		if got := have.has(c.image, c.id); got != c.want {
			t.Errorf("has(%q, %q) = %v, want %v", c.image, c.id, got, c.want)
		}
	}
	if _, err := parseNodeImages([]byte("crictl: not JSON")); err == nil {
		t.Error("parseNodeImages accepted output that is not JSON")
	}
}
