package stream

// This file defines MarshalYAML and JSONToYAML, sigs.k8s.io/yaml's functions through the fast
// printer of internal/fast where it takes the text.

import (
	"bytes"
	"encoding/json"
	"fmt"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/starpod/starpod/internal/fast"
)

// MarshalYAML returns the text of sigs.k8s.io/yaml.Marshal: obj encoded as JSON, printed as
// YAML with sorted keys.
func MarshalYAML(obj any) ([]byte, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("error marshaling into JSON: %v", err)
	}
	return JSONToYAML(data, nil)
}

// JSONToYAML returns the YAML text of the JSON text data, as sigs.k8s.io/yaml.JSONToYAML
// prints it. If edit is not nil, it is called with the untyped value of data (maps, slices,
// strings, bools, nil and json.Number values, as a json.Decoder with UseNumber gives them)
// and may change it in place before it is printed.
func JSONToYAML(data []byte, edit func(v any)) ([]byte, error) {
	if edit != nil {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("error converting JSON to YAML: %v", err)
		}
		edit(v)
		var err error
		if data, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("error converting JSON to YAML: %v", err)
		}
	}
	if out, ok := fast.JSONToYAML(make([]byte, 0, len(data)+len(data)/2), data, false); ok {
		return out, nil
	}
	return sigsyaml.JSONToYAML(data)
}

// YAMLOptions are options of printing JSON text as YAML. The zero value prints all of it.
type YAMLOptions struct {
	// Prune leaves out the null members of objects, and members whose value is an object
	// that holds nothing once that is done (but not objects that were empty to begin with):
	// {"a":null,"b":{"c":null},"d":{},"e":[null,{"f":null}]} prints as d: {}, e: [null, {}].
	Prune bool
}

// JSONToYAML returns the YAML text of the JSON text data, as JSONToYAML prints it, changed
// as o says.
func (o YAMLOptions) JSONToYAML(data []byte) ([]byte, error) {
	if !o.Prune {
		return JSONToYAML(data, nil)
	}
	if out, ok := fast.JSONToYAML(make([]byte, 0, len(data)+len(data)/2), data, true); ok {
		return out, nil
	}
	return JSONToYAML(data, func(v any) { Prune(v) })
}

// Prune removes nulls from the objects in the untyped data x (maps and slices as JSONToYAML
// gives them to an edit), and the objects that become empty by that, as YAMLOptions.Prune
// does; objects empty to begin with stay. It reports whether x itself became empty.
func Prune(x any) (empty bool) {
	switch x := x.(type) {
	case map[string]any:
		if len(x) == 0 {
			return false
		}
		for k, v := range x {
			if v == nil || Prune(v) {
				delete(x, k)
			}
		}
		return len(x) == 0
	case []any:
		for _, v := range x {
			Prune(v)
		}
	}
	return false
}
