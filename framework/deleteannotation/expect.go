package deleteannotation

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/matchers"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/applier"
)

// ExpectGone waits until every object is gone (NotFound, or its kind no longer served).
func (e *Env) ExpectGone(ctx context.Context, objs ...*unstructured.Unstructured) {
	GinkgoHelper()
	for _, o := range objs {
		Eventually(func() error {
			_, err := kube.Get(ctx, e.Cluster.Client, o)
			return err
		}).WithContext(ctx).WithTimeout(e.Timeout).Should(matchers.BeGone(), "%s must be gone", ResourceOf(o))
	}
}

// ExpectPresent checks every object exists now and returns their live state.
func (e *Env) ExpectPresent(ctx context.Context, objs ...*unstructured.Unstructured) []*unstructured.Unstructured {
	GinkgoHelper()
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		live, err := kube.Get(ctx, e.Cluster.Client, o)
		Expect(err).NotTo(HaveOccurred(), "%s must exist", ResourceOf(o))
		out = append(out, live)
	}
	return out
}

// ExpectUntouched checks every object (live state from ExpectPresent) still exists with the same
// UID and, unless onlyUID, the same resourceVersion: neither recreated nor modified.
func (e *Env) ExpectUntouched(ctx context.Context, before []*unstructured.Unstructured, onlyUID bool) {
	GinkgoHelper()
	for _, b := range before {
		now, err := kube.Get(ctx, e.Cluster.Client, b)
		Expect(err).NotTo(HaveOccurred(), "%s must still exist", ResourceOf(b))
		Expect(now.GetUID()).To(Equal(b.GetUID()), "%s must not be recreated", ResourceOf(b))
		if !onlyUID {
			Expect(now.GetResourceVersion()).To(Equal(b.GetResourceVersion()), "%s must not be modified", ResourceOf(b))
		}
	}
}

// TaskOf returns the result of the manifest holding obj (same kind, namespace and name).
func TaskOf(res applier.Result, p *payload.Payload, obj *unstructured.Unstructured) applier.TaskResult {
	GinkgoHelper()
	for _, m := range p.Manifests {
		if objectKey(m.Obj) == objectKey(obj) {
			t := res.TaskAt(m.Filename, m.Index)
			Expect(t).NotTo(BeNil(), "no result for %s", m.Ref())
			return *t
		}
	}
	Fail("no manifest for " + ResourceOf(obj).String())
	return applier.TaskResult{}
}

// Texts returns the message texts of several passes, in order.
func Texts(results ...applier.Result) []string {
	var out []string
	for _, r := range results {
		out = append(out, r.Texts()...)
	}
	return out
}

// TaskTexts returns the texts of one task's messages.
func TaskTexts(t applier.TaskResult) []string {
	out := make([]string, 0, len(t.Messages))
	for _, m := range t.Messages {
		out = append(out, m.Text)
	}
	return out
}

// Count returns how many times s occurs in texts.
func Count(texts []string, s string) int {
	n := 0
	for _, t := range texts {
		if t == s {
			n++
		}
	}
	return n
}
