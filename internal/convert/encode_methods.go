// This file defines how ToStarlark converts the values that have a JSON or text form of their
// own (MarshalJSON, MarshalText, json.Number): from the text they give, as Starlark's
// json.decode reads it.

package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"

	"go.starlark.net/starlark"
)

func condAddrEncoder(canAddr, elseEnc encoderFunc) encoderFunc {
	return func(e *encoder, v reflect.Value) (starlark.Value, error) {
		if v.CanAddr() {
			return canAddr(e, v)
		}
		return elseEnc(e, v)
	}
}

func marshalerEncoder(e *encoder, v reflect.Value) (starlark.Value, error) {
	if v.Kind() == reflect.Pointer && v.IsNil() {
		return starlark.None, nil
	}
	m, ok := v.Interface().(json.Marshaler)
	if !ok {
		return starlark.None, nil
	}
	return e.callMarshalJSON(m, v.Type())
}

func addrMarshalerEncoder(e *encoder, v reflect.Value) (starlark.Value, error) {
	return e.callMarshalJSON(v.Addr().Interface().(json.Marshaler), v.Type())
}

func (e *encoder) callMarshalJSON(m json.Marshaler, t reflect.Type) (starlark.Value, error) {
	b, err := m.MarshalJSON()
	if err != nil {
		return nil, encodeErrorf("error calling MarshalJSON for type %s: %v", t, err)
	}
	x, err := e.jsonToStarlark(b)
	if err != nil {
		return nil, encodeErrorf("error calling MarshalJSON for type %s: %v", t, err)
	}
	return x, nil
}

func textMarshalerEncoder(e *encoder, v reflect.Value) (starlark.Value, error) {
	if v.Kind() == reflect.Pointer && v.IsNil() {
		return starlark.None, nil
	}
	m, ok := v.Interface().(interface{ MarshalText() ([]byte, error) })
	if !ok {
		return starlark.None, nil
	}
	return e.callMarshalText(m, v.Type())
}

func addrTextMarshalerEncoder(e *encoder, v reflect.Value) (starlark.Value, error) {
	return e.callMarshalText(v.Addr().Interface().(interface{ MarshalText() ([]byte, error) }), v.Type())
}

func (e *encoder) callMarshalText(m interface{ MarshalText() ([]byte, error) }, t reflect.Type) (starlark.Value, error) {
	b, err := m.MarshalText()
	if err != nil {
		return nil, encodeErrorf("error calling MarshalText for type %s: %v", t, err)
	}
	return starlark.String(validUTF8(string(b))), nil
}

// jsonToStarlark converts JSON text as Starlark's json.decode does, keeping the order of
// object keys. Plain strings and integers, the usual output of MarshalJSON methods, take a
// fast path.
func (e *encoder) jsonToStarlark(b []byte) (starlark.Value, error) {
	b = bytes.TrimSpace(b)
	switch string(b) {
	case "null":
		return starlark.None, nil
	case "true":
		return starlark.True, nil
	case "false":
		return starlark.False, nil
	}
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' && isPlainASCII(b[1:len(b)-1]) {
		return starlark.String(string(b[1 : len(b)-1])), nil
	}
	if len(b) > 0 && len(b) <= 18 && isDigits(b) {
		i, err := strconv.ParseInt(string(b), 10, 64)
		if err == nil {
			return starlark.MakeInt64(i), nil
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	x, err := decodeJSONValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("invalid JSON: trailing data after value")
	}
	return x, nil
}

// isPlainASCII reports whether b, the inside of a JSON string, needs no unescaping.
func isPlainASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// isDigits reports whether b is a JSON integer without leading zeros.
func isDigits(b []byte) bool {
	if b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 || b[0] == '0' && len(b) > 1 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// jsonSyntaxError describes an error from a json.Decoder.
func jsonSyntaxError(err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("invalid JSON: %v", err)
}

func decodeJSONValue(dec *json.Decoder) (starlark.Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, jsonSyntaxError(err)
	}
	switch tok := tok.(type) {
	case nil:
		return starlark.None, nil
	case bool:
		return starlark.Bool(tok), nil
	case string:
		return starlark.String(tok), nil
	case json.Number:
		return numberToStarlark(string(tok))
	case json.Delim:
		switch tok {
		case '[':
			var elems []starlark.Value
			for dec.More() {
				x, err := decodeJSONValue(dec)
				if err != nil {
					return nil, err
				}
				elems = append(elems, x)
			}
			if _, err := dec.Token(); err != nil {
				return nil, jsonSyntaxError(err)
			}
			return starlark.NewList(elems), nil
		case '{':
			d := starlark.NewDict(0)
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, jsonSyntaxError(err)
				}
				x, err := decodeJSONValue(dec)
				if err != nil {
					return nil, err
				}
				d.SetKey(starlark.String(k.(string)), x)
			}
			if _, err := dec.Token(); err != nil {
				return nil, jsonSyntaxError(err)
			}
			return d, nil
		}
	}
	return nil, fmt.Errorf("invalid JSON: unexpected %v", tok)
}

var numberType = reflect.TypeFor[json.Number]()

// numberEncoder encodes a json.Number as the number it holds; the empty Number is 0.
func numberEncoder(e *encoder, v reflect.Value) (starlark.Value, error) {
	s := v.String()
	if s == "" {
		return starlark.MakeInt(0), nil
	}
	if !json.Valid([]byte(s)) || s[0] != '-' && (s[0] < '0' || s[0] > '9') {
		return nil, encodeErrorf("invalid number literal %q", s)
	}
	x, err := numberToStarlark(s)
	if err != nil {
		return nil, encodeErrorf("%v", err)
	}
	return x, nil
}
