package convert

// This file defines PodDefaults, the empty fields that encoding a pod writes though its
// document did not hold them.

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

// Status reports whether the document held status; the nil *PodDefaults says it did.
func (d *PodDefaults) Status() bool { return d == nil || d.status }

// isEmptyMap reports whether v is an object with no members.
func isEmptyMap(v any) bool {
	m, ok := v.(map[string]any)
	return ok && len(m) == 0
}
