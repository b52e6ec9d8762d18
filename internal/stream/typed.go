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
	text, _, ok := marshalTyped(v, false, false, omitEmpty)
	return text, ok
}

// MarshalTypedYAML returns the text that o.JSONToYAML gives the JSON text of v, printed
// straight from v as the function MarshalTypedYAML prints it. It reports false for what it
// does not print, which the caller prints with JSONToYAML.
func (o YAMLOptions) MarshalTypedYAML(v any) ([]byte, bool) {
	text, _, ok := marshalTyped(v, o.Prune, false, nil)
	return text, ok
}

// MarshalTypedYAMLSize is o.MarshalTypedYAML, and it returns the length of the JSON text of v
// too, as [JSONSize] counts it, in the same walk: printing a value and measuring its JSON
// cost little more than printing it.
func (o YAMLOptions) MarshalTypedYAMLSize(v any) (text []byte, size int64, ok bool) {
	return marshalTyped(v, o.Prune, true, nil)
}

// MarshalTypedYAMLSplit is o.MarshalTypedYAML with the structs of omitEmpty left out where
// empty, as the function MarshalTypedYAML leaves them out, except that the member whose value
// at points to (a field of a struct within v) prints as its key alone, present even if it is
// empty: the text is split after the key's line, and the caller writes the member's value,
// indented for the key, between before and after. It reports false if it does not print v,
// or if v has no such member.
func (o YAMLOptions) MarshalTypedYAMLSplit(v, at any, omitEmpty ...any) (before, after []byte, ok bool) {
	av := reflect.ValueOf(at)
	if !av.IsValid() || av.Kind() != reflect.Pointer || av.IsNil() {
		return nil, nil, false
	}
	p := printers.Get().(*printer)
	defer p.release()
	p.split, p.splitTo, p.splitAt = av.UnsafePointer(), av.Type().Elem(), -1
	text, _, ok := p.marshal(v, o.Prune, false, omitEmpty)
	if !ok || p.splitAt < 0 {
		return nil, nil, false
	}
	return text[:p.splitAt:p.splitAt], text[p.splitAt:], true
}

// marshalTyped is MarshalTypedYAML, pruned as YAMLOptions.Prune says if prune is set, and
// with the length of the JSON text of v if sizing is set (which omitEmpty, whose structs
// JSON keeps, must not be given with).
func marshalTyped(v any, prune, sizing bool, omitEmpty []any) ([]byte, int64, bool) {
	p := printers.Get().(*printer)
	defer p.release()
	return p.marshal(v, prune, sizing, omitEmpty)
}

// marshal is marshalTyped with the printer p.
func (p *printer) marshal(v any, prune, sizing bool, omitEmpty []any) ([]byte, int64, bool) {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || sizing && len(omitEmpty) > 0 {
		return nil, 0, false
	}
	p.prune, p.pruned, p.emptied, p.drop = prune, 0, false, false
	p.sizing, p.jsonN = sizing, 0
	p.omit = p.omit[:0]
	for _, o := range omitEmpty {
		ov := reflect.ValueOf(o)
		if ov.Kind() != reflect.Pointer || ov.IsNil() || ov.Type().Elem().Kind() != reflect.Struct {
			return nil, 0, false
		}
		p.omit = append(p.omit, omitted{ov.Type().Elem(), ov.UnsafePointer()})
	}
	ti := infoOf(rv.Type())
	var r ref
	if ti.kind == kindPointer {
		if rv.IsNil() {
			return nil, 0, false
		}
		r, ti = ref{rv.UnsafePointer(), true}, ti.elem
		for ti.kind == kindPointer {
			if r.p = *(*unsafe.Pointer)(r.p); r.p == nil {
				return nil, 0, false
			}
			ti = ti.elem
		}
	} else if ti.kind == kindStruct || ti.kind == kindMap {
		r = p.copyOut(rv) // as json.Marshal has it, not addressable
	}
	if ti.kind != kindStruct && ti.kind != kindMap || ti.kind == kindMap && isNilMap(r.p) {
		return nil, 0, false
	}
	buf, ok := p.object(make([]byte, 0, int(sizeHint.Load())), r, ti, 0, -1)
	if !ok {
		return nil, 0, false
	}
	if n := int64(len(buf)); n > sizeHint.Load() && n <= 1<<20 {
		sizeHint.Store(n)
	}
	return buf, p.jsonN, true
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

// A printer holds the scratch space of one MarshalTypedYAML call. The text being printed
// goes from call to call as a buf argument and result, rather than in a field of the
// printer, which would cost a write barrier each time it is set while the collector runs.
type printer struct {
	members []typedMember // the members of the objects being printed, innermost last
	index   []int32       // for each of members, the index of the one to print in its place
	path    []step        // where the value being printed is, for scalarAt
	prefix  []byte
	omit    []omitted
	prune   bool            // whether null members, and objects that only they filled, are left out
	sizing  bool            // whether to count the length of the JSON text of what is printed
	jsonN   int64           // that length so far, if sizing: of every member, pruned or not
	pruned  int             // the members left out by prune
	emptied bool            // whether the object just printed was emptied by prune
	drop    bool            // whether the member just printed is to be left out, by prune
	order   keyOrder[int32] // of indexes of members, by their keys
	split   unsafe.Pointer  // the value of the member to split the text at, if any
	splitTo reflect.Type    // its type (a struct and its first field share an address)
	splitAt int             // where the text was split, or -1
	depth   int
	iter    reflect.MapIter
	slots   []*slots                // by the slot IDs of typeInfos
	others  map[reflect.Type]*slots // for the values of interfaces
	used    []*slots                // the slots given out, to clear
}

var printers = sync.Pool{New: func() any {
	p := new(printer)
	p.order = keyOrder[int32]{key: func(i int32) string { return p.members[i].key }, ascii: true}
	return p
}}

// release clears p of everything of the value printed and puts it back in the pool.
func (p *printer) release() {
	for _, sc := range p.used {
		if sc.s.Len() > 1<<12 {
			*sc = slots{}
			continue
		}
		// Keep nothing of the value printed.
		if !sc.view.IsValid() {
			sc.view = reflect.NewAt(sc.s.Type(), unsafe.Pointer(&sc.given)).Elem()
		}
		sc.given = sliceHeader{sc.s.UnsafePointer(), sc.used, sc.used}
		sc.view.Clear()
		sc.given, sc.used = sliceHeader{}, 0
	}
	clear(p.used)
	clear(p.members[:len(p.members)]) // printMap clears those it prints
	clear(p.path[:cap(p.path)])
	clear(p.omit[:cap(p.omit)])
	p.used, p.members, p.index, p.path, p.depth = p.used[:0], p.members[:0], p.index[:0], p.path[:0], 0
	p.split, p.splitTo = nil, nil
	if len(p.others) > 64 {
		p.others = nil
	}
	if cap(p.members) <= 1<<12 && cap(p.prefix) <= 1<<16 {
		printers.Put(p)
	}
}

// object appends the struct or map of r, as value does, or at the top if keyLen is -1.
func (p *printer) object(buf []byte, r ref, ti *typeInfo, indent, keyLen int) ([]byte, bool) {
	if p.depth++; p.depth > maxTypedDepth {
		return buf, false
	}
	item, top := keyLen == -2, keyLen == -1
	inline := item
	if !top {
		indent += 2
	}
	if !top && !item {
		buf[len(buf)-1] = '\n' // for the keys below; back to ' ' if none
	}
	if ti.kind == kindStruct && !ti.structInfo() {
		return buf, false
	}
	start, pruned := len(buf), p.pruned
	members := 0 // of the JSON text, those pruned among them
	ok := true
	if ti.kind == kindStruct && !ti.sortFields {
		// The fields are in key order: print them as they come.
		n := 0
		for i := range ti.fields {
			if ti.leftOut(r.p, i) && p.split == nil { // else structField says
				continue
			}
			fr, present, ok := p.structField(r, &ti.fields[i])
			if !ok {
				return buf, false
			} else if !present {
				continue
			}
			members++
			f := &ti.fields[i]
			mark := len(buf)
			if n > 0 || !inline {
				buf = appendSpaces(buf, indent)
			}
			n++
			if buf, ok = p.member(buf, f.name, f.text, fr, f.info, indent); !ok {
				return buf, false
			}
			if p.drop {
				p.drop, buf, n = false, buf[:mark], n-1
			}
		}
	} else {
		var base int
		if base, ok = p.collect(r, ti, indent); !ok {
			return buf, false
		}
		members = len(p.members) - base
		if buf, ok = p.printMap(buf, base, indent, inline); !ok {
			return buf, false
		}
	}
	// {}, and the commas between the members.
	p.count(2 + max(members-1, 0))
	if len(buf) == start { // no members
		if !top && !item {
			buf[len(buf)-1] = ' '
		}
		buf = append(buf, "{}\n"...)
		if p.pruned > pruned && !top && !item {
			// Every member was left out by prune: so is the member this object is the value
			// of (see member). An item of a sequence stays, as {}.
			p.emptied = true
		}
	}
	p.depth--
	return buf, true
}

// member appends the key, of text kt if known, and the value of r of a member whose key is
// at column indent, after the spaces before the key.
func (p *printer) member(buf []byte, key, kt string, r ref, ti *typeInfo, indent int) ([]byte, bool) {
	if kt == "" {
		var ok bool
		if kt, ok = scalarText(key, indent); !ok || len(kt) > maxKeyText {
			return buf, false
		}
	}
	buf = append(buf, kt...)
	if p.splits(r, ti) && p.splitAt < 0 {
		buf = append(buf, ":\n"...)
		p.splitAt = len(buf)
		return buf, true
	}
	// "key":
	p.countString(key)
	p.count(1)
	switch ti.kind { // the scalars that print the fast way, without the path
	case kindString:
		s := *(*string)(r.p)
		if b, ok := appendScalarText(append(buf, ": "...), s, indent+len(kt)+2); ok {
			p.countString(s)
			return append(b, '\n'), true
		}
	case kindInt:
		buf = append(buf, ": "...)
		n := len(buf)
		buf = strconv.AppendInt(buf, intAt(r.p, ti.size), 10)
		p.count(len(buf) - n)
		return endScalar(buf, "")
	case kindBool:
		return p.boolean(append(buf, ": "...), *(*bool)(r.p))
	}
	start := len(buf)
	buf = append(buf, ':')
	p.push(key, kt, false)
	buf, ok := p.value(buf, r, ti, indent, len(kt))
	p.path = p.path[:len(p.path)-1] // left as it is if not ok: the call fails
	if p.prune && ok && (p.emptied || string(buf[start:]) == ": null\n") {
		// A null, or an object that only nulls filled: the caller leaves the member out. A
		// string "null" prints quoted, and nulls below this member are left out already.
		p.emptied, p.drop = false, true
		p.pruned++
	}
	return buf, ok
}

// printMap appends the members from base on of p.members, in the order of p.index, as a
// block mapping, as printMap of the transcoder does, and removes them.
func (p *printer) printMap(buf []byte, base, indent int, inline bool) ([]byte, bool) {
	n := 0 // the members printed
	for i := base; i < len(p.members); i++ {
		m := p.members[p.index[i]] // printing the values below may move p.members
		mark := len(buf)
		if n > 0 || !inline {
			buf = appendSpaces(buf, indent)
		}
		n++
		var ok bool
		if buf, ok = p.member(buf, m.key, m.text, m.r, m.info, indent); !ok {
			return buf, false
		}
		if p.drop {
			p.drop, buf, n = false, buf[:mark], n-1
		}
	}
	clear(p.members[base:])
	p.members, p.index = p.members[:base], p.index[:base]
	return buf, true
}

// printSeq appends the n items of elem, the first at r, as a block sequence, as printSeq of
// the transcoder does.
func (p *printer) printSeq(buf []byte, r ref, n int, elem *typeInfo, indent int, inline bool) ([]byte, bool) {
	if p.depth++; p.depth > maxTypedDepth {
		return buf, false
	}
	p.push("", "", true)
	p.count(2 + max(n-1, 0)) // [], and the commas
	for i := range n {
		if i > 0 || !inline {
			buf = appendSpaces(buf, indent)
		}
		buf = append(buf, "- "...)
		v := r.at(uintptr(i) * elem.size)
		if elem.kind == kindString { // the fast way, as member
			s := *(*string)(v.p)
			if b, ok := appendScalarText(buf, s, indent+2); ok {
				p.countString(s)
				buf = append(b, '\n')
				continue
			}
		}
		var ok bool
		if buf, ok = p.value(buf, v, elem, indent, -2); !ok {
			return buf, false
		}
	}
	p.path = p.path[:len(p.path)-1]
	p.depth--
	return buf, true
}

// maxTypedDepth is the deepest nesting of objects and sequences MarshalTypedYAML prints; it
// declines deeper values, among them cyclic ones, which json.Marshal fails on.
const maxTypedDepth = 1000

// value appends the value of r, after the key of a member at column indent whose text is
// keyLen long, or, if keyLen is -2, as an item after its dash, of a sequence whose dashes
// are at column indent.
func (p *printer) value(buf []byte, r ref, ti *typeInfo, indent, keyLen int) ([]byte, bool) {
	item := keyLen < 0
	col := indent + keyLen + 2 // where a scalar starts
	if item {
		col = indent + 2
	} else {
		buf = append(buf, ' ') // taken back before a block
	}
	r, ti, null, ok := p.deref(r, ti)
	switch {
	case !ok:
		return buf, false
	case null:
		return p.null(buf)
	}
	switch ti.kind {
	case kindStruct, kindMap:
		if ti.kind == kindMap && isNilMap(r.p) {
			return p.null(buf)
		}
		if item {
			return p.object(buf, r, ti, indent, -2)
		}
		return p.object(buf, r, ti, indent, keyLen)
	case kindSlice, kindArray:
		n := ti.len
		if ti.kind == kindSlice {
			h := (*sliceHeader)(r.p)
			if h.data == nil {
				return p.null(buf)
			}
			r, n = ref{h.data, true}, h.len // the items of a slice are addressable
		}
		if n == 0 {
			p.count(2)
			return endScalar(buf, "[]")
		}
		if item {
			return p.printSeq(buf, r, n, ti.elem, indent+2, true)
		}
		buf[len(buf)-1] = '\n'
		return p.printSeq(buf, r, n, ti.elem, indent, false)
	case kindString:
		s := *(*string)(r.p)
		p.countString(s)
		return p.str(buf, s, col)
	case kindBytes:
		b := *(*[]byte)(r.p) // a slice of a byte kind, of the layout of []byte
		if b == nil {
			return p.null(buf)
		}
		p.count(2 + base64.StdEncoding.EncodedLen(len(b)))
		return p.str(buf, base64.StdEncoding.EncodeToString(b), col)
	case kindBool:
		return p.boolean(buf, *(*bool)(r.p))
	case kindInt:
		n := len(buf)
		buf = strconv.AppendInt(buf, intAt(r.p, ti.size), 10)
		p.count(len(buf) - n)
		return endScalar(buf, "")
	case kindUint:
		n := len(buf)
		buf = strconv.AppendUint(buf, uintAt(r.p, ti.size), 10)
		p.count(len(buf) - n)
		return endScalar(buf, "")
	case kindFloat:
		var f float64
		if ti.bits == 32 {
			f = float64(*(*float32)(r.p))
		} else {
			f = *(*float64)(r.p)
		}
		if p.sizing && !p.countFloat(f, ti.bits) {
			return buf, false
		}
		return p.float(buf, f, ti.bits)
	case kindMarshaler, kindAddrMarshaler:
		m, ok := methods(r, ti).(json.Marshaler)
		if !ok {
			return p.null(buf) // a nil pointer
		}
		data, err := m.MarshalJSON()
		if err != nil {
			return buf, false
		}
		if p.sizing {
			n, ok := marshaledSize(data)
			if !ok {
				return buf, false
			}
			p.jsonN += n
		}
		return p.json(buf, data, indent, keyLen, col)
	case kindText, kindAddrText:
		m, ok := methods(r, ti).(encoding.TextMarshaler)
		if !ok {
			return p.null(buf) // a nil pointer
		}
		text, err := m.MarshalText()
		if err != nil {
			return buf, false
		}
		p.countString(string(text))
		return p.str(buf, string(text), col)
	}
	return buf, false
}

// deref follows the pointers and interfaces from the value of r, of type ti, to the value
// encoding/json encodes, and returns it with the typeInfo it encodes it by; or reports null
// for a nil pointer or interface. A value of a method of the pointer that is not addressable
// is encoded as if it had no method. It reports false for pointers or interfaces that point
// to themselves.
func (p *printer) deref(r ref, ti *typeInfo) (_ ref, _ *typeInfo, null, ok bool) {
	for range maxTypedDepth {
		switch ti.kind {
		case kindPointer:
			q := *(*unsafe.Pointer)(r.p)
			if q == nil {
				return r, ti, true, true
			}
			r, ti = ref{q, true}, ti.elem
			continue
		case kindInterface:
			v := reflect.NewAt(ti.typ, r.p).Elem()
			if v.IsNil() {
				return r, ti, true, true
			}
			v = v.Elem()
			r, ti = p.copyOut(v), infoOf(v.Type())
			continue
		case kindAddrMarshaler, kindAddrText:
			if !r.addr {
				ti = ti.elem
				continue
			}
		}
		return r, ti, false, true
	}
	return r, ti, false, false
}

// leftOut reports whether omitempty leaves out field i of a struct of type ti at v, found by
// one word (see typeInfo.skips); if not, structField tells. Most fields of a pod are so.
func (ti *typeInfo) leftOut(v unsafe.Pointer, i int) bool {
	at := ti.skips[i]
	return at != noSkip && *(*uintptr)(unsafe.Add(v, at)) == 0
}
