package convert

// This file defines PodDefaults, the empty fields that encoding a pod writes though its
// document did not hold them.

import (
	"bytes"
	"encoding/json"
	"fmt"

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
// sigs.k8s.io/yaml), without the empty defaults that d's document did not hold.
func (d *PodDefaults) MarshalYAML(pod *corev1.Pod) ([]byte, error) {
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
