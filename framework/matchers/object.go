package matchers

import (
	"fmt"
	"slices"

	"github.com/onsi/gomega/gcustom"
	"github.com/onsi/gomega/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HaveFinalizer matches an object carrying the finalizer.
func HaveFinalizer(finalizer string) types.GomegaMatcher {
	return gcustom.MakeMatcher(func(obj client.Object) (bool, error) {
		if obj == nil {
			return false, fmt.Errorf("HaveFinalizer: object is nil")
		}
		return slices.Contains(obj.GetFinalizers(), finalizer), nil
	}).WithTemplate("Expected {{.To}} have finalizer {{format .Data 1}}, its finalizers are {{format .Actual.GetFinalizers 1}}", finalizer)
}

// BeGone matches the error of a Get (komega.Get) saying the object does not exist; any other error
// fails the match with that error, and nil (the object exists) does not match.
func BeGone() types.GomegaMatcher {
	return gcustom.MakeMatcher(func(err error) (bool, error) {
		if err == nil {
			return false, nil
		}
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("BeGone: the Get failed with another error: %w", err)
	}).WithMessage("be gone (NotFound), but the object still exists")
}

// BeBeingDeleted matches an object with a deletionTimestamp.
func BeBeingDeleted() types.GomegaMatcher {
	return gcustom.MakeMatcher(func(obj client.Object) (bool, error) {
		return obj != nil && obj.GetDeletionTimestamp() != nil, nil
	}).WithTemplate("Expected {{.To}} be being deleted (deletionTimestamp set); finalizers {{format .Actual.GetFinalizers 1}}")
}
