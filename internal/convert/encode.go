// This file defines ToStarlark: the conversion of typed Go values to Starlark values with the
// rules of encoding/json.

package convert

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/starpod/starpod/internal/jsontag"
	"go.starlark.net/starlark"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// An encoder holds the state of one ToStarlark call.
type encoder struct {
	arena      arena
	pending    []entry    // dict entries of the structs being encoded, innermost last
	mapPending []mapEntry // entries of the maps being encoded, innermost last
	keys       []string   // scratch space for the keys of a map[string]string
	depth      int
}

type entry struct{ k, v starlark.Value }

// An encoderFunc converts v, a value of the type it was made for, to a Starlark value.
type encoderFunc func(e *encoder, v reflect.Value) (starlark.Value, error)

// An encodeError is an error from ToStarlark, with its path built as it propagates out.
type encodeError struct {
	rpath  []pathElem // innermost first
	detail string
}

func (e *encodeError) Error() string { return e.detail }

// at returns err with elem added to the outer end of its path.
func at(err error, elem pathElem) error {
	ee := err.(*encodeError)
	ee.rpath = append(ee.rpath, elem)
	return ee
}

func encodeErrorf(format string, args ...any) error {
	return &encodeError{detail: fmt.Sprintf(format, args...)}
}

var encoderPool = sync.Pool{New: func() any { return new(encoder) }}

func toStarlark(v any) (starlark.Value, error) {
	if v == nil {
		return starlark.None, nil
	}
	e := encoderPool.Get().(*encoder)
	x, err := e.convert(v)
	e.arena.reset()
	encoderPool.Put(e)
	return x, err
}

// recyclingPool holds encoders with recycling arenas, for toStarlarkRecycled.
var recyclingPool = sync.Pool{New: func() any { return &encoder{arena: arena{recycler: new(recycler)}} }}

func toStarlarkRecycled(v any) (starlark.Value, func(), error) {
	if v == nil {
		return starlark.None, func() {}, nil
	}
	e := recyclingPool.Get().(*encoder)
	release := func() {
		if e != nil {
			e.arena.recycle()
			recyclingPool.Put(e)
			e = nil
		}
	}
	x, err := e.convert(v)
	if err != nil {
		release()
		return nil, nil, err
	}
	return x, release, nil
}

// convert converts v with e, whose arena it leaves as it is.
func (e *encoder) convert(v any) (starlark.Value, error) {
	rv := reflect.ValueOf(v)
	x, err := typeEncoder(rv.Type())(e, rv)
	clear(e.pending[:cap(e.pending)])
	e.pending = e.pending[:0]
	clear(e.mapPending[:cap(e.mapPending)])
	e.mapPending = e.mapPending[:0]
	e.depth = 0
	if err != nil {
		ee := err.(*encodeError)
		var p *field.Path
		for _, elem := range slices.Backward(ee.rpath) {
			switch elem.kind {
			case childElem:
				p = p.Child(elem.name)
			case indexElem:
				p = p.Index(elem.index)
			case keyElem:
				p = p.Key(elem.name)
			}
		}
		return nil, field.Invalid(p, noValue, ee.detail)
	}
	return x, nil
}

var encoderCache sync.Map // map[reflect.Type]encoderFunc

// typeEncoder returns the encoder of type t, making and caching it on first use.
func typeEncoder(t reflect.Type) encoderFunc {
	if f, ok := encoderCache.Load(t); ok {
		return f.(encoderFunc)
	}
	// For a recursive type, store a forwarding function first that waits until the real
	// encoder is made.
	var (
		wg sync.WaitGroup
		f  encoderFunc
	)
	wg.Add(1)
	fi, loaded := encoderCache.LoadOrStore(t, encoderFunc(func(e *encoder, v reflect.Value) (starlark.Value, error) {
		wg.Wait()
		return f(e, v)
	}))
	if loaded {
		return fi.(encoderFunc)
	}
	f = newTypeEncoder(t, true)
	wg.Done()
	encoderCache.Store(t, f)
	return f
}

// newTypeEncoder makes the encoder of type t. With allowAddr, methods with pointer receivers
// are used when the value is addressable, as encoding/json does.
func newTypeEncoder(t reflect.Type, allowAddr bool) encoderFunc {
	if t.Kind() != reflect.Pointer && allowAddr && reflect.PointerTo(t).Implements(marshalerType) {
		return condAddrEncoder(addrMarshalerEncoder, newTypeEncoder(t, false))
	}
	if t.Implements(marshalerType) {
		return marshalerEncoder
	}
	if t.Kind() != reflect.Pointer && allowAddr && reflect.PointerTo(t).Implements(textMarshalerType) {
		return condAddrEncoder(addrTextMarshalerEncoder, newTypeEncoder(t, false))
	}
	if t.Implements(textMarshalerType) {
		return textMarshalerEncoder
	}
	if t == numberType {
		return numberEncoder
	}
	switch t.Kind() {
	case reflect.Bool:
		return boolEncoder
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return intEncoder
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return uintEncoder
	case reflect.Float32:
		return float32Encoder
	case reflect.Float64:
		return float64Encoder
	case reflect.String:
		return stringEncoder
	case reflect.Interface:
		return interfaceEncoder
	case reflect.Struct:
		return newStructEncoder(t)
	case reflect.Map:
		return newMapEncoder(t)
	case reflect.Slice:
		return newSliceEncoder(t)
	case reflect.Array:
		return newArrayEncoder(t)
	case reflect.Pointer:
		return newPtrEncoder(t)
	}
	return func(*encoder, reflect.Value) (starlark.Value, error) {
		return nil, encodeErrorf("unsupported type %s", t)
	}
}

func boolEncoder(e *encoder, v reflect.Value) (starlark.Value, error) {
	return starlark.Bool(v.Bool()), nil
}

func intEncoder(e *encoder, v reflect.Value) (starlark.Value, error) {
	return starlark.MakeInt64(v.Int()), nil
}

func uintEncoder(e *encoder, v reflect.Value) (starlark.Value, error) {
	return starlark.MakeUint64(v.Uint()), nil
}

func stringEncoder(e *encoder, v reflect.Value) (starlark.Value, error) {
	return starlark.String(validUTF8(v.String())), nil
}

func float32Encoder(e *encoder, v reflect.Value) (starlark.Value, error) {
	return encodeFloat(v.Float(), 32)
}

func float64Encoder(e *encoder, v reflect.Value) (starlark.Value, error) {
	return encodeFloat(v.Float(), 64)
}

// encodeFloat converts f as JSON text would carry it: the text encoding/json writes, read
// back as Starlark's json.decode reads it (an int when there is no fraction or exponent).
func encodeFloat(f float64, bits int) (starlark.Value, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, encodeErrorf("got %s, want finite float", strconv.FormatFloat(f, 'g', -1, bits))
	}
	abs := math.Abs(f)
	// Below 2**53 (2**24 for float32) floats are at most 1 apart, so the shortest
	// decimal form of an integral float is that integer.
	if (bits == 64 && abs < 1<<53 || abs < 1<<24) && f == math.Trunc(f) {
		return starlark.MakeInt64(int64(f)), nil
	}
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	var buf [32]byte
	text := strconv.AppendFloat(buf[:0], f, format, -1, bits)
	if bytes.ContainsAny(text, ".eE") {
		g, err := strconv.ParseFloat(string(text), 64)
		if err != nil {
			return nil, encodeErrorf("got %s, want finite float", text)
		}
		return starlark.Float(g), nil
	}
	i, ok := new(big.Int).SetString(string(text), 10)
	if !ok {
		return nil, encodeErrorf("got %s, want number", text)
	}
	return starlark.MakeBigInt(i), nil
}

func interfaceEncoder(e *encoder, v reflect.Value) (starlark.Value, error) {
	if v.IsNil() {
		return starlark.None, nil
	}
	if e.depth++; e.depth > maxDepth {
		return nil, encodeErrorf("nested too deeply")
	}
	defer func() { e.depth-- }()
	elem := v.Elem()
	return typeEncoder(elem.Type())(e, elem)
}

// A structEncoder encodes a struct. It finds its fields, and makes the encoders of their
// types, when it first encodes one: most of the types a struct's fields reach (a pod's reach
// about 350) are those of fields that values leave empty, and making their encoders up front
// took a process a millisecond or more before its first pod.
type structEncoder struct {
	t      reflect.Type
	once   sync.Once
	fields *structFields
	encs   []encoderFunc
}

func newStructEncoder(t reflect.Type) encoderFunc {
	se := &structEncoder{t: t}
	return se.encode
}

// init finds the fields of se's struct and makes their encoders.
func (se *structEncoder) init() {
	se.fields = cachedFields(se.t)
	se.encs = make([]encoderFunc, len(se.fields.list))
	for i := range se.fields.list {
		f := &se.fields.list[i]
		if f.Quoted && !jsontag.HasJSONMethods(f.Type) {
			se.encs[i] = quotedEncoder
		} else {
			se.encs[i] = typeEncoder(f.Type)
		}
	}
}

func (se *structEncoder) encode(e *encoder, v reflect.Value) (starlark.Value, error) {
	se.once.Do(se.init)
	start := len(e.pending)
	fields := se.fields.list
next:
	for i := range fields {
		f := &fields[i]
		var fv reflect.Value
		if len(f.Index) == 1 {
			fv = v.Field(f.Index[0])
		} else {
			fv = v
			for _, j := range f.Index {
				if fv.Kind() == reflect.Pointer {
					if fv.IsNil() {
						continue next
					}
					fv = fv.Elem()
				}
				fv = fv.Field(j)
			}
		}
		if f.OmitEmpty && jsontag.IsEmpty(fv) ||
			f.OmitZero && (f.IsZero == nil && fv.IsZero() || f.IsZero != nil && f.IsZero(fv)) {
			continue
		}
		x, err := se.encs[i](e, fv)
		if err != nil {
			clear(e.pending[start:])
			e.pending = e.pending[:start]
			return nil, at(err, pathElem{kind: childElem, name: f.Name})
		}
		e.pending = append(e.pending, entry{f.key, x})
	}
	d := e.arena.dict(len(e.pending) - start)
	for _, kv := range e.pending[start:] {
		d.SetKey(kv.k, kv.v)
	}
	clear(e.pending[start:])
	e.pending = e.pending[:start]
	return d, nil
}

// quotedEncoder encodes a bool, number or string field with the ",string" option: as a
// string holding its JSON text.
func quotedEncoder(e *encoder, v reflect.Value) (starlark.Value, error) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return starlark.None, nil
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Bool:
		return starlark.String(strconv.FormatBool(v.Bool())), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return starlark.String(strconv.FormatInt(v.Int(), 10)), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return starlark.String(strconv.FormatUint(v.Uint(), 10)), nil
	case reflect.Float32, reflect.Float64:
		bits := 64
		if v.Kind() == reflect.Float32 {
			bits = 32
		}
		b, err := json.Marshal(v.Interface())
		if err != nil {
			return nil, encodeErrorf("got %s, want finite float", strconv.FormatFloat(v.Float(), 'g', -1, bits))
		}
		return starlark.String(b), nil
	case reflect.String:
		b, _ := json.Marshal(v.String())
		return starlark.String(b), nil
	}
	return typeEncoder(v.Type())(e, v)
}

type mapEncoder struct {
	typ        reflect.Type
	keyString  func(reflect.Value) (string, error)
	elemEnc    encoderFunc
	reuseValue bool // copy each value into one addressable variable, which encodes the same
}

type mapEntry struct {
	k   string
	v   starlark.Value
	err error
}

var stringMapType = reflect.TypeFor[map[string]string]()

func newMapEncoder(t reflect.Type) encoderFunc {
	if t == stringMapType {
		return stringMapEncoder
	}
	kt := t.Key()
	me := &mapEncoder{
		typ:        t,
		elemEnc:    typeEncoder(t.Elem()),
		reuseValue: !addrSensitive(t.Elem(), map[reflect.Type]bool{}),
	}
	switch kt.Kind() {
	case reflect.String:
		me.keyString = func(k reflect.Value) (string, error) { return k.String(), nil }
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		me.keyString = func(k reflect.Value) (string, error) { return strconv.FormatInt(k.Int(), 10), nil }
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		me.keyString = func(k reflect.Value) (string, error) { return strconv.FormatUint(k.Uint(), 10), nil }
	}
	if kt.Kind() != reflect.String && kt.Implements(textMarshalerType) {
		me.keyString = func(k reflect.Value) (string, error) {
			if k.Kind() == reflect.Pointer && k.IsNil() {
				return "", nil
			}
			b, err := k.Interface().(interface{ MarshalText() ([]byte, error) }).MarshalText()
			if err != nil {
				return "", encodeErrorf("error calling MarshalText for type %s: %v", kt, err)
			}
			return string(b), nil
		}
	}
	if me.keyString == nil {
		return func(*encoder, reflect.Value) (starlark.Value, error) {
			return nil, encodeErrorf("unsupported type %s", t)
		}
	}
	return me.encode
}

func stringMapEncoder(e *encoder, v reflect.Value) (starlark.Value, error) {
	if v.IsNil() {
		return starlark.None, nil
	}
	m := v.Interface().(map[string]string)
	keys := e.keys[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	d := e.arena.dict(len(m))
	for _, k := range keys {
		// Keys that differ only in invalid UTF-8 may collide, as they do in JSON text;
		// the later one wins, as in json.decode.
		d.SetKey(starlark.String(validUTF8(k)), starlark.String(validUTF8(m[k])))
	}
	clear(keys)
	e.keys = keys[:0]
	return d, nil
}

func (me *mapEncoder) encode(e *encoder, v reflect.Value) (starlark.Value, error) {
	if v.IsNil() {
		return starlark.None, nil
	}
	if e.depth++; e.depth > maxDepth {
		return nil, encodeErrorf("nested too deeply")
	}
	defer func() { e.depth-- }()

	// Encode the entries in map order, then sort them: the first error in key order is the
	// one reported, as with encoding/json.
	start := len(e.mapPending)
	defer func() {
		clear(e.mapPending[start:])
		e.mapPending = e.mapPending[:start]
	}()
	key := reflect.New(me.typ.Key()).Elem()
	var val reflect.Value
	if me.reuseValue {
		val = reflect.New(me.typ.Elem()).Elem()
	}
	for it := v.MapRange(); it.Next(); {
		key.SetIterKey(it)
		k, err := me.keyString(key)
		if err != nil {
			return nil, err
		}
		var elem reflect.Value
		if me.reuseValue {
			val.SetIterValue(it)
			elem = val
		} else {
			elem = it.Value()
		}
		x, err := me.elemEnc(e, elem)
		e.mapPending = append(e.mapPending, mapEntry{k, x, err})
	}
	entries := e.mapPending[start:]
	slices.SortFunc(entries, func(a, b mapEntry) int { return strings.Compare(a.k, b.k) })
	d := e.arena.dict(len(entries))
	for _, p := range entries {
		k := validUTF8(p.k)
		if p.err != nil {
			return nil, at(p.err, pathElem{kind: keyElem, name: k})
		}
		d.SetKey(starlark.String(k), p.v)
	}
	return d, nil
}

// addrSensitive reports whether values of type t encode differently when addressable:
// when t, or a struct field or array element within it, has a MarshalJSON or MarshalText
// method on its pointer type only.
func addrSensitive(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface {
		p := reflect.PointerTo(t)
		if p.Implements(marshalerType) && !t.Implements(marshalerType) ||
			p.Implements(textMarshalerType) && !t.Implements(textMarshalerType) {
			return true
		}
	}
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			if addrSensitive(t.Field(i).Type, seen) {
				return true
			}
		}
	case reflect.Array:
		return addrSensitive(t.Elem(), seen)
	}
	return false
}

func newSliceEncoder(t reflect.Type) encoderFunc {
	if t.Elem().Kind() == reflect.Uint8 {
		p := reflect.PointerTo(t.Elem())
		if !p.Implements(marshalerType) && !p.Implements(textMarshalerType) {
			return byteSliceEncoder
		}
	}
	enc := newArrayEncoder(t)
	return func(e *encoder, v reflect.Value) (starlark.Value, error) {
		if v.IsNil() {
			return starlark.None, nil
		}
		if e.depth++; e.depth > maxDepth {
			return nil, encodeErrorf("nested too deeply")
		}
		defer func() { e.depth-- }()
		return enc(e, v)
	}
}

func byteSliceEncoder(e *encoder, v reflect.Value) (starlark.Value, error) {
	if v.IsNil() {
		return starlark.None, nil
	}
	return starlark.String(base64.StdEncoding.EncodeToString(v.Bytes())), nil
}

func newArrayEncoder(t reflect.Type) encoderFunc {
	elemEnc := typeEncoder(t.Elem())
	return func(e *encoder, v reflect.Value) (starlark.Value, error) {
		l, elems := e.arena.list(v.Len())
		for i := range elems {
			x, err := elemEnc(e, v.Index(i))
			if err != nil {
				return nil, at(err, pathElem{kind: indexElem, index: i})
			}
			elems[i] = x
		}
		return l, nil
	}
}

func newPtrEncoder(t reflect.Type) encoderFunc {
	elemEnc := typeEncoder(t.Elem())
	return func(e *encoder, v reflect.Value) (starlark.Value, error) {
		if v.IsNil() {
			return starlark.None, nil
		}
		if e.depth++; e.depth > maxDepth {
			return nil, encodeErrorf("nested too deeply")
		}
		x, err := elemEnc(e, v.Elem())
		e.depth--
		return x, err
	}
}
