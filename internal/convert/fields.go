// This file defines the tables of a struct type's JSON fields, computed once per type with
// the rules of encoding/json and cached.

package convert

import (
	"cmp"
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/starpod/starpod/internal/jsontag"
	"go.starlark.net/starlark"
)

// A structField is one JSON field of a struct type.
type structField struct {
	name      string
	key       starlark.Value // name as a Starlark string, made once
	index     []int          // reflect field index sequence, through embedded structs
	typ       reflect.Type   // the field's type
	tagged    bool           // name came from a json tag
	omitEmpty bool
	omitZero  bool
	isZero    func(reflect.Value) bool // for omitzero; nil means reflect.Value.IsZero
	quoted    bool                     // the ",string" option applies
}

// structFields is the table of a struct type's JSON fields in encoding order.
type structFields struct {
	list   []structField
	byName map[string]int // index into list, by exact name
	names  []string       // for did-you-mean hints
}

var fieldCache sync.Map // map[reflect.Type]*structFields

var (
	marshalerType       = reflect.TypeFor[json.Marshaler]()
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textMarshalerType   = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// cachedFields returns the JSON fields of the struct type t.
func cachedFields(t reflect.Type) *structFields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*structFields)
	}
	f, _ := fieldCache.LoadOrStore(t, typeFields(t))
	return f.(*structFields)
}

// typeFields returns the JSON fields of the struct type t, following the rules of
// encoding/json: exported fields and the fields of embedded structs, names from json tags,
// "-" skipped, and for a name found more than once the shallowest field wins, a tagged one
// over an untagged one at the same depth, and none when still ambiguous.
func typeFields(t reflect.Type) *structFields {
	type queued struct {
		typ   reflect.Type
		index []int
	}
	var current []queued
	next := []queued{{typ: t}}
	var count, nextCount map[reflect.Type]int
	visited := map[reflect.Type]bool{}
	var fields []structField

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
				name, opts, ok := jsontag.Parse(sf)
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
					if jsontag.HasOption(opts, "string") {
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
					field := structField{
						name:      name,
						key:       starlark.String(name),
						index:     index,
						typ:       sf.Type,
						tagged:    tagged,
						omitEmpty: jsontag.HasOption(opts, "omitempty"),
						omitZero:  jsontag.HasOption(opts, "omitzero"),
						quoted:    quoted,
					}
					if field.omitZero {
						field.isZero = jsontag.ZeroFunc(sf.Type)
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

	slices.SortFunc(fields, func(a, b structField) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := cmp.Compare(len(a.index), len(b.index)); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return +1
		}
		return slices.Compare(a.index, b.index)
	})

	// Keep the one dominant field of each name.
	out := fields[:0]
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		if j-i == 1 || len(fields[i].index) != len(fields[i+1].index) || fields[i].tagged != fields[i+1].tagged {
			out = append(out, fields[i])
		}
		i = j
	}
	fields = out
	slices.SortFunc(fields, func(a, b structField) int { return slices.Compare(a.index, b.index) })

	sf := &structFields{
		list:   fields,
		byName: make(map[string]int, len(fields)),
		names:  make([]string, len(fields)),
	}
	for i, f := range fields {
		sf.byName[f.name] = i
		sf.names[i] = f.name
	}
	return sf
}
