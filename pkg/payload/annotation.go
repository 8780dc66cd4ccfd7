package payload

import "fmt"

// DeleteAnnotation asks for the manifest's object to be deleted instead of applied.
const DeleteAnnotation = "release.openshift.io/delete"

// InvalidDeleteAnnotationError is returned for a delete annotation whose value is not exactly "true".
type InvalidDeleteAnnotationError struct {
	Value string
}

// Error is the CVO's text (lib/resourcedelete/helper.go ValidDeleteAnnotation): the value between
// plain double quotes, not escaped as %q would, so a value `"true"` reads `""true""` there and here.
func (e *InvalidDeleteAnnotationError) Error() string {
	return fmt.Sprintf(`invalid delete annotation "%s" value: "%s"`, DeleteAnnotation, e.Value)
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
