package stream

// This file defines DecodeMarshaled, the fast way back from the JSON text json.Marshal wrote
// to untyped data.

import (
	"bytes"
	"encoding/json"
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
