package convert

// This file defines PodDefaults, the empty fields that encoding a pod writes though its
// document did not hold them.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/internal/stream"
)

// The lists of containers of a pod spec, whose containers encoding/json gives resources: {}.
var containerLists = [...]string{"initContainers", "containers", "ephemeralContainers"}

// PodDefaults records which of the empty fields that encoding/json writes for every
// *corev1.Pod a pod document held: status: {} and each container's resources: {}, which are
// not omitempty (metadata.creationTimestamp is omitzero: a zero time is not written).
// [PodDefaults.Remove] leaves out of an encoded pod those the document did not hold, so that
// a pod an overlay changed prints without defaults nobody wrote. To get one, use
// [PodDefaultsOf]; the nil *PodDefaults removes nothing.
type PodDefaults struct {
	status    bool            // the document held status
	resources map[string]bool // the "list/name" of each container that held resources
}

// PodDefaultsOf records which defaults the untyped JSON data of a pod document (as
// DecodePod takes it) holds.
func PodDefaultsOf(obj any) *PodDefaults {
	d := &PodDefaults{}
	m, _ := obj.(map[string]any)
	_, d.status = m["status"]
	spec, _ := m["spec"].(map[string]any)
	for _, list := range containerLists {
		cs, _ := spec[list].([]any)
		for _, c := range cs {
			c, _ := c.(map[string]any)
			if _, ok := c["resources"]; !ok {
				continue
			}
			name, _ := c["name"].(string)
			if d.resources == nil {
				d.resources = make(map[string]bool)
			}
			d.resources[list+"/"+name] = true
		}
	}
	return d
}

// Remove deletes from v, the untyped JSON data of an encoded pod, each default that is empty
// there and that the document did not hold. A container is matched by its list and name: one
// an overlay added held nothing. Remove is an edit of stream.JSONToYAML.
func (d *PodDefaults) Remove(v any) {
	if d == nil {
		return
	}
	m, _ := v.(map[string]any)
	if !d.status && isEmptyMap(m["status"]) {
		delete(m, "status")
	}
	spec, _ := m["spec"].(map[string]any)
	for _, list := range containerLists {
		cs, _ := spec[list].([]any)
		for _, c := range cs {
			c, _ := c.(map[string]any)
			name, _ := c["name"].(string)
			if isEmptyMap(c["resources"]) && !d.resources[list+"/"+name] {
				delete(c, "resources")
			}
		}
	}
}

// MarshalYAML returns the YAML text of pod as stream.MarshalYAML prints it (sorted keys, as
// sigs.k8s.io/yaml), without the empty defaults that d's document did not hold. It prints
// the pod straight from its fields with stream.MarshalTypedYAML, and through its JSON text
// what that declines.
func (d *PodDefaults) MarshalYAML(pod *corev1.Pod) ([]byte, error) {
	var buf [8]any // MarshalTypedYAML keeps no slice: omitted stays on the stack
	if out, ok := stream.MarshalTypedYAML(pod, d.appendOmitted(buf[:0], pod)...); ok {
		return out, nil
	}
	return d.marshalJSONYAML(pod)
}

// omitted returns pointers to the structs of pod that d removes where they are empty, for
// stream.MarshalTypedYAML: the status, and the resources of each container, unless the
// document held them.
func (d *PodDefaults) omitted(pod *corev1.Pod) []any { return d.appendOmitted(nil, pod) }

// appendOmitted appends to omit what omitted returns.
func (d *PodDefaults) appendOmitted(omit []any, pod *corev1.Pod) []any {
	if d == nil {
		return omit
	}
	if !d.status {
		omit = append(omit, &pod.Status)
	}
	add := func(list string, c *corev1.Container) {
		if !d.resources[list+"/"+c.Name] {
			omit = append(omit, &c.Resources)
		}
	}
	spec := &pod.Spec
	for i := range spec.InitContainers {
		add(containerLists[0], &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		add(containerLists[1], &spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		c := &spec.EphemeralContainers[i].EphemeralContainerCommon
		if !d.resources[containerLists[2]+"/"+c.Name] {
			omit = append(omit, &c.Resources)
		}
	}
	return omit
}

// marshalJSONYAML is MarshalYAML through the JSON text of pod.
func (d *PodDefaults) marshalJSONYAML(pod *corev1.Pod) ([]byte, error) {
	if d == nil {
		return stream.MarshalYAML(pod)
	}
	data, err := json.Marshal(pod)
	if err != nil {
		return nil, fmt.Errorf("error marshaling into JSON: %v", err)
	}
	if text, ok := d.removeText(data); ok {
		return stream.JSONToYAML(text, nil)
	}
	return stream.JSONToYAML(data, d.Remove)
}

// emptyStatus ends the JSON text of a pod whose status is empty: encoding/json writes a
// pod's fields in their order, status last.
var emptyStatus = []byte(`,"status":{}}`)

// removeText returns the JSON text of a pod, data, as encoding/json wrote it, without the
// defaults d removes, when it can tell them in the text: when no object in it is an empty
// "resources" (a container's, or another's), only the status at its end is to go. Then
// printing the text as it is saves decoding it to edit it.
func (d *PodDefaults) removeText(data []byte) ([]byte, bool) {
	if bytes.Contains(data, []byte(`"resources":{}`)) {
		return nil, false
	}
	if !d.status && bytes.HasSuffix(data, emptyStatus) {
		data = append(data[:len(data)-len(emptyStatus)], '}')
	}
	return data, true
}

// MarshalIndent returns the JSON text of pod as json.MarshalIndent prints untyped data (sorted
// keys, as sigs.k8s.io/yaml and kubectl print maps), with a final newline, without the empty
// defaults that d's document did not hold.
func (d *PodDefaults) MarshalIndent(pod *corev1.Pod, prefix, indent string) ([]byte, error) {
	data, err := json.Marshal(pod)
	if err != nil {
		return nil, fmt.Errorf("error marshaling into JSON: %v", err)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("error marshaling into JSON: %v", err)
	}
	d.Remove(v)
	out, err := json.MarshalIndent(v, prefix, indent)
	if err != nil {
		return nil, fmt.Errorf("error marshaling into JSON: %v", err)
	}
	return append(out, '\n'), nil
}

// isEmptyMap reports whether v is an object with no members.
func isEmptyMap(v any) bool {
	m, ok := v.(map[string]any)
	return ok && len(m) == 0
}

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

// defaultNotes records the PodDefaults of a pod document as DecodePodYAML decodes it, for
// the same PodDefaults that PodDefaultsOf records from the document's untyped data: the
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
		n.d.status = n.d.status || key == "status"
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
	if n.d.resources == nil {
		n.d.resources = make(map[string]bool)
	}
	n.d.resources[n.list+"/"+name] = true
	n.resources = false
}
