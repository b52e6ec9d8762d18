package stream

// This file defines yamlToUntyped, sigs.k8s.io/yaml.YAMLToJSONStrict followed by decoding
// the JSON text with encoding/json and UseNumber, without the JSON text in between and with
// a bound on the content that aliases expand to.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"

	goyaml "go.yaml.in/yaml/v2"

	"github.com/starpod/starpod/internal/fast"
)

// Errors of yamlToUntyped that [Document.Parse] reports with the document's number.
var (
	// errExpanded is a document whose content, with its aliases expanded, passes the limit.
	errExpanded = errors.New("content larger than the limit")
	// errSecondDocument is a text that holds more than one YAML document.
	errSecondDocument = errors.New("more than one document")
)

// yamlToUntyped parses one YAML document strictly and returns its content as the untyped
// JSON data that converting it to JSON text with sigs.k8s.io/yaml.YAMLToJSONStrict and
// decoding that text with encoding/json (UseNumber) gives, with the same errors, but without
// the JSON text in between.
//
// The parser shares the text of an anchored string among its aliases, so a small text can
// stand for a large content: yamlToUntyped stops with errExpanded once the size of the
// content (see sizer) passes limit, which costs at most limit's worth of the walk.
//
// Unlike those functions, which parse the first document of the text and leave out the rest
// unseen, yamlToUntyped refuses with errSecondDocument a text that holds more than one
// document: content after a line "..." or a directive, or after a root node that ends before
// the text does (a flow collection, a quoted or block scalar, or a mapping indented by some
// spaces, followed by a line at column 0), or after a line break other than \n.
func yamlToUntyped(doc []byte, limit int64) (any, error) {
	if v, ok := fast.ParseBlockYAML(doc, limit); ok {
		return v, nil
	}
	var v any
	dec := goyaml.NewDecoder(bytes.NewReader(doc))
	dec.SetStrict(true)
	if err := dec.Decode(&v); err != nil && err != io.EOF {
		return nil, err
	}
	var more any
	if err := dec.Decode(&more); err != io.EOF {
		return nil, errSecondDocument
	}
	s := sizer{left: limit}
	return s.jsonable(v)
}

// A sizer counts the size of untyped data as it converts it, and stops the conversion once
// it passes a limit. The size approximates the data's JSON text from below, so that it
// passes the size of the YAML text only by what aliases share (and by a few rare scalars
// whose value is longer than their text): each value counts one byte, each string and each
// map key its length, each number the length of its JSON text.
type sizer struct {
	left int64 // bytes left; the limit is passed when it goes below 0
}

// count counts n bytes, reporting errExpanded once the limit is passed.
func (s *sizer) count(n int) error {
	s.left -= int64(n)
	if s.left < 0 {
		return errExpanded
	}
	return nil
}

// jsonable converts a value of the YAML parser to untyped JSON data: map keys become
// strings, numbers json.Number and strings valid UTF-8. It may reuse parts of v. It counts
// the size of what it converts, and stops with errExpanded once that passes the limit.
func (s *sizer) jsonable(v any) (any, error) {
	if err := s.count(1); err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			key, err := jsonKey(k, x)
			if err != nil {
				return nil, err
			}
			if err := s.count(len(key)); err != nil {
				return nil, err
			}
			if m[key], err = s.jsonable(x); err != nil {
				return nil, err
			}
		}
		return m, nil
	case []any: // the parser's own slice, converted in place
		for i, x := range v {
			var err error
			if v[i], err = s.jsonable(x); err != nil {
				return nil, err
			}
		}
		return v, nil
	case string:
		if err := s.count(len(v)); err != nil {
			return nil, err
		}
		return validUTF8(v), nil
	case int:
		return s.number(strconv.Itoa(v))
	case int64:
		return s.number(strconv.FormatInt(v, 10))
	case uint64:
		return s.number(strconv.FormatUint(v, 10))
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Errorf("json: unsupported value: %s", strconv.FormatFloat(v, 'g', -1, 64))
		}
		data, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		return s.number(string(data))
	case bool, nil:
		return v, nil
	}
	// The YAML parser gives no other types to an interface; marshal anything else to JSON
	// and back, as the JSON text would.
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if err := s.count(len(data)); err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// number counts and returns the JSON number of text.
func (s *sizer) number(text string) (any, error) {
	if err := s.count(len(text)); err != nil {
		return nil, err
	}
	return json.Number(text), nil
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
