package stream

// This file defines yamlToUntyped, a faster sigs.k8s.io/yaml.YAMLToJSONStrict followed by
// decoding the JSON text with encoding/json and UseNumber.

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"

	goyaml "go.yaml.in/yaml/v2"
)

// yamlToUntyped parses one YAML document strictly and returns its content as the untyped
// JSON data that converting it to JSON text with sigs.k8s.io/yaml.YAMLToJSONStrict and
// decoding that text with encoding/json (UseNumber) gives, with the same errors, but without
// the JSON text in between.
func yamlToUntyped(doc []byte) (any, error) {
	var v any
	if err := goyaml.UnmarshalStrict(doc, &v); err != nil {
		return nil, err
	}
	return jsonable(v)
}

// jsonable converts a value of the YAML parser to untyped JSON data: map keys become
// strings, numbers json.Number and strings valid UTF-8. It may reuse parts of v.
func jsonable(v any) (any, error) {
	switch v := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			key, err := jsonKey(k, x)
			if err != nil {
				return nil, err
			}
			if m[key], err = jsonable(x); err != nil {
				return nil, err
			}
		}
		return m, nil
	case []any: // the parser's own slice, converted in place
		for i, x := range v {
			var err error
			if v[i], err = jsonable(x); err != nil {
				return nil, err
			}
		}
		return v, nil
	case string:
		return validUTF8(v), nil
	case int:
		return json.Number(strconv.Itoa(v)), nil
	case int64:
		return json.Number(strconv.FormatInt(v, 10)), nil
	case uint64:
		return json.Number(strconv.FormatUint(v, 10)), nil
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Errorf("json: unsupported value: %s", strconv.FormatFloat(v, 'g', -1, 64))
		}
		data, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		return json.Number(data), nil
	case bool, nil:
		return v, nil
	}
	// The YAML parser gives no other types to an interface; marshal anything else to JSON
	// and back, as the JSON text would.
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// jsonKey converts a YAML map key to the string sigs.k8s.io/yaml makes of it.
func jsonKey(k, v any) (string, error) {
	var s string
	switch k := k.(type) {
	case string:
		s = k
	case int:
		s = strconv.Itoa(k)
	case int64:
		s = strconv.FormatInt(k, 10)
	case float64:
		s = strconv.FormatFloat(k, 'g', -1, 32)
		switch s {
		case "+Inf":
			s = ".inf"
		case "-Inf":
			s = "-.inf"
		case "NaN":
			s = ".nan"
		}
	case bool:
		s = strconv.FormatBool(k)
	default:
		return "", fmt.Errorf("unsupported map key of type: %s, key: %+#v, value: %+#v", reflect.TypeOf(k), k, v)
	}
	return validUTF8(s), nil
}

// validUTF8 replaces each byte of s that is not part of valid UTF-8 with U+FFFD, as
// encoding/json does.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return string(b)
}
