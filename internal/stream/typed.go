package stream

// This file defines MarshalTypedYAML, which prints a typed value as YAML text straight from
// the value, walking it by reflection over a table of each type's JSON members, rather than
// encoding it as JSON text with encoding/json and printing that text.
//
// The printer reaches values through unsafe.Pointer, by the offsets of struct fields and the
// strides of slices that the table holds, as reflect does inside, rather than through
// reflect.Value: that costs a few instructions a field rather than a call. Each pointer it
// holds points into the value printed, or into the printer's slots (copies of map entries
// and interface values), and is live for the collector as any pointer is; it only reads
// through them.

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"
)

// MarshalTypedYAML returns the text that MarshalYAML gives v, a pointer to a struct or a map,
// printed straight from v. It encodes as encoding/json does: members named by json tags,
// omitempty and omitzero, embedded structs flattened, and a type's own MarshalJSON or
// MarshalText. Each pointer in omitEmpty points to a struct within v (through pointers or
// slices) whose member is left out where its value prints as {}, as if it were removed from
// the untyped data of v's JSON text.
//
// It reports false for what it does not print, which the caller prints with MarshalYAML:
// keys the YAML library may print otherwise, strings that are not UTF-8, names that clash
// in embedded structs, the json ",string" option, and values json.Marshal fails on.
func MarshalTypedYAML(v any, omitEmpty ...any) ([]byte, bool) {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return nil, false
	}
	p := printers.Get().(*printer)
	defer p.release()
	p.omit = p.omit[:0]
	for _, o := range omitEmpty {
		ov := reflect.ValueOf(o)
		if ov.Kind() != reflect.Pointer || ov.IsNil() || ov.Type().Elem().Kind() != reflect.Struct {
			return nil, false
		}
		p.omit = append(p.omit, omitted{ov.Type().Elem(), ov.UnsafePointer()})
	}
	ti := infoOf(rv.Type())
	var r ref
	if ti.kind == kindPointer {
		if rv.IsNil() {
			return nil, false
		}
		r, ti = ref{rv.UnsafePointer(), true}, ti.elem
		for ti.kind == kindPointer {
			if r.p = *(*unsafe.Pointer)(r.p); r.p == nil {
				return nil, false
			}
			ti = ti.elem
		}
	} else if ti.kind == kindStruct || ti.kind == kindMap {
		r = p.copyOut(rv) // as json.Marshal has it, not addressable
	}
	if ti.kind != kindStruct && ti.kind != kindMap || ti.kind == kindMap && p.mapOf(r, ti).IsNil() {
		return nil, false
	}
	p.buf = make([]byte, 0, int(sizeHint.Load()))
	if !p.object(r, ti, 0, -1) {
		return nil, false
	}
	if n := int64(len(p.buf)); n > sizeHint.Load() && n <= 1<<20 {
		sizeHint.Store(n)
	}
	return p.buf, true
}

// sizeHint is the capacity MarshalTypedYAML starts its text with: the longest text it
// printed, up to a limit.
var sizeHint atomic.Int64

func init() { sizeHint.Store(1024) }

// A ref is where a value being printed is, and whether encoding/json, walking to it by
// reflection, finds it addressable: then it calls the methods of its pointer.
type ref struct {
	p    unsafe.Pointer
	addr bool
}

// at returns the ref of a value off bytes into the value of r, such as a field of a struct.
func (r ref) at(off uintptr) ref { return ref{unsafe.Add(r.p, off), r.addr} }

// sliceHeader is the layout of every slice value, as reflect's unsafeheader.Slice.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// An omitted is a struct of omitEmpty.
type omitted struct {
	t reflect.Type
	p unsafe.Pointer
}

// A typedMember is a member of an object being printed.
type typedMember struct {
	key, text string // the key, and its text if known ("" if not)
	r         ref
	info      *typeInfo
}

// A printer holds the scratch space of one MarshalTypedYAML call.
type printer struct {
	buf     []byte
	members []typedMember // the members of the objects being printed, innermost last
	path    []step        // where the value being printed is, for scalarAt
	prefix  []byte
	omit    []omitted
	order   keyOrder[typedMember]
	depth   int
	iter    reflect.MapIter
	scratch map[reflect.Type]*slots // for the keys and values of maps, and values of interfaces
}

// slots is a slice that printer.slots gives out parts of.
type slots struct {
	s    reflect.Value
	used int
}

var printers = sync.Pool{New: func() any {
	return &printer{order: keyOrder[typedMember]{key: func(m typedMember) string { return m.key }, ascii: true}}
}}

// slots returns n elements of a slice of type t, from the element at i on, that no other
// call returns until release.
func (p *printer) slots(t reflect.Type, n int) (s reflect.Value, i int) {
	sc := p.scratch[t]
	if sc == nil {
		if p.scratch == nil {
			p.scratch = make(map[reflect.Type]*slots)
		}
		sc = &slots{}
		p.scratch[t] = sc
	}
	if !sc.s.IsValid() || sc.s.Len()-sc.used < n {
		size := max(2*n, 32)
		if sc.s.IsValid() {
			// The values of the full slice that members point to stay valid: the slice
			// goes, not cleared, to the collector.
			size = max(size, 2*sc.s.Len())
		}
		sc.s, sc.used = reflect.MakeSlice(t, size, size), 0
	}
	i = sc.used
	sc.used += n
	return sc.s, i
}

// copyOut returns the ref of a copy of v in a slot, not addressable.
func (p *printer) copyOut(v reflect.Value) ref {
	s, i := p.slots(reflect.SliceOf(v.Type()), 1)
	e := s.Index(i)
	e.Set(v)
	return ref{e.Addr().UnsafePointer(), false}
}

func (p *printer) release() {
	for t, sc := range p.scratch {
		if sc.s.Len() > 1<<12 {
			delete(p.scratch, t)
			continue
		}
		sc.s.Clear() // keep nothing of the value printed
		sc.used = 0
	}
	p.buf = nil // the caller's
	clear(p.members[:cap(p.members)])
	clear(p.path[:cap(p.path)])
	clear(p.omit[:cap(p.omit)])
	p.members, p.path, p.depth = p.members[:0], p.path[:0], 0
	if cap(p.members) <= 1<<12 && cap(p.prefix) <= 1<<16 {
		printers.Put(p)
	}
}

// mapOf returns the map of r, of the map type of ti.
func (p *printer) mapOf(r ref, ti *typeInfo) reflect.Value {
	return reflect.NewAt(ti.typ, r.p).Elem()
}

// collect appends to p.members the members of the struct or map of r that print, in key
// order, for an object whose keys are at column indent, and returns where they start.
func (p *printer) collect(r ref, ti *typeInfo, indent int) (int, bool) {
	base := len(p.members)
	if ti.kind == kindMap {
		// Copy the keys and values into slices: a map's own values cannot be pointed to,
		// and each costs an allocation to copy out alone. The copies are not addressable,
		// as the values of a map are not.
		m := p.mapOf(r, ti)
		n := m.Len()
		keys, k0 := p.slots(ti.keys, n)
		vals, v0 := p.slots(ti.vals, n)
		it := &p.iter
		it.Reset(m)
		defer it.Reset(reflect.Value{})
		for i := 0; it.Next(); i++ {
			kv := keys.Index(k0 + i)
			kv.SetIterKey(it)
			k := kv.String()
			kt, ok := scalarText(k, indent)
			if !ok || len(kt) > maxKeyText {
				return base, false // printMap declines it
			}
			ev := vals.Index(v0 + i)
			ev.SetIterValue(it)
			p.members = append(p.members, typedMember{key: k, text: kt, r: ref{ev.Addr().UnsafePointer(), false}, info: ti.elem})
		}
		p.order.sort(p.members[base:])
		return base, true
	}
	for i := range ti.fields {
		f := &ti.fields[i]
		fr, present, ok := p.field(r, f)
		if !ok {
			return base, false
		}
		if present {
			p.members = append(p.members, typedMember{key: f.name, text: f.text, r: fr, info: f.info})
		}
	}
	if ti.sortFields {
		p.order.sort(p.members[base:])
	}
	return base, true
}

// field returns the field f of the struct of r, and whether it prints: it does not if it is
// in a nil embedded struct, if its omitempty or omitzero option leaves it out, or if it is an
// empty struct of p.omit.
func (p *printer) field(r ref, f *typedField) (fr ref, present, ok bool) {
	if len(f.embeds) > 0 {
		for _, off := range f.embeds {
			if r.p = *(*unsafe.Pointer)(unsafe.Add(r.p, off)); r.p == nil {
				return r, false, true
			}
		}
		r.addr = true // reached through a pointer
	}
	fr = r.at(f.offset)
	if f.empty != emptyNever && isEmpty(fr.p, f) {
		return fr, false, true
	}
	if f.isZero != nil && f.isZero(reflect.NewAt(f.info.typ, fr.p).Elem()) {
		return fr, false, true
	}
	if f.info.kind == kindStruct && len(p.omit) > 0 && p.omitted(fr, f.info) {
		empty, ok := p.empty(fr, f.info)
		return fr, !empty, ok
	}
	return fr, true, true
}

// isEmpty reports whether the value at v of the field f is empty, as jsontag.IsEmpty.
func isEmpty(v unsafe.Pointer, f *typedField) bool {
	switch f.empty {
	case emptyAlways:
		return true
	case emptyString:
		return len(*(*string)(v)) == 0
	case emptySlice:
		return (*sliceHeader)(v).len == 0
	case emptyMap:
		return reflect.NewAt(f.info.typ, v).Elem().Len() == 0
	case emptyNil:
		return *(*unsafe.Pointer)(v) == nil
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

// empty reports whether the struct of r prints as {}.
func (p *printer) empty(r ref, ti *typeInfo) (empty, ok bool) {
	for i := range ti.fields {
		_, present, ok := p.field(r, &ti.fields[i])
		if !ok || present {
			return !present, ok
		}
	}
	return true, true
}

// omitted reports whether the struct of r, of type ti, is one of p.omit.
func (p *printer) omitted(r ref, ti *typeInfo) bool {
	if !r.addr {
		return false
	}
	for _, o := range p.omit {
		if o.p == r.p && o.t == ti.typ {
			return true
		}
	}
	return false
}

// object prints the struct or map of r, as value does, or at the top if keyLen is -1.
func (p *printer) object(r ref, ti *typeInfo, indent, keyLen int) bool {
	item, top := keyLen == -2, keyLen == -1
	inline := item
	if !top {
		indent += 2
	}
	if !top && !item {
		p.buf[len(p.buf)-1] = '\n' // for the keys below; back to ' ' if none
	}
	at := len(p.buf)
	if ti.kind == kindStruct && !ti.sortFields {
		// The fields are in key order: print them as they come.
		n := 0
		for i := range ti.fields {
			f := &ti.fields[i]
			fr, present, ok := p.field(r, f)
			if !ok {
				return false
			}
			if !present {
				continue
			}
			if n > 0 || !inline {
				p.buf = appendSpaces(p.buf, indent)
			}
			n++
			if !p.member(f.name, f.text, fr, f.info, indent) {
				return false
			}
		}
	} else {
		base, ok := p.collect(r, ti, indent)
		if !ok || !p.printMap(base, indent, inline) {
			return false
		}
	}
	if len(p.buf) == at { // no members
		if !top && !item {
			p.buf[len(p.buf)-1] = ' '
		}
		p.buf = append(p.buf, "{}\n"...)
	}
	return true
}

// member prints the key, of text kt if known, and the value of r of a member whose key is at
// column indent, after the spaces before the key.
func (p *printer) member(key, kt string, r ref, ti *typeInfo, indent int) bool {
	if kt == "" {
		var ok bool
		if kt, ok = scalarText(key, indent); !ok || len(kt) > maxKeyText {
			return false
		}
	}
	p.buf = append(p.buf, kt...)
	p.buf = append(p.buf, ':')
	p.path = append(p.path, step{key: key, text: kt})
	if !p.value(r, ti, indent, len(kt)) {
		return false
	}
	p.path = p.path[:len(p.path)-1]
	return true
}

// printMap prints the members from base on of p.members as a block mapping, as printMap of
// the transcoder does, and removes them.
func (p *printer) printMap(base, indent int, inline bool) bool {
	for i := base; i < len(p.members); i++ {
		m := p.members[i] // printing the values below may move p.members
		if i > base || !inline {
			p.buf = appendSpaces(p.buf, indent)
		}
		if !p.member(m.key, m.text, m.r, m.info, indent) {
			return false
		}
	}
	clear(p.members[base:])
	p.members = p.members[:base]
	return true
}

// printSeq prints the n items of elem, the first at r, as a block sequence, as printSeq of
// the transcoder does.
func (p *printer) printSeq(r ref, n int, elem *typeInfo, indent int, inline bool) bool {
	for i := range n {
		if i > 0 || !inline {
			p.buf = appendSpaces(p.buf, indent)
		}
		p.buf = append(p.buf, "- "...)
		p.path = append(p.path, step{item: true})
		if !p.value(r.at(uintptr(i)*elem.size), elem, indent, -2) {
			return false
		}
		p.path = p.path[:len(p.path)-1]
	}
	return true
}

// maxTypedDepth is the deepest nesting MarshalTypedYAML prints; it declines deeper values,
// among them cyclic ones, which json.Marshal fails on.
const maxTypedDepth = 1000

// value prints the value of r, after the key of a member at column indent whose text is
// keyLen long, or, if keyLen is -2, as an item after its dash, of a sequence whose dashes
// are at column indent.
func (p *printer) value(r ref, ti *typeInfo, indent, keyLen int) bool {
	if p.depth++; p.depth > maxTypedDepth {
		return false
	}
	ok := p.value1(r, ti, indent, keyLen)
	p.depth--
	return ok
}

func (p *printer) value1(r ref, ti *typeInfo, indent, keyLen int) bool {
	item := keyLen < 0
	col := indent + keyLen + 2 // where a scalar starts
	if item {
		col = indent + 2
	} else {
		p.buf = append(p.buf, ' ') // taken back before a block
	}
	for {
		switch ti.kind {
		case kindPointer:
			q := *(*unsafe.Pointer)(r.p)
			if q == nil {
				return p.scalar("null")
			}
			r, ti = ref{q, true}, ti.elem
			continue
		case kindInterface:
			v := reflect.NewAt(ti.typ, r.p).Elem()
			if v.IsNil() {
				return p.scalar("null")
			}
			v = v.Elem()
			r, ti = p.copyOut(v), infoOf(v.Type())
			continue
		case kindAddrMarshaler, kindAddrText:
			if !r.addr {
				ti = ti.elem // encoding/json encodes the value as if it had no method
				continue
			}
		}
		break
	}
	switch ti.kind {
	case kindStruct, kindMap:
		if ti.kind == kindMap && p.mapOf(r, ti).IsNil() {
			return p.scalar("null")
		}
		if item {
			return p.object(r, ti, indent, -2)
		}
		return p.object(r, ti, indent, keyLen)
	case kindSlice, kindArray:
		n := ti.len
		if ti.kind == kindSlice {
			h := (*sliceHeader)(r.p)
			if h.data == nil {
				return p.scalar("null")
			}
			r, n = ref{h.data, true}, h.len // the items of a slice are addressable
		}
		if n == 0 {
			return p.scalar("[]")
		}
		if item {
			return p.printSeq(r, n, ti.elem, indent+2, true)
		}
		p.buf[len(p.buf)-1] = '\n'
		return p.printSeq(r, n, ti.elem, indent, false)
	case kindString:
		return p.str(*(*string)(r.p), col)
	case kindBytes:
		b := *(*[]byte)(r.p) // a slice of a byte kind, of the layout of []byte
		if b == nil {
			return p.scalar("null")
		}
		return p.str(base64.StdEncoding.EncodeToString(b), col)
	case kindBool:
		return p.scalar(strconv.FormatBool(*(*bool)(r.p)))
	case kindInt:
		p.buf = strconv.AppendInt(p.buf, intAt(r.p, ti.size), 10)
		return p.scalar("")
	case kindUint:
		p.buf = strconv.AppendUint(p.buf, uintAt(r.p, ti.size), 10)
		return p.scalar("")
	case kindFloat:
		if ti.bits == 32 {
			return p.float(float64(*(*float32)(r.p)), 32)
		}
		return p.float(*(*float64)(r.p), 64)
	case kindMarshaler, kindAddrMarshaler:
		m, ok := methods(r, ti).(json.Marshaler)
		if !ok {
			return p.scalar("null") // a nil pointer
		}
		data, err := m.MarshalJSON()
		if err != nil {
			return false
		}
		return p.json(data, indent, keyLen, col)
	case kindText, kindAddrText:
		m, ok := methods(r, ti).(encoding.TextMarshaler)
		if !ok {
			return p.scalar("null") // a nil pointer
		}
		text, err := m.MarshalText()
		if err != nil {
			return false
		}
		return p.str(string(text), col)
	}
	return false
}

// methods returns, to call the methods of the value of r, of type ti.typ, the value if it
// is a pointer (nil if it is nil), else a pointer to it: its methods are those of the value
// and, where encoding/json calls them, of its pointer. Neither allocates.
func methods(r ref, ti *typeInfo) any {
	if ti.typ.Kind() == reflect.Pointer {
		if *(*unsafe.Pointer)(r.p) == nil {
			return nil
		}
		return reflect.NewAt(ti.typ, r.p).Elem().Interface()
	}
	return reflect.NewAt(ti.typ, r.p).Interface()
}

// intAt returns the signed integer of size bytes at v.
func intAt(v unsafe.Pointer, size uintptr) int64 {
	switch size {
	case 1:
		return int64(*(*int8)(v))
	case 2:
		return int64(*(*int16)(v))
	case 4:
		return int64(*(*int32)(v))
	}
	return *(*int64)(v)
}

// uintAt returns the unsigned integer of size bytes at v.
func uintAt(v unsafe.Pointer, size uintptr) uint64 {
	switch size {
	case 1:
		return uint64(*(*uint8)(v))
	case 2:
		return uint64(*(*uint16)(v))
	case 4:
		return uint64(*(*uint32)(v))
	}
	return *(*uint64)(v)
}
