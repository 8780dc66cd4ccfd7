package payload

import "fmt"

// DeleteAnnotation asks for the manifest's object to be deleted instead of applied.
const DeleteAnnotation = "release.openshift.io/delete"

// InvalidDeleteAnnotationError is returned for a delete annotation whose value is not exactly "true".
type InvalidDeleteAnnotationError struct {
	Value string
}

func (e *InvalidDeleteAnnotationError) Error() string {
	return fmt.Sprintf("invalid delete annotation %q value: %q", DeleteAnnotation, e.Value)
}

// ValidDeleteAnnotation reports whether the delete annotation is present; it is an error when it is
// present with any value other than exactly "true" (so "True", "yes", "" and "false" are errors).
func ValidDeleteAnnotation(annotations map[string]string) (bool, error) {
	value, ok := annotations[DeleteAnnotation]
	if !ok {
		return false, nil
	}
	if value != "true" {
		return true, &InvalidDeleteAnnotationError{Value: value}
	}
	return true, nil
}
