package applier_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/applier"
	pt "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

// runPass loads the payload b builds and runs one pass of a in mode, printing its messages to the
// spec's output; the pass's error is in the Result.
func runPass(ctx context.Context, a *applier.Applier, b *pt.Builder, mode applier.Mode) applier.Result {
	GinkgoHelper()
	p, err := b.Load()
	Expect(err).NotTo(HaveOccurred())
	res, _ := a.Run(ctx, p, mode)
	for _, m := range res.Messages {
		GinkgoWriter.Println(m.String())
	}
	return res
}
