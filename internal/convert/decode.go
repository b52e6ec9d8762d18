// This file defines Decode: the strict decoding of Starlark values into typed Go values with
// the rules of strict JSON decoding (sigs.k8s.io/json).

package convert

import (
	"bytes"
	"encoding/json"
	"github.com/starpod/starpod/internal/jsontag"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"go.starlark.net/starlark"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/starpod/starpod/internal/bound"
)

// A decoderFunc decodes x into v, a settable value of the type it was made for, recording
// errors in the walker.
type decoderFunc func(w *walker, x starlark.Value, v reflect.Value)

func decode(x starlark.Value, out any, path *field.Path, opts *Options) (field.ErrorList, error) {
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		panic("convert.Decode: out must be a non-nil pointer, got " + reflect.TypeOf(out).String())
	}
	v := rv.Elem()
	v.SetZero()
	w := newWalker(path)
	defer w.release()
	if opts != nil {
		w.limit = opts.MaxBytes
	}
	if err := w.decode(typeDecoder(v.Type()), x, v); err != nil {
		return nil, err
	}
	return w.errs, nil
}

var decoderCache sync.Map // map[reflect.Type]decoderFunc

// typeDecoder returns the decoder of type t, making and caching it on first use.
func typeDecoder(t reflect.Type) decoderFunc {
	if f, ok := decoderCache.Load(t); ok {
		return f.(decoderFunc)
	}
	var (
		wg sync.WaitGroup
		f  decoderFunc
	)
	wg.Add(1)
	fi, loaded := decoderCache.LoadOrStore(t, decoderFunc(func(w *walker, x starlark.Value, v reflect.Value) {
		wg.Wait()
		f(w, x, v)
	}))
	if loaded {
		return fi.(decoderFunc)
	}
	f = newTypeDecoder(t)
	wg.Done()
	decoderCache.Store(t, f)
	return f
}

func newTypeDecoder(t reflect.Type) decoderFunc {
	if t == quantityType {
		return quantityDecoder
	}
	if t.Kind() != reflect.Pointer {
		if reflect.PointerTo(t).Implements(unmarshalerType) {
			return unmarshalerDecoder
		}
		if reflect.PointerTo(t).Implements(textUnmarshalerType) {
			return textUnmarshalerDecoder
		}
	}
	switch t.Kind() {
	case reflect.Bool:
		return boolDecoder
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return intDecoder
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return uintDecoder
	case reflect.Float32, reflect.Float64:
		return floatDecoder
	case reflect.String:
		return stringDecoder
	case reflect.Interface:
		if t.NumMethod() == 0 {
			return interfaceDecoder
		}
	case reflect.Struct:
		return newStructDecoder(t)
	case reflect.Map:
		return newMapDecoder(t)
	case reflect.Slice:
		return newSliceDecoder(t)
	case reflect.Array:
		return newArrayDecoder(t)
	case reflect.Pointer:
		return newPtrDecoder(t)
	}
	return func(w *walker, x starlark.Value, v reflect.Value) {
		if x == starlark.None {
			w.add(4)
			if t.Kind() == reflect.Interface {
				v.SetZero()
			}
			return
		}
		w.invalid("got %s, cannot decode into Go value of type %s", x.Type(), t)
	}
}

// unmarshalerDecoder passes the JSON text of x to the UnmarshalJSON method of v's address.
// None passes JSON null, as encoding/json does for a non-pointer field.
func unmarshalerDecoder(w *walker, x starlark.Value, v reflect.Value) {
	if w.bufferJSON(x) {
		w.unmarshalJSON(x, v)
	}
}

var quantityType = reflect.TypeFor[resource.Quantity]()

// quantityDecoder decodes a resource.Quantity as unmarshalerDecoder does, once bound.Quantity
// has checked the text that its UnmarshalJSON passes to resource.ParseQuantity, which takes
// time that grows with the digits and the exponent of the text, and never returns for some
// ("9e2147483647").
func quantityDecoder(w *walker, x starlark.Value, v reflect.Value) {
	if !w.bufferJSON(x) {
		return
	}
	if err := bound.Quantity(quantityText(x, w.buf)); err != nil {
		var bad any = noValue
		if s, ok := x.(starlark.String); ok && len(s) <= bound.MaxQuantityLen {
			bad = string(s)
		}
		w.errs = append(w.errs, field.Invalid(w.path(), bad, err.Error()))
		return
	}
	w.unmarshalJSON(x, v)
}

// quantityText returns the text that resource.Quantity's UnmarshalJSON passes to
// resource.ParseQuantity for the JSON text of x: without its quotes and its surrounding
// spaces. It copies no bytes for a string written without escapes, as most are.
func quantityText(x starlark.Value, text []byte) string {
	if s, ok := x.(starlark.String); ok && len(text) == len(s)+2 {
		return strings.TrimSpace(string(s))
	}
	if n := len(text); n >= 2 && text[0] == '"' && text[n-1] == '"' {
		text = text[1 : n-1]
	}
	return string(bytes.TrimSpace(text))
}

// bufferJSON writes the JSON text of x to w.buf, reporting false if x has no JSON text.
// UnmarshalJSON must copy the bytes it keeps, so the buffer is reused.
func (w *walker) bufferJSON(x starlark.Value) bool {
	nerrs := len(w.errs)
	w.buf = w.buf[:0]
	w.appendJSON(x)
	return len(w.errs) == nerrs
}

// unmarshalJSON passes w.buf, the JSON text of x, to the UnmarshalJSON method of v's address.
func (w *walker) unmarshalJSON(x starlark.Value, v reflect.Value) {
	u := v.Addr().Interface().(json.Unmarshaler)
	if err := u.UnmarshalJSON(w.buf); err != nil {
		var bad any = noValue
		switch x := x.(type) {
		case starlark.String:
			bad = string(x)
		case starlark.Int:
			if i, ok := x.Int64(); ok {
				bad = i
			}
		}
		w.errs = append(w.errs, field.Invalid(w.path(), bad, err.Error()))
	}
}

// textUnmarshalerDecoder passes a string to the UnmarshalText method of v's address.
func textUnmarshalerDecoder(w *walker, x starlark.Value, v reflect.Value) {
	switch x := x.(type) {
	case starlark.NoneType:
		w.add(4)
	case starlark.String:
		w.addString(string(x))
		u := v.Addr().Interface().(interface{ UnmarshalText([]byte) error })
		if err := u.UnmarshalText([]byte(x)); err != nil {
			w.errs = append(w.errs, field.Invalid(w.path(), string(x), err.Error()))
		}
	default:
		w.scalarTypeInvalid(x, "string")
	}
}

// scalarTypeInvalid records a type error for x where a scalar was wanted, counting the size
// of x (and checking it for cycles) as the rest of the walk would have.
func (w *walker) scalarTypeInvalid(x starlark.Value, want string) {
	w.typeInvalid(x, want)
	w.skip(x)
}

// skip counts the size of a value that is not decoded (such as the value of an unknown
// field), when there is a size limit.
func (w *walker) skip(x starlark.Value) {
	if w.limit == 0 {
		return
	}
	switch x := x.(type) {
	case starlark.NoneType:
		w.add(4)
	case starlark.Bool:
		w.add(5)
	case starlark.String:
		w.addString(string(x))
	case starlark.Int:
		if i, ok := x.Int64(); ok {
			w.addInt(i)
		} else {
			w.add(int64(len(x.String())))
		}
	case starlark.Float:
		w.addFloat(float64(x))
	case *starlark.Dict:
		if w.onPath(x) {
			return
		}
		w.addDict(x.Len())
		w.seen = append(w.seen, x)
		w.entries(x, dictVisit{entry: skipEntry})
		w.leave()
	case *starlark.List:
		if w.onPath(x) {
			return
		}
		w.addList(x.Len())
		w.seen = append(w.seen, x)
		for i := range x.Len() {
			w.pushIndex(i)
			w.skip(x.Index(i))
			w.pop()
		}
		w.leave()
	case starlark.Tuple:
		if w.onPath(x) {
			return
		}
		w.addList(len(x))
		w.seen = append(w.seen, x)
		for i, v := range x {
			w.pushIndex(i)
			w.skip(v)
			w.pop()
		}
		w.leave()
	}
}

// skipEntry counts the size of the entry k: x of a dict that is not decoded.
func skipEntry(w *walker, _ *dictVisit, k, x starlark.Value) {
	w.add(1) // the colon
	w.skip(k)
	if ks, ok := k.(starlark.String); ok {
		w.pushKey(string(ks))
	} else {
		w.pushKey(k.String())
	}
	w.skip(x)
	w.pop()
}

// onPath reports whether the container x is being visited, or the walk is too deep.
func (w *walker) onPath(x starlark.Value) bool {
	if len(w.seen) >= maxDepth {
		return true
	}
	if _, ok := x.(starlark.Tuple); ok {
		return false
	}
	for _, s := range w.seen {
		if s == x {
			return true
		}
	}
	return false
}

func boolDecoder(w *walker, x starlark.Value, v reflect.Value) {
	switch x := x.(type) {
	case starlark.Bool:
		if x {
			w.add(4)
		} else {
			w.add(5)
		}
		v.SetBool(bool(x))
	case starlark.NoneType:
		w.add(4)
	default:
		w.scalarTypeInvalid(x, "bool")
	}
}

func stringDecoder(w *walker, x starlark.Value, v reflect.Value) {
	switch x := x.(type) {
	case starlark.String:
		w.addString(string(x))
		v.SetString(string(x))
	case starlark.NoneType:
		w.add(4)
	default:
		w.scalarTypeInvalid(x, "string")
	}
}

func intDecoder(w *walker, x starlark.Value, v reflect.Value) {
	switch x := x.(type) {
	case starlark.Int:
		i, ok := x.Int64()
		if !ok || v.OverflowInt(i) {
			w.skip(x)
			w.invalid("got %s, want %s", x, v.Kind())
			return
		}
		w.addInt(i)
		v.SetInt(i)
	case starlark.Float:
		w.skip(x)
		w.invalid("got float, want int")
	case starlark.NoneType:
		w.add(4)
	default:
		w.scalarTypeInvalid(x, "int")
	}
}

func uintDecoder(w *walker, x starlark.Value, v reflect.Value) {
	switch x := x.(type) {
	case starlark.Int:
		u, ok := x.Uint64()
		if !ok || v.OverflowUint(u) {
			w.skip(x)
			w.invalid("got %s, want %s", x, v.Kind())
			return
		}
		w.skip(x)
		v.SetUint(u)
	case starlark.Float:
		w.skip(x)
		w.invalid("got float, want int")
	case starlark.NoneType:
		w.add(4)
	default:
		w.scalarTypeInvalid(x, "int")
	}
}

func floatDecoder(w *walker, x starlark.Value, v reflect.Value) {
	var f float64
	switch x := x.(type) {
	case starlark.Float:
		if !w.finite(x) {
			return
		}
		f = float64(x)
		if v.Kind() == reflect.Float32 {
			// Round the shortest decimal form once, as JSON decoding does.
			f, _ = strconv.ParseFloat(strconv.FormatFloat(f, 'g', -1, 64), 32)
		}
	case starlark.Int:
		if v.Kind() == reflect.Float32 {
			f, _ = strconv.ParseFloat(x.String(), 32)
		} else {
			f = float64(x.Float())
		}
		if math.IsInf(f, 0) {
			w.skip(x)
			w.invalid("got %s, want %s", x, v.Kind())
			return
		}
	case starlark.NoneType:
		w.add(4)
		return
	default:
		w.scalarTypeInvalid(x, "float")
		return
	}
	if math.IsInf(f, 0) || v.OverflowFloat(f) {
		w.skip(x)
		w.invalid("got %s, want %s", x, v.Kind())
		return
	}
	w.skip(x)
	v.SetFloat(f)
}

// interfaceDecoder decodes into an empty interface the untyped JSON data that strict JSON
// decoding gives: integers as int64 (float64 beyond int64), other numbers as float64.
func interfaceDecoder(w *walker, x starlark.Value, v reflect.Value) {
	g := bigToFloat(w.toGo(x))
	if g == nil {
		v.SetZero()
		return
	}
	v.Set(reflect.ValueOf(g))
}

func bigToFloat(g any) any {
	switch g := g.(type) {
	case *big.Int:
		f, _ := new(big.Float).SetInt(g).Float64()
		return f
	case []any:
		for i, e := range g {
			g[i] = bigToFloat(e)
		}
	case map[string]any:
		for k, e := range g {
			g[k] = bigToFloat(e)
		}
	}
	return g
}

// appendJSON appends the JSON text of x to w.buf, recording errors for values JSON cannot
// hold. Floats keep a fraction or exponent, so 1.0 stays a float as in Starlark's json.encode.
func (w *walker) appendJSON(x starlark.Value) {
	switch x := x.(type) {
	case starlark.NoneType:
		w.add(4)
		w.buf = append(w.buf, "null"...)
	case starlark.Bool:
		if x {
			w.add(4)
			w.buf = append(w.buf, "true"...)
		} else {
			w.add(5)
			w.buf = append(w.buf, "false"...)
		}
	case starlark.String:
		w.addString(string(x))
		w.buf = jsontag.AppendQuoted(w.buf, string(x))
	case starlark.Int:
		if i, ok := x.Int64(); ok {
			w.addInt(i)
			w.buf = strconv.AppendInt(w.buf, i, 10)
		} else {
			w.skip(x)
			w.buf = x.BigInt().Append(w.buf, 10)
		}
	case starlark.Float:
		if !w.finite(x) {
			return
		}
		w.addFloat(float64(x))
		n := len(w.buf)
		w.buf = strconv.AppendFloat(w.buf, float64(x), 'g', -1, 64)
		if !bytes.ContainsAny(w.buf[n:], ".e") {
			w.buf = append(w.buf, ".0"...)
		}
	case *starlark.Dict:
		w.addDict(x.Len())
		if !w.enter(x) {
			return
		}
		w.buf = append(w.buf, '{')
		w.entries(x, dictVisit{entry: appendJSONEntry})
		w.leave()
		w.buf = append(w.buf, '}')
	case *starlark.List, starlark.Tuple:
		l, _ := w.enterList(x, reflect.Value{})
		if l == nil {
			return
		}
		w.buf = append(w.buf, '[')
		for i := range l.Len() {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			w.pushIndex(i)
			w.appendJSON(l.Index(i))
			w.pop()
		}
		w.leaveList(l)
		w.buf = append(w.buf, ']')
	default:
		w.typeInvalid(x, "dict, list, string, int, float, bool or None")
	}
}

// appendJSONEntry appends the entry k: x of a dict to the JSON object in w.buf.
func appendJSONEntry(w *walker, _ *dictVisit, k, x starlark.Value) {
	ks, ok := w.mapKey(k)
	if !ok {
		return
	}
	if w.buf[len(w.buf)-1] != '{' {
		w.buf = append(w.buf, ',')
	}
	w.buf = jsontag.AppendQuoted(w.buf, ks)
	w.buf = append(w.buf, ':')
	w.pushKey(ks)
	w.appendJSON(x)
	w.pop()
}
