// This file defines how a Reader reads a stream of JSON values: it scans each value's extent,
// within the document limit, then decodes it; a stream whose first value is not JSON after
// all is read as YAML from there, as Kubernetes' YAMLOrJSONDecoder reads it.

package stream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// isJSON reports whether the stream's first non-space byte opens a JSON object or array.
func isJSON(r *bufio.Reader) bool {
	for n := 1; ; n++ {
		buf, err := r.Peek(n)
		if len(buf) < n {
			return false
		}
		switch c := buf[n-1]; c {
		case ' ', '\t', '\r', '\n':
			if err != nil {
				return false
			}
			continue
		case '{', '[':
			return true
		default:
			return false
		}
	}
}

// nextJSON reads the next JSON value of the stream. If the first or second value of the
// stream is not JSON, the stream is YAML from that value's line on.
func (r *Reader) nextJSON() (*Document, error) {
	r.space = r.space[:0]
	for {
		c, err := r.r.ReadByte()
		if err == io.EOF {
			return nil, io.EOF
		}
		if err != nil {
			return nil, r.readError(err)
		}
		if c == '\n' {
			r.line++
			r.col = 0
			r.space = r.space[:0]
			continue
		}
		if isJSONSpace(c) {
			r.col++
			r.space = append(r.space, c)
			continue
		}
		r.r.UnreadByte()
		break
	}
	start, startCol := r.line+1, r.col
	var buf []byte
	var sc jsonScanner
	ok := true
	for done := false; !done; {
		if r.r.Buffered() == 0 {
			if _, err := r.r.Peek(1); err == io.EOF {
				break // the value ends with the stream
			} else if err != nil {
				return nil, r.readError(err)
			}
		}
		chunk, _ := r.r.Peek(r.r.Buffered())
		var n int
		n, done = sc.scan(chunk)
		if sc.long {
			return nil, &Error{File: r.file, Line: start, Err: fmt.Errorf(
				"document %d: holds a number longer than the limit of %d digits", r.texts+1, maxJSONDigits)}
		}
		if buf, ok = r.appendDoc(buf, chunk[:n]); !ok {
			return nil, r.sizeError(start)
		}
		if nl := bytes.Count(chunk[:n], []byte("\n")); nl > 0 {
			r.line += nl
			r.col = n - 1 - bytes.LastIndexByte(chunk[:n], '\n')
		} else {
			r.col += n
		}
		r.r.Discard(n)
	}
	r.size = min(len(buf)+len(buf)/8, 1<<20)
	d := &Document{File: r.file, Index: r.texts, Line: start, Raw: buf, JSON: true, parsed: true, limit: r.maxDoc}
	if err := decodeJSON(buf, &d.Object); err != nil {
		if r.texts <= 1 {
			// As Kubernetes' YAMLOrJSONDecoder does, read the stream as YAML from here on.
			r.mode = 1
			text := make([]byte, 0, len(r.space)+len(buf))
			text = append(append(text, r.space...), buf...)
			r.r = bufio.NewReaderSize(io.MultiReader(bytes.NewReader(text), r.r), 64<<10)
			r.line = start - 1
			return r.nextYAML()
		}
		e := &Error{File: r.file, Line: start, Err: fmt.Errorf("invalid JSON: %v", err.err)}
		if err.offset >= 0 {
			before := buf[:err.offset]
			e.Line += bytes.Count(before, []byte("\n"))
			if i := bytes.LastIndexByte(before, '\n'); i >= 0 {
				e.Col = len(before) - i
			} else {
				e.Col = startCol + len(before) + 1
			}
		}
		return nil, e
	}
	r.texts++
	return d, nil
}

// A jsonError is an error of decoding a JSON value, at an offset of its text (-1 if unknown).
type jsonError struct {
	err    error
	offset int
}

// decodeJSON decodes text, which must hold one JSON value and nothing else, into v.
func decodeJSON(text []byte, v *any) *jsonError {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) && syn.Offset > 0 && syn.Offset <= int64(len(text)) {
			return &jsonError{err, int(syn.Offset) - 1}
		}
		return &jsonError{err, -1}
	}
	for i := int(dec.InputOffset()); i < len(text); i++ {
		if c := text[i]; !isJSONSpace(c) {
			return &jsonError{fmt.Errorf("invalid character %q after top-level value", c), i}
		}
	}
	return nil
}

// maxJSONDigits bounds the digits of a number in a JSON document. The untyped data keeps a
// number's text, and a program that makes a big integer of it takes time that grows with the
// square of its digits (minutes for a million). JSON text of a float64 or an int64 never
// needs more than 25 characters; YAML numbers are parsed into those.
const maxJSONDigits = 1000

// A jsonScanner finds the end of a JSON value in a stream, without checking its syntax,
// except that it stops at a run of more than maxJSONDigits digits.
type jsonScanner struct {
	started bool
	depth   int  // of objects and arrays
	str     bool // in a string
	esc     bool // after a backslash in a string
	scalar  bool // in a number or literal at the top level
	digits  int  // the digits in a row outside strings
	long    bool // whether the scan stopped at too many digits
}

// scan scans the next bytes of a value and returns how many of them belong to it, and whether
// the value ends with them.
func (s *jsonScanner) scan(data []byte) (int, bool) {
	for i := 0; i < len(data); i++ {
		c := data[i]
		if !s.str {
			if c-'0' < 10 {
				if s.digits++; s.digits > maxJSONDigits {
					s.long = true
					return i, true
				}
			} else {
				s.digits = 0
			}
		}
		switch {
		case s.str:
			switch {
			case s.esc:
				s.esc = false
			case c == '\\':
				s.esc = true
			case c == '"':
				s.str = false
				if s.depth == 0 {
					return i + 1, true
				}
			}
		case s.scalar:
			if isJSONDelim(c) {
				return i, true
			}
		case !s.started:
			s.started = true
			switch c {
			case '{', '[':
				s.depth = 1
			case '"':
				s.str = true
			default:
				if isJSONDelim(c) {
					return i + 1, true // not a value: one byte, for the error
				}
				s.scalar = true
			}
		case c == '"':
			s.str = true
		case c == '{' || c == '[':
			s.depth++
		case c == '}' || c == ']':
			s.depth--
			if s.depth == 0 {
				return i + 1, true
			}
		}
	}
	return len(data), false
}

// isJSONDelim reports whether c ends a number or literal: a space or a structural character.
func isJSONDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', '{', '}', '[', ']', ',', ':', '"':
		return true
	}
	return false
}

// isJSONSpace reports whether c is a space of JSON text.
func isJSONSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n'
}
