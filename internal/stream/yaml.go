package stream

// This file defines MarshalYAML, a faster sigs.k8s.io/yaml.Marshal.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	goyaml "go.yaml.in/yaml/v2"
)

// MarshalYAML returns the same text as sigs.k8s.io/yaml.Marshal, in about half the time.
// That function encodes obj as JSON, parses the JSON text with the YAML parser to get untyped
// values and encodes those as YAML; MarshalYAML parses the JSON text with encoding/json,
// which is much faster, and gives each number the type the YAML parser would have given it.
func MarshalYAML(obj any) ([]byte, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("error marshaling into JSON: %v", err)
	}
	return JSONToYAML(data, nil)
}

// JSONToYAML returns the YAML text of the JSON text data, as MarshalYAML prints it. If edit
// is not nil, it is called with the untyped value of data (maps, slices, strings, bools,
// nil and json.Number values, as a json.Decoder with UseNumber gives them) and may change it
// in place before it is printed; callers that hold the JSON text of a value already save
// encoding it again.
func JSONToYAML(data []byte, edit func(v any)) ([]byte, error) {
	v, ok := parseJSON(data)
	if !ok {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("error converting JSON to YAML: %v", err)
		}
	}
	if edit != nil {
		edit(v)
	}
	if out, ok := emitYAML(make([]byte, 0, len(data)+len(data)/2), v); ok {
		return out, nil
	}
	return goyaml.Marshal(yamlNumbers(v))
}

// yamlNumbers replaces each json.Number in v with the int, uint64 or float64 that the YAML
// parser resolves its text to.
func yamlNumbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = yamlNumbers(x)
		}
	case []any:
		for i, x := range v {
			v[i] = yamlNumbers(x)
		}
	case json.Number:
		s := string(v)
		if i, err := strconv.ParseInt(s, 10, 0); err == nil {
			return int(i)
		}
		if u, err := strconv.ParseUint(s, 10, 64); err == nil {
			return u
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f
		}
		return s
	}
	return v
}
