package stream

// This file defines MarshalTypedYAML, which prints a typed value as YAML text straight from
// the value, walking it by reflection over a table of each type's JSON members, rather than
// encoding it as JSON text with encoding/json and printing that text.

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"

	"github.com/starpod/starpod/internal/jsontag"
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
	for ti.kind == kindPointer {
		if rv.IsNil() {
			return nil, false
		}
		rv, ti = rv.Elem(), ti.elem
	}
	if ti.kind != kindStruct && ti.kind != kindMap || ti.kind == kindMap && rv.IsNil() {
		return nil, false
	}
	p.buf = make([]byte, 0, int(sizeHint.Load()))
	if !p.object(rv, ti, 0, -1) {
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

// An omitted is a struct of omitEmpty.
type omitted struct {
	t reflect.Type
	p unsafe.Pointer
}

// A typedMember is a member of an object being printed.
type typedMember struct {
	key, text string // the key, and its text if known ("" if not)
	v         reflect.Value
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
	scratch map[reflect.Type]*slots // for the keys and values of maps
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
			// The values of the full slice that members hold stay valid: the slice
			// goes, not cleared, to the collector.
			size = max(size, 2*sc.s.Len())
		}
		sc.s, sc.used = reflect.MakeSlice(t, size, size), 0
	}
	i = sc.used
	sc.used += n
	return sc.s, i
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
	p.members, p.path, p.depth = p.members[:0], p.path[:0], 0
	if cap(p.members) <= 1<<12 && cap(p.prefix) <= 1<<16 {
		printers.Put(p)
	}
}

// collect appends to p.members the members of the struct or map v that print, in key
// order, for an object whose keys are at column indent, and returns where they start.
func (p *printer) collect(v reflect.Value, ti *typeInfo, indent int) (int, bool) {
	base := len(p.members)
	if ti.kind == kindMap {
		// Copy the keys, and the values where being addressable does not change how they
		// print, into slices: a map's own values are not addressable, and each costs an
		// allocation to copy out alone.
		n := v.Len()
		keys, k0 := p.slots(ti.keys, n)
		var vals reflect.Value
		v0 := 0
		if ti.elem.addrFree() {
			vals, v0 = p.slots(ti.vals, n)
		}
		it := &p.iter
		it.Reset(v)
		defer it.Reset(reflect.Value{})
		for i := 0; it.Next(); i++ {
			kv := keys.Index(k0 + i)
			kv.SetIterKey(it)
			k := kv.String()
			kt, ok := scalarText(k, indent)
			if !ok || len(kt) > maxKeyText {
				return base, false // printMap declines it
			}
			var ev reflect.Value
			if vals.IsValid() {
				ev = vals.Index(v0 + i)
				ev.SetIterValue(it)
			} else {
				ev = it.Value()
			}
			p.members = append(p.members, typedMember{key: k, text: kt, v: ev, info: ti.elem})
		}
		p.order.sort(p.members[base:])
		return base, true
	}
	for i := range ti.fields {
		f := &ti.fields[i]
		fv, present, ok := p.field(v, f)
		if !ok {
			return base, false
		}
		if present {
			p.members = append(p.members, typedMember{key: f.name, text: f.text, v: fv, info: f.info})
		}
	}
	if ti.sortFields {
		p.order.sort(p.members[base:])
	}
	return base, true
}

// field returns the value of the field f of the struct v, and whether it prints: it does
// not if it is in a nil embedded struct, if its omitempty or omitzero option leaves it out,
// or if it is an empty struct of p.omit.
func (p *printer) field(v reflect.Value, f *typedField) (fv reflect.Value, present, ok bool) {
	if len(f.index) == 1 {
		fv = v.Field(f.index[0])
	} else {
		fv = v
		for j, x := range f.index {
			if j > 0 && fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					return fv, false, true
				}
				fv = fv.Elem()
			}
			fv = fv.Field(x)
		}
	}
	if f.omitEmpty && jsontag.IsEmpty(fv) || f.omitZero && (f.isZero == nil && fv.IsZero() || f.isZero != nil && f.isZero(fv)) {
		return fv, false, true
	}
	if f.info.kind == kindStruct && len(p.omit) > 0 && p.omitted(fv) {
		empty, ok := p.empty(fv, f.info)
		return fv, !empty, ok
	}
	return fv, true, true
}

// empty reports whether the struct v prints as {}.
func (p *printer) empty(v reflect.Value, ti *typeInfo) (empty, ok bool) {
	for i := range ti.fields {
		_, present, ok := p.field(v, &ti.fields[i])
		if !ok || present {
			return !present, ok
		}
	}
	return true, true
}

// object prints the struct or map v, as value does, or at the top if keyLen is -1.
func (p *printer) object(v reflect.Value, ti *typeInfo, indent, keyLen int) bool {
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
			fv, present, ok := p.field(v, f)
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
			if !p.member(f.name, f.text, fv, f.info, indent) {
				return false
			}
		}
	} else {
		base, ok := p.collect(v, ti, indent)
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

// member prints the key, of text kt if known, and the value v of a member whose key is at
// column indent, after the spaces before the key.
func (p *printer) member(key, kt string, v reflect.Value, ti *typeInfo, indent int) bool {
	if kt == "" {
		var ok bool
		if kt, ok = scalarText(key, indent); !ok || len(kt) > maxKeyText {
			return false
		}
	}
	p.buf = append(p.buf, kt...)
	p.buf = append(p.buf, ':')
	p.path = append(p.path, step{key: key, text: kt})
	if !p.value(v, ti, indent, len(kt)) {
		return false
	}
	p.path = p.path[:len(p.path)-1]
	return true
}

// omitted reports whether the struct v is one of p.omit.
func (p *printer) omitted(v reflect.Value) bool {
	if !v.CanAddr() {
		return false
	}
	for _, o := range p.omit {
		if o.t == v.Type() && o.p == v.Addr().UnsafePointer() {
			return true
		}
	}
	return false
}

// printMap prints the members from base on of p.members as a block mapping, as printMap of
// the transcoder does, and removes them.
func (p *printer) printMap(base, indent int, inline bool) bool {
	for i := base; i < len(p.members); i++ {
		m := p.members[i] // printing the values below may move p.members
		if i > base || !inline {
			p.buf = appendSpaces(p.buf, indent)
		}
		if !p.member(m.key, m.text, m.v, m.info, indent) {
			return false
		}
	}
	clear(p.members[base:])
	p.members = p.members[:base]
	return true
}

// printSeq prints the items of the slice or array v as a block sequence, as printSeq of the
// transcoder does.
func (p *printer) printSeq(v reflect.Value, elem *typeInfo, indent int, inline bool) bool {
	for i := range v.Len() {
		if i > 0 || !inline {
			p.buf = appendSpaces(p.buf, indent)
		}
		p.buf = append(p.buf, "- "...)
		p.path = append(p.path, step{item: true})
		if !p.value(v.Index(i), elem, indent, -2) {
			return false
		}
		p.path = p.path[:len(p.path)-1]
	}
	return true
}

// maxTypedDepth is the deepest nesting MarshalTypedYAML prints; it declines deeper values,
// among them cyclic ones, which json.Marshal fails on.
const maxTypedDepth = 1000

// value prints v, after the key of a member at column indent whose text is keyLen long, or,
// if keyLen is -2, as an item after its dash, of a sequence whose dashes are at column indent.
func (p *printer) value(v reflect.Value, ti *typeInfo, indent, keyLen int) bool {
	if p.depth++; p.depth > maxTypedDepth {
		return false
	}
	ok := p.value1(v, ti, indent, keyLen)
	p.depth--
	return ok
}

func (p *printer) value1(v reflect.Value, ti *typeInfo, indent, keyLen int) bool {
	item := keyLen < 0
	col := indent + keyLen + 2 // where a scalar starts
	if item {
		col = indent + 2
	} else {
		p.buf = append(p.buf, ' ') // taken back before a block
	}
	for {
		switch ti.kind {
		case kindPointer, kindInterface:
			if v.IsNil() {
				return p.scalar("null")
			}
			v = v.Elem()
			if ti.kind == kindInterface {
				ti = infoOf(v.Type())
			} else {
				ti = ti.elem
			}
			continue
		case kindAddrMarshaler, kindAddrText:
			if !v.CanAddr() {
				ti = ti.elem // encoding/json encodes the value as if it had no method
				continue
			}
		}
		break
	}
	switch ti.kind {
	case kindStruct, kindMap:
		if ti.kind == kindMap && v.IsNil() {
			return p.scalar("null")
		}
		if item {
			return p.object(v, ti, indent, -2)
		}
		return p.object(v, ti, indent, keyLen)
	case kindSlice, kindArray:
		if ti.kind == kindSlice && v.IsNil() {
			return p.scalar("null")
		}
		if v.Len() == 0 {
			return p.scalar("[]")
		}
		if item {
			return p.printSeq(v, ti.elem, indent+2, true)
		}
		p.buf[len(p.buf)-1] = '\n'
		return p.printSeq(v, ti.elem, indent, false)
	case kindString:
		return p.str(v.String(), col)
	case kindBytes:
		if v.IsNil() {
			return p.scalar("null")
		}
		return p.str(base64.StdEncoding.EncodeToString(v.Bytes()), col)
	case kindBool:
		return p.scalar(strconv.FormatBool(v.Bool()))
	case kindInt:
		p.buf = strconv.AppendInt(p.buf, v.Int(), 10)
		return p.scalar("")
	case kindUint:
		p.buf = strconv.AppendUint(p.buf, v.Uint(), 10)
		return p.scalar("")
	case kindFloat:
		return p.float(v.Float(), ti.bits)
	case kindMarshaler, kindAddrMarshaler:
		if ti.kind == kindAddrMarshaler {
			v = v.Addr()
		}
		if v.Kind() == reflect.Pointer && v.IsNil() {
			return p.scalar("null")
		}
		if !v.CanInterface() {
			return false
		}
		m, ok := v.Interface().(json.Marshaler)
		if !ok {
			return false
		}
		data, err := m.MarshalJSON()
		if err != nil {
			return false
		}
		return p.json(data, indent, keyLen, col)
	case kindText, kindAddrText:
		if ti.kind == kindAddrText {
			v = v.Addr()
		}
		if v.Kind() == reflect.Pointer && v.IsNil() {
			return p.scalar("null")
		}
		if !v.CanInterface() {
			return false
		}
		m, ok := v.Interface().(encoding.TextMarshaler)
		if !ok {
			return false
		}
		text, err := m.MarshalText()
		if err != nil {
			return false
		}
		return p.str(string(text), col)
	}
	return false
}

// scalar prints s, which the caller may have printed already, and the newline after it.
func (p *printer) scalar(s string) bool {
	p.buf = append(p.buf, s...)
	p.buf = append(p.buf, '\n')
	return true
}

// str prints the string s starting at column col, as printScalar of the transcoder does.
func (p *printer) str(s string, col int) bool {
	if t, ok := scalarText(s, col); ok {
		return p.scalar(t)
	}
	if !utf8.ValidString(s) {
		return false // json.Marshal replaces its bytes that are not UTF-8
	}
	var ok bool
	p.buf, ok = scalarAt(p.buf, p.path, s, &p.prefix)
	return ok
}

// float prints f as encoding/json writes it, read as printScalar of the transcoder reads it.
func (p *printer) float(f float64, bits int) bool {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return false // json.Marshal fails
	}
	at := len(p.buf)
	abs := math.Abs(f)
	fmt := byte('f')
	if abs != 0 && (bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21)) {
		fmt = 'e'
	}
	b := strconv.AppendFloat(p.buf, f, fmt, -1, bits)
	if n := len(b); fmt == 'e' && n-at >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1] // e-09 is e-9
		b = b[:n-1]
	}
	text := string(b[at:])
	p.buf = b[:at]
	if buf, ok := appendInteger(p.buf, text); ok {
		p.buf = buf
		return p.scalar("")
	}
	var ok bool
	p.buf, ok = scalarAt(p.buf, p.path, yamlNumbers(json.Number(text)), &p.prefix)
	return ok
}

// json prints data, the JSON text of a value's MarshalJSON, where value prints a value.
func (p *printer) json(data []byte, indent, keyLen, col int) bool {
	if s, ok := simpleString(data); ok {
		return p.str(s, col)
	}
	if string(data) == "null" {
		return p.scalar("null")
	}
	if keyLen >= 0 {
		p.buf = p.buf[:len(p.buf)-1] // the transcoder prints the space
	}
	buf, ok := transcodeAt(p.buf, data, p.path, indent, keyLen)
	if !ok {
		// MarshalJSON may write spaces, which encoding/json takes out.
		var compact bytes.Buffer
		if json.Compact(&compact, data) != nil {
			return false
		}
		if buf, ok = transcodeAt(p.buf, compact.Bytes(), p.path, indent, keyLen); !ok {
			return false
		}
	}
	p.buf = buf
	return true
}

// simpleString returns the string of data if it is the JSON text of a string without
// escapes or control characters.
func simpleString(data []byte) (string, bool) {
	if len(data) < 2 || data[0] != '"' || data[len(data)-1] != '"' {
		return "", false
	}
	in := data[1 : len(data)-1]
	for _, c := range in {
		if c < ' ' || c == '"' || c == '\\' {
			return "", false
		}
	}
	return unsafe.String(unsafe.SliceData(in), len(in)), true // data is the caller's alone
}
