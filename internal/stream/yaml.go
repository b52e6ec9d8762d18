package stream

// This file defines MarshalYAML, a faster sigs.k8s.io/yaml.Marshal.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	goyaml "go.yaml.in/yaml/v2"
)

// MarshalYAML returns the same text as sigs.k8s.io/yaml.Marshal, several times faster.
// That function encodes obj as JSON, parses the JSON text with the YAML parser to get untyped
// values and encodes those as YAML; MarshalYAML prints the JSON text as YAML straight from
// the text, giving each number the type the YAML parser would have given it.
//
// Where that function's text is not one text of the data, MarshalYAML keeps to the data and
// to one text: its YAML parser reads U+0085 in a string as a line break and folds it to a
// space, where MarshalYAML keeps the character (as \N); and for the few sets of keys on which
// its order is not transitive, its text changes from run to run, where MarshalYAML's does not
// (see sortKeys).
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
// encoding it again. Without edit, JSONToYAML prints the text of most data straight from
// data, which is several times faster.
func JSONToYAML(data []byte, edit func(v any)) ([]byte, error) {
	if edit == nil {
		return YAMLOptions{}.JSONToYAML(data)
	}
	return slowJSONToYAML(data, edit)
}

// YAMLOptions are options of printing JSON text as YAML. The zero value prints all of it.
type YAMLOptions struct {
	// Prune leaves out the null members of objects, and members whose value is an object
	// that holds nothing once that is done (but not objects that were empty to begin with):
	// {"a":null,"b":{"c":null},"d":{},"e":[null,{"f":null}]} prints as d: {}, e: [null, {}].
	Prune bool
}

// JSONToYAML returns the YAML text of the JSON text data, as MarshalYAML prints it, changed
// as o says.
func (o YAMLOptions) JSONToYAML(data []byte) ([]byte, error) {
	if out, ok := transcode(make([]byte, 0, len(data)+len(data)/2), data, o.Prune); ok {
		return out, nil
	}
	var edit func(v any)
	if o.Prune {
		edit = func(v any) { Prune(v) }
	}
	return slowJSONToYAML(data, edit)
}

// A Block is YAML text that an edit of [JSONToYAML] puts in the untyped data as the value of
// a mapping's key, to be printed as it is, chunk after chunk, on the lines after the key's:
// a block sequence or mapping already printed for where it stands (each line indented as the
// key's value is, a sequence's dashes at the key's column). It lets a caller print the parts
// of a large document apart, several at once, and put them together without a second pass.
type Block [][]byte

// ErrBlock is the error of JSONToYAML when the data holds a Block where none can stand: in a
// sequence, at the top, or under a key that is not a plain or quoted scalar of one line. The
// caller prints the document another way.
var ErrBlock = errors.New("the data holds a YAML block that cannot be printed in place")

// slowJSONToYAML is JSONToYAML through untyped values.
func slowJSONToYAML(data []byte, edit func(v any)) ([]byte, error) {
	v, ok := parseJSON(data)
	if !ok {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("error converting JSON to YAML: %v", err)
		}
	}
	size := len(data) + len(data)/2
	if edit != nil {
		edit(v)
		size += blockSize(v)
	}
	if out, ok := emitYAML(make([]byte, 0, size), v); ok {
		return out, nil
	}
	if m, isMap := v.(map[string]any); isMap && hasBlock(m) {
		return entriesYAML(make([]byte, 0, size), m, nil)
	}
	return goyaml.Marshal(yamlNumbers(v))
}

// entriesYAML appends the YAML text of the map m, which stands at path (its keys from the
// top), and holds a Block, entry by entry, when the fast printer cannot print all of it: an
// entry whose value is a Block is its key and the block; one whose value holds a Block is its
// key and the value's entries; every other is printed alone, wrapped in its ancestors (by the
// fast printer or the YAML library), and the ancestors' lines are cut: the entries of a block
// mapping print alike alone and together, so each prints exactly as in the whole document.
func entriesYAML(buf []byte, m map[string]any, path []string) ([]byte, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sortKeys(keys, func(k string) string { return k })
	indent := 2 * len(path)
	for _, k := range keys {
		v := m[k]
		if block, isBlock := v.(Block); isBlock || hasBlock(v) {
			sub, isMap := v.(map[string]any)
			kt, ok := scalarText(k, indent)
			if !ok || len(kt) > maxKeyText || !isBlock && !isMap {
				return nil, ErrBlock
			}
			buf = append(appendSpaces(buf, indent), kt...)
			buf = append(buf, ":\n"...)
			if isBlock {
				for _, chunk := range block {
					buf = append(buf, chunk...)
				}
				continue
			}
			var err error
			if buf, err = entriesYAML(buf, sub, append(path, k)); err != nil {
				return nil, err
			}
			continue
		}
		var doc any = map[string]any{k: v}
		for i := len(path) - 1; i >= 0; i-- {
			doc = map[string]any{path[i]: doc}
		}
		text, ok := emitYAML(nil, doc)
		if !ok {
			var err error
			if text, err = goyaml.Marshal(yamlNumbers(doc)); err != nil {
				return nil, err
			}
		}
		for range path {
			_, text, _ = bytes.Cut(text, []byte("\n"))
		}
		buf = append(buf, text...)
	}
	return buf, nil
}

// hasBlock reports whether the untyped data x holds a Block.
func hasBlock(x any) bool {
	switch x := x.(type) {
	case Block:
		return true
	case map[string]any:
		for _, v := range x {
			if hasBlock(v) {
				return true
			}
		}
	case []any:
		for _, v := range x {
			if hasBlock(v) {
				return true
			}
		}
	}
	return false
}

// blockSize returns the bytes of the Blocks that the untyped data x holds.
func blockSize(x any) int {
	n := 0
	switch x := x.(type) {
	case Block:
		for _, chunk := range x {
			n += len(chunk)
		}
	case map[string]any:
		for _, v := range x {
			n += blockSize(v)
		}
	case []any:
		for _, v := range x {
			n += blockSize(v)
		}
	}
	return n
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

// yamlNumbers returns v for the YAML library: each json.Number replaced with the int, uint64
// or float64 that the YAML parser resolves its text to, and each map with a goyaml.MapSlice
// in the order of sortKeys.
func yamlNumbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		// A map in key order: the library would sort its keys starting from Go's random
		// map order, which for some sets of keys changes its text from run to run.
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sortKeys(keys, func(k string) string { return k })
		m := make(goyaml.MapSlice, len(keys))
		for i, k := range keys {
			m[i] = goyaml.MapItem{Key: k, Value: yamlNumbers(v[k])}
		}
		return m
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
