// This file defines what the fast decoders share with convert's strict decoding: the
// field tables of struct types, the types with methods of their own, and encoding/json's
// quoting, and how DecodePodYAML notes the defaults a pod document holds.

package fast

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/starpod/starpod/internal/jsontag"
)

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	quantityType        = reflect.TypeFor[resource.Quantity]()
	stringMapType       = reflect.TypeFor[map[string]string]()
)

// structFields is the table of a struct type's JSON fields in encoding order.
type structFields struct {
	list []jsontag.Field
}

// cachedFields returns the JSON fields of the struct type t; the decoders that use it are
// made once per type and cached.
func cachedFields(t reflect.Type) *structFields {
	return &structFields{list: jsontag.Fields(t)}
}

// quantityText returns the text of a quantity whose JSON text is text, as convert's decoder
// checks it: the string x, trimmed, if text is x between quotes, else text without its
// quotes, trimmed.
func quantityText(x any, text []byte) string {
	if s, ok := x.(string); ok && len(text) == len(s)+2 {
		return strings.TrimSpace(s)
	}
	if n := len(text); n >= 2 && text[0] == '"' && text[n-1] == '"' {
		text = text[1 : n-1]
	}
	return string(bytes.TrimSpace(text))
}

var _ = corev1.Pod{}

// A noted is a struct type whose YAML decoder passes its keys to a defaultNotes.
type noted uint8

const (
	notNoted noted = iota
	notedPod
	notedSpec
	notedContainer // a Container or an EphemeralContainer
)

// notedTypes are the struct types whose YAML decoders pass their keys to a defaultNotes: a
// pod, its spec and its containers.
var notedTypes = map[reflect.Type]noted{
	corePodType:                                  notedPod,
	reflect.TypeFor[corev1.PodSpec]():            notedSpec,
	reflect.TypeFor[corev1.Container]():          notedContainer,
	reflect.TypeFor[corev1.EphemeralContainer](): notedContainer,
}

// PodDefaults records which of the empty fields that encoding/json writes for every
// *corev1.Pod a pod document held, as convert.PodDefaultsOf records them from its untyped
// data: Status, whether it held status, and Resources, the "list/name" of each container that
// held resources (list is initContainers, containers or ephemeralContainers), or nil.
type PodDefaults struct {
	Status    bool
	Resources map[string]bool
}

// defaultNotes records the PodDefaults of a pod document as DecodePodYAML decodes it: the
// decoders of notedTypes pass it each key of theirs as they come to it and each container
// when it is done.
type defaultNotes struct {
	d         PodDefaults
	list      string // the key of the pod spec being decoded: the list of a container
	resources bool   // whether the container being decoded held resources
}

// key notes that the document holds key in the mapping of a struct of type t.
func (n *defaultNotes) key(t noted, key string) {
	switch t {
	case notedPod:
		n.d.Status = n.d.Status || key == "status"
	case notedSpec:
		n.list = key
	case notedContainer:
		n.resources = n.resources || key == "resources"
	}
}

// end notes that the container v has been decoded.
func (n *defaultNotes) end(v reflect.Value) {
	if !n.resources {
		return
	}
	var name string
	switch c := v.Addr().Interface().(type) {
	case *corev1.Container:
		name = c.Name
	case *corev1.EphemeralContainer:
		name = c.Name
	}
	if n.d.Resources == nil {
		n.d.Resources = make(map[string]bool)
	}
	n.d.Resources[n.list+"/"+name] = true
	n.resources = false
}
