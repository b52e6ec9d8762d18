// Package jsontag holds encoding/json's rules for the json tags of struct fields: which names
// are valid, which options a tag has, and when the omitempty and omitzero options leave a
// field out. Both of starpod's reflective walkers of typed values (internal/convert, to and
// from Starlark values; internal/stream, printing YAML) follow them.
package jsontag

import (
	"reflect"
	"strings"
	"unicode"
)

// HasOption reports whether opts, the options of a json tag after its name, hold opt.
func HasOption(opts, opt string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == opt {
			return true
		}
	}
	return false
}

// ValidName reports whether s may name a field in a json tag; encoding/json ignores a tag
// whose name is not valid, and uses the field's Go name.
func ValidName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
			// Backslash and quote are reserved; other punctuation is allowed.
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// IsEmpty reports whether v is empty in the sense of the omitempty option.
func IsEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64,
		reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

var isZeroerType = reflect.TypeFor[interface{ IsZero() bool }]()

// ZeroFunc returns the test encoding/json makes for the omitzero option of a field of type t
// whose type has an IsZero method, or nil when it has none: then the test is
// reflect.Value.IsZero.
func ZeroFunc(t reflect.Type) func(reflect.Value) bool {
	switch {
	case t.Kind() == reflect.Interface && t.Implements(isZeroerType):
		return func(v reflect.Value) bool {
			return v.IsNil() ||
				(v.Elem().Kind() == reflect.Pointer && v.Elem().IsNil()) ||
				v.Interface().(interface{ IsZero() bool }).IsZero()
		}
	case t.Kind() == reflect.Pointer && t.Implements(isZeroerType):
		return func(v reflect.Value) bool {
			return v.IsNil() || v.Interface().(interface{ IsZero() bool }).IsZero()
		}
	case t.Implements(isZeroerType):
		return func(v reflect.Value) bool {
			return v.Interface().(interface{ IsZero() bool }).IsZero()
		}
	case reflect.PointerTo(t).Implements(isZeroerType):
		return func(v reflect.Value) bool {
			if !v.CanAddr() {
				v2 := reflect.New(v.Type()).Elem()
				v2.Set(v)
				v = v2
			}
			return v.Addr().Interface().(interface{ IsZero() bool }).IsZero()
		}
	}
	return nil
}

// Parse reads the json tag of struct field sf as encoding/json does. It reports false for a
// field encoding/json leaves out: unexported and not an embedded struct, or tagged "-". The
// name is "" when the tag names none (or an invalid one): then the field's Go name is used,
// or, for an embedded struct, its fields are promoted.
func Parse(sf reflect.StructField) (name, opts string, ok bool) {
	if sf.Anonymous {
		t := sf.Type
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if !sf.IsExported() && t.Kind() != reflect.Struct {
			return "", "", false
		}
	} else if !sf.IsExported() {
		return "", "", false
	}
	tag := sf.Tag.Get("json")
	if tag == "-" {
		return "", "", false
	}
	name, opts, _ = strings.Cut(tag, ",")
	if !ValidName(name) {
		name = ""
	}
	return name, opts, true
}
