// This file defines the decoder of structs of Decode, and of their fields with the ",string"
// option.

package convert

import (
	"encoding/json"
	"reflect"
	"sync"

	"go.starlark.net/starlark"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/starpod/starpod/internal/jsontag"
	"github.com/starpod/starpod/internal/spell"
)

// A structDecoder decodes a struct. As a structEncoder, it finds its fields, and makes the
// decoders of their types, when it first decodes one.
type structDecoder struct {
	t      reflect.Type
	once   sync.Once
	fields *structFields
	decs   []decoderFunc
}

func newStructDecoder(t reflect.Type) decoderFunc {
	sd := &structDecoder{t: t}
	return sd.decode
}

// init finds the fields of sd's struct and makes their decoders.
func (sd *structDecoder) init() {
	sd.fields = cachedFields(sd.t)
	sd.decs = make([]decoderFunc, len(sd.fields.list))
	for i := range sd.fields.list {
		f := &sd.fields.list[i]
		if f.Quoted && !jsontag.HasJSONMethods(f.Type) {
			sd.decs[i] = quotedDecoder
		} else {
			sd.decs[i] = typeDecoder(f.Type)
		}
	}
}

func (sd *structDecoder) decode(w *walker, x starlark.Value, v reflect.Value) {
	sd.once.Do(sd.init)
	d, ok := x.(*starlark.Dict)
	if !ok {
		if x == starlark.None {
			w.add(4)
			return
		}
		w.typeInvalid(x, "dict")
		w.skip(x)
		return
	}
	w.addDict(d.Len())
	if !w.enter(d) {
		return
	}
	w.entries(d, dictVisit{entry: decodeStructEntry, data: sd, v: v})
	w.leave()
}

// decodeStructEntry decodes the entry k: x of a dict into the field named k of the struct dv.v,
// whose decoder is dv.data.
func decodeStructEntry(w *walker, dv *dictVisit, k, x starlark.Value) {
	sd := dv.data.(*structDecoder)
	name, ok := w.mapKey(k)
	if !ok {
		return
	}
	i, ok := sd.fields.byName[name]
	if !ok {
		w.pushChild(name)
		detail := "unknown field"
		if hint := spell.Nearest(name, sd.fields.names); hint != "" {
			detail += `; did you mean "` + hint + `"?`
		}
		w.errs = append(w.errs, field.Forbidden(w.path(), detail))
		w.skip(x)
		w.pop()
		return
	}
	f := &sd.fields.list[i]
	w.pushChild(f.Name)
	if fv, ok := w.fieldByIndex(dv.v, f.Index); ok {
		sd.decs[i](w, x, fv)
	}
	w.pop()
}

// fieldByIndex returns the field of struct v at index, allocating nil embedded pointers on
// the way.
func (w *walker) fieldByIndex(v reflect.Value, index []int) (reflect.Value, bool) {
	for _, i := range index {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				if !v.CanSet() {
					w.invalid("cannot set embedded pointer to unexported struct %s", v.Type().Elem())
					return reflect.Value{}, false
				}
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(i)
	}
	return v, true
}

// quotedDecoder decodes a field with the ",string" option: a string holding the JSON text
// of the value.
func quotedDecoder(w *walker, x starlark.Value, v reflect.Value) {
	switch x := x.(type) {
	case starlark.NoneType:
		w.add(4)
		if v.Kind() == reflect.Pointer {
			v.SetZero()
		}
	case starlark.String:
		w.addString(string(x))
		if err := json.Unmarshal([]byte(x), v.Addr().Interface()); err != nil {
			w.errs = append(w.errs, field.Invalid(w.path(), string(x), "invalid use of ,string struct tag: "+err.Error()))
		}
	default:
		w.scalarTypeInvalid(x, "string")
	}
}
