package stream

// This file defines JSONSize, which counts the length of a typed value's JSON text over the
// tables of MarshalTypedYAML, without the text.

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strconv"
	"unicode/utf8"
)

// JSONSize returns len(json.Marshal(v)), counted straight from v: as json.Marshal encodes,
// with its members, omissions and methods, and its escapes of strings (HTML characters among
// them), but without making the text. It reports false for what MarshalTypedYAML does not
// print (but strings that are not UTF-8 and keys it would not print), and for values
// json.Marshal fails on; the caller then measures the text.
func JSONSize(v any) (int64, bool) {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return 4, true // null
	}
	p := printers.Get().(*printer)
	defer p.release()
	s := jsonSizer{p: p}
	n, ok := s.size(p.copyOut(rv), infoOf(rv.Type())) // as json.Marshal has it, not addressable
	return n, ok
}

// A jsonSizer counts the JSON text of a value, with the scratch space of a printer.
type jsonSizer struct {
	p       *printer
	depth   int
	scratch [32]byte
}

// size returns the length of the JSON text of the value of r, of type ti.
func (s *jsonSizer) size(r ref, ti *typeInfo) (int64, bool) {
	r, ti, null, ok := s.p.deref(r, ti)
	switch {
	case !ok:
		return 0, false
	case null:
		return 4, true
	}
	switch ti.kind {
	case kindStruct, kindMap, kindSlice, kindArray:
		if s.depth++; s.depth > maxTypedDepth {
			return 0, false // too deep, or cyclic
		}
		n, ok := s.collection(r, ti)
		s.depth--
		return n, ok
	case kindString:
		return stringSize(*(*string)(r.p)), true
	case kindBytes:
		b := *(*[]byte)(r.p) // a slice of a byte kind, of the layout of []byte
		if b == nil {
			return 4, true
		}
		return int64(2 + base64.StdEncoding.EncodedLen(len(b))), true
	case kindBool:
		if *(*bool)(r.p) {
			return 4, true
		}
		return 5, true
	case kindInt:
		return int64(len(strconv.AppendInt(s.scratch[:0], intAt(r.p, ti.size), 10))), true
	case kindUint:
		return int64(len(strconv.AppendUint(s.scratch[:0], uintAt(r.p, ti.size), 10))), true
	case kindFloat:
		var data []byte
		var err error
		if ti.bits == 32 {
			data, err = json.Marshal(*(*float32)(r.p))
		} else {
			data, err = json.Marshal(*(*float64)(r.p))
		}
		return int64(len(data)), err == nil
	case kindMarshaler, kindAddrMarshaler:
		m, ok := methods(r, ti).(json.Marshaler)
		if !ok {
			return 4, true // a nil pointer
		}
		data, err := m.MarshalJSON()
		if err != nil {
			return 0, false
		}
		return marshaledSize(data)
	case kindText, kindAddrText:
		m, ok := methods(r, ti).(encoding.TextMarshaler)
		if !ok {
			return 4, true // a nil pointer
		}
		text, err := m.MarshalText()
		if err != nil {
			return 0, false
		}
		return stringSize(string(text)), true
	}
	return 0, false
}

// collection returns the length of the JSON text of the struct, map, slice or array of r.
func (s *jsonSizer) collection(r ref, ti *typeInfo) (int64, bool) {
	switch ti.kind {
	case kindStruct:
		return s.object(r, ti)
	case kindMap:
		if isNilMap(r.p) {
			return 4, true
		}
		return s.mapping(r, ti)
	case kindSlice:
		h := (*sliceHeader)(r.p)
		if h.data == nil {
			return 4, true
		}
		return s.sequence(ref{h.data, true}, h.len, ti.elem) // the items of a slice are addressable
	}
	return s.sequence(r, ti.len, ti.elem)
}

// object returns the length of the JSON text of the struct of r.
func (s *jsonSizer) object(r ref, ti *typeInfo) (int64, bool) {
	if !ti.structInfo() {
		return 0, false
	}
	n, members := int64(2), 0 // {}
	for i := range ti.fields {
		if ti.leftOut(r.p, i) {
			continue
		}
		fr, present, ok := s.p.structField(r, &ti.fields[i])
		if !ok {
			return 0, false
		} else if !present {
			continue
		}
		f := &ti.fields[i]
		v, ok := s.size(fr, f.info)
		if !ok {
			return 0, false
		}
		n += stringSize(f.name) + 1 + v // "name":value
		members++
	}
	return n + int64(max(members-1, 0)), true // and the commas
}

// mapping returns the length of the JSON text of the map of r, which is not nil.
func (s *jsonSizer) mapping(r ref, ti *typeInfo) (int64, bool) {
	n, members := int64(2), 0 // {}
	if ti.strings {
		for k, v := range *(*map[string]string)(r.p) {
			n += stringSize(k) + 1 + stringSize(v)
			members++
		}
		return n + int64(max(members-1, 0)), true
	}
	m := s.p.mapOf(r, ti)
	vals, v0 := s.p.take(s.p.slotsOf(ti.slots+1), ti.vals, m.Len())
	it := m.MapRange()
	for i := 0; it.Next(); i++ {
		// A copy of the value, which is not addressable, as the values of a map are not.
		ev := vals.Index(v0 + i)
		ev.SetIterValue(it)
		v, ok := s.size(ref{ev.Addr().UnsafePointer(), false}, ti.elem)
		if !ok {
			return 0, false
		}
		n += stringSize(it.Key().String()) + 1 + v
		members++
	}
	return n + int64(max(members-1, 0)), true
}

// sequence returns the length of the JSON text of the count items of elem from r on.
func (s *jsonSizer) sequence(r ref, count int, elem *typeInfo) (int64, bool) {
	n := int64(2 + max(count-1, 0)) // [], and the commas
	for i := range count {
		v, ok := s.size(r.at(uintptr(i)*elem.size), elem)
		if !ok {
			return 0, false
		}
		n += v
	}
	return n, true
}

// stringSize returns the length of the JSON text of the string v, as encoding/json escapes
// it for json.Marshal: HTML characters too, each byte that is not UTF-8 as \ufffd, and the
// line and paragraph separators.
func stringSize(v string) int64 {
	n := int64(2 + len(v))
	for i := 0; i < len(v); {
		c := v[i]
		if c < utf8.RuneSelf {
			n += int64(jsonEscapeExtra[c])
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(v[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 5 // \ufffd for one byte
		case r == '\u2028' || r == '\u2029':
			n += 3 // \u2028 for three bytes
		}
		i += size
	}
	return n
}

// jsonEscapeExtra holds, for each ASCII byte, the bytes its escape in json.Marshal's text
// adds: one for \", \\, \b, \f, \n, \r and \t; five for another control character and for
// <, > and & (\u00XX).
var jsonEscapeExtra = func() (t [utf8.RuneSelf]uint8) {
	for c := range 0x20 {
		t[c] = 5
	}
	for _, c := range []byte{'"', '\\', '\b', '\f', '\n', '\r', '\t'} {
		t[c] = 1
	}
	for _, c := range []byte{'<', '>', '&'} {
		t[c] = 5
	}
	return t
}()

// marshaledSize returns the length of data, the text of a MarshalJSON method, as json.Marshal
// writes it: compacted, with HTML characters and the line and paragraph separators escaped.
func marshaledSize(data []byte) (int64, bool) {
	if _, ok := simpleString(data); !ok {
		var compact bytes.Buffer
		if json.Compact(&compact, data) != nil {
			return 0, false
		}
		data = compact.Bytes()
	}
	// In valid JSON text these occur only in strings, where json.Marshal escapes them.
	n := len(data)
	for _, c := range []string{"<", ">", "&"} {
		n += 5 * bytes.Count(data, []byte(c))
	}
	for _, c := range []string{"\u2028", "\u2029"} {
		n += 3 * bytes.Count(data, []byte(c))
	}
	return int64(n), true
}
