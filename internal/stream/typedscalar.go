package stream

// This file defines how MarshalTypedYAML prints scalars: strings, numbers, and the JSON text
// of a type's own MarshalJSON.

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

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
