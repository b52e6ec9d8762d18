package convert

// This file defines the strict decoding of whole pods, with every problem in one error.

import (
	"github.com/starpod/starpod/internal/fast"
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
//
// Most pods take a fast path (fast.Decode) that decodes obj directly; a pod it declines, such
// as one with an error, is decoded through Starlark values, which gives the same pod and
// reports every error.
func DecodePod(obj any) (*corev1.Pod, error) {
	if pod := new(corev1.Pod); fast.Decode(obj, pod) {
		return pod, nil
	}
	return decodePodSlow(obj)
}

// decodePodSlow decodes obj as DecodePod does, through the Starlark values of obj and
// DecodePodValue.
func decodePodSlow(obj any) (*corev1.Pod, error) {
	v, err := FromGo(obj)
	if err != nil {
		return nil, err
	}
	return DecodePodValue(v)
}

// DecodePodYAML decodes doc, the YAML text of a pod document that stream.Document.Parse has
// not parsed, into the pod and defaults that [DecodePod] and [PodDefaultsOf] give for the data
// Parse reads from it, whose content it bounds to limit bytes as Parse does. It reports false
// for any document the fast path (fast.DecodePodYAML) declines: the caller then parses the
// document and decodes its data, for the pod or the error.
func DecodePodYAML(doc []byte, limit int64) (*corev1.Pod, *PodDefaults, bool) {
	pod, d, ok := fast.DecodePodYAML(doc, limit)
	if !ok {
		return nil, nil, false
	}
	return pod, &PodDefaults{status: d.Status, resources: d.Resources}, true
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
