package convert

// This file defines the strict decoding of whole pods, with every problem in one error.

import (
	"strings"

	"go.starlark.net/starlark"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// An InvalidPodError lists every problem of a pod that does not match the Pod schema.
type InvalidPodError struct {
	Fields field.ErrorList
}

func (e *InvalidPodError) Error() string {
	var b strings.Builder
	for i, fe := range e.Fields {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(fe.Field + ": " + fe.Detail)
	}
	return b.String()
}

// DecodePod decodes untyped JSON data (as read from YAML or JSON: map[string]any, []any,
// string, json.Number, float64, int64, bool, nil) strictly into a pod. It returns an
// *InvalidPodError that lists every unknown field and every value of the wrong type with its
// field path.
func DecodePod(obj any) (*corev1.Pod, error) {
	v, err := FromGo(obj)
	if err != nil {
		return nil, err
	}
	return DecodePodValue(v)
}

// DecodePodValue decodes the Starlark value of a pod strictly, as [DecodePod] does.
func DecodePodValue(v starlark.Value) (*corev1.Pod, error) {
	pod := new(corev1.Pod)
	errs, err := Decode(v, pod, nil, nil)
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, &InvalidPodError{Fields: errs}
	}
	return pod, nil
}
