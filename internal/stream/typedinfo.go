package stream

// This file defines typeInfo, the table of how MarshalTypedYAML prints a type: for a struct,
// its JSON members as encoding/json finds them, in the YAML library's key order.

import (
	"encoding"
	"encoding/json"
	"reflect"
	"sync"
	"unsafe"

	"github.com/starpod/starpod/internal/jsontag"
)

// A typeKind is how MarshalTypedYAML prints a type.
type typeKind uint8

const (
	kindDeclined typeKind = iota // a type it does not print
	kindBool
	kindInt
	kindUint
	kindFloat
	kindString
	kindBytes // a []byte, in base64
	kindStruct
	kindMap // with string keys
	kindSlice
	kindArray
	kindPointer
	kindInterface
	kindMarshaler     // json.Marshaler
	kindAddrMarshaler // json.Marshaler through its pointer, if addressable; else as elem
	kindText          // encoding.TextMarshaler
	kindAddrText      // encoding.TextMarshaler through its pointer, if addressable; else as elem
)

// A typeInfo is how MarshalTypedYAML prints a type.
type typeInfo struct {
	kind typeKind
	typ  reflect.Type
	size uintptr   // of a value: an int or uint is read by its size
	bits int       // of a float
	len  int       // of an array
	elem *typeInfo // of a pointer, slice, array or map; for kindAddr*, the type without its methods
	// The members of a struct, in key order unless sortFields is set: their order is then
	// not the same for every subset, and printing a struct sorts the members it prints.
	// They are found when a value of the struct is first printed (see structInfo).
	once       sync.Once
	declined   bool // of a struct, whether its members decline it
	fields     []typedField
	skips      []uintptr // by field, the offset of the word of an emptyWord direct field, else noSkip
	sortFields bool
	keys, vals reflect.Type // of a map, slices of its key and value types
	slots      int          // of a map, the ID of the printer's slots of keys, and +1 of values
	strings    bool         // of a map, whether it is a map[string]string
}

// noSkip marks in typeInfo.skips the fields that printer.object does not skip the fast way.
const noSkip = ^uintptr(0)

// A typedField is a JSON member of a struct.
type typedField struct {
	// Where the field is: the offsets of the embedded pointers to follow, each in the struct
	// the one before points to, then the offset of the field in the struct last reached.
	offset uintptr
	embeds []uintptr
	empty  emptyTest // for omitempty
	// Whether the field prints unless omitempty leaves it out: it is in no embedded struct
	// through a pointer, has no omitzero, and is no struct, which omitEmpty may name.
	direct  bool
	emptyAt uintptr // for emptyWord, the offset of the word in the field
	info    *typeInfo
	name    string
	text    string                   // the key's text, if the same at every column, else ""
	isZero  func(reflect.Value) bool // for omitzero, if set
}

// An emptyTest is how the omitempty option of a field tests its value, as jsontag.IsEmpty.
type emptyTest uint8

const (
	emptyNever  emptyTest = iota // no omitempty, or a struct, which is never empty
	emptyAlways                  // an array of length 0
	emptyMap                     // a map of length 0
	emptyZero                    // false or 0 of less than a word: all its bytes are zero
	emptyFloat                   // 0.0 or -0.0
	// A word of the field is zero: the length of a string or slice, the pointer of a
	// pointer, the type of an interface (nil if it is), or an integer of a word.
	emptyWord
)

// stringHeader and sliceHeader are the layouts of every string and slice, as reflect's
// unsafeheader.String and unsafeheader.Slice.
type (
	stringHeader struct {
		data unsafe.Pointer
		len  int
	}
	sliceHeader struct {
		data     unsafe.Pointer
		len, cap int
	}
)

// isNilMap reports whether the map at v is nil. A map is one word, a pointer to the
// runtime's map, nil for a nil map: reflect.Value.IsNil reads it so.
func isNilMap(v unsafe.Pointer) bool { return *(*unsafe.Pointer)(v) == nil }

// omitsEmpty reports whether the omitempty option of f leaves out the value at v, as
// jsontag.IsEmpty does.
func (f *typedField) omitsEmpty(v unsafe.Pointer) bool {
	if f.empty == emptyWord {
		return *(*uintptr)(unsafe.Add(v, f.emptyAt)) == 0
	}
	return f.empty != emptyNever && f.isEmpty(v)
}

// isEmpty is omitsEmpty for the tests but emptyWord.
func (f *typedField) isEmpty(v unsafe.Pointer) bool {
	switch f.empty {
	case emptyAlways:
		return true
	case emptyMap:
		return isNilMap(v) || reflect.NewAt(f.info.typ, v).Elem().Len() == 0
	case emptyFloat:
		if f.info.size == 4 {
			return *(*float32)(v) == 0
		}
		return *(*float64)(v) == 0
	case emptyZero:
		switch f.info.size {
		case 1:
			return *(*uint8)(v) == 0
		case 2:
			return *(*uint16)(v) == 0
		case 4:
			return *(*uint32)(v) == 0
		}
		return *(*uint64)(v) == 0
	}
	return false
}

var typeInfos struct {
	sync.Mutex
	m     sync.Map // reflect.Type → *typeInfo, complete
	slots int      // the slot IDs given out
}

// infoOf returns the typeInfo of t.
func infoOf(t reflect.Type) *typeInfo {
	if ti, ok := typeInfos.m.Load(t); ok {
		return ti.(*typeInfo)
	}
	typeInfos.Lock()
	defer typeInfos.Unlock()
	building := make(map[reflect.Type]*typeInfo)
	ti := buildInfo(t, true, building)
	for t, ti := range building {
		typeInfos.m.LoadOrStore(t, ti)
	}
	v, _ := typeInfos.m.Load(t)
	if v == nil {
		return ti
	}
	return v.(*typeInfo)
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// buildInfo returns the typeInfo of t, in the order of encoding/json's newTypeEncoder; it
// records in building the typeInfos of the types it meets, complete or not, to end cycles.
// If allowAddr is not set, it returns the typeInfo of t's value without pointer methods.
func buildInfo(t reflect.Type, allowAddr bool, building map[reflect.Type]*typeInfo) *typeInfo {
	if allowAddr {
		if ti, ok := typeInfos.m.Load(t); ok {
			return ti.(*typeInfo)
		}
		if ti, ok := building[t]; ok {
			return ti
		}
	}
	ti := &typeInfo{typ: t, size: t.Size()}
	if allowAddr {
		building[t] = ti
	}
	switch {
	case t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface && t.Implements(marshalerType):
		// A method of the value: encoding/json calls it through the pointer where the
		// value is addressable, which is the same.
		ti.kind = kindMarshaler
		return ti
	case t.Kind() != reflect.Pointer && allowAddr && reflect.PointerTo(t).Implements(marshalerType):
		ti.kind, ti.elem = kindAddrMarshaler, buildInfo(t, false, building)
		return ti
	case t.Kind() == reflect.Interface && (t.Implements(marshalerType) || t.Implements(textMarshalerType)):
		return ti // declined
	case t.Implements(marshalerType):
		ti.kind = kindMarshaler
		return ti
	case t.Kind() != reflect.Pointer && allowAddr && reflect.PointerTo(t).Implements(textMarshalerType):
		ti.kind, ti.elem = kindAddrText, buildInfo(t, false, building)
		return ti
	case t.Implements(textMarshalerType):
		ti.kind = kindText
		return ti
	}
	switch t.Kind() {
	case reflect.Bool:
		ti.kind = kindBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		ti.kind = kindInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		ti.kind = kindUint
	case reflect.Float32, reflect.Float64:
		ti.kind, ti.bits = kindFloat, t.Bits()
	case reflect.String:
		ti.kind = kindString
	case reflect.Interface:
		ti.kind = kindInterface
	case reflect.Pointer:
		ti.kind, ti.elem = kindPointer, buildInfo(t.Elem(), true, building)
	case reflect.Map:
		// encoding/json takes the string of a key of a string kind, before its methods.
		if t.Key().Kind() == reflect.String {
			ti.kind, ti.elem = kindMap, buildInfo(t.Elem(), true, building)
			ti.keys, ti.vals = reflect.SliceOf(t.Key()), reflect.SliceOf(t.Elem())
			ti.slots = typeInfos.slots
			typeInfos.slots += 2
			ti.strings = t == reflect.TypeFor[map[string]string]()
		}
	case reflect.Slice:
		if p := reflect.PointerTo(t.Elem()); t.Elem().Kind() == reflect.Uint8 && !p.Implements(marshalerType) && !p.Implements(textMarshalerType) {
			ti.kind = kindBytes
		} else {
			ti.kind, ti.elem = kindSlice, buildInfo(t.Elem(), true, building)
		}
	case reflect.Array:
		ti.kind, ti.elem, ti.len = kindArray, buildInfo(t.Elem(), true, building), t.Len()
	case reflect.Struct:
		ti.kind = kindStruct // its members are found later, by structInfo
	}
	return ti
}

// structInfo finds the members of ti, a struct, once, and reports whether they print: those
// of most of the types a pod's type reaches are never needed, as its values leave them
// empty, and finding them all up front took a process a millisecond or more.
func (ti *typeInfo) structInfo() bool {
	ti.once.Do(func() {
		typeInfos.Lock()
		defer typeInfos.Unlock()
		building := make(map[reflect.Type]*typeInfo)
		fields, ok := structFields(ti.typ, building)
		for t, ti := range building {
			typeInfos.m.LoadOrStore(t, ti)
		}
		if !ok {
			ti.declined = true
			return
		}
		ti.fields = fields
		ti.sortFields = !fixedOrder(fields)
		ti.skips = make([]uintptr, len(fields))
		for i, f := range fields {
			ti.skips[i] = noSkip
			if f.direct && f.empty == emptyWord {
				ti.skips[i] = f.offset + f.emptyAt
			}
		}
	})
	return !ti.declined
}

// structFields returns the JSON members of the struct t as encoding/json's typeFields finds
// them, sorted by key, or false if two have the same name (which encoding/json settles by
// depth and tags) or one has the ",string" option.
func structFields(t reflect.Type, building map[reflect.Type]*typeInfo) ([]typedField, bool) {
	var fields []typedField
	// walk adds the fields of t, a struct at offset in the struct the last of embeds
	// points to.
	var walk func(t reflect.Type, embeds []uintptr, offset uintptr, seen map[reflect.Type]bool) bool
	walk = func(t reflect.Type, embeds []uintptr, offset uintptr, seen map[reflect.Type]bool) bool {
		if seen[t] {
			return false // a struct embedded in itself
		}
		seen[t] = true
		defer delete(seen, t)
		for i := range t.NumField() {
			sf := t.Field(i)
			name, opts, ok := jsontag.Parse(sf)
			if !ok {
				continue
			}
			ft := sf.Type
			if ft.Name() == "" && ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if jsontag.HasOption(opts, "string") {
				return false
			}
			if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
				in, at := embeds, offset+sf.Offset
				if ft != sf.Type { // through a pointer
					in, at = append(embeds[:len(embeds):len(embeds)], at), 0
				}
				if !walk(ft, in, at, seen) {
					return false
				}
				continue
			}
			if name == "" {
				name = sf.Name
			}
			f := typedField{
				name:   name,
				embeds: embeds,
				offset: offset + sf.Offset,
				info:   buildInfo(sf.Type, true, building),
			}
			if isPlain(name) {
				f.text = name
			}
			if jsontag.HasOption(opts, "omitempty") {
				f.empty, f.emptyAt = emptyTestOf(sf.Type)
			}
			if jsontag.HasOption(opts, "omitzero") {
				f.isZero = jsontag.ZeroFunc(sf.Type)
				if f.isZero == nil {
					f.isZero = reflect.Value.IsZero
				}
			}
			// By the kind of the type, not of f.info, which may be in the making.
			f.direct = len(f.embeds) == 0 && f.isZero == nil && sf.Type.Kind() != reflect.Struct
			fields = append(fields, f)
		}
		return true
	}
	if !walk(t, nil, 0, make(map[reflect.Type]bool)) {
		return nil, false
	}
	for i := range fields {
		for j := range i {
			if fields[i].name == fields[j].name {
				return nil, false
			}
		}
	}
	sortKeys(fields, func(f typedField) string { return f.name })
	return fields, true
}

// emptyTestOf returns the test of jsontag.IsEmpty for values of type t, and for emptyWord
// the offset of the word it tests.
func emptyTestOf(t reflect.Type) (emptyTest, uintptr) {
	switch t.Kind() {
	case reflect.Array:
		if t.Len() == 0 {
			return emptyAlways, 0
		}
	case reflect.String:
		return emptyWord, unsafe.Offsetof(stringHeader{}.len)
	case reflect.Slice:
		return emptyWord, unsafe.Offsetof(sliceHeader{}.len)
	case reflect.Map:
		return emptyMap, 0
	case reflect.Interface, reflect.Pointer:
		return emptyWord, 0
	case reflect.Float32, reflect.Float64:
		return emptyFloat, 0 // reflect.Value.IsZero: -0.0 is zero too
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if t.Size() == unsafe.Sizeof(uintptr(0)) {
			return emptyWord, 0
		}
		return emptyZero, 0
	}
	return emptyNever, 0
}

// fixedOrder reports whether the key order is a total order on the names of fields, sorted
// by it: then every subset of them sorts in the same order.
func fixedOrder(fields []typedField) bool {
	for i := range fields {
		for j := i + 1; j < len(fields); j++ {
			a, b := fields[i].name, fields[j].name
			if !keyLess(a, b) || keyLess(b, a) {
				return false
			}
		}
	}
	return true
}

// transcodeAt prints data, compact JSON text, as the transcoder prints a value at path: as
// the value of a member whose key is at column indent and keyLen long, printed with its
// colon, or, if keyLen < 0, as an item of a sequence whose dashes are at column indent,
// after its dash.
func transcodeAt(buf, data []byte, path []step, indent, keyLen int) ([]byte, bool) {
	t := transcoders.Get().(*transcoder)
	defer func() {
		t.data = nil
		clear(t.members[:cap(t.members)])
		clear(t.path[:cap(t.path)])
		if cap(t.tape) <= 1<<16 && cap(t.members) <= 1<<12 && cap(t.text) <= 1<<16 {
			transcoders.Put(t)
		}
	}()
	t.data, t.i, t.tape, t.members, t.prune = data, 0, t.tape[:0], t.members[:0], false
	t.path = append(t.path[:0], path...)
	if len(data) > 1<<30 || !t.parse(len(path)) || t.i != len(data) {
		return buf, false
	}
	if keyLen < 0 {
		return t.printItem(buf, 0, indent)
	}
	return t.printMember(buf, 0, indent, keyLen)
}
