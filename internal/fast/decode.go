// This file defines the fast path of DecodePod: the decoding of the untyped data of a
// document straight into a typed value, with no Starlark values in between and no error
// reports.

package fast

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"math/bits"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/starpod/starpod/internal/jsontag"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/starpod/starpod/internal/bound"
)

// fastMaxDepth bounds the nesting of maps and lists the fast path takes, well below the
// maxDepth at which Decode reports an error.
const fastMaxDepth = 100

// A fastDecoder decodes the untyped data x (map[string]any, []any, string, json.Number, bool,
// nil) into v, a settable zero value of the type it was made for. It reports true only if x
// decodes without error, to exactly what Decode gives for the Starlark value untypedToStarlark
// makes of x. It reports false as soon as anything is off, or x is anything it does not
// handle, leaving v partly set: the caller then decodes x the slow way, for its errors.
type fastDecoder func(s *fastState, x any, v reflect.Value) bool

// fastState is the state of one fast decoding: the nesting depth, scratch space for the JSON
// text passed to UnmarshalJSON methods and, in the decoding of a pod's YAML, the defaults it
// holds.
type fastState struct {
	depth int
	buf   []byte
	space [64]byte
	notes *defaultNotes
}

// A fastType holds the fast decoders of one type: of its untyped data, and of its YAML text
// (see yamlDecoder). Decoders of composite types call those of their parts through it, so
// that a recursive type refers to its own fastType.
type fastType struct {
	dec  fastDecoder
	yaml yamlDecoder
}

var (
	fastCache sync.Map   // map[reflect.Type]*fastType, complete ones only
	fastMu    sync.Mutex // held while fastTypes are made
)

// Decode decodes the untyped JSON data x (map[string]any, []any, string, json.Number, bool,
// nil) into the zero value out points to, to exactly what convert.Decode gives for the
// Starlark value of x, and reports true, if x decodes without error and holds nothing it
// leaves to convert.Decode; otherwise it reports false, leaving *out partly set, and the
// caller decodes x with convert.Decode, for the value or the errors. It reports false when
// Off is set.
func Decode(x any, out any) bool {
	if Off {
		return false
	}
	v := reflect.ValueOf(out).Elem()
	s := new(fastState)
	s.buf = s.space[:0]
	return fastTypeOf(v.Type()).dec(s, x, v)
}

// fastTypeOf returns the fastType of t, making it and those of its parts on first use.
func fastTypeOf(t reflect.Type) *fastType {
	if ft, ok := fastCache.Load(t); ok {
		return ft.(*fastType)
	}
	fastMu.Lock()
	defer fastMu.Unlock()
	making := map[reflect.Type]*fastType{}
	ft := makeFastType(t, making)
	for t, ft := range making {
		fastCache.Store(t, ft)
	}
	return ft
}

// makeFastType returns the fastType of t, from the cache or from making, which holds those
// being made (their dec may not be set yet); otherwise it makes it.
func makeFastType(t reflect.Type, making map[reflect.Type]*fastType) *fastType {
	if ft, ok := fastCache.Load(t); ok {
		return ft.(*fastType)
	}
	if ft, ok := making[t]; ok {
		return ft
	}
	ft := new(fastType)
	making[t] = ft
	ft.dec, ft.yaml = newFastDecoder(t, making)
	if ft.yaml == nil {
		ft.yaml = ft.viaUntyped
	}
	return ft
}

// newFastDecoder returns the fast decoders of t: of untyped data, and of YAML nodes, or nil
// for the types whose nodes it decodes through their untyped data (scalars). It follows the
// choices of newTypeDecoder, and declines all data for the types it does not handle.
func newFastDecoder(t reflect.Type, making map[reflect.Type]*fastType) (fastDecoder, yamlDecoder) {
	if t == quantityType {
		return fastQuantity, nil
	}
	if t.Kind() != reflect.Pointer {
		if reflect.PointerTo(t).Implements(unmarshalerType) {
			if t == intOrStringType {
				return fastIntOrString, nil
			}
			return fastUnmarshaler, nil
		}
		if reflect.PointerTo(t).Implements(textUnmarshalerType) {
			return fastDecline, nil
		}
	}
	switch t.Kind() {
	case reflect.Bool:
		return fastBool, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fastInt, nil
	case reflect.Float64:
		return fastFloat64, nil
	case reflect.String:
		return fastString, yamlString
	case reflect.Struct:
		return newFastStruct(t, making)
	case reflect.Map:
		return newFastMap(t, making)
	case reflect.Slice:
		return newFastSlice(t, making)
	case reflect.Pointer:
		return newFastPtr(t, making)
	}
	// Unsigned ints, float32, interfaces, arrays and the rest: not in pods.
	return fastDecline, nil
}

func fastDecline(*fastState, any, reflect.Value) bool { return false }

// enter notes that the decoding descends into a map or list, and reports whether it may.
func (s *fastState) enter() bool {
	s.depth++
	return s.depth <= fastMaxDepth
}

func (s *fastState) leave() { s.depth-- }

func fastBool(_ *fastState, x any, v reflect.Value) bool {
	switch x := x.(type) {
	case bool:
		v.SetBool(x)
		return true
	case nil:
		return true
	}
	return false
}

func fastString(_ *fastState, x any, v reflect.Value) bool {
	switch x := x.(type) {
	case string:
		v.SetString(x)
		return true
	case nil:
		return true
	}
	return false
}

func fastInt(_ *fastState, x any, v reflect.Value) bool {
	switch x := x.(type) {
	case json.Number:
		i, ok := numberInt(string(x))
		if !ok || v.OverflowInt(i) {
			return false
		}
		v.SetInt(i)
		return true
	case nil:
		return true
	}
	return false
}

func fastFloat64(_ *fastState, x any, v reflect.Value) bool {
	switch x := x.(type) {
	case json.Number:
		i, f, isFloat, ok := parseNumber(string(x))
		if !ok {
			return false
		}
		if !isFloat {
			f = float64(i)
		}
		v.SetFloat(f)
		return true
	case nil:
		return true
	}
	return false
}

// parseNumber reads the text of a JSON number as numberToStarlark does: a float when it has
// a fraction or exponent, otherwise an int. It reports false for text numberToStarlark
// refuses, and for an int beyond int64, which becomes a big Starlark int.
func parseNumber(s string) (i int64, f float64, isFloat, ok bool) {
	if strings.ContainsAny(s, ".eE") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return 0, 0, true, false
		}
		return 0, f, true, true
	}
	i, err := strconv.ParseInt(s, 10, 64)
	return i, 0, false, err == nil
}

// numberInt returns the value of the text of a JSON number that numberToStarlark reads as
// an int of int64 range.
func numberInt(s string) (int64, bool) {
	i, _, isFloat, ok := parseNumber(s)
	return i, ok && !isFloat
}

// A fastStruct decodes a struct type by its fields' decoders.
type fastStruct struct {
	fields *structFields
	types  []*fastType
	noted  noted   // whether its YAML decoder passes its keys to the state's defaultNotes
	slots  []int32 // 1 + the index in fields.list of the name at each slot, or 0 (see field)
}

// newFastStruct returns the fast decoders of the struct type t.
func newFastStruct(t reflect.Type, making map[reflect.Type]*fastType) (fastDecoder, yamlDecoder) {
	fs := &fastStruct{fields: cachedFields(t), noted: notedTypes[t]}
	fs.types = make([]*fastType, len(fs.fields.list))
	fs.slots = make([]int32, 4<<bits.Len(uint(len(fs.fields.list))))
	for i := range fs.fields.list {
		h := fieldHash(fs.fields.list[i].Name)
		for fs.slots[h&uint32(len(fs.slots)-1)] != 0 {
			h++
		}
		fs.slots[h&uint32(len(fs.slots)-1)] = int32(i + 1)
	}
	for i := range fs.fields.list {
		f := &fs.fields.list[i]
		if f.Quoted && !jsontag.HasJSONMethods(f.Type) {
			fs.types[i] = &fastType{dec: fastDecline, yaml: yamlDecline}
		} else {
			fs.types[i] = makeFastType(f.Type, making)
		}
	}
	return fs.decode, fs.decodeYAML
}

func (fs *fastStruct) decode(s *fastState, x any, v reflect.Value) bool {
	m, ok := x.(map[string]any)
	if !ok {
		return x == nil
	}
	if !s.enter() {
		return false
	}
	for k, e := range m {
		i, fv, ok := fs.field(v, k)
		if !ok || !fs.types[i].dec(s, e, fv) {
			return false
		}
	}
	s.leave()
	return true
}

// field returns the field of struct v named key and its index in fs.fields.list; ok is
// false if no field has that name. It finds the name in fs.slots, a hash table of at most a
// quarter of its slots full with linear probing, which costs less than a map's lookup.
func (fs *fastStruct) field(v reflect.Value, key string) (i int, fv reflect.Value, ok bool) {
	mask := uint32(len(fs.slots) - 1)
	for h := fieldHash(key); ; h++ {
		j := fs.slots[h&mask]
		if j == 0 {
			return 0, reflect.Value{}, false
		}
		if i = int(j - 1); fs.fields.list[i].Name == key {
			break
		}
	}
	f := &fs.fields.list[i]
	if len(f.Index) == 1 {
		return i, v.Field(f.Index[0]), true
	}
	fv, ok = fastFieldByIndex(v, f.Index)
	return i, fv, ok
}

// fieldHash returns the hash of a field's name for fastStruct.slots: of its length and
// three of its bytes, which tell the fields of a struct apart well enough.
func fieldHash(name string) uint32 {
	n := len(name)
	if n == 0 {
		return 0
	}
	return (uint32(n)*31+uint32(name[0]))*31 + uint32(name[n/2])*7 + uint32(name[n-1])
}

// fastFieldByIndex returns the field of struct v at index, allocating nil embedded pointers
// on the way, as walker.fieldByIndex does.
func fastFieldByIndex(v reflect.Value, index []int) (reflect.Value, bool) {
	for _, i := range index {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				if !v.CanSet() {
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

func newFastMap(t reflect.Type, making map[reflect.Type]*fastType) (fastDecoder, yamlDecoder) {
	if t == stringMapType {
		return fastStringMap, yamlStringMap
	}
	kt := t.Key()
	if reflect.PointerTo(kt).Implements(textUnmarshalerType) || kt.Kind() != reflect.String {
		return fastDecline, nil
	}
	et := makeFastType(t.Elem(), making)
	dec := func(s *fastState, x any, v reflect.Value) bool {
		m, ok := x.(map[string]any)
		if !ok {
			return x == nil
		}
		if !s.enter() {
			return false
		}
		mv := reflect.MakeMapWithSize(t, len(m))
		key := reflect.New(kt).Elem()
		elem := reflect.New(t.Elem()).Elem()
		for k, e := range m {
			key.SetString(k)
			elem.SetZero()
			if !et.dec(s, e, elem) {
				return false
			}
			mv.SetMapIndex(key, elem)
		}
		v.Set(mv)
		s.leave()
		return true
	}
	return dec, yamlMap(t, et)
}

func fastStringMap(_ *fastState, x any, v reflect.Value) bool {
	m, ok := x.(map[string]any)
	if !ok {
		return x == nil
	}
	out := make(map[string]string, len(m))
	for k, e := range m {
		switch e := e.(type) {
		case string:
			out[k] = e
		case nil:
			out[k] = ""
		default:
			return false
		}
	}
	v.Set(reflect.ValueOf(out))
	return true
}

func newFastSlice(t reflect.Type, making map[reflect.Type]*fastType) (fastDecoder, yamlDecoder) {
	et := makeFastType(t.Elem(), making)
	isBytes := t.Elem().Kind() == reflect.Uint8
	dec := func(s *fastState, x any, v reflect.Value) bool {
		switch x := x.(type) {
		case []any:
			if !s.enter() {
				return false
			}
			n := len(x)
			sv := reflect.MakeSlice(t, n, n)
			for i, e := range x {
				if !et.dec(s, e, sv.Index(i)) {
					return false
				}
			}
			v.Set(sv)
			s.leave()
			return true
		case string:
			if !isBytes {
				return false
			}
			b := make([]byte, base64.StdEncoding.DecodedLen(len(x)))
			n, err := base64.StdEncoding.Decode(b, []byte(x))
			if err != nil {
				return false
			}
			v.SetBytes(b[:n])
			return true
		case nil:
			return true
		}
		return false
	}
	return dec, yamlSlice(t, et, dec)
}

func newFastPtr(t reflect.Type, making map[reflect.Type]*fastType) (fastDecoder, yamlDecoder) {
	et := makeFastType(t.Elem(), making)
	dec := func(s *fastState, x any, v reflect.Value) bool {
		if x == nil {
			return true
		}
		p := reflect.New(t.Elem())
		if !et.dec(s, x, p.Elem()) {
			return false
		}
		v.Set(p)
		return true
	}
	return dec, yamlPtr(t, et)
}

var intOrStringType = reflect.TypeFor[intstr.IntOrString]()

// fastQuantity decodes a resource.Quantity as quantityDecoder does. A string of printable
// ASCII without quotes or backslashes, as quantities are written, is its own JSON text
// between quotes, which UnmarshalJSON would trim and parse: fastQuantity parses it directly.
func fastQuantity(s *fastState, x any, v reflect.Value) bool {
	str, ok := x.(string)
	if !ok || !plainJSONString(str) {
		s.buf = s.buf[:0]
		if !s.appendJSON(x) || bound.Quantity(quantityText(x, s.buf)) != nil {
			return false
		}
		return v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(s.buf) == nil
	}
	text := strings.TrimSpace(str)
	if bound.Quantity(text) != nil {
		return false
	}
	q, err := resource.ParseQuantity(text)
	if err != nil {
		return false
	}
	*v.Addr().Interface().(*resource.Quantity) = q
	return true
}

// plainJSONString reports whether the JSON text of s is s between quotes.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// fastIntOrString decodes an intstr.IntOrString as its UnmarshalJSON method does with the
// JSON text of x: a string of valid UTF-8 reads back as itself, and an int of int32 range as
// itself. Anything else goes through the JSON text.
func fastIntOrString(s *fastState, x any, v reflect.Value) bool {
	p := v.Addr().Interface().(*intstr.IntOrString)
	switch x := x.(type) {
	case string:
		if utf8.ValidString(x) {
			*p = intstr.IntOrString{Type: intstr.String, StrVal: x}
			return true
		}
	case json.Number:
		if i, ok := numberInt(string(x)); ok && i >= math.MinInt32 && i <= math.MaxInt32 {
			*p = intstr.IntOrString{Type: intstr.Int, IntVal: int32(i)}
			return true
		}
	}
	return fastUnmarshaler(s, x, v)
}

// fastUnmarshaler passes the JSON text of x, as unmarshalerDecoder writes it, to the
// UnmarshalJSON method of v's address.
func fastUnmarshaler(s *fastState, x any, v reflect.Value) bool {
	s.buf = s.buf[:0]
	if !s.appendJSON(x) {
		return false
	}
	return v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(s.buf) == nil
}

// appendJSON appends to s.buf the JSON text that walker.appendJSON writes for the Starlark
// value untypedToStarlark makes of x: keys sorted, floats with a fraction or exponent. It
// reports false for data it does not handle, such as ints beyond int64.
func (s *fastState) appendJSON(x any) bool {
	switch x := x.(type) {
	case nil:
		s.buf = append(s.buf, "null"...)
	case bool:
		s.buf = strconv.AppendBool(s.buf, x)
	case string:
		s.buf = jsontag.AppendQuoted(s.buf, x)
	case json.Number:
		i, f, isFloat, ok := parseNumber(string(x))
		switch {
		case !ok:
			return false
		case isFloat:
			n := len(s.buf)
			s.buf = strconv.AppendFloat(s.buf, f, 'g', -1, 64)
			if !bytes.ContainsAny(s.buf[n:], ".e") {
				s.buf = append(s.buf, ".0"...)
			}
		default:
			s.buf = strconv.AppendInt(s.buf, i, 10)
		}
	case map[string]any:
		if !s.enter() {
			return false
		}
		s.buf = append(s.buf, '{')
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				s.buf = append(s.buf, ',')
			}
			s.buf = jsontag.AppendQuoted(s.buf, k)
			s.buf = append(s.buf, ':')
			if !s.appendJSON(x[k]) {
				return false
			}
		}
		s.buf = append(s.buf, '}')
		s.leave()
	case []any:
		if !s.enter() {
			return false
		}
		s.buf = append(s.buf, '[')
		for i, e := range x {
			if i > 0 {
				s.buf = append(s.buf, ',')
			}
			if !s.appendJSON(e) {
				return false
			}
		}
		s.buf = append(s.buf, ']')
		s.leave()
	default:
		return false
	}
	return true
}
