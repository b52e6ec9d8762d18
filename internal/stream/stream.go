// Package stream reads and writes streams of Kubernetes manifests: multi-document YAML
// (documents separated by "---" lines) or a sequence of JSON values.
//
// To read, use [NewReader] and call [Reader.Next] until io.EOF; each [Document] keeps its
// original text, the line it starts on, and its content as untyped JSON data. Errors name the
// file, the line and, where the parser says, the column. A Reader splits streams as kubectl
// does, and holds documents and streams to the limits of [ReaderOptions], which are
// *bound.SizeError errors. To print a value as YAML, byte for byte as sigs.k8s.io/yaml.Marshal
// does, use [MarshalYAML]; to print JSON text already at hand, use [JSONToYAML], or
// [YAMLOptions.JSONToYAML] to leave out nulls on the way.
//
// The YAML libraries it uses, and why each:
//   - go.yaml.in/yaml/v2 parses YAML documents, strictly, as sigs.k8s.io/yaml does (it is
//     that package's parser), but into untyped data directly, so that a document whose
//     aliases expand past the limit of a document is refused before its JSON text is made;
//   - sigs.k8s.io/yaml prints YAML: its text is the one kubectl and the goldens show.
//
// Elsewhere, sigs.k8s.io/kustomize/kyaml reads and writes the ResourceLists of "starpod fn"
// (KRM functions keep comments and field order), and go.yaml.in/yaml/v3 reads app specs and
// configurations where errors need the position of a node.
//
// Plain block YAML, as most manifests are written, is read, and JSON text printed as YAML, by
// the fast paths of internal/fast, which decline everything else and give the same data and
// the same text; they are off when fast.Off is set.
package stream

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/starpod/starpod/internal/bound"
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

	// Part is what part of its document the Document is: Whole, or a part of a v1 List
	// larger than the limit of a document, which the Reader reads item by item.
	Part Part

	parsed bool  // whether Object is set
	limit  int64 // the limit of the content's size
}

// NewText returns a YAML document as [Reader.NextText] returns it, not parsed yet, for a
// document read elsewhere: the text raw of document index (from 0) of file, starting on line
// line, whose content [Document.Parse] bounds to maxBytes (zero means
// DefaultMaxDocumentBytes).
func NewText(file string, index, line int, raw []byte, maxBytes int64) *Document {
	return &Document{File: file, Index: index, Line: line, Raw: raw, limit: maxBytes}
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

// Default limits of a [Reader], which the zero [ReaderOptions] give.
const (
	// DefaultMaxDocumentBytes bounds one document: its text, and its content with its YAML
	// aliases expanded. The API server takes no request larger than 3 MiB, and etcd stores
	// no object larger than 1.5 MiB; parsing a document takes up to about 120 bytes of memory
	// a byte of its text (a list of one-letter values), so the parent holds at most a few
	// hundred MiB for one. A v1 List larger than that is read item by item with
	// ReaderOptions.ListItems.
	DefaultMaxDocumentBytes = 3 << 20
	// DefaultMaxInputBytes bounds what a Reader reads.
	DefaultMaxInputBytes = 1 << 30
)

// ReaderOptions are the limits of a [Reader]. The zero value gives the defaults.
type ReaderOptions struct {
	// MaxDocumentBytes bounds the text of one document, which the Reader checks as it
	// splits the stream, so that it never holds more of a document; and the content of a
	// YAML document with its aliases expanded, which [Document.Parse] checks. Zero means
	// DefaultMaxDocumentBytes.
	MaxDocumentBytes int64
	// MaxInputBytes bounds the bytes read from the stream together with InputOffset. Zero
	// means DefaultMaxInputBytes.
	MaxInputBytes int64
	// InputOffset is the number of bytes of input read before the stream (of the streams
	// before it, when several make one input), which count against MaxInputBytes.
	InputOffset int64
	// ListItems has the Reader read a YAML v1 List larger than MaxDocumentBytes item by
	// item, each within MaxDocumentBytes, when its items are a block sequence at column 0
	// (as kubectl get -o yaml prints them): the Documents of its parts (see [Part]) take the
	// place of the document, so that a List of any size is read in bounded memory.
	ListItems bool
}

// A Reader reads the documents of one stream.
//
// It splits a YAML stream as Kubernetes does (k8s.io/apimachinery/pkg/util/yaml's YAMLReader,
// which kubectl uses): at each line that starts with "---" and holds nothing else but spaces
// and a comment. Like that reader, it refuses a line that starts with "---" followed by
// anything else ("--- {kind: Pod}", "--- |", "--- !!map"): a document starts on the line
// after its separator. Unlike it, it refuses a text between separators that holds more than
// one YAML document, whose documents after the first the YAML parser would leave out unseen
// (see [Document.Parse]). A stream whose first character other than a space is "{" or "[" is
// a sequence of JSON values; if its first or second value is not JSON, the stream is YAML from
// there on, as with Kubernetes' YAMLOrJSONDecoder. A JSON number may have at most 1000 digits
// in a row.
//
// A document larger than the limits of [ReaderOptions] is an *Error wrapping a
// *bound.SizeError; a stream larger than its limit is a *bound.SizeError.
type Reader struct {
	file   string
	in     *inputCounter
	r      *bufio.Reader
	line   int         // lines consumed so far
	index  int         // documents Next returned
	texts  int         // documents NextText returned
	mode   int         // 0 unknown, 1 YAML, 2 JSON
	size   int         // room to give the next document, from the ones before
	maxDoc int64       // the limit of a document
	space  []byte      // in JSON, the spaces before the value since the last line break
	col    int         // in JSON, the bytes consumed since the last line break
	lists  bool        // ReaderOptions.ListItems
	list   *listReader // the List being read item by item
	queue  []*Document // parts of a List read, to return first
}

// NewReader returns a Reader of the stream r, whose name is file, with the default limits.
func NewReader(file string, r io.Reader) *Reader {
	return ReaderOptions{}.NewReader(file, r)
}

// NewReader returns a Reader of the stream r, whose name is file, with the limits of o.
func (o ReaderOptions) NewReader(file string, r io.Reader) *Reader {
	if o.MaxDocumentBytes <= 0 {
		o.MaxDocumentBytes = DefaultMaxDocumentBytes
	}
	if o.MaxInputBytes <= 0 {
		o.MaxInputBytes = DefaultMaxInputBytes
	}
	in := &inputCounter{r: r, read: o.InputOffset, limit: o.MaxInputBytes}
	return &Reader{file: file, in: in, r: bufio.NewReaderSize(in, 64<<10), maxDoc: o.MaxDocumentBytes, lists: o.ListItems}
}

// InputOffset returns the number of bytes of input read so far, with ReaderOptions.InputOffset:
// at the end of the stream, what the next stream of the same input starts from.
func (r *Reader) InputOffset() int64 { return r.in.read }

// An inputCounter reads a stream, counting the bytes it reads, and refuses with
// errInputLimit to read past its limit.
type inputCounter struct {
	r     io.Reader
	read  int64 // the bytes read, with those of the streams before
	limit int64
}

var errInputLimit = errors.New("input limit")

func (c *inputCounter) Read(p []byte) (int, error) {
	if c.read >= c.limit {
		// One more byte tells a stream of exactly the limit from a larger one.
		var one [1]byte
		n, err := c.r.Read(one[:])
		if n > 0 {
			return 0, errInputLimit
		}
		return 0, err
	}
	if room := c.limit - c.read; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}

// readError returns the error of reading the stream at the reader's line.
func (r *Reader) readError(err error) error {
	if err == errInputLimit {
		return &bound.SizeError{Name: fmt.Sprintf("%s:%d", r.file, r.line+1), What: "input", Limit: r.in.limit}
	}
	return &Error{File: r.file, Line: r.line + 1, Err: err}
}

// sizeError returns the error of a document whose text passes the limit.
func (r *Reader) sizeError(start int) error {
	return &Error{File: r.file, Line: start, Err: &bound.SizeError{Name: fmt.Sprintf("document %d", r.texts+1), What: "document", Limit: r.maxDoc}}
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
	if len(r.queue) > 0 {
		return r.pop(), nil
	}
	if r.list != nil {
		return r.nextList()
	}
	if r.mode == 0 {
		r.mode = 1
		if isJSON(r.r) {
			r.mode = 2
		}
	}
	if r.mode == 2 {
		return r.nextJSON()
	}
	return r.nextYAML()
}

// nextYAML reads lines up to the next "---" separator and returns them unparsed.
func (r *Reader) nextYAML() (*Document, error) {
	for {
		if d := r.nextBuffered(); d != nil {
			return d, nil
		}
		var buf []byte
		start := r.line + 1
		sawSep := false
		for {
			line, err := r.r.ReadSlice('\n')
			if err != nil && err != io.EOF {
				if line, err = r.finishLine(line, err, start, len(buf)); err != nil && err != io.EOF {
					return nil, err
				}
			}
			if len(line) > 0 {
				r.line++
				if bytes.HasPrefix(line, separator) {
					if !isSeparator(line) {
						return nil, &Error{File: r.file, Line: r.line, Err: badSeparator(line)}
					}
					sawSep = true
					break
				}
				if len(buf)+len(line) <= cap(buf) {
					buf = append(buf, line...)
				} else {
					var ok bool
					if buf, ok = r.appendDoc(buf, line); !ok {
						// A v1 List is read item by item, each within the limit.
						if r.lists {
							if d, err := r.startList(buf, line, start); d != nil || err != nil {
								return d, err
							}
						}
						return nil, r.sizeError(start)
					}
				}
			}
			if err == io.EOF {
				break
			}
		}
		r.size = min(len(buf)+len(buf)/8, 1<<20)
		if isBlank(buf) {
			if !sawSep {
				return nil, io.EOF
			}
			continue
		}
		d := &Document{File: r.file, Index: r.texts, Line: start, Raw: buf, limit: r.maxDoc}
		r.texts++
		return d, nil
	}
}

// nextBuffered returns the next document as nextYAML does, if the document and the separator
// line after it are in the reader's buffer already, the document is within its limit and not
// blank, and its first line is no separator; else nil, having read nothing, for nextYAML to
// read the document line by line. One search of the buffer and one copy cost less than a
// read, a test and a copy of each line.
func (r *Reader) nextBuffered() *Document {
	data, _ := r.r.Peek(r.r.Buffered()) // no read: what is buffered
	if len(data) == 0 || bytes.HasPrefix(data, separator) {
		return nil
	}
	end := bytes.Index(data, lineSeparator) + 1 // the start of the first line after the first that starts with "---"
	if end == 0 || int64(end) > r.maxDoc {
		return nil
	}
	nl := bytes.IndexByte(data[end:], '\n')
	if nl < 0 || !isSeparator(data[end:end+nl+1]) || isBlank(data[:end]) {
		return nil
	}
	raw := append(make([]byte, 0, end), data[:end]...)
	d := &Document{File: r.file, Index: r.texts, Line: r.line + 1, Raw: raw, limit: r.maxDoc}
	r.line += bytes.Count(raw, newline) + 1 // and the separator
	r.texts++
	r.size = min(end+end/8, 1<<20)
	r.r.Discard(end + nl + 1)
	return d
}

// lineSeparator is a line break followed by the start of a separator.
var lineSeparator = []byte("\n---")

// newline is a line break.
var newline = []byte{'\n'}

// appendDoc appends text to the text of a document, buf, and reports whether that stays
// within the limit of a document. It never gives buf room for more than the limit.
func (r *Reader) appendDoc(buf, text []byte) ([]byte, bool) {
	n := len(buf) + len(text)
	if int64(n) > r.maxDoc {
		return buf, false
	}
	if n > cap(buf) {
		size := int64(max(r.size, 2*cap(buf), n))
		nb := make([]byte, len(buf), min(size, r.maxDoc))
		copy(nb, buf)
		buf = nb
	}
	return append(buf, text...), true
}

// finishLine finishes reading a line of a YAML stream after ReadSlice returned line and
// err: an error of reading, or a line longer than the buffer. The document of the line
// started on line start and holds n bytes so far; finishLine refuses a line that would make it
// larger than its limit as soon as it knows, without reading the rest of the line.
func (r *Reader) finishLine(line []byte, err error, start, n int) ([]byte, error) {
	if err != bufio.ErrBufferFull {
		return nil, r.readError(err)
	}
	long := append([]byte(nil), line...)
	for err == bufio.ErrBufferFull {
		if int64(n+len(long)) > r.maxDoc {
			return nil, r.sizeError(start)
		}
		line, err = r.r.ReadSlice('\n')
		long = append(long, line...)
	}
	if err != nil && err != io.EOF {
		return nil, r.readError(err)
	}
	return long, err
}

// separator starts a line that separates YAML documents.
var separator = []byte("---")

// isSeparator reports whether line, which starts with "---", is a YAML document separator:
// "---", optionally followed by spaces or a comment. That is the rule of Kubernetes'
// YAMLReader, which refuses any other line that starts with "---".
func isSeparator(line []byte) bool {
	rest := bytes.TrimSpace(line[len(separator):])
	return len(rest) == 0 || rest[0] == '#'
}

// badSeparator returns the error of a line that starts with "---" but is not a separator.
func badSeparator(line []byte) error {
	text := string(bytes.TrimRightFunc(line, unicode.IsSpace))
	if len(text) > 80 {
		text = text[:80] + "..."
	}
	return fmt.Errorf("invalid YAML document separator %q: a line that starts with \"---\" separates documents, and may hold only spaces and a comment after it", text)
}

// Parse parses a document from [Reader.NextText], if it is not parsed yet, and sets its
// Object. It reports false for a YAML document with no content, such as "null", which
// [Reader.Next] skips.
//
// A YAML document whose content, with its aliases expanded, is larger than the Reader's
// document limit is an *Error wrapping a *bound.SizeError: the YAML parser shares the text of
// an anchored string among its aliases, but everything that uses the content sees it in full.
// The size counted is a little under that of the content's JSON text: the length of every
// string, key and number, and one byte for each value; for a document without aliases it
// stays under the size of the text but for rare scalars whose value is longer than their
// text (1e20, "\L"). A text that holds more than one YAML document is an *Error too: after
// a line "..." or a directive, after a root node that ends before the text (a flow collection,
// a quoted or block scalar or an indented mapping, followed by a line at column 0), or after
// a line break other than \n.
func (d *Document) Parse() (bool, error) {
	if raw, limit, ok := d.Text(); ok {
		obj, err := yamlToUntyped(raw, limit)
		switch {
		case err == errExpanded:
			return false, &Error{File: d.File, Line: d.Line, Err: &bound.SizeError{
				Name: fmt.Sprintf("document %d", d.Index+1), What: "document with its aliases expanded", Limit: limit}}
		case err == errSecondDocument:
			return false, &Error{File: d.File, Line: d.Line, Err: fmt.Errorf(
				"document %d: holds more than one YAML document; separate documents with a line \"---\"", d.Index+1)}
		case err != nil:
			return false, yamlError(d.File, d.Line, err)
		}
		d.Object, d.parsed = obj, true
	}
	return d.JSON || d.Object != nil, nil
}

// Text returns the text of a YAML document that is not parsed yet, and the limit of its
// content's size as [Document.Parse] counts it, for a reader of the text that is not Parse
// (such as convert.DecodePodYAML, through [ReadBlockYAML]). It reports false for a JSON
// document and for one already parsed.
func (d *Document) Text() (raw []byte, limit int64, ok bool) {
	if d.JSON || d.parsed {
		return nil, 0, false
	}
	limit = d.limit
	if limit <= 0 {
		limit = DefaultMaxDocumentBytes
	}
	return d.Raw, limit, true
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

// yamlLine finds the line in the YAML parser's error; it is compiled at the first error,
// rather than at every start of the program.
var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`line (\d+)(?::(\d+))?: `) })

// yamlError turns the YAML parser's error, whose lines count from the document's start, into
// an error with the file's line.
func yamlError(file string, start int, err error) error {
	msg := err.Error()
	e := &Error{File: file, Line: start}
	if m := yamlLine().FindStringSubmatchIndex(msg); m != nil {
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
