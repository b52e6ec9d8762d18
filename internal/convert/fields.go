// This file defines the tables of a struct type's JSON fields, computed once per type with
// the rules of encoding/json (internal/jsontag) and cached.

package convert

import (
	"encoding"
	"encoding/json"
	"reflect"
	"sync"

	"go.starlark.net/starlark"

	"github.com/starpod/starpod/internal/jsontag"
)

// A structField is one JSON field of a struct type, with its name as a Starlark string.
type structField struct {
	jsontag.Field
	key starlark.Value // Name as a Starlark string, made once
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

// typeFields returns the table of the JSON fields of the struct type t.
func typeFields(t reflect.Type) *structFields {
	fields := jsontag.Fields(t)
	sf := &structFields{
		list:   make([]structField, len(fields)),
		byName: make(map[string]int, len(fields)),
		names:  make([]string, len(fields)),
	}
	for i, f := range fields {
		sf.list[i] = structField{Field: f, key: starlark.String(f.Name)}
		sf.byName[f.Name] = i
		sf.names[i] = f.Name
	}
	return sf
}
