// Package jsontag holds encoding/json's rules for the json tags of struct fields: which names
// are valid, which options a tag has, and when the omitempty and omitzero options leave a
// field out. Both of starpod's reflective walkers of typed values (internal/convert, to and
// from Starlark values; internal/stream, printing YAML) follow them.
package jsontag

import (
	"cmp"
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// HasJSONMethods reports whether t, or what it points to, has a JSON or text form of its
// own (json.Marshaler, json.Unmarshaler, encoding.TextMarshaler, encoding.TextUnmarshaler),
// which the ",string" option of a tag does not change.
func HasJSONMethods(t reflect.Type) bool {
	for {
		p := reflect.PointerTo(t)
		if p.Implements(marshalerType) || p.Implements(textMarshalerType) ||
			p.Implements(unmarshalerType) || p.Implements(textUnmarshalerType) {
			return true
		}
		if t.Kind() != reflect.Pointer {
			return false
		}
		t = t.Elem()
	}
}

var (
	marshalerType       = reflect.TypeFor[json.Marshaler]()
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textMarshalerType   = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
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

// A Field is one JSON field of a struct type, as encoding/json resolves it.
type Field struct {
	Name      string
	Index     []int        // the reflect field index sequence, through embedded structs
	Type      reflect.Type // the field's type
	Tagged    bool         // Name came from a json tag
	OmitEmpty bool
	OmitZero  bool
	IsZero    func(reflect.Value) bool // for omitzero; nil means reflect.Value.IsZero
	Quoted    bool                     // the ",string" option applies
}

// Fields returns the JSON fields of the struct type t in encoding order, following the rules
// of encoding/json: exported fields and the fields of embedded structs, names from json tags,
// "-" skipped, and for a name found more than once the shallowest field wins, a tagged one
// over an untagged one at the same depth, and none when still ambiguous.
func Fields(t reflect.Type) []Field {
	type queued struct {
		typ   reflect.Type
		index []int
	}
	var current []queued
	next := []queued{{typ: t}}
	var count, nextCount map[reflect.Type]int
	visited := map[reflect.Type]bool{}
	var fields []Field

	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}

		for _, f := range current {
			if visited[f.typ] {
				continue
			}
			visited[f.typ] = true

			for i := range f.typ.NumField() {
				sf := f.typ.Field(i)
				name, opts, ok := Parse(sf)
				if !ok {
					continue
				}
				index := append(slices.Clip(f.index), i)

				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}

				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					quoted := false
					if HasOption(opts, "string") {
						switch ft.Kind() {
						case reflect.Bool,
							reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
							reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
							reflect.Float32, reflect.Float64,
							reflect.String:
							quoted = true
						}
					}
					tagged := name != ""
					if name == "" {
						name = sf.Name
					}
					field := Field{
						Name:      name,
						Index:     index,
						Type:      sf.Type,
						Tagged:    tagged,
						OmitEmpty: HasOption(opts, "omitempty"),
						OmitZero:  HasOption(opts, "omitzero"),
						Quoted:    quoted,
					}
					if field.OmitZero {
						field.IsZero = ZeroFunc(sf.Type)
					}
					fields = append(fields, field)
					if count[f.typ] > 1 {
						// Several embedded structs of the same type at this depth: add a
						// duplicate so that the field is dropped as ambiguous below.
						fields = append(fields, fields[len(fields)-1])
					}
					continue
				}

				// An untagged embedded struct: explore its fields at the next depth.
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, queued{typ: ft, index: index})
				}
			}
		}
	}

	slices.SortFunc(fields, func(a, b Field) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		if c := cmp.Compare(len(a.Index), len(b.Index)); c != 0 {
			return c
		}
		if a.Tagged != b.Tagged {
			if a.Tagged {
				return -1
			}
			return +1
		}
		return slices.Compare(a.Index, b.Index)
	})

	// Keep the one dominant field of each name.
	out := fields[:0]
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].Name == fields[i].Name {
			j++
		}
		if j-i == 1 || len(fields[i].Index) != len(fields[i+1].Index) || fields[i].Tagged != fields[i+1].Tagged {
			out = append(out, fields[i])
		}
		i = j
	}
	fields = out
	slices.SortFunc(fields, func(a, b Field) int { return slices.Compare(a.Index, b.Index) })

	return fields
}

// AppendQuoted appends s as a JSON string. Invalid UTF-8 becomes U+FFFD.
func AppendQuoted(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}
