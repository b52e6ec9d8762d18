// Package stream reads and writes streams of Kubernetes manifests: multi-document YAML
// (documents separated by "---" lines) or a sequence of JSON values.
//
// To read, use [NewReader] and call [Reader.Next] until io.EOF; each [Document] keeps its
// original text, the line it starts on, and its content as untyped JSON data. Errors name the
// file, the line and, where the parser says, the column.
//
// To print a value as YAML byte for byte as sigs.k8s.io/yaml.Marshal does, but several times
// faster, use [MarshalYAML]; to print JSON text already at hand, use [JSONToYAML], or
// [YAMLOptions.JSONToYAML] to leave out nulls on the way.
package stream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// A Document is one manifest of a stream.
type Document struct {
	File  string // the stream's name, "<stdin>" for standard input
	Index int    // position in the stream, from 0
	Line  int    // the line of the file the document starts on, from 1
	Raw   []byte // the document's text as it appeared in the stream
	JSON  bool   // whether the document was JSON
	// Object is the document's content: map[string]any, []any, string, json.Number, bool or nil.
	// It is nil until [Document.Parse] for documents from [Reader.NextText].
	Object any

	parsed bool // whether Object is set
}

// Kind returns the document's apiVersion and kind, or empty strings.
func (d *Document) Kind() (apiVersion, kind string) {
	m, _ := d.Object.(map[string]any)
	apiVersion, _ = m["apiVersion"].(string)
	kind, _ = m["kind"].(string)
	return apiVersion, kind
}

// An Error is a malformed document. It prints as file:line:col: message.
type Error struct {
	File      string
	Line, Col int // Col is 0 when unknown
	Err       error
}

func (e *Error) Error() string {
	if e.Line <= 0 {
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	}
	if e.Col > 0 {
		return fmt.Sprintf("%s:%d:%d: %v", e.File, e.Line, e.Col, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// A Reader reads the documents of one stream.
type Reader struct {
	file  string
	r     *bufio.Reader
	line  int           // lines consumed so far
	index int           // documents Next returned
	texts int           // documents NextText returned
	json  *json.Decoder // set once the stream is known to be JSON
	mode  int           // 0 unknown, 1 YAML, 2 JSON
	size  int           // room to give the next YAML document, from the ones before
}

// NewReader returns a Reader of the stream r, whose name is file.
func NewReader(file string, r io.Reader) *Reader {
	return &Reader{file: file, r: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next non-empty document, or io.EOF at the end of the stream.
func (r *Reader) Next() (*Document, error) {
	for {
		d, err := r.NextText()
		if err != nil {
			return nil, err
		}
		ok, err := d.Parse()
		if err != nil {
			return nil, err
		}
		if ok {
			d.Index = r.index
			r.index++
			return d, nil
		}
	}
}

// NextText returns the next document of the stream, or io.EOF at its end, leaving the
// parsing of YAML documents to [Document.Parse], which may run on another goroutine. It
// skips documents that are blank or only comments, but not those that parse to nothing,
// such as "null": Parse reports those. Index counts the documents NextText returns.
func (r *Reader) NextText() (*Document, error) {
	if r.mode == 0 {
		r.mode = 1
		if isJSON(r.r) {
			r.mode = 2
			r.json = json.NewDecoder(r.r)
			r.json.UseNumber()
		}
	}
	if r.mode == 2 {
		return r.nextJSON()
	}
	return r.nextYAML()
}

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

func (r *Reader) nextJSON() (*Document, error) {
	var raw json.RawMessage
	start := r.json.InputOffset()
	if err := r.json.Decode(&raw); err != nil {
		if err == io.EOF {
			return nil, io.EOF
		}
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, &Error{File: r.file, Line: 0, Err: fmt.Errorf("invalid JSON at byte %d: %v", syn.Offset, err)}
		}
		return nil, &Error{File: r.file, Line: 0, Err: fmt.Errorf("invalid JSON after byte %d: %v", start, err)}
	}
	d := &Document{File: r.file, Index: r.texts, Line: 1, Raw: raw, JSON: true, parsed: true}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&d.Object); err != nil {
		return nil, &Error{File: r.file, Line: 1, Err: err}
	}
	r.texts++
	return d, nil
}

// nextYAML reads lines up to the next "---" separator and returns them unparsed.
func (r *Reader) nextYAML() (*Document, error) {
	for {
		buf := make([]byte, 0, r.size)
		start := r.line + 1
		sawSep := false
		for {
			line, err := r.r.ReadSlice('\n')
			if err == bufio.ErrBufferFull { // a line longer than the buffer
				long := append([]byte(nil), line...)
				for err == bufio.ErrBufferFull {
					line, err = r.r.ReadSlice('\n')
					long = append(long, line...)
				}
				line = long
			}
			if len(line) > 0 {
				r.line++
				if isSeparator(line) {
					sawSep = true
					break
				}
				buf = append(buf, line...)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, &Error{File: r.file, Line: r.line, Err: err}
			}
		}
		r.size = min(len(buf)+len(buf)/8, 1<<20)
		if isBlank(buf) {
			if !sawSep {
				return nil, io.EOF
			}
			continue
		}
		d := &Document{File: r.file, Index: r.texts, Line: start, Raw: buf}
		r.texts++
		return d, nil
	}
}

// Parse parses a document from [Reader.NextText], if it is not parsed yet, and sets its
// Object. It reports false for a YAML document with no content, which [Reader.Next] skips.
func (d *Document) Parse() (bool, error) {
	if !d.parsed {
		obj, err := yamlToUntyped(d.Raw)
		if err != nil {
			return false, yamlError(d.File, d.Line, err)
		}
		d.Object, d.parsed = obj, true
	}
	return d.JSON || d.Object != nil, nil
}

// isSeparator reports whether line is a YAML document separator: "---", optionally followed
// by spaces or a comment.
func isSeparator(line []byte) bool {
	if !bytes.HasPrefix(line, []byte("---")) {
		return false
	}
	rest := bytes.TrimSpace(line[3:])
	return len(rest) == 0 || rest[0] == '#'
}

// isBlank reports whether a document has nothing but spaces and comments.
func isBlank(doc []byte) bool {
	for len(doc) > 0 {
		line := doc
		if i := bytes.IndexByte(doc, '\n'); i >= 0 {
			line, doc = doc[:i], doc[i+1:]
		} else {
			doc = nil
		}
		t := bytes.TrimSpace(line)
		if len(t) > 0 && t[0] != '#' {
			return false
		}
	}
	return true
}

var yamlLine = regexp.MustCompile(`line (\d+)(?::(\d+))?: `)

// yamlError turns the YAML parser's error, whose lines count from the document's start, into
// an error with the file's line.
func yamlError(file string, start int, err error) error {
	msg := err.Error()
	e := &Error{File: file, Line: start}
	if m := yamlLine.FindStringSubmatchIndex(msg); m != nil {
		n, _ := strconv.Atoi(msg[m[2]:m[3]])
		e.Line = start + n - 1
		if m[4] >= 0 {
			e.Col, _ = strconv.Atoi(msg[m[4]:m[5]])
		}
		msg = msg[:m[0]] + msg[m[1]:]
	}
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	e.Err = errors.New(msg)
	return e
}
