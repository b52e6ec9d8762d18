package stream

// This file defines DecodeMarshaled, the fast way back from the JSON text json.Marshal wrote
// to untyped data, and MarshalUntypedYAML, the fast way from untyped data to YAML text.

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// DecodeMarshaled returns the untyped data of data, JSON text that json.Marshal wrote, as a
// json.Decoder with UseNumber gives it (map[string]any, []any, string, json.Number, bool and
// nil), several times faster. Text it does not expect it hands to that decoder, whose error
// it returns.
func DecodeMarshaled(data []byte) (any, error) {
	if v, ok := parseJSON(data); ok {
		return v, nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// MarshalUntypedYAML returns the text MarshalYAML gives v, untyped data as DecodeMarshaled
// and a Reader give it, printed straight from the data when it can: MarshalYAML encodes v
// as JSON text and prints that text, which for a document of maps costs twice as much. Data
// whose JSON text is not its value (a string that is not UTF-8, which json.Marshal writes
// with U+FFFD) and data the fast printer declines go through MarshalYAML.
func MarshalUntypedYAML(v any) ([]byte, error) {
	if m, ok := v.(map[string]any); ok && len(m) > 0 && validUntyped(m) {
		if out, ok := emitYAML(make([]byte, 0, 4096), m); ok {
			return out, nil
		}
	}
	return MarshalYAML(v)
}

// validUntyped reports whether v holds only maps, slices, bools, nil, json.Numbers and
// strings and keys that are UTF-8.
func validUntyped(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if !utf8.ValidString(k) || !validUntyped(e) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !validUntyped(e) {
				return false
			}
		}
	case string:
		return utf8.ValidString(x)
	case json.Number, bool, nil:
	default:
		return false
	}
	return true
}
