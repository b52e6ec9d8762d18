package stream

// This file defines parseBlockYAML, a parser of the plain subset of YAML most manifests are
// written in, which yamlToUntyped tries before the YAML library.

import (
	"bytes"
	"encoding/json"
)

// parseBlockYAML parses doc, a YAML document whose root is a block mapping at column 0, into
// the untyped JSON data yamlToUntyped returns, if doc keeps to a plain subset of YAML; it
// reports false for any other text, which the caller parses with the YAML library, so that
// the library alone decides every error and every rare form. What it takes, it reads as
// sigs.k8s.io/yaml does (YAML 1.1 as go.yaml.in/yaml/v2 resolves it):
//
//   - printable ASCII text, lines ended by \n, no tabs;
//   - block mappings and block sequences, with a sequence's "- " at its key's column or
//     further in, and a mapping started on the line of its "- ";
//   - keys of letters, digits and "_-./" that resolve to strings, each once in its mapping;
//   - values on their key's line: plain scalars of one line that resolve to strings (never
//     yes, no, on, off, y, n, true, false, null and their capitalised forms, which it reads as
//     bools and null; nor anything that might be a number, timestamp or float but a decimal
//     integer without a leading zero of at most 18 digits, which it reads as an int), quoted
//     scalars of one line without escapes, and flow sequences and flow mappings of such
//     scalars on one line;
//   - comments on lines of their own and after values.
//
// No anchors, aliases, tags, block scalars, multi-line scalars, nested flow collections,
// complex keys or directives: those go to the library. Its output is the same data as the library's,
// which FuzzBlockYAML checks against sigs.k8s.io/yaml on the fuzz corpora. It counts the size
// of what it makes as the sizer does and declines past limit, where the library's path
// reports the error.
func parseBlockYAML(doc []byte, limit int64) (any, bool) {
	p := blockParser{doc: doc, text: doc, left: limit}
	if !p.next() || p.eof || p.indent != 0 || isSeqEntry(p.content) {
		return nil, false
	}
	m, ok := p.mapping(0)
	if !ok || !p.eof || p.left < 0 {
		return nil, false
	}
	return m, true
}

// A blockParser reads a document line by line; the current line is the first of the rest
// that is not blank or a comment.
type blockParser struct {
	doc     []byte // the document
	all     string // the document as a string, made on first use, which keys and values share
	text    []byte // the lines after the current one
	indent  int    // the current line's indentation, or the column of its content after a "- "
	content []byte // the current line from its indentation, without its end
	eof     bool   // whether there is no current line
	left    int64  // the size left, as the sizer counts it
}

// next moves to the next line that is not blank or a comment. It reports false for a line
// the parser does not take: one with a byte that is not printable ASCII.
func (p *blockParser) next() bool {
	for len(p.text) > 0 {
		line := p.text
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line, p.text = line[:i], line[i+1:]
		} else {
			p.text = nil
		}
		for _, c := range line {
			if c < ' ' || c > '~' {
				return false
			}
		}
		n := 0
		for n < len(line) && line[n] == ' ' {
			n++
		}
		if n == len(line) || line[n] == '#' {
			continue
		}
		p.indent, p.content = n, line[n:]
		return true
	}
	p.eof, p.content = true, nil
	return true
}

// str returns b as a string: a part of p.all if b is a part of p.doc, so that the strings
// of a document take one allocation.
func (p *blockParser) str(b []byte) string {
	i := cap(p.doc) - cap(b)
	if len(b) == 0 || i < 0 || i+len(b) > len(p.doc) || &p.doc[i] != &b[0] {
		return string(b)
	}
	if p.all == "" {
		p.all = string(p.doc)
	}
	return p.all[i : i+len(b)]
}

// count counts n bytes of size.
func (p *blockParser) count(n int) { p.left -= int64(n) }

// isSeqEntry reports whether a line's content starts a block sequence entry.
func isSeqEntry(content []byte) bool {
	return len(content) > 0 && content[0] == '-' && (len(content) == 1 || content[1] == ' ')
}

// node parses the block node that starts at the current line, which is indented by more
// than its parent's indentation.
func (p *blockParser) node() (any, bool) {
	if isSeqEntry(p.content) {
		return p.sequence(p.indent)
	}
	return p.mapping(p.indent)
}

// mapping parses a block mapping whose keys stand at column indent, from the current line.
func (p *blockParser) mapping(indent int) (any, bool) {
	m := make(map[string]any)
	p.count(1)
	for !p.eof && p.indent == indent {
		key, rest, ok := p.splitKey(p.content)
		if !ok {
			return nil, false
		}
		if _, dup := m[key]; dup {
			return nil, false
		}
		p.count(len(key))
		var v any
		if len(rest) > 0 {
			if v, ok = p.scalar(rest); !ok {
				return nil, false
			}
			if !p.next() {
				return nil, false
			}
		} else {
			if !p.next() {
				return nil, false
			}
			switch {
			case !p.eof && p.indent > indent:
				v, ok = p.node()
			case !p.eof && p.indent == indent && isSeqEntry(p.content):
				v, ok = p.sequence(indent)
			default:
				v, ok = nil, true
				p.count(1)
			}
			if !ok {
				return nil, false
			}
		}
		m[key] = v
	}
	if !p.eof && p.indent > indent {
		return nil, false // a continuation or a node the parser does not take
	}
	return m, true
}

// sequence parses a block sequence whose dashes stand at column indent, from the current line.
func (p *blockParser) sequence(indent int) (any, bool) {
	s := make([]any, 0, 4)
	p.count(1)
	for !p.eof && p.indent == indent && isSeqEntry(p.content) {
		rest := p.content[1:]
		n := 0
		for n < len(rest) && rest[n] == ' ' {
			n++
		}
		rest = rest[n:]
		var v any
		var ok bool
		switch {
		case len(rest) == 0 || rest[0] == '#':
			if !p.next() {
				return nil, false
			}
			if !p.eof && p.indent > indent {
				v, ok = p.node()
			} else {
				v, ok = nil, true
				p.count(1)
			}
		case isSeqEntry(rest):
			return nil, false // a sequence in a sequence
		default:
			if _, _, isKey := p.splitKey(rest); isKey {
				// A mapping that starts on the line of the dash, at the column of its key.
				p.indent, p.content = indent+1+n, rest
				v, ok = p.mapping(p.indent)
				break
			}
			if v, ok = p.scalar(rest); ok {
				ok = p.next()
			}
		}
		if !ok {
			return nil, false
		}
		s = append(s, v)
	}
	if !p.eof && p.indent > indent {
		return nil, false
	}
	return s, true
}

// splitKey splits a line's content into a plain key that resolves to a string and the value
// after it, without a comment; ok is false if content is not such a key and value.
func (p *blockParser) splitKey(content []byte) (key string, rest []byte, ok bool) {
	i := 0
	for ; i < len(content); i++ {
		c := content[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '/' || c == '.' || c == '-') {
			break
		}
	}
	if i == 0 || i == len(content) || content[i] != ':' || i+1 < len(content) && content[i+1] != ' ' {
		return "", nil, false
	}
	k := content[:i]
	if s, isString := plainString(k); !isString || !s {
		return "", nil, false // a bool, null, number or anything else a string might not be
	}
	rest = trimComment(content[i+1:])
	return p.str(k), rest, true
}

// trimComment returns text without its leading and trailing spaces and a comment (" #"
// and what follows) at its end. Only for text without quotes: it does not know of strings.
func trimComment(text []byte) []byte {
	if i := bytes.Index(text, []byte(" #")); i >= 0 {
		text = text[:i]
	}
	return bytes.Trim(text, " ")
}

// scalar parses a value on its key's or dash's line: rest, without its leading spaces.
func (p *blockParser) scalar(rest []byte) (any, bool) {
	switch rest[0] {
	case '"', '\'':
		s, after, ok := p.quotedScalar(rest)
		if !ok || len(trimComment(after)) > 0 || len(after) > 0 && after[0] != ' ' {
			return nil, false
		}
		p.count(1 + len(s))
		return s, true
	case '[':
		return p.flowSequence(trimComment(rest))
	case '{':
		return p.flowMapping(trimComment(rest))
	}
	plain := trimComment(rest)
	if len(plain) == 0 || isSeqEntry(plain) || bytes.Contains(plain, []byte(": ")) || plain[len(plain)-1] == ':' {
		return nil, false
	}
	v, ok := p.resolve(plain)
	return v, ok
}

// resolve returns the value of a plain scalar as the untyped data gives it, counting its
// size; ok is false if the parser leaves its resolution to the library.
func (p *blockParser) resolve(plain []byte) (any, bool) {
	if s, isString := plainString(plain); isString {
		if !s {
			return nil, false
		}
		p.count(1 + len(plain))
		return p.str(plain), true
	}
	switch string(plain) {
	case "true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", "y", "Y":
		p.count(1)
		return true, true
	case "false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", "n", "N":
		p.count(1)
		return false, true
	case "null", "Null", "NULL", "~":
		p.count(1)
		return nil, true
	}
	if isDecimal(plain) {
		p.count(1 + len(plain))
		return json.Number(plain), true
	}
	return nil, false
}

// plainString reports whether the plain scalar text, of printable ASCII, resolves to a
// string in YAML 1.1 as go.yaml.in/yaml/v2 resolves it, and then whether that is certain.
// It reports false for bools, nulls and numbers.
func plainString(text []byte) (certain, isString bool) {
	c := text[0]
	switch {
	case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		switch string(text) {
		case "true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", "y", "Y",
			"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", "n", "N",
			"null", "Null", "NULL":
			return false, false
		}
	case c == '/' || c == '_':
	case c == '+' || c == '-' || c == '.' || '0' <= c && c <= '9':
		// The library tries a timestamp (four digits and "-"), an integer of any base, a
		// float and binary: a text with a character none of those take is a string.
		if isDecimal(text) {
			return false, false
		}
		if len(text) > 4 && text[4] == '-' && isDigits(text[:4]) {
			return false, true
		}
		for _, c := range text {
			if !numeric[c] {
				return true, true
			}
		}
		return false, true
	default:
		return false, true // an indicator, or a character the parser leaves to the library
	}
	return true, true
}

// numeric holds the characters of the texts go.yaml.in/yaml/v2 might read as a number:
// those strconv.ParseInt (base 0), ParseUint and ParseFloat take, and "_".
var numeric = func() (t [256]bool) {
	for _, c := range []byte("0123456789abcdefABCDEFxXoObBpP_.+-iInNtTyY") {
		t[c] = true
	}
	return t
}()

// isDecimal reports whether text is "0" or a decimal integer without a leading zero of at
// most 18 digits: an int whose JSON text is text.
func isDecimal(text []byte) bool {
	return len(text) > 0 && len(text) <= 18 && isDigits(text) && (text[0] != '0' || len(text) == 1)
}

// isDigits reports whether text is all decimal digits.
func isDigits[T string | []byte](text T) bool {
	for i := 0; i < len(text); i++ {
		if c := text[i]; c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// quotedScalar parses a quoted scalar of one line at the start of text, without escapes: a
// double-quoted one with no backslash, or a single-quoted one, in which two single quotes stand for one.
func (p *blockParser) quotedScalar(text []byte) (s string, after []byte, ok bool) {
	q := text[0]
	if q == '"' {
		i := bytes.IndexByte(text[1:], '"')
		if i < 0 || bytes.IndexByte(text[1:1+i], '\\') >= 0 {
			return "", nil, false
		}
		return p.str(text[1 : 1+i]), text[2+i:], true
	}
	var b []byte // the text before the last "''", when there is one
	from := 1
	for i := 1; i < len(text); i++ {
		if text[i] != '\'' {
			continue
		}
		if i+1 < len(text) && text[i+1] == '\'' {
			b = append(b, text[from:i+1]...)
			i++
			from = i + 1
			continue
		}
		if b == nil {
			return p.str(text[1:i]), text[i+1:], true
		}
		return string(append(b, text[from:i]...)), text[i+1:], true
	}
	return "", nil, false
}

// flowSequence parses a flow sequence of one line, text, of flow scalars (see flowScalar).
func (p *blockParser) flowSequence(text []byte) (any, bool) {
	if len(text) < 2 || text[len(text)-1] != ']' {
		return nil, false
	}
	p.count(1)
	body := bytes.Trim(text[1:len(text)-1], " ")
	s := []any{}
	for len(body) > 0 {
		v, rest, ok := p.flowScalar(body)
		if !ok {
			return nil, false
		}
		s = append(s, v)
		if body, ok = flowNext(rest); !ok {
			return nil, false
		}
	}
	return s, true
}

// flowMapping parses a flow mapping of one line, text, of plain keys that resolve to strings
// (as splitKey takes them), each followed by ": " and a flow scalar (see flowScalar).
func (p *blockParser) flowMapping(text []byte) (any, bool) {
	if len(text) < 2 || text[len(text)-1] != '}' {
		return nil, false
	}
	p.count(1)
	body := bytes.Trim(text[1:len(text)-1], " ")
	m := make(map[string]any)
	for len(body) > 0 {
		i := bytes.IndexByte(body, ':')
		if i < 0 || i+1 == len(body) || body[i+1] != ' ' {
			return nil, false
		}
		key, rest, ok := p.splitKey(body[:i+1])
		if !ok || len(rest) > 0 {
			return nil, false
		}
		if _, dup := m[key]; dup {
			return nil, false
		}
		p.count(len(key))
		v, rest, ok := p.flowScalar(bytes.TrimLeft(body[i+2:], " "))
		if !ok {
			return nil, false
		}
		m[key] = v
		if body, ok = flowNext(rest); !ok {
			return nil, false
		}
	}
	return m, true
}

// flowNext returns the rest of a flow collection's body after an entry, rest, past the
// comma that must follow the entry unless the body ends; it refuses a trailing comma.
func flowNext(rest []byte) ([]byte, bool) {
	rest = bytes.TrimLeft(rest, " ")
	if len(rest) == 0 {
		return nil, true
	}
	if rest[0] != ',' {
		return nil, false
	}
	rest = bytes.TrimLeft(rest[1:], " ")
	return rest, len(rest) > 0
}

// flowScalar parses the scalar at the start of body, the rest of a flow collection's body
// without its brackets: a quoted scalar of one line without escapes, or a plain scalar up to
// the next comma without flow indicators, quotes, ":" or "#". It returns the rest of body.
func (p *blockParser) flowScalar(body []byte) (any, []byte, bool) {
	if len(body) == 0 {
		return nil, nil, false
	}
	if body[0] == '"' || body[0] == '\'' {
		str, after, ok := p.quotedScalar(body)
		if !ok {
			return nil, nil, false
		}
		p.count(1 + len(str))
		return str, after, true
	}
	i := bytes.IndexByte(body, ',')
	if i < 0 {
		i = len(body)
	}
	item := bytes.TrimRight(body[:i], " ")
	if len(item) == 0 || isSeqEntry(item) || bytes.ContainsAny(item, "[]{}:#\"'") {
		return nil, nil, false
	}
	v, ok := p.resolve(item)
	return v, body[len(item):], ok
}
