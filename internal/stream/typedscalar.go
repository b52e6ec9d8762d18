package stream

// This file defines how MarshalTypedYAML prints scalars: strings, numbers, and the text of a
// type's own MarshalJSON or MarshalText; and how it counts their JSON text.

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// endScalar appends s, which the caller may have appended already, and the newline after it.
func endScalar(buf []byte, s string) ([]byte, bool) {
	buf = append(buf, s...)
	return append(buf, '\n'), true
}

// null appends null, and counts it.
func (p *printer) null(buf []byte) ([]byte, bool) {
	p.count(4)
	return endScalar(buf, "null")
}

// boolean appends v, and counts it.
func (p *printer) boolean(buf []byte, v bool) ([]byte, bool) {
	s := strconv.FormatBool(v)
	p.count(len(s))
	return endScalar(buf, s)
}

// count adds n bytes to the length of the JSON text, if p counts it.
func (p *printer) count(n int) {
	if p.sizing {
		p.jsonN += int64(n)
	}
}

// countString adds the length of the JSON text of s, if p counts it.
func (p *printer) countString(s string) {
	if p.sizing {
		p.jsonN += stringSize(s)
	}
}

// countFloat counts f, of bits bits, as json.Marshal writes it, and reports false if it fails
// on it.
func (p *printer) countFloat(f float64, bits int) bool {
	var data []byte
	var err error
	if bits == 32 {
		data, err = json.Marshal(float32(f))
	} else {
		data, err = json.Marshal(f)
	}
	p.jsonN += int64(len(data))
	return err == nil
}

// str appends the string s starting at column col, as printScalar of the transcoder does.
func (p *printer) str(buf []byte, s string, col int) ([]byte, bool) {
	if b, ok := appendScalarText(buf, s, col); ok {
		return append(b, '\n'), true
	}
	if !utf8.ValidString(s) {
		return buf, false // json.Marshal replaces its bytes that are not UTF-8
	}
	return scalarAt(buf, p.path, s, &p.prefix)
}

// float appends f as encoding/json writes it, read as printScalar of the transcoder reads it.
func (p *printer) float(buf []byte, f float64, bits int) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return buf, false // json.Marshal fails
	}
	start := len(buf)
	abs := math.Abs(f)
	fmt := byte('f')
	if abs != 0 && (bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21)) {
		fmt = 'e'
	}
	b := strconv.AppendFloat(buf, f, fmt, -1, bits)
	if n := len(b); fmt == 'e' && n-start >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1] // e-09 is e-9
		b = b[:n-1]
	}
	text := string(b[start:])
	buf = b[:start]
	if b, ok := appendInteger(buf, text); ok {
		return endScalar(b, "")
	}
	return scalarAt(buf, p.path, yamlNumbers(json.Number(text)), &p.prefix)
}

// json appends data, the JSON text of a value's MarshalJSON, where value appends a value.
func (p *printer) json(buf, data []byte, indent, keyLen, col int) ([]byte, bool) {
	if s, ok := simpleString(data); ok {
		return p.str(buf, s, col)
	}
	if string(data) == "null" {
		return endScalar(buf, "null")
	}
	if p.prune && bytes.Contains(data, []byte("null")) {
		return buf, false // the transcoder would prune it in its own way: let it
	}
	if keyLen >= 0 {
		buf = buf[:len(buf)-1] // the transcoder prints the space
	}
	path := p.path
	out, ok := transcodeAt(buf, data, path, indent, keyLen)
	if !ok {
		// MarshalJSON may write spaces, which encoding/json takes out.
		var compact bytes.Buffer
		if json.Compact(&compact, data) != nil {
			return buf, false
		}
		if out, ok = transcodeAt(buf, compact.Bytes(), path, indent, keyLen); !ok {
			return buf, false
		}
	}
	return out, true
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
