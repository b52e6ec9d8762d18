// This file defines the decoders of maps, slices, arrays and pointers of Decode.

package convert

import (
	"encoding/base64"
	"reflect"
	"strconv"

	"go.starlark.net/starlark"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

type mapDecoder struct {
	typ     reflect.Type
	key     func(w *walker, k string) (reflect.Value, bool) // nil for string kinds
	elemDec decoderFunc
}

func newMapDecoder(t reflect.Type) decoderFunc {
	if t == stringMapType {
		return stringMapDecoder
	}
	md := &mapDecoder{typ: t, elemDec: typeDecoder(t.Elem())}
	kt := t.Key()
	switch {
	case reflect.PointerTo(kt).Implements(textUnmarshalerType):
		md.key = func(w *walker, k string) (reflect.Value, bool) {
			kv := reflect.New(kt)
			if err := kv.Interface().(interface{ UnmarshalText([]byte) error }).UnmarshalText([]byte(k)); err != nil {
				w.errs = append(w.errs, field.Invalid(w.path(), k, err.Error()))
				return reflect.Value{}, false
			}
			return kv.Elem(), true
		}
	case kt.Kind() == reflect.String:
		md.key = nil // set in place by decode
	case kt.Kind() >= reflect.Int && kt.Kind() <= reflect.Int64:
		md.key = func(w *walker, k string) (reflect.Value, bool) {
			n, err := strconv.ParseInt(k, 10, 64)
			kv := reflect.New(kt).Elem()
			if err != nil || kv.OverflowInt(n) {
				w.invalid("got key %q, want %s", k, kt.Kind())
				return reflect.Value{}, false
			}
			kv.SetInt(n)
			return kv, true
		}
	case kt.Kind() >= reflect.Uint && kt.Kind() <= reflect.Uintptr:
		md.key = func(w *walker, k string) (reflect.Value, bool) {
			n, err := strconv.ParseUint(k, 10, 64)
			kv := reflect.New(kt).Elem()
			if err != nil || kv.OverflowUint(n) {
				w.invalid("got key %q, want %s", k, kt.Kind())
				return reflect.Value{}, false
			}
			kv.SetUint(n)
			return kv, true
		}
	default:
		return func(w *walker, x starlark.Value, v reflect.Value) {
			if x == starlark.None {
				w.add(4)
				v.SetZero()
				return
			}
			w.invalid("got %s, cannot decode into Go value of type %s", x.Type(), t)
		}
	}
	return md.decode
}

// enterDict starts the decoding of x into the map v: it checks that x is a dict (None sets v
// to nil), counts its size and checks it for cycles. It reports whether to go on; if so,
// the caller must call w.leave after.
func (w *walker) enterDict(x starlark.Value, v reflect.Value) (*starlark.Dict, bool) {
	d, ok := x.(*starlark.Dict)
	if !ok {
		if x == starlark.None {
			w.add(4)
			v.SetZero()
			return nil, false
		}
		w.typeInvalid(x, "dict")
		w.skip(x)
		return nil, false
	}
	w.addDict(d.Len())
	if !w.enter(d) {
		return nil, false
	}
	return d, true
}

// mapKey checks the key of a dict entry, counts its size with the colon and returns it.
func (w *walker) mapKey(k starlark.Value) (string, bool) {
	s, ok := k.(starlark.String)
	if !ok {
		w.invalid("got %s key, want string", k.Type())
		return "", false
	}
	w.addString(string(s))
	w.add(1)
	return string(s), true
}

func (md *mapDecoder) decode(w *walker, x starlark.Value, v reflect.Value) {
	d, ok := w.enterDict(x, v)
	if !ok {
		return
	}
	defer w.leave()
	if v.IsNil() {
		v.Set(reflect.MakeMapWithSize(md.typ, d.Len()))
	}
	elem := reflect.New(md.typ.Elem()).Elem()
	var key reflect.Value // reused by string keys
	if md.key == nil {
		key = reflect.New(md.typ.Key()).Elem()
	}
	w.entries(d, dictVisit{entry: decodeMapEntry, data: md, v: v, key: key, elem: elem})
}

// decodeMapEntry decodes the entry k: x of a dict into the map dv.v, whose decoder is dv.data,
// through the variables dv.key (for string keys) and dv.elem.
func decodeMapEntry(w *walker, dv *dictVisit, k, x starlark.Value) {
	md := dv.data.(*mapDecoder)
	ks, ok := w.mapKey(k)
	if !ok {
		return
	}
	w.pushKey(ks)
	kv := dv.key
	if md.key == nil {
		kv.SetString(ks)
	} else {
		kv, ok = md.key(w, ks)
	}
	if ok {
		dv.elem.SetZero()
		md.elemDec(w, x, dv.elem)
		dv.v.SetMapIndex(kv, dv.elem)
	} else {
		w.skip(x)
	}
	w.pop()
}

func stringMapDecoder(w *walker, x starlark.Value, v reflect.Value) {
	d, ok := w.enterDict(x, v)
	if !ok {
		return
	}
	defer w.leave()
	m := make(map[string]string, d.Len())
	w.entries(d, dictVisit{entry: decodeStringMapEntry, data: m})
	v.Set(reflect.ValueOf(m))
}

// decodeStringMapEntry decodes the entry k: x of a dict into the map[string]string dv.data.
func decodeStringMapEntry(w *walker, dv *dictVisit, k, x starlark.Value) {
	ks, ok := w.mapKey(k)
	if !ok {
		return
	}
	m := dv.data.(map[string]string)
	switch x := x.(type) {
	case starlark.String:
		w.addString(string(x))
		m[ks] = string(x)
	case starlark.NoneType:
		w.add(4)
		m[ks] = ""
	default:
		w.pushKey(ks)
		w.scalarTypeInvalid(x, "string")
		w.pop()
	}
}

// enterList returns x as an Indexable if it is a list or tuple, counting its brackets and
// commas and checking it for cycles; None sets the slice v to nil. If it reports true, the
// caller must call leaveList after.
func (w *walker) enterList(x starlark.Value, v reflect.Value) (starlark.Indexable, bool) {
	switch x := x.(type) {
	case *starlark.List:
		w.addList(x.Len())
		if !w.enter(x) {
			return nil, false
		}
		return x, true
	case starlark.Tuple:
		w.addList(len(x))
		if !w.enter(x) {
			return nil, false
		}
		return x, true
	case starlark.NoneType:
		w.add(4)
		if v.Kind() == reflect.Slice {
			v.SetZero()
		}
		return nil, false
	}
	w.typeInvalid(x, "list")
	w.skip(x)
	return nil, false
}

func (w *walker) leaveList(starlark.Indexable) { w.leave() }

func newSliceDecoder(t reflect.Type) decoderFunc {
	elemDec := typeDecoder(t.Elem())
	isBytes := t.Elem().Kind() == reflect.Uint8
	return func(w *walker, x starlark.Value, v reflect.Value) {
		if s, ok := x.(starlark.String); ok && isBytes {
			w.addString(string(s))
			b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
			n, err := base64.StdEncoding.Decode(b, []byte(s))
			if err != nil {
				w.invalid("got invalid base64 string: %v", err)
				return
			}
			v.SetBytes(b[:n])
			return
		}
		l, ok := w.enterList(x, v)
		if !ok {
			return
		}
		n := l.Len()
		s := reflect.MakeSlice(t, n, n)
		for i := range n {
			w.pushIndex(i)
			elemDec(w, l.Index(i), s.Index(i))
			w.pop()
		}
		v.Set(s)
		w.leaveList(l)
	}
}

func newArrayDecoder(t reflect.Type) decoderFunc {
	elemDec := typeDecoder(t.Elem())
	return func(w *walker, x starlark.Value, v reflect.Value) {
		l, ok := w.enterList(x, v)
		if !ok {
			return
		}
		for i := range l.Len() {
			w.pushIndex(i)
			if i < v.Len() {
				elemDec(w, l.Index(i), v.Index(i))
			} else {
				w.skip(l.Index(i))
			}
			w.pop()
		}
		w.leaveList(l)
	}
}

func newPtrDecoder(t reflect.Type) decoderFunc {
	elemDec := typeDecoder(t.Elem())
	return func(w *walker, x starlark.Value, v reflect.Value) {
		if x == starlark.None {
			w.add(4)
			v.SetZero()
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		elemDec(w, x, v.Elem())
	}
}
