// Package convert moves values between Go and Starlark in the JSON data model.
//
// Typed Kubernetes objects (a *corev1.Pod, or any struct with json tags) become plain Starlark
// values — dict, list, string, int, float, bool and None — in exactly the shape encoding/json
// gives them: struct fields in declaration order, map keys sorted, omitempty and omitzero
// honoured, and types with their own JSON form (resource.Quantity, metav1.Time,
// intstr.IntOrString) as that form. To turn a typed object into Starlark values, use
// [ToStarlark]; to decode Starlark values strictly back into a typed object, use [Decode].
//
// Untyped JSON data (map[string]any, []any, string, float64, int64, bool, nil) converts with
// [ToGo] and [FromGo]; the builtins use those for JSON Patch, strategic merge and YAML.
//
// Decode never goes through JSON text, and it reports every problem at once as a
// field.ErrorList whose paths read like spec.containers[0].ports[0].containerPort.
//
// To decode the untyped data of a YAML or JSON document into a pod, use [DecodePod]. It
// decodes a valid pod straight from the untyped data, and goes through Starlark values and
// Decode only for a pod with errors, or with values its fast path leaves to Decode. To
// decode a pod document's YAML text before it is parsed, try [DecodePodYAML], which reads
// the text straight into the pod and its [PodDefaults] when it is plain, and otherwise
// declines, leaving the text to stream.Document.Parse, DecodePod and PodDefaultsOf.
//
// Both directions use per-type tables of struct fields, computed once per Go type and cached,
// so converting many objects of the same type costs no reflection over struct tags.
package convert

import (
	"fmt"
	"github.com/starpod/starpod/internal/fast"

	"go.starlark.net/starlark"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Options controls [Decode]. The zero value is a safe default.
type Options struct {
	// MaxBytes bounds the size of the value's JSON encoding. Decode stops with a *SizeError as
	// soon as the running total passes it. Zero means no limit.
	//
	// The total is the length of the compact JSON encoding without HTML escaping: strings
	// count their bytes plus quotes and backslash escapes (control characters count as
	// \u00XX), floats count the digits of their shortest form, and every bracket, colon and
	// comma counts. Invalid UTF-8 is counted as its bytes, so the total may be a little below
	// the length encoding/json would produce for such strings. Values that are not decoded
	// (of unknown fields, or of the wrong type) count too.
	MaxBytes int64
}

// A SizeError reports a value whose JSON encoding is larger than Options.MaxBytes.
type SizeError struct {
	Limit int64       // the limit that was passed
	Path  *field.Path // where the walk was when the total passed the limit
}

func (e *SizeError) Error() string {
	if e.Path != nil {
		return fmt.Sprintf("%s: value too large: JSON encoding exceeds %d bytes", e.Path, e.Limit)
	}
	return fmt.Sprintf("value too large: JSON encoding exceeds %d bytes", e.Limit)
}

// ToStarlark converts v, a Go value in the JSON data model or a (pointer to a) struct with json
// tags, into fresh, unfrozen Starlark values. The result equals json.Unmarshal of json.Marshal(v)
// into generic values, with JSON numbers that are integers becoming Starlark ints.
//
// Where json.Marshal would fail (NaN or infinite floats, channels, functions, a failing
// MarshalJSON), ToStarlark returns a *field.Error whose path names the bad field.
func ToStarlark(v any) (starlark.Value, error) {
	return toStarlark(v)
}

// ToStarlarkRecycled is [ToStarlark] into memory that is used again: release, which must be
// called once, makes the memory of the values it returned free for a later conversion. The
// caller must not use those values, or any value that holds them, after release: it is for a
// conversion whose values all die at a known point, as a pod's do once an overlay's result
// is decoded. Such a conversion allocates nothing for its dicts and small lists. With
// fast.Off it is ToStarlark, and release does nothing.
func ToStarlarkRecycled(v any) (x starlark.Value, release func(), err error) {
	if fast.Off {
		x, err = toStarlark(v)
		return x, func() {}, err
	}
	return toStarlarkRecycled(v)
}

// Decode decodes x strictly into the value that out points to: no unknown fields (each reported
// with a did-you-mean), no type mismatches (got string, want int), no values JSON cannot hold
// (NaN, Inf, functions, non-string keys, ints out of range of the target), no cycles.
// None decodes as JSON null does. The previous contents of *out are replaced.
// Field errors are returned in errs, rooted at path (nil for the top level); err is non-nil only
// for a *SizeError, in which case errs is nil and *out is unspecified.
//
// Decode follows strict JSON decoding (sigs.k8s.io/json): keys match field names exactly,
// tuples decode like lists, ints decode into float fields, a base64 string into []byte, and
// types with an UnmarshalJSON method (resource.Quantity, metav1.Time, intstr.IntOrString)
// receive the JSON text of the value. That text is written anew, so it is equivalent to, but
// not always byte for byte the same as, the text a JSON decoder would pass: a
// metav1.FieldsV1 may hold differently spaced JSON. Unlike JSON text, a dict cannot hold a
// key twice, and values nested more than 1000 lists and dicts deep are an error.
//
// Decode panics if out is not a non-nil pointer.
func Decode(x starlark.Value, out any, path *field.Path, opts *Options) (errs field.ErrorList, err error) {
	return decode(x, out, path, opts)
}

// ToGo converts a Starlark value into untyped JSON data: map[string]any, []any, string, int64
// (or *big.Int beyond int64), float64, bool and nil. Errors name the path of the bad value;
// the error returned is a *field.Error.
func ToGo(x starlark.Value, path *field.Path) (any, error) {
	w := newWalker(path)
	defer w.release()
	v := w.toGo(x)
	if len(w.errs) > 0 {
		return nil, w.errs[0]
	}
	return v, nil
}

// FromGo converts untyped JSON data (as produced by encoding/json, sigs.k8s.io/yaml or [ToGo];
// json.Number and all Go int and float kinds are accepted) into fresh Starlark values. Map keys
// are sorted.
//
// Numbers convert as JSON text carries them, the way Starlark's json.decode reads that text:
// a json.Number becomes an int when it has no fraction or exponent, otherwise a float, and a
// float64 or float32 becomes an int when JSON writes it without fraction or exponent (2.0 is
// written 2, so it becomes the int 2; 2.5 stays a float), as in [ToStarlark]. NaN and
// infinite floats, and values of any other Go type, are errors.
func FromGo(v any) (starlark.Value, error) {
	return fromGo(v)
}
